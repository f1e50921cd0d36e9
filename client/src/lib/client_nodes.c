/* client_nodes: the public calls about a host rather than one pool.
 *
 * Health, the NUMA nodes and their hugepage counts, reserving pages and
 * elastic policies on a node, the stock targets (read, long-poll for a
 * change, replace), and the fleet view that asks many hosts at once.  Each
 * call checks its arguments, builds a path and body, runs hpw_request()
 * (client.c) and hands the answer to its json_answers.c decoder; PUTs here
 * state the whole value, so a retry after a lost answer is safe. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"
#include "precond.h"

enum hpw_error hpw_health(struct hpw *h, struct hpw_health **ret)
{
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        err = hpw_request(h, "GET", "/v1/health", NULL, true, hpw_call_deadline(h), 0);
        return err ? err : hpw_parsed(h, hpw_json_health(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_nodes(struct hpw *h, struct hpw_node_list **ret)
{
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        err = hpw_request(h, "GET", "/v1/nodes", NULL, true, hpw_call_deadline(h), 0);
        return err ? err : hpw_parsed(h, hpw_json_node_list(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_node(struct hpw *h, int node, struct hpw_node **ret)
{
        char path[64];
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, node >= 0, HPW_E_INVALID);
        snprintf(path, sizeof(path), "/v1/nodes/%d", node);
        err = hpw_request(h, "GET", path, NULL, true, hpw_call_deadline(h), 0);
        return err ? err : hpw_parsed(h, hpw_json_node(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_reserve(struct hpw *h, int node, uint64_t page_size, uint64_t count, bool allow_partial,
                           struct hpw_reserve_result **ret)
{
        char path[96], ps[32];
        char *body;
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, node >= 0, HPW_E_INVALID);
        hpw_assert_return_h(h, page_size > 0, HPW_E_INVALID);
        hpw_format_page_size(page_size, ps, sizeof(ps));
        snprintf(path, sizeof(path), "/v1/nodes/%d/hugepages/%s", node, ps);
        body = hpw_json_reserve_body(count, allow_partial);
        if (!body)
                return HPW_E_NOMEM;
        err = hpw_request(h, "PUT", path, body, true, hpw_call_deadline(h), 0);
        free(body);
        return err ? err : hpw_parsed(h, hpw_json_reserve(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_set_elastic(struct hpw *h, int node, uint64_t page_size, const struct hpw_elastic_policy *policy,
                               struct hpw_elastic **ret)
{
        char path[112], ps[32];
        char *body;
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, node >= 0, HPW_E_INVALID);
        hpw_assert_return_h(h, page_size > 0, HPW_E_INVALID);
        hpw_assert_return_h(h, policy, HPW_E_NULL_ARGUMENT);
        hpw_format_page_size(page_size, ps, sizeof(ps));
        snprintf(path, sizeof(path), "/v1/nodes/%d/hugepages/%s/policy", node, ps);
        body = hpw_json_elastic_body(policy);
        if (!body)
                return HPW_E_NOMEM;
        err = hpw_request(h, "PUT", path, body, true, hpw_call_deadline(h), 0);
        free(body);
        return err ? err : hpw_parsed(h, hpw_json_elastic(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_stock_get(struct hpw *h, struct hpw_stock **ret)
{
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        err = hpw_request(h, "GET", "/v1/stock", NULL, true, hpw_call_deadline(h), 0);
        return err ? err : hpw_parsed(h, hpw_json_stock(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_stock_wait_change(struct hpw *h, uint64_t after, unsigned timeout_s, struct hpw_stock **ret)
{
        char path[96];
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, timeout_s <= HPW_STOCK_WAIT_MAX_S, HPW_E_INVALID);
        snprintf(path, sizeof(path), "/v1/stock?wait=change&after=%llu&timeout=%u", (unsigned long long)after,
                 timeout_s);
        /* The wait is the caller's choice of length: its own bound, not
         * the handle's total. */
        uint64_t cap = (uint64_t)timeout_s * 1000 + HPW_LONGPOLL_SLACK_MS;
        err = hpw_request(h, "GET", path, NULL, true, hpw_now_ms() + cap, cap);
        return err ? err : hpw_parsed(h, hpw_json_stock(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_stock_set(struct hpw *h, const struct hpw_stock_target *const *targets, size_t n,
                             struct hpw_stock **ret)
{
        char *body;
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, targets || n == 0, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, n <= HPW_STOCK_MAX_TARGETS, HPW_E_INVALID);
        for (size_t i = 0; i < n; i++) {
                const struct hpw_stock_target *t = targets[i];

                hpw_assert_return_h(h, t, HPW_E_NULL_ARGUMENT);
                hpw_assert_return_h(h, t->size >= HPW_STOCK_TARGET_V1_SIZE, HPW_E_STRUCT_SIZE);
                hpw_assert_return_h(h, t->node >= 0, HPW_E_INVALID);
                hpw_assert_return_h(h, t->page_size_bytes > 0, HPW_E_INVALID);
                hpw_assert_return_h(h, t->size_bytes > 0, HPW_E_INVALID);
                hpw_assert_return_h(h, t->count > 0, HPW_E_INVALID);
        }
        body = hpw_json_stock_body(targets, n);
        if (!body)
                return HPW_E_NOMEM;
        /* A PUT of the whole target list: sending it twice leaves the same
         * targets, so a retry after a lost answer is safe. */
        err = hpw_request(h, "PUT", "/v1/stock", body, true, hpw_call_deadline(h), 0);
        free(body);
        return err ? err : hpw_parsed(h, hpw_json_stock(h->last.body, h->last.len, ret));
}

void hpw_fleet_free(struct hpw_fleet *x)
{
        if (!x)
                return;
        for (size_t i = 0; x->hosts && i < x->n; i++) {
                if (!x->hosts[i])
                        continue;
                free(x->hosts[i]->url);
                free(x->hosts[i]->message);
                hpw_node_list_free(x->hosts[i]->nodes);
                hpw_pool_list_free(x->hosts[i]->pools);
                hpw_stock_free(x->hosts[i]->stock);
                free(x->hosts[i]);
        }
        free(x->hosts);
        free(x);
}

enum hpw_error hpw_fleet_get(struct hpw *h, const char *const *urls, size_t n, enum hpw_fleet_what what,
                             struct hpw_fleet **ret)
{
        struct hpw_conn *conns = NULL;
        struct hpw_http_resp *resps = NULL;
        char **bases = NULL, **socks = NULL;
        struct hpw_fleet *f = NULL;
        enum hpw_error err = HPW_OK;

        static const char *const paths[] = {
                [HPW_FLEET_NODES] = "/v1/nodes", [HPW_FLEET_POOLS] = "/v1/pools", [HPW_FLEET_STOCK] = "/v1/stock",
        };

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, urls || n == 0, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, what == HPW_FLEET_NODES || what == HPW_FLEET_POOLS || what == HPW_FLEET_STOCK,
                            HPW_E_INVALID);
        f = calloc(1, sizeof(*f));
        conns = calloc(n ? n : 1, sizeof(*conns));
        resps = calloc(n ? n : 1, sizeof(*resps));
        bases = calloc(n ? n : 1, sizeof(*bases));
        socks = calloc(n ? n : 1, sizeof(*socks));
        if (!f || !conns || !resps || !bases || !socks ||
            (n && !(f->hosts = calloc(n, sizeof(*f->hosts))))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        f->n = n;
        for (size_t i = 0; i < n; i++) {
                hpw_conn_get(h, &conns[i]);
                if (!(f->hosts[i] = calloc(1, sizeof(*f->hosts[i]))) ||
                    !(f->hosts[i]->url = strdup(urls[i] ? urls[i] : ""))) {
                        err = HPW_E_NOMEM;
                        goto out;
                }
                f->hosts[i]->err = urls[i] ? hpw_url_split(urls[i], &bases[i], &socks[i]) : HPW_E_INVALID;
                if (f->hosts[i]->err == HPW_E_NOMEM) {
                        err = HPW_E_NOMEM;
                        goto out;
                }
                /* A bad URL keeps its slot (NULL base: not asked). */
                conns[i].base_url = bases[i];
                conns[i].socket_path = socks[i];
        }
        err = hpw_http_multi_get(conns, n, paths[what], h->total_ms, resps);
        if (err == HPW_OK && atomic_load(&h->cancel))
                err = hpw_cancelled(h, paths[what]);
        if (err != HPW_OK)
                goto out;
        for (size_t i = 0; i < n; i++) {
                struct hpw_fleet_host *fh = f->hosts[i];
                const struct hpw_http_resp *r = &resps[i];
                char msg[300] = "";

                if (fh->err != HPW_OK) {
                        snprintf(msg, sizeof(msg), "invalid URL");
                } else if (r->transport != HPW_OK) {
                        fh->err = r->transport;
                        snprintf(msg, sizeof(msg), "%s", r->message);
                } else if ((fh->err = hpw_status_error(r->status, NULL)) != HPW_OK) {
                        snprintf(msg, sizeof(msg), "HTTP %ld", r->status);
                } else if (!r->body) {
                        fh->err = HPW_E_PROTOCOL;
                        snprintf(msg, sizeof(msg), "%s", hpw_strerror(fh->err));
                } else {
                        fh->err = what == HPW_FLEET_NODES   ? hpw_json_node_list(r->body, r->len, &fh->nodes)
                                  : what == HPW_FLEET_POOLS ? hpw_json_pool_list(r->body, r->len, &fh->pools)
                                                            : hpw_json_stock(r->body, r->len, &fh->stock);
                        if (fh->err != HPW_OK)
                                snprintf(msg, sizeof(msg), "%s", hpw_strerror(fh->err));
                }
                if (!(fh->message = strdup(msg))) {
                        err = HPW_E_NOMEM;
                        goto out;
                }
        }
out:
        for (size_t i = 0; i < n; i++) {
                if (resps)
                        hpw_http_resp_clear(&resps[i]);
                if (bases)
                        free(bases[i]);
                if (socks)
                        free(socks[i]);
        }
        free(conns);
        free(resps);
        free(bases);
        free(socks);
        if (err != HPW_OK) {
                hpw_fleet_free(f);
                return err;
        }
        *ret = f;
        return HPW_OK;
}
