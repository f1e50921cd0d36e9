/* pools_recycle: released pools back into the stock, zeroed in place.
 *
 * When a ready pool is released (DELETE, TTL, its owner exiting, the
 * unmapped sweep) and the stock target of its (node, page size, size) is
 * short, its file is not removed: in one saved step the pool leaves the
 * registry's pools (its name is free at once) and the file, renamed to a
 * fresh stock name, stays as a "dirty" stock row.  Its pages never go back
 * to the kernel.
 *
 * The upkeep thread then looks, every recycle_check_ms, whether any process
 * still holds a dirty file (pools_file_held, below).  A mapped file is
 * never touched: it is a live VM's memory.  Once nobody maps
 * it, and only if it is still the file we renamed at its size with every
 * page present (zeroing through a hole would take a fresh page from the
 * kernel), the row is saved as "recycling" before any byte is written, and
 * a JOB_ZERO engine job at low priority zeroes it on the node's pinned
 * workers with non-temporal stores.  When the job is done the row is saved
 * as "stock", and only then can it be handed out.
 *
 * The security invariant this keeps: a file handed to a VM was either
 * freshly populated by the kernel or fully zeroed by a recycle the journal
 * records as complete.  Hence: a failed or cancelled zero job removes the
 * file; a save of the completion that fails removes it too; at start a
 * "recycling" row is zeroed again from the start and a "dirty" one waits
 * for no mapper again (pools_recover.c), neither is ever handed out.
 *
 * A released file is made mode 0600 before anything else, so no new
 * unprivileged open can start; what was opened before is looked for.  The
 * check before zeroing (pools_file_held, pools_file.c) wants nobody to hold
 * the file: its write lease granted (the kernel refuses it while another
 * open file of the inode exists, a mapping's included, in any process), no
 * O_PATH descriptor in a process that could open it once handed out
 * (owner_creds: the pool group's, by the kernel's process events; where
 * those cannot be had, every process's maps and descriptors are walked),
 * and one link.  A holder means "wait";
 * a second link means the file is discarded (another name reaches its
 * pages: it is never zeroed into the stock and handed out). */
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
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (rename(pool->path, path) < 0) {
                /* The dirty row would name a file that is not there: the
                 * pool takes its own record back and the release goes on
                 * without recycling.  Should the file not go either (a
                 * read-only mount), pools_remove keeps the pool as it was
                 * and the release fails; nothing is journalled without its
                 * file and the name stays the pool's. */
                int err = errno;

                pools_lock(&p->reg.lock);
                pool->pending = NULL;
                pools_mark_changed(pool);
                pthread_cond_broadcast(&p->reg.changed);
                pools_unlock(&p->reg.lock);
                log_warn("pools: cannot rename %s to keep it for recycling: %s; releasing it without recycling",
                         old_name, strerror(err));
                return pools_remove(p, pool, why);
        }

        pools_lock(&p->reg.lock);
        /* Its user's processes could hold an O_PATH descriptor that a
         * hand-out back to that user would let them reopen. */
        pool->have_prev_owner = pool->rec.file_owned;
        pool->prev_owner = (struct owner_access){ pool->rec.file_uid, pool->rec.file_gid, 0600 };
        pools_apply_rec(p, pool, &next);
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
        pools_lock(&p->reg.lock);
        p->recycle.due = true;
        pools_unlock(&p->reg.lock);
        pools_kick(p);
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
        r = pools_file_held(p, fd, true, pool->have_prev_owner ? &pool->prev_owner : NULL, detail,
                            sizeof(detail));
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
                pools_lock(&p->reg.lock);
                (void)pool_transition(&pool->rec, POOL_RECYCLING, NULL, NULL);
                pools_mark_changed(pool);
                pools_unlock(&p->reg.lock);
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
}

struct waiting {
        char name[POOL_NAME_MAX + 1];
        enum pool_state state;
};

/* Rows waiting to be zeroed: dirty ones, and recycling ones without a job
 * (interrupted by a restart or a failed save).  FILES gets their files.
 * *RET_BUSY: some were held by another thread (look again later). */
static size_t collect_waiting(struct pools *p, struct waiting **ret, struct owner_file **ret_files, bool *ret_busy)
{
        struct waiting *w = NULL;
        struct owner_file *f = NULL;
        size_t n = 0;

        pools_lock(&p->reg.lock);
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
                if (!w) {
                        w = calloc(p->reg.n_pools, sizeof(*w));
                        f = calloc(p->reg.n_pools, sizeof(*f));
                        if (!w || !f)
                                break;
                }
                snprintf(w[n].name, sizeof(w[n].name), "%s", o->rec.name);
                w[n].state = o->rec.state;
                f[n].dev = o->file_dev;
                f[n].ino = o->file_ino;
                n++;
        }
        pools_unlock(&p->reg.lock);
        if (!n || !w || !f) {
                free(w);
                free(f);
                w = NULL;
                f = NULL;
                n = 0;
        }
        *ret = w;
        *ret_files = f;
        return n;
}

void pools_recycle_upkeep(struct pools *p)
{
        _cleanup_free_ struct waiting *w = NULL;
        _cleanup_free_ struct owner_file *files = NULL;
        uint64_t now = now_mono_ns();
        unsigned unreadable = 0;
        bool due, busy;
        size_t n;
        int r;

        pools_lock(&p->reg.lock);
        due = p->recycle.due;
        pools_unlock(&p->reg.lock);
        if (!due && (!p->recycle.next_ns || now < p->recycle.next_ns))
                return;
        p->recycle.next_ns = 0;
        n = collect_waiting(p, &w, &files, &busy);
        /* Look again later whatever happens now: a mapped file waits, and a
         * row that was busy is looked at then. */
        if (n || busy)
                p->recycle.next_ns = now + p->recycle.interval_ns;
        if (!n)
                return;
        /* With the index, each file's own check (start_zeroing ->
         * pools_file_held: its lease, its links, the O_PATH descriptors of
         * the processes that could open it) decides, at a cost that does not
         * grow with the host's processes; without it, one walk for all. */
        if (p->creds && strcmp(p->proc_root, "/proc") == 0)
                r = 0;
        else
                r = owner_scan_held(p->proc_root, getpid(), files, n, &unreadable);
        if (r < 0) {
                log_warn("pools: cannot list processes in %s to recycle stock files: %s", p->proc_root,
                         strerror(-r));
                return;
        }
        if (unreadable && !p->recycle.warned_unreadable) {
                p->recycle.warned_unreadable = true;
                log_warn("pools: the mappings of %u processes cannot be read (CAP_SYS_PTRACE is needed for "
                         "other users' processes); a released file only they map would be recycled under them",
                         unreadable);
        }
        for (size_t i = 0; i < n; i++) {
                struct pool *pool;

                pools_lock(&p->reg.lock);
                pool = pools_find(p, w[i].name);
                if (pool && (pool->hold != POOL_FREE || pool->rec.state != w[i].state || pool->job))
                        pool = NULL;
                if (pool && (files[i].mapped || files[i].opened)) {
                        bool said = pool->recycle_wait_logged;
                        pool->recycle_wait_logged = true;
                        pools_unlock(&p->reg.lock);
                        if (!said)
                                log_info("pools: stock file %s is still %s by a process; it is recycled "
                                         "once none holds it", w[i].name,
                                         files[i].mapped ? "mapped" : "held open");
                        continue;
                }
                if (pool)
                        pools_set_hold(pool, POOL_BUSY);
                pools_unlock(&p->reg.lock);
                if (pool)
                        start_zeroing(p, pool);
        }
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
        pools_lock(&p->reg.lock);
        p->reg.stats.stock_recycle_discarded++;
        p->reg.stats.stock_recycled--;
        p->reg.stats.stock_recycled_bytes -= next->size_bytes;
        pools_unlock(&p->reg.lock);
        return pools_remove(p, pool, RELEASE_NONE) == 0;
}
