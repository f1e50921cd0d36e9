/* pools_public: the public face of the pool core (pools.h): start and stop,
 * queries, waits, delete, the counts the metrics and nodes read.
 *
 * The core's files and their layers are listed once, in
 * docs/ARCHITECTURE.md; pools_internal.h describes the structs, locks and
 * their order once.  This file is the top layer.
 * Pool states change only through pool_transition (pool_state.c). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "owner.h"
#include "pools_internal.h"
#include "pools_testing.h"
#include "util.h"

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
/* A registry bigger than this is a runaway scheduler, not a workload. */
#define POOLS_DEFAULT_MAX 1024
/* How often claimed pools without an owner pid are checked for mappers: a
 * walk over every process's maps, so rarely; the answer is for operators
 * and a release measured in minutes. */
#define POOLS_UNMAPPED_SWEEP_MS_DEFAULT 60000
/* How often dirty stock files are checked for mappers: each check walks
 * every process's maps, but a released VM's file should come back within
 * seconds of its process exiting. */
#define POOLS_RECYCLE_CHECK_MS_DEFAULT 1000

/* ---- queries and other changes ---- */

int pools_get(struct pools *p, const char *name, struct pool_view *ret, struct problem *err)
{
        struct pool_record rec;
        struct pool *pool;
        dev_t dev = 0;
        ino_t ino = 0;
        int r = -ENOENT;

        assert_return(p, -EINVAL);
        assert_return(name, -EINVAL);
        assert_return(ret, -EINVAL);
        /* By hand: reg.lock is dropped before the file is looked at. */
        pools_lock(&p->reg.lock);
        pool = pools_find(p, name);
        if (pool && pool->hold != POOL_CREATING && !pools_is_stock(pool)) {
                pools_fill_view(pool, ret);
                rec = pool->rec;
                dev = pool->file_dev;
                ino = pool->file_ino;
                r = 0;
        }
        pools_unlock(&p->reg.lock);
        if (r < 0)
                return pools_not_found(name, err);
        pools_check_on_get(p, &rec, dev, ino, ret);
        return 0;
}

int pools_list(struct pools *p, struct pool_view **ret, size_t *ret_n)
{
        struct pool_view *v;
        size_t n = 0;

        assert_return(p, -EINVAL);
        assert_return(ret, -EINVAL);
        assert_return(ret_n, -EINVAL);
        POOLS_LOCKED(&p->reg.lock);
        v = calloc(p->reg.n_pools ? p->reg.n_pools : 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < p->reg.n_pools; i++)
                if (p->reg.pools[i]->hold != POOL_CREATING && p->reg.pools[i]->hold != POOL_REMOVING &&
                    !pools_is_stock(p->reg.pools[i]))
                        pools_fill_view(p->reg.pools[i], &v[n++]);
        *ret = v;
        *ret_n = n;
        return 0;
}

static int cmp_row_names(const void *a, const void *b)
{
        return strcmp((*(struct pool *const *)a)->rec.name, (*(struct pool *const *)b)->rec.name);
}

int pools_list_page(struct pools *p, const struct pools_page_filter *f, size_t limit, struct pool_view **ret,
                    size_t *ret_n, bool *ret_more)
{
        _cleanup_free_ struct pool **rows = NULL;
        struct pool_view *v;
        size_t m = 0, n;

        assert_return(p, -EINVAL);
        assert_return(f, -EINVAL);
        assert_return(limit >= 1, -EINVAL);
        assert_return(ret, -EINVAL);
        assert_return(ret_n, -EINVAL);
        assert_return(ret_more, -EINVAL);
        POOLS_LOCKED(&p->reg.lock);
        rows = malloc((p->reg.n_pools ? p->reg.n_pools : 1) * sizeof(*rows));
        if (!rows)
                return -ENOMEM;
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                struct pool *o = p->reg.pools[i];
                const struct pool_record *r = &o->rec;
                if (o->hold == POOL_CREATING || o->hold == POOL_REMOVING || pools_is_stock(o) ||
                    (f->after && strcmp(r->name, f->after) <= 0) || (f->has_state && r->state != f->state) ||
                    (f->has_node && r->node != f->node) || (f->page_size && r->page_size != f->page_size))
                        continue;
                rows[m++] = o;
        }
        qsort(rows, m, sizeof(*rows), cmp_row_names);
        n = m < limit ? m : limit;
        v = calloc(n ? n : 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                pools_fill_view(rows[i], &v[i]);
        *ret = v;
        *ret_n = n;
        *ret_more = m > n;
        return 0;
}

void pools_sum_sizes(struct pools *p, struct pools_size_sum *sums, size_t n)
{
        POOLS_LOCKED(&p->reg.lock);
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                const struct pool *o = p->reg.pools[i];
                const struct pool_record *r = &o->rec;

                if (o->hold == POOL_CREATING || o->hold == POOL_REMOVING || pools_is_stock(o))
                        continue;
                for (size_t k = 0; k < n; k++)
                        if (sums[k].node == r->node && sums[k].page_size == r->page_size &&
                            sums[k].state == r->state) {
                                sums[k].bytes += r->size_bytes;
                                sums[k].count++;
                                break;
                        }
        }
}

int pools_wait(struct pools *p, const char *name, uint64_t deadline_ns, struct pool_view *ret)
{
        struct timespec ts = { .tv_sec = (time_t)(deadline_ns / NS_PER_SEC),
                               .tv_nsec = (long)(deadline_ns % NS_PER_SEC) };
        int r = 0;

        assert_return(p, -EINVAL);
        assert_return(name, -EINVAL);
        assert_return(ret, -EINVAL);
        POOLS_LOCKED(&p->reg.lock); /* the wait gives it up and takes it back */
        for (;;) {
                struct pool *pool = pools_find(p, name);
                if (!pool || pool->hold == POOL_CREATING || pools_is_stock(pool)) {
                        r = -ENOENT;
                        break;
                }
                if (pool->rec.state != POOL_WARMING || now_mono_ns() >= deadline_ns) {
                        pools_fill_view(pool, ret);
                        break;
                }
                pools_cond_timedwait(&p->reg.changed, &p->reg.lock, &ts);
        }
        return r;
}

int pools_delete(struct pools *p, const char *name, struct problem *err)
{
        return pools_delete_recycle(p, name, true, err);
}

int pools_delete_recycle(struct pools *p, const char *name, bool recycle, struct problem *err)
{
        struct pool *pool;
        int r;

        assert_return(p, -EINVAL);
        assert_return(name, -EINVAL);
        /* By hand: reg.lock is dropped before the release, which takes it. */
        pools_lock(&p->reg.lock);
        pool = pools_grab(p, name);
        pools_unlock(&p->reg.lock);
        if (!pool)
                return pools_not_found(name, err);
        r = pools_release_pool(p, pool, RELEASE_DELETE, recycle);
        if (r < 0)
                pools_release(p, pool);
        if (r == -EAGAIN)
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED,
                              "pool \"%s\": its release could not be saved to the journal in %s; nothing "
                              "was changed (the pool is still there), retry later", name, p->state_dir);
        else if (r < 0)
                problem_raise(err, PROBLEM_POOL_FILE_ERROR,
                              "pool \"%s\": %s; the record is kept so the release can be retried", name,
                              strerror(-r));
        return r;
}

void pools_node_usage(struct pools *p, int node, uint64_t page_size, uint64_t *ret_warm,
                      uint64_t *ret_warming)
{
        uint64_t warm = 0, warming = 0;

        POOLS_LOCKED(&p->reg.lock);
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                struct pool *o = p->reg.pools[i];
                struct pool_view v;

                if (o->hold == POOL_CREATING || o->hold == POOL_REMOVING || o->rec.node != node || o->rec.page_size != page_size)
                        continue;
                if (o->rec.state == POOL_READY) {
                        warm += o->rec.size_bytes / page_size;
                } else if (o->rec.state == POOL_WARMING) {
                        pools_fill_view(o, &v);
                        warming += v.bytes_done / page_size;
                }
        }
        *ret_warm = warm;
        *ret_warming = warming;
}

void pools_get_stats(struct pools *p, struct pools_stats *ret)
{
        POOLS_LOCKED(&p->reg.lock);
        *ret = p->reg.stats;
        ret->pools_unmapped = 0;
        for (size_t i = 0; i < p->reg.n_pools; i++)
                if (p->reg.pools[i]->unmapped_since && p->reg.pools[i]->hold != POOL_REMOVING)
                        ret->pools_unmapped++;
}

static char *strdup_or_null(const char *s, bool *fail)
{
        char *d;

        if (!s)
                return NULL;
        d = strdup(s);
        if (!d)
                *fail = true;
        return d;
}

int pools_new(const struct pools_config *cfg, struct pools **ret)
{
        pthread_condattr_t ca;
        struct pools *p;
        bool oom = false;
        int r;

        assert_return(cfg, -EINVAL);
        assert_return(cfg->fs, -EINVAL);
        assert_return(cfg->topo, -EINVAL);
        assert_return(cfg->engine, -EINVAL);
        assert_return(cfg->state_dir, -EINVAL);
        assert_return(cfg->n_mounts <= TOPO_MAX_PAGE_SIZES, -EINVAL);
        assert_return(ret, -EINVAL);
        /* Pool paths are built in POOL_PATH_MAX bytes. */
        for (size_t i = 0; i < cfg->n_mounts; i++)
                if (!cfg->mounts[i].dir || strlen(cfg->mounts[i].dir) > POOL_DIR_MAX)
                        return -ENAMETOOLONG;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->cfg = *cfg;
        p->state_dir = strdup_or_null(cfg->state_dir, &oom);
        p->boot_id_path = strdup_or_null(cfg->boot_id_path ? cfg->boot_id_path : BOOT_ID_PATH, &oom);
        for (size_t i = 0; i < cfg->n_mounts; i++) {
                p->mount_dirs[i] = strdup_or_null(cfg->mounts[i].dir, &oom);
                p->cfg.mounts[i].dir = p->mount_dirs[i];
        }
        p->proc_root = strdup_or_null(cfg->proc_root ? cfg->proc_root : "/proc", &oom);
        p->cfg.state_dir = p->state_dir;
        p->cfg.boot_id_path = p->boot_id_path;
        p->cfg.proc_root = p->proc_root;
        p->upkeep.sweep_interval_ns = (cfg->unmapped_sweep_ms ? cfg->unmapped_sweep_ms : POOLS_UNMAPPED_SWEEP_MS_DEFAULT) *
                               UINT64_C(1000000);
        p->recycle.interval_ns = (cfg->recycle_check_ms ? cfg->recycle_check_ms : POOLS_RECYCLE_CHECK_MS_DEFAULT) *
                                 UINT64_C(1000000);
        p->max_pools = cfg->max_pools ? cfg->max_pools : POOLS_DEFAULT_MAX;
        pools_mutex_init(&p->admit.lock);
        pools_mutex_init(&p->save.lock);
        pools_mutex_init(&p->obs.lock);
        pools_mutex_init(&p->reg.lock);
        pools_mutex_init(&p->wake.lock);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->reg.changed, &ca);
        pthread_cond_init(&p->wake.kick, &ca);
        pthread_condattr_destroy(&ca);
        if (oom) {
                r = -ENOMEM;
                goto fail;
        }

        for (size_t i = 0; i < p->cfg.n_mounts; i++) {
                if (!p->mount_dirs[i]) {
                        r = -EINVAL;
                        goto fail;
                }
                r = pools_prepare_dir(p->mount_dirs[i], cfg->mounts[i].page_size, cfg->pool_gid,
                                !cfg->skip_mount_check);
                if (r < 0)
                        goto fail;
                r = pools_prepare_stock_dir(p->mount_dirs[i], &p->stock_dirs[i]);
                if (r < 0) {
                        log_err("pools: cannot make %s/%s the daemon's alone: %s", p->mount_dirs[i],
                                POOLS_STOCK_DIR, strerror(-r));
                        goto fail;
                }
        }
        r = owner_watch_new(pools_on_owner_exit, p, &p->owners);
        if (r < 0)
                goto fail;
        if (strcmp(p->proc_root, "/proc") == 0) {
                int q = owner_creds_new(p->proc_root, &p->creds);
                if (q < 0)
                        log_notice("pools: no process events (%s; CAP_NET_ADMIN is needed): each hand-out "
                                   "and recycle walks every process in /proc", strerror(-q));
                else
                        log_info("pools: holder check by write lease, links and process events (%zu "
                                 "processes other than root's known)", owner_creds_count(p->creds));
        }
        r = pools_recover(p);
        if (r < 0)
                goto fail_jobs;
        r = pools_save(p);
        if (r < 0)
                goto fail_jobs;

        if (cfg->n_stock_targets) {
                struct problem err = {0};
                r = pools_set_stock(p, cfg->stock_targets, cfg->n_stock_targets, &err);
                if (r < 0) {
                        log_err("--stock refused: %s", err.detail);
                        r = -EDOM;
                        goto fail_jobs;
                }
        }
        r = pools_elastic_start(p);
        if (r < 0)
                goto fail_jobs;
        r = pools_start_upkeep(p);
        if (r < 0)
                goto fail_jobs;
        *ret = p;
        return 0;

fail_jobs:
        /* Stop what reconcile started; pools_free keeps them warming on disk. */
        pools_free(p);
        return r;
fail:
        pools_free(p);
        return r;
}

/* The teardown order.  A part is freed only once no thread that reads it
 * runs; the caller has stopped the HTTP layer (no pools_* call in flight),
 * and the engine outlives us (engine_free comes after).  So, in this order:
 *
 *   1. the observer is cleared: its owner (the HTTP layer) is gone, so
 *      neither the upkeep thread's last changes nor the saves below tell it.
 *   2. the recycle thread, then the upkeep thread, are stopped (joined:
 *      pools_stop_upkeep) first, because they read every other part: the
 *      owner watch (pools_remove, pools_recycle forget an owner), the
 *      credentials index (the recycle thread's holder scan, the upkeep
 *      thread's drain), the registry, the saves and the jobs (the recycle
 *      thread starts zero jobs, the upkeep thread collects them).  Freeing
 *      the watch while the upkeep thread still ran was a use-after-free
 *      (unit.pools_claim owner_exit_during_free).
 *   3. the owner watch is freed, which joins its thread: its callback
 *      (pools_on_owner_exit) takes reg.lock and kicks wake.lock, both
 *      still alive; an exit it reports now marks a pool nobody releases,
 *      and the next start releases it (the owner is gone by then).
 *      p->owners is NULL after, which owner_watch_remove accepts.
 *   4. the credentials index: only those two threads and pools_* calls
 *      read it, and none runs any more (p->creds NULL: no holder check
 *      by index, pools_file.c).
 *   5. the jobs: the engine's workers still run, and each job's on_done
 *      writes its pool and wake.lock; job_cancel returns once on_done has
 *      run and job_free (in pools_finish_job) once the engine is done with
 *      it, so after this loop no engine thread touches a pool.
 *   6. the final save, then the journal's state (jsync), the rows, the
 *      locks: only this thread is left that can reach them. */
void pools_free(struct pools *p)
{
        if (!p)
                return;

        pools_set_observer(p, NULL, NULL);
        pools_stop_upkeep(p);
        owner_watch_free(p->owners);
        p->owners = NULL;
        owner_creds_free(p->creds);
        p->creds = NULL;

        /* Stop each job at a chunk boundary and record where it stands;
         * cancelled jobs stay warming for the next start. */
        bool any = false;
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                struct pool *pool = p->reg.pools[i];
                if (!pool->job)
                        continue;
                job_cancel(pool->job);
                /* By hand: reg.lock is dropped before finishing the job, which takes it. */
                pools_lock(&p->reg.lock);
                pools_set_hold(pool, POOL_BUSY);
                pools_unlock(&p->reg.lock);
                (void)pools_finish_job(p, pool, true); /* never removes at shutdown */
                /* By hand: the pool is let go after the job is finished, as it was held before. */
                pools_lock(&p->reg.lock);
                pools_set_hold(pool, POOL_FREE);
                pools_unlock(&p->reg.lock);
                any = true;
        }
        if (any) {
                int r = pools_save(p);
                if (r < 0)
                        log_err("pools: saving state at exit: %s", strerror(-r));
        }

        for (size_t i = 0; i < p->reg.n_pools; i++) {
                if (p->reg.pools[i]->fd >= 0)
                        close(p->reg.pools[i]->fd);
                free(p->reg.pools[i]);
        }
        free(p->reg.pools);
        pool_index_free(&p->reg.by_name);
        free(p->reg.gone);
        free(p->reg.changed_rows);
        free(p->admit.resv);
        free(p->stock.targets);
        free(p->elastic.rows);
        journal_sync_reset(&p->save.jsync);
        pthread_cond_destroy(&p->reg.changed);
        pthread_cond_destroy(&p->wake.kick);
        pools_mutex_destroy(&p->admit.lock);
        pools_mutex_destroy(&p->save.lock);
        pools_mutex_destroy(&p->obs.lock);
        pools_mutex_destroy(&p->reg.lock);
        pools_mutex_destroy(&p->wake.lock);
        for (size_t i = 0; i < TOPO_MAX_PAGE_SIZES; i++) {
                free(p->mount_dirs[i]);
                free(p->stock_dirs[i]);
        }
        free(p->state_dir);
        free(p->boot_id_path);
        free(p->proc_root);
        free(p);
}
