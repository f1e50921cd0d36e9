/* cli_warm: hpwarm warm and hpwarm wait, and the wait loop both share.
 *
 * A warm is one PUT; with --wait it goes on into the wait loop, which shows
 * a progress bar on a terminal (stderr a tty, TERM not "dumb") and logs the
 * state changes as lines elsewhere.  --timeout is one deadline for the
 * whole command, so the wait after a warm gets only what is left of it.
 * fleet place --warm (cli_fleet.c) warms on the chosen host's handle with
 * cli_warm_at, which is why this is a file of its own below both. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_cmd.h"
#include "internal.h"

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

int cli_cmd_wait(struct ctx *x)
{
        return do_wait(x, x->cli->name, NULL);
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
                cli_floor_hint(x, hpw_last_problem(x->h), node, page_size);
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

int cli_cmd_warm(struct ctx *x)
{
        return cli_warm_at(x, x->cli->name, x->cli->node, x->cli->size, x->cli->page_size);
}
