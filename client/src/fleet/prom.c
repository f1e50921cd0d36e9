/* prom: fleet placement through Prometheus (hpw_prom_place).
 *
 * A fleet that runs hpwarmd already scrapes every host's /metrics, so the
 * global view of capacity is in Prometheus; asking every host (hpwarm fleet
 * place --hosts) costs one request per host and does not scale to
 * thousands.  So: one PromQL instant query returns the few best host/node
 * candidates (topk bounds the answer whatever the fleet's size), and only
 * the best of those are asked directly, a handful at a time, because
 * Prometheus is seconds old and only the host can say what it has now or
 * grant a pool.  With a pool name the pool is warmed on the first confirmed
 * host, falling down the list when a host answers 409.
 *
 * The query, the URL template and the escaping are pure functions (table
 * tests in tests/client/test_prom.c); the answer is parsed in prom_json.c, the
 * hosts are asked through hpw_fleet_get and hpw_warm. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "precond.h"

#define PROM_DEFAULT_LABEL "instance"
#define PROM_DEFAULT_PAGE_SIZE (2ull << 20)
/* Four of Prometheus' default 15 s scrape intervals: a host whose newest
 * sample is older has missed several scrapes in a row. */
#define PROM_DEFAULT_MAX_AGE_S 60
/* Hosts asked directly per round: enough that one stale or full host does
 * not end the placement, few enough that a round is one short wait. */
#define PROM_DEFAULT_CONFIRM 3
/* Candidates of each kind (stock, free) the query returns: topk keeps the
 * answer a few KiB however large the fleet, and rounds of PROM_DEFAULT_CONFIRM
 * hosts get through it long before any caller's patience. */
#define PROM_CANDIDATES 32

bool hpw_prom_label_valid(const char *s)
{
        if (!s || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
                return false;
        if (s[0] == '_' && s[1] == '_')
                return false;   /* reserved: __name__, __address__ never reach a query result */
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '_'))
                        return false;
        return strlen(s) <= 128;
}

char *hpw_prom_query(const char *host_label, uint64_t size, uint64_t page_size, unsigned max_age_s,
                     unsigned limit)
{
        /* healthy: targets whose last scrape worked and is recent.  Samples
         * of a target come from its scrapes, so up's timestamp is theirs. */
        static const char fmt[] =
                "topk(%u, label_replace(hpwarmd_stock_bytes{state=\"ready\",page_size_bytes=\"%llu\","
                "size_bytes=\"%llu\"} > 0, \"hpw_kind\", \"stock\", \"\", \"\")"
                " and on (job, instance) (up == 1 and time() - timestamp(up) <= %u))"
                " or "
                "topk(%u, label_replace((hpwarmd_hugepages_bytes{state=\"available\",page_size_bytes=\"%llu\"}"
                " or ignoring (state) hpwarmd_hugepages_bytes{state=\"free\",page_size_bytes=\"%llu\"}) >= %llu,"
                " \"hpw_kind\", \"free\", \"\", \"\")"
                " and on (job, instance) (up == 1 and time() - timestamp(up) <= %u))";
        unsigned long long ps = page_size, sz = size;
        char *q = NULL;

        if (!hpw_prom_label_valid(host_label))
                return NULL;
        /* The host label is not in the query: every series of a target
         * carries the target's labels, and the answer is read for it. */
        if (asprintf(&q, fmt, limit, ps, sz, max_age_s, limit, ps, ps, sz, max_age_s) < 0)
                return NULL;
        return q;
}

int hpw_prom_url(const char *tmpl, const char *label, const char *value, char *buf, size_t len)
{
        char ph[140];
        const char *at;
        int n;

        if (!tmpl || !label || !value || !value[0])
                return -EINVAL;
        for (const char *p = value; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      strchr(".-_:[]", *p)))
                        return -EINVAL;   /* no '/', '@', '?': the value names a host, nothing more */
        snprintf(ph, sizeof(ph), "{%s}", label);
        at = strstr(tmpl, ph);
        if (!at)
                return -EINVAL;
        n = snprintf(buf, len, "%.*s%s%s", (int)(at - tmpl), tmpl, value, at + strlen(ph));
        if (n < 0 || (size_t)n >= len)
                return -ENAMETOOLONG;
        return 0;
}

char *hpw_prom_escape(const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        char *out = malloc(strlen(s) * 3 + 1), *o = out;

        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                    strchr("-._~", *p)) {
                        *o++ = (char)*p;
                } else {
                        *o++ = '%';
                        *o++ = hex[*p >> 4];
                        *o++ = hex[*p & 15];
                }
        }
        *o = '\0';
        return out;
}

void hpw_prom_placement_free(struct hpw_prom_placement *x)
{
        if (!x)
                return;
        free(x->url);
        free(x->host);
        hpw_pool_free(x->pool);
        free(x);
}

/* One host/node that can take the pool, by Prometheus' or the host's word. */
struct cand {
        const char *host;     /* label value (borrowed) */
        int node;
        uint64_t stock_ready; /* ready stock files of the size */
        uint64_t avail;       /* available pages (free where the daemon does not say) */
        uint64_t free;        /* free pages: the host's answer only, shown, not ranked */
};

/* The order of hpwarm fleet place (cli_place): candidates with a ready
 * stock file first, by most files, then all by most available pages; ties
 * by host, then node.  NEED: pages the pool takes; a candidate with neither a
 * stock file nor NEED pages sorts last and never places. */
static int cand_cmp(const struct cand *a, const struct cand *b, uint64_t need)
{
        bool sa = a->stock_ready > 0, sb = b->stock_ready > 0;
        bool fa = sa || a->avail >= need, fb = sb || b->avail >= need;
        int c;

        if (fa != fb)
                return fa ? -1 : 1;
        if (sa != sb)
                return sa ? -1 : 1;
        if (a->stock_ready != b->stock_ready)
                return a->stock_ready > b->stock_ready ? -1 : 1;
        if (a->avail != b->avail)
                return a->avail > b->avail ? -1 : 1;
        if ((c = strcmp(a->host, b->host)))
                return c;
        return (a->node > b->node) - (a->node < b->node);
}

static int cand_qsort(const void *a, const void *b, void *need)
{
        return cand_cmp(a, b, *(const uint64_t *)need);
}

static bool cand_fits(const struct cand *c, uint64_t need)
{
        return c->stock_ready > 0 || c->avail >= need;
}

/* Fold SAMPLES into one candidate per host and node. */
static struct cand *cands_from(const struct hpw_prom_sample *s, size_t n, uint64_t size, uint64_t page_size,
                               size_t *ret_n)
{
        struct cand *c = calloc(n ? n : 1, sizeof(*c));
        size_t nc = 0;

        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                bool stock = strcmp(s[i].kind, "stock") == 0;
                size_t j;

                if (s[i].page_size != page_size || (!stock && strcmp(s[i].kind, "free") != 0))
                        continue;
                for (j = 0; j < nc; j++)
                        if (c[j].node == s[i].node && strcmp(c[j].host, s[i].host) == 0)
                                break;
                if (j == nc)
                        c[nc++] = (struct cand){ .host = s[i].host, .node = s[i].node };
                if (stock)
                        c[j].stock_ready = s[i].value / size;
                else
                        c[j].avail = s[i].value / page_size;
        }
        *ret_n = nc;
        return c;
}

struct run {
        struct hpw *h;
        const struct hpw_prom_place_opts *o;
        const char *label, *tmpl;
        uint64_t size, page_size, need;
        struct hpw_prom_placement *res;
        size_t answered;      /* hosts that answered /v1/nodes */
        size_t fitting;       /* hosts that confirmed room */
};

/* The host's own best candidate from its /v1/nodes and /v1/stock answers. */
static bool host_best(const struct run *r, const char *host, const struct hpw_node_list *nodes,
                      const struct hpw_stock *stock, struct cand *ret)
{
        bool any = false;

        for (size_t i = 0; nodes && i < nodes->n; i++) {
                const struct hpw_node *nd = nodes->nodes[i];

                for (size_t k = 0; k < nd->n_hugepages; k++) {
                        const struct hpw_hugepages *hp = nd->hugepages[k];
                        struct cand c = { .host = host, .node = nd->id };

                        if (hp->page_size_bytes != r->page_size)
                                continue;
                        c.avail = hp->available;
                        c.free = hp->free;
                        for (size_t t = 0; stock && t < stock->n; t++) {
                                const struct hpw_stock_target *g = stock->targets[t];

                                if (g->node == nd->id && g->page_size_bytes == r->page_size &&
                                    g->size_bytes == r->size)
                                        c.stock_ready = g->ready;
                        }
                        if (!any || cand_cmp(&c, ret, r->need) < 0)
                                *ret = c;
                        any = true;
                }
        }
        return any && cand_fits(ret, r->need);
}

static enum hpw_error take(struct run *r, const char *url, const struct cand *c)
{
        struct hpw_prom_placement *p = r->res;

        if (!(p->url = strdup(url)) || !(p->host = strdup(c->host)))
                return HPW_E_NOMEM;
        p->node = c->node;
        p->page_size_bytes = r->page_size;
        p->stock = c->stock_ready > 0;
        p->stock_ready = c->stock_ready;
        p->available = c->avail;
        p->free = c->free;
        return HPW_OK;
}

/* Ask N hosts (URLS, their label values HOSTS) directly; place on the best
 * that confirms room.  HPW_E_INSUFFICIENT: none of them did (go on). */
static enum hpw_error confirm_round(struct run *r, const char *const *urls, const char *const *hosts, size_t n)
{
        struct hpw_fleet *fn = NULL, *fs = NULL;
        struct cand *best = calloc(n, sizeof(*best));
        size_t *order = calloc(n, sizeof(*order)), m = 0;
        bool *fits = calloc(n, sizeof(*fits));
        enum hpw_error err;

        if (!best || !order || !fits) {
                err = HPW_E_NOMEM;
                goto out;
        }
        r->res->asked += n;
        err = hpw_fleet_get(r->h, urls, n, HPW_FLEET_NODES, &fn);
        if (err != HPW_OK)
                goto out;
        /* Stock only of the hosts that answered: a dead host costs one
         * timeout, not two.  ORDER holds their indexes meanwhile. */
        {
                const char **up = calloc(n, sizeof(*up));
                size_t k = 0;

                if (!up) {
                        err = HPW_E_NOMEM;
                        goto out;
                }
                for (size_t i = 0; i < n; i++)
                        if (fn->hosts[i]->err == HPW_OK) {
                                order[k] = i;
                                up[k++] = urls[i];
                        }
                err = k ? hpw_fleet_get(r->h, up, k, HPW_FLEET_STOCK, &fs) : HPW_OK;
                free(up);
                if (err != HPW_OK)
                        goto out;
                r->answered += k;
                for (size_t j = 0; j < k; j++) {
                        size_t i = order[j];
                        /* A daemon without stock (404) places by free pages. */
                        if (host_best(r, hosts[i], fn->hosts[i]->nodes, fs->hosts[j]->stock, &best[i]))
                                fits[i] = true;
                }
        }
        for (size_t i = 0; i < n; i++) {
                if (!fits[i])
                        continue;
                r->fitting++;
                /* Insertion by the host's own numbers. */
                size_t j = m++;
                for (; j > 0 && cand_cmp(&best[i], &best[order[j - 1]], r->need) < 0; j--)
                        order[j] = order[j - 1];
                order[j] = i;
        }
        err = HPW_E_INSUFFICIENT;
        for (size_t k = 0; k < m; k++) {
                size_t i = order[k];
                struct hpw *wh = NULL;
                struct hpw_warm_request req = HPW_WARM_REQUEST_INIT;

                req.node = best[i].node;
                req.size_bytes = r->size;
                req.page_size = r->page_size;

                if (!r->o->warm_name) {
                        err = take(r, urls[i], &best[i]);
                        goto out;
                }
                err = hpw_clone_for(r->h, urls[i], &wh);
                if (err == HPW_OK)
                        err = hpw_warm(wh, r->o->warm_name, &req, &r->res->pool, &r->res->created);
                if (err == HPW_E_CONFLICT || err == HPW_E_INSUFFICIENT) {
                        r->res->refused++;
                        hpw_free(wh);
                        err = HPW_E_INSUFFICIENT;
                        continue;
                }
                if (err != HPW_OK)
                        hpw_set_failure(r->h, "%s: warm: %s", urls[i], wh ? hpw_last_message(wh) : hpw_strerror(err));
                hpw_free(wh);
                if (err == HPW_OK)
                        err = take(r, urls[i], &best[i]);
                goto out;
        }
out:
        hpw_fleet_free(fn);
        hpw_fleet_free(fs);
        free(best);
        free(order);
        free(fits);
        return err;
}

static enum hpw_error query(struct run *r, struct hpw_prom_sample **ret, size_t *ret_n)
{
        struct hpw_http *http = NULL;
        struct hpw_http_resp resp = { .retry_after_s = -1 };
        struct hpw_conn conn, hc;
        char *base = NULL, *sock = NULL, *q = NULL, *esc = NULL, *path = NULL, why[300];
        size_t skipped = 0, blen;
        enum hpw_error err;

        err = hpw_url_split(r->o->prometheus_url, &base, &sock);
        if (err == HPW_OK && sock)
                err = HPW_E_INVALID;   /* Prometheus is reached over HTTP(S) */
        if (err != HPW_OK) {
                hpw_set_failure(r->h, "Prometheus URL '%s': not http://HOST:PORT or https://HOST:PORT",
                                r->o->prometheus_url);
                goto out;
        }
        blen = strlen(base);
        while (blen > 0 && base[blen - 1] == '/')
                base[--blen] = '\0';
        q = hpw_prom_query(r->label, r->size, r->page_size, r->o->max_age_s ? r->o->max_age_s : PROM_DEFAULT_MAX_AGE_S,
                           PROM_CANDIDATES);
        esc = q ? hpw_prom_escape(q) : NULL;
        if (!esc || asprintf(&path, "/api/v1/query?query=%s", esc) < 0) {
                path = NULL;
                err = HPW_E_NOMEM;
                goto out;
        }
        hpw_conn_get(r->h, &hc);
        /* Not the hosts' token or client certificate: those are for hpwarmd. */
        conn = (struct hpw_conn){ .base_url = base, .connect_ms = hc.connect_ms, .cancel = hc.cancel };
        if ((err = hpw_http_new(&http)) != HPW_OK ||
            (err = hpw_http_perform(http, &conn, "GET", path, NULL, hpw_total_timeout_ms(r->h), &resp)) != HPW_OK)
                goto out;
        if (resp.transport != HPW_OK) {
                err = resp.transport;
                hpw_set_failure(r->h, "Prometheus %s: %s", base, resp.message);
                goto out;
        }
        if (!resp.body || (resp.status != 200 && resp.status != 400 && resp.status != 422)) {
                err = resp.status == 401 || resp.status == 403 ? hpw_status_error(resp.status, NULL)
                                                                : HPW_E_PROTOCOL;
                hpw_set_failure(r->h, "Prometheus %s: HTTP %ld to the query", base, resp.status);
                goto out;
        }
        err = hpw_json_prom_vector(resp.body, resp.len, r->label, ret, ret_n, &skipped, why, sizeof(why));
        if (err != HPW_OK)
                hpw_set_failure(r->h, "Prometheus %s: %s", base, why);
out:
        hpw_http_resp_clear(&resp);
        hpw_http_free(http);
        free(base);
        free(sock);
        free(q);
        free(esc);
        free(path);
        return err;
}

enum hpw_error hpw_prom_place(struct hpw *h, const struct hpw_prom_place_opts *o, struct hpw_prom_placement **ret)
{
        struct run r = { .h = h, .o = o };
        struct hpw_prom_sample *s = NULL;
        struct cand *c = NULL;
        const char **urls = NULL, **hosts = NULL;
        char **owned = NULL;
        size_t ns = 0, nc = 0, nh = 0, bad = 0;
        unsigned confirm;
        char dflt[160], probe[1024];
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, o, HPW_E_NULL_ARGUMENT);
        /* Every member so far is of the first version: a smaller size is a
         * caller that did not set it. */
        hpw_assert_return_h(h, o->size >= sizeof(*o), HPW_E_STRUCT_SIZE);
        hpw_assert_return_h(h, o->prometheus_url, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, o->size_bytes > 0, HPW_E_INVALID);
        r.label = o->host_label ? o->host_label : PROM_DEFAULT_LABEL;
        r.page_size = o->page_size ? o->page_size : PROM_DEFAULT_PAGE_SIZE;
        r.size = o->size_bytes;
        hpw_assert_return_h(h, hpw_prom_label_valid(r.label), HPW_E_INVALID);
        hpw_assert_return_h(h, r.size % r.page_size == 0, HPW_E_INVALID);
        hpw_assert_return_h(h, !o->warm_name || hpw_name_valid(o->warm_name), HPW_E_INVALID);
        snprintf(dflt, sizeof(dflt), "http://{%s}", r.label);
        r.tmpl = o->url_template ? o->url_template : dflt;
        /* The template must name the label. */
        hpw_assert_return_h(h, hpw_prom_url(r.tmpl, r.label, "h", probe, sizeof(probe)) >= 0, HPW_E_INVALID);
        r.need = r.size / r.page_size;
        confirm = o->confirm ? o->confirm : PROM_DEFAULT_CONFIRM;
        if (!(r.res = calloc(1, sizeof(*r.res))))
                return HPW_E_NOMEM;

        err = query(&r, &s, &ns);
        if (err != HPW_OK)
                goto out;
        if (!(c = cands_from(s, ns, r.size, r.page_size, &nc))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        r.res->offered = nc;
        qsort_r(c, nc, sizeof(*c), cand_qsort, &r.need);

        /* Each host once, in the order of its best candidate. */
        urls = calloc(nc ? nc : 1, sizeof(*urls));
        hosts = calloc(nc ? nc : 1, sizeof(*hosts));
        owned = calloc(nc ? nc : 1, sizeof(*owned));
        if (!urls || !hosts || !owned) {
                err = HPW_E_NOMEM;
                goto out;
        }
        for (size_t i = 0; i < nc; i++) {
                char u[1024];
                bool seen = false;

                for (size_t j = 0; j < nh && !seen; j++)
                        seen = strcmp(hosts[j], c[i].host) == 0;
                if (seen)
                        continue;
                if (hpw_prom_url(r.tmpl, r.label, c[i].host, u, sizeof(u)) < 0) {
                        bad++;   /* a label value that is not a host name */
                        continue;
                }
                if (!(owned[nh] = strdup(u))) {
                        err = HPW_E_NOMEM;
                        goto out;
                }
                urls[nh] = owned[nh];
                hosts[nh++] = c[i].host;
        }
        err = HPW_E_INSUFFICIENT;
        for (size_t i = 0; i < nh && err == HPW_E_INSUFFICIENT; i += confirm) {
                size_t k = nh - i < confirm ? nh - i : confirm;

                /* Each round is a call of its own, which forgets a cancel:
                 * look before it. */
                if (hpw_cancel_requested(h)) {
                        err = HPW_E_CANCELLED;
                        hpw_set_failure(h, "placement through Prometheus: cancelled");
                        goto out;
                }
                err = confirm_round(&r, urls + i, hosts + i, k);
        }
        if (err == HPW_E_INSUFFICIENT) {
                char ps[32];
                hpw_format_page_size(r.page_size, ps, sizeof(ps));
                if (nh == 0)
                        hpw_set_failure(h, "Prometheus knows no up-to-date host with a ready stock file of %llu "
                                        "bytes or that many free %s pages%s", (unsigned long long)r.size, ps,
                                        bad ? " (some label values were not host names)" : "");
                else if (r.answered == 0)
                        err = HPW_E_UNREACHABLE;
                if (nh && r.answered == 0)
                        hpw_set_failure(h, "none of the %zu hosts Prometheus offered answered", nh);
                else if (nh)
                        hpw_set_failure(h, "asked %zu of the hosts Prometheus offered: %zu had room%s%zu refused "
                                        "the warm", r.res->asked, r.fitting, ", ", r.res->refused);
        }
out:
        hpw_prom_samples_free(s, ns);
        free(c);
        for (size_t i = 0; owned && i < nh; i++)
                free(owned[i]);
        free(owned);
        free(urls);
        free(hosts);
        if (err != HPW_OK) {
                hpw_prom_placement_free(r.res);
                return err;
        }
        *ret = r.res;
        return HPW_OK;
}
