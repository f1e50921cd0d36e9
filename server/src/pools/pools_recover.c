/* pools_recover: start-up, bringing the journal and the files in line.
 *
 * Order matters: recorded reservations first (pages before the jobs that
 * need them), then each pool record against its file — warming pools resume
 * (populate skips present pages), ready pools whose file holds all its pages
 * (st_blocks) stay ready, claimed ones stay ready whatever their file holds
 * (a VM may map it), records whose file is gone become failed — and last the
 * files no record owns and no process maps are removed (pools_dir.c).  A
 * journal from another boot (boot_id) is dropped, except its reservations,
 * which are re-applied; within the same boot the kernel's counts are
 * adopted instead (another tool may have changed them while we were down),
 * and the drift logged.  A journal that cannot be read stops the start
 * (unless --reset-state moves it aside): starting empty would make every
 * pool file an orphan.
 * Stock rows on their way back (dirty, recycling) are kept but never
 * handed out: they are zeroed (again) from the start once no process maps
 * them (pools_recycle.c).
 * Last, claimed pools bound to an owner process are watched again if that
 * very process (pid and start time) still runs, and marked for release if
 * it is gone or its pid now names another process.
 * Runs inside pools_new, before the upkeep thread exists; only engine
 * callbacks run beside it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "owner.h"
#include "pools_internal.h"
#include "util.h"

/* The pages a file found at start must still get from the node's
 * unreserved free pages to be whole again.  A warm cut off half way
 * (CUT_OFF: its row says warming and the file kept its size) was mapped by
 * its job, shared and reserving over the job's whole range, and hugetlbfs
 * keeps that reservation with the inode after the mapping is gone, until
 * the file is truncated: the pages it still lacks are set aside for it, in
 * resv_hugepages, and admission would count them as another's.  Any other
 * file that lacks pages (a ready one that lost some: punched holes give
 * their reservation back; one never mapped) asks for them. */
static uint64_t resume_need(const struct pool_record *r, uint64_t present, bool cut_off)
{
        if (present >= r->size_bytes)
                return 0;
        return cut_off && present > 0 ? 0 : (r->size_bytes - present) / r->page_size;
}

static int read_boot_id(const char *path, char *buf, size_t len)
{
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return -errno;
        n = fread(buf, 1, len - 1, f);
        fclose(f);
        buf[n] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return n > 0 ? 0 : -EINVAL;
}

/* Within the boot the journal was written in, the kernel kept its counts;
 * if they differ from ours, another tool (kubelet, virsh allocpages, an
 * operator) changed them while we were down: theirs win, and we remember
 * them as ours from now on. */
static void adopt_reservations(struct pools *p)
{
        for (size_t i = 0; i < p->admit.n_resv; i++) {
                struct reservation_record *rv = &p->admit.resv[i];
                struct hp_counts hp;
                int r = topo_read_hugepages(p->cfg.fs, rv->node, rv->page_size, &hp);

                if (r < 0) {
                        log_warn("pools: cannot read node %d %" PRIu64 "-byte page count to check the "
                                 "recorded reservation: %s; keeping %" PRIu64, rv->node, rv->page_size,
                                 strerror(-r), rv->count);
                        continue;
                }
                if (hp.total == rv->count)
                        continue;
                log_notice("pools: node %d, %" PRIu64 "-byte pages: the kernel holds %" PRIu64
                           ", not the %" PRIu64 " recorded; something else changed it since, so it is "
                           "kept and recorded (reservations are re-applied only after a reboot)",
                           rv->node, rv->page_size, hp.total, rv->count);
                rv->count = hp.total;
        }
}

static void reapply_reservations(struct pools *p)
{
        for (size_t i = 0; i < p->admit.n_resv; i++) {
                struct reserve_req rq = {
                        .node = p->admit.resv[i].node,
                        .page_size = p->admit.resv[i].page_size,
                        .count = p->admit.resv[i].count,
                        .allow_partial = true,
                        .floor_bytes = p->cfg.memory_floor,
                };
                struct reserve_result res = {0};
                int r = reserve_apply(p->cfg.fs, &rq, &res);

                pools_count_reservation(p, r, &res);
                if (r == 0 && res.complete)
                        log_info("pools: re-applied reservation: node %d, %" PRIu64 "-byte pages: %" PRIu64,
                                 rq.node, rq.page_size, rq.count);
                else if (r == 0)
                        log_warn("pools: re-applied reservation: node %d, %" PRIu64
                                 "-byte pages: asked %" PRIu64 ", got %" PRIu64,
                                 rq.node, rq.page_size, rq.count, res.achieved);
                else
                        log_warn("pools: re-applying reservation node %d, %" PRIu64
                                 "-byte pages, %" PRIu64 " pages failed: %s",
                                 rq.node, rq.page_size, rq.count, strerror(-r));
        }
}

/* The pool could not be brought back: failed, with why, and said once. */
static void fail_at_start(struct pool *pool, const char *slug, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void fail_at_start(struct pool *pool, const char *slug, const char *fmt, ...)
{
        char detail[POOL_ERROR_DETAIL_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        /* By hand: reg.lock is dropped before the log line. */
        pools_lock(&pool->owner->reg.lock);
        int r = pool_transition(&pool->rec, POOL_FAILED, slug, "%s", detail);
        pools_mark_changed(pool);
        pools_unlock(&pool->owner->reg.lock);
        if (r == 0)
                log_warn("pools: pool %s is failed: %s", pool->rec.name, pool->rec.error_detail);
}

/* Bring one journal record in line with its file (pools_new, single-threaded
 * apart from engine callbacks). */
static void reconcile(struct pools *p, struct pool *pool)
{
        struct pool_record *r = &pool->rec;
        struct stat st;
        int fd;

        if (!pool->path[0]) {
                if (r->state == POOL_WARMING || r->state == POOL_READY)
                        fail_at_start(pool, "no-hugetlbfs", "%s",
                                    "no --hugetlbfs directory is configured for its page size any more");
                return;
        }
        if (r->state == POOL_FAILED || r->state == POOL_CANCELLED) {
                if (unlink(pool->path) == 0)
                        log_notice("pools: removed leftover file of %s pool %s", pool_state_name(r->state),
                                   r->name);
                return;
        }
        fd = open(pool->path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                if (fd >= 0)
                        close(fd);
                fail_at_start(pool, "file-missing", "its file %s was gone at start", pool->path);
                return;
        }
        pool->file_dev = st.st_dev;
        pool->file_ino = st.st_ino;
        uint64_t present = (uint64_t)st.st_blocks * 512;
        if (r->state == POOL_READY && present == r->size_bytes && (uint64_t)st.st_size == r->size_bytes) {
                close(fd);
                return;
        }
        if (r->state == POOL_READY && r->claimed) {
                /* A VM took it and may still map it; fewer pages mean the
                 * guest gave some back (balloon, discard).  Never re-warm,
                 * resize or unlink a file under a running VM. */
                close(fd);
                log_notice("pools: claimed pool %s holds %" PRIu64 " of %" PRIu64
                           " bytes (its VM released some); left as it is",
                           r->name, present, r->size_bytes);
                return;
        }
        bool cut_off = r->state == POOL_WARMING && (uint64_t)st.st_size == r->size_bytes;
        if (r->state == POOL_READY)
                log_warn("pools: ready pool %s holds %" PRIu64 " of %" PRIu64 " bytes; warming it again",
                         r->name, present, r->size_bytes);
        if ((uint64_t)st.st_size != r->size_bytes && ftruncate(fd, (off_t)r->size_bytes) < 0) {
                close(fd);
                unlink(pool->path);
                fail_at_start(pool, "pool-file-error", "%s", "its file could not be resized at start");
                return;
        }
        if (pool_transition(r, POOL_WARMING, NULL, NULL) < 0) {
                close(fd);
                return;
        }
        pool->fd = fd;
        pool->present_at_start = present < r->size_bytes ? present : r->size_bytes;

        /* Pages already in the file are ours; only the rest must be free. */
        struct problem err = {0};
        uint64_t need = resume_need(r, present, cut_off);
        if (pools_admit(p, r->node, r->page_size, need, false, false, NULL, &err) < 0) {
                close(fd);
                pool->fd = -1;
                unlink(pool->path);
                fail_at_start(pool, err.slug ? err.slug : "insufficient-hugepages", "%s", err.detail);
                return;
        }
        int q = pools_start_job(p, pool);
        if (q < 0) {
                close(fd);
                pool->fd = -1;
                unlink(pool->path);
                fail_at_start(pool, "warm-start-failed", "resuming the warm job at start failed: %s",
                            strerror(-q));
                return;
        }
        log_info("pools: resuming warm of pool %s (%" PRIu64 " of %" PRIu64 " bytes present)", r->name,
                 present, r->size_bytes);
}

/* A released pool's file on its way back (dirty, or recycling when the
 * daemon stopped): kept in its state, never handed out; the upkeep thread
 * checks again that no process maps it, then zeroes it from the start (a
 * recycling row's zeroing was not saved as complete, so it never counts).
 * False (the row and its file go) when its file is gone, resized or has
 * holes.  FD is its open file, ST its stat; closed here. */
static bool reconcile_recycle(struct pools *p, struct pool *pool, int fd, const struct stat *st)
{
        const struct pool_record *r = &pool->rec;

        close(fd);
        if ((uint64_t)st->st_size != r->size_bytes || (uint64_t)st->st_blocks * 512 < r->size_bytes) {
                log_notice("pools: %s stock file %s holds %" PRIu64 " of %" PRIu64 " bytes at start; removing it",
                           pool_state_name(r->state), r->name, (uint64_t)st->st_blocks * 512, r->size_bytes);
                return false;
        }
        if (r->state == POOL_RECYCLING)
                log_notice("pools: the recycle of stock file %s was cut short; it is zeroed again from the start",
                           r->name);
        POOLS_LOCKED(&p->reg.lock);
        p->recycle.due = true;
        return true;
}

/* A stock row: keep a complete stock file, resume a refill (low priority),
 * keep a recycled one for zeroing (again), or say false: the row goes (and
 * its file, if any).  Never handed out unless its file holds every page
 * and, for a recycled file, the journal says its zeroing completed. */
static bool reconcile_stock(struct pools *p, struct pool *pool)
{
        struct pool_record *r = &pool->rec;
        struct problem err = {0};
        struct stat st;
        int fd, q;

        if (!pool->path[0])
                return false;
        fd = open(pool->path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                if (fd >= 0)
                        close(fd);
                log_notice("pools: stock file %s was gone at start; dropping it", r->name);
                return false;
        }
        pool->file_dev = st.st_dev;
        pool->file_ino = st.st_ino;
        /* Out of every VM's hands: the daemon's alone (a file of a version
         * that left stock files in the pool group, too). */
        (void)pools_file_private_fd(fd);
        if (r->state == POOL_DIRTY || r->state == POOL_RECYCLING)
                return reconcile_recycle(p, pool, fd, &st);
        uint64_t present = (uint64_t)st.st_blocks * 512;
        if (r->state == POOL_STOCK && present == r->size_bytes && (uint64_t)st.st_size == r->size_bytes) {
                close(fd);
                return true;
        }
        bool cut_off = r->state == POOL_STOCK_WARMING && (uint64_t)st.st_size == r->size_bytes;
        if (((uint64_t)st.st_size != r->size_bytes && ftruncate(fd, (off_t)r->size_bytes) < 0) ||
            pool_transition(r, POOL_STOCK_WARMING, NULL, NULL) < 0)
                goto drop;
        pool->present_at_start = present < r->size_bytes ? present : r->size_bytes;
        uint64_t need = resume_need(r, present, cut_off);
        if (pools_admit(p, r->node, r->page_size, need, false, false, NULL, &err) < 0)
                goto drop;
        pool->fd = fd;
        q = pools_start_job(p, pool);
        if (q < 0) {
                pool->fd = -1;
                goto drop;
        }
        log_info("pools: resuming refill of stock file %s (%" PRIu64 " of %" PRIu64 " bytes present)", r->name,
                 present, r->size_bytes);
        return true;
drop:
        close(fd);
        log_notice("pools: stock file %s could not be refilled at start; removing it", r->name);
        return false;
}

/* A TTL counts on CLOCK_BOOTTIME from when the pool turned ready; the
 * journal's stamp is valid in this boot (pools of another are dropped).
 * A journal written before the stamp existed has only the wall clock's
 * finished_at: count from there as the wall clock sees it now, once. */
static void ready_stamp(struct pool_record *r)
{
        uint64_t boot = now_boot_ns();

        if (r->state != POOL_READY)
                return;
        if (!r->ready_boot_ns) {
                int64_t real = (int64_t)(now_real_ns() / NS_PER_SEC);
                uint64_t age = real > r->finished_at && r->finished_at > 0
                                       ? (uint64_t)(real - r->finished_at) * NS_PER_SEC : 0;
                r->ready_boot_ns = age < boot ? boot - age : 1;
        }
        if (r->ready_boot_ns > boot)
                r->ready_boot_ns = boot;        /* not from this boot after all */
}

/* *RET_REBOOTED: the journal is from another boot (its reservations are to
 * be re-applied). */
static int load_journal(struct pools *p, bool *ret_rebooted)
{
        struct journal *j = NULL;
        int r;

        *ret_rebooted = false;
        r = journal_load(p->state_dir, &j);
        if (r == -ENOENT) {
                log_info("pools: no state in %s, starting empty", p->state_dir);
                return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0 && !p->cfg.reset_state) {
                /* Starting empty would forget the pools whose files VMs map
                 * and the reservations; refuse, and leave everything as is. */
                log_err("pools: cannot use %s/state.json: %s; not starting, nothing was changed "
                        "(to discard it, start once with --reset-state: it is moved aside and files "
                        "that a process maps are kept)", p->state_dir, journal_load_error(r));
                return r;
        }
        if (r < 0) {
                int q = journal_quarantine(p->state_dir);
                if (q < 0) {
                        log_err("pools: cannot use %s/state.json (%s) and cannot move it aside: %s; "
                                "not starting", p->state_dir, journal_load_error(r), strerror(-q));
                        return q;
                }
                log_warn("pools: --reset-state: %s/state.json was unusable (%s); moved it aside to "
                         "state.json.corrupt-*, starting empty", p->state_dir, journal_load_error(r));
                return 0;
        }

        if (j->log_torn)
                log_notice("pools: %s/state.log ended in a torn record (a save cut short, never "
                           "acknowledged); ignored", p->state_dir);

        /* Reservations hold across reboots: the kernel forgot them, we did not. */
        if (j->n_reservations) {
                p->admit.resv = calloc(j->n_reservations, sizeof(*p->admit.resv));
                if (!p->admit.resv) {
                        journal_free(j);
                        return -ENOMEM;
                }
                memcpy(p->admit.resv, j->reservations, j->n_reservations * sizeof(*p->admit.resv));
                p->admit.n_resv = j->n_reservations;
        }
        /* Stock targets are configuration: they hold across reboots too. */
        if (j->n_stock_targets) {
                p->stock.targets = calloc(j->n_stock_targets, sizeof(*p->stock.targets));
                if (!p->stock.targets) {
                        journal_free(j);
                        return -ENOMEM;
                }
                memcpy(p->stock.targets, j->stock_targets, j->n_stock_targets * sizeof(*p->stock.targets));
                p->stock.n_targets = j->n_stock_targets;
        }
        /* Elastic policies are configuration too. */
        if (j->n_elastic) {
                p->elastic.rows = calloc(j->n_elastic, sizeof(*p->elastic.rows));
                if (!p->elastic.rows) {
                        journal_free(j);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < j->n_elastic; i++)
                        p->elastic.rows[i].shown.policy = j->elastic[i];
                p->elastic.n_rows = j->n_elastic;
        }
        if (strcmp(j->boot_id, p->boot_id) != 0) {
                *ret_rebooted = true;
                if (j->n_pools)
                        log_notice("pools: state is from another boot; dropping its %zu pools", j->n_pools);
                journal_free(j);
                return 0;
        }
        for (size_t i = 0; i < j->n_pools; i++) {
                struct pool *pool = calloc(1, sizeof(*pool));
                const char *dir = pools_mount_dir(p, j->pools[i].page_size);
                int added = -ENOMEM;

                if (pool) {
                        /* Named before it is added: the index is by name. */
                        pool->owner = p;
                        pool->fd = -1;
                        pool->rec = j->pools[i];
                        POOLS_LOCKED(&p->reg.lock);
                        added = pools_add(p, pool);
                }
                if (added < 0) {
                        free(pool);
                        journal_free(j);
                        return -ENOMEM;
                }
                ready_stamp(&pool->rec);
                if (dir)
                        (void)pools_path_of(p, pool->rec.page_size, pool->rec.name, pool->path,
                                            sizeof(pool->path));
        }
        journal_free(j);
        return 0;
}

/* Watch POOL's owner again, or mark the pool for release if it is gone. */
static void reattach_owner(struct pools *p, struct pool *pool)
{
        const struct pool_record *r = &pool->rec;
        uint64_t start = 0;
        int fd = -1, q;

        q = owner_open(r->owner_pid, &fd, &start);
        if (q == 0 && start == r->owner_start) {
                q = owner_watch_add(p->owners, r->name, r->owner_pid, start, fd);
                if (q < 0)
                        log_err("pools: cannot watch process %d, owner of pool %s: %s; the pool "
                                "stays claimed", r->owner_pid, r->name, strerror(-q));
                else
                        log_info("pools: pool %s: owner process %d still runs, watching it", r->name,
                                 r->owner_pid);
                return;
        }
        if (fd >= 0)
                close(fd);
        if (q == 0 || q == -ESRCH) {
                log_notice("pools: pool %s: its owner process %d %s; releasing it", r->name, r->owner_pid,
                           q == 0 ? "is gone (its pid now names another process)" : "is gone");
                POOLS_LOCKED(&p->reg.lock);
                pool->release_due = RELEASE_OWNER_EXITED;
                return;
        }
        /* Cannot tell (no pidfds, no /proc): never release a pool whose VM
         * may still run. */
        log_err("pools: cannot check process %d, owner of pool %s: %s; the pool stays claimed",
                r->owner_pid, r->name, strerror(-q));
}

int pools_recover(struct pools *p)
{
        int r;

        r = read_boot_id(p->boot_id_path, p->boot_id, sizeof(p->boot_id));
        if (r < 0)
                return r;
        bool rebooted;
        r = load_journal(p, &rebooted);
        if (r < 0)
                return r;
        /* Nothing else runs yet but engine callbacks; start-up admits,
         * reserves and drops rows under the locks a create would hold, so
         * the lock rules (and their assertions) hold here too. */
        /* By hand: admit.lock is dropped before owners are watched again (owner.c is called with none of ours held). */
        pools_lock(&p->admit.lock);
        /* Pages first, then the jobs that need them. */
        if (rebooted && p->cfg.fixed_hugepages && p->admit.n_resv > 0)
                log_notice("pools: %s: the recorded reservations are not re-applied after the reboot",
                           POOLS_FIXED_WHY);
        if (rebooted && !p->cfg.fixed_hugepages)
                reapply_reservations(p);
        else
                adopt_reservations(p);
        for (size_t i = 0; i < p->reg.n_pools;) {
                struct pool *pool = p->reg.pools[i];
                if (!pool_state_is_stock(pool->rec.state)) {
                        reconcile(p, pool);
                        i++;
                } else if (reconcile_stock(p, pool)) {
                        i++;
                } else {
                        if (pool->path[0])
                                unlink(pool->path);
                        POOLS_LOCKED(&p->reg.lock);
                        pools_drop(p, pool); /* moves the last row here */
                        free(pool);
                }
        }
        pools_remove_orphans(p);
        pools_unlock(&p->admit.lock);
        for (size_t i = 0; i < p->reg.n_pools; i++)
                if (p->reg.pools[i]->rec.state == POOL_READY && p->reg.pools[i]->rec.claimed &&
                    p->reg.pools[i]->rec.owner_pid > 0)
                        reattach_owner(p, p->reg.pools[i]);
        return 0;
}
