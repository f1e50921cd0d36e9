/* api_stock: GET and PUT /v1/stock, the stock targets and how
 * full each one is.  Parsing only; pools_set_stock validates and applies.
 *
 * GET also says the daemon's change generation (pools_generation), and
 * with ?wait=change&after=G parks (as GET /v1/pools/{name}?wait=ready does,
 * on the HTTP layer's waits thread, no thread of its own) until the
 * generation passes G or the timeout: what a publisher such as
 * `hpwarm placement sync --watch` waits in instead of polling.  The
 * generation is taken before the view, so an answer of generation G shows
 * every change G counts (and maybe a later one, whose wait then answers at
 * once). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "json.h"
#include "pools.h"
#include "record.h"
#include "units.h"
#include "util.h"

static void send_stock(struct resp *resp, struct pools *pools)
{
        struct stock_view *v = NULL;
        size_t n = 0;
        uint64_t gen = pools_generation(pools);

        if (pools_get_stock(pools, &v, &n) < 0) {
                api_oom(resp);
                return;
        }
        struct json *o = json_new_object();
        json_add_u64(o, "generation", gen);
        struct json *arr = json_add_array(o, "targets");
        for (size_t i = 0; i < n; i++) {
                struct json *t = json_append_object(arr);
                /* The target as the journal writes it (one encoder), then
                 * how full it is. */
                record_add_stock_target(t, &v[i].target);
                json_add_u64(t, "ready", v[i].ready);
                json_add_u64(t, "warming", v[i].warming);
                json_add_u64(t, "recycling", v[i].recycling);
                json_add_u64(t, "deficit", v[i].deficit);
        }
        free(v);
        resp_json(resp, 200, json_print(o));
        json_free(o);
}

struct change_wait {
        struct app *app;
        uint64_t after;
};

/* A parked wait looks again (something changed, its time is up, or the
 * daemon is stopping): answer once the generation is no longer AFTER.  It
 * passed AFTER, or AFTER is from an earlier life of the daemon (the
 * generation starts at 0 again): either way the caller's view is old. */
static bool change_check(struct resp *resp, void *ctx, bool expired)
{
        struct change_wait *w = ctx;
        if (pools_generation(w->app->pools) == w->after && !expired && !atomic_load(&w->app->stopping))
                return false;
        send_stock(resp, w->app->pools);
        return true;
}

void api_stock_get(const struct req *req, struct resp *resp)
{
        const char *wait = req->query(req, "wait");
        const char *after = req->query(req, "after");
        const char *timeout = req->query(req, "timeout");
        uint64_t after_g = 0, timeout_s;

        if (wait && strcmp(wait, "change") != 0) {
                api_invalid(resp, "wait must be \"change\"");
                return;
        }
        if (!wait && (after || timeout)) {
                api_invalid(resp, after ? "after needs wait=change" : "timeout needs wait=change");
                return;
        }
        if (wait && (!after || !api_parse_whole(after, UINT64_MAX, &after_g))) {
                api_invalid(resp, "after must be a generation (a whole number) that GET /v1/stock answered");
                return;
        }
        if (!api_wait_timeout(timeout, &timeout_s, resp))
                return;
        struct app *app = req->app;
        if (!wait || timeout_s == 0 || pools_generation(app->pools) != after_g) {
                send_stock(resp, app->pools);
                return;
        }
        struct change_wait *w = calloc(1, sizeof(*w));
        if (!w) {
                api_oom(resp);
                return;
        }
        *w = (struct change_wait){ .app = app, .after = after_g };
        resp_park(resp, change_check, w, PARK_TOPIC_STOCK, now_mono_ns() + timeout_s * 1000000000ull);
}

/* The members a body and a target may have: anything else is refused, as
 * json_decode refuses it in a pool's body (a misspelt "cuont" must not be
 * read as "no count"). */
static const char *const body_keys[] = { "targets" };
static const char *const target_keys[] = { "node", "page_size", "size", "size_bytes", "count" };

/* One target object: node, page_size (default "2M"), exactly one of size and
 * size_bytes, count.  0 or -EINVAL with a 422 in RESP. */
static int parse_target(const struct json *o, size_t i, struct stock_target_record *ret, struct resp *resp)
{
        char detail[160];
        uint64_t node, count, size = 0, ps = 2 * 1024 * 1024;
        const char *s;
        struct problem p = {0};

        snprintf(detail, sizeof(detail), "targets[%zu]", i);
        if (json_check_keys(o, target_keys, ARRAY_SIZE(target_keys), detail, &p) < 0) {
                resp_problem(resp, &p);
                return -EINVAL;
        }
        if (!json_is_object(o) || json_get_u64(o, "node", &node) < 0 || node > INT32_MAX ||
            json_get_u64(o, "count", &count) < 0) {
                snprintf(detail, sizeof(detail),
                         "targets[%zu] must be an object with \"node\" and \"count\" (whole numbers)", i);
                goto bad;
        }
        if (json_get(o, "page_size") && (json_get_str(o, "page_size", &s) < 0 || parse_page_size(s, &ps) < 0)) {
                snprintf(detail, sizeof(detail), "targets[%zu].page_size must be a size such as \"2M\" or \"1G\"", i);
                goto bad;
        }
        bool has_size = json_get(o, "size") != NULL, has_bytes = json_get(o, "size_bytes") != NULL;
        if (has_size == has_bytes ||
            (has_size && (json_get_str(o, "size", &s) < 0 || parse_size(s, &size) < 0)) ||
            (has_bytes && json_get_u64(o, "size_bytes", &size) < 0)) {
                snprintf(detail, sizeof(detail),
                         "targets[%zu] needs exactly one of \"size\" (e.g. \"4G\") and \"size_bytes\"", i);
                goto bad;
        }
        *ret = (struct stock_target_record){ .node = (int)node, .page_size = ps, .size_bytes = size,
                                              .count = count };
        return 0;
bad:
        api_invalid(resp, detail);
        return -EINVAL;
}

void api_stock_put(const struct req *req, struct resp *resp)
{
        struct stock_target_record *t = NULL;
        struct json *doc = NULL;
        struct problem p = {0};
        const struct json *arr;
        size_t n;

        if (json_parse(req->body, req->body_len, &doc) < 0) {
                problem_raise(&p, PROBLEM_MALFORMED_JSON, "the body is not valid JSON");
                resp_problem(resp, &p);
                return;
        }
        arr = json_get(doc, "targets");
        if (!json_is_object(doc) || !json_is_array(arr)) {
                api_invalid(resp, "the body must be {\"targets\": [...]}");
                goto out;
        }
        if (json_check_keys(doc, body_keys, ARRAY_SIZE(body_keys), NULL, &p) < 0) {
                resp_problem(resp, &p);
                goto out;
        }
        n = json_array_len(arr);
        if (n > POOLS_STOCK_TARGETS_MAX) {
                api_invalid(resp, "too many stock targets");
                goto out;
        }
        t = calloc(n ? n : 1, sizeof(*t));
        if (!t) {
                api_oom(resp);
                goto out;
        }
        for (size_t i = 0; i < n; i++)
                if (parse_target(json_array_at(arr, i), i, &t[i], resp) < 0)
                        goto out;
        if (pools_set_stock(req->app->pools, t, n, &p) < 0) {
                resp_problem(resp, &p);
                goto out;
        }
        send_stock(resp, req->app->pools);
out:
        free(t);
        json_free(doc);
}
