/* pools_stock: a standing stock of warm files per (node, page size, size).
 *
 * A stock file is a row of the registry like a pool, with a stock state
 * (pool_state.h: stock-warming, stock) and a stock name, a first character no pool
 * name has, so the journal, the start-up reconcile and the orphan sweep
 * treat it as they treat pools while nothing that shows pools ever shows it.
 *
 * Refills are ordinary engine jobs at JOB_PRIO_LOW, so a pool warm on the
 * same node is always served first; they are started by the upkeep thread
 * under admit.lock, like creates, and only take pages no warm needs (they
 * never reserve).  A create of a stocked spec takes a ready file by
 * rename(2) (same inode, no page touched), and a create that finds too few
 * free pages first removes stock files of its node and page size: stock
 * never causes a refusal that would not happen without it (pools_stock_evict.c:
 * stock files are removed to make room).  Released pools
 * come back through pools_recycle.c as dirty, then recycling rows, which
 * count toward their target and give way like the others (a dirty file a
 * process still maps frees nothing, so it is never counted as room). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "pools_internal.h"
#include "util.h"

static bool row_matches(const struct pool *o, const struct stock_target_record *t)
{
        const struct pool_record *r = pools_latest(o);

        return o->hold != POOL_REMOVING && pool_state_is_stock(r->state) && r->node == t->node &&
               r->page_size == t->page_size && r->size_bytes == t->size_bytes;
}

/* Files of T: ready, warming, and on their way back (dirty or being zeroed;
 * *RET_DIRTY of them dirty) (lock held).  "ready" counts the committed
 * state only (saved); a pending dirty record (a release being saved)
 * already counts as recycling, so two releases never fill one gap. */
static void count_rows(struct pools *p, const struct stock_target_record *t, unsigned *ret_ready,
                       unsigned *ret_warming, unsigned *ret_recycling, unsigned *ret_dirty)
{
        pools_assert_held(&p->reg.lock);
        unsigned ready = 0, warming = 0, recycling = 0, dirty = 0;

        for (size_t i = 0; i < p->reg.n_pools; i++) {
                const struct pool *o = p->reg.pools[i];
                enum pool_state now, latest;

                if (!row_matches(o, t))
                        continue;
                now = o->rec.state;
                latest = pools_latest(o)->state;
                if (now == POOL_STOCK) {
                        ready++;
                } else if (now == POOL_RECYCLING || now == POOL_DIRTY || latest == POOL_DIRTY) {
                        recycling++;
                        dirty += now != POOL_RECYCLING;
                } else {
                        warming++;
                }
        }
        *ret_ready = ready;
        *ret_warming = warming;
        if (ret_recycling)
                *ret_recycling = recycling;
        if (ret_dirty)
                *ret_dirty = dirty;
}

static bool same_target(const struct stock_target_record *a, const struct stock_target_record *b)
{
        return a->node == b->node && a->page_size == b->page_size && a->size_bytes == b->size_bytes;
}

static uint64_t deficit_of(struct pools *p, const struct stock_target_record *t)
{
        unsigned ready, warming, recycling;
        uint64_t have;

        count_rows(p, t, &ready, &warming, &recycling, NULL);
        have = (uint64_t)ready + warming + recycling;
        return t->count > have ? t->count - have : 0;
}

uint64_t pools_stock_deficit(struct pools *p, int node, uint64_t page_size, uint64_t size)
{
        pools_assert_held(&p->reg.lock);
        for (size_t k = 0; k < p->stock.n_targets; k++)
                if (p->stock.targets[k].node == node && p->stock.targets[k].page_size == page_size &&
                    p->stock.targets[k].size_bytes == size) {
                        /* A refill about to add a file to this target
                         * counts here (a release must not fill the same
                         * gap), not in what GET /v1/stock shows: it may
                         * still find no room. */
                        uint64_t d = deficit_of(p, &p->stock.targets[k]);
                        return d > 0 && p->stock.refilling_set && same_target(&p->stock.refilling, &p->stock.targets[k]) ? d - 1 : d;
                }
        return 0;
}

/* ---- targets ---- */


static int validate_targets(struct pools *p, const struct stock_target_record *t, size_t n,
                            struct problem *err)
{
        if (n > POOLS_STOCK_TARGETS_MAX) {
                problem_raise(err, PROBLEM_INVALID_FIELD, "at most %d stock targets", POOLS_STOCK_TARGETS_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                uint64_t total;

                if (pools_check_node_page_size(p, t[i].node, t[i].page_size, err) < 0) {
                        char why[sizeof(err->detail)];

                        /* The rule's own words, led by which target broke it. */
                        snprintf(why, sizeof(why), "%s", err->detail);
                        problem_raise(err, err->id, "target %zu: %s", i, why);
                        return -ENOENT;
                }
                if (t[i].size_bytes == 0 || t[i].size_bytes % t[i].page_size != 0) {
                        problem_raise(err, PROBLEM_INVALID_FIELD,
                                      "target %zu: size must be a positive multiple of the page size (%" PRIu64
                                      " bytes)", i, t[i].page_size);
                        return -EINVAL;
                }
                if (t[i].count == 0 || t[i].count > POOLS_STOCK_COUNT_MAX) {
                        problem_raise(err, PROBLEM_INVALID_FIELD, "target %zu: count must be 1 to %d", i,
                                      POOLS_STOCK_COUNT_MAX);
                        return -EINVAL;
                }
                if (__builtin_mul_overflow(t[i].size_bytes, t[i].count, &total)) {
                        problem_raise(err, PROBLEM_INVALID_FIELD, "target %zu: size times count overflows", i);
                        return -EINVAL;
                }
                if (p->cfg.max_pool_bytes && t[i].size_bytes > p->cfg.max_pool_bytes) {
                        problem_raise(err, PROBLEM_POOL_TOO_LARGE,
                                      "target %zu: %" PRIu64 " bytes is over the pool limit of %" PRIu64, i,
                                      t[i].size_bytes, p->cfg.max_pool_bytes);
                        return -EFBIG;
                }
                for (size_t k = 0; k < i; k++)
                        if (same_target(&t[k], &t[i])) {
                                problem_raise(err, PROBLEM_INVALID_FIELD,
                                              "targets %zu and %zu name the same node, page size and size", k, i);
                                return -EINVAL;
                        }
        }
        /* The daemon's setup last: bad input is 4xx whatever the host. */
        for (size_t i = 0; i < n; i++)
                if (!pools_mount_dir(p, t[i].page_size)) {
                        problem_raise(err, PROBLEM_NO_HUGETLBFS,
                                      "target %zu: no --hugetlbfs directory is configured for %" PRIu64
                                      "-byte pages", i, t[i].page_size);
                        return -ENODEV;
                }
        /* Per (node, page size): all its targets together within the node's
         * hugepages.  Stock only ever takes free pages, so a target larger
         * than the node could never be met. */
        for (size_t i = 0; i < n; i++) {
                struct hp_counts hp;
                uint64_t pages = 0, before = 0;
                int r;

                for (size_t k = 0; k < n; k++)
                        if (t[k].node == t[i].node && t[k].page_size == t[i].page_size) {
                                uint64_t add = t[k].size_bytes / t[k].page_size * t[k].count;
                                if (__builtin_add_overflow(pages, add, &pages))
                                        pages = UINT64_MAX;
                                if (k < i)
                                        before = pages;
                        }
                r = topo_read_hugepages(p->cfg.fs, t[i].node, t[i].page_size, &hp);
                if (r < 0) {
                        problem_raise(err, PROBLEM_SYSFS_ERROR, "reading node %d hugepage counters: %s",
                                      t[i].node, strerror(-r));
                        return r;
                }
                if (pages > hp.total) {
                        uint64_t per = t[i].size_bytes / t[i].page_size;
                        uint64_t left = hp.total > before ? hp.total - before : 0;
                        problem_raise(err, PROBLEM_STOCK_TOO_LARGE,
                                      "target %zu: the stock of node %d needs %" PRIu64 " pages of %" PRIu64
                                      " bytes; the node has %" PRIu64 "; %" PRIu64 " files of this size fit",
                                      i, t[i].node, pages, t[i].page_size, hp.total, left / per);
                        return -E2BIG;
                }
        }
        return 0;
}

/* Remove stock files beyond what the targets ask for (admit.lock held). */
static void trim_rows(struct pools *p)
{
        pools_assert_held(&p->admit.lock);
        for (;;) {
                struct pool *victim = NULL;

                /* By hand: reg.lock is dropped before the victim is removed. */
                pools_lock(&p->reg.lock);
                for (size_t i = 0; i < p->reg.n_pools && !victim; i++) {
                        struct pool *o = p->reg.pools[i];
                        const struct pool_record *r = &o->rec;
                        const struct stock_target_record *t = NULL;

                        if (!pool_state_is_stock(r->state))
                                continue;
                        if (o->hold == POOL_BUSY) {
                                /* A refill being finished: wait for it (its
                                 * holder never waits for admit.lock), or it
                                 * would outlive its target. */
                                pools_cond_wait(&p->reg.changed, &p->reg.lock);
                                i = (size_t)-1;
                                continue;
                        }
                        if (o->hold != POOL_FREE)
                                continue;
                        for (size_t k = 0; k < p->stock.n_targets; k++)
                                if (row_matches(o, &p->stock.targets[k]))
                                        t = &p->stock.targets[k];
                        if (!t) {
                                victim = o;
                        } else {
                                /* Surplus goes least ready first: files on
                                 * their way back, then refills, then ready
                                 * files. */
                                unsigned ready, warming, recycling;
                                bool back = r->state == POOL_DIRTY || r->state == POOL_RECYCLING;
                                count_rows(p, t, &ready, &warming, &recycling, NULL);
                                if ((uint64_t)ready + warming + recycling > t->count &&
                                    (back || (recycling == 0 && (r->state == POOL_STOCK_WARMING || warming == 0))))
                                        victim = o;
                        }
                }
                if (victim)
                        pools_set_hold(victim, POOL_BUSY);
                pools_unlock(&p->reg.lock);
                if (!victim)
                        return;
                log_info("pools: removing stock file %s: no stock target asks for it any more", victim->rec.name);
                if (pools_remove(p, victim, RELEASE_NONE) < 0) {
                        pools_release(p, victim);
                        return;
                }
        }
}

int pools_set_stock(struct pools *p, const struct stock_target_record *t, size_t n, struct problem *err)
{
        struct stock_target_record *copy = NULL, *old;
        size_t old_n;
        int r;

        assert_return(p, -EINVAL);
        assert_return(t || n == 0, -EINVAL);
        /* By hand: admit.lock is dropped before upkeep is kicked. */
        pools_lock(&p->admit.lock);
        r = validate_targets(p, t, n, err);
        if (r < 0)
                goto out;
        if (n) {
                copy = calloc(n, sizeof(*copy));
                if (!copy) {
                        r = -ENOMEM;
                        problem_raise(err, PROBLEM_INTERNAL_ERROR, "out of memory");
                        goto out;
                }
                memcpy(copy, t, n * sizeof(*copy));
        }
        /* By hand: reg.lock is dropped before the save, which takes it. */
        pools_lock(&p->reg.lock);
        old = p->stock.targets;
        old_n = p->stock.n_targets;
        p->stock.targets = copy;
        p->stock.n_targets = n;
        p->reg.generation++;
        pools_unlock(&p->reg.lock);
        r = pools_save(p);
        if (r < 0) {
                /* Nothing changes on failure. */
                /* By hand: reg.lock is dropped before the refusal is written. */
                pools_lock(&p->reg.lock);
                p->stock.targets = old;
                p->stock.n_targets = old_n;
                p->reg.generation++;
                pools_unlock(&p->reg.lock);
                free(copy);
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED, "saving the journal in %s: %s", p->state_dir,
                              strerror(-r));
                goto out;
        }
        free(old);
        log_info("pools: %zu stock targets set", n);
        trim_rows(p);
        p->stock.short_logged = false;
out:
        pools_unlock(&p->admit.lock);
        if (r == 0)
                pools_kick(p);
        return r;
}

int pools_get_stock(struct pools *p, struct stock_view **ret, size_t *ret_n)
{
        struct stock_view *v;

        assert_return(p, -EINVAL);
        assert_return(ret, -EINVAL);
        assert_return(ret_n, -EINVAL);
        POOLS_LOCKED(&p->reg.lock);
        v = calloc(p->stock.n_targets ? p->stock.n_targets : 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < p->stock.n_targets; i++) {
                v[i].target = p->stock.targets[i];
                count_rows(p, &p->stock.targets[i], &v[i].ready, &v[i].warming, &v[i].recycling, &v[i].dirty);
                v[i].deficit = deficit_of(p, &p->stock.targets[i]);
        }
        *ret_n = p->stock.n_targets;
        *ret = v;
        return 0;
}

/* ---- refills ---- */

/* Start one stock file of T (admit.lock held).  -ENOSPC when the node has
 * no free pages that no warm needs; other -errno on failure. */
static int add_one(struct pools *p, const struct stock_target_record *t)
{
        pools_assert_held(&p->admit.lock);
        uint64_t pages = t->size_bytes / t->page_size;
        struct problem err = {0};
        struct pools_avail a;
        struct pool *pool;
        int r;

        r = pools_node_available(p, t->node, t->page_size, &a);
        if (r < 0)
                return r;
        if (pools_mount_room(p, t->page_size) < pages)
                return -ENOSPC;
        if (a.available < pages) {
                /* An elastic pool grows for its stock as for a pool
                 * (admission's hook; nothing happens without a policy).  A
                 * growth this refill then does not use is free, and the
                 * policy gives it back once idle. */
                struct pools_growth g;
                struct problem e = {0};
                if (pools_admit(p, t->node, t->page_size, pages, false, false, &g, &e) < 0)
                        return -ENOSPC;
        }
        /* There is room: from here on a release deciding whether to
         * recycle counts this file (marked only now, so a refill that finds
         * no room never makes a release delete what it could recycle).  A
         * release since the caller's look may have filled the gap. */
        /* By hand: reg.lock is dropped before the file is made. */
        pools_lock(&p->reg.lock);
        if (deficit_of(p, t) == 0) {
                pools_unlock(&p->reg.lock);
                return 0;
        }
        p->stock.refilling = *t;
        p->stock.refilling_set = true;
        pools_unlock(&p->reg.lock);

        pool = calloc(1, sizeof(*pool));
        if (!pool)
                return -ENOMEM;
        pool->owner = p;
        pool->fd = -1;
        /* By hand: reg.lock only to pick a free name. */
        pools_lock(&p->reg.lock);
        do
                snprintf(pool->rec.name, sizeof(pool->rec.name), "%cn%d-%" PRIu64 "k-%u", POOL_STOCK_PREFIX,
                         t->node, t->page_size / 1024, p->stock.seq++);
        while (pools_find(p, pool->rec.name));
        pools_unlock(&p->reg.lock);
        pool->rec.node = t->node;
        pool->rec.page_size = t->page_size;
        pool->rec.size_bytes = t->size_bytes;
        pool->rec.created_at = pool->rec.started_at = pools_now_unix();
        /* In the stock directory: no other process can reach it there. */
        r = pools_path_of(p, t->page_size, pool->rec.name, pool->path, sizeof(pool->path));
        if (r < 0) {
                free(pool);
                return r;
        }

        r = pools_create_file(p, pool, t->size_bytes, true, &err);
        if (r < 0) {
                log_warn("pools: stock refill: %s", err.detail);
                free(pool);
                return r;
        }
        (void)pool_transition(&pool->rec, POOL_STOCK_WARMING, NULL, NULL);
        /* By hand: reg.lock is dropped before the refill job is started. */
        pools_lock(&p->reg.lock);
        pools_set_hold(pool, POOL_CREATING);
        r = pools_add(p, pool);
        p->stock.refilling_set = false; /* the row counts itself now */
        pools_unlock(&p->reg.lock);
        if (r < 0)
                goto out_unlink;
        r = pools_start_job(p, pool);
        if (r < 0) {
                log_warn("pools: starting the refill of stock file %s: %s", pool->rec.name, strerror(-r));
                goto out_drop;
        }
        r = pools_save(p);
        if (r < 0) {
                log_err("pools: saving state for stock file %s: %s", pool->rec.name, strerror(-r));
                goto out_drop;
        }
        /* By hand: reg.lock is dropped before the log line. */
        pools_lock(&p->reg.lock);
        pools_set_hold(pool, POOL_FREE);
        pthread_cond_broadcast(&p->reg.changed);
        pools_unlock(&p->reg.lock);
        log_info("pools: refilling stock: %s, %" PRIu64 " bytes on node %d", pool->rec.name, t->size_bytes,
                 t->node);
        return 0;

out_drop:
        pools_abandon(p, pool, true);
        return r;
out_unlink:
        pools_abandon(p, pool, false);
        return r;
}

/* How long after a hand-out its refill waits: the answer to the hand-out
 * (and the VMM its caller starts next) should not share the node's CPUs
 * with the refill's workers; the refill is background work of seconds. */
#define REFILL_AFTER_HAND_OUT_NS (20 * UINT64_C(1000000))

void pools_stock_refill(struct pools *p)
{
        uint64_t now = now_mono_ns(), after;

        /* By hand: reg.lock only to read the time of the last hand-out. */
        pools_lock(&p->reg.lock);
        after = p->stock.handed_out_ns ? p->stock.handed_out_ns + REFILL_AFTER_HAND_OUT_NS : 0;
        pools_unlock(&p->reg.lock);
        p->stock.next_refill_ns = after > now ? after : 0;
        if (p->stock.next_refill_ns)
                return;
        for (size_t i = 0;; i++) {
                struct stock_target_record t;
                bool have = false;
                int r = 0;

                /* By hand: admit.lock is dropped before the log line. */
                pools_lock(&p->admit.lock);
                /* By hand: reg.lock only to copy the target; add_one takes it. */
                pools_lock(&p->reg.lock);
                if (i < p->stock.n_targets) {
                        t = p->stock.targets[i];
                        have = true;
                }
                pools_unlock(&p->reg.lock);
                if (!have) {
                        pools_unlock(&p->admit.lock);
                        return;
                }
                for (;;) {
                        /* By hand: reg.lock is dropped before add_one, which takes it. */
                        pools_lock(&p->reg.lock);
                        uint64_t deficit = deficit_of(p, &t);
                        pools_unlock(&p->reg.lock);
                        if (deficit == 0)
                                break;
                        r = add_one(p, &t); /* marks the refill once it found room */
                        /* Its row (if any) is counted from here on. */
                        /* By hand: reg.lock only for the flag; the loop goes on without it. */
                        pools_lock(&p->reg.lock);
                        p->stock.refilling_set = false;
                        pools_unlock(&p->reg.lock);
                        if (r < 0)
                                break;
                }
                pools_unlock(&p->admit.lock);
                if (r == -ENOSPC && !p->stock.short_logged) {
                        /* Said once per target change: it is the host's
                         * state, not an event; pools come first. */
                        p->stock.short_logged = true;
                        log_info("pools: node %d has too few free %" PRIu64
                                 "-byte pages to refill its stock of %" PRIu64 "-byte files; waiting",
                                 t.node, t.page_size, t.size_bytes);
                }
        }
}

/* ---- hand-out ---- */

/* A stock file some process holds (or that has another link) is never
 * handed out: removed (its pages go back once its holders let go), and the
 * request warms a fresh file instead.  POOL busy, at POOL->path. */
static void drop_held(struct pools *p, struct pool *pool, const char *why)
{
        log_warn("pools: stock file %s is not handed out: %s; removing it", pool->rec.name, why);
        pools_file_make_private(pool->path);
        if (pools_remove(p, pool, RELEASE_NONE) < 0)
                pools_release(p, pool);
}

/* Hand the stock file POOL (busy) at OLD_PATH, in the stock directory, to
 * REQ's name in the pool directory, written to NEW_PATH (SIZE bytes).
 * Nothing but the daemon can have reached the file since it entered the
 * stock directory (mode 0700: no other process can resolve a name in it,
 * not even for an O_PATH descriptor), and a released file got there only
 * after the recycle thread found no holder of it in any process
 * (pools_recycle.c).  So no process is looked into here: one link and its
 * lease granted (two syscalls: a root process may still have opened it),
 * it gets the pool's owner and mode while still in the stock directory,
 * and one rename(2) shows it under the pool's name.  check_registry found
 * no pool of that name and the orphan sweep removed unrecorded files, so a
 * file there would be someone else's: it is never replaced.  False,
 * logged, with POOL released (or removed, if held), when there is no
 * hand-out. */
static bool rename_to_pool(struct pools *p, struct pool *pool, const struct pool_req *req, const char *old_path,
                           char *new_path, size_t size)
{
        char why[POOL_ERROR_DETAIL_MAX];
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        snprintf(new_path, size, "%s/%s", pools_mount_dir(p, req->page_size), req->name);
        fd = open(old_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_dev != pool->file_dev || st.st_ino != pool->file_ino) {
                log_warn("pools: cannot hand out stock file %s: %s", pool->rec.name,
                         fd < 0 ? strerror(errno) : "its file was replaced");
                pools_release(p, pool);
                return false;
        }
        r = pools_file_held(fd, why, sizeof(why));
        if (r == 1 || r == -EMLINK) {
                drop_held(p, pool, why);
                return false;
        }
        if (r < 0) {
                /* Cannot tell: not handed out, and kept (removing it would
                 * only make the refill warm one we cannot tell about either). */
                log_warn("pools: stock file %s is not handed out: %s", pool->rec.name, why);
                pools_release(p, pool);
                return false;
        }
        r = pools_file_hand_to_vm(p, fd, req->file_owned, req->file_uid, req->file_gid);
        if (r == 0)
                r = pools_rename_noreplace(old_path, new_path);
        if (r < 0) {
                (void)pools_file_private_fd(fd);
                log_warn("pools: cannot hand out stock file %s as %s: %s", pool->rec.name, req->name,
                         r == -EEXIST ? "a file of that name exists" : strerror(-r));
                pools_release(p, pool);
                return false;
        }
        return true;
}

/* A hand-out is done (its record saved): count it in COUNTER, let others see
 * the pool, fill RET and wake the upkeep thread for the refill. */
static int handed_out(struct pools *p, struct pool *pool, uint64_t *counter, struct pool_view *ret,
                      bool *ret_taken)
{
        /* By hand: reg.lock is dropped before upkeep is kicked. */
        pools_lock(&p->reg.lock);
        (*counter)++;
        p->stock.handed_out_ns = now_mono_ns();
        pools_set_hold(pool, POOL_FREE);
        pools_fill_view(pool, ret);
        pthread_cond_broadcast(&p->reg.changed);
        pools_unlock(&p->reg.lock);
        pools_kick(p);
        *ret_taken = true;
        return 0;
}

/* The largest ready stock file of REQ's node and page size smaller than REQ,
 * renamed to REQ's name, grown, and only the part it gained warmed (normal
 * priority: it is a pool now).  Same returns as pools_stock_take. */
static int take_partial(struct pools *p, const struct pool_req *req, struct pool_view *ret, bool *ret_taken,
                        struct problem *err)
{
        char old_path[POOL_PATH_MAX], new_path[POOL_PATH_MAX];
        struct pool_record next;
        struct pool *pool = NULL;
        uint64_t old_size;
        int fd, r;

        /* By hand: reg.lock is dropped before admission and the rename. */
        pools_lock(&p->reg.lock);
        for (;;) {
                /* The largest, a free one among equals. */
                pool = NULL;
                for (size_t i = 0; p->reg.n_stock_named && i < p->reg.n_pools; i++) {
                        struct pool *o = p->reg.pools[i];
                        if ((o->hold == POOL_FREE || o->hold == POOL_BUSY) && o->rec.state == POOL_STOCK &&
                            o->rec.node == req->node && o->rec.page_size == req->page_size &&
                            o->rec.size_bytes < req->size_bytes &&
                            (!pool || o->rec.size_bytes > pool->rec.size_bytes ||
                             (o->rec.size_bytes == pool->rec.size_bytes && o->hold == POOL_FREE)))
                                pool = o;
                }
                if (!pool || pool->hold == POOL_FREE)
                        break;
                /* The upkeep thread is finishing its refill or recycle (it
                 * shows "stock" in GET /v1/stock already): wait for it, as
                 * pools_stock_take does for a file of its own size, rather
                 * than grow a smaller file.  Whoever holds a stock row never
                 * waits for admit.lock, which we hold. */
                pools_cond_wait(&p->reg.changed, &p->reg.lock);
        }
        if (pool)
                pools_set_hold(pool, POOL_BUSY);
        pools_unlock(&p->reg.lock);
        if (!pool)
                return 0;
        old_size = pool->rec.size_bytes;
        /* Only the part it gains needs free pages. */
        struct problem admit_err = {0};
        struct pools_growth growth;
        /* No giving way here: it would wait for the row we hold.  A
         * refusal falls back to an ordinary create, which gives way.  A
         * growth ("reserve") is put back on every way out but success. */
        if (pools_admit(p, req->node, req->page_size, (req->size_bytes - old_size) / req->page_size, req->reserve,
                        false, &growth, &admit_err) < 0) {
                pools_release(p, pool);
                return 0;
        }
        snprintf(old_path, sizeof(old_path), "%s", pool->path);
        if (!rename_to_pool(p, pool, req, old_path, new_path, sizeof(new_path))) {
                pools_undo_growth(p, &growth);
                return 0;
        }
        fd = open(new_path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)req->size_bytes) < 0) {
                r = -errno;
                if (fd >= 0)
                        close(fd);
                /* Removed, not put back: under the pool's name the pool
                 * group could reach it, so it never goes back to the stock
                 * (whose files no process can have reached). */
                pools_file_make_private(new_path);
                unlink(new_path);
                problem_raise(err, PROBLEM_POOL_FILE_ERROR, "growing %s: %s", new_path, strerror(-r));
                if (pools_remove(p, pool, RELEASE_NONE) < 0)
                        pools_release(p, pool);
                pools_undo_growth(p, &growth);
                return r;
        }

        next = pool->rec;
        (void)pool_transition(&next, POOL_WARMING, NULL, NULL);
        pools_record_from_req(&next, req);
        next.bytes_done = old_size;
        next.from_stock = POOL_FROM_STOCK_PARTIAL;
        log_info("pools: pool %s handed out from stock file %s (%" PRIu64 " bytes), growing it to %" PRIu64,
                 req->name, pool->rec.name, old_size, req->size_bytes);
        /* By hand: reg.lock is dropped before the commit, which takes it. */
        pools_lock(&p->reg.lock);
        snprintf(pool->path, sizeof(pool->path), "%s", new_path);
        pool->have_last = false;
        pool->fd = fd;
        pool->job_offset = old_size;
        pool->present_at_start = old_size;
        pools_unlock(&p->reg.lock);
        /* Saved as warming before the job starts: a crash from here on
         * resumes the whole file at start (populate skips present pages). */
        r = pools_commit(p, pool, &next);
        if (r == 0)
                r = pools_start_job(p, pool);
        if (r < 0) {
                problem_raise(err, r == -ENOMEM ? PROBLEM_INSUFFICIENT_HUGEPAGES : PROBLEM_WARM_START_FAILED,
                              "starting the warm of the part %s gained: %s", req->name, strerror(-r));
                if (pools_remove(p, pool, RELEASE_NONE) < 0)
                        pools_release(p, pool);
                pools_undo_growth(p, &growth);
                return r;
        }
        return handed_out(p, pool, &p->reg.stats.stock_partial_hits, ret, ret_taken);
}

int pools_stock_take(struct pools *p, const struct pool_req *req, struct pool_view *ret, bool *ret_taken,
                     struct problem *err)
{
        pools_assert_held(&p->admit.lock);
        char old_path[POOL_PATH_MAX], new_path[POOL_PATH_MAX];
        struct pool_record next;
        struct pool *pool = NULL;
        bool stocked = false;
        int r;

        /* By hand: reg.lock is dropped before the hand-out (rename, commit) or take_partial. */
        pools_lock(&p->reg.lock);
        for (size_t k = 0; k < p->stock.n_targets; k++)
                stocked |= p->stock.targets[k].node == req->node && p->stock.targets[k].page_size == req->page_size;
        /* No stock file at all (by name; admit.lock held, so no hand-out
         * is half done): nothing to look for. */
        for (size_t i = 0; p->reg.n_stock_named && i < p->reg.n_pools && !pool; i++) {
                struct pool *o = p->reg.pools[i];
                if (!pool_state_is_stock(o->rec.state) || o->rec.node != req->node ||
                    o->rec.page_size != req->page_size || o->rec.size_bytes != req->size_bytes)
                        continue;
                if (o->hold == POOL_BUSY) {
                        /* The upkeep thread is finishing its refill (it
                         * shows "stock" in GET /v1/stock already): wait
                         * for it rather than warm cold.  Whoever holds a
                         * stock row never waits for admit.lock. */
                        pools_cond_wait(&p->reg.changed, &p->reg.lock);
                        i = (size_t)-1;
                        continue;
                }
                if (o->hold == POOL_FREE && o->rec.state == POOL_STOCK)
                        pool = o;
        }
        if (!pool) {
                pools_unlock(&p->reg.lock);
                int q = take_partial(p, req, ret, ret_taken, err);
                if (q == 0 && !*ret_taken && stocked) {
                        POOLS_LOCKED(&p->reg.lock);
                        p->reg.stats.stock_misses++;
                }
                return q;
        }
        pools_set_hold(pool, POOL_BUSY);
        snprintf(old_path, sizeof(old_path), "%s", pool->path);
        pools_unlock(&p->reg.lock);

        if (!rename_to_pool(p, pool, req, old_path, new_path, sizeof(new_path)))
                return 0;

        next = pool->rec;
        (void)pool_transition(&next, POOL_READY, NULL, NULL);
        pools_record_from_req(&next, req);
        next.bytes_done = next.size_bytes;
        next.from_stock = POOL_FROM_STOCK_FULL;
        log_info("pools: pool %s handed out from stock file %s", req->name, pool->rec.name);
        /* By hand: reg.lock is dropped before the commit, which takes it. */
        pools_lock(&p->reg.lock);
        snprintf(pool->path, sizeof(pool->path), "%s", new_path);
        pool->have_last = false;
        pools_unlock(&p->reg.lock);
        /* A crash before this save leaves a stock record whose file is gone
         * (dropped at start) and an unrecorded file (removed as an orphan):
         * nothing leaks and nothing is handed out twice. */
        r = pools_commit(p, pool, &next);
        if (r < 0) {
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED,
                              "saving the journal in %s: %s (the pool was not created)", p->state_dir, strerror(-r));
                if (pools_remove(p, pool, RELEASE_NONE) < 0)
                        pools_release(p, pool);
                return r;
        }
        return handed_out(p, pool, &p->reg.stats.stock_hits, ret, ret_taken);
}
