/* pools_create: the create path, PUT /v1/pools/{name}.
 *
 * Validate, then under admit.lock: the registry check (an identical pool is
 * answered as it is, a different one refused), a hand-out from stock when a
 * file fits (pools_stock.c), else admission (pools_admit.c), the file
 * (pools_file.c), the job (pools_jobs.c) and the save; a failure after
 * admission puts back what it took.  The result is -errno with a problem,
 * and whether a pool was made: the handler (api_pools.c) picks the status. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "pools_internal.h"
#include "units.h"
#include "util.h"

/* The first field in which REQ asks for another pool than R, with what each
 * says, or false if it asks for the same one.  Every field the pool keeps
 * counts: a PUT that would get a pool other than the one it describes (a TTL
 * it did not ask for, or none) must not be told 200.  "reserve" is not
 * compared: it says how to admit a new pool, and an existing one needs no
 * admission. */
static bool spec_differs(const struct pool_record *r, const struct pool_req *req, char *buf, size_t size)
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
        else if (strcmp(r->label, req->label) != 0)
                snprintf(buf, size, "\"label\": \"%s\" asked, the pool's is \"%s\" (it is for another user)",
                         req->label, r->label);
        else if (r->file_owned != req->file_owned ||
                 (r->file_owned && (r->file_uid != req->file_uid || r->file_gid != req->file_gid)))
                snprintf(buf, size, "the file's owner differs (the pool's file is %s)",
                         r->file_owned ? "one user's" : "in the pool group");
        else if (r->threads != req->threads)
                snprintf(buf, size, "\"threads\": %u asked, the pool has %u (0 = node default)", req->threads,
                         r->threads);
        else
                return false;
        return true;
}

static int validate(struct pools *p, const struct pool_req *req, struct problem *err)
{
        if (!pool_name_valid(req->name)) {
                problem_raise(err, PROBLEM_INVALID_FIELD, POOL_NAME_RULE);
                return -EINVAL;
        }
        if (pools_check_node_page_size(p, req->node, req->page_size, err) < 0)
                return -ENOENT;
        if (req->size_bytes == 0 || req->size_bytes % req->page_size != 0) {
                problem_raise(err, PROBLEM_INVALID_FIELD,
                              "size must be a positive multiple of the page size (%" PRIu64 " bytes)", req->page_size);
                return -EINVAL;
        }
        /* A file's size is an off_t: past it no admission, growth or
         * ftruncate message would say what is wrong. */
        if (req->size_bytes > (uint64_t)INT64_MAX) {
                problem_raise(err, PROBLEM_INVALID_FIELD,
                              "size %" PRIu64 " bytes is larger than a file can be (at most 2^63 - 1 bytes)",
                              req->size_bytes);
                return -EINVAL;
        }
        if ((req->threads && pools_check_threads(req->threads, err) < 0) ||
            (req->label[0] && pools_check_label(req->label, err) < 0))
                return -EINVAL;
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
                return -ENODEV;
        }
        return 0;
}

/* The idempotency/conflict check and the count limits (reg.lock held).  Returns
 * 1 with *ret filled for an identical existing pool, 0 to go on, or -errno. */
static int check_registry(struct pools *p, const struct pool_req *req, struct pool_view *ret,
                          struct problem *err)
{
        pools_assert_held(&p->reg.lock);
        uint64_t node_bytes = 0;
        struct pool *o;

        /* A busy pool may be on its way out (DELETE or TTL: releasing
         * while its removal is saved and its file unlinked): wait, as
         * grab_pool does, and look again.  Its holder never takes
         * admit.lock, which we hold. */
        while ((o = pools_find(p, req->name)) && (o->hold == POOL_BUSY || o->hold == POOL_RELEASING))
                pools_cond_wait(&p->reg.changed, &p->reg.lock);

        if (o) {
                const struct pool_record *r = pools_latest(o);
                char why[160 + 2 * POOL_LABEL_MAX];
                if (spec_differs(r, req, why, sizeof(why))) {
                        problem_raise(err, PROBLEM_POOL_CONFLICT,
                                      "pool %s exists and differs: %s (delete it first, or ask for it as it is)",
                                      r->name, why);
                        return -EEXIST;
                }
                pools_fill_view(o, ret);
                return 1;
        }
        /* By their names (O(1)), the pools never fewer than by their
         * latest records; counted exactly only near the limit. */
        size_t n_real = p->reg.n_pools - p->reg.n_stock_named;
        if (n_real >= p->max_pools) {
                n_real = 0;
                for (size_t i = 0; i < p->reg.n_pools; i++)
                        n_real += !pools_is_stock(p->reg.pools[i]);
        }
        if (n_real >= p->max_pools) {
                problem_raise(err, PROBLEM_TOO_MANY_POOLS, "the daemon holds %zu pools, its limit; delete some first",
                              n_real);
                return -ENOSPC;
        }
        if (p->cfg.max_node_warm_bytes) {
                for (size_t i = 0; i < p->reg.n_pools; i++) {
                        const struct pool_record *r = &p->reg.pools[i]->rec;
                        if (p->reg.pools[i]->hold != POOL_REMOVING && r->node == req->node &&
                            (r->state == POOL_WARMING || r->state == POOL_READY))
                                node_bytes += r->size_bytes;
                }
                if (node_bytes + req->size_bytes > p->cfg.max_node_warm_bytes) {
                        problem_raise(err, PROBLEM_NODE_WARM_LIMIT,
                                      "node %d holds %" PRIu64 " bytes in warming and ready pools; "
                                      "%" PRIu64 " more would pass its limit of %" PRIu64
                                      " (claim, delete or let pools expire first)",
                                      req->node, node_bytes, req->size_bytes, p->cfg.max_node_warm_bytes);
                        return -EDQUOT;
                }
        }
        return 0;
}

int pools_create(struct pools *p, const struct pool_req *req, struct pool_view *ret, bool *ret_created,
                 struct problem *err)
{
        struct pools_growth growth = {0};
        struct pool *pool = NULL;
        bool taken = false;
        int r;

        assert_return(p, -EINVAL);
        assert_return(req, -EINVAL);
        assert_return(ret, -EINVAL);
        assert_return(ret_created, -EINVAL);
        *ret_created = false;

        r = validate(p, req, err);
        if (r < 0)
                return r;

        /* By hand: admit.lock is dropped before the observer is told and upkeep kicked. */
        pools_lock(&p->admit.lock);
        /* By hand: reg.lock only for the registry check (the stock take below takes it). */
        pools_lock(&p->reg.lock);
        r = check_registry(p, req, ret, err);
        pools_unlock(&p->reg.lock);
        if (r != 0) {
                pools_unlock(&p->admit.lock);
                return r > 0 ? 0 : r;
        }

        r = pools_stock_take(p, req, ret, &taken, err);
        if (r < 0 || taken) {
                *ret_created = taken;
                goto out_unlock;
        }
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
        pools_record_from_req(&pool->rec, req);
        if ((size_t)snprintf(pool->path, sizeof(pool->path), "%s/%s", pools_mount_dir(p, req->page_size),
                             req->name) >= sizeof(pool->path)) {
                r = -ENAMETOOLONG;
                problem_raise(err, PROBLEM_POOL_FILE_ERROR, "path too long");
                goto out_free;
        }

        r = pools_create_file(p, pool, req->size_bytes, false, err);
        if (r < 0)
                goto out_free;

        (void)pool_transition(&pool->rec, POOL_WARMING, NULL, NULL);
        /* By hand: reg.lock is dropped before the warm job is started. */
        pools_lock(&p->reg.lock);
        pools_set_hold(pool, POOL_CREATING);
        r = pools_add(p, pool);
        pools_unlock(&p->reg.lock);
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
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED, "saving the journal in %s: %s (the pool was not created)",
                              p->state_dir, strerror(-r));
                goto out_drop;
        }

        /* By hand: both locks are dropped before the observer is told. */
        pools_lock(&p->reg.lock);
        pools_set_hold(pool, POOL_FREE);
        pools_fill_view(pool, ret);
        pthread_cond_broadcast(&p->reg.changed);
        pools_unlock(&p->reg.lock);
        pools_unlock(&p->admit.lock);
        pools_notify(p, req->name);
        /* The job may have finished already; upkeep skipped it while held. */
        pools_kick(p);
        *ret_created = true;
        return 0;

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
         * the growth.  Its file is gone first, so its
         * pages count as free again. */
        pools_undo_growth(p, &growth);
        pools_unlock(&p->admit.lock);
        /* What it took is free again (a stock file may have given way). */
        pools_kick(p);
        return r;
out_unlock:
        pools_unlock(&p->admit.lock);
        return r;
}
