/* pools_recycle: released pools back into the stock, zeroed in place.
 *
 * When a ready pool is released (DELETE, TTL, its owner exiting, the
 * unmapped sweep) and the stock target of its (node, page size, size) is
 * short, its file is not removed: in one saved step the pool leaves the
 * registry's pools (its name is free at once) and the file, renamed to a
 * fresh stock name, stays as a "dirty" stock row.  Its pages never go back
 * to the kernel.
 *
 * The recycle thread ("hpw-recycle", below) then looks, every
 * recycle_check_ms while a dirty file waits, whether anything still holds
 * it.  A mapped file is never touched: it is a live VM's memory.  Once
 * nobody holds it, and only if it is still the file we renamed at its size
 * with every page present (zeroing through a hole would take a fresh page
 * from the kernel), the row is saved as "recycling" before any byte is
 * written, and a JOB_ZERO engine job at low priority zeroes it on the
 * node's pinned workers with non-temporal stores.  When the job is done
 * (the upkeep thread collects it) the row is saved as "stock", and only
 * then can it be handed out.
 *
 * The security invariant this keeps: a file handed to a VM was either
 * freshly populated by the kernel or fully zeroed by a recycle the journal
 * records as complete.  Hence: a failed or cancelled zero job removes the
 * file; a save of the completion that fails removes it too; at start a
 * "recycling" row is zeroed again from the start and a "dirty" one waits
 * for no mapper again (pools_recover.c), neither is ever handed out.
 *
 * Why a hand-out asks no process anything (docs/ARCHITECTURE.md, Holder
 * check): a released file is made mode 0600 first (no new unprivileged
 * open), then renamed into the stock directory (pools.h POOLS_STOCK_DIR,
 * mode 0700: no other process can resolve a name in it, not even for an
 * O_PATH descriptor).  From then on no process but root's can take a new
 * descriptor of it; what was taken before is what the recycle thread looks
 * for, once: its write lease (refused while another open file of it
 * exists, a mapping's included, in any process), one link, and then every
 * process's descriptors (O_PATH ones, which no lease sees).  A holder
 * means "wait"; a second link means the file is discarded (another name
 * reaches its pages: it is never zeroed into the stock and handed out).
 * That scan costs what the host's descriptors cost to read, which is why
 * it runs here, on a thread of its own, and never on a request's path. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "owner.h"
#include "pools_internal.h"
#include "util.h"

/* ---- release: a pool becomes a dirty stock row ---- */

/* The record of POOL's file as a dirty stock row named NAME (R: its pool
 * record).  Nothing of the pool it was stays: no owner, no TTL. */
static void dirty_record(const struct pool_record *r, const char *name, struct pool_record *ret)
{
        *ret = (struct pool_record){
                .node = r->node,
                .page_size = r->page_size,
                .size_bytes = r->size_bytes,
                .state = r->state,
        };
        snprintf(ret->name, sizeof(ret->name), "%s", name);
        ret->created_at = ret->started_at = pools_now_unix();
}

int pools_release_pool(struct pools *p, struct pool *pool, enum pool_release why, bool recycle)
{
        char old_name[POOL_NAME_MAX + 1], name[POOL_NAME_MAX + 1], path[POOL_PATH_MAX];
        const char *dir = pools_mount_dir(p, pool->rec.page_size);
        struct pool_record next;
        bool keep = false;
        int r;

        /* First of all: no new open of the file can start (a holder that
         * opened it before is what the checks before zeroing look for). */
        pools_file_make_private(pool->path);
        snprintf(old_name, sizeof(old_name), "%s", pool->rec.name);
        /* By hand: reg.lock is dropped before the save or the removal, which take it. */
        pools_lock(&p->reg.lock);
        if (recycle && why != RELEASE_NONE && dir && pool->rec.state == POOL_READY && !pool->job &&
            pools_stock_deficit(p, pool->rec.node, pool->rec.page_size, pool->rec.size_bytes) > 0) {
                do
                        snprintf(name, sizeof(name), "%cn%d-%" PRIu64 "k-r%u", POOL_STOCK_PREFIX,
                                 pool->rec.node, pool->rec.page_size / 1024, p->recycle.seq++);
                while (pools_find(p, name));
                dirty_record(&pool->rec, name, &next);
                keep = pool_transition(&next, POOL_DIRTY, NULL, NULL) == 0;
                /* Counted by the stock from here on (count_rows sees the
                 * pending record), so a second release cannot take the same
                 * place in the target. */
                if (keep) {
                        pool->pending = &next;
                        pools_mark_changed(pool);
                }
        }
        pools_unlock(&p->reg.lock);
        if (!keep) {
                r = pools_remove(p, pool, why);
                if (r == -EAGAIN)
                        pools_file_make_public(p, pool->path, &pool->rec);     /* it stays as it was */
                return r;
        }

        r = pools_save(p);
        if (r < 0) {
                /* By hand: reg.lock is dropped before the file is made public again. */
                pools_lock(&p->reg.lock);
                pool->pending = NULL;
                pools_mark_changed(pool);
                pthread_cond_broadcast(&p->reg.changed);
                pools_unlock(&p->reg.lock);
                log_err("pools: cannot save the release of pool %s: %s; it stays as it was", old_name,
                        strerror(-r));
                pools_file_make_public(p, pool->path, &pool->rec);
                return -EAGAIN;
        }
        /* Saved: the journal knows the file only as the dirty row.  A crash
         * before the rename leaves that row without its file (dropped at
         * start) and the pool's file unrecorded (an orphan, removed unless
         * mapped): nothing leaks, nothing dirty is handed out. */
        /* Into the stock directory, where no other process can take a new
         * descriptor of it: what holds it now is all that ever will. */
        if (pools_path_of(p, pool->rec.page_size, name, path, sizeof(path)) < 0 || rename(pool->path, path) < 0) {
                /* The dirty row would name a file that is not there: the
                 * pool takes its own record back and the release goes on
                 * without recycling.  Should the file not go either (a
                 * read-only mount), pools_remove keeps the pool as it was
                 * and the release fails; nothing is journalled without its
                 * file and the name stays the pool's. */
                int err = errno;

                /* By hand: reg.lock is dropped before the removal, which takes it. */
                pools_lock(&p->reg.lock);
                pool->pending = NULL;
                pools_mark_changed(pool);
                pthread_cond_broadcast(&p->reg.changed);
                pools_unlock(&p->reg.lock);
                log_warn("pools: cannot rename %s to keep it for recycling: %s; releasing it without recycling",
                         old_name, strerror(err));
                return pools_remove(p, pool, why);
        }

        /* By hand: reg.lock is dropped before the owner watch and the observer are told. */
        pools_lock(&p->reg.lock);
        pools_apply_rec(p, pool, &next);
        pool->holder_scan_clear = false;
        pool->pending = NULL;
        pool->release_due = RELEASE_NONE;
        pool->retry_at = 0;
        pool->unmapped_since = 0;
        pool->file_check_due = false;
        pool->have_last = false;
        pool->recycle_wait_logged = false;
        snprintf(pool->path, sizeof(pool->path), "%s", path);
        pools_count_release(p, why);
        p->reg.stats.stock_recycle_kept++;
        pthread_cond_broadcast(&p->reg.changed);
        pools_unlock(&p->reg.lock);
        owner_watch_remove(p->owners, old_name);
        pools_notify(p, old_name);
        log_info("pools: pool %s released; its file is kept as stock file %s, to be zeroed once no process maps it",
                 old_name, name);
        pools_release(p, pool);
        /* Only now that it is free: a look before would skip it. */
        pools_recycle_kick(p);
        return 0;
}

/* ---- the upkeep thread: mapped check, then zeroing ---- */

/* A dirty or recycling row whose file must not be zeroed (changed, holes,
 * unreadable): remove it; a path cleared by the caller (the file there is
 * not ours) drops only the row and leaves the file.  POOL busy. */
static void discard(struct pools *p, struct pool *pool, const char *why)
{
        if (pool->path[0])
                log_warn("pools: stock file %s is not recycled: %s; removing it", pool->rec.name, why);
        else
                log_warn("pools: stock file %s is not recycled: %s; dropping its record and leaving the file "
                         "there, which is not the daemon's", pool->rec.name, why);
        /* By hand: reg.lock is dropped before the removal, which takes it. */
        pools_lock(&p->reg.lock);
        p->reg.stats.stock_recycle_discarded++;
        pools_unlock(&p->reg.lock);
        if (pools_remove(p, pool, RELEASE_NONE) < 0)
                pools_release(p, pool);
}

/* No process maps POOL's file (dirty, or recycling without a job): check
 * the file, save "recycling" (if dirty), start the zero job.  POOL busy. */
static void start_zeroing(struct pools *p, struct pool *pool)
{
        char detail[POOL_ERROR_DETAIL_MAX];
        struct pool_record next = pool->rec;
        struct stat st;
        bool ours;
        int fd, r;

        if (pools_file_changed(pool->path, pool->file_dev, pool->file_ino, &pool->rec, detail, sizeof(detail),
                               &ours)) {
                if (!ours)
                        pool->path[0] = '\0'; /* not ours to unlink */
                discard(p, pool, detail);
                return;
        }
        fd = open(pool->path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                snprintf(detail, sizeof(detail), "opening its file: %s", strerror(errno));
                if (fd >= 0)
                        close(fd);
                discard(p, pool, detail);
                return;
        }
        if (!pool->file_ino || st.st_dev != pool->file_dev || st.st_ino != pool->file_ino) {
                /* Replaced since the mapped check looked at our inode. */
                close(fd);
                pool->path[0] = '\0';
                discard(p, pool, "its file was replaced by another file");
                return;
        }
        if ((uint64_t)st.st_blocks * 512 < pool->rec.size_bytes) {
                /* Its VM gave pages back (balloon, discard): a hole would
                 * be a fresh page taken while zeroing; not worth it. */
                close(fd);
                snprintf(detail, sizeof(detail), "its file holds %" PRIu64 " of %" PRIu64 " bytes",
                         (uint64_t)st.st_blocks * 512, pool->rec.size_bytes);
                discard(p, pool, detail);
                return;
        }
        /* A file of a release from before files were made private. */
        (void)pools_file_private_fd(fd);
        /* The holder scan found no descriptor of it (nobody_holds, below);
         * what is left to ask costs two syscalls: no other open file (a
         * root process's, or a mapping's), one link. */
        r = pools_file_held(fd, detail, sizeof(detail));
        if (r == -EMLINK) {
                /* Another name reaches its pages: never zeroed into the
                 * stock (whoever made the link keeps what it holds). */
                close(fd);
                discard(p, pool, detail);
                return;
        }
        if (r != 0) {
                close(fd);
                if (!pool->recycle_wait_logged)
                        log_info("pools: stock file %s is not recycled yet: %s; it is recycled once none "
                                 "holds it", pool->rec.name, detail);
                pool->recycle_wait_logged = true;
                pools_release(p, pool);
                return;
        }
        if (next.state == POOL_DIRTY) {
                /* Saved before any byte is written: a crash from here on
                 * finds "recycling" and zeroes it again, never hands it out. */
                (void)pool_transition(&next, POOL_RECYCLING, NULL, NULL);
                /* Applied only once saved: a step of the recycle that is
                 * not saved never happened. */
                r = pools_save_record(p, pool, &next, false);
                if (r < 0) {
                        close(fd);
                        log_err("pools: cannot save the recycle of stock file %s: %s; it waits", next.name,
                                strerror(-r));
                        pools_release(p, pool);
                        return;
                }
        } else {
                POOLS_LOCKED(&p->reg.lock);
                (void)pool_transition(&pool->rec, POOL_RECYCLING, NULL, NULL);
                pools_mark_changed(pool);
        }
        pool->fd = fd;
        pool->job_offset = 0;
        pool->present_at_start = pool->rec.size_bytes;
        r = pools_start_job(p, pool);
        if (r < 0) {
                close(fd);
                pool->fd = -1;
                snprintf(detail, sizeof(detail), "starting its zero job: %s", strerror(-r));
                discard(p, pool, detail);
                return;
        }
        log_info("pools: recycling stock file %s: zeroing %" PRIu64 " bytes on node %d", pool->rec.name,
                 pool->rec.size_bytes, pool->rec.node);
        pools_release(p, pool);
        /* A job that ended while the row was still busy here was skipped
         * by the upkeep thread, which collects it: look again now. */
        pools_kick(p);
}

struct waiting {
        char name[POOL_NAME_MAX + 1];
        char path[POOL_PATH_MAX];
        enum pool_state state;
        dev_t dev;
        ino_t ino;
        bool clear;             /* its holder scan found nobody */
};

/* Rows waiting to be zeroed: dirty ones, and recycling ones without a job
 * (interrupted by a restart or a failed save).  *RET_BUSY: some were held
 * by another thread (look again later). */
static size_t collect_waiting(struct pools *p, struct waiting **ret, bool *ret_busy)
{
        struct waiting *w = NULL;
        size_t n = 0;

        POOLS_LOCKED(&p->reg.lock);
        p->recycle.due = false;
        *ret_busy = false;
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                const struct pool *o = p->reg.pools[i];
                if (!(o->rec.state == POOL_DIRTY || (o->rec.state == POOL_RECYCLING && !o->job)))
                        continue;
                if (o->hold != POOL_FREE) {
                        *ret_busy |= o->hold != POOL_REMOVING;
                        continue;
                }
                if (!w && !(w = calloc(p->reg.n_pools, sizeof(*w))))
                        break;
                snprintf(w[n].name, sizeof(w[n].name), "%s", o->rec.name);
                snprintf(w[n].path, sizeof(w[n].path), "%s", o->path);
                w[n].state = o->rec.state;
                w[n].dev = o->file_dev;
                w[n].ino = o->file_ino;
                w[n].clear = o->holder_scan_clear;
                n++;
        }
        if (!w)
                n = 0;
        *ret = w;
        return n;
}

/* Say once per row why it waits. */
static void say_waits(struct pools *p, const char *name, const char *why)
{
        struct pool *pool;
        bool said = true;

        /* By hand: reg.lock is dropped before the log line. */
        pools_lock(&p->reg.lock);
        pool = pools_find(p, name);
        if (pool) {
                said = pool->recycle_wait_logged;
                pool->recycle_wait_logged = true;
        }
        pools_unlock(&p->reg.lock);
        if (!said)
                log_info("pools: stock file %s is not recycled yet: %s; it is recycled once none holds it", name,
                         why);
}

/* W's file, in the stock directory since its release: does another open
 * file, another name or any process's descriptor reach it?  The scan
 * reads every process's descriptors (tens of milliseconds among a few
 * hundred VMs), holding no lock and no row: a descriptor it does not find
 * cannot appear later (nothing but the daemon can resolve a name in the
 * stock directory), so its answer stays true, and the row is marked so it
 * is never scanned again.  True when the row may be zeroed now (or has a
 * second link, which start_zeroing discards). */
static bool nobody_holds(struct pools *p, const struct waiting *w)
{
        char detail[POOL_ERROR_DETAIL_MAX];
        _cleanup_close_ int fd = -1;
        struct pool *pool;
        unsigned looked = 0;
        struct stat st;
        uint64_t t0;
        int r;

        if (w->clear)
                return true;
        fd = open(w->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != w->dev || st.st_ino != w->ino)
                return true;    /* gone or replaced: start_zeroing says so and discards it */
        r = pools_file_held(fd, detail, sizeof(detail));
        if (r == -EMLINK)
                return true;
        if (r != 0) {
                say_waits(p, w->name, detail);
                return false;
        }
        t0 = now_mono_ns();
        r = pools_file_scan_holders(p, fd, detail, sizeof(detail), &looked);
        /* By hand: reg.lock is dropped before say_waits, which takes it. */
        pools_lock(&p->reg.lock);
        p->reg.stats.stock_holder_scans++;
        p->reg.stats.stock_holder_scan_seconds_sum += (double)(now_mono_ns() - t0) / (double)NS_PER_SEC;
        pool = pools_find(p, w->name);
        if (r == 0 && pool && pool->file_dev == w->dev && pool->file_ino == w->ino)
                pool->holder_scan_clear = true;
        pools_unlock(&p->reg.lock);
        if (r != 0) {
                say_waits(p, w->name, detail);
                return false;
        }
        log_debug("pools: stock file %s: no process holds it (%u processes looked into, %.1f ms)", w->name,
                  looked, (double)(now_mono_ns() - t0) / 1e6);
        return true;
}

/* One look at the rows waiting to be zeroed, when one is due (a release,
 * a start) or the last look left some waiting. */
static void recycle_look(struct pools *p)
{
        _cleanup_free_ struct waiting *w = NULL;
        uint64_t now = now_mono_ns();
        bool due, busy;
        size_t n;

        /* By hand: reg.lock only to read the flag; the look takes it itself. */
        pools_lock(&p->reg.lock);
        due = p->recycle.due;
        pools_unlock(&p->reg.lock);
        if (!due && (!p->recycle.next_ns || now < p->recycle.next_ns))
                return;
        p->recycle.next_ns = 0;
        n = collect_waiting(p, &w, &busy);
        /* Look again later whatever happens now: a held file waits, and a
         * row that was busy is looked at then. */
        if (n || busy)
                p->recycle.next_ns = now + p->recycle.interval_ns;
        for (size_t i = 0; i < n; i++) {
                struct pool *pool;

                if (!nobody_holds(p, &w[i]))
                        continue;
                /* By hand: reg.lock is dropped before the zeroing, which opens, saves and submits. */
                pools_lock(&p->reg.lock);
                pool = pools_find(p, w[i].name);
                if (pool && (pool->hold != POOL_FREE || pool->rec.state != w[i].state || pool->job))
                        pool = NULL;
                if (pool)
                        pools_set_hold(pool, POOL_BUSY);
                pools_unlock(&p->reg.lock);
                if (pool)
                        start_zeroing(p, pool);
        }
}

/* ---- the recycle thread ---- */

#define RECYCLE_THREAD_NAME "hpw-recycle"

static void *recycle_thread(void *arg)
{
        struct pools *p = arg;

        pthread_setname_np(pthread_self(), RECYCLE_THREAD_NAME);
        for (;;) {
                recycle_look(p);
                POOLS_LOCKED(&p->reg.lock); /* to the end of each turn; the waits give it up */
                if (!p->recycle.due && !p->recycle.stopping) {
                        if (p->recycle.next_ns) {
                                struct timespec ts = { .tv_sec = (time_t)(p->recycle.next_ns / NS_PER_SEC),
                                                       .tv_nsec = (long)(p->recycle.next_ns % NS_PER_SEC) };
                                pools_cond_timedwait(&p->recycle.kick, &p->reg.lock, &ts);
                        } else {
                                pools_cond_wait(&p->recycle.kick, &p->reg.lock);
                        }
                }
                if (p->recycle.stopping)
                        return NULL;
        }
}

int pools_recycle_start(struct pools *p)
{
        pthread_condattr_t ca;
        int r;

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->recycle.kick, &ca);
        pthread_condattr_destroy(&ca);
        /* Started under reg.lock: a kick from another thread reads it. */
        /* By hand: reg.lock is dropped before a failed start's condition variable is destroyed. */
        pools_lock(&p->reg.lock);
        r = -pthread_create(&p->recycle.thread, NULL, recycle_thread, p);
        p->recycle.started = r == 0;
        pools_unlock(&p->reg.lock);
        if (r < 0)
                pthread_cond_destroy(&p->recycle.kick);
        return r;
}

void pools_recycle_stop(struct pools *p)
{
        if (!p->recycle.started)
                return;
        /* By hand: reg.lock is dropped before the join (the thread takes it to stop). */
        pools_lock(&p->reg.lock);
        p->recycle.stopping = true;
        pthread_cond_signal(&p->recycle.kick);
        pools_unlock(&p->reg.lock);
        pthread_join(p->recycle.thread, NULL);
        /* By hand: reg.lock is dropped before the condition variable is destroyed. */
        pools_lock(&p->reg.lock);
        p->recycle.started = false;
        pools_unlock(&p->reg.lock);
        pthread_cond_destroy(&p->recycle.kick);
}

void pools_recycle_kick(struct pools *p)
{
        POOLS_LOCKED(&p->reg.lock);
        p->recycle.due = true;
        if (p->recycle.started)
                pthread_cond_signal(&p->recycle.kick);
}

/* ---- completion ---- */

bool pools_recycle_done(struct pools *p, struct pool *pool, const struct pool_record *next, bool shutdown)
{
        int r = pools_save_record(p, pool, next, false);

        if (r == 0) {
                log_info("pools: stock file %s is recycled (%" PRIu64 " bytes zeroed); it joins the stock",
                         next->name, next->size_bytes);
                pools_notify(p, next->name);
                pools_kick(p);
                return false;
        }
        if (shutdown) {
                /* Still "recycling" in the journal: zeroed again at start. */
                log_err("pools: cannot save the recycle of stock file %s: %s", next->name, strerror(-r));
                return false;
        }
        log_err("pools: cannot save that stock file %s is recycled: %s; removing it (an unsaved recycle is "
                "never handed out)", next->name, strerror(-r));
        /* By hand: reg.lock is dropped before the removal, which takes it. */
        pools_lock(&p->reg.lock);
        p->reg.stats.stock_recycle_discarded++;
        p->reg.stats.stock_recycled--;
        p->reg.stats.stock_recycled_bytes -= next->size_bytes;
        pools_unlock(&p->reg.lock);
        return pools_remove(p, pool, RELEASE_NONE) == 0;
}
