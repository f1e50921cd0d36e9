/* cli_core: the pure half of the hpwarm command line that is not parsing
 * (cli_parse.c): exit codes, timeouts, what to say when a server cannot be
 * reached, byte formatting, place selection, hosts files, text tables, and
 * the URL and usage-error helpers that the parsers (cli_parse.c,
 * cli_placement.c) and the commands share.  A leaf of the CLI: it calls
 * only into the library. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

void cli_unreachable_hint(const char *url, int connect_errno, const char *curl_msg, char *buf, size_t len)
{
        const char *m = curl_msg ? curl_msg : "";

        if (strncmp(url, "unix://", 7) == 0) {
                const char *path = url + 7;

                switch (connect_errno) {
                case ENOENT:
                case ENOTDIR:
                        snprintf(buf, len, "no socket at %s: is hpwarmd running? (looked for unix:%s)", path, path);
                        return;
                case EACCES:
                case EPERM:
                        snprintf(buf, len, "permission denied on unix:%s: run as root, or as a member of the "
                                 "group hpwarmd was given with --socket-group", path);
                        return;
                case ECONNREFUSED:
                        snprintf(buf, len, "nothing listens on unix:%s (a stale socket: is hpwarmd running?)", path);
                        return;
                case ENOTSOCK:
                        snprintf(buf, len, "unix:%s is not a socket (is --url right?)", path);
                        return;
                default:
                        snprintf(buf, len, "cannot connect to unix:%s%s%s", path, connect_errno ? ": " : "",
                                 connect_errno ? strerror(connect_errno) : "");
                        return;
                }
        }
        if (strstr(m, "wrong version number") || strstr(m, "packet length too long") ||
            strstr(m, "unexpected eof") || strstr(m, "SSL routines"))
                snprintf(buf, len, "TLS to %s failed (%s): if hpwarmd there listens without --tls-cert, use "
                         "http://", url, m);
        else if (strncmp(url, "http://", 7) == 0 &&
                 (strstr(m, "Empty reply") || strstr(m, "HTTP/0.9") || strstr(m, "Recv failure")))
                snprintf(buf, len, "%s closed the connection without an HTTP answer (%s): if hpwarmd there uses "
                         "TLS (--tls-cert), use https://", url, m);
        else if (strstr(m, "refused") || strstr(m, "Couldn't connect") || strstr(m, "Could not connect"))
                snprintf(buf, len, "connection refused by %s: is hpwarmd running and listening there "
                         "(--listen HOST:PORT)? (%s)", url, m);
        else
                snprintf(buf, len, "cannot reach %s: %s", url, m[0] ? m : "no answer");
}

int cli_exit_code(enum hpw_error err)
{
        switch (err) {
        case HPW_OK:
                return CLI_EXIT_OK;
        case HPW_E_INVALID:
        case HPW_E_NULL_HANDLE:
        case HPW_E_NULL_ARGUMENT:
        case HPW_E_STRUCT_SIZE:
                return CLI_EXIT_USAGE;
        case HPW_E_UNREACHABLE:
        case HPW_E_TLS:
                return CLI_EXIT_UNREACHABLE;
        case HPW_E_TIMEOUT:
                return CLI_EXIT_TIMEOUT;
        case HPW_E_CONFLICT:
        case HPW_E_INSUFFICIENT:
                return CLI_EXIT_CONFLICT;
        case HPW_E_UNAUTHORIZED:
        case HPW_E_FORBIDDEN:
                return CLI_EXIT_AUTH;
        case HPW_E_RATE_LIMITED:
        case HPW_E_UNAVAILABLE:
                return CLI_EXIT_RETRY;
        default:
                return CLI_EXIT_FAILED;
        }
}

int cli_exit_for(enum hpw_error err, enum hpw_slug slug)
{
        int rc = cli_exit_code(err);

        if (rc == CLI_EXIT_RETRY && slug != HPW_SLUG_UNKNOWN && !hpw_slug_retryable(slug))
                return CLI_EXIT_FAILED;
        return rc;
}

uint64_t cli_timeout_ms(const struct cli *c, bool fleet_query)
{
        if (fleet_query)
                return c->timeout_set && c->timeout_ms ? c->timeout_ms : CLI_DEFAULT_FLEET_TIMEOUT_MS;
        return c->timeout_set ? c->timeout_ms : CLI_DEFAULT_TIMEOUT_MS;
}

int cli_fleet_exit(const struct hpw_fleet *f)
{
        int code = -1;
        size_t ok = 0;

        for (size_t i = 0; i < f->n; i++) {
                int c;

                if (f->hosts[i]->err == HPW_OK) {
                        ok++;
                        continue;
                }
                c = cli_exit_code(f->hosts[i]->err);
                if (code >= 0 && c != code)
                        code = CLI_EXIT_UNREACHABLE;
                else if (code < 0)
                        code = c;
        }
        if (f->n && ok == f->n)
                return CLI_EXIT_OK;
        if (ok)
                return CLI_EXIT_PARTIAL;
        return code < 0 ? CLI_EXIT_UNREACHABLE : code;
}

void cli_format_bytes(uint64_t bytes, char *buf, size_t len)
{
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
        double v = (double)bytes;
        size_t u = 0;

        while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
                v /= 1024;
                u++;
        }
        if (u == 0)
                snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        else if (v == (double)(uint64_t)v)
                snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
        else
                snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* Does candidate A beat B (both of the requested page size, both in the
 * same class)?  STOCK: rank by ready files first. */
static bool place_better(const struct place_cand *a, const struct place_cand *b, bool stock)
{
        if (stock && a->stock_ready != b->stock_ready)
                return a->stock_ready > b->stock_ready;
        if (a->available != b->available)
                return a->available > b->available;
        if (a->host != b->host)
                return a->host < b->host;
        return a->node < b->node;
}

int cli_place(const struct place_cand *c, size_t n, uint64_t size, uint64_t page_size, size_t *ret_index,
              enum place_why *ret_why)
{
        uint64_t need;
        size_t best = SIZE_MAX, best_stock = SIZE_MAX;

        if (page_size == 0)
                return -EINVAL;
        need = size / page_size + (size % page_size ? 1 : 0);
        for (size_t i = 0; i < n; i++) {
                if (c[i].page_size != page_size)
                        continue;
                if (c[i].stock_ready > 0 &&
                    (best_stock == SIZE_MAX || place_better(&c[i], &c[best_stock], true)))
                        best_stock = i;
                if (c[i].available >= need && (best == SIZE_MAX || place_better(&c[i], &c[best], false)))
                        best = i;
        }
        if (best_stock != SIZE_MAX) {
                *ret_index = best_stock;
                *ret_why = PLACE_STOCK;
                return 0;
        }
        if (best == SIZE_MAX)
                return -ENOENT;
        *ret_index = best;
        *ret_why = PLACE_FREE;
        return 0;
}

void cli_hosts_free(char **hosts, size_t n)
{
        for (size_t i = 0; hosts && i < n; i++)
                free(hosts[i]);
        free(hosts);
}

int cli_read_hosts(const char *path, char ***ret, size_t *ret_n)
{
        FILE *f = fopen(path, "re");
        char *line = NULL, **v = NULL;
        size_t cap = 0, n = 0, alloc = 0;
        ssize_t len;
        int r = 0;

        if (!f)
                return -errno;
        while ((len = getline(&line, &cap, f)) >= 0) {
                char *s = line, *e;

                while (*s == ' ' || *s == '\t')
                        s++;
                e = s + strlen(s);
                while (e > s && strchr(" \t\r\n", e[-1]))
                        *--e = '\0';
                if (!*s || *s == '#')
                        continue;
                if (n == alloc) {
                        size_t na = alloc ? alloc * 2 : 16;
                        char **nv = realloc(v, na * sizeof(*nv));
                        if (!nv) {
                                r = -ENOMEM;
                                break;
                        }
                        v = nv;
                        alloc = na;
                }
                if (!(v[n] = strdup(s))) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        if (r == 0 && ferror(f))
                r = -EIO;
        free(line);
        fclose(f);
        if (r < 0) {
                cli_hosts_free(v, n);
                return r;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

/* ---- tables ---- */

struct table {
        size_t ncols, nrows, cap;
        char **cells;   /* nrows * ncols, row 0 the header */
};

static void table_add_tsv(struct table *t, const char *tsv)
{
        char **cells;
        const char *p = tsv;

        if (!t)
                return;
        if (t->nrows == t->cap) {
                size_t nc = t->cap ? t->cap * 2 : 16;
                cells = realloc(t->cells, nc * t->ncols * sizeof(*cells));
                if (!cells)
                        return;
                t->cells = cells;
                t->cap = nc;
        }
        cells = &t->cells[t->nrows * t->ncols];
        for (size_t i = 0; i < t->ncols; i++) {
                const char *tab = p ? strchr(p, '\t') : NULL;
                size_t len = p ? (tab ? (size_t)(tab - p) : strlen(p)) : 0;
                cells[i] = strndup(p ? p : "", len);
                p = tab ? tab + 1 : NULL;
        }
        t->nrows++;
}

struct table *table_new(const char *header_tsv)
{
        struct table *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->ncols = 1;
        for (const char *p = header_tsv; *p; p++)
                t->ncols += *p == '\t';
        table_add_tsv(t, header_tsv);
        return t;
}

void table_addf(struct table *t, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (s)
                table_add_tsv(t, s);
        free(s);
}

void table_print(const struct table *t, FILE *f)
{
        size_t *w;

        if (!t || !(w = calloc(t->ncols, sizeof(*w))))
                return;
        for (size_t r = 0; r < t->nrows; r++)
                for (size_t c = 0; c < t->ncols; c++) {
                        const char *s = t->cells[r * t->ncols + c];
                        size_t l = s ? strlen(s) : 0;
                        if (l > w[c])
                                w[c] = l;
                }
        for (size_t r = 0; r < t->nrows; r++) {
                for (size_t c = 0; c < t->ncols; c++) {
                        const char *s = t->cells[r * t->ncols + c];
                        if (c + 1 == t->ncols)
                                fprintf(f, "%s\n", s ? s : "");
                        else
                                fprintf(f, "%-*s  ", (int)w[c], s ? s : "");
                }
        }
        free(w);
}

void table_free(struct table *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < t->nrows * t->ncols; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
}

int cli_usage_err(char *err, size_t errlen, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

int cli_url_normalize(const char *in, char *out, size_t len, char *err, size_t errlen)
{
        const char *sep;
        int n;

        err[0] = '\0';
        if (!in || !in[0])
                return cli_usage_err(err, errlen, "--url: empty (try unix:///run/hpwarmd/api.sock or http://HOST:PORT)");
        sep = strstr(in, "://");
        if (sep && (strncmp(in, "http://", 7) == 0 || strncmp(in, "https://", 8) == 0 ||
                    strncmp(in, "unix://", 7) == 0))
                n = snprintf(out, len, "%s", in);
        else if (sep)
                return cli_usage_err(err, errlen, "--url %s: unsupported scheme '%.*s' (use http://HOST:PORT, "
                                 "https://HOST:PORT or unix:///PATH)", in, (int)(sep - in), in);
        else if (in[0] == '/')
                n = snprintf(out, len, "unix://%s", in);      /* a socket path */
        else
                n = snprintf(out, len, "http://%s", in);      /* HOST:PORT */
        if (n < 0 || (size_t)n >= len)
                return cli_usage_err(err, errlen, "--url: too long");
        return 0;
}
