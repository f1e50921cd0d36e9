/* api_elastic: PUT, GET, DELETE /v1/nodes/{id}/hugepages/{size}/policy.
 *
 * A policy makes the node's pool of that page size elastic (pools.h,
 * elastic.h).  PUT and DELETE run as deferred work: they wait for
 * admission's lock, which a growth may hold for seconds, and PUT may grow
 * the pool to the policy's min.  GET answers from the registry. */
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

void api_elastic_encode(const struct elastic_view *v, struct json *o)
{
        record_add_elastic_policy(o, &v->policy);
        json_add_str(o, "runtime_growth", elastic_growth_name(v->runtime_growth));
        json_add_u64(o, "cma_total_bytes", v->cma_total_bytes);
        json_add_u64(o, "cma_free_bytes", v->cma_free_bytes);
        json_add_u64(o, "grown_pages", v->grown_total);
        json_add_u64(o, "returned_pages", v->returned_total);
        if (v->decision)
                json_add_str(o, "decision", v->decision);
        else
                json_add_null(o, "decision");
        if (v->last == ELASTIC_KEEP) {
                json_add_null(o, "last");
                return;
        }
        struct json *l = json_add_object(o, "last");
        json_add_str(l, "action", elastic_action_name(v->last));
        json_add_u64(l, "pages", v->last_pages);
        json_add_i64(l, "at", v->last_at);
        json_add_str(l, "why", v->last_why);
}

struct policy_work {
        struct app *app;
        struct elastic_policy_record pol;
        bool remove;
};

/* 200 with the policy V as its body. */
static void send_policy(struct resp *resp, const struct elastic_view *v)
{
        struct json *o = json_new_object();
        api_elastic_encode(v, o);
        resp_json(resp, 200, json_print(o));
        json_free(o);
}

static void policy_work(struct resp *resp, void *ctx)
{
        struct policy_work *w = ctx;
        struct problem p = {0};
        struct elastic_view v;
        int r;

        if (w->remove) {
                r = pools_delete_elastic(w->app->pools, w->pol.node, w->pol.page_size, &p);
                if (r < 0) {
                        resp_problem(resp, &p);
                        return;
                }
                resp->status = 204;
                resp->body = NULL;
                return;
        }
        r = pools_set_elastic(w->app->pools, &w->pol, &v, &p);
        if (r < 0) {
                resp_problem(resp, &p);
                return;
        }
        send_policy(resp, &v);
}

static void defer_policy(const struct req *req, struct resp *resp, const struct elastic_policy_record *pol,
                         bool remove)
{
        struct policy_work *w = calloc(1, sizeof(*w));
        if (!w) {
                api_oom(resp);
                return;
        }
        w->app = req->app;
        w->pol = *pol;
        w->remove = remove;
        resp_defer(resp, policy_work, w);
}

void api_policy_put(const struct req *req, struct resp *resp)
{
        struct elastic_policy_record pol = {0};
        bool has_min = false, has_max = false, has_head = false, has_idle = false;

        if (atomic_load(&req->app->stopping)) {
                resp_refuse_stopping(resp);
                return;
        }
        if (!api_path_target(req, resp, &pol.node, &pol.page_size))
                return;
        const struct jfield fields[] = {
                {"min", JF_U64, &pol.min, 0, &has_min},
                {"max", JF_U64, &pol.max, 0, &has_max},
                {"headroom", JF_U64, &pol.headroom, 0, &has_head},
                {"idle_seconds", JF_U64, &pol.idle_seconds, 0, &has_idle},
                {"allow_best_effort", JF_BOOL, &pol.allow_best_effort, 0, NULL},
        };
        if (json_decode(req->body, req->body_len, fields, ARRAY_SIZE(fields), &resp->problem) < 0) {
                resp->status = resp->problem.status;
                return;
        }
        if (!has_min || !has_max || !has_head || !has_idle) {
                api_invalid(resp, "\"min\", \"max\", \"headroom\" and \"idle_seconds\" are required (pages, seconds)");
                return;
        }
        defer_policy(req, resp, &pol, false);
}

void api_policy_get(const struct req *req, struct resp *resp)
{
        struct elastic_policy_record pol = {0};
        struct elastic_view v;

        if (!api_path_target(req, resp, &pol.node, &pol.page_size))
                return;
        if (pools_get_elastic(req->app->pools, pol.node, pol.page_size, &v) < 0) {
                struct problem p = {0};
                problem_raise(&p, PROBLEM_POLICY_NOT_FOUND, "node %d has no elastic policy for %" PRIu64
                              "-byte pages: its pool is static", pol.node, pol.page_size);
                resp_problem(resp, &p);
                return;
        }
        send_policy(resp, &v);
}

void api_policy_delete(const struct req *req, struct resp *resp)
{
        struct elastic_policy_record pol = {0};

        if (atomic_load(&req->app->stopping)) {
                resp_refuse_stopping(resp);
                return;
        }
        if (!api_path_target(req, resp, &pol.node, &pol.page_size))
                return;
        defer_policy(req, resp, &pol, true);
}
