/* pools_claim: claims, and pools bound to their owner process.
 *
 * A claim marks a ready pool as taken by a VM (its TTL no longer runs);
 * with a pid it also binds the pool to that process's life: the owner watch
 * (owner.c) tells pools_on_owner_exit when it exits, and the upkeep thread
 * then releases the pool (pools_upkeep.c), recycling it when its stock
 * target is short (pools_recycle.c).  Above the registry (pools_registry.c);
 * the locks are described in pools_internal.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "owner.h"
#include "pools_internal.h"
#include "util.h"

int pools_claim(struct pools *p, const char *name, struct pool_view *ret)
{
        return pools_claim_pid(p, name, 0, ret);
}

int pools_claim_pid(struct pools *p, const char *name, pid_t pid, struct pool_view *ret)
{
        _cleanup_close_ int pidfd = -1;
        struct journal_pool next, before;
        struct pool *pool;
        uint64_t start = 0;
        int r;

        if (pid < 0)
                return -EINVAL;
        /* Who the owner is, before touching the pool: bad input changes
         * nothing. */
        if (pid > 0) {
                r = owner_open(pid, &pidfd, &start);
                if (r < 0)
                        return r;
        }

        pools_lock(&p->reg.lock);
        pool = pools_grab(p, name);
        if (!pool) {
                pools_unlock(&p->reg.lock);
                return -ENOENT;
        }
        r = 1;  /* 1: go on and commit */
        if (pool->rec.state != POOL_READY)
                r = -EBUSY;
        else if (pool->rec.claimed && (pid == 0 || (pool->rec.owner_pid == pid &&
                                                    pool->rec.owner_start == start)))
                r = 0;          /* claimed as asked already */
        else if (pool->rec.claimed && pool->rec.owner_pid != 0)
                r = -EEXIST;    /* bound to another process */
        if (r <= 0) {
                if (r == 0)
                        pools_fill_view(pool, ret);
                pools_unlock(&p->reg.lock);
                pools_release(p, pool);
                return r;
        }
        before = next = pool->rec;
        pools_unlock(&p->reg.lock);

        next.claimed = true;
        next.owner_pid = pid;
        next.owner_start = start;
        r = pools_commit(p, pool, &next);
        if (r == 0 && pid > 0)
                /* After the commit: an exit from now on finds the owner in
                 * the record.  One before it is reported at once (a pidfd
                 * stays readable). */
                r = owner_watch_add(p->owners, name, pid, start, TAKE_FD(pidfd));
        if (r < 0) {
                /* Not durable or not watched: undo, so a restart cannot
                 * contradict us and no pool is bound to an unwatched pid. */
                (void)pools_commit(p, pool, &before);
                pools_release(p, pool);
                return r;
        }
        pools_lock(&p->reg.lock);
        if (pid > 0) {
                /* Bound to a process now: the sweep and its release are
                 * for pools without one. */
                pool->unmapped_since = 0;
                if (pool->release_due == RELEASE_UNMAPPED)
                        pool->release_due = RELEASE_NONE;
        }
        pools_fill_view(pool, ret);
        pools_unlock(&p->reg.lock);
        /* Through pools_release: the new owner may have exited already. */
        pools_release(p, pool);
        if (pid > 0)
                log_info("pools: pool %s is bound to process %d", name, (int)pid);
        return 0;
}

void pools_on_owner_exit(void *arg, const char *name, pid_t pid, uint64_t start)
{
        struct pools *p = arg;
        struct pool *pool;
        bool due = false;

        pools_lock(&p->reg.lock);
        pool = pools_find(p, name);
        if (pool) {
                const struct journal_pool *r = pools_latest(pool);
                if (r->claimed && r->owner_pid == pid && r->owner_start == start) {
                        pool->release_due = RELEASE_OWNER_EXITED;
                        pool->retry_at = 0;
                        due = true;
                }
        }
        pools_unlock(&p->reg.lock);
        if (due) {
                log_info("pools: process %d, owner of pool %s, exited", (int)pid, name);
                pools_kick(p);
        }
}
