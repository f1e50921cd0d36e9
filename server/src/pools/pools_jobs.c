/* pools_jobs: a pool's warm (or zero) job in the engine (engine.h).
 *
 * A pool in state warming has a job; when the job ends, on_done runs in an
 * engine thread that must not block, so it only marks the job done and
 * kicks the upkeep thread (pools_upkeep.c), which does the slow follow-up. */
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

static void on_job_done(struct job *job, void *arg)
{
        struct pool *pool = arg;
        struct pools *p = pool->owner;

        POOLS_LOCKED(&p->wake.lock);
        pool->job_done = true;
        p->wake.kicked = true;
        pthread_cond_signal(&p->wake.kick);
}

/* Start warming POOL (its fd is open).  -errno from engine_submit. */
int pools_start_job(struct pools *p, struct pool *pool)
{
        struct job_spec spec = {
                .node = pool->rec.node,
                .fd = pool->fd,
                .size_bytes = pool->rec.size_bytes,
                .page_size = pool->rec.page_size,
                .threads = pool->rec.threads,
                .offset = pool->job_offset,
                /* A recycle zeroes the file in place; it and stock
                 * refills yield to pool warms on the node. */
                .kind = pool->rec.state == POOL_RECYCLING ? JOB_ZERO : JOB_POPULATE,
                .prio = pool_state_is_stock(pool->rec.state) ? JOB_PRIO_LOW : JOB_PRIO_NORMAL,
                .on_done = on_job_done,
                .arg = pool,
        };
        struct job *job;
        int r;

        /* By hand: wake.lock is a leaf, dropped before engine_submit. */
        pools_lock(&p->wake.lock);
        pool->job_done = false;
        pools_unlock(&p->wake.lock);
        r = engine_submit(p->cfg.engine, &spec, &job);
        if (r < 0)
                return r;
        POOLS_LOCKED(&p->reg.lock);
        pool->job = job;
        pools_mark_changed(pool);
        pool->have_last = false;
        p->reg.stats.jobs_started++;
        return 0;
}
