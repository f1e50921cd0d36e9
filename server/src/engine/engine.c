/* engine: per-NUMA-node worker threads that prefault hugetlbfs pool files
 * (engine.h says what for).  This file holds the engine and its nodes: the
 * workers, pinned to their node's CPUs with their memory bound to it, the
 * per-node run queues, and the worker loop that hands out chunks.  A job's
 * life (submit, status, final phase, cancel, free) is in engine_job.c, the
 * kernel touch points in engine_kernel.c, and the structs they share, with
 * what the lock guards and who owns what, in engine_types.h.
 *
 * Shape.  Every node gets its workers once, at engine_new(): creating a
 * thread maps its stack, which takes the mmap lock as a writer and would
 * stall behind (and stall) running populates.  A node has one mutex and two
 * condition variables: `work` wakes idle workers when a chunk can be taken,
 * `changed` wakes whoever waits for a job to go quiet or complete.  Jobs with
 * chunks left to hand out sit in the node's run queue; a worker takes one
 * chunk from the job at the head and moves that job to the tail, so jobs on
 * one node get their chunks round-robin.  Nodes share nothing, so jobs on
 * different nodes run side by side.
 *
 * Priority.  A node has one run queue per priority.  A worker takes a chunk
 * of a low-priority job (stock refill, recycle) only when the normal queue is
 * empty, i.e. no pool warm on the node has a chunk left to hand out, even if
 * the pool warm is at its thread cap and a worker idles: the stock must not
 * compete with a pool warm for memory bandwidth either.  Chunks in flight are
 * never interrupted, so a pool warm that arrives waits for at most one
 * low-priority chunk per worker; plan_make_low keeps those chunks small.
 *
 * The lock is only taken to pick a chunk and to account for it.  The chunk
 * itself, and the check of where its pages went (move_pages in query mode),
 * run outside it (engine_kernel.c), so the placement check runs beside other
 * chunks' populates rather than as a serial tail.  The worker that accounts
 * for a job's last chunk runs the job's final phase (engine_job.c). */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine_types.h"
#include "topo.h"
#include "util.h"

/* Round-robin within a priority: the first job in the queue that may take
 * one more worker; it moves to the tail so the next pick serves the job
 * after it.  Low-priority jobs only when no normal job has chunks left, even
 * one at its thread cap (see the top of this file). */
static struct job *pick_job(struct node_ctx *n)
{
        engine_assert_held(&n->lock);
        struct link *q = !link_empty(&n->run[JOB_PRIO_NORMAL]) ? &n->run[JOB_PRIO_NORMAL] : &n->run[JOB_PRIO_LOW];

        for (struct link *l = q->next; l != q; l = l->next) {
                struct job *j = container_of(l, struct job, run);

                if (j->active < j->plan.threads) {
                        link_del(&j->run);
                        link_add_tail(q, &j->run);
                        return j;
                }
        }
        return NULL;
}

static void worker_setup(struct worker *w)
{
        struct node_ctx *n = w->n;

        w->tid = gettid();
        if (n->cpus)
                w->pinned = pthread_setaffinity_np(pthread_self(), n->cpus_size, n->cpus) == 0;
        if (n->e->numa) {
                unsigned long mask[NODEMASK_LONGS];

                nodemask_set(mask, n->id);
                w->mem_bound = set_mempolicy(MPOL_BIND, mask, NODEMASK_BITS + 1) == 0;
        }
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        struct node_ctx *n = w->n;
        const struct engine *e = n->e;

        /* "hpw-n<node>-w<i>": visible in top -H and /proc/<pid>/task/<tid>/comm,
         * so operators and the two-node guest test can tell whose worker runs where. */
        char name[16];
        snprintf(name, sizeof(name), "hpw-n%d-w%u", n->id, (unsigned)(w - n->workers));
        pthread_setname_np(pthread_self(), name);
        worker_setup(w);

        hpw_lock(&n->lock);
        n->started++;
        pthread_cond_broadcast(&n->changed);
        for (;;) {
                struct job *j;
                uint64_t off, len;
                int r;

                while (!(j = pick_job(n)) && !n->stop)
                        hpw_cond_wait(&n->work, &n->lock);
                if (!j)
                        break;

                off = j->next_off;
                len = plan_chunk_len(&j->plan, j->len - off);
                j->next_off += len;
                if (j->next_off == j->len)
                        job_unqueue(n, j);
                j->active++;
                hpw_unlock(&n->lock);

                uint64_t off_node = 0;
                int check = -1;
                r = job_do_chunk(e, j, off, len);
                if (r == 0)
                        check = job_check_placement(e, j, off, len, &off_node);

                hpw_lock(&n->lock);
                j->active--;
                if (check < 0)
                        j->check_failed = true;
                else
                        j->off_node_seen += off_node;
                if (r < 0) {
                        if (j->error == 0) {
                                j->error = r;
                                j->error_offset = off;
                        }
                        if (j->queued)
                                job_unqueue(n, j);
                } else
                        j->bytes_done += len;

                if (j->cancel) {
                        /* job_cancel owns the rest; tell it when we are all out. */
                        if (j->active == 0)
                                pthread_cond_broadcast(&n->changed);
                        continue;
                }
                if (j->active == 0 && !j->queued && !j->finishing) {
                        j->finishing = true;
                        hpw_unlock(&n->lock);
                        job_finish(j);
                        hpw_lock(&n->lock);
                }
        }
        hpw_unlock(&n->lock);
        return NULL;
}

/* The node's CPUs that sched_getaffinity allows us.  *ret_set is NULL when
 * there are none (memory-only node, or a cpuset that excludes them all). */
static int node_cpus(const struct topo_node *tn, cpu_set_t **ret_set, size_t *ret_size, unsigned *ret_count)
{
        cpu_set_t *allowed = NULL, *set;
        size_t allowed_size = 0;
        unsigned count = 0;

        if (!tn->cpus || tn->cpu_count == 0) {
                *ret_set = NULL;
                *ret_size = 0;
                *ret_count = 0;
                return 0;
        }
        /* The kernel refuses a mask shorter than its own; grow until it fits. */
        for (int ncpus = 1024;; ncpus *= 2) {
                allowed = CPU_ALLOC(ncpus);
                if (!allowed)
                        return -ENOMEM;
                allowed_size = CPU_ALLOC_SIZE(ncpus);
                if (sched_getaffinity(0, allowed_size, allowed) == 0)
                        break;
                CPU_FREE(allowed);
                if (errno != EINVAL || ncpus >= (1 << 20))
                        return -errno;
        }

        set = CPU_ALLOC(tn->cpus_size * 8);
        if (!set) {
                CPU_FREE(allowed);
                return -ENOMEM;
        }
        CPU_ZERO_S(tn->cpus_size, set);
        for (size_t cpu = 0; cpu < tn->cpus_size * 8; cpu++)
                if (CPU_ISSET_S(cpu, tn->cpus_size, tn->cpus) && cpu < allowed_size * 8 &&
                    CPU_ISSET_S(cpu, allowed_size, allowed)) {
                        CPU_SET_S(cpu, tn->cpus_size, set);
                        count++;
                }
        CPU_FREE(allowed);
        if (count == 0) {
                CPU_FREE(set);
                set = NULL;
        }
        *ret_set = set;
        *ret_size = set ? tn->cpus_size : 0;
        *ret_count = count;
        return 0;
}

static void node_stop(struct node_ctx *n)
{
        if (!n->locks_ready)
                return;
        hpw_lock(&n->lock);
        n->stop = true;
        pthread_cond_broadcast(&n->work);
        hpw_unlock(&n->lock);
        for (unsigned i = 0; i < n->n_created; i++)
                pthread_join(n->workers[i].thread, NULL);
        n->n_created = 0;
}

static void node_destroy(struct node_ctx *n)
{
        node_stop(n);
        if (n->locks_ready) {
                pthread_cond_destroy(&n->changed);
                pthread_cond_destroy(&n->work);
                hpw_mutex_destroy(&n->lock);
        }
        free(n->workers);
        if (n->cpus)
                CPU_FREE(n->cpus);
}

static int node_start(struct engine *e, struct node_ctx *n, const struct topo_node *tn, unsigned cap)
{
        sigset_t all, old;
        unsigned cpu_count = 0;
        int r;

        n->e = e;
        n->id = tn->id;
        link_init(&n->run[JOB_PRIO_NORMAL]);
        link_init(&n->run[JOB_PRIO_LOW]);
        link_init(&n->jobs);
        r = node_cpus(tn, &n->cpus, &n->cpus_size, &cpu_count);
        if (r < 0)
                return r;
        n->n_workers = cpu_count ? cpu_count : 1;
        if (cap && n->n_workers > cap)
                n->n_workers = cap;
        n->workers = calloc(n->n_workers, sizeof(*n->workers));
        if (!n->workers)
                return -ENOMEM;

        hpw_mutex_init(&n->lock);
        pthread_cond_init(&n->work, NULL);
        pthread_cond_init(&n->changed, NULL);
        n->locks_ready = true;

        /* Workers never take signals: they belong to the daemon's main loop,
         * and a signal mid-populate only costs an EINTR retry. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        for (unsigned i = 0; i < n->n_workers; i++) {
                n->workers[i].n = n;
                r = -pthread_create(&n->workers[i].thread, NULL, worker_main, &n->workers[i]);
                if (r < 0)
                        break;
                n->n_created++;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                return r;

        /* Wait until every worker is pinned and bound before any job runs. */
        hpw_lock(&n->lock);
        while (n->started < n->n_workers)
                hpw_cond_wait(&n->changed, &n->lock);
        hpw_unlock(&n->lock);
        return 0;
}

int engine_new(const struct engine_config *cfg, struct engine **ret)
{
        struct engine *e;
        int r;

        assert_return(cfg, -EINVAL);
        assert_return(cfg->topo, -EINVAL);
        assert_return(ret, -EINVAL);
        if (cfg->topo->n_nodes == 0)
                return -EINVAL;
        for (size_t i = 0; i < cfg->topo->n_nodes; i++)
                if (cfg->topo->nodes[i].id < 0 || cfg->topo->nodes[i].id >= NODEMASK_BITS)
                        return -EINVAL;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        engine_ops_init(e, cfg->ops);
        e->numa = numa_available() >= 0;

        e->nodes = calloc(cfg->topo->n_nodes, sizeof(*e->nodes));
        if (!e->nodes) {
                free(e);
                return -ENOMEM;
        }
        e->n_nodes = cfg->topo->n_nodes;
        for (size_t i = 0; i < e->n_nodes; i++) {
                r = node_start(e, &e->nodes[i], &cfg->topo->nodes[i], cfg->threads_per_node);
                if (r < 0) {
                        engine_free(e);
                        return r;
                }
        }
        *ret = e;
        return 0;
}

void engine_free(struct engine *e)
{
        if (!e)
                return;
        for (size_t i = 0; i < e->n_nodes; i++) {
                struct node_ctx *n = &e->nodes[i];

                if (!n->locks_ready)
                        continue;
                /* Cancel whatever still runs, one job at a time (job_cancel
                 * sleeps and must not be called with the lock held). */
                for (;;) {
                        struct job *j = NULL;

                        hpw_lock(&n->lock);
                        for (struct link *l = n->jobs.next; l != &n->jobs && !j; l = l->next) {
                                struct job *c = container_of(l, struct job, all);

                                if (!c->complete)
                                        j = c;
                        }
                        hpw_unlock(&n->lock);
                        if (!j)
                                break;
                        job_cancel(j);
                }
                /* Jobs the caller has not freed yet outlive the engine: cut
                 * them loose so job_free only frees them. */
                hpw_lock(&n->lock);
                while (!link_empty(&n->jobs)) {
                        struct job *j = container_of(n->jobs.next, struct job, all);

                        link_del(&j->all);
                        j->n = NULL;
                }
                hpw_unlock(&n->lock);
        }
        for (size_t i = 0; i < e->n_nodes; i++)
                node_destroy(&e->nodes[i]);
        free(e->nodes);
        free(e);
}

unsigned engine_node_workers(const struct engine *e, int node)
{
        const struct node_ctx *n = e ? node_find(e, node) : NULL;

        return n ? n->n_workers : 0;
}

size_t engine_node_tids(const struct engine *e, int node, pid_t *tids, size_t max)
{
        const struct node_ctx *n = e ? node_find(e, node) : NULL;
        size_t k = 0;

        /* tids are written before engine_new returns and never change. */
        for (unsigned i = 0; n && i < n->n_workers && k < max; i++)
                tids[k++] = n->workers[i].tid;
        return k;
}

bool engine_node_pinned(const struct engine *e, int node)
{
        const struct node_ctx *n = e ? node_find(e, node) : NULL;

        if (!n)
                return false;
        for (unsigned i = 0; i < n->n_workers; i++)
                if (!n->workers[i].pinned)
                        return false;
        return true;
}

bool engine_node_mem_bound(const struct engine *e, int node)
{
        const struct node_ctx *n = e ? node_find(e, node) : NULL;

        if (!n)
                return false;
        for (unsigned i = 0; i < n->n_workers; i++)
                if (!n->workers[i].mem_bound)
                        return false;
        return true;
}

const char *engine_zero_routine(const struct engine *e) { return e ? e->zero_name : NULL; }
