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
#include "pools_testing.h"
#include "util.h"

int pools_claim(struct pools *p, const char *name, struct pool_view *ret, struct problem *err)
{
        return pools_claim_pid(p, name, 0, ret, err);
}

/* Why PID cannot own a pool (owner_open's R), into ERR; returns R. */
static int owner_refused(pid_t pid, int r, struct problem *err)
{
        if (r == -ESRCH)
                problem_raise(err, PROBLEM_INVALID_FIELD,
                              "\"pid\": there is no process %d on this host, or only a zombie (exited, not "
                              "reaped); give the pid of the running VMM that maps the pool", (int)pid);
        else if (r == -ECHILD)
                problem_raise(err, PROBLEM_INVALID_FIELD,
                              "\"pid\": %d is the id of a thread, not of a process (give the pid of the "
                              "running VMM, its main thread's id)", (int)pid);
        else if (r == -ENOSYS)
                problem_raise(err, PROBLEM_INTERNAL_ERROR,
                              "this kernel has no pidfd_open (Linux 5.3 or later is needed to claim with a pid)");
        else
                problem_raise(err, PROBLEM_INTERNAL_ERROR, "process %d: %s", (int)pid, strerror(-r));
        return r;
}

int pools_claim_pid(struct pools *p, const char *name, pid_t pid, struct pool_view *ret, struct problem *err)
{
        _cleanup_close_ int pidfd = -1;
        struct pool_record next, before;
        struct pool *pool;
        uint64_t start = 0;
        int r;

        assert_return(p, -EINVAL);
        assert_return(name, -EINVAL);
        assert_return(ret, -EINVAL);
        if (pid < 0) {
                problem_raise(err, PROBLEM_INVALID_FIELD, "\"pid\": %d is not a process id", (int)pid);
                return -EINVAL;
        }
        /* Who the owner is, before touching the pool: bad input changes
         * nothing. */
        if (pid > 0) {
                r = owner_open(pid, &pidfd, &start);
                if (r < 0)
                        return owner_refused(pid, r, err);
        }

        /* By hand: reg.lock is dropped before pools_release and the commit, which take it. */
        pools_lock(&p->reg.lock);
        pool = pools_grab(p, name);
        if (!pool) {
                pools_unlock(&p->reg.lock);
                return pools_not_found(name, err);
        }
        r = 1;  /* 1: go on and commit */
        if (pool->rec.state != POOL_READY) {
                problem_raise(err, PROBLEM_POOL_NOT_READY, "pool \"%s\" is %s; only a ready pool can be claimed",
                              name, pool_state_name(pool->rec.state));
                r = -EBUSY;
        } else if (pool->rec.claimed && (pid == 0 || (pool->rec.owner_pid == pid &&
                                                      pool->rec.owner_start == start))) {
                r = 0;          /* claimed as asked already */
        } else if (pool->rec.claimed && pool->rec.owner_pid != 0) {
                problem_raise(err, PROBLEM_POOL_OWNED, "pool \"%s\" is claimed by process %d, which still "
                              "runs; it is released when that process exits", name, pool->rec.owner_pid);
                r = -EEXIST;    /* bound to another process */
        }
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
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED, "pool \"%s\": saving the journal in %s: %s; "
                              "not claimed", name, p->state_dir, strerror(-r));
                return r;
        }
        /* By hand: reg.lock is dropped before pools_release, which takes it. */
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

        /* By hand: reg.lock is dropped before the log line and the kick. */
        pools_lock(&p->reg.lock);
        pool = pools_find(p, name);
        if (pool) {
                const struct pool_record *r = pools_latest(pool);
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
