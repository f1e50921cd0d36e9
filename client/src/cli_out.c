/* cli_out: how the hpwarm commands print, shared by every command file.
 *
 * Results go to stdout (tables, or with --json the server's JSON verbatim,
 * one document per invocation); a failure is one line on stderr, printed
 * where it is handled, and names the socket or URL tried when the server
 * could not be reached.  The table rows of a node and of a pool live here
 * because the single-host commands (main.c) and the fleet tables
 * (cli_fleet.c) print the same columns.  Calls only down: into the library
 * and cli_core.c, never into a command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_cmd.h"
#include "internal.h"

uint64_t cli_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* What connect(2) says about the unix socket PATH: 0 when it connects (the
 * failure was elsewhere), else the errno that names the cause (missing,
 * permission, nobody listening) better than curl's "Couldn't connect". */
int cli_probe_unix(const char *path)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd, r = 0;

        if (strlen(path) >= sizeof(sa.sun_path))
                return ENAMETOOLONG;
        memcpy(sa.sun_path, path, strlen(path) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                r = errno;
        close(fd);
        return r;
}

/* One line on stderr for a failed call; for an unreachable server it names
 * the socket or URL tried and the likely cause. */
void cli_fail_msg(struct hpw *h, const char *url, const char *what, enum hpw_error err)
{
        const struct hpw_problem *p = hpw_last_problem(h);
        const char *m = hpw_last_message(h);
        const char *reserve = strstr(m, "\"reserve\": true");

        /* HPW_E_INSUFFICIENT covers the memory floor too: say which. */
        fprintf(stderr, "hpwarm: %s: %s", what,
                p && p->slug && strcmp(p->slug, "insufficient-memory") == 0 ? "insufficient memory" : hpw_strerror(err));
        if (err == HPW_E_UNREACHABLE || err == HPW_E_TLS) {
                /* curl's words ("localhost port 80" for a unix socket) name
                 * neither what was tried nor why; the hint does both. */
                char hint[768];
                int e = strncmp(url, "unix://", 7) == 0 ? cli_probe_unix(url + 7) : 0;

                cli_unreachable_hint(url, e, m, hint, sizeof(hint));
                fprintf(stderr, ": %s\n", hint);
                return;
        }
        if (reserve)
                /* The server names its API field; here the CLI flag is what works. */
                fprintf(stderr, " (%.*s--reserve%s)", (int)(reserve - m), m, reserve + strlen("\"reserve\": true"));
        else if (m && m[0])
                fprintf(stderr, " (%s)", m);
        if (p && p->slug[0])
                fprintf(stderr, " [%s]", p->slug);
        fputc('\n', stderr);
}

/* With --json a failure still prints the server's problem body on stdout, so
 * scripts can parse why. */
int cli_fail(struct ctx *x, const char *what, enum hpw_error err)
{
        const char *body = hpw_last_body(x->h);

        if (x->cli->json && body[0] && hpw_last_problem(x->h))
                cli_emit_json(x, "error", body);
        cli_fail_msg(x->h, x->url, what, err);
        return cli_exit_for(err, hpw_last_slug(x->h));
}

void cli_emit_json(struct ctx *x, const char *member, const char *json)
{
        char *s;

        if (x->json_done)
                return;
        x->json_done = true;
        if (!x->json_nested) {
                cli_print_json(json);
                return;
        }
        /* Embedded, so it must be one object and nothing else. */
        s = hpw_json_reprint(json, strlen(json));
        printf(",\"%s\":%s", member, s ? s : "null");
        free(s);
}

void cli_print_json(const char *json)
{
        size_t n = strlen(json);
        fputs(json, stdout);
        if (n == 0 || json[n - 1] != '\n')
                fputc('\n', stdout);
}

void cli_format_time(int64_t t, char *buf, size_t len)
{
        struct tm tm;
        time_t tt = (time_t)t;

        if (t <= 0 || !gmtime_r(&tt, &tm)) {
                snprintf(buf, len, "-");
                return;
        }
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void cli_add_node_rows(struct table *t, const char *host, const struct hpw_node *n)
{
        char tot[32], fr[32];

        cli_format_bytes(n->memory_total_bytes, tot, sizeof(tot));
        cli_format_bytes(n->memory_free_bytes, fr, sizeof(fr));
        if (n->n_hugepages == 0) {
                if (host)
                        table_addf(t, "%s\t%d\t-\t-\t-\t-", host, n->id);
                else
                        table_addf(t, "%d\t%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t-", n->id, n->cpus[0] ? n->cpus : "-",
                                   tot, fr);
                return;
        }
        for (size_t i = 0; i < n->n_hugepages; i++) {
                const struct hpw_hugepages *hp = n->hugepages[i];
                char ps[32], el[64] = "-";

                hpw_format_page_size(hp->page_size_bytes, ps, sizeof(ps));
                /* Elastic pools show their bounds: min..max pages. */
                if (hp->elastic)
                        snprintf(el, sizeof(el), "%llu..%llu", (unsigned long long)hp->elastic_min,
                                 (unsigned long long)hp->elastic_max);
                if (host)
                        table_addf(t, "%s\t%d\t%s\t%llu\t%llu\t%llu", host, n->id, ps,
                                   (unsigned long long)hp->total, (unsigned long long)hp->free,
                                   (unsigned long long)hp->warm);
                else
                        table_addf(t, "%d\t%s\t%s\t%s\t%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%s", n->id,
                                   i == 0 ? (n->cpus[0] ? n->cpus : "-") : "", i == 0 ? tot : "",
                                   i == 0 ? fr : "", ps, (unsigned long long)hp->total,
                                   (unsigned long long)hp->free, (unsigned long long)hp->surplus,
                                   (unsigned long long)hp->warm, (unsigned long long)hp->warming, el);
        }
}

void cli_add_pool_row(struct table *t, const char *host, const struct hpw_pool *p)
{
        char ps[32], sz[32], rate[32], exp[40];
        double pct = p->size_bytes ? 100.0 * (double)p->bytes_done / (double)p->size_bytes : 0;

        hpw_format_page_size(p->page_size_bytes, ps, sizeof(ps));
        cli_format_bytes(p->size_bytes, sz, sizeof(sz));
        cli_format_bytes((uint64_t)p->rate_bytes_per_second, rate, sizeof(rate));
        cli_format_time(p->expires_at, exp, sizeof(exp));
        table_addf(t, "%s%s%s\t%d\t%s\t%s\t%s\t%.0f%%\t%s/s\t%s\t%s", host ? host : "", host ? "\t" : "",
                   p->name, p->node, ps, sz, p->state_name, pct, rate, p->claimed ? "yes" : "no", exp);
}

/* A refusal by the node's memory floor carries the largest count that fits:
 * say it as the command that would work. */
void cli_floor_hint(const struct ctx *x, const struct hpw_problem *p, int node, uint64_t page_size)
{
        char fl[32], ps[32];

        if (!p || !p->memory_floor_bytes)
                return;
        cli_format_bytes(p->memory_floor_bytes, fl, sizeof(fl));
        hpw_format_page_size(page_size ? page_size : CLI_DEFAULT_PAGE_SIZE, ps, sizeof(ps));
        fprintf(stderr, "hpwarm: node %d keeps %s free (the memory floor, hpwarmd --memory-floor): at most "
                "%llu %s pages fit: hpwarm reserve %d %s %llu\n", node, fl, (unsigned long long)p->max_count, ps,
                node, ps, (unsigned long long)p->max_count);
}
