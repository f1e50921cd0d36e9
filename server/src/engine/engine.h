/* engine: per-NUMA-node worker threads that prefault (populate and so zero)
 * hugetlbfs pool files, or zero already populated ones in place (recycle).
 * The only module that calls mmap/madvise/mbind/move_pages on pool memory.
 *
 * Workers are created once, at engine_new(), before any populate runs: a new
 * thread's stack mmap takes the mmap lock as a writer and would convoy with
 * populate readers.  Each node's workers are pinned (best effort) to the
 * node's CPUs intersected with the process's allowed CPUs, and bind their
 * memory policy to the node.  A job maps its file MAP_SHARED, mbinds the
 * mapping to the node, and its chunks (see plan.h) are pulled by that node's
 * workers, one MADV_POPULATE_WRITE per chunk; several jobs on one node share
 * its workers round-robin.  Each chunk's pages are checked with move_pages
 * (query mode) right after it.  When the last chunk is done on_done runs,
 * and then the mapping is unmapped (a failed job unmaps first).
 *
 * A zero job (JOB_ZERO) has the same chunks, queue, cancellation, progress
 * and on_done; its file is mapped with MAP_POPULATE (all its pages are
 * present: that only fills the page table, ~1 ms for 4 GiB in
 * engine_submit), and each chunk is one MADV_POPULATE_WRITE (a cheap walk on
 * mapped pages, and a page that went missing is an error rather than a
 * SIGBUS) followed by zeroing that skips the cache (zero.h).  Low-priority jobs (JOB_PRIO_LOW: stock
 * refills and recycles) get a chunk only while no normal job on their node
 * has chunks left to hand out. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct topo;

/* Kernel touch points, so tests can inject EFAULT, EINTR, wrong-node pages.
 * A NULL member means the real call. */
struct engine_ops {
        void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
        int (*munmap)(void *addr, size_t len);
        int (*madvise)(void *addr, size_t len, int advice);
        long (*mbind)(void *addr, unsigned long len, int mode, const unsigned long *nodemask,
                      unsigned long maxnode, unsigned flags);
        /* Query form only (nodes == NULL): status[i] = node of pages[i] or -errno. */
        long (*move_pages)(int pid, unsigned long count, void **pages, const int *nodes, int *status,
                           int flags);
        /* Zero jobs: the file's page count (st_blocks) and size before mapping it. */
        int (*fstat)(int fd, struct stat *st);
        /* Zero jobs: clear LEN bytes at ADDR (default: zero_best()->fn). */
        void (*zero)(void *addr, size_t len);
};

struct engine_config {
        const struct topo *topo;
        unsigned threads_per_node;      /* cap; 0 = the node's usable CPUs (at least 1) */
        const struct engine_ops *ops;   /* NULL = real calls */
};

struct engine;
struct job;

/* Starts all workers.  Caller owns *ret (engine_free). */
int engine_new(const struct engine_config *cfg, struct engine **ret);
/* Cancels every job still running (their on_done runs), joins the workers.
 * Jobs not yet freed stay valid for job_free only.  Accepts NULL. */
void engine_free(struct engine *e);
/* How many workers serve NODE (0 if unknown node). */
unsigned engine_node_workers(const struct engine *e, int node);
/* Kernel thread ids of NODE's workers (for tests and the QEMU check); returns count. */
size_t engine_node_tids(const struct engine *e, int node, pid_t *tids, size_t max);
/* Whether every worker of NODE is pinned to the node's usable CPUs (false for
 * a memory-only node, a cpuset that excludes them, or a refused affinity:
 * the workers then run unpinned; the caller logs it). */
bool engine_node_pinned(const struct engine *e, int node);
/* Whether every worker of NODE has its memory policy bound to the node. */
bool engine_node_mem_bound(const struct engine *e, int node);
/* Name of the routine zero jobs use ("clzero", "avx512", "avx2", "sse2", "erms", "memset";
 * "injected" with engine_ops.zero).  Static string. */
const char *engine_zero_routine(const struct engine *e);

enum job_kind {
        JOB_POPULATE = 0,        /* fault the range in; the kernel zeroes new pages (a warm) */
        JOB_ZERO,                /* zero an already populated file in place (a recycle) */
};

enum job_priority {
        JOB_PRIO_NORMAL = 0,     /* pool warms */
        /* Stock refills and recycles: served only while no normal job on
         * the node has chunks left to hand out, in chunks of at most 16 MiB
         * (plan_make_low), so a pool warm waits for at most one such chunk
         * per worker. */
        JOB_PRIO_LOW,
};

struct job_spec {
        int node;
        int fd;                  /* pool file, O_RDWR; borrowed: the engine never closes it */
        uint64_t size_bytes;     /* end of the range the job covers; multiple of page_size */
        uint64_t page_size;
        unsigned threads;        /* 0 = all the node's workers */
        /* Start of the range: the job covers [offset, size_bytes) of the
         * file (mapped, chunked, counted in bytes_done and checked for
         * placement), e.g. only the part a grown stock file gained.  A
         * multiple of page_size below size_bytes; 0 = the whole file. */
        uint64_t offset;
        /* JOB_ZERO: every page of the file must be present (st_blocks
         * covers st_size, and st_size >= size_bytes), else engine_submit
         * refuses with -ENODATA before touching anything: zeroing through a
         * hole would take a new page from the kernel. */
        enum job_kind kind;
        enum job_priority prio;
        /* Called exactly once when the job leaves JOB_RUNNING: from a worker
         * when done or failed, from the thread in job_cancel (or job_free,
         * engine_free) when cancelled.  May run before engine_submit returns.
         * For a job that is DONE the engine still holds its mapping of the
         * file then (it unmaps right after; job_free waits for that); for
         * FAILED and CANCELLED it does not.
         * Must not block or call back into the engine for this job except
         * job_get_status.  NULL = no callback. */
        void (*on_done)(struct job *job, void *arg);
        void *arg;
};

enum job_state { JOB_RUNNING, JOB_DONE, JOB_FAILED, JOB_CANCELLED };

struct job_status {
        enum job_state state;
        uint64_t bytes_done;
        unsigned threads;        /* workers taking part */
        int error;               /* JOB_FAILED: first -errno (EFAULT, ENOMEM, EINTR, EHWPOISON, EINVAL, ...) */
        uint64_t error_offset;   /* byte offset of the failing chunk */
        bool verified;           /* placement check ran */
        uint64_t pages_off_node; /* pages found on another node (or not present) */
        uint64_t started_ns, finished_ns; /* CLOCK_MONOTONIC; finished 0 while running */
};

/* Start warming (or zeroing).  -ENOENT unknown node, -EINVAL bad spec,
 * -ENODATA a zero job's file has a hole, -ENOMEM, or the fstat/mmap/mbind error.  The caller ftruncates the file to size_bytes first.  On
 * hugetlbfs, mmap reserves all the file's missing pages at once, so -ENOMEM
 * here means too few free hugepages (globally) for the pool: nothing was
 * touched.  Caller owns *ret and frees it with job_free after the job left
 * JOB_RUNNING. */
int engine_submit(struct engine *e, const struct job_spec *spec, struct job **ret);
void job_get_status(struct job *j, struct job_status *ret);
/* Stop at the next chunk boundary; returns once no worker touches the
 * mapping any more (the mapping is unmapped).  on_done has run when it returns
 * (in this thread, unless the job was already finishing on its own), so do not
 * hold a lock that on_done takes.  Safe against the job finishing at the same
 * moment.  No effect on a finished job. */
void job_cancel(struct job *j);
/* Accepts NULL.  A job still running is cancelled first. */
void job_free(struct job *j);

/* What a populate (or zero) errno means for the operator, e.g. EFAULT -> "the node ran
 * out of free hugepages or hit a hugetlb cgroup limit".  Static string. */
const char *engine_error_cause(int err);
/* Short stable slug for the same, e.g. "hugepages-exhausted". */
const char *engine_error_slug(int err);
