/* pools_upkeep: the upkeep thread.
 *
 * When a pool's job ends, on_done (pools_jobs.c) — in an engine thread that
 * must not block — only marks it done and kicks this thread, which does the
 * slow follow-up: close, unlink on failure, job_free, the state change and
 * the save.  The same thread releases pools: ready ones whose TTL ran out,
 * claimed ones whose owner process exited (the owner watch, owner.c, marks
 * them and kicks it), and, when asked to, claimed ones that no process
 * mapped for a while (a sweep over /proc, every unmapped_sweep_ms); a
 * released pool whose stock target is short is kept for recycling instead
 * (pools_recycle.c, whose own thread checks the dirty files for holders
 * and starts zeroing them; this one collects the zero jobs); and it
 * refills the stock (pools_stock.c).  It sleeps
 * on a condition variable until the next expiry or sweep or until something
 * kicks it, never polling. */
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

/* A TTL release whose unlink failed waits this long before it is tried
 * again, so it neither spins nor starves other work. */
#define POOLS_RELEASE_RETRY_SECONDS 5

/* pthread_setname_np's limit is 15 characters. */
#define UPKEEP_THREAD_NAME "hpw-pool-upkeep"

static bool job_is_done(struct pools *p, struct pool *pool)
{
        POOLS_LOCKED(&p->wake.lock);
        return pool->job_done;
}

/* What became of a pool's file while its job ran (pools_file_changed). */
struct file_change {
        bool changed, ours;
        char detail[POOL_ERROR_DETAIL_MAX];
};

/* The record POOL should get for a job that ended as ST (lock held); updates
 * the counters.  *ret_unlink says whether the file must go.  At shutdown a
 * cancelled job stays warming, to resume at the next start.  A file that
 * someone removed, replaced or truncated while the job ran fails the pool
 * as file-changed, whatever the job made of it (a truncated file faults
 * like a lack of hugepages, a removed one warms fine). */
static void job_outcome(struct pools *p, struct pool *pool, const struct job_status *st, bool shutdown,
                        const struct file_change *fc, struct pool_record *next, bool *ret_unlink)
{
        pools_assert_held(&p->reg.lock);
        *next = pool->rec;
        *ret_unlink = false;
        next->bytes_done = st->bytes_done;
        if (pool_state_is_stock(pool->rec.state)) {
                /* A refill or a recycle: done joins the stock (a recycle
                 * only once that is saved: pools_recycle_done); anything
                 * else (also a file someone changed) removes the file (the
                 * caller drops the row), except a cancel at shutdown,
                 * which resumes (or zeroes again) at the next start. */
                bool recycle = pool->rec.state == POOL_RECYCLING;
                if (st->state == JOB_DONE && !fc->changed && pool_transition(next, POOL_STOCK, NULL, NULL) == 0) {
                        double secs = st->finished_ns > st->started_ns
                                              ? (double)(st->finished_ns - st->started_ns) / 1e9 : 0;
                        size_t b = histogram_bucket(METRICS_DURATION_BOUNDS, METRICS_DURATION_BUCKETS, secs);
                        next->bytes_done = next->size_bytes;
                        if (recycle) {
                                p->reg.stats.stock_recycled++;
                                p->reg.stats.stock_recycled_bytes += next->size_bytes;
                                p->reg.stats.stock_recycle_seconds_sum += secs;
                                p->reg.stats.stock_recycle_seconds_buckets[b]++;
                        } else {
                                p->reg.stats.stock_refills++;
                                p->reg.stats.stock_refill_bytes += next->size_bytes;
                                p->reg.stats.stock_refill_seconds_sum += secs;
                                p->reg.stats.stock_refill_seconds_buckets[b]++;
                        }
                } else if (st->state != JOB_RUNNING && (st->state != JOB_CANCELLED || !shutdown)) {
                        *ret_unlink = true;
                        p->reg.stats.stock_recycle_discarded += recycle;
                }
                return;
        }
        if (fc->changed && (st->state == JOB_DONE || st->state == JOB_FAILED)) {
                p->reg.stats.jobs_failed++;
                *ret_unlink = fc->ours;
                (void)pool_transition(next, POOL_FAILED, "file-changed", "%s while it was warming",
                                      fc->detail);
                return;
        }
        switch (st->state) {
        case JOB_DONE:
                if (pool_transition(next, POOL_READY, NULL, NULL) < 0)
                        break;
                next->bytes_done = next->size_bytes;
                p->reg.stats.jobs_ready++;
                p->reg.stats.bytes_warmed_total += next->size_bytes;
                if (st->finished_ns > st->started_ns) {
                        double secs = (double)(st->finished_ns - st->started_ns) / 1e9;
                        p->reg.stats.job_seconds_sum += secs;
                        p->reg.stats.job_seconds_count++;
                        p->reg.stats.job_seconds_buckets[histogram_bucket(METRICS_DURATION_BOUNDS,
                                                                      METRICS_DURATION_BUCKETS, secs)]++;
                }
                break;
        case JOB_FAILED:
                p->reg.stats.jobs_failed++;
                *ret_unlink = true;
                (void)pool_transition(next, POOL_FAILED, engine_error_slug(-st->error),
                                      "populating byte offset %" PRIu64 " failed: %s (%s)", st->error_offset,
                                      engine_error_cause(-st->error), strerror(-st->error));
                break;
        case JOB_CANCELLED:
                p->reg.stats.jobs_cancelled++;
                if (shutdown)
                        break;
                *ret_unlink = true;
                (void)pool_transition(next, POOL_CANCELLED, "cancelled", "%s",
                                      "the warm job was cancelled by the engine");
                break;
        case JOB_RUNNING:
                break;
        }
}

/* Turn POOL's finished job into its new state.  POOL is busy, `reg.lock` not held. */
bool pools_finish_job(struct pools *p, struct pool *pool, bool shutdown)
{
        struct pool_record next;
        struct job_status st;
        struct job *job;
        bool unlink_file;
        int r;

        struct file_change fc = {0};

        /* By hand: reg.lock is dropped before the file is looked at. */
        pools_lock(&p->reg.lock);
        job = pool->job;
        if (job)
                job_get_status(job, &st);
        pools_unlock(&p->reg.lock);
        if (!job)
                return false;
        /* POOL is busy: its job and file stay as they are until we are done. */
        if (st.state == JOB_DONE || st.state == JOB_FAILED)
                fc.changed = pools_file_changed(pool->path, pool->file_dev, pool->file_ino, &pool->rec,
                                                fc.detail, sizeof(fc.detail), &fc.ours);
        /* By hand: reg.lock is dropped before the observer is told and the job freed. */
        pools_lock(&p->reg.lock);
        pool->last = st;
        pool->have_last = true;
        pool->job = NULL;
        job_outcome(p, pool, &st, shutdown, &fc, &next, &unlink_file);
        pools_unlock(&p->reg.lock);

        if (next.state == POOL_READY) {
                /* The one change shown before it is saved: a crash in between
                 * leaves "warming" in the journal, and the restart resumes the
                 * job, which finds every page present and finishes at once.
                 * Nothing is lost, and the scheduler waiting for "ready" does
                 * not pay for two fsyncs (0.7 ms on an idle ext4, far more on
                 * a busy disk).  Shown before job_free too, which waits for
                 * the engine to unmap the pool (1.5 ms for 4 GiB): the pool
                 * stays held until that is done, so nobody truncates it
                 * while the engine still maps it. */
                /* By hand: reg.lock is dropped before the observer is told. */
                pools_lock(&p->reg.lock);
                pools_apply_rec(p, pool, &next);
                pthread_cond_broadcast(&p->reg.changed);
                pools_unlock(&p->reg.lock);
                pools_notify(p, next.name);
        }
        job_free(job);
        if (pool->fd >= 0) {
                close(pool->fd);
                pool->fd = -1;
        }
        pool->job_offset = 0;
        if (pool->rec.state == POOL_RECYCLING && next.state == POOL_STOCK)
                return pools_recycle_done(p, pool, &next, shutdown);
        if (unlink_file && pool_state_is_stock(next.state)) {
                log_warn("pools: %s of stock file %s %s%s; removing it",
                         next.state == POOL_RECYCLING ? "recycle" : "refill", next.name,
                         fc.changed ? "found its file changed: " : "",
                         fc.changed ? fc.detail
                                    : st.state == JOB_FAILED ? engine_error_cause(-st.error) : "was cancelled");
                if (shutdown) {
                        /* Not now: the next start finds the file gone and
                         * drops the row. */
                        if (unlink(pool->path) < 0 && errno != ENOENT)
                                log_err("pools: cannot remove %s: %m", pool->path);
                        return false;
                }
                if (pools_remove(p, pool, RELEASE_NONE) == 0)
                        return true;
                return false;
        }
        if (unlink_file && unlink(pool->path) < 0 && errno != ENOENT)
                log_err("pools: cannot remove %s of failed pool: %m", pool->path);
        if (next.state == POOL_FAILED)
                log_warn("pools: pool %s failed: %s", pool->rec.name, next.error_detail);
        r = pools_commit(p, pool, &next);
        if (r < 0)
                log_err("pools: saving state for pool %s: %s", pool->rec.name, strerror(-r));
        return false;
}

static const char *release_reason(enum pool_release why)
{
        switch (why) {
        case RELEASE_OWNER_EXITED:
                return "its owner process exited";
        case RELEASE_UNMAPPED:
                return "no process mapped it for --release-unmapped-after";
        case RELEASE_TTL:
        case RELEASE_DELETE:
        case RELEASE_NONE:
                break;
        }
        return "it was not claimed within its TTL";
}

/* A GET saw POOL's file changed: look again and, if so, fail it (saved
 * before shown, as every change).  Its file is removed only if it is still
 * ours and no VM took the pool.  POOL is busy. */
static void fail_changed_file(struct pools *p, struct pool *pool)
{
        struct pool_record next = pool->rec;
        char detail[POOL_ERROR_DETAIL_MAX];
        bool ours;
        int r;

        if (next.state != POOL_READY ||
            !pools_file_changed(pool->path, pool->file_dev, pool->file_ino, &next, detail, sizeof(detail),
                                &ours))
                return;
        if (pool_transition(&next, POOL_FAILED, "file-changed", "%s after it was ready", detail) < 0)
                return;
        log_warn("pools: pool %s failed: %s", next.name, next.error_detail);
        if (ours && !next.claimed && unlink(pool->path) < 0 && errno != ENOENT)
                log_err("pools: cannot remove %s of failed pool: %m", pool->path);
        r = pools_commit(p, pool, &next);
        if (r < 0)
                log_err("pools: saving state for pool %s: %s", next.name, strerror(-r));
}

/* Handle one finished job or one pool due for release; false when there is
 * none.  Finished jobs come first, and a pool whose release failed waits
 * for its retry_at, so one stuck pool cannot starve the others.
 * *next_expiry gets the earliest expiry (or retry) still ahead (0 = none).
 * All on CLOCK_BOOTTIME: setting the wall clock never moves an expiry. */
static bool upkeep_one(struct pools *p, uint64_t *next_expiry)
{
        uint64_t now = now_boot_ns();
        enum pool_release why = RELEASE_TTL;
        struct pool *pool = NULL;
        bool release = false, check = false;

        *next_expiry = 0;
        /* By hand: reg.lock is dropped before the chosen pool is worked on. */
        pools_lock(&p->reg.lock);
        /* One walk for the three kinds, in their order: the first finished
         * job, else the first file to re-check, else the first pool due
         * for release (a walk per kind cost three passes over every row
         * after each kick). */
        struct pool *done = NULL, *recheck = NULL, *due = NULL;
        for (size_t i = 0; i < p->reg.n_pools && !done; i++) {
                struct pool *o = p->reg.pools[i];
                uint64_t exp;

                if (o->hold != POOL_FREE)
                        continue;
                if (o->job && job_is_done(p, o)) {
                        done = o;
                        break;
                }
                if (recheck || due) {
                        continue;       /* only a finished job comes before them */
                }
                if (o->file_check_due) {
                        recheck = o;
                        continue;
                }
                exp = o->release_due != RELEASE_NONE ? 1 : pools_rec_expires_boot_ns(&o->rec);
                if (exp && o->retry_at > exp)
                        exp = o->retry_at;
                if (exp && exp <= now)
                        due = o;
                else if (exp && (!*next_expiry || exp < *next_expiry))
                        *next_expiry = exp;
        }
        if (done) {
                pool = done;
        } else if (recheck) {
                recheck->file_check_due = false;
                pool = recheck;
                check = true;
        } else if (due) {
                pool = due;
                release = true;
                if (due->release_due != RELEASE_NONE)
                        why = due->release_due;
        }
        if (pool)
                pools_set_hold(pool, POOL_BUSY);
        pools_unlock(&p->reg.lock);
        if (!pool)
                return false;

        if (release) {
                log_notice("pools: releasing pool %s (%" PRIu64 " bytes on node %d): %s", pool->rec.name,
                           pool->rec.size_bytes, pool->rec.node, release_reason(why));
                if (pools_release_pool(p, pool, why, true) == 0)
                        return true;
                /* Could not unlink: others first, this one again later. */
                /* By hand: reg.lock is dropped before the release, which takes it. */
                pools_lock(&p->reg.lock);
                pool->retry_at = now + POOLS_RELEASE_RETRY_SECONDS * NS_PER_SEC;
                pools_unlock(&p->reg.lock);
                pools_release(p, pool);
                return true;
        }
        if (check) {
                fail_changed_file(p, pool);
                pools_release(p, pool);
        } else if (!pools_finish_job(p, pool, false)) {
                pools_release(p, pool);
        }
        return true;
}

/* ---- the unmapped sweep ---- */

struct sweep_item {
        char name[POOL_NAME_MAX + 1];
        char path[POOL_PATH_MAX];
};

/* Claimed pools without an owner pid: is any process still mapping their
 * file?  Sets or clears unmapped_since, and marks those unmapped for
 * release_unmapped_after (when set) for release. */
static void sweep_unmapped(struct pools *p)
{
        _cleanup_free_ struct sweep_item *items = NULL;
        _cleanup_free_ struct owner_file *files = NULL;
        size_t n = 0;
        int64_t now = pools_now_unix();
        bool due = false;

        /* By hand: reg.lock is dropped before the files are stat'ed and the maps scanned. */
        pools_lock(&p->reg.lock);
        if (p->reg.n_pools) {
                items = calloc(p->reg.n_pools, sizeof(*items));
                files = calloc(p->reg.n_pools, sizeof(*files));
        }
        for (size_t i = 0; items && files && i < p->reg.n_pools; i++) {
                struct pool *o = p->reg.pools[i];
                if (o->hold == POOL_REMOVING || o->rec.state != POOL_READY || !o->rec.claimed ||
                    o->rec.owner_pid != 0) {
                        o->unmapped_since = 0;
                        continue;
                }
                snprintf(items[n].name, sizeof(items[n].name), "%s", o->rec.name);
                snprintf(items[n].path, sizeof(items[n].path), "%s", o->path);
                n++;
        }
        pools_unlock(&p->reg.lock);
        if (n == 0)
                return;

        for (size_t i = 0; i < n; i++) {
                struct stat st;
                if (stat(items[i].path, &st) < 0) {
                        /* Gone or unreadable: not ours to judge here. */
                        files[i].dev = 0;
                        files[i].ino = 0;
                        continue;
                }
                files[i].dev = st.st_dev;
                files[i].ino = st.st_ino;
        }
        unsigned unreadable;
        int r = owner_scan_mapped(p->proc_root, files, n, &unreadable);
        if (r < 0) {
                log_warn("pools: cannot list processes in %s: %s", p->proc_root, strerror(-r));
                return;
        }
        if (unreadable && !p->upkeep.warned_unreadable) {
                /* Said once: it is how the host is set up, not an event. */
                p->upkeep.warned_unreadable = true;
                log_warn("pools: the mappings of %u processes cannot be read (CAP_SYS_PTRACE is needed "
                         "for other users' processes); a pool only they map is reported unmapped",
                         unreadable);
        }

        /* By hand: reg.lock is dropped before upkeep is kicked. */
        pools_lock(&p->reg.lock);
        for (size_t i = 0; i < n; i++) {
                struct pool *o = pools_find(p, items[i].name);
                bool mapped = files[i].mapped || files[i].ino == 0;

                if (!o || o->rec.state != POOL_READY || !o->rec.claimed || o->rec.owner_pid != 0)
                        continue;
                if (mapped) {
                        o->unmapped_since = 0;
                        continue;
                }
                if (!o->unmapped_since) {
                        o->unmapped_since = now;
                        log_info("pools: claimed pool %s is mapped by no process", o->rec.name);
                }
                if (p->cfg.release_unmapped_after && o->release_due == RELEASE_NONE &&
                    now - o->unmapped_since >= (int64_t)p->cfg.release_unmapped_after) {
                        o->release_due = RELEASE_UNMAPPED;
                        due = true;
                }
        }
        pools_unlock(&p->reg.lock);
        if (due)
                pools_kick(p);
}

/* Collects finished jobs, releases pools that are due and sweeps for
 * unmapped ones, until pools_free. */
/* How often the upkeep thread reads the kernel's process events between
 * holder checks: the socket holds a few thousand events (4 MiB), more
 * than a host forks and exits in this time. */
#define CREDS_DRAIN_INTERVAL_NS (2 * NS_PER_SEC)

static void *upkeep_thread(void *arg)
{
        struct pools *p = arg;

        pthread_setname_np(pthread_self(), UPKEEP_THREAD_NAME);
        p->upkeep.next_sweep_ns = now_mono_ns() + p->upkeep.sweep_interval_ns;
        for (;;) {
                uint64_t next_expiry;

                if (now_mono_ns() >= p->upkeep.next_sweep_ns) {
                        sweep_unmapped(p);
                        p->upkeep.next_sweep_ns = now_mono_ns() + p->upkeep.sweep_interval_ns;
                }
                /* The process events are read at each holder check; read
                 * them between checks too, so a quiet spell does not let
                 * the socket overflow (and the next check read /proc). */
                if (p->creds && now_mono_ns() >= p->upkeep.next_creds_ns) {
                        owner_creds_drain(p->creds);
                        p->upkeep.next_creds_ns = now_mono_ns() + CREDS_DRAIN_INTERVAL_NS;
                }
                while (upkeep_one(p, &next_expiry))
                        ;
                pools_stock_refill(p);
                pools_elastic_upkeep(p);
                /* The condvar runs on CLOCK_MONOTONIC; convert the
                 * boot-clock expiry to a monotonic deadline (the two differ
                 * by time suspended, which only makes us wake early). */
                uint64_t at = p->upkeep.next_sweep_ns;
                if (p->creds && p->upkeep.next_creds_ns < at)
                        at = p->upkeep.next_creds_ns;
                if (p->stock.next_refill_ns && p->stock.next_refill_ns < at)
                        at = p->stock.next_refill_ns;
                if (p->elastic.next_ns && p->elastic.next_ns < at)
                        at = p->elastic.next_ns;
                if (next_expiry) {
                        uint64_t boot = now_boot_ns();
                        uint64_t exp_at = now_mono_ns() + (next_expiry > boot ? next_expiry - boot : 0);
                        if (exp_at < at)
                                at = exp_at;
                }
                struct timespec ts = { .tv_sec = (time_t)(at / NS_PER_SEC), .tv_nsec = (long)(at % NS_PER_SEC) };
                POOLS_LOCKED(&p->wake.lock); /* to the end of each turn; the wait gives it up */
                if (!p->wake.kicked && !p->wake.stopping)
                        pools_cond_timedwait(&p->wake.kick, &p->wake.lock, &ts);
                p->wake.kicked = false;
                if (p->wake.stopping)
                        return NULL;
        }
}

/* The upkeep thread, then the recycle thread (pools_recycle.c). */
int pools_start_upkeep(struct pools *p)
{
        int r = -pthread_create(&p->upkeep.thread, NULL, upkeep_thread, p);

        if (r < 0)
                return r;
        p->upkeep.started = true;
        return pools_recycle_start(p);
}

/* The recycle thread first: it saves and starts jobs, which the upkeep
 * thread collects. */
void pools_stop_upkeep(struct pools *p)
{
        pools_recycle_stop(p);
        if (!p->upkeep.started)
                return;
        /* By hand: wake.lock is dropped before the join (the thread takes it to stop). */
        pools_lock(&p->wake.lock);
        p->wake.stopping = true;
        pthread_cond_signal(&p->wake.kick);
        pools_unlock(&p->wake.lock);
        pthread_join(p->upkeep.thread, NULL);
        p->upkeep.started = false;
}
