/* engine: per-NUMA-node worker threads that prefault hugetlbfs pool files.
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
 * A chunk is one MADV_POPULATE_WRITE, done with no lock held and no memory
 * allocated; in a zero job (recycle) it is followed by non-temporal zeroing
 * of the chunk (zero.c).  The populate is there on purpose: on pages that are
 * present it only maps them (no allocation, no clearing: one page-table
 * entry per hugepage, the fault the first store would take anyway), the
 * stores then never fault, and a page that has gone missing before the
 * chunk (the file was truncated behind our back) comes back as EFAULT
 * instead of a SIGBUS that would kill the daemon (a guard, not a lock: the
 * daemon owns its files).  A zero job must never take a page from the
 * kernel, so engine_submit refuses a file with a hole (st_blocks short of
 * st_size) before mapping it.
 *
 * The lock is only taken to pick a chunk and to account for it.  After
 * populating a chunk the worker checks where its pages are
 * (move_pages in query mode, in batches), so the placement check runs beside
 * other chunks' populates rather than as a serial tail.  Whoever finishes the
 * job (the worker that completes its last chunk, or the thread in job_cancel)
 * does the rest outside the lock: sum the checks, munmap, on_done.
 * `finishing` makes sure exactly one of them does, and `complete` tells
 * job_cancel/job_free that no engine thread will touch the job again.
 *
 * The mapping is MAP_SHARED without MAP_NORESERVE, on purpose: hugetlbfs then
 * reserves every page of the file at mmap time, so a pool that cannot be had
 * fails at once with ENOMEM from engine_submit (before any zeroing), and
 * while it warms no other process can take the pages it will need.  The
 * reservation is global, not per node: a node that runs dry midway still
 * shows up as EFAULT from populate.  Populating pages that are already there
 * is cheap and succeeds, which is what resuming a warm after a restart needs.
 *
 * This file is also the program's only user of libnuma, so it owns libnuma's
 * error hooks (numa_error/numa_warn), which would otherwise print. */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <stdio.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "plan.h"
#include "topo.h"
#include "util.h"
#include "zero.h"

/* EINTR from populate means a signal arrived mid-call; the pages done so far
 * stay done, so a retry only redoes the rest.  Workers block signals, so this
 * is rare; the bound only stops a pathological signal storm from spinning. */
#define EINTR_RETRIES 64
/* move_pages query batch: 512 pages of addresses and statuses (6 KiB of
 * stack) per syscall; big enough that the syscall cost is noise. */
#define VERIFY_BATCH 512
/* Node masks for mbind/set_mempolicy: the kernel allows at most 1 << 10
 * nodes (CONFIG_NODES_SHIFT). */
#define NODEMASK_BITS 1024
#define NODEMASK_LONGS (NODEMASK_BITS / (8 * sizeof(unsigned long)))

struct link {
        struct link *prev, *next;
};

static void link_init(struct link *l) { l->prev = l->next = l; }
static bool link_empty(const struct link *head) { return head->next == head; }
static void link_del(struct link *l)
{
        l->prev->next = l->next;
        l->next->prev = l->prev;
        link_init(l);
}
static void link_add_tail(struct link *head, struct link *l)
{
        l->prev = head->prev;
        l->next = head;
        head->prev->next = l;
        head->prev = l;
}

struct node_ctx;

struct job {
        struct node_ctx *n;
        struct job_spec spec;
        struct plan plan;
        uint8_t *map;             /* the range [spec.offset, spec.size_bytes) of the file */
        uint64_t len;             /* its length */

        /* Everything below is guarded by n->lock. */
        struct link run;          /* in n->run[spec.prio] while chunks are left to hand out */
        struct link all;          /* in n->jobs until job_free or engine_free */
        bool queued;              /* in n->run[spec.prio] */
        uint64_t next_chunk;      /* next chunk to hand out */
        unsigned active;          /* workers inside a chunk of this job */
        bool cancel;              /* job_cancel asked to stop */
        bool finishing;           /* one thread owns the final phase */
        bool complete;            /* on_done returned; the engine is done with the job */
        enum job_state state;
        uint64_t bytes_done;
        int error;
        uint64_t error_offset;
        bool verified;
        uint64_t pages_off_node;
        uint64_t off_node_seen;   /* summed over checked chunks */
        bool check_failed;        /* a chunk's placement query failed */
        uint64_t started_ns, finished_ns;
};

struct worker {
        struct node_ctx *n;
        pthread_t thread;
        pid_t tid;
        bool pinned, mem_bound;
};

struct node_ctx {
        struct engine *e;
        int id;
        cpu_set_t *cpus;          /* the node's CPUs we may run on; NULL if none */
        size_t cpus_size;
        unsigned n_workers;
        unsigned n_created;       /* threads to join */
        struct worker *workers;

        pthread_mutex_t lock;
        pthread_cond_t work;      /* a chunk may be available, or stop */
        pthread_cond_t changed;   /* a job went quiet or complete; a worker started */
        struct link run[2];       /* jobs with chunks left to hand out, by job_priority */
        struct link jobs;         /* every job not yet freed */
        unsigned started;
        bool stop;
        bool locks_ready;
};

struct engine {
        struct engine_ops ops;
        const char *zero_name;    /* of ops.zero */
        bool numa;                /* libnuma says the kernel has NUMA calls */
        size_t n_nodes;
        struct node_ctx *nodes;
};

/* libnuma calls these on errors and prints by default; library code here
 * does not log, and every call we make reports its failure by return value. */
void numa_error(char *where) { (void)where; }
void numa_warn(int number, char *where, ...) { (void)number, (void)where; }

static void nodemask_set(unsigned long mask[static NODEMASK_LONGS], int node)
{
        memset(mask, 0, NODEMASK_LONGS * sizeof(unsigned long));
        mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
}

static struct node_ctx *node_find(const struct engine *e, int id)
{
        for (size_t i = 0; i < e->n_nodes; i++)
                if (e->nodes[i].id == id)
                        return &e->nodes[i];
        return NULL;
}

/* One chunk: MADV_POPULATE_WRITE, retried on EINTR. */
static int populate(const struct engine *e, void *addr, size_t len)
{
        for (unsigned tries = 0;; tries++) {
                if (e->ops.madvise(addr, len, MADV_POPULATE_WRITE) == 0)
                        return 0;
                int r = errno > 0 ? -errno : -EIO;
                if (r != -EINTR || tries >= EINTR_RETRIES)
                        return r;
        }
}

/* Ask the kernel where every page of [OFF, OFF+LEN) of the mapping is.
 * Pages not present (status -ENOENT) count as off the node: the pool is
 * short of them.  Each worker checks the chunk it just populated, so the
 * check runs in parallel with other chunks' populates instead of as a serial
 * tail after the last one. */
static int check_placement(const struct engine *e, const struct job *j, uint64_t off, uint64_t len,
                           uint64_t *ret_off_node)
{
        void *pages[VERIFY_BATCH];
        int status[VERIFY_BATCH];
        uint64_t first = off / j->spec.page_size, n_pages = len / j->spec.page_size, bad = 0;

        for (uint64_t i = 0; i < n_pages;) {
                unsigned long k = n_pages - i < VERIFY_BATCH ? (unsigned long)(n_pages - i) : VERIFY_BATCH;

                for (unsigned long m = 0; m < k; m++) {
                        pages[m] = j->map + (first + i + m) * j->spec.page_size;
                        status[m] = -ENOENT;
                }
                if (e->ops.move_pages(0, k, pages, NULL, status, 0) < 0)
                        return errno > 0 ? -errno : -EIO;
                for (unsigned long m = 0; m < k; m++)
                        if (status[m] != j->spec.node)
                                bad++;
                i += k;
        }
        *ret_off_node = bad;
        return 0;
}

/* Signals everyone waiting on the job that it is complete.  Called once, by
 * the thread that owned the final phase, after on_done returned. */
static void job_complete(struct job *j)
{
        struct node_ctx *n = j->n;

        pthread_mutex_lock(&n->lock);
        j->complete = true;
        pthread_cond_broadcast(&n->changed);
        pthread_mutex_unlock(&n->lock);
}

/* Final phase of a job whose chunks are all done or that failed: runs
 * unlocked, in the worker that did the last chunk. */
static void job_finish(struct job *j)
{
        const struct engine *e = j->n->e;
        uint64_t off = 0;
        bool verified = false;
        int error;

        /* No worker writes `error` or the placement sums any more: all
         * chunks are accounted for. */
        pthread_mutex_lock(&j->n->lock);
        error = j->error;
        verified = error == 0 && !j->check_failed;
        off = j->off_node_seen;
        pthread_mutex_unlock(&j->n->lock);

        e->ops.munmap(j->map, j->len);

        pthread_mutex_lock(&j->n->lock);
        j->map = NULL;
        j->state = error == 0 ? JOB_DONE : JOB_FAILED;
        j->verified = verified;
        j->pages_off_node = verified ? off : 0;
        j->finished_ns = now_mono_ns();
        pthread_mutex_unlock(&j->n->lock);

        if (j->spec.on_done)
                j->spec.on_done(j, j->spec.arg);
        job_complete(j);
}

/* Round-robin within a priority: the first job in the queue that may take
 * one more worker; it moves to the tail so the next pick serves the job
 * after it.  Low-priority jobs only when no normal job has chunks left, even
 * one at its thread cap (see the top of the file). */
static struct job *pick_job(struct node_ctx *n)
{
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

/* Take J out of its run queue (lock held).  When that empties the normal
 * queue while low-priority jobs wait, idle workers may now serve them. */
static void unqueue(struct node_ctx *n, struct job *j)
{
        link_del(&j->run);
        j->queued = false;
        if (j->spec.prio == JOB_PRIO_NORMAL && link_empty(&n->run[JOB_PRIO_NORMAL]) &&
            !link_empty(&n->run[JOB_PRIO_LOW]))
                pthread_cond_broadcast(&n->work);
}

/* One chunk of J at OFF (within the mapping).  Zero jobs populate first:
 * see the top of the file. */
static int do_chunk(const struct engine *e, const struct job *j, uint64_t off, uint64_t len)
{
        int r = populate(e, j->map + off, len);

        if (r == 0 && j->spec.kind == JOB_ZERO)
                e->ops.zero(j->map + off, len);
        return r;
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

        pthread_mutex_lock(&n->lock);
        n->started++;
        pthread_cond_broadcast(&n->changed);
        for (;;) {
                struct job *j;
                uint64_t off, len;
                int r;

                while (!(j = pick_job(n)) && !n->stop)
                        pthread_cond_wait(&n->work, &n->lock);
                if (!j)
                        break;

                off = j->next_chunk++ * j->plan.chunk_bytes;
                if (j->next_chunk == j->plan.n_chunks)
                        unqueue(n, j);
                j->active++;
                len = j->len - off < j->plan.chunk_bytes ? j->len - off : j->plan.chunk_bytes;
                pthread_mutex_unlock(&n->lock);

                uint64_t off_node = 0;
                int check = -1;
                r = do_chunk(e, j, off, len);
                if (r == 0)
                        check = check_placement(e, j, off, len, &off_node);

                pthread_mutex_lock(&n->lock);
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
                                unqueue(n, j);
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
                        pthread_mutex_unlock(&n->lock);
                        job_finish(j);
                        pthread_mutex_lock(&n->lock);
                }
        }
        pthread_mutex_unlock(&n->lock);
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
        pthread_mutex_lock(&n->lock);
        n->stop = true;
        pthread_cond_broadcast(&n->work);
        pthread_mutex_unlock(&n->lock);
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
                pthread_mutex_destroy(&n->lock);
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

        pthread_mutex_init(&n->lock, NULL);
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
        pthread_mutex_lock(&n->lock);
        while (n->started < n->n_workers)
                pthread_cond_wait(&n->changed, &n->lock);
        pthread_mutex_unlock(&n->lock);
        return 0;
}

int engine_new(const struct engine_config *cfg, struct engine **ret)
{
        struct engine *e;
        int r;

        if (!cfg || !cfg->topo || cfg->topo->n_nodes == 0)
                return -EINVAL;
        for (size_t i = 0; i < cfg->topo->n_nodes; i++)
                if (cfg->topo->nodes[i].id < 0 || cfg->topo->nodes[i].id >= NODEMASK_BITS)
                        return -EINVAL;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->ops = (struct engine_ops){
                .mmap = mmap,
                .munmap = munmap,
                .madvise = madvise,
                .mbind = mbind,
                .move_pages = move_pages,
                .fstat = fstat,
                .zero = zero_best()->fn,
        };
        e->zero_name = zero_best()->name;
        if (cfg->ops) {
                if (cfg->ops->mmap)
                        e->ops.mmap = cfg->ops->mmap;
                if (cfg->ops->munmap)
                        e->ops.munmap = cfg->ops->munmap;
                if (cfg->ops->madvise)
                        e->ops.madvise = cfg->ops->madvise;
                if (cfg->ops->mbind)
                        e->ops.mbind = cfg->ops->mbind;
                if (cfg->ops->move_pages)
                        e->ops.move_pages = cfg->ops->move_pages;
                if (cfg->ops->fstat)
                        e->ops.fstat = cfg->ops->fstat;
                if (cfg->ops->zero) {
                        e->ops.zero = cfg->ops->zero;
                        e->zero_name = "injected";
                }
        }
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

                        pthread_mutex_lock(&n->lock);
                        for (struct link *l = n->jobs.next; l != &n->jobs && !j; l = l->next) {
                                struct job *c = container_of(l, struct job, all);

                                if (!c->complete)
                                        j = c;
                        }
                        pthread_mutex_unlock(&n->lock);
                        if (!j)
                                break;
                        job_cancel(j);
                }
                /* Jobs the caller has not freed yet outlive the engine: cut
                 * them loose so job_free only frees them. */
                pthread_mutex_lock(&n->lock);
                while (!link_empty(&n->jobs)) {
                        struct job *j = container_of(n->jobs.next, struct job, all);

                        link_del(&j->all);
                        j->n = NULL;
                }
                pthread_mutex_unlock(&n->lock);
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

        if (!e || !spec)
                return -EINVAL;
        n = node_find(e, spec->node);
        if (!n)
                return -ENOENT;
        if (spec->fd < 0 || spec->size_bytes > SIZE_MAX || spec->offset >= spec->size_bytes ||
            spec->size_bytes > INT64_MAX || (spec->kind != JOB_POPULATE && spec->kind != JOB_ZERO) ||
            (spec->prio != JOB_PRIO_NORMAL && spec->prio != JOB_PRIO_LOW))
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

        map = e->ops.mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, spec->fd, (off_t)spec->offset);
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

        pthread_mutex_lock(&n->lock);
        link_add_tail(&n->jobs, &j->all);
        /* At the head of its queue: the newcomer has had no chunk yet, so it
         * is served next among its priority; from then on it takes its turn
         * at the tail. */
        link_add_tail(n->run[spec->prio].next, &j->run);
        j->queued = true;
        pthread_cond_broadcast(&n->work);
        pthread_mutex_unlock(&n->lock);

        *ret = j;
        return 0;
}

void job_get_status(struct job *j, struct job_status *ret)
{
        pthread_mutex_lock(&j->n->lock);
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
        pthread_mutex_unlock(&j->n->lock);
}

void job_cancel(struct job *j)
{
        struct node_ctx *n;

        if (!j)
                return;
        n = j->n;
        pthread_mutex_lock(&n->lock);
        if (j->finishing) {
                /* Finishing on its own (or another cancel): wait until it is
                 * complete so that on_done has run when we return. */
                while (!j->complete)
                        pthread_cond_wait(&n->changed, &n->lock);
                pthread_mutex_unlock(&n->lock);
                return;
        }
        j->cancel = true;
        j->finishing = true;
        if (j->queued)
                unqueue(n, j);
        while (j->active > 0)
                pthread_cond_wait(&n->changed, &n->lock);
        pthread_mutex_unlock(&n->lock);

        /* No worker is inside a chunk and none will enter one. */
        n->e->ops.munmap(j->map, j->len);

        pthread_mutex_lock(&n->lock);
        j->map = NULL;
        j->state = JOB_CANCELLED;
        j->finished_ns = now_mono_ns();
        pthread_mutex_unlock(&n->lock);

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
                pthread_mutex_lock(&j->n->lock);
                link_del(&j->all);
                pthread_mutex_unlock(&j->n->lock);
        }
        free(j);
}

static const struct {
        int err;
        const char *slug, *cause;
} causes[] = {
        { EFAULT, "hugepages-exhausted",
          "the node ran out of free hugepages, or a hugetlb cgroup limit was reached" },
        { ENOMEM, "out-of-memory",
          "not enough memory: too few free hugepages to reserve the pool, or the kernel could not allocate" },
        { EINTR, "interrupted", "populating was interrupted by signals over and over" },
        { EHWPOISON, "hardware-poison", "a hugepage of the pool is hardware-poisoned (memory error)" },
        { EINVAL, "populate-unsupported",
          "the kernel does not support MADV_POPULATE_WRITE on this mapping (needs Linux 5.14 or later)" },
        { ENODATA, "file-not-populated",
          "the file to zero in place is missing pages (a hole, or shorter than the job): zeroing it would take new pages from the kernel" },
};

const char *engine_error_cause(int err)
{
        if (err < 0)
                err = -err;
        for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
                if (causes[i].err == err)
                        return causes[i].cause;
        return "populating the pool file failed";
}

const char *engine_error_slug(int err)
{
        if (err < 0)
                err = -err;
        for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
                if (causes[i].err == err)
                        return causes[i].slug;
        return "populate-failed";
}
