/* api_nodes: GET /v1/health, GET /v1/nodes[/{id}], PUT /v1/nodes/{id}/hugepages/{size}.
 *
 * Counters are read from sysfs at request time: the kernel's numbers are the
 * truth, and reading a few small files is cheap.  A reservation writes
 * nr_hugepages, which can compact memory for seconds with 1 GiB pages, so it
 * runs as deferred work, off the HTTP thread. */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "json.h"
#include "pools.h"
#include "reserve.h"
#include "topo.h"
#include "units.h"

void api_health(const struct req *req, struct resp *resp)
{
        struct json *o = json_new_object();
        json_add_str(o, "status", atomic_load(&req->app->stopping) ? "stopping" : "ok");
        json_add_str(o, "version", HPW_VERSION);
        resp_json(resp, 200, json_print(o));
        json_free(o);
}

/* Encode one node; -errno if its counters cannot be read. */
static int encode_node(struct app *app, const struct topo_node *n, struct json *o)
{
        uint64_t mem_total, mem_free;
        int r = topo_read_meminfo(app->fs, n->id, &mem_total, &mem_free);
        if (r < 0)
                return r;
        json_add_u64(o, "id", (uint64_t)n->id);
        json_add_str(o, "cpus", n->cpulist);
        json_add_u64(o, "cpu_count", n->cpu_count);
        /* --fixed-hugepages: the counts below are the host's, never changed
         * by the daemon (a scheduler such as Nova read them once). */
        json_add_bool(o, "hugepages_fixed", app->hugepages_fixed);
        struct json *mem = json_add_object(o, "memory");
        json_add_u64(mem, "total_bytes", mem_total);
        json_add_u64(mem, "free_bytes", mem_free);
        struct json *hps = json_add_array(o, "hugepages");
        for (size_t i = 0; i < app->topo->n_page_sizes; i++) {
                uint64_t ps = app->topo->page_sizes[i];
                struct hp_counts c;
                /* A node may lack a size another node has (memory-only nodes
                 * on some kernels): report only what is present. */
                if (topo_read_hugepages(app->fs, n->id, ps, &c) < 0)
                        continue;
                uint64_t warm = 0, warming = 0, available = c.free;
                struct pools_avail a;
                pools_node_usage(app->pools, n->id, ps, &warm, &warming);
                if (pools_node_available(app->pools, n->id, ps, &a) == 0)
                        available = a.available;
                struct json *h = json_append_object(hps);
                json_add_u64(h, "page_size_bytes", ps);
                json_add_u64(h, "total", c.total);
                json_add_u64(h, "free", c.free);
                json_add_u64(h, "available", available);
                json_add_u64(h, "surplus", c.surplus);
                json_add_u64(h, "warm", warm);
                json_add_u64(h, "warming", warming);
                /* Elastic pools: the policy's bounds, or null (static). */
                struct elastic_view ev;
                if (app->pools && pools_get_elastic(app->pools, n->id, ps, &ev) == 0) {
                        json_add_str(h, "runtime_growth", elastic_growth_name(ev.runtime_growth));
                        api_elastic_encode(&ev, json_add_object(h, "elastic"));
                } else {
                        json_add_str(h, "runtime_growth", elastic_growth_name(app->pools ?
                                     pools_runtime_growth(app->pools, n->id, ps) :
                                     elastic_runtime_growth(ps, false, 0)));
                        json_add_null(h, "elastic");
                }
        }
        return 0;
}

static void node_read_failed(struct resp *resp, int id, int r)
{
        struct problem p = {0};
        problem_raise(&p, PROBLEM_SYSFS_ERROR, "node %d: %s", id, strerror(-r));
        resp_problem(resp, &p);
}

void api_nodes_list(const struct req *req, struct resp *resp)
{
        struct app *app = req->app;
        struct json *o = json_new_object();
        struct json *nodes = json_add_array(o, "nodes");
        for (size_t i = 0; i < app->topo->n_nodes; i++) {
                const struct topo_node *n = &app->topo->nodes[i];
                int r = encode_node(app, n, json_append_object(nodes));
                if (r < 0) {
                        json_free(o);
                        node_read_failed(resp, n->id, r);
                        return;
                }
        }
        struct json *glob = json_add_array(o, "hugepages");
        for (size_t i = 0; i < app->topo->n_page_sizes; i++) {
                uint64_t resv = 0;
                struct json *g = json_append_object(glob);
                json_add_u64(g, "page_size_bytes", app->topo->page_sizes[i]);
                if (topo_read_resv(app->fs, app->topo->page_sizes[i], &resv) == 0)
                        json_add_u64(g, "reserved", resv);
                else
                        json_add_null(g, "reserved");
        }
        resp_json(resp, 200, json_print(o));
        json_free(o);
}

void api_node_get(const struct req *req, struct resp *resp)
{
        int id;
        if (!api_path_target(req, resp, &id, NULL))
                return;
        const struct topo_node *n = topo_node(req->app->topo, id);
        struct json *o = json_new_object();
        int r = encode_node(req->app, n, o);
        if (r < 0) {
                json_free(o);
                node_read_failed(resp, n->id, r);
                return;
        }
        resp_json(resp, 200, json_print(o));
        json_free(o);
}

struct reserve_work {
        struct app *app;
        struct reserve_req rq;
};

static void reserve_work(struct resp *resp, void *ctx)
{
        struct reserve_work *w = ctx;
        struct reserve_result res = {0};
        struct problem p = {0};
        int r = pools_reserve(w->app->pools, &w->rq, &res, &p);

        if (r < 0) {
                resp_problem(resp, &p);
                return;
        }
        struct json *o = json_new_object();
        json_add_u64(o, "node", (uint64_t)w->rq.node);
        json_add_u64(o, "page_size_bytes", w->rq.page_size);
        json_add_u64(o, "requested", w->rq.count);
        json_add_u64(o, "previous", res.previous);
        json_add_u64(o, "total", res.total);
        json_add_u64(o, "free", res.free);
        json_add_bool(o, "complete", res.complete);
        resp_json(resp, 200, json_print(o));
        json_free(o);
}

void api_node_reserve(const struct req *req, struct resp *resp)
{
        int node;
        uint64_t page_size;
        if (atomic_load(&req->app->stopping)) {
                resp_refuse_stopping(resp);
                return;
        }
        if (!api_path_target(req, resp, &node, &page_size))
                return;

        uint64_t count = 0;
        bool allow_partial = false, has_count = false;
        const struct jfield fields[] = {
                {"count", JF_U64, &count, 0, &has_count},
                {"allow_partial", JF_BOOL, &allow_partial, 0, NULL},
        };
        if (json_decode(req->body, req->body_len, fields, ARRAY_SIZE(fields), &resp->problem) < 0) {
                resp->status = resp->problem.status;
                return;
        }
        if (!has_count) {
                api_invalid(resp, "\"count\" is required");
                return;
        }
        struct reserve_work *w = calloc(1, sizeof(*w));
        if (!w) {
                api_oom(resp);
                return;
        }
        w->app = req->app;
        w->rq = (struct reserve_req){.node = node, .page_size = page_size, .count = count,
                                     .allow_partial = allow_partial, .floor_bytes = req->app->memory_floor};
        resp_defer(resp, reserve_work, w);
}
