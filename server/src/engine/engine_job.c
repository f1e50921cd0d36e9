/* engine_job.c: a job's life, from engine_submit to job_free.  Submitting
 * checks the spec, plans the chunks (plan.c), maps the file's range and binds
 * the mapping to the node, then puts the job at the head of its node's run
 * queue, where the node's workers (engine.c) take its chunks.  Whoever
 * finishes the job (the worker that completes its last chunk, or the thread
 * in job_cancel) does the rest outside the lock: sum the placement checks,
 * munmap and on_done (on_done first when the job succeeded).  `finishing` makes sure exactly one of them does, and
 * `complete` tells job_cancel/job_free that no engine thread will touch the
 * job again (engine_types.h has the rules).
 *
 * The mapping is MAP_SHARED without MAP_NORESERVE, on purpose: hugetlbfs then
 * reserves every page of the file at mmap time, so a pool that cannot be had
 * fails at once with ENOMEM from engine_submit (before any zeroing), and
 * while it warms no other process can take the pages it will need.  The
 * reservation is global, not per node: a node that runs dry midway still
 * shows up as EFAULT from populate.  Populating pages that are already there
 * is cheap and succeeds, which is what resuming a warm after a restart needs.
 *
 * A zero job maps with MAP_POPULATE: its pages are all present (checked
 * first), so that only fills the page table, about 0.5 us per page here
 * (1 ms for 4 GiB of 2 MiB pages), in one pass before any zeroing.  Left to
 * each chunk's MADV_POPULATE_WRITE instead, the same mapping ran 10-50
 * times slower per page (9-50 ms per thread for 4 GiB, measured), because
 * each chunk's faults then queue for memory behind the other workers'
 * zeroing stores.  The chunks still populate (engine_kernel.c): on mapped
 * pages that is a cheap walk, and it stays the guard against a page that
 * went missing. */
#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "engine_types.h"
#include "util.h"

/* A zero job must not take pages from the kernel: every page of the file,
 * up to the job's end at least, must be there already.  hugetlbfs counts
 * the pages a file holds in st_blocks (512-byte units). */
static int check_populated(const struct engine *e, const struct job_spec *spec)
{
        struct stat st;

        if (e->ops.fstat(spec->fd, &st) < 0)
                return errno > 0 ? -errno : -EIO;
        if (st.st_size < 0 || (uint64_t)st.st_size < spec->size_bytes ||
            (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size)
                return -ENODATA;
        return 0;
}

int engine_submit(struct engine *e, const struct job_spec *spec, struct job **ret)
{
        unsigned long mask[NODEMASK_LONGS];
        struct node_ctx *n;
        struct job *j;
        uint64_t len;
        void *map;
        int r;

        assert_return(e, -EINVAL);
        assert_return(spec, -EINVAL);
        assert_return(ret, -EINVAL);
        n = node_find(e, spec->node);
        if (!n)
                return -ENOENT;
        /* The caller's contract (engine.h): an open file, a known kind and
         * priority.  The range is checked below and by the planner. */
        assert_return(spec->fd >= 0, -EINVAL);
        assert_return(spec->kind == JOB_POPULATE || spec->kind == JOB_ZERO, -EINVAL);
        assert_return(spec->prio == JOB_PRIO_NORMAL || spec->prio == JOB_PRIO_LOW, -EINVAL);
        if (spec->size_bytes > SIZE_MAX || spec->offset >= spec->size_bytes || spec->size_bytes > INT64_MAX)
                return -EINVAL;
        /* The mapping starts at OFFSET, which must be on a page (the planner
         * checks page_size and that the length is a multiple of it). */
        if (spec->page_size == 0 || spec->offset % spec->page_size != 0)
                return -EINVAL;
        len = spec->size_bytes - spec->offset;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        r = (spec->prio == JOB_PRIO_LOW ? plan_make_low : plan_make)(len, spec->page_size, n->n_workers,
                                                                     spec->threads, &j->plan);
        if (r == 0 && spec->kind == JOB_ZERO)
                r = check_populated(e, spec);
        if (r < 0) {
                free(j);
                return r;
        }
        j->n = n;
        j->spec = *spec;
        j->len = len;
        link_init(&j->run);
        link_init(&j->all);

        map = e->ops.mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | (spec->kind == JOB_ZERO ? MAP_POPULATE : 0),
                          spec->fd, (off_t)spec->offset);
        if (map == MAP_FAILED) {
                r = errno > 0 ? -errno : -EIO;
                free(j);
                return r;
        }
        /* The workers' own policy is bound too, but the mapping's policy is
         * what decides where hugetlb faults take their pages from.  Without
         * NUMA support in the kernel there is only one node: nothing to bind. */
        nodemask_set(mask, spec->node);
        if (e->ops.mbind(map, len, MPOL_BIND, mask, NODEMASK_BITS + 1, 0) < 0 && errno != ENOSYS) {
                r = errno > 0 ? -errno : -EIO;
                e->ops.munmap(map, len);
                free(j);
                return r;
        }
        j->map = map;
        j->state = JOB_RUNNING;
        j->started_ns = now_mono_ns();

        hpw_lock(&n->lock);
        link_add_tail(&n->jobs, &j->all);
        /* At the head of its queue: the newcomer has had no chunk yet, so it
         * is served next among its priority; from then on it takes its turn
         * at the tail. */
        link_add_tail(n->run[spec->prio].next, &j->run);
        j->queued = true;
        pthread_cond_broadcast(&n->work);
        hpw_unlock(&n->lock);

        *ret = j;
        return 0;
}

void job_get_status(struct job *j, struct job_status *ret)
{
        hpw_lock(&j->n->lock);
        *ret = (struct job_status){
                .state = j->state,
                .bytes_done = j->bytes_done,
                .threads = j->plan.threads,
                .error = j->state == JOB_FAILED ? j->error : 0,
                .error_offset = j->state == JOB_FAILED ? j->error_offset : 0,
                .verified = j->verified,
                .pages_off_node = j->pages_off_node,
                .started_ns = j->started_ns,
                .finished_ns = j->finished_ns,
        };
        hpw_unlock(&j->n->lock);
}

/* Signals everyone waiting on the job that it is complete.  Called once, by
 * the thread that owned the final phase, after on_done returned. */
static void job_complete(struct job *j)
{
        struct node_ctx *n = j->n;

        hpw_lock(&n->lock);
        j->complete = true;
        pthread_cond_broadcast(&n->changed);
        hpw_unlock(&n->lock);
}

/* Final phase of a job whose chunks are all done or that failed: runs
 * unlocked, in the worker that did the last chunk.
 *
 * A job that succeeded is announced (state, finished_ns, on_done) before
 * its mapping goes: every page is in the file by then, and tearing down the
 * page table of 4 GiB took 1.5 ms here, which the caller can spend telling
 * its client the pool is ready.  The job is complete, and job_free returns,
 * only after the munmap, so whoever truncates the file after job_free finds
 * its pages freed at once (a page still mapped here would go back to the
 * kernel only at our munmap).  A failed job unmaps first: its mapping may
 * still hold a reservation for pages it never got, which a retry needs. */
void job_finish(struct job *j)
{
        const struct engine *e = j->n->e;
        uint64_t off = 0;
        bool verified = false;
        int error;

        engine_assert_unheld(&j->n->lock);

        /* No worker writes `error` or the placement sums any more: all
         * chunks are accounted for. */
        hpw_lock(&j->n->lock);
        error = j->error;
        verified = error == 0 && !j->check_failed;
        off = j->off_node_seen;
        hpw_unlock(&j->n->lock);

        if (error != 0)
                e->ops.munmap(j->map, j->len);

        hpw_lock(&j->n->lock);
        if (error != 0)
                j->map = NULL;
        j->state = error == 0 ? JOB_DONE : JOB_FAILED;
        j->verified = verified;
        j->pages_off_node = verified ? off : 0;
        j->finished_ns = now_mono_ns();
        hpw_unlock(&j->n->lock);

        if (j->spec.on_done)
                j->spec.on_done(j, j->spec.arg);

        if (error == 0) {
                e->ops.munmap(j->map, j->len);
                hpw_lock(&j->n->lock);
                j->map = NULL;
                hpw_unlock(&j->n->lock);
        }
        job_complete(j);
}

/* Take J out of its run queue (lock held).  When that empties the normal
 * queue while low-priority jobs wait, idle workers may now serve them. */
void job_unqueue(struct node_ctx *n, struct job *j)
{
        engine_assert_held(&n->lock);
        link_del(&j->run);
        j->queued = false;
        if (j->spec.prio == JOB_PRIO_NORMAL && link_empty(&n->run[JOB_PRIO_NORMAL]) &&
            !link_empty(&n->run[JOB_PRIO_LOW]))
                pthread_cond_broadcast(&n->work);
}

void job_cancel(struct job *j)
{
        struct node_ctx *n;

        if (!j)
                return;
        n = j->n;
        engine_assert_unheld(&n->lock);
        hpw_lock(&n->lock);
        if (j->finishing) {
                /* Finishing on its own (or another cancel): wait until it is
                 * complete so that on_done has run when we return. */
                while (!j->complete)
                        hpw_cond_wait(&n->changed, &n->lock);
                hpw_unlock(&n->lock);
                return;
        }
        j->cancel = true;
        j->finishing = true;
        if (j->queued)
                job_unqueue(n, j);
        while (j->active > 0)
                hpw_cond_wait(&n->changed, &n->lock);
        hpw_unlock(&n->lock);

        /* No worker is inside a chunk and none will enter one. */
        n->e->ops.munmap(j->map, j->len);

        hpw_lock(&n->lock);
        j->map = NULL;
        j->state = JOB_CANCELLED;
        j->finished_ns = now_mono_ns();
        hpw_unlock(&n->lock);

        if (j->spec.on_done)
                j->spec.on_done(j, j->spec.arg);
        job_complete(j);
}

void job_free(struct job *j)
{
        if (!j)
                return;
        if (j->n) {
                /* A job still running is cancelled; one whose final phase is
                 * under way is waited for, so no engine thread touches it
                 * after the free. */
                job_cancel(j);
                hpw_lock(&j->n->lock);
                link_del(&j->all);
                hpw_unlock(&j->n->lock);
        }
        free(j);
}
