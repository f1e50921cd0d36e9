/* cli: main() of the hpwarm command line.
 *
 * Parse (cli_parse.c), make one handle, run one command, print, and turn the
 * library's error into the documented exit code.  Output goes to stdout
 * (tables, or with --json the server's JSON verbatim once it parsed as one
 * whole object); diagnostics go to stderr, once, where the error is handled.
 * The fleet command lives in cli_fleet.c; what both use is in cli_cmd.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
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

static void fmt_ps(uint64_t ps, char *buf, size_t len)
{
        hpw_format_page_size(ps, buf, len);
}

static void fmt_time(int64_t t, char *buf, size_t len)
{
        struct tm tm;
        time_t tt = (time_t)t;

        if (t <= 0 || !gmtime_r(&tt, &tm)) {
                snprintf(buf, len, "-");
                return;
        }
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- nodes ---- */

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

                fmt_ps(hp->page_size_bytes, ps, sizeof(ps));
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

#define NODES_HEADER "NODE\tCPUS\tMEMORY\tMEM FREE\tPAGE\tTOTAL\tFREE\tSURPLUS\tWARM\tWARMING\tELASTIC"

static int cmd_nodes(struct ctx *x)
{
        enum hpw_error err;
        struct table *t;

        if (x->cli->node >= 0) {
                struct hpw_node *n = NULL;
                err = hpw_node(x->h, x->cli->node, &n);
                if (err)
                        return cli_fail(x, "nodes", err);
                if (x->cli->json) {
                        cli_print_json(n->json);
                } else {
                        t = table_new(NODES_HEADER);
                        cli_add_node_rows(t, NULL, n);
                        table_print(t, stdout);
                        table_free(t);
                }
                hpw_node_free(n);
                return 0;
        }
        struct hpw_node_list *l = NULL;
        err = hpw_nodes(x->h, &l);
        if (err)
                return cli_fail(x, "nodes", err);
        if (x->cli->json) {
                cli_print_json(l->json);
        } else {
                t = table_new(NODES_HEADER);
                for (size_t i = 0; i < l->n; i++)
                        cli_add_node_rows(t, NULL, l->nodes[i]);
                table_print(t, stdout);
                table_free(t);
        }
        hpw_node_list_free(l);
        return 0;
}

/* ---- pools ---- */

void cli_add_pool_row(struct table *t, const char *host, const struct hpw_pool *p)
{
        char ps[32], sz[32], rate[32], exp[40];
        double pct = p->size_bytes ? 100.0 * (double)p->bytes_done / (double)p->size_bytes : 0;

        fmt_ps(p->page_size_bytes, ps, sizeof(ps));
        cli_format_bytes(p->size_bytes, sz, sizeof(sz));
        cli_format_bytes((uint64_t)p->rate_bytes_per_second, rate, sizeof(rate));
        fmt_time(p->expires_at, exp, sizeof(exp));
        table_addf(t, "%s%s%s\t%d\t%s\t%s\t%s\t%.0f%%\t%s/s\t%s\t%s", host ? host : "", host ? "\t" : "",
                   p->name, p->node, ps, sz, p->state_name, pct, rate, p->claimed ? "yes" : "no", exp);
}

static void print_pool(const struct hpw_pool *p)
{
        char ps[32], sz[32], done[32], rate[32], t1[40], t2[40], t3[40];

        fmt_ps(p->page_size_bytes, ps, sizeof(ps));
        cli_format_bytes(p->size_bytes, sz, sizeof(sz));
        cli_format_bytes(p->bytes_done, done, sizeof(done));
        cli_format_bytes((uint64_t)p->rate_bytes_per_second, rate, sizeof(rate));
        fmt_time(p->started_at, t1, sizeof(t1));
        fmt_time(p->finished_at, t2, sizeof(t2));
        fmt_time(p->expires_at, t3, sizeof(t3));
        printf("name:       %s\n", p->name);
        printf("state:      %s\n", p->state_name);
        printf("node:       %d\n", p->node);
        printf("page size:  %s\n", ps);
        printf("size:       %s\n", sz);
        printf("done:       %s (%.0f%%)\n", done,
               p->size_bytes ? 100.0 * (double)p->bytes_done / (double)p->size_bytes : 0.0);
        printf("rate:       %s/s\n", rate);
        printf("threads:    %u\n", p->threads);
        printf("started:    %s\n", t1);
        printf("finished:   %s\n", t2);
        printf("elapsed:    %.3f s\n", p->elapsed_seconds);
        printf("path:       %s\n", p->path[0] ? p->path : "-");
        printf("placement:  %s, %llu pages off node\n", p->placement_verified ? "verified" : "not verified",
               (unsigned long long)p->pages_off_node);
        printf("claimed:    %s\n", p->claimed ? "yes" : "no");
        printf("expires:    %s\n", t3);
        if (p->from_stock[0])
                printf("from stock: %s\n", p->from_stock);
        if (p->label[0])
                printf("label:      %s\n", p->label);
        if (p->file_owned)
                printf("file owner: %u:%u\n", p->file_uid, p->file_gid);
        if (p->error)
                printf("error:      %s: %s%s%s\n", p->error->slug, p->error->title,
                       p->error->detail[0] ? ": " : "", p->error->detail);
}

static int cmd_pools(struct ctx *x)
{
        struct hpw_pool_list *l = NULL;
        enum hpw_error err = hpw_pools(x->h, &l);

        if (err)
                return cli_fail(x, "pools", err);
        if (x->cli->json) {
                cli_print_json(l->json);
        } else {
                struct table *t = table_new(POOLS_HEADER);
                for (size_t i = 0; i < l->n; i++)
                        cli_add_pool_row(t, NULL, l->pools[i]);
                table_print(t, stdout);
                table_free(t);
        }
        hpw_pool_list_free(l);
        return 0;
}

static int cmd_status(struct ctx *x)
{
        struct hpw_pool *p = NULL;
        enum hpw_error err = hpw_pool(x->h, x->cli->name, &p);

        if (err)
                return cli_fail(x, "status", err);
        if (x->cli->json)
                cli_print_json(p->json);
        else
                print_pool(p);
        hpw_pool_free(p);
        return 0;
}

/* ---- waiting ---- */

struct progress {
        bool tty;
        enum hpw_pool_state last;
        bool drawn;
        const char *name;
};

static int on_progress(const struct hpw_pool *p, void *userdata)
{
        struct progress *pr = userdata;

        if (pr->tty) {
                const int width = 30;
                double frac = p->size_bytes ? (double)p->bytes_done / (double)p->size_bytes : 0;
                char done[32], size[32], eta[32] = "-";
                int fill;

                if (frac > 1)
                        frac = 1;
                fill = (int)(frac * width);
                cli_format_bytes(p->bytes_done, done, sizeof(done));
                cli_format_bytes(p->size_bytes, size, sizeof(size));
                if (p->rate_bytes_per_second > 0 && p->bytes_done < p->size_bytes)
                        snprintf(eta, sizeof(eta), "%.0fs",
                                 ceil((double)(p->size_bytes - p->bytes_done) / p->rate_bytes_per_second));
                fprintf(stderr, "\r%s [%.*s%*s] %s / %s  %.2f GiB/s  ETA %s  %s\033[K", p->name, fill,
                        "##############################", width - fill, "", done, size,
                        p->rate_bytes_per_second / (double)(1ull << 30), eta, p->state_name);
                fflush(stderr);
                pr->drawn = true;
        } else if (p->state != pr->last) {
                char done[32], size[32];
                cli_format_bytes(p->bytes_done, done, sizeof(done));
                cli_format_bytes(p->size_bytes, size, sizeof(size));
                printf("%s: %s %s/%s %.2f GiB/s\n", p->name, p->state_name, done, size,
                       p->rate_bytes_per_second / (double)(1ull << 30));
                fflush(stdout);
        }
        pr->last = p->state;
        return 0;
}

/* The progress bar is drawn with \r and an erase-line escape, so only on
 * a terminal that understands them: stderr a tty and TERM not "dumb" (as
 * curl and kubectl do).  Elsewhere the state changes are logged as lines. */
static bool progress_bar_ok(void)
{
        const char *term = getenv("TERM");

        return isatty(STDERR_FILENO) && term && term[0] && strcmp(term, "dumb") != 0;
}

/* INITIAL, when known (warm --wait), is the state the pool starts from, so
 * a log shows "warming" before "ready". */
static int do_wait(struct ctx *x, const char *name, const struct hpw_pool *initial)
{
        struct progress pr = { .tty = !x->cli->json && progress_bar_ok(), .last = HPW_POOL_UNKNOWN,
                               .name = name };
        uint64_t tmo = x->cli->timeout_set ? x->cli->timeout_ms : CLI_DEFAULT_WAIT_TIMEOUT_MS;
        uint64_t spent = cli_now_ms() - x->start_ms;

        /* After warm's PUT, wait only for what is left of the deadline. */
        if (tmo)
                tmo = spent < tmo ? tmo - spent : 1;
        struct hpw_pool *p = NULL;
        enum hpw_error err;

        if (initial && !x->cli->json)
                on_progress(initial, &pr);
        err = hpw_wait(x->h, name, tmo, x->cli->json ? NULL : on_progress, &pr, &p);
        if (pr.drawn)
                fputc('\n', stderr);
        if (x->cli->json && p)
                cli_emit_json(x, "pool", p->json);
        if (err) {
                /* With a pool to show, that is the document; else the
                 * problem, if the server sent one. */
                if (x->cli->json && !p && hpw_last_problem(x->h) && hpw_last_body(x->h)[0])
                        cli_emit_json(x, "error", hpw_last_body(x->h));
                cli_fail_msg(x->h, x->url, "wait", err);
                hpw_pool_free(p);
                return cli_exit_for(err, hpw_last_slug(x->h));
        }
        if (!x->cli->json && p && !pr.tty && pr.last != p->state)
                on_progress(p, &pr);
        hpw_pool_free(p);
        return 0;
}

static int cmd_wait(struct ctx *x)
{
        return do_wait(x, x->cli->name, NULL);
}

/* ---- warm, reserve, claim, release, handoff, health ---- */

/* A refusal by the node's memory floor carries the largest count that fits:
 * say it as the command that would work. */
static void floor_hint(const struct ctx *x, const struct hpw_problem *p, int node, uint64_t page_size)
{
        char fl[32], ps[32];

        if (!p || !p->memory_floor_bytes)
                return;
        cli_format_bytes(p->memory_floor_bytes, fl, sizeof(fl));
        fmt_ps(page_size ? page_size : CLI_DEFAULT_PAGE_SIZE, ps, sizeof(ps));
        fprintf(stderr, "hpwarm: node %d keeps %s free (the memory floor, hpwarmd --memory-floor): at most "
                "%llu %s pages fit: hpwarm reserve %d %s %llu\n", node, fl, (unsigned long long)p->max_count, ps,
                node, ps, (unsigned long long)p->max_count);
}

int cli_wait_at(struct ctx *x, const char *name, const struct hpw_pool *initial)
{
        return do_wait(x, name, initial);
}

int cli_warm_at(struct ctx *x, const char *name, int node, uint64_t size, uint64_t page_size)
{
        struct hpw_warm_request req = {
                .size = sizeof(req),
                .node = node,
                .size_bytes = size,
                .page_size = page_size,
                .threads = x->cli->threads,
                .ttl_seconds = x->cli->ttl_seconds,
                .reserve = x->cli->reserve,
                .label = x->cli->label,
                .file_owned = x->cli->file_owned,
                .file_uid = x->cli->file_uid,
                .file_gid = x->cli->file_gid,
        };
        struct hpw_pool *p = NULL;
        bool created = false;
        enum hpw_error err = hpw_warm(x->h, name, &req, &p, &created);

        int rc = 0;

        if (err) {
                int rc2 = cli_fail(x, "warm", err);
                floor_hint(x, hpw_last_problem(x->h), node, page_size);
                return rc2;
        }
        if (!x->cli->wait) {
                if (x->cli->json)
                        cli_emit_json(x, "pool", p->json);
                else
                        printf("%s: %s on node %d (%s%s%s)\n", p->name, created ? "created" : "exists", p->node,
                               p->state_name, p->from_stock[0] ? ", from stock: " : "", p->from_stock);
        } else {
                if (!x->cli->json)
                        printf("%s: %s on node %d%s%s%s\n", p->name, created ? "created" : "exists", p->node,
                               p->from_stock[0] ? " (from stock: " : "", p->from_stock, p->from_stock[0] ? ")" : "");
                rc = do_wait(x, name, p);
        }
        hpw_pool_free(p);
        return rc;
}

static int cmd_warm(struct ctx *x)
{
        return cli_warm_at(x, x->cli->name, x->cli->node, x->cli->size, x->cli->page_size);
}

static int cmd_reserve_elastic(struct ctx *x)
{
        struct hpw_elastic *e = NULL;
        enum hpw_error err = hpw_set_elastic(x->h, x->cli->node, x->cli->page_size, &x->cli->elastic_policy, &e);

        if (err) {
                const struct hpw_problem *p = hpw_last_problem(x->h);
                int rc = cli_fail(x, "reserve --elastic", err);
                floor_hint(x, p, x->cli->node, x->cli->page_size);
                return rc;
        }
        if (x->cli->json) {
                cli_print_json(e->json);
        } else {
                char ps[32];
                fmt_ps(e->page_size_bytes ? e->page_size_bytes : x->cli->page_size, ps, sizeof(ps));
                printf("node %d %s: elastic, %llu..%llu pages, headroom %llu, idle %llu s, growth %s\n", e->node, ps,
                       (unsigned long long)e->policy.min, (unsigned long long)e->policy.max,
                       (unsigned long long)e->policy.headroom, (unsigned long long)e->policy.idle_seconds,
                       e->runtime_growth[0] ? e->runtime_growth : "?");
        }
        hpw_elastic_free(e);
        return CLI_EXIT_OK;
}

static int cmd_reserve(struct ctx *x)
{
        if (x->cli->elastic)
                return cmd_reserve_elastic(x);
        struct hpw_reserve_result *r = NULL;
        enum hpw_error err = hpw_reserve(x->h, x->cli->node, x->cli->page_size, x->cli->count,
                                         x->cli->allow_partial, &r);
        int rc;

        if (err) {
                const struct hpw_problem *p = hpw_last_problem(x->h);
                rc = cli_fail(x, "reserve", err);
                if (p && (p->requested || p->achieved))
                        fprintf(stderr, "hpwarm: reserve: requested %llu pages, achieved %llu\n",
                                (unsigned long long)p->requested, (unsigned long long)p->achieved);
                floor_hint(x, p, x->cli->node, x->cli->page_size);
                return rc;
        }
        if (x->cli->json) {
                cli_print_json(r->json);
        } else {
                char ps[32];
                fmt_ps(r->page_size_bytes ? r->page_size_bytes : x->cli->page_size, ps, sizeof(ps));
                printf("node %d %s: requested %llu, total %llu, free %llu%s\n", r->node, ps,
                       (unsigned long long)r->requested, (unsigned long long)r->total,
                       (unsigned long long)r->free, r->complete ? "" : " (incomplete)");
        }
        rc = r->complete ? CLI_EXIT_OK : CLI_EXIT_FAILED;
        if (!r->complete)
                fprintf(stderr, "hpwarm: reserve: incomplete: got %llu of %llu pages\n",
                        (unsigned long long)r->total, (unsigned long long)r->requested);
        hpw_reserve_result_free(r);
        return rc;
}

static int cmd_claim(struct ctx *x)
{
        struct hpw_pool *p = NULL;
        enum hpw_error err = x->cli->pid ? hpw_claim_pid(x->h, x->cli->name, x->cli->pid, &p)
                                         : hpw_claim(x->h, x->cli->name, &p);

        if (err)
                return cli_fail(x, "claim", err);
        if (x->cli->json)
                cli_print_json(p->json);
        else
                printf("%s: claimed\n", p->name);
        hpw_pool_free(p);
        return 0;
}

static int cmd_release(struct ctx *x)
{
        int rc;
        enum hpw_error err = hpw_release(x->h, x->cli->name);

        if (err == HPW_E_NOT_FOUND && x->cli->ignore_missing) {
                /* Already gone: what the caller wanted. */
                if (x->cli->json)
                        cli_print_json("{}");
                else
                        printf("%s: no such pool (already released)\n", x->cli->name);
                return 0;
        }
        if (err == HPW_E_NOT_FOUND) {
                rc = cli_fail(x, "release", err);
                fprintf(stderr, "hpwarm: release: there is no pool %s (add --ignore-missing to accept that)\n",
                        x->cli->name);
                return rc;
        }
        if (err)
                return cli_fail(x, "release", err);
        if (x->cli->json) {
                /* The server's answer when it is one whole JSON object and a
                 * 2xx (a retried release that found the pool gone got 404). */
                const char *b = hpw_last_body(x->h);
                int st = hpw_last_status(x->h);
                char *whole = st >= 200 && st < 300 && b[0] ? hpw_json_reprint(b, strlen(b)) : NULL;

                cli_print_json(whole ? b : "{}");
                free(whole);
        } else {
                printf("%s: released\n", x->cli->name);
        }
        return 0;
}

/* One pool NAME through H (at URL), for the --source-url comparison.
 * NULL after the message, with *rc set. */
static struct hpw_pool *handoff_pool_at(struct hpw *h, const char *url, const char *name, int *rc)
{
        struct hpw_pool *p = NULL;
        enum hpw_error err = hpw_pool(h, name, &p);

        if (err) {
                cli_fail_msg(h, url, name, err);
                *rc = cli_exit_for(err, hpw_last_slug(h));
                return NULL;
        }
        return p;
}

/* --as with --source-url: the source pools live on another host's daemon,
 * which the destination's cannot see.  Each destination pool must match
 * its source in size and page size (QEMU refuses a RAM block whose size
 * differs, after the destination has started); the destination daemon
 * checks only sources it holds itself.  0, or the exit code after a
 * message naming both sides.  The source daemon takes the same credentials
 * (--token-file, --cacert, --cert, --key): one operator's fleet. */
static int handoff_check_source(struct ctx *x)
{
        const struct cli *c = x->cli;
        char url[4096], err_s[256];
        struct hpw *src = NULL;
        enum hpw_error e;
        int rc = 0;

        if (cli_url_normalize(c->source_url, url, sizeof(url), err_s, sizeof(err_s)) < 0) {
                fprintf(stderr, "hpwarm: handoff: --source-url: %s\n", err_s);
                return CLI_EXIT_USAGE;
        }
        if ((e = hpw_new(url, &src)) ||
            (c->token_file && (e = hpw_set_token_file(src, c->token_file))) ||
            (e = hpw_set_tls(src, c->cacert, c->cert, c->key))) {
                fprintf(stderr, "hpwarm: handoff: --source-url %s: %s\n", url, hpw_strerror(e));
                hpw_free(src);
                return e == HPW_E_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
        }
        hpw_set_timeouts(src, c->connect_timeout_ms, cli_timeout_ms(c, false));
        for (size_t i = 0; i < c->n_names && rc == 0; i++) {
                struct hpw_pool *sp = handoff_pool_at(src, url, c->as[i], &rc), *dp = NULL;
                if (sp)
                        dp = handoff_pool_at(x->h, x->url, c->names[i], &rc);
                if (sp && dp && (sp->size_bytes != dp->size_bytes || sp->page_size_bytes != dp->page_size_bytes)) {
                        char ss[32], sps[32], ds[32], dps[32];
                        cli_format_bytes(sp->size_bytes, ss, sizeof(ss));
                        cli_format_bytes(dp->size_bytes, ds, sizeof(ds));
                        hpw_format_page_size(sp->page_size_bytes, sps, sizeof(sps));
                        hpw_format_page_size(dp->page_size_bytes, dps, sizeof(dps));
                        fprintf(stderr,
                                "hpwarm: handoff: pool '%s' is %s on %s pages, its source '%s' at %s is %s on %s "
                                "pages; a migration needs the same size and page size on both sides\n",
                                c->names[i], ds, dps, c->as[i], url, ss, sps);
                        rc = CLI_EXIT_FAILED;
                }
                hpw_pool_free(sp);
                hpw_pool_free(dp);
        }
        hpw_free(src);
        return rc;
}

/* The pools as one guest's RAM, composed by the server (GET /v1/handoff).
 * stdout gets only the text to use: the shell-quoted words (the libvirt
 * fragment for libvirt), with --argv one word per line, with --json the
 * server's answer; what the caller must add (-m ...) goes to stderr when a
 * person is watching.  With --as, a migration destination: the pools under
 * their sources' ids, the sizes checked first against --source-url's
 * daemon when given; a source neither daemon could compare is said on
 * stderr. */
static int cmd_handoff(struct ctx *x)
{
        static const char *const vmm_names[] = {
                [VMM_QEMU] = "qemu", [VMM_CLOUD_HYPERVISOR] = "cloud-hypervisor", [VMM_LIBVIRT] = "libvirt",
        };
        const struct cli *c = x->cli;
        struct hpw_handoff *ho = NULL;
        const char *as[HPW_HANDOFF_MAX_POOLS];
        enum hpw_error err;
        int rc = 0;

        for (size_t i = 0; i < c->n_as; i++)
                as[i] = c->as[i];
        if (c->source_url && (rc = handoff_check_source(x)) != 0)
                return rc;
        err = c->n_as ? hpw_handoff_as(x->h, vmm_names[c->vmm], c->names, as, c->n_names, &ho)
                      : hpw_handoff(x->h, vmm_names[c->vmm], c->names, c->n_names, &ho);
        if (err) {
                rc = cli_fail(x, "handoff", err);
                if (err == HPW_E_CONFLICT)
                        fprintf(stderr, "hpwarm: handoff: wait until the pools are ready (hpwarm wait NAME)\n");
                return rc;
        }
        if (c->json) {
                cli_print_json(ho->json);
        } else if (c->argv_words) {
                /* One word per line reads back with `mapfile -t`; a word with a
                 * newline in it would not, so it is refused, not split. */
                for (size_t i = 0; i < ho->n_argv; i++)
                        if (strchr(ho->argv[i], '\n')) {
                                fprintf(stderr, "hpwarm: handoff: a word contains a newline; use --json\n");
                                hpw_handoff_free(ho);
                                return CLI_EXIT_FAILED;
                        }
                for (size_t i = 0; i < ho->n_argv; i++)
                        printf("%s\n", ho->argv[i]);
        } else {
                printf("%s\n", c->vmm == VMM_LIBVIRT ? ho->xml : ho->args);
        }
        if (ho->n_as_unchecked && !c->source_url)
                fprintf(stderr,
                        "hpwarm: handoff: %zu source pool(s) are not on this daemon, so their sizes were not "
                        "compared; give --source-url URL of the source host's daemon to check them\n",
                        ho->n_as_unchecked);
        if (!c->json && ho->note[0] && isatty(STDERR_FILENO)) {
                fprintf(stderr, "hpwarm: note: %s\n", ho->note);
                if (c->vmm == VMM_LIBVIRT)
                        fprintf(stderr, "hpwarm: note: the <domain> element needs %s\n", ho->xml_namespace);
        }
        hpw_handoff_free(ho);
        return rc;
}

static int cmd_health(struct ctx *x)
{
        struct hpw_health *hl = NULL;
        enum hpw_error err = hpw_health(x->h, &hl);

        if (err)
                return cli_fail(x, "health", err);
        if (x->cli->json)
                cli_print_json(hl->json);
        else
                printf("%s %s (%s)\n", hl->status, hl->version[0] ? hl->version : "-", x->url);
        hpw_health_free(hl);
        return 0;
}

/* ---- stock ---- */

#define STOCK_HEADER "NODE\tPAGE\tSIZE\tCOUNT\tREADY\tWARMING\tRECYCLING\tDEFICIT"

static void print_stock(const struct hpw_stock *st)
{
        struct table *t = table_new(STOCK_HEADER);

        for (size_t i = 0; i < st->n; i++) {
                const struct hpw_stock_target *g = st->targets[i];
                char ps[32], sz[32];

                fmt_ps(g->page_size_bytes, ps, sizeof(ps));
                cli_format_bytes(g->size_bytes, sz, sizeof(sz));
                table_addf(t, "%d\t%s\t%s\t%llu\t%llu\t%llu\t%llu\t%llu", g->node, ps, sz,
                           (unsigned long long)g->count, (unsigned long long)g->ready,
                           (unsigned long long)g->warming, (unsigned long long)g->recycling,
                           (unsigned long long)g->deficit);
        }
        table_print(t, stdout);
        table_free(t);
}

/* show: GET; set and clear: PUT of the whole list, then the daemon's answer
 * (the new targets with their counts) as show would print it. */
static int cmd_stock(struct ctx *x)
{
        const struct cli *c = x->cli;
        struct hpw_stock *st = NULL;
        const char *what = c->stock_op == STOCK_SHOW ? "stock" : c->stock_op == STOCK_SET ? "stock set" : "stock clear";
        const struct hpw_stock_target *targets[HPW_STOCK_MAX_TARGETS];

        for (size_t i = 0; i < c->n_stock && i < HPW_STOCK_MAX_TARGETS; i++)
                targets[i] = &c->stock[i];
        enum hpw_error err = c->stock_op == STOCK_SHOW ? hpw_stock_get(x->h, &st)
                                                       : hpw_stock_set(x->h, targets, c->n_stock, &st);

        if (err) {
                int rc = cli_fail(x, what, err);
                /* The only 404 of GET /v1/stock is "no such route". */
                if (err == HPW_E_NOT_FOUND && c->stock_op == STOCK_SHOW)
                        fprintf(stderr, "hpwarm: stock: the daemon has no /v1/stock (older than stock support?)\n");
                return rc;
        }
        if (c->json)
                cli_print_json(st->json);
        else if (c->stock_op == STOCK_CLEAR && st->n == 0)
                printf("stock: no targets (stock files are being removed)\n");
        else
                print_stock(st);
        hpw_stock_free(st);
        return 0;
}

int main(int argc, char **argv)
{
        struct cli c;
        struct ctx x = { .cli = &c };
        char err[256], url[4096];
        enum hpw_error e;
        uint64_t total;
        int rc;

        if (cli_is_placement(argc, argv))
                return cli_placement_main(argc, argv);
        if (cli_parse(argc, argv, getenv("HPWARM_URL"), getenv("HPWARM_TOKEN_FILE"), &c, err,
                      sizeof(err)) < 0) {
                fprintf(stderr, "hpwarm: %s\n", err);
                return CLI_EXIT_USAGE;
        }
        if (c.help) {
                cli_help(c.cmd, stdout);
                return 0;
        }
        if (c.version) {
                printf("hpwarm %s\n", hpw_version());
                return 0;
        }
        if (cli_url_normalize(c.url, url, sizeof(url), err, sizeof(err)) < 0) {
                fprintf(stderr, "hpwarm: %s\n", err);
                return CLI_EXIT_USAGE;
        }
        c.url = url;
        x.url = c.url;
        x.start_ms = cli_now_ms();
        e = hpw_new(c.url, &x.h);
        if (e) {
                fprintf(stderr, "hpwarm: --url %s: %s (use http://HOST:PORT, https://HOST:PORT or unix:///PATH)\n",
                        c.url, hpw_strerror(e));
                return e == HPW_E_INVALID ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
        }
        if (c.token_file && (e = hpw_set_token_file(x.h, c.token_file))) {
                if (hpw_last_message(x.h)[0])
                        fprintf(stderr, "hpwarm: --token-file: %s (%s)\n", hpw_strerror(e), hpw_last_message(x.h));
                else
                        fprintf(stderr, "hpwarm: --token-file %s: %s\n", c.token_file, hpw_strerror(e));
                hpw_free(x.h);
                return CLI_EXIT_USAGE;
        }
        if ((e = hpw_set_tls(x.h, c.cacert, c.cert, c.key))) {
                fprintf(stderr, "hpwarm: %s\n", hpw_strerror(e));
                hpw_free(x.h);
                return CLI_EXIT_FAILED;
        }
        total = cli_timeout_ms(&c, c.cmd == CMD_FLEET);
        hpw_set_timeouts(x.h, c.connect_timeout_ms, total);

        switch (c.cmd) {
        case CMD_HEALTH: rc = cmd_health(&x); break;
        case CMD_NODES: rc = cmd_nodes(&x); break;
        case CMD_RESERVE: rc = cmd_reserve(&x); break;
        case CMD_WARM: rc = cmd_warm(&x); break;
        case CMD_STATUS: rc = cmd_status(&x); break;
        case CMD_WAIT: rc = cmd_wait(&x); break;
        case CMD_POOLS: rc = cmd_pools(&x); break;
        case CMD_CLAIM: rc = cmd_claim(&x); break;
        case CMD_RELEASE: rc = cmd_release(&x); break;
        case CMD_HANDOFF: rc = cmd_handoff(&x); break;
        case CMD_FLEET: rc = cli_cmd_fleet(&x); break;
        case CMD_STOCK: rc = cmd_stock(&x); break;
        default: rc = CLI_EXIT_USAGE; break;
        }
        hpw_free(x.h);
        return rc;
}
