/* api_metrics: GET /metrics in Prometheus text format 0.0.4.
 *
 * Gauges are read at scrape time from sysfs and the pool registry, counters
 * come from the registry's statistics and the HTTP layer's counter family.
 * Names follow the Prometheus rules: base units (bytes, seconds), "_total"
 * only on counters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "metrics.h"
#include "pools.h"
#include "topo.h"

static void node_gauges(struct app *app, struct prom *p)
{
        const struct topo *t = app->topo;
        prom_header(p, "hpwarmd_hugepages_bytes", "Hugepage pool of a NUMA node by page size and state "
                    "(total, free, surplus, available: what a new pool can get now), in bytes.", "gauge");
        for (size_t i = 0; i < t->n_nodes; i++) {
                for (size_t j = 0; j < t->n_page_sizes; j++) {
                        struct hp_counts c;
                        uint64_t ps = t->page_sizes[j];
                        if (topo_read_hugepages(app->fs, t->nodes[i].id, ps, &c) < 0)
                                continue;
                        char node[16], psz[24];
                        snprintf(node, sizeof(node), "%d", t->nodes[i].id);
                        snprintf(psz, sizeof(psz), "%" PRIu64, ps);
                        struct pools_avail a = { .available = c.free };
                        (void)pools_node_available(app->pools, t->nodes[i].id, ps, &a);
                        const struct {
                                const char *state;
                                uint64_t pages;
                        } rows[] = {{"total", c.total}, {"free", c.free}, {"surplus", c.surplus},
                                    {"available", a.available}};
                        for (size_t k = 0; k < ARRAY_SIZE(rows); k++)
                                prom_sample_u64(p, "hpwarmd_hugepages_bytes",
                                                (struct prom_label[]){{"numa_node", node},
                                                                      {"page_size_bytes", psz},
                                                                      {"state", rows[k].state}},
                                                3, rows[k].pages * ps);
                }
        }
        prom_header(p, "hpwarmd_node_memory_free_bytes", "Ordinary free memory of a NUMA node.", "gauge");
        for (size_t i = 0; i < t->n_nodes; i++) {
                uint64_t total, free_b;
                char node[16];
                if (topo_read_meminfo(app->fs, t->nodes[i].id, &total, &free_b) < 0)
                        continue;
                snprintf(node, sizeof(node), "%d", t->nodes[i].id);
                prom_sample_u64(p, "hpwarmd_node_memory_free_bytes",
                                (struct prom_label[]){{"numa_node", node}}, 1, free_b);
        }
}

static void pool_gauges(struct app *app, struct prom *p)
{
        const struct topo *t = app->topo;
        static const enum pool_state states[] = {POOL_WARMING, POOL_READY, POOL_FAILED, POOL_CANCELLED};
        size_t n = t->n_nodes * t->n_page_sizes * ARRAY_SIZE(states), at = 0;
        struct pools_size_sum *sums = calloc(n ? n : 1, sizeof(*sums));
        if (!sums)
                return;
        for (size_t i = 0; i < t->n_nodes; i++)
                for (size_t j = 0; j < t->n_page_sizes; j++)
                        for (size_t s = 0; s < ARRAY_SIZE(states); s++)
                                sums[at++] = (struct pools_size_sum){
                                        .node = t->nodes[i].id, .page_size = t->page_sizes[j], .state = states[s]};
        /* One walk of the registry, without building a view of every pool. */
        pools_sum_sizes(app->pools, sums, n);
        prom_header(p, "hpwarmd_pool_bytes", "Bytes of warm pools by NUMA node, page size and state.", "gauge");
        at = 0;
        for (size_t i = 0; i < t->n_nodes; i++) {
                char node[16];
                snprintf(node, sizeof(node), "%d", t->nodes[i].id);
                for (size_t j = 0; j < t->n_page_sizes; j++) {
                        char psz[24];
                        snprintf(psz, sizeof(psz), "%" PRIu64, t->page_sizes[j]);
                        for (size_t s = 0; s < ARRAY_SIZE(states); s++) {
                                uint64_t bytes = sums[at++].bytes;
                                prom_sample_u64(p, "hpwarmd_pool_bytes",
                                                (struct prom_label[]){{"numa_node", node},
                                                                      {"page_size_bytes", psz},
                                                                      {"state", pool_state_name(states[s])}},
                                                3, bytes);
                        }
                }
        }
        free(sums);
}

/* hpwarmd_stock_bytes{numa_node,page_size_bytes,size_bytes,state}: per
 * stock target, its ready and refilling files and released files on their
 * way back (dirty: waiting for no mapper; recycling: being zeroed). */
static void stock_gauges(struct app *app, struct prom *p)
{
        struct stock_view *v = NULL;
        size_t n = 0;

        if (pools_get_stock(app->pools, &v, &n) < 0)
                return;
        prom_header(p, "hpwarmd_stock_bytes",
                    "Bytes of stock files by NUMA node, page size, file size and state (ready, warming, dirty, "
                    "recycling).", "gauge");
        for (size_t i = 0; i < n; i++) {
                char node[16], psz[24], size[24];
                snprintf(node, sizeof(node), "%d", v[i].target.node);
                snprintf(psz, sizeof(psz), "%" PRIu64, v[i].target.page_size);
                snprintf(size, sizeof(size), "%" PRIu64, v[i].target.size_bytes);
                static const char *const states[] = {"ready", "warming", "dirty", "recycling"};
                const uint64_t counts[] = {v[i].ready, v[i].warming, v[i].dirty, v[i].recycling - v[i].dirty};
                for (size_t s = 0; s < ARRAY_SIZE(states); s++)
                        prom_sample_u64(p, "hpwarmd_stock_bytes",
                                        (struct prom_label[]){{"numa_node", node},
                                                              {"page_size_bytes", psz},
                                                              {"size_bytes", size},
                                                              {"state", states[s]}},
                                        4, counts[s] * v[i].target.size_bytes);
        }
        free(v);
}

static void counter(struct prom *p, const char *name, const char *help, const char *label,
                    const char *const *values, const uint64_t *counts, size_t n)
{
        prom_header(p, name, help, "counter");
        for (size_t i = 0; i < n; i++)
                prom_sample_u64(p, name, label ? (struct prom_label[]){{label, values[i]}} : NULL, label ? 1 : 0,
                                counts[i]);
}

static void registry_counters(struct app *app, struct prom *p)
{
        struct pools_stats s;
        pools_get_stats(app->pools, &s);
        counter(p, "hpwarmd_warm_jobs_total", "Warm jobs by result (started counts every job begun).",
                "result", (const char *const[]){"started", "ready", "failed", "cancelled"},
                (const uint64_t[]){s.jobs_started, s.jobs_ready, s.jobs_failed, s.jobs_cancelled}, 4);
        counter(p, "hpwarmd_pools_expired_total", "Ready pools released because their TTL passed unclaimed.",
                NULL, NULL, &s.pools_expired, 1);
        counter(p, "hpwarmd_pools_released_total",
                "Pools released (file removed, pages back) by reason: DELETE, TTL passed unclaimed, owner "
                "process exited, unmapped past --release-unmapped-after.",
                "reason", (const char *const[]){"delete", "ttl", "owner-exited", "unmapped"},
                (const uint64_t[]){s.released_delete, s.pools_expired, s.released_owner_exited,
                                   s.released_unmapped},
                4);
        prom_header(p, "hpwarmd_pools_unmapped", "Claimed pools without an owner pid that no process maps.",
                    "gauge");
        prom_sample_u64(p, "hpwarmd_pools_unmapped", NULL, 0, s.pools_unmapped);
        counter(p, "hpwarmd_orphan_files_removed_total",
                "Files found in pool directories with no journal record, removed at start.", NULL, NULL,
                &s.orphan_files_removed, 1);
        counter(p, "hpwarmd_warmed_bytes_total", "Bytes populated (zeroed) by finished warm jobs.", NULL, NULL,
                &s.bytes_warmed_total, 1);
        prom_header(p, "hpwarmd_warm_duration_seconds", "Duration of warm jobs that reached ready, from "
                    "start to the last page populated and placement checked.", "histogram");
        prom_histogram(p, "hpwarmd_warm_duration_seconds", NULL, 0, METRICS_DURATION_BOUNDS, METRICS_DURATION_BUCKETS,
                       s.job_seconds_buckets, s.job_seconds_sum);
        counter(p, "hpwarmd_stock_requests_total",
                "Pool creates on a stocked node and page size by how stock served them: hit (a ready file of "
                "the size, renamed), partial (a smaller one grown), miss (warmed as usual).",
                "result", (const char *const[]){"hit", "partial", "miss"},
                (const uint64_t[]){s.stock_hits, s.stock_partial_hits, s.stock_misses}, 3);
        counter(p, "hpwarmd_stock_given_way_total", "Stock files removed to make room for a pool.", NULL, NULL,
                &s.stock_given_way, 1);
        counter(p, "hpwarmd_stock_refilled_bytes_total", "Bytes of stock files populated by finished refills.",
                NULL, NULL, &s.stock_refill_bytes, 1);
        prom_header(p, "hpwarmd_stock_refill_duration_seconds",
                    "Duration of stock refills that completed (low priority: pool warms go first).", "histogram");
        prom_histogram(p, "hpwarmd_stock_refill_duration_seconds", NULL, 0, METRICS_DURATION_BOUNDS,
                       METRICS_DURATION_BUCKETS, s.stock_refill_seconds_buckets, s.stock_refill_seconds_sum);
        counter(p, "hpwarmd_stock_recycles_total",
                "Released pools kept for recycling by outcome: kept (became a dirty stock file), recycled "
                "(zeroed and saved as stock), discarded (removed instead: changed, holes, a failed zero job "
                "or save).",
                "result", (const char *const[]){"kept", "recycled", "discarded"},
                (const uint64_t[]){s.stock_recycle_kept, s.stock_recycled, s.stock_recycle_discarded}, 3);
        counter(p, "hpwarmd_stock_recycled_bytes_total",
                "Bytes of released pool files zeroed in place and returned to the stock.", NULL, NULL,
                &s.stock_recycled_bytes, 1);
        prom_header(p, "hpwarmd_stock_recycle_duration_seconds",
                    "Duration of the zero jobs of recycles that completed (low priority: pool warms go first).",
                    "histogram");
        prom_histogram(p, "hpwarmd_stock_recycle_duration_seconds", NULL, 0, METRICS_DURATION_BOUNDS,
                       METRICS_DURATION_BUCKETS, s.stock_recycle_seconds_buckets, s.stock_recycle_seconds_sum);
        counter(p, "hpwarmd_stock_holder_scans_total",
                "Released files looked for in every process's descriptors before they are zeroed (once each, "
                "on the recycle thread; never on a request's path).", NULL, NULL, &s.stock_holder_scans, 1);
        prom_header(p, "hpwarmd_stock_holder_scan_seconds_total", "Time those scans took.", "counter");
        prom_sample_double(p, "hpwarmd_stock_holder_scan_seconds_total", NULL, 0, s.stock_holder_scan_seconds_sum);
        counter(p, "hpwarmd_reservations_total", "Reservations (nr_hugepages writes) by result.", "result",
                (const char *const[]){"ok", "partial", "shortfall", "refused", "error"},
                (const uint64_t[]){s.reservations_ok, s.reservations_partial, s.reservations_shortfall,
                                   s.reservations_refused, s.reservations_error},
                5);
}

/* Elastic pools: what each policy grew and gave back, and its bounds. */
static void elastic_metrics(struct app *app, struct prom *p)
{
        struct elastic_view *v = NULL;
        size_t n = 0;

        if (pools_list_elastic(app->pools, &v, &n) < 0)
                return;
        prom_header(p, "hpwarmd_elastic_pages_total", "Pages an elastic pool grew by (on demand, or to its min) "
                    "and gave back to the kernel, since the daemon started.", "counter");
        for (size_t i = 0; i < n; i++) {
                char node[16], psz[24];
                snprintf(node, sizeof(node), "%d", v[i].policy.node);
                snprintf(psz, sizeof(psz), "%" PRIu64, v[i].policy.page_size);
                prom_sample_u64(p, "hpwarmd_elastic_pages_total",
                                (struct prom_label[]){{"numa_node", node}, {"page_size_bytes", psz},
                                                      {"direction", "grown"}}, 3, v[i].grown_total);
                prom_sample_u64(p, "hpwarmd_elastic_pages_total",
                                (struct prom_label[]){{"numa_node", node}, {"page_size_bytes", psz},
                                                      {"direction", "returned"}}, 3, v[i].returned_total);
        }
        prom_header(p, "hpwarmd_elastic_bound_bytes", "The bounds of an elastic pool's policy (min, max, "
                    "headroom), in bytes; compare with hpwarmd_hugepages_bytes{state=\"total\"}.", "gauge");
        for (size_t i = 0; i < n; i++) {
                char node[16], psz[24];
                uint64_t ps = v[i].policy.page_size;
                snprintf(node, sizeof(node), "%d", v[i].policy.node);
                snprintf(psz, sizeof(psz), "%" PRIu64, ps);
                const struct {
                        const char *bound;
                        uint64_t pages;
                } rows[] = {{"min", v[i].policy.min}, {"max", v[i].policy.max}, {"headroom", v[i].policy.headroom}};
                for (size_t k = 0; k < ARRAY_SIZE(rows); k++)
                        prom_sample_u64(p, "hpwarmd_elastic_bound_bytes",
                                        (struct prom_label[]){{"numa_node", node}, {"page_size_bytes", psz},
                                                              {"bound", rows[k].bound}}, 3, rows[k].pages * ps);
        }
        free(v);
}

void api_metrics(const struct req *req, struct resp *resp)
{
        struct app *app = req->app;
        struct prom *p = prom_new();
        prom_header(p, "hpwarmd_build_info", "Build information; the value is always 1.", "gauge");
        prom_sample_u64(p, "hpwarmd_build_info", (struct prom_label[]){{"version", HPW_VERSION}}, 1, 1);
        node_gauges(app, p);
        pool_gauges(app, p);
        stock_gauges(app, p);
        elastic_metrics(app, p);
        registry_counters(app, p);
        http_metrics_emit(app->http_metrics, p);
        char *text = prom_finish(p);
        if (!text) {
                api_oom(resp);
                return;
        }
        resp_json(resp, 200, text);
        resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
}
