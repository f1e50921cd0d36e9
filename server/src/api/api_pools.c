/* api_pools: the warm-pool endpoints.  Creation, deletion and long-polls
 * block (a reserve write, a cancel waiting for workers, a wait for "ready"),
 * so they run as deferred work; reads answer on the HTTP thread from the
 * registry's snapshot. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "api_handoff.h"
#include "api_util.h"
#include "app.h"
#include "json.h"
#include "pools.h"
#include "record.h"
#include "units.h"
#include "size.h"

/* The kernel's largest pid_max (PID_MAX_LIMIT on 64-bit). */
#define PID_MAX 4194304

static void add_time(struct json *o, const char *key, int64_t unix_s)
{
        if (unix_s <= 0) {
                json_add_null(o, key);
                return;
        }
        char buf[32];
        struct tm tm;
        time_t t = (time_t)unix_s;
        gmtime_r(&t, &tm);
        strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_add_str(o, key, buf);
}

static struct json *encode_pool(const struct pool_view *v)
{
        const struct pool_view *p = v;
        struct json *o = json_new_object();
        record_add_pool_identity(o, p->name, p->node, p->page_size, p->size_bytes, p->state);
        json_add_u64(o, "bytes_done", v->bytes_done);
        json_add_double(o, "rate_bytes_per_second", v->rate_bytes_per_second);
        json_add_u64(o, "threads", v->threads);
        add_time(o, "started_at", p->started_at);
        add_time(o, "finished_at", p->finished_at);
        json_add_double(o, "elapsed_seconds", v->elapsed_seconds);
        if (p->error_slug[0]) {
                /* Stored by slug; status and title come from the catalog. */
                struct problem e = {0};
                problem_raise_slug(&e, p->error_slug, "%s", p->error_detail);
                json_add_value(o, "error", problem_to_value(&e));
        } else {
                json_add_null(o, "error");
        }
        json_add_str(o, "path", v->path);
        struct json *pl = json_add_object(o, "placement");
        json_add_bool(pl, "verified", v->placement_verified);
        json_add_u64(pl, "pages_off_node", v->pages_off_node);
        json_add_bool(o, "claimed", p->claimed);
        json_add_str(o, "from_stock", pool_from_stock_name(v->from_stock));
        if (v->label[0])
                json_add_str(o, "label", v->label);
        else
                json_add_null(o, "label");
        if (v->file_owned) {
                json_add_u64(o, "file_uid", v->file_uid);
                json_add_u64(o, "file_gid", v->file_gid);
        } else {
                json_add_null(o, "file_uid");
                json_add_null(o, "file_gid");
        }
        json_add_u64(o, "ttl_seconds", p->ttl_seconds);
        add_time(o, "expires_at", v->expires_at);
        if (v->owner_pid > 0)
                json_add_u64(o, "owner_pid", (uint64_t)v->owner_pid);
        else
                json_add_null(o, "owner_pid");
        add_time(o, "unmapped_since", v->unmapped_since);

        /* Ready-to-paste VMM arguments (api_handoff.c). */
        api_add_pool_handoff(o, v);
        return o;
}

static void send_pool(struct resp *resp, int status, const struct pool_view *v)
{
        struct json *o = encode_pool(v);
        resp_json(resp, status, json_print(o));
        json_free(o);
}

static bool check_name(const char *name, struct resp *resp)
{
        if (pool_name_valid(name))
                return true;
        api_invalid(resp, POOL_NAME_RULE);
        return false;
}

/* GET /v1/pools?limit=N&after=NAME&state=S&node=N&page_size=P: pages in
 * name order and filters.  Without limit, every pool that passes the
 * filters, as before paging existed. */
#define LIST_LIMIT_MAX 1000
/* From this many pools a list gives its freed memory back (see below). */
#define LIST_TRIM_POOLS 128

struct list_query {
        size_t limit;              /* 0 = all */
        const char *after;         /* NULL = from the first name */
        bool has_state, has_node;
        enum pool_state state;
        int node;
        uint64_t page_size;        /* 0 = any */
};

/* Strict decimal in [MIN, MAX]. */
static bool query_uint(const char *s, unsigned long long min, unsigned long long max, unsigned long long *ret)
{
        char *end;
        unsigned long long v;

        if (!s[0] || s[0] < '0' || s[0] > '9' || strlen(s) > 20)
                return false;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (*end || errno || v < min || v > max)
                return false;
        *ret = v;
        return true;
}

/* A filter the core's rule refused (ERR): 422 naming the parameter first,
 * then the rule's words.  Returns false, for parse_list_query to return. */
static bool bad_filter(struct resp *resp, const char *param, const struct problem *err)
{
        char detail[sizeof(err->detail) + 32];

        snprintf(detail, sizeof(detail), "%s filter: %s", param, err->detail);
        api_invalid(resp, detail);
        return false;
}

/* Each bad parameter is a 422 naming it; nothing is listed. */
static bool parse_list_query(const struct req *req, struct list_query *q, struct resp *resp)
{
        const char *limit = req->query(req, "limit"), *after = req->query(req, "after");
        const char *state = req->query(req, "state"), *node = req->query(req, "node");
        const char *page_size = req->query(req, "page_size");
        struct problem p = {0};
        unsigned long long v;

        *q = (struct list_query){0};
        if (limit) {
                if (!query_uint(limit, 1, LIST_LIMIT_MAX, &v)) {
                        api_invalid(resp, "limit must be a whole number from 1 to 1000");
                        return false;
                }
                q->limit = (size_t)v;
        }
        if (after) {
                if (!pool_name_valid(after)) {
                        api_invalid(resp, "after must be a pool name (the \"next\" of the page before)");
                        return false;
                }
                q->after = after;
        }
        if (state) {
                if (pool_state_parse(state, &q->state) < 0 || pool_state_is_stock(q->state)) {
                        api_invalid(resp, "state must be one of warming, ready, failed, cancelled");
                        return false;
                }
                q->has_state = true;
        }
        /* A filter the host cannot match is a bad parameter (422), not a
         * missing resource: the syntax here, then the core's rule in its
         * own words. */
        if (node) {
                if (!query_uint(node, 0, INT_MAX, &v)) {
                        api_invalid(resp, "node must be the id of a NUMA node of this host");
                        return false;
                }
                q->node = (int)v;
                q->has_node = true;
                if (pools_check_node(req->app->pools, q->node, &p) < 0)
                        return bad_filter(resp, "node", &p);
        }
        if (page_size) {
                if (parse_page_size(page_size, &q->page_size) < 0) {
                        api_invalid(resp, "page_size must be a hugepage size such as \"2M\" or \"1G\"");
                        return false;
                }
                if (pools_check_page_size(req->app->pools, q->page_size, &p) < 0)
                        return bad_filter(resp, "page_size", &p);
        }
        return true;
}

/* A page of LIMIT (SIZE_MAX: all): the core sorts the rows by name as
 * pointers and makes views for the page alone, so a page of 100 at 3000
 * pools does not build 3000 views, and the whole list sorts no views.
 * Returns the pools shown. */
static size_t list_page(const struct req *req, const struct list_query *q, size_t limit, struct resp *resp)
{
        struct pools_page_filter f = { .after = q->after, .has_state = q->has_state, .state = q->state,
                                       .has_node = q->has_node, .node = q->node, .page_size = q->page_size };
        struct pool_view *v = NULL;
        size_t n = 0;
        bool more = false;

        if (pools_list_page(req->app->pools, &f, limit, &v, &n, &more) < 0) {
                api_oom(resp);
                return 0;
        }
        struct json *o = json_new_object();
        struct json *arr = json_add_array(o, "pools");
        for (size_t i = 0; i < n; i++)
                json_append_value(arr, encode_pool(&v[i]));
        if (more && n)
                json_add_str(o, "next", v[n - 1].name);
        free(v);
        resp_json(resp, 200, json_print(o));
        json_free(o);
        return n;
}

void api_pools_list(const struct req *req, struct resp *resp)
{
        struct list_query q;

        if (!parse_list_query(req, &q, resp))
                return;
        /* Unpaged: one page as long as every pool that passes the filters. */
        size_t n = list_page(req, &q, q.limit ? q.limit : SIZE_MAX, resp);
        /* A long list frees a few MiB of small blocks (the views' JSON) that
         * glibc would keep in the heap between live ones: give them back, so
         * a host of many pools is not charged its largest list for good
         * (1000 pools: 6 MiB of RSS).  Small lists are not worth the walk. */
        if (n >= LIST_TRIM_POOLS)
                malloc_trim(0);
}

struct pool_work {
        struct app *app;
        char name[ROUTE_PARAM_MAX];
        struct pool_req rq;
        pid_t pid;                 /* claim: the owner process, 0 = none */
        bool recycle;              /* delete: recycle into the stock if its target is short */
};

/* Work about the pool named in the path ({name}, already checked); NULL
 * with a 500 in RESP when out of memory. */
static struct pool_work *new_work(const struct req *req, struct resp *resp)
{
        struct pool_work *w = calloc(1, sizeof(*w));
        if (!w) {
                api_oom(resp);
                return NULL;
        }
        w->app = req->app;
        snprintf(w->name, sizeof(w->name), "%s", req->params[0]);
        return w;
}

/* A parked long-poll looks again (the pool changed, its time is up, or the
 * daemon is stopping): answer once the pool has left "warming" or is gone. */
static bool wait_check(struct resp *resp, void *ctx, bool expired)
{
        struct pool_work *w = ctx;
        struct pool_view v;
        struct problem p = {0};
        if (pools_get(w->app->pools, w->name, &v, &p) < 0) {
                resp_problem(resp, &p);
                return true;
        }
        if (v.state == POOL_WARMING && !expired && !atomic_load(&w->app->stopping))
                return false;
        send_pool(resp, 200, &v);
        return true;
}

void api_pool_get(const struct req *req, struct resp *resp)
{
        const char *name = req->params[0];
        if (!check_name(name, resp))
                return;
        const char *wait = req->query(req, "wait");
        const char *timeout = req->query(req, "timeout");
        uint64_t timeout_s;
        if (wait && strcmp(wait, "ready") != 0) {
                api_invalid(resp, "wait must be \"ready\"");
                return;
        }
        if (!api_wait_timeout(timeout, &timeout_s, resp))
                return;
        struct pool_view v;
        struct problem p = {0};
        if (pools_get(req->app->pools, name, &v, &p) < 0) {
                resp_problem(resp, &p);
                return;
        }
        if (!wait || v.state != POOL_WARMING || timeout_s == 0) {
                send_pool(resp, 200, &v);
                return;
        }
        struct pool_work *w = new_work(req, resp);
        if (!w)
                return;
        resp_park(resp, wait_check, w, w->name, now_mono_ns() + timeout_s * 1000000000ull);
}

static void create_work(struct resp *resp, void *ctx)
{
        struct pool_work *w = ctx;
        struct pool_view v;
        struct problem p = {0};
        bool created;
        int r = pools_create(w->app->pools, &w->rq, &v, &created, &p);
        if (r < 0) {
                resp_problem(resp, &p);
                return;
        }
        if (created)
                snprintf(resp->location, sizeof(resp->location), "/v1/pools/%s", w->rq.name);
        send_pool(resp, created ? 201 : 200, &v);
}

void api_pool_put(const struct req *req, struct resp *resp)
{
        struct app *app = req->app;
        const char *name = req->params[0];
        if (atomic_load(&app->stopping)) {
                resp_refuse_stopping(resp);
                return;
        }
        if (!check_name(name, resp))
                return;

        uint64_t node = 0, size_bytes = 0, threads = 0, ttl = 0, file_uid = 0, file_gid = 0;
        char size[32] = "", page_size[32] = "2M", label[POOL_LABEL_MAX + 1] = "";
        bool reserve = false, has_node = false, has_size = false, has_size_bytes = false, has_threads = false,
             has_ttl = false, has_label = false, has_uid = false, has_gid = false;
        const struct jfield fields[] = {
                {"node", JF_U64, &node, 0, &has_node},
                {"size", JF_STRING, size, sizeof(size), &has_size},
                {"size_bytes", JF_U64, &size_bytes, 0, &has_size_bytes},
                {"page_size", JF_STRING, page_size, sizeof(page_size), NULL},
                {"threads", JF_U64, &threads, 0, &has_threads},
                {"ttl_seconds", JF_U64, &ttl, 0, &has_ttl},
                {"reserve", JF_BOOL, &reserve, 0, NULL},
                {"label", JF_STRING, label, sizeof(label), &has_label},
                {"file_uid", JF_U64, &file_uid, 0, &has_uid},
                {"file_gid", JF_U64, &file_gid, 0, &has_gid},
        };
        if (json_decode(req->body, req->body_len, fields, ARRAY_SIZE(fields), &resp->problem) < 0) {
                resp->status = resp->problem.status;
                return;
        }
        if (!has_node) {
                api_invalid(resp, "\"node\" is required");
                return;
        }
        if (has_size == has_size_bytes) {
                api_invalid(resp, "give exactly one of \"size\" (e.g. \"64G\") and \"size_bytes\"");
                return;
        }
        if (has_size && parse_size(size, &size_bytes) < 0) {
                char why[200], detail[260];

                /* The shared grammar says what was wrong and what to write. */
                hpw_size_explain(size, false, why, sizeof(why));
                snprintf(detail, sizeof(detail), "\"size\": %s", why);
                api_invalid(resp, detail);
                return;
        }
        /* The rule is the core's; it is applied here, in the body's
         * order, to the number as written (an explicit 0 is a mistake, not
         * the default that an absent one is). */
        struct problem rule = {0};
        if (has_threads && pools_check_threads(threads, &rule) < 0) {
                resp_problem(resp, &rule);
                return;
        }
        if (has_ttl && (ttl < 1 || ttl > POOLS_TTL_MAX)) {
                char detail[160];
                snprintf(detail, sizeof(detail), "\"ttl_seconds\" must be 1 to %" PRIu64 " (leave it out for no TTL)",
                         (uint64_t)POOLS_TTL_MAX);
                api_invalid(resp, detail);
                return;
        }
        if (has_label && pools_check_label(label, &rule) < 0) {
                resp_problem(resp, &rule);
                return;
        }
        /* (uid_t)-1 and (gid_t)-1 mean "unchanged" to chown: never an owner. */
        if (has_uid != has_gid || file_uid >= UINT32_MAX || file_gid >= UINT32_MAX) {
                api_invalid(resp, "give both \"file_uid\" and \"file_gid\" (below 4294967295: the user and group "
                                  "of the one VMM that may open the pool's file), or neither");
                return;
        }
        /* Syntax only: a node past an int is no node (the core's words for
         * it), a page size must parse.  The rules (the node and page size
         * this host has; a pool's size: a positive multiple of the page size,
         * at most a file's size, --max-pool-size) are pools_create's. */
        uint64_t ps;
        if (node > INT_MAX) {
                char node_s[24];
                struct problem p = {0};

                snprintf(node_s, sizeof(node_s), "%" PRIu64, node);
                pools_refuse_node(&p, node_s);
                resp_problem(resp, &p);
                return;
        }
        if (!api_page_size(page_size, &ps, resp))
                return;

        struct pool_work *w = new_work(req, resp);
        if (!w)
                return;
        snprintf(w->rq.name, sizeof(w->rq.name), "%.*s", POOL_NAME_MAX, name);
        w->rq.node = (int)node;
        w->rq.size_bytes = size_bytes;
        w->rq.page_size = ps;
        w->rq.threads = (unsigned)threads;
        w->rq.ttl_seconds = ttl;
        w->rq.reserve = reserve;
        snprintf(w->rq.label, sizeof(w->rq.label), "%s", label);
        w->rq.file_owned = has_uid;
        w->rq.file_uid = (uint32_t)file_uid;
        w->rq.file_gid = (uint32_t)file_gid;
        resp_defer(resp, create_work, w);
}

static void delete_work(struct resp *resp, void *ctx)
{
        struct pool_work *w = ctx;
        struct problem p = {0};
        if (pools_delete_recycle(w->app->pools, w->name, w->recycle, &p) < 0) {
                resp_problem(resp, &p);
                return;
        }
        resp->status = 204;
        resp->body = NULL;
}

void api_pool_delete(const struct req *req, struct resp *resp)
{
        const char *name = req->params[0];
        if (!check_name(name, resp))
                return;
        const char *recycle = req->query(req, "recycle");
        if (recycle && strcmp(recycle, "true") != 0 && strcmp(recycle, "false") != 0) {
                api_invalid(resp, "recycle must be \"true\" or \"false\"");
                return;
        }
        struct pool_work *w = new_work(req, resp);
        if (!w)
                return;
        w->recycle = !recycle || strcmp(recycle, "true") == 0;
        resp_defer(resp, delete_work, w);
}

/* Claiming saves the journal (an fsync) and may wait for a pool another
 * request is busy with: deferred, like DELETE. */
static void claim_work(struct resp *resp, void *ctx)
{
        struct pool_work *w = ctx;
        struct pool_view v;
        struct problem p = {0};

        if (pools_claim_pid(w->app->pools, w->name, w->pid, &v, &p) < 0) {
                resp_problem(resp, &p);
                return;
        }
        send_pool(resp, 200, &v);
}

/* The body is optional: none (or {}) claims as before; {"pid": N} binds the
 * pool to that process's life. */
void api_pool_claim(const struct req *req, struct resp *resp)
{
        const char *name = req->params[0];
        uint64_t pid = 0;
        bool has_pid = false;

        if (atomic_load(&req->app->stopping)) {
                resp_refuse_stopping(resp);
                return;
        }
        if (!check_name(name, resp))
                return;
        if (req->body_len > 0) {
                const struct jfield fields[] = {
                        {"pid", JF_U64, &pid, 0, &has_pid},
                };
                if (json_decode(req->body, req->body_len, fields, ARRAY_SIZE(fields), &resp->problem) < 0) {
                        resp->status = resp->problem.status;
                        return;
                }
                if (has_pid && (pid == 0 || pid > PID_MAX)) {
                        api_invalid(resp, "\"pid\" must be a process id from 1 to 4194304");
                        return;
                }
        }
        struct pool_work *w = new_work(req, resp);
        if (!w)
                return;
        w->pid = (pid_t)pid;
        resp_defer(resp, claim_work, w);
}
