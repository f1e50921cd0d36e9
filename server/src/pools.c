/* pools: the registry of warm pools and the daemon's durable state (pools
 * and reservations, through journal.c).
 *
 * This file holds the registry itself: lookup, who holds a pool, the commit
 * that saves a change before showing it, views, queries, claim and delete,
 * start and stop, and the change observer.  The structs, the locks and their
 * order are described once, in pools_internal.h; the other concerns live in
 * pools_jobs.c (warm jobs, the upkeep thread), pools_admit.c (admission,
 * reservations, create), pools_claim.c (claims, owner processes),
 * pools_dir.c (pool directories), pools_stock.c and pools_recycle.c (the
 * stock) and pools_recover.c (start-up).  Pool states change only through pool_transition (pool.c). */
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

int64_t pools_now_unix(void) { return (int64_t)(now_real_ns() / NS_PER_SEC); }

const char *pools_mount_dir(const struct pools *p, uint64_t page_size)
{
        for (size_t i = 0; i < p->cfg.n_mounts; i++)
                if (p->cfg.mounts[i].page_size == page_size)
                        return p->mount_dirs[i];
        return NULL;
}

uint64_t pools_rec_expires_boot_ns(const struct journal_pool *r)
{
        if (r->state != POOL_READY || r->claimed || r->ttl_seconds == 0)
                return 0;
        /* ready_boot_ns is set on entering ready (0 only if CLOCK_BOOTTIME
         * read 0, i.e. never): expire at once rather than never. */
        return r->ready_boot_ns + r->ttl_seconds * NS_PER_SEC;
}

/* ---- registry helpers (lock held) ---- */

struct pool *pools_find(struct pools *p, const char *name)
{
        for (size_t i = 0; i < p->n_pools; i++)
                if (p->pools[i]->hold != POOL_REMOVING && strcmp(p->pools[i]->rec.name, name) == 0)
                        return p->pools[i];
        return NULL;
}

int pools_add(struct pools *p, struct pool *pool)
{
        if (p->n_pools == p->cap_pools) {
                size_t cap = p->cap_pools ? p->cap_pools * 2 : 16;
                struct pool **n = realloc(p->pools, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                p->pools = n;
                p->cap_pools = cap;
        }
        p->pools[p->n_pools++] = pool;
        return 0;
}

void pools_drop(struct pools *p, struct pool *pool)
{
        for (size_t i = 0; i < p->n_pools; i++)
                if (p->pools[i] == pool) {
                        p->pools[i] = p->pools[--p->n_pools];
                        return;
                }
}

void pools_set_hold(struct pool *pool, enum pool_hold to)
{
        if (!pool_hold_allowed(pool->hold, to)) {
                /* Two threads think they own the pool: going on would
                 * corrupt the registry or unlink a file twice. */
                log_err("pools: pool %s: hold %s -> %s is not allowed", pool->rec.name,
                        pool_hold_name(pool->hold), pool_hold_name(to));
                abort();
        }
        pool->hold = to;
}

const struct journal_pool *pools_latest(const struct pool *pool)
{
        return pool->pending ? pool->pending : &pool->rec;
}

void pools_fill_view(struct pool *pool, struct pool_view *v)
{
        const struct journal_pool *r = &pool->rec;
        struct job_status st;
        uint64_t done = r->bytes_done;
        bool have = false;

        memset(v, 0, sizeof(*v));
        snprintf(v->name, sizeof(v->name), "%s", r->name);
        v->node = r->node;
        v->page_size = r->page_size;
        v->size_bytes = r->size_bytes;
        v->state = r->state;
        v->claimed = r->claimed;
        v->ttl_seconds = r->ttl_seconds;
        v->created_at = r->created_at;
        v->started_at = r->started_at;
        v->finished_at = r->finished_at;
        snprintf(v->error_slug, sizeof(v->error_slug), "%s", r->error_slug);
        snprintf(v->error_detail, sizeof(v->error_detail), "%s", r->error_detail);
        snprintf(v->path, sizeof(v->path), "%s", pool->path);
        if (pool->job) {
                job_get_status(pool->job, &st);
                have = true;
        } else if (pool->have_last) {
                st = pool->last;
                have = true;
        }
        if (r->state == POOL_READY)
                done = r->size_bytes;
        else if (r->state == POOL_WARMING && pool->job)
                done = pool->job_offset + st.bytes_done;
        else if (r->state == POOL_WARMING && have)
                done = st.bytes_done;
        v->bytes_done = done < r->size_bytes ? done : r->size_bytes;
        if (have) {
                uint64_t end = st.finished_ns ? st.finished_ns : now_mono_ns();
                v->elapsed_seconds = end > st.started_ns ? (double)(end - st.started_ns) / 1e9 : 0;
                v->threads = st.threads;
                v->placement_verified = st.verified;
                v->pages_off_node = st.pages_off_node;
        } else if (r->started_at) {
                /* Restored from the journal: whole seconds are all we know. */
                int64_t end = r->finished_at ? r->finished_at : pools_now_unix();
                v->elapsed_seconds = end > r->started_at ? (double)(end - r->started_at) : 0;
        }
        if (v->elapsed_seconds > 0 && r->state != POOL_FAILED)
                v->rate_bytes_per_second = (double)v->bytes_done / v->elapsed_seconds;
        /* Shown in wall time: now plus what is left on the boot clock, so
         * a wall clock jump moves the shown time, never the expiry. */
        uint64_t exp = pools_rec_expires_boot_ns(r);
        if (exp) {
                uint64_t boot = now_boot_ns(), real = now_real_ns();
                uint64_t left = exp > boot ? exp - boot : 0;
                v->expires_at = real ? (int64_t)((real + left) / NS_PER_SEC) : 0;
        }
        v->owner_pid = r->owner_pid;
        v->unmapped_since = pool->unmapped_since;
        v->from_stock = r->from_stock;
}

/* ---- commits ---- */

int pools_save(struct pools *p)
{
        struct journal j = {0};
        int r;

        pthread_mutex_lock(&p->save_lock);
        pthread_mutex_lock(&p->lock);
        snprintf(j.boot_id, sizeof(j.boot_id), "%s", p->boot_id);
        j.reservations = calloc(p->n_resv ? p->n_resv : 1, sizeof(*j.reservations));
        j.pools = calloc(p->n_pools ? p->n_pools : 1, sizeof(*j.pools));
        if (!j.reservations || !j.pools) {
                pthread_mutex_unlock(&p->lock);
                r = -ENOMEM;
                goto out;
        }
        if (p->n_resv)
                memcpy(j.reservations, p->resv, p->n_resv * sizeof(*p->resv));
        j.n_reservations = p->n_resv;
        if (p->n_stock) {
                j.stock_targets = calloc(p->n_stock, sizeof(*j.stock_targets));
                if (!j.stock_targets) {
                        pthread_mutex_unlock(&p->lock);
                        r = -ENOMEM;
                        goto out;
                }
                memcpy(j.stock_targets, p->stock, p->n_stock * sizeof(*p->stock));
                j.n_stock_targets = p->n_stock;
        }
        for (size_t i = 0; i < p->n_pools; i++) {
                struct pool *o = p->pools[i];
                struct journal_pool *d = &j.pools[j.n_pools];

                if (o->hold == POOL_REMOVING || o->hold == POOL_RELEASING)
                        continue;
                *d = *pools_latest(o);
                if ((d->state == POOL_WARMING || d->state == POOL_STOCK_WARMING) && o->job) {
                        struct job_status st;
                        job_get_status(o->job, &st);
                        d->bytes_done = st.bytes_done;
                }
                j.n_pools++;
        }
        pthread_mutex_unlock(&p->lock);
        unsigned long full = p->jsync.full_saves;
        r = journal_save_sync(p->state_dir, &j, &p->jsync);
        if (r == 0) {
                pthread_mutex_lock(&p->lock);
                if (p->jsync.full_saves != full)
                        p->stats.journal_saves_full++;
                else
                        p->stats.journal_saves_light++;
                pthread_mutex_unlock(&p->lock);
        }
out:
        pthread_mutex_unlock(&p->save_lock);
        free(j.reservations);
        free(j.pools);
        free(j.stock_targets);
        return r;
}

int pools_save_record(struct pools *p, struct pool *pool, const struct journal_pool *next, bool apply_on_failure)
{
        int r;

        pthread_mutex_lock(&p->lock);
        pool->pending = next;
        pthread_mutex_unlock(&p->lock);
        r = pools_save(p);
        pthread_mutex_lock(&p->lock);
        if (r == 0 || apply_on_failure)
                pool->rec = *next;
        pool->pending = NULL;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        return r;
}

int pools_commit(struct pools *p, struct pool *pool, const struct journal_pool *next)
{
        int r = pools_save_record(p, pool, next, true);

        pools_notify(p, next->name);
        return r;
}

struct pool *pools_grab(struct pools *p, const char *name)
{
        for (;;) {
                struct pool *pool = pools_find(p, name);
                if (!pool || pool->hold == POOL_CREATING || pools_is_stock(pool))
                        return NULL;
                if (pool->hold == POOL_FREE) {
                        pools_set_hold(pool, POOL_BUSY);
                        return pool;
                }
                pthread_cond_wait(&p->changed, &p->lock);
        }
}

void pools_release(struct pools *p, struct pool *pool)
{
        bool due;

        pthread_mutex_lock(&p->lock);
        pools_set_hold(pool, POOL_FREE);
        /* Marked for release while held (its owner exited during a claim):
         * upkeep skipped it, so tell it the pool is free now. */
        due = pool->release_due != RELEASE_NONE;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        if (due)
                pools_kick(p);
}

/* Set POOL's hold under `lock`. */
static void set_hold_locked(struct pools *p, struct pool *pool, enum pool_hold to)
{
        pthread_mutex_lock(&p->lock);
        pools_set_hold(pool, to);
        pthread_mutex_unlock(&p->lock);
}

void pools_count_release(struct pools *p, enum pool_release why)
{
        switch (why) {
        case RELEASE_DELETE: p->stats.released_delete++; break;
        case RELEASE_TTL: p->stats.pools_expired++; break;
        case RELEASE_OWNER_EXITED: p->stats.released_owner_exited++; break;
        case RELEASE_UNMAPPED: p->stats.released_unmapped++; break;
        case RELEASE_NONE: break;
        }
}

/* The journal forgets the pool first, then the file goes: a release that
 * could not be saved changes nothing (-EAGAIN; its job still runs), so
 * whoever was told it failed sees the pool as it was, now and after a
 * restart.  A file that cannot be removed puts the record back (a warming
 * one whose job was stopped becomes failed, "pool-file-error") so its pages
 * stay accounted for.  A save by another thread while the pool is releasing
 * leaves it out too; the next save after a failure writes it again. */
int pools_remove(struct pools *p, struct pool *pool, enum pool_release why)
{
        char name[POOL_NAME_MAX + 1];
        struct job *job;
        int r;

        set_hold_locked(p, pool, POOL_RELEASING);
        r = pools_save(p);
        if (r < 0) {
                log_err("pools: cannot save the release of pool %s: %s; it stays as it was",
                        pool->rec.name, strerror(-r));
                set_hold_locked(p, pool, POOL_BUSY);
                return -EAGAIN;
        }

        pthread_mutex_lock(&p->lock);
        job = pool->job;
        pthread_mutex_unlock(&p->lock);
        if (job) {
                struct job_status st;

                job_cancel(job); /* on_done has run when it returns */
                job_get_status(job, &st);
                pthread_mutex_lock(&p->lock);
                pool->job = NULL;
                pool->last = st;
                pool->have_last = true;
                if (st.state == JOB_CANCELLED)
                        p->stats.jobs_cancelled++;
                pthread_mutex_unlock(&p->lock);
                job_free(job);
        }
        if (pool->fd >= 0) {
                close(pool->fd);
                pool->fd = -1;
        }
        if (pool->path[0] && unlink(pool->path) < 0 && errno != ENOENT) {
                r = -errno;
                log_err("pools: cannot remove %s: %s", pool->path, strerror(-r));
                set_hold_locked(p, pool, POOL_BUSY);
                struct journal_pool next = pool->rec;
                /* Its job is gone and will never finish: say so, rather
                 * than "warming" forever.  DELETE retries. */
                if (job && pool->rec.state == POOL_WARMING &&
                    pool_transition(&next, POOL_FAILED, "pool-file-error",
                                    "its warm job was stopped, but removing its file failed: %s",
                                    strerror(-r)) == 0) {
                        int q = pools_commit(p, pool, &next);
                        if (q < 0)
                                log_err("pools: saving state for pool %s: %s", pool->rec.name, strerror(-q));
                } else {
                        int q = pools_save(p);
                        if (q < 0)
                                log_err("pools: saving state for pool %s: %s", pool->rec.name, strerror(-q));
                }
                return r;
        }
        pthread_mutex_lock(&p->lock);
        pools_set_hold(pool, POOL_REMOVING);
        /* Counted as it turns invisible: whoever sees it gone sees it
         * counted. */
        pools_count_release(p, why);
        snprintf(name, sizeof(name), "%s", pool->rec.name);
        pools_drop(p, pool);
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        free(pool);
        owner_watch_remove(p->owners, name);
        pools_notify(p, name);
        return 0;
}

/* ---- the observer ---- */

void pools_set_observer(struct pools *p, void (*fn)(void *arg, const char *name), void *arg)
{
        pthread_mutex_lock(&p->observer_lock);
        p->observer = fn;
        p->observer_arg = fn ? arg : NULL;
        pthread_mutex_unlock(&p->observer_lock);
}

void pools_notify(struct pools *p, const char *name)
{
        pthread_mutex_lock(&p->observer_lock);
        if (p->observer)
                p->observer(p->observer_arg, name);
        pthread_mutex_unlock(&p->observer_lock);
}

/* ---- queries and other changes ---- */

int pools_get(struct pools *p, const char *name, struct pool_view *ret)
{
        struct journal_pool rec;
        struct pool *pool;
        dev_t dev = 0;
        ino_t ino = 0;
        int r = -ENOENT;

        pthread_mutex_lock(&p->lock);
        pool = pools_find(p, name);
        if (pool && pool->hold != POOL_CREATING && !pools_is_stock(pool)) {
                pools_fill_view(pool, ret);
                rec = pool->rec;
                dev = pool->file_dev;
                ino = pool->file_ino;
                r = 0;
        }
        pthread_mutex_unlock(&p->lock);
        if (r == 0)
                pools_check_on_get(p, &rec, dev, ino, ret);
        return r;
}

int pools_list(struct pools *p, struct pool_view **ret, size_t *ret_n)
{
        struct pool_view *v;
        size_t n = 0;

        pthread_mutex_lock(&p->lock);
        v = calloc(p->n_pools ? p->n_pools : 1, sizeof(*v));
        if (!v) {
                pthread_mutex_unlock(&p->lock);
                return -ENOMEM;
        }
        for (size_t i = 0; i < p->n_pools; i++)
                if (p->pools[i]->hold != POOL_CREATING && p->pools[i]->hold != POOL_REMOVING &&
                    !pools_is_stock(p->pools[i]))
                        pools_fill_view(p->pools[i], &v[n++]);
        pthread_mutex_unlock(&p->lock);
        *ret = v;
        *ret_n = n;
        return 0;
}

void pools_sum_sizes(struct pools *p, struct pools_size_sum *sums, size_t n)
{
        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; i < p->n_pools; i++) {
                const struct pool *o = p->pools[i];
                const struct journal_pool *r = &o->rec;

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
        pthread_mutex_unlock(&p->lock);
}

int pools_wait(struct pools *p, const char *name, uint64_t deadline_ns, struct pool_view *ret)
{
        struct timespec ts = { .tv_sec = (time_t)(deadline_ns / NS_PER_SEC),
                               .tv_nsec = (long)(deadline_ns % NS_PER_SEC) };
        int r = 0;

        pthread_mutex_lock(&p->lock);
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
                pthread_cond_timedwait(&p->changed, &p->lock, &ts);
        }
        pthread_mutex_unlock(&p->lock);
        return r;
}

int pools_delete(struct pools *p, const char *name)
{
        return pools_delete_recycle(p, name, true);
}

int pools_delete_recycle(struct pools *p, const char *name, bool recycle)
{
        struct pool *pool;
        int r;

        pthread_mutex_lock(&p->lock);
        pool = pools_grab(p, name);
        pthread_mutex_unlock(&p->lock);
        if (!pool)
                return -ENOENT;
        r = pools_release_pool(p, pool, RELEASE_DELETE, recycle);
        if (r < 0)
                pools_release(p, pool);
        return r;
}

void pools_node_usage(struct pools *p, int node, uint64_t page_size, uint64_t *ret_warm,
                      uint64_t *ret_warming)
{
        uint64_t warm = 0, warming = 0;

        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; i < p->n_pools; i++) {
                struct pool *o = p->pools[i];
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
        pthread_mutex_unlock(&p->lock);
        *ret_warm = warm;
        *ret_warming = warming;
}

void pools_get_stats(struct pools *p, struct pools_stats *ret)
{
        pthread_mutex_lock(&p->lock);
        *ret = p->stats;
        ret->pools_unmapped = 0;
        for (size_t i = 0; i < p->n_pools; i++)
                if (p->pools[i]->unmapped_since && p->pools[i]->hold != POOL_REMOVING)
                        ret->pools_unmapped++;
        pthread_mutex_unlock(&p->lock);
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

        if (!cfg || !cfg->fs || !cfg->topo || !cfg->engine || !cfg->state_dir ||
            cfg->n_mounts > TOPO_MAX_PAGE_SIZES)
                return -EINVAL;
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
        p->sweep_interval_ns = (cfg->unmapped_sweep_ms ? cfg->unmapped_sweep_ms : POOLS_UNMAPPED_SWEEP_MS_DEFAULT) *
                               UINT64_C(1000000);
        p->recycle_interval_ns = (cfg->recycle_check_ms ? cfg->recycle_check_ms : POOLS_RECYCLE_CHECK_MS_DEFAULT) *
                                 UINT64_C(1000000);
        p->max_pools = cfg->max_pools ? cfg->max_pools : POOLS_DEFAULT_MAX;
        pthread_mutex_init(&p->admit_lock, NULL);
        pthread_mutex_init(&p->save_lock, NULL);
        pthread_mutex_init(&p->observer_lock, NULL);
        pthread_mutex_init(&p->lock, NULL);
        pthread_mutex_init(&p->done_lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->changed, &ca);
        pthread_cond_init(&p->kick, &ca);
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
        }
        r = owner_watch_new(pools_on_owner_exit, p, &p->owners);
        if (r < 0)
                goto fail;
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
                        log_err("pools: --stock: %s", err.detail);
                        r = -EINVAL;
                        goto fail_jobs;
                }
        }
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

void pools_free(struct pools *p)
{
        if (!p)
                return;

        /* The observer's owner may be gone already (the HTTP layer stops
         * first): the shutdown saves below are not told. */
        pools_set_observer(p, NULL, NULL);
        owner_watch_free(p->owners);
        p->owners = NULL;
        pools_stop_upkeep(p);

        /* No other thread touches the registry now (the caller stopped the
         * HTTP layer first): stop each job at a chunk boundary and record
         * where it stands; cancelled jobs stay warming for the next start. */
        bool any = false;
        for (size_t i = 0; i < p->n_pools; i++) {
                struct pool *pool = p->pools[i];
                if (!pool->job)
                        continue;
                job_cancel(pool->job);
                pools_set_hold(pool, POOL_BUSY);
                (void)pools_finish_job(p, pool, true); /* never removes at shutdown */
                pools_set_hold(pool, POOL_FREE);
                any = true;
        }
        if (any) {
                int r = pools_save(p);
                if (r < 0)
                        log_err("pools: saving state at exit: %s", strerror(-r));
        }

        for (size_t i = 0; i < p->n_pools; i++) {
                if (p->pools[i]->fd >= 0)
                        close(p->pools[i]->fd);
                free(p->pools[i]);
        }
        free(p->pools);
        free(p->resv);
        free(p->stock);
        journal_sync_reset(&p->jsync);
        pthread_cond_destroy(&p->changed);
        pthread_cond_destroy(&p->kick);
        pthread_mutex_destroy(&p->admit_lock);
        pthread_mutex_destroy(&p->save_lock);
        pthread_mutex_destroy(&p->observer_lock);
        pthread_mutex_destroy(&p->lock);
        pthread_mutex_destroy(&p->done_lock);
        for (size_t i = 0; i < TOPO_MAX_PAGE_SIZES; i++)
                free(p->mount_dirs[i]);
        free(p->state_dir);
        free(p->boot_id_path);
        free(p->proc_root);
        free(p);
}
