/* pools_admit: admission, reservations and creating a pool.
 *
 * hugetlb reservations are global, not per node, so the kernel cannot say
 * whether a node-bound warm will find its pages: admission counts them
 * itself, as the node's free pages minus what warming jobs there have yet
 * to fault in (one consistent reading of both: pools_need.c), under
 * admit_lock so two creates never count the same pages.
 * Reservations (PUT /v1/nodes/{id}/hugepages/{size} and "reserve": true)
 * go through the same lock, so a growth and a warm never interleave, and
 * are recorded in the journal to be re-applied at start (pools_recover.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "pools_internal.h"
#include "units.h"
#include "util.h"

/* Pool files: the VMM's group may open them, nobody else. */
#define POOL_FILE_MODE 0660

/* ---- reservations ---- */

void pools_count_reservation(struct pools *p, int r, const struct reserve_result *res)
{
        pthread_mutex_lock(&p->lock);
        if (r == 0 && res->complete)
                p->stats.reservations_ok++;
        else if (r == 0)
                p->stats.reservations_partial++;
        else if (r == -EAGAIN)
                p->stats.reservations_shortfall++;
        else if (r == -ENOMEM)
                p->stats.reservations_refused++;
        else
                p->stats.reservations_error++;
        pthread_mutex_unlock(&p->lock);
}

/* The recorded count of (node, page size) into *RET; false if none (lock held). */
static bool find_reservation(struct pools *p, int node, uint64_t page_size, uint64_t *ret)
{
        for (size_t i = 0; i < p->n_resv; i++)
                if (p->resv[i].node == node && p->resv[i].page_size == page_size) {
                        *ret = p->resv[i].count;
                        return true;
                }
        return false;
}

/* Drop the record of (node, page size), if any (lock held). */
static void forget_reservation(struct pools *p, int node, uint64_t page_size)
{
        for (size_t i = 0; i < p->n_resv; i++)
                if (p->resv[i].node == node && p->resv[i].page_size == page_size) {
                        p->resv[i] = p->resv[--p->n_resv];
                        return;
                }
}

/* Record that (node, page size) should have COUNT pages (lock held). */
static int record_reservation(struct pools *p, int node, uint64_t page_size, uint64_t count)
{
        for (size_t i = 0; i < p->n_resv; i++)
                if (p->resv[i].node == node && p->resv[i].page_size == page_size) {
                        p->resv[i].count = count;
                        return 0;
                }
        struct journal_reservation *n = realloc(p->resv, (p->n_resv + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        p->resv = n;
        p->resv[p->n_resv++] = (struct journal_reservation){ node, page_size, count };
        return 0;
}

/* reserve_apply + record + save; admit_lock held.  ASKED is the count the
 * caller asked for when REQ->count is a clamped one (the result then says
 * what was asked and that it is incomplete); it is what is recorded. */
static int reserve_locked(struct pools *p, const struct reserve_req *req, uint64_t asked,
                          struct reserve_result *ret)
{
        struct reserve_result res;
        int r, q;

        r = reserve_apply(p->cfg.fs, req, &res);
        if (r == 0 && asked != req->count) {
                res.requested = asked;
                res.complete = false;
        }
        pools_count_reservation(p, r, &res);
        if (r < 0) {
                if (r == -EAGAIN || r == -ENOMEM)
                        *ret = res;
                return r;
        }
        pthread_mutex_lock(&p->lock);
        struct journal_reservation before = { req->node, req->page_size, 0 };
        bool had = find_reservation(p, req->node, req->page_size, &before.count);
        /* What was asked, not what the kernel holds now: a shrink held up
         * by pages in use (or a partial growth) is still the count wanted,
         * and recording the kernel's total would grow the pool back to it
         * when the reservation is re-applied. */
        q = record_reservation(p, req->node, req->page_size, asked);
        pthread_mutex_unlock(&p->lock);
        if (q == 0)
                q = pools_save(p);
        if (q < 0) {
                /* Not recorded: a restart would not know of it.  Undo it,
                 * in memory and (as far as the kernel lets us) in the
                 * kernel, and say it failed. */
                struct reserve_req back = *req;
                struct reserve_result bres;
                pthread_mutex_lock(&p->lock);
                if (had)
                        (void)record_reservation(p, before.node, before.page_size, before.count);
                else
                        forget_reservation(p, req->node, req->page_size);
                pthread_mutex_unlock(&p->lock);
                back.count = res.previous;
                back.allow_partial = true;
                int b = reserve_apply(p->cfg.fs, &back, &bres);
                if (b == 0)
                        res.total = bres.total;
                log_err("pools: cannot save reservation node %d page size %" PRIu64 " (%s); put the "
                        "count back from %" PRIu64 " to %" PRIu64 "%s", req->node, req->page_size,
                        strerror(-q), res.achieved, res.total,
                        b == 0 && bres.complete ? "" : " (not all of it: pages in use)");
                *ret = res;
                return -ECANCELED;
        }
        *ret = res;
        return 0;
}

/* Shrinking frees only free pages, but pages that warming jobs on the node
 * have yet to fault still count as free there (hugetlb reservations are
 * global, so the kernel may free this node's pages and the job's node-bound
 * faults then fail with EFAULT).  So a shrink stops at the pages in use plus
 * those still needed, and says it is incomplete. */
int pools_reserve(struct pools *p, const struct reserve_req *req, struct reserve_result *ret)
{
        struct reserve_req rq = *req;
        struct hp_counts hp;
        uint64_t needed, keep;
        int r;

        pthread_mutex_lock(&p->admit_lock);
        /* A shrink below the pages in use: stock files of the node give
         * their pages back first (refills, then ready files), when that
         * lets the shrink complete; the stock never makes it fall short. */
        if (pools_node_counts(p, req->node, req->page_size, &hp, &needed) == 0 && req->count < hp.total) {
                uint64_t held = (hp.total > hp.free ? hp.total - hp.free : 0) + needed;
                if (req->count < held)
                        (void)pools_stock_make_room(p, req->node, req->page_size, held - req->count);
        }
        r = pools_node_counts(p, req->node, req->page_size, &hp, &needed);
        if (r < 0) {
                /* An unknown node or unreadable counters: nothing written. */
                pools_count_reservation(p, r, &(struct reserve_result){0});
                pthread_mutex_unlock(&p->admit_lock);
                return r;
        }
        if (needed > 0 && req->count < hp.total) {
                keep = (hp.total > hp.free ? hp.total - hp.free : 0) + needed;
                if (keep > hp.total)
                        keep = hp.total;
                if (req->count < keep)
                        rq.count = keep;
        }
        r = reserve_locked(p, &rq, req->count, ret);
        pthread_mutex_unlock(&p->admit_lock);
        return r;
}

/* ---- create ---- */

/* The first field in which REQ asks for another pool than R, with what each
 * says, or false if it asks for the same one.  Every field the pool keeps
 * counts: a PUT that would get a pool other than the one it describes (a TTL
 * it did not ask for, or none) must not be told 200.  "reserve" is not
 * compared: it says how to admit a new pool, and an existing one needs no
 * admission. */
static bool spec_differs(const struct journal_pool *r, const struct pool_req *req, char *buf, size_t size)
{
        if (r->node != req->node)
                snprintf(buf, size, "\"node\": %d asked, the pool is on %d", req->node, r->node);
        else if (r->page_size != req->page_size)
                snprintf(buf, size, "\"page_size\": %" PRIu64 " bytes asked, the pool has %" PRIu64,
                         req->page_size, r->page_size);
        else if (r->size_bytes != req->size_bytes)
                snprintf(buf, size, "size: %" PRIu64 " bytes asked, the pool has %" PRIu64, req->size_bytes,
                         r->size_bytes);
        else if (r->ttl_seconds != req->ttl_seconds)
                snprintf(buf, size, "\"ttl_seconds\": %" PRIu64 " asked, the pool has %" PRIu64 " (0 = none)",
                         req->ttl_seconds, r->ttl_seconds);
        else if (r->threads != req->threads)
                snprintf(buf, size, "\"threads\": %u asked, the pool has %u (0 = node default)", req->threads,
                         r->threads);
        else
                return false;
        return true;
}

/* The node's count back to G->previous (never below its pages in use plus
 * what warming jobs still need, which count as free until faulted), and the
 * journal's record as it was.  admit_lock held. */
void pools_undo_growth(struct pools *p, const struct pools_growth *g)
{
        struct reserve_req back = { .node = g->node, .page_size = g->page_size, .count = g->previous,
                                    .allow_partial = true };
        struct reserve_result res;
        struct hp_counts hp;
        uint64_t needed;
        int r;

        if (!g->grew)
                return;
        if (pools_node_counts(p, g->node, g->page_size, &hp, &needed) == 0) {
                uint64_t keep = (hp.total > hp.free ? hp.total - hp.free : 0) + needed;
                if (back.count < keep)
                        back.count = keep < hp.total ? keep : hp.total;
        }
        r = reserve_apply(p->cfg.fs, &back, &res);
        pthread_mutex_lock(&p->lock);
        if (g->had_record)
                (void)record_reservation(p, g->node, g->page_size, g->record);
        else
                forget_reservation(p, g->node, g->page_size);
        pthread_mutex_unlock(&p->lock);
        int q = pools_save(p);
        if (r < 0 || q < 0)
                log_err("pools: putting node %d back to %" PRIu64 " pages after a failed create: %s",
                        g->node, g->previous, strerror(r < 0 ? -r : -q));
        else
                log_info("pools: node %d back to %" PRIu64 " %" PRIu64 "-byte pages: the pool they were "
                         "grown for was not created", g->node, res.total, g->page_size);
}

/* Node NODE must have PAGES free pages of PAGE_SIZE beyond what warming jobs
 * still need; grow its pool by what is missing when RESERVE.  admit_lock
 * held.  0 or -ENOMEM with ERR set (409 insufficient-hugepages), or a sysfs
 * -errno (500).  A growth for a pool that is then not admitted is undone
 * here; one for a pool admitted is described in *RET_GROWTH (NULL only
 * without RESERVE) for the caller to undo if the create fails later. */
int pools_admit(struct pools *p, int node, uint64_t page_size, uint64_t pages, bool reserve, bool give_way,
                struct pools_growth *ret_growth, struct problem *err)
{
        struct pools_growth g = { .node = node, .page_size = page_size };
        struct pools_avail a;
        uint64_t avail;
        int r;

        if (ret_growth)
                *ret_growth = g;
        for (int attempt = 0;; attempt++) {
                /* One consistent reading: a chunk that ends while the
                 * counters are read is not counted as still needed and as
                 * taken (pools_node_counts). */
                r = pools_node_available(p, node, page_size, &a);
                if (r < 0) {
                        problem_raise(err, PROBLEM_SYSFS_ERROR, "reading node %d hugepage counters: %s", node,
                                      strerror(-r));
                        return r;
                }
                avail = a.available;
                if (avail >= pages) {
                        if (ret_growth)
                                *ret_growth = g;
                        return 0;
                }
                /* Stock pages count as available: stock files of the node
                 * go before anything is refused or reserved. */
                if (give_way) {
                        give_way = false;
                        if (pools_stock_make_room(p, node, page_size, pages - avail) > 0) {
                                attempt--;
                                continue;
                        }
                }
                if (!reserve || attempt > 0) {
                        pools_undo_growth(p, &g);
                        problem_raise(err, PROBLEM_INSUFFICIENT_HUGEPAGES,
                                      "node %d needs %" PRIu64 " available pages of %" PRIu64 " bytes; it has %" PRIu64
                                      " (%" PRIu64 " free, %" PRIu64 " still to be taken by other warming pools, %"
                                      PRIu64 " reserved by mappings not yet faulted)%s",
                                      node, pages, page_size, avail, a.free, a.needed, a.foreign,
                                      reserve ? " (even after growing the pool; the growth was undone)"
                                              : "; retry with \"reserve\": true to grow the pool");
                        return -ENOMEM;
                }

                struct reserve_req rq = {
                        .node = node,
                        .page_size = page_size,
                        .count = a.total + (pages - avail),
                        .floor_bytes = p->cfg.memory_floor,
                };
                struct reserve_result res = {0};
                pthread_mutex_lock(&p->lock);
                g.had_record = find_reservation(p, node, page_size, &g.record);
                pthread_mutex_unlock(&p->lock);
                r = reserve_locked(p, &rq, rq.count, &res);
                if (r == 0) {
                        g.grew = true;
                        g.previous = res.previous;
                }
                if (r < 0) {
                        char why[160];

                        if (r == -ENOMEM) {
                                /* Say what would work: the floor and the most that fits. */
                                char fl[32];

                                format_size(res.floor_bytes, fl, sizeof(fl));
                                snprintf(why, sizeof(why), "it would go below the memory floor of %s (nothing "
                                         "written; at most %" PRIu64 " pages fit)", fl, res.max_count);
                                err->has_floor = true;
                                err->floor_bytes = res.floor_bytes;
                                err->mem_free_bytes = res.mem_free_bytes;
                                err->max_count = res.max_count;
                        } else {
                                snprintf(why, sizeof(why), "%s", r == -EAGAIN ?
                                         "the kernel gave fewer pages (count restored)" : strerror(-r));
                        }
                        problem_raise(err, PROBLEM_INSUFFICIENT_HUGEPAGES,
                                      "node %d needs %" PRIu64 " available pages; it has %" PRIu64 " (%" PRIu64
                                      " free, %" PRIu64 " still to be taken by other warming pools, %" PRIu64
                                      " reserved by mappings not yet faulted); "
                                      "growing its pool from %" PRIu64 " to %" PRIu64 " pages failed: %s",
                                      node, pages, avail, a.free, a.needed, a.foreign, a.total, rq.count, why);
                        if (r == -EAGAIN) {
                                err->has_counts = true;
                                err->requested = rq.count;
                                err->achieved = res.achieved;
                        }
                        return -ENOMEM;
                }
        }
}

void pools_abandon(struct pools *p, struct pool *pool, bool registered)
{
        if (registered) {
                /* A save in another thread reads pool->job under `lock`:
                 * take the job out there first, then stop and free it. */
                pthread_mutex_lock(&p->lock);
                struct job *job = pool->job;
                pool->job = NULL;
                pthread_mutex_unlock(&p->lock);
                if (job) {
                        job_cancel(job);
                        job_free(job);
                }
                pthread_mutex_lock(&p->lock);
                pools_drop(p, pool);
                pthread_mutex_unlock(&p->lock);
                /* A save that raced with us may hold the record; forget it
                 * again.  Failing that, the next start finds the file gone
                 * and says so. */
                (void)pools_save(p);
        }
        close(pool->fd);
        unlink(pool->path);
        free(pool);
}

int pools_create_file(struct pools *p, struct pool *pool, uint64_t size, struct problem *err)
{
        const char *path = pool->path;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, POOL_FILE_MODE);
        if (fd < 0) {
                r = -errno;
                if (r == -EEXIST)
                        problem_raise(err, PROBLEM_POOL_CONFLICT, "a file %s exists that no pool record owns", path);
                else
                        problem_raise(err, PROBLEM_POOL_FILE_ERROR, "creating %s: %s", path, strerror(-r));
                return r;
        }
        if (p->cfg.pool_gid != (gid_t)-1 && fchown(fd, (uid_t)-1, p->cfg.pool_gid) < 0)
                goto fail;
        /* The umask may have narrowed the mode. */
        if (fchmod(fd, POOL_FILE_MODE) < 0)
                goto fail;
        if (ftruncate(fd, (off_t)size) < 0)
                goto fail;
        /* Which file is ours: the file-changed checks compare it. */
        if (fstat(fd, &st) < 0)
                goto fail;
        pool->file_dev = st.st_dev;
        pool->file_ino = st.st_ino;
        pool->fd = TAKE_FD(fd);
        return 0;
fail:
        r = -errno;
        problem_raise(err, PROBLEM_POOL_FILE_ERROR, "setting up %s: %s", path, strerror(-r));
        unlink(path);
        return r;
}

static int validate(struct pools *p, const struct pool_req *req, struct problem *err)
{
        if (!pool_name_valid(req->name)) {
                problem_raise(err, PROBLEM_INVALID_FIELD, "pool name must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
                return -EINVAL;
        }
        if (!topo_node(p->cfg.topo, req->node)) {
                problem_raise(err, PROBLEM_UNKNOWN_NODE, "there is no node %d", req->node);
                return -ENOENT;
        }
        if (!topo_has_page_size(p->cfg.topo, req->page_size)) {
                problem_raise(err, PROBLEM_UNKNOWN_PAGE_SIZE, "the kernel offers no %" PRIu64 "-byte hugepages",
                              req->page_size);
                return -ENOENT;
        }
        if (req->size_bytes == 0 || req->size_bytes % req->page_size != 0) {
                problem_raise(err, PROBLEM_INVALID_FIELD,
                              "size must be a positive multiple of the page size (%" PRIu64 " bytes)", req->page_size);
                return -EINVAL;
        }
        if (req->ttl_seconds > POOLS_TTL_MAX) {
                problem_raise(err, PROBLEM_INVALID_FIELD, "ttl_seconds must be at most %" PRIu64, POOLS_TTL_MAX);
                return -EINVAL;
        }
        if (p->cfg.max_pool_bytes && req->size_bytes > p->cfg.max_pool_bytes) {
                problem_raise(err, PROBLEM_POOL_TOO_LARGE, "%" PRIu64 " bytes is over the limit of %" PRIu64,
                              req->size_bytes, p->cfg.max_pool_bytes);
                return -EFBIG;
        }
        /* The daemon's setup last: bad input is 4xx whatever the host. */
        if (!pools_mount_dir(p, req->page_size)) {
                problem_raise(err, PROBLEM_NO_HUGETLBFS,
                              "no --hugetlbfs directory is configured for %" PRIu64 "-byte pages", req->page_size);
                err->retry_after = POOLS_SETUP_RETRY_AFTER;
                return -ENODEV;
        }
        return 0;
}

/* Under lock: the idempotency/conflict check and the count limits.  Returns
 * 1 with *ret filled for an identical existing pool, 0 to go on, or -errno. */
static int check_registry(struct pools *p, const struct pool_req *req, struct pool_view *ret,
                          struct problem *err)
{
        uint64_t node_bytes = 0;
        struct pool *o;

        /* A busy pool may be on its way out (DELETE or TTL: releasing
         * while its removal is saved and its file unlinked): wait, as
         * grab_pool does, and look again.  Its holder never takes
         * admit_lock, which we hold. */
        while ((o = pools_find(p, req->name)) && (o->hold == POOL_BUSY || o->hold == POOL_RELEASING))
                pthread_cond_wait(&p->changed, &p->lock);

        if (o) {
                const struct journal_pool *r = pools_latest(o);
                char why[160];
                if (spec_differs(r, req, why, sizeof(why))) {
                        problem_raise(err, PROBLEM_POOL_CONFLICT,
                                      "pool %s exists and differs: %s (delete it first, or ask for it as it is)",
                                      r->name, why);
                        return -EEXIST;
                }
                pools_fill_view(o, ret);
                return 1;
        }
        size_t n_real = 0;
        for (size_t i = 0; i < p->n_pools; i++)
                n_real += !pools_is_stock(p->pools[i]);
        if (n_real >= p->max_pools) {
                problem_raise(err, PROBLEM_TOO_MANY_POOLS, "the daemon holds %zu pools, its limit; delete some first",
                              n_real);
                err->retry_after = 60;
                return -ENOSPC;
        }
        if (p->cfg.max_node_warm_bytes) {
                for (size_t i = 0; i < p->n_pools; i++) {
                        const struct journal_pool *r = &p->pools[i]->rec;
                        if (p->pools[i]->hold != POOL_REMOVING && r->node == req->node &&
                            (r->state == POOL_WARMING || r->state == POOL_READY))
                                node_bytes += r->size_bytes;
                }
                if (node_bytes + req->size_bytes > p->cfg.max_node_warm_bytes) {
                        problem_raise(err, PROBLEM_NODE_WARM_LIMIT,
                                      "node %d holds %" PRIu64 " bytes in warming and ready pools; "
                                      "%" PRIu64 " more would pass its limit of %" PRIu64
                                      " (claim, delete or let pools expire first)",
                                      req->node, node_bytes, req->size_bytes, p->cfg.max_node_warm_bytes);
                        err->retry_after = 60;
                        return -EDQUOT;
                }
        }
        return 0;
}

int pools_create(struct pools *p, const struct pool_req *req, struct pool_view *ret, struct problem *err)
{
        struct pools_growth growth = {0};
        struct pool *pool = NULL;
        int r;

        r = validate(p, req, err);
        if (r < 0)
                return r;

        pthread_mutex_lock(&p->admit_lock);
        pthread_mutex_lock(&p->lock);
        r = check_registry(p, req, ret, err);
        pthread_mutex_unlock(&p->lock);
        if (r != 0) {
                pthread_mutex_unlock(&p->admit_lock);
                return r > 0 ? 200 : r;
        }

        r = pools_stock_take(p, req, ret, err);
        if (r != 0)
                goto out_unlock;
        r = pools_admit(p, req->node, req->page_size, req->size_bytes / req->page_size, req->reserve, true,
                        &growth, err);
        if (r < 0)
                goto out_unlock;

        pool = calloc(1, sizeof(*pool));
        if (!pool) {
                r = -ENOMEM;
                problem_raise(err, PROBLEM_INTERNAL_ERROR, "out of memory");
                goto out_ungrow;
        }
        pool->owner = p;
        pool->fd = -1;
        snprintf(pool->rec.name, sizeof(pool->rec.name), "%s", req->name);
        pool->rec.node = req->node;
        pool->rec.page_size = req->page_size;
        pool->rec.size_bytes = req->size_bytes;
        pool->rec.threads = req->threads;
        pool->rec.ttl_seconds = req->ttl_seconds;
        pool->rec.created_at = pool->rec.started_at = pools_now_unix();
        if ((size_t)snprintf(pool->path, sizeof(pool->path), "%s/%s", pools_mount_dir(p, req->page_size),
                             req->name) >= sizeof(pool->path)) {
                r = -ENAMETOOLONG;
                problem_raise(err, PROBLEM_POOL_FILE_ERROR, "path too long");
                goto out_free;
        }

        r = pools_create_file(p, pool, req->size_bytes, err);
        if (r < 0)
                goto out_free;

        (void)pool_transition(&pool->rec, POOL_WARMING, NULL, NULL);
        pthread_mutex_lock(&p->lock);
        pools_set_hold(pool, POOL_CREATING);
        r = pools_add(p, pool);
        pthread_mutex_unlock(&p->lock);
        if (r < 0) {
                problem_raise(err, PROBLEM_INTERNAL_ERROR, "out of memory");
                goto out_unlink;
        }

        r = pools_start_job(p, pool);
        if (r < 0) {
                if (r == -ENOMEM)
                        /* mmap of a hugetlbfs file reserves its pages globally. */
                        problem_raise(err, PROBLEM_INSUFFICIENT_HUGEPAGES,
                                      "the kernel refused to reserve %" PRIu64 " hugepages for the pool",
                                      req->size_bytes / req->page_size);
                else
                        problem_raise(err, PROBLEM_WARM_START_FAILED, "starting the warm job: %s", strerror(-r));
                goto out_drop;
        }

        r = pools_save(p);
        if (r < 0) {
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED, "saving %s/state.json: %s (the pool was not created)",
                              p->state_dir, strerror(-r));
                err->retry_after = POOLS_SAVE_RETRY_AFTER;
                goto out_drop;
        }

        pthread_mutex_lock(&p->lock);
        pools_set_hold(pool, POOL_FREE);
        pools_fill_view(pool, ret);
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        pthread_mutex_unlock(&p->admit_lock);
        pools_notify(p, req->name);
        /* The job may have finished already; upkeep skipped it while held. */
        pools_kick(p);
        return 201;

out_drop:
        pools_abandon(p, pool, true);
        goto out_ungrow;
out_unlink:
        pools_abandon(p, pool, false);
        goto out_ungrow;
out_free:
        free(pool);
out_ungrow:
        /* The pool the node was grown for does not exist: neither does
         * the growth (issue 11 item 5).  Its file is gone first, so its
         * pages count as free again. */
        pools_undo_growth(p, &growth);
out_unlock:
        pthread_mutex_unlock(&p->admit_lock);
        return r;
}
