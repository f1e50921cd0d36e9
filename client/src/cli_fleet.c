/* cli_fleet: hpwarm fleet nodes|pools|place, one request to many hosts.
 *
 * Fleet commands use the library's concurrent fleet call, so a dead host
 * costs one timeout, not one per host.  --json documents embed each host's
 * answer re-printed from its parsed tree, never raw, so a host cannot add
 * anything outside its own member.  place gathers candidates from every
 * host's nodes, asks the hosts that answered for their stock in one more
 * concurrent round, and lets the pure cli_place() (cli_core.c) choose: a
 * ready stock file of the size first, then free pages.  place --prometheus
 * asks Prometheus instead of a hosts file (the library's hpw_prom_place)
 * and only the hosts it offers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_cmd.h"
#include "internal.h"

/* S as a JSON string, quotes included: everything we put into JSON that did
 * not come out of cJSON (URLs from the hosts file, handoff arguments) goes
 * through here. */
static void print_json_string(const char *s, FILE *f)
{
        fputc('"', f);
        for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
                if (*c == '"' || *c == '\\')
                        fprintf(f, "\\%c", *c);
                else if (*c < 0x20 || *c == 0x7f)
                        fprintf(f, "\\u%04x", *c);
                else
                        fputc(*c, f);
        }
        fputc('"', f);
}

static void print_unreachable(const struct hpw_fleet *f)
{
        size_t bad = 0;

        for (size_t i = 0; i < f->n; i++)
                bad += f->hosts[i]->err != HPW_OK;
        if (!bad)
                return;
        fprintf(stderr, "unreachable or failing hosts (%zu of %zu):\n", bad, f->n);
        for (size_t i = 0; i < f->n; i++) {
                const struct hpw_fleet_host *fh = f->hosts[i];

                if (fh->err == HPW_OK)
                        continue;
                if (fh->err == HPW_E_UNREACHABLE || fh->err == HPW_E_TLS) {
                        /* Name the likely cause, as for one host. */
                        char hint[768];
                        int e = strncmp(fh->url, "unix://", 7) == 0 ? cli_probe_unix(fh->url + 7) : 0;

                        cli_unreachable_hint(fh->url, e, fh->message, hint, sizeof(hint));
                        fprintf(stderr, "  %s: %s: %s\n", fh->url, hpw_strerror(fh->err), hint);
                } else {
                        fprintf(stderr, "  %s: %s (%s)\n", fh->url, hpw_strerror(fh->err),
                                fh->message[0] ? fh->message : "-");
                }
        }
}

/* One document for the whole fleet.  Each host's answer goes in as cJSON
 * printed it again from the parsed tree, never as the raw body, so a host
 * cannot add or alter anything outside its own "nodes"/"pools" member. */
static void fleet_json(const struct hpw_fleet *f, enum cli_fleet what)
{
        printf("{\"hosts\":[");
        for (size_t i = 0; i < f->n; i++) {
                const struct hpw_fleet_host *fh = f->hosts[i];
                const char *raw = fh->nodes ? fh->nodes->json : fh->pools ? fh->pools->json : NULL;
                char *body = raw ? hpw_json_reprint(raw, strlen(raw)) : NULL;
                bool ok = fh->err == HPW_OK && body;

                printf("%s{\"url\":", i ? "," : "");
                print_json_string(fh->url, stdout);
                printf(",\"ok\":%s", ok ? "true" : "false");
                if (ok)
                        printf(",\"%s\":%s", what == FLEET_POOLS ? "pools" : "nodes", body);
                else
                        printf(",\"error\":\"%s\"",
                               hpw_strerror(fh->err != HPW_OK ? fh->err : HPW_E_NOMEM));
                printf("}");
                free(body);
        }
        printf("]}\n");
}

/* Fill each candidate's stock_ready: ask the hosts that answered /v1/nodes
 * for /v1/stock (one more concurrent round, so dead hosts cost no second
 * timeout) and count the ready files of exactly the requested size on the
 * candidate's node and page size.  A host whose stock cannot be read (a
 * daemon without stock answers 404) keeps 0: placed by free pages, which
 * --verbose says. */
static void fleet_stock(struct ctx *x, const struct hpw_fleet *f, struct place_cand *cand, size_t nc)
{
        const struct cli *c = x->cli;
        const char **urls = calloc(f->n ? f->n : 1, sizeof(*urls));
        size_t *idx = calloc(f->n ? f->n : 1, sizeof(*idx)), n = 0;
        struct hpw_fleet *sf = NULL;
        enum hpw_error err;

        if (!urls || !idx) {
                if (c->verbose)
                        fprintf(stderr, "hpwarm: fleet place: out of memory: placing by free pages only\n");
                goto out;
        }
        for (size_t i = 0; i < f->n; i++)
                if (f->hosts[i]->err == HPW_OK) {
                        idx[n] = i;
                        urls[n++] = f->hosts[i]->url;
                }
        if (n == 0)
                goto out;
        err = hpw_fleet_get(x->h, urls, n, HPW_FLEET_STOCK, &sf);
        if (err) {
                if (c->verbose)
                        fprintf(stderr, "hpwarm: fleet place: stock not asked (%s): placing by free pages only\n",
                                hpw_strerror(err));
                goto out;
        }
        for (size_t k = 0; k < n; k++) {
                const struct hpw_fleet_host *sh = sf->hosts[k];

                if (sh->err != HPW_OK || !sh->stock) {
                        const char *why = hpw_strerror(sh->err);
                        bool more = sh->message[0] && strcmp(sh->message, why) != 0;

                        if (c->verbose)
                                fprintf(stderr, "hpwarm: fleet place: %s: no stock information (%s%s%s%s): free "
                                        "pages only\n", sh->url, why, more ? ", " : "", more ? sh->message : "",
                                        sh->err == HPW_E_NOT_FOUND ? "; a daemon without stock?" : "");
                        continue;
                }
                for (size_t j = 0; j < nc; j++) {
                        if (cand[j].host != idx[k])
                                continue;
                        for (size_t t = 0; t < sh->stock->n; t++) {
                                const struct hpw_stock_target *g = sh->stock->targets[t];

                                /* Saturating: a host's numbers are its own word. */
                                if (g->node == cand[j].node && g->page_size_bytes == cand[j].page_size &&
                                    g->size_bytes == c->size &&
                                    __builtin_add_overflow(cand[j].stock_ready, g->ready, &cand[j].stock_ready))
                                        cand[j].stock_ready = UINT64_MAX;
                        }
                }
        }
out:
        hpw_fleet_free(sf);
        free(urls);
        free(idx);
}

/* fleet place --prometheus: the library finds, confirms and (with --warm)
 * warms; this prints what it chose and why (as place --hosts prints it), or
 * why nothing fits.  --json: one document, the pool (or, with --wait, the
 * pool as the wait left it) as its member "pool". */
static int fleet_place_prom(struct ctx *x)
{
        const struct cli *c = x->cli;
        struct hpw_prom_place_opts o = HPW_PROM_PLACE_OPTS_INIT;
        struct hpw_prom_placement *p = NULL;
        enum hpw_error err;
        char ps[32], sz[32];
        int rc = 0;

        o.prometheus_url = c->prometheus;
        o.host_label = c->host_label;
        o.url_template = c->url_template;
        o.size_bytes = c->size;
        o.page_size = c->page_size;
        o.max_age_s = c->max_age_s;
        o.warm_name = c->warm_name;
        err = hpw_prom_place(x->h, &o, &p);
        hpw_format_page_size(c->page_size, ps, sizeof(ps));
        cli_format_bytes(c->size, sz, sizeof(sz));
        if (err) {
                fprintf(stderr, "hpwarm: fleet place: %s: %s\n",
                        err == HPW_E_INSUFFICIENT ? "no host has room" : hpw_strerror(err), hpw_last_message(x->h));
                if (err == HPW_E_INSUFFICIENT)
                        fprintf(stderr, "hpwarm: fleet place: nothing fits %s in %s pages\n", sz, ps);
                return cli_exit_code(err);
        }
        if (c->json) {
                printf("{\"url\":");
                print_json_string(p->url, stdout);
                printf(",\"host\":");
                print_json_string(p->host, stdout);
                printf(",\"node\":%d,\"available\":%llu,\"free\":%llu,\"why\":\"%s\",\"stock_ready\":%llu,"
                       "\"offered\":%zu,\"asked\":%zu,\"refused\":%zu", p->node, (unsigned long long)p->available,
                       (unsigned long long)p->free, p->stock ? "stock" : "available",
                       (unsigned long long)p->stock_ready, p->offered, p->asked, p->refused);
                if (p->pool)
                        printf(",\"created\":%s", p->created ? "true" : "false");
        } else {
                if (p->stock)
                        printf("%s node %d (stock hit: %llu ready stock file%s of %s in %s pages on node %d)\n",
                               p->url, p->node, (unsigned long long)p->stock_ready, p->stock_ready == 1 ? "" : "s",
                               sz, ps, p->node);
                else
                        printf("%s node %d (available pages: %llu available %s pages, %llu free)\n", p->url,
                               p->node, (unsigned long long)p->available, ps, (unsigned long long)p->free);
                if (p->pool)
                        printf("%s: %s on %s node %d (%s%s%s)\n", p->pool->name, p->created ? "created" : "exists",
                               p->url, p->pool->node, p->pool->state_name, p->pool->from_stock[0] ? ", from stock: " : "",
                               p->pool->from_stock);
        }
        if (p->pool && c->wait) {
                struct hpw *h2 = NULL;
                struct ctx x2 = *x;

                fflush(stdout);
                err = hpw_new(p->url, &h2);
                if (!err && c->token_file)
                        err = hpw_set_token_file(h2, c->token_file);
                if (!err)
                        err = hpw_set_tls(h2, c->cacert, c->cert, c->key);
                if (!err)
                        err = hpw_set_timeouts(h2, c->connect_timeout_ms, cli_timeout_ms(c, false));
                if (err) {
                        fprintf(stderr, "hpwarm: fleet place: %s: %s\n", p->url, hpw_strerror(err));
                        rc = cli_exit_code(err);
                } else {
                        x2.h = h2;
                        x2.url = p->url;
                        x2.json_nested = c->json;
                        x2.json_done = false;
                        rc = cli_wait_at(&x2, p->pool->name, p->pool);
                        x->json_done = x2.json_done;
                }
                hpw_free(h2);
                if (c->json && !x2.json_done)
                        printf(",\"pool\":null");
        } else if (p->pool && c->json) {
                char *body = hpw_json_reprint(p->pool->json, strlen(p->pool->json));
                printf(",\"pool\":%s", body ? body : "null");
                free(body);
        }
        if (c->json)
                printf("}\n");
        hpw_prom_placement_free(p);
        return rc;
}

/* The free pages NODE reported for PAGE_SIZE (shown beside available). */
static uint64_t node_free(const struct hpw_node_list *l, int node, uint64_t page_size)
{
        for (size_t j = 0; l && j < l->n; j++)
                for (size_t k = 0; l->nodes[j]->id == node && k < l->nodes[j]->n_hugepages; k++)
                        if (l->nodes[j]->hugepages[k]->page_size_bytes == page_size)
                                return l->nodes[j]->hugepages[k]->free;
        return 0;
}

int cli_cmd_fleet(struct ctx *x)
{
        const struct cli *c = x->cli;
        char **urls = NULL;
        size_t n = 0, ok = 0;
        struct hpw_fleet *f = NULL;
        enum hpw_error err;
        int r, rc = 0;

        if (c->prometheus)
                return fleet_place_prom(x);
        r = cli_read_hosts(c->hosts, &urls, &n);
        if (r < 0) {
                fprintf(stderr, "hpwarm: fleet: cannot read %s: %s\n", c->hosts, strerror(-r));
                return CLI_EXIT_USAGE;
        }
        if (n == 0) {
                fprintf(stderr, "hpwarm: fleet: no hosts in %s\n", c->hosts);
                cli_hosts_free(urls, n);
                return CLI_EXIT_USAGE;
        }
        /* Hosts files take what --url takes (HOST:PORT means http://). */
        for (size_t i = 0; i < n; i++) {
                char u[4096], why[256];
                char *nu;

                if (cli_url_normalize(urls[i], u, sizeof(u), why, sizeof(why)) == 0 && strcmp(u, urls[i]) &&
                    (nu = strdup(u))) {
                        free(urls[i]);
                        urls[i] = nu;
                }
        }
        err = hpw_fleet_get(x->h, (const char *const *)urls, n, c->fleet == FLEET_POOLS ? HPW_FLEET_POOLS
                                                                                         : HPW_FLEET_NODES, &f);
        if (err) {
                cli_hosts_free(urls, n);
                return cli_fail(x, "fleet", err);
        }
        for (size_t i = 0; i < n; i++)
                ok += f->hosts[i]->err == HPW_OK;

        if (c->fleet == FLEET_NODES || c->fleet == FLEET_POOLS) {
                if (c->json) {
                        fleet_json(f, c->fleet);
                } else {
                        struct table *t = table_new(c->fleet == FLEET_NODES ? "HOST\tNODE\tPAGE\tTOTAL\tFREE\tWARM"
                                                                            : "HOST\t" POOLS_HEADER);
                        for (size_t i = 0; i < n; i++) {
                                const struct hpw_fleet_host *fh = f->hosts[i];
                                for (size_t j = 0; fh->nodes && j < fh->nodes->n; j++)
                                        cli_add_node_rows(t, fh->url, fh->nodes->nodes[j]);
                                for (size_t j = 0; fh->pools && j < fh->pools->n; j++)
                                        cli_add_pool_row(t, fh->url, fh->pools->pools[j]);
                        }
                        table_print(t, stdout);
                        table_free(t);
                }
                print_unreachable(f);
                /* The table covers the hosts that answered; the exit code
                 * says whether that is all of them (0), some (7), or none
                 * (with the reason they share). */
                rc = cli_fleet_exit(f);
                goto out;
        }

        /* place */
        struct place_cand *cand = NULL;
        size_t nc = 0, cap = 0, best;
        enum place_why why;
        for (size_t i = 0; i < n; i++) {
                const struct hpw_node_list *l = f->hosts[i]->nodes;
                for (size_t j = 0; l && j < l->n; j++)
                        for (size_t k = 0; k < l->nodes[j]->n_hugepages; k++) {
                                if (nc == cap) {
                                        size_t ncap = cap ? cap * 2 : 64;
                                        struct place_cand *nv = realloc(cand, ncap * sizeof(*nv));
                                        if (!nv) {
                                                free(cand);
                                                fprintf(stderr, "hpwarm: out of memory\n");
                                                rc = CLI_EXIT_FAILED;
                                                goto out;
                                        }
                                        cand = nv;
                                        cap = ncap;
                                }
                                cand[nc++] = (struct place_cand){
                                        .host = i,
                                        .node = l->nodes[j]->id,
                                        .page_size = l->nodes[j]->hugepages[k]->page_size_bytes,
                                        .available = l->nodes[j]->hugepages[k]->available,
                                };
                        }
        }
        print_unreachable(f);
        fleet_stock(x, f, cand, nc);
        if (cli_place(cand, nc, c->size, c->page_size, &best, &why) < 0) {
                char sz[32], ps[32];
                cli_format_bytes(c->size, sz, sizeof(sz));
                hpw_format_page_size(c->page_size, ps, sizeof(ps));
                fprintf(stderr, "hpwarm: fleet place: no host has %s available in %s pages\n", sz, ps);
                free(cand);
                rc = ok ? CLI_EXIT_CONFLICT : cli_fleet_exit(f);
                goto out;
        }
        {
                const char *url = f->hosts[cand[best].host]->url;
                int node = cand[best].node;
                uint64_t av = cand[best].available, ready = cand[best].stock_ready;
                uint64_t fr = node_free(f->hosts[cand[best].host]->nodes, node, c->page_size);
                char ps[32], sz[32];

                free(cand);
                hpw_format_page_size(c->page_size, ps, sizeof(ps));
                cli_format_bytes(c->size, sz, sizeof(sz));
                if (c->json) {
                        printf("{\"url\":");
                        print_json_string(url, stdout);
                        printf(",\"node\":%d,\"available\":%llu,\"free\":%llu,\"why\":\"%s\",\"stock_ready\":%llu",
                               node, (unsigned long long)av, (unsigned long long)fr,
                               why == PLACE_STOCK ? "stock" : "available", (unsigned long long)ready);
                        /* With --warm the warm's pool closes this object: one
                         * JSON document per invocation. */
                        if (!c->warm_name)
                                printf("}\n");
                } else if (why == PLACE_STOCK) {
                        printf("%s node %d (stock hit: %llu ready stock file%s of %s in %s pages on node %d)\n", url,
                               node, (unsigned long long)ready, ready == 1 ? "" : "s", sz, ps, node);
                } else {
                        printf("%s node %d (available pages: %llu available %s pages, %llu free)\n", url, node,
                               (unsigned long long)av, ps, (unsigned long long)fr);
                }
                /* A choice among the hosts that answered: 7 when some did
                 * not (a better place may be among them); with --warm, the
                 * warm's own outcome decides. */
                rc = cli_fleet_exit(f);
                if (c->warm_name) {
                        struct hpw *h2 = NULL;
                        struct ctx x2 = *x;

                        x2.start_ms = cli_now_ms();
                        fflush(stdout);
                        err = hpw_new(url, &h2);
                        if (!err && c->token_file)
                                err = hpw_set_token_file(h2, c->token_file);
                        if (!err)
                                err = hpw_set_tls(h2, c->cacert, c->cert, c->key);
                        if (!err)
                                err = hpw_set_timeouts(h2, c->connect_timeout_ms,
                                                       cli_timeout_ms(c, false));
                        if (err) {
                                fprintf(stderr, "hpwarm: fleet place: %s: %s\n", url, hpw_strerror(err));
                                hpw_free(h2);
                                if (c->json)
                                        printf(",\"pool\":null}\n");
                                rc = cli_exit_code(err);
                                goto out;
                        }
                        x2.h = h2;
                        x2.url = url;
                        x2.json_nested = c->json;
                        x2.json_done = false;
                        rc = cli_warm_at(&x2, c->warm_name, node, c->size, c->page_size);
                        hpw_free(h2);
                        if (c->json)
                                printf("%s}\n", x2.json_done ? "" : ",\"pool\":null");
                }
        }
out:
        hpw_fleet_free(f);
        cli_hosts_free(urls, n);
        return rc;
}

