/* main: main() of the hpwarm command line, and its single-host commands.
 *
 * Parse (cli_parse.c), make one handle, run one command from the table
 * below, print, and turn the library's error into the documented exit code.
 * Output goes to stdout (tables, or with --json the server's JSON verbatim
 * once it parsed as one whole object); diagnostics go to stderr, once,
 * where the error is handled (cli_out.c).  Commands live beside their
 * peers: warm and wait in cli_warm.c, fleet in cli_fleet.c, the rest here;
 * none calls back into this file, which only dispatches to them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_cmd.h"
#include "internal.h"
#include "libvirt_daemon.h"
#include "publish.h"

/* ---- nodes ---- */

#define NODES_HEADER "NODE\tCPUS\tMEMORY\tMEM FREE\tPAGE\tTOTAL\tFREE\tSURPLUS\tWARM\tWARMING\tELASTIC"

/* Under the table: why reserve will not change these counts. */
static void print_fixed_note(bool fixed)
{
        if (fixed)
                printf("hugepages fixed on this host (hpwarmd --fixed-hugepages): the daemon changes no count\n");
}

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
                        print_fixed_note(n->hugepages_fixed);
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
                bool fixed = false;
                for (size_t i = 0; i < l->n; i++) {
                        cli_add_node_rows(t, NULL, l->nodes[i]);
                        fixed = fixed || l->nodes[i]->hugepages_fixed;
                }
                table_print(t, stdout);
                table_free(t);
                print_fixed_note(fixed);
        }
        hpw_node_list_free(l);
        return 0;
}

/* ---- pools ---- */

static void print_pool(const struct hpw_pool *p)
{
        char ps[32], sz[32], done[32], rate[32], t1[40], t2[40], t3[40];

        hpw_format_page_size(p->page_size_bytes, ps, sizeof(ps));
        cli_format_bytes(p->size_bytes, sz, sizeof(sz));
        cli_format_bytes(p->bytes_done, done, sizeof(done));
        cli_format_bytes((uint64_t)p->rate_bytes_per_second, rate, sizeof(rate));
        cli_format_time(p->started_at, t1, sizeof(t1));
        cli_format_time(p->finished_at, t2, sizeof(t2));
        cli_format_time(p->expires_at, t3, sizeof(t3));
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

/* ---- warm, reserve, claim, release, handoff, health ---- */

static int cmd_reserve_elastic(struct ctx *x)
{
        struct hpw_elastic *e = NULL;
        enum hpw_error err = hpw_set_elastic(x->h, x->cli->node, x->cli->page_size, &x->cli->elastic_policy, &e);

        if (err) {
                const struct hpw_problem *p = hpw_last_problem(x->h);
                int rc = cli_fail(x, "reserve --elastic", err);
                cli_floor_hint(x, p, x->cli->node, x->cli->page_size);
                return rc;
        }
        if (x->cli->json) {
                cli_print_json(e->json);
        } else {
                char ps[32];
                hpw_format_page_size(e->page_size_bytes ? e->page_size_bytes : x->cli->page_size, ps, sizeof(ps));
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
                cli_floor_hint(x, p, x->cli->node, x->cli->page_size);
                return rc;
        }
        if (x->cli->json) {
                cli_print_json(r->json);
        } else {
                char ps[32];
                hpw_format_page_size(r->page_size_bytes ? r->page_size_bytes : x->cli->page_size, ps, sizeof(ps));
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
        const struct cli *c = x->cli;
        struct hpw_handoff *ho = NULL;
        const char *as[HPW_HANDOFF_MAX_POOLS];
        enum hpw_error err;
        int rc = 0;

        for (size_t i = 0; i < c->n_as; i++)
                as[i] = c->as[i];
        if (c->source_url && (rc = handoff_check_source(x)) != 0)
                return rc;
        err = c->n_as ? hpw_handoff_as(x->h, c->vmm->name, c->names, as, c->n_names, &ho)
                      : hpw_handoff(x->h, c->vmm->name, c->names, c->n_names, &ho);
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
                printf("%s\n", c->vmm->output == HPW_VMM_XML ? ho->xml : ho->args);
        }
        if (ho->n_as_unchecked && !c->source_url)
                fprintf(stderr,
                        "hpwarm: handoff: %zu source pool(s) are not on this daemon, so their sizes were not "
                        "compared; give --source-url URL of the source host's daemon to check them\n",
                        ho->n_as_unchecked);
        if (!c->json && ho->note[0] && isatty(STDERR_FILENO)) {
                fprintf(stderr, "hpwarm: note: %s\n", ho->note);
                if (c->vmm->output == HPW_VMM_XML)
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

                hpw_format_page_size(g->page_size_bytes, ps, sizeof(ps));
                cli_format_bytes(g->size_bytes, sz, sizeof(sz));
                table_addf(t, "%d\t%s\t%s\t%llu\t%llu\t%llu\t%llu\t%llu", g->node, ps, sz,
                           (unsigned long long)g->count, (unsigned long long)g->ready,
                           (unsigned long long)g->warming, (unsigned long long)g->recycling,
                           (unsigned long long)g->deficit);
        }
        table_print(t, stdout);
        table_free(t);
}

/* The nova.conf lines that keep Nova's NUMA fitting off the stock's pages:
 * Nova counts a host's hugepages as its own unless reserved_huge_pages
 * (node, page size in KiB, pages) leaves them out, one line per node and
 * page size, every target's files counted whole (ready or not: the stock
 * fills up to its targets).  With --json: {"reserved_huge_pages": [...]}. */
static void print_nova_config(const struct hpw_stock *st, bool json)
{
        struct { int node; uint64_t page_size, pages; } sum[HPW_STOCK_MAX_TARGETS];
        size_t n = 0;

        for (size_t i = 0; i < st->n; i++) {
                const struct hpw_stock_target *g = st->targets[i];
                size_t j = 0;

                if (g->page_size_bytes == 0)
                        continue;
                while (j < n && !(sum[j].node == g->node && sum[j].page_size == g->page_size_bytes))
                        j++;
                if (j == n) {
                        if (n == HPW_STOCK_MAX_TARGETS)
                                continue;
                        sum[n++] = (typeof(sum[0])){ g->node, g->page_size_bytes, 0 };
                }
                sum[j].pages += g->count * (g->size_bytes / g->page_size_bytes);
        }
        if (json) {
                printf("{\"reserved_huge_pages\":[");
                for (size_t j = 0; j < n; j++)
                        printf("%s\"node:%d,size:%llu,count:%llu\"", j ? "," : "", sum[j].node,
                               (unsigned long long)(sum[j].page_size >> 10), (unsigned long long)sum[j].pages);
                printf("]}\n");
                return;
        }
        printf("# nova.conf on this compute host: the hugepages of hpwarm's stock targets,\n"
               "# kept out of Nova's own count (restart nova-compute after a change)\n[DEFAULT]\n");
        if (n == 0)
                printf("# no stock targets: nothing to reserve\n");
        for (size_t j = 0; j < n; j++)
                printf("reserved_huge_pages = node:%d,size:%llu,count:%llu\n", sum[j].node,
                       (unsigned long long)(sum[j].page_size >> 10), (unsigned long long)sum[j].pages);
}

/* show: GET; set and clear: PUT of the whole list, then the daemon's answer
 * (the new targets with their counts) as show would print it; nova-config:
 * GET, printed as nova.conf lines. */
static int cmd_stock(struct ctx *x)
{
        const struct cli *c = x->cli;
        struct hpw_stock *st = NULL;
        static const char *const whats[] = { [STOCK_SHOW] = "stock", [STOCK_SET] = "stock set",
                                             [STOCK_CLEAR] = "stock clear", [STOCK_NOVA_CONFIG] = "stock nova-config" };
        const char *what = whats[c->stock_op];
        bool get = c->stock_op == STOCK_SHOW || c->stock_op == STOCK_NOVA_CONFIG;
        const struct hpw_stock_target *targets[HPW_STOCK_MAX_TARGETS];

        for (size_t i = 0; i < c->n_stock && i < HPW_STOCK_MAX_TARGETS; i++)
                targets[i] = &c->stock[i];
        enum hpw_error err = get ? hpw_stock_get(x->h, &st) : hpw_stock_set(x->h, targets, c->n_stock, &st);

        if (err) {
                int rc = cli_fail(x, what, err);
                /* The only 404 of GET /v1/stock is "no such route". */
                if (err == HPW_E_NOT_FOUND && get)
                        fprintf(stderr, "hpwarm: stock: the daemon has no /v1/stock (older than stock support?)\n");
                return rc;
        }
        if (c->stock_op == STOCK_NOVA_CONFIG)
                print_nova_config(st, c->json);
        else if (c->json)
                cli_print_json(st->json);
        else if (c->stock_op == STOCK_CLEAR && st->n == 0)
                printf("stock: no targets (stock files are being removed)\n");
        else
                print_stock(st);
        hpw_stock_free(st);
        return 0;
}

/* What each command runs, generated from its row in client/cli_options.json:
 * RUN on the context main() sets up, or MAIN on ARGV for a command with its
 * own parser (placement). */
static const struct {
        int (*run)(struct ctx *x);
        int (*main)(int argc, char **argv);
        void (*help)(FILE *f);  /* a command with its own parser: its own help */
} commands[CLI_N_COMMANDS] = {
#include "cli_commands_run.h"
};

int main(int argc, char **argv)
{
        struct cli c;
        struct ctx x = { .cli = &c };
        char err[256], url[4096];
        enum hpw_error e;
        uint64_t total;
        int rc;

        enum cli_cmd word = cli_cmd_word(argc, argv);
        if (commands[word].main)
                return commands[word].main(argc, argv);
        if (cli_parse(argc, argv, getenv("HPWARM_URL"), getenv("HPWARM_TOKEN_FILE"), &c, err,
                      sizeof(err)) < 0) {
                fprintf(stderr, "hpwarm: %s\n", err);
                return CLI_EXIT_USAGE;
        }
        if (c.help) {
                if (c.cmd > CMD_NONE && c.cmd < CLI_N_COMMANDS && commands[c.cmd].help)
                        commands[c.cmd].help(stdout);   /* its options are its own */
                else
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

        rc = c.cmd > CMD_NONE && c.cmd < CLI_N_COMMANDS && commands[c.cmd].run ? commands[c.cmd].run(&x)
                                                                               : CLI_EXIT_USAGE;
        hpw_free(x.h);
        return rc;
}
