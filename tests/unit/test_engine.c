/* Engine tests with injected kernel calls: mappings are PROT_NONE anonymous
 * reservations that nothing touches, madvise is a fake that can fail at a
 * given offset, return EINTR, or block at a gate until the test opens it,
 * and move_pages reports a chosen placement.  Covers success, error with its
 * offset, EINTR retry and its bound, cancellation while workers are inside a
 * chunk, round-robin fairness on one node, jobs on two nodes of a hand-built
 * topology (one memory-only), and engine_free with a job still running.
 * Zero jobs (recycle): a fake zero routine records its calls and fstat
 * reports a chosen page count, for holes refused before mapping, zeroing
 * chunk by chunk after each populate, and cancellation; priorities: a
 * low-priority job gets no chunk while a normal job has chunks left (one
 * worker; and with an idle worker beside a normal job at its thread cap),
 * and one that never got a chunk cancels at once;
 * the offset of a tail-range job.
 *
 * Chunk sizes depend on the job's size and worker count (see plan.c), so
 * every expectation about chunks (error offsets, call counts, what a cancel
 * may have finished) comes from plan_make() called exactly as engine_submit
 * calls it, and each test checks that the plan has the shape it needs. */
#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine.h"
#include "plan.h"
#include "topo.h"
#include "util.h"
#include "zero.h"

#define PAGE (2 * MIB)
#define MAX_CALLS 4096
#define MAX_CHUNKS 64 /* per_chunk arrays in the tests */

/* What the fakes do, and what they saw.  Guarded by fk.lock. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        /* behaviour */
        uint8_t *fail_base;       /* mapping whose chunk at fail_off fails */
        uint64_t fail_off;
        int fail_errno;
        int eintr_left;           /* next N calls return EINTR */
        bool eintr_forever;
        bool gate_closed;         /* block every madvise while true */
        int off_node_every;       /* move_pages: every Nth page on node 1 (0 = never) */
        bool move_pages_fails;
        /* observations */
        int inside;               /* callers currently inside madvise */
        uint8_t *inside_addr[64]; /* and where (NULL = free slot) */
        int max_inside;
        unsigned calls;
        uint8_t *call_addr[MAX_CALLS];
        size_t call_len[MAX_CALLS];
        uint8_t *last_map;        /* what the latest mmap returned */
        unsigned mmaps, munmaps, mbinds;
        int mbind_node;
        int mmap_flags;
        off_t mmap_off;           /* file offset and length of the latest mmap */
        size_t mmap_len;
        /* zero jobs */
        off_t file_size;          /* what fstat reports */
        blkcnt_t file_blocks;
        int fstat_errno;          /* fstat fails with it (0 = no) */
        unsigned fstats;
        unsigned zcalls;
        uint8_t *zcall_addr[MAX_CALLS];
        size_t zcall_len[MAX_CALLS];
} fk = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void fake_reset(void)
{
        pthread_mutex_lock(&fk.lock);
        fk.fail_base = NULL;
        fk.fail_off = 0;
        fk.fail_errno = 0;
        fk.eintr_left = 0;
        fk.eintr_forever = false;
        fk.gate_closed = false;
        fk.off_node_every = 0;
        fk.move_pages_fails = false;
        fk.inside = fk.max_inside = 0;
        fk.calls = fk.mmaps = fk.munmaps = fk.mbinds = 0;
        fk.mbind_node = -1;
        fk.mmap_flags = 0;
        fk.mmap_off = -1;
        fk.mmap_len = 0;
        fk.last_map = NULL;
        fk.file_size = 0;
        fk.file_blocks = 0;
        fk.fstat_errno = 0;
        fk.fstats = fk.zcalls = 0;
        pthread_mutex_unlock(&fk.lock);
}

static void *fake_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
        void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        pthread_mutex_lock(&fk.lock);
        fk.mmaps++;
        fk.mmap_flags = flags;
        fk.mmap_off = off;
        fk.mmap_len = len;
        fk.last_map = p == MAP_FAILED ? NULL : p;
        pthread_mutex_unlock(&fk.lock);
        return p;
}

static int fake_munmap(void *addr, size_t len)
{
        pthread_mutex_lock(&fk.lock);
        /* Unmapping while a worker is inside a chunk of it would be the bug. */
        for (size_t i = 0; i < ARRAY_SIZE(fk.inside_addr); i++)
                CHECK(!(fk.inside_addr[i] >= (uint8_t *)addr && fk.inside_addr[i] < (uint8_t *)addr + len));
        int r = munmap(addr, len);
        fk.munmaps++;
        pthread_cond_broadcast(&fk.cond);
        pthread_mutex_unlock(&fk.lock);
        return r;
}

static long fake_mbind(void *addr, unsigned long len, int mode, const unsigned long *mask,
                       unsigned long maxnode, unsigned flags)
{
        int node = -1;

        for (unsigned long b = 0; b + 1 < maxnode; b++)
                if (mask[b / (8 * sizeof(long))] & (1UL << (b % (8 * sizeof(long))))) {
                        CHECK_INT(node, ==, -1);
                        node = (int)b;
                }
        pthread_mutex_lock(&fk.lock);
        fk.mbinds++;
        fk.mbind_node = node;
        pthread_mutex_unlock(&fk.lock);
        CHECK_INT(mode, ==, MPOL_BIND);
        return 0;
}

static int fake_madvise(void *addr, size_t len, int advice)
{
        uint8_t *a = addr;
        size_t slot = 0;
        int r = 0;

        CHECK_INT(advice, ==, MADV_POPULATE_WRITE);
        /* Start and length against the job's plan: chunk_calls(). */
        CHECK_U64(len % PAGE, ==, 0);
        pthread_mutex_lock(&fk.lock);
        if (fk.calls < MAX_CALLS) {
                fk.call_addr[fk.calls] = a;
                fk.call_len[fk.calls] = len;
        }
        fk.calls++;
        fk.inside++;
        while (fk.inside_addr[slot])
                slot++;
        CHECK_U64(slot, <, ARRAY_SIZE(fk.inside_addr));
        fk.inside_addr[slot] = a;
        if (fk.inside > fk.max_inside)
                fk.max_inside = fk.inside;
        pthread_cond_broadcast(&fk.cond);
        while (fk.gate_closed)
                pthread_cond_wait(&fk.cond, &fk.lock);
        if (fk.eintr_forever || fk.eintr_left > 0) {
                if (fk.eintr_left > 0)
                        fk.eintr_left--;
                r = EINTR;
        } else if (fk.fail_base && a <= fk.fail_base + fk.fail_off && fk.fail_base + fk.fail_off < a + len)
                r = fk.fail_errno;
        fk.inside--;
        fk.inside_addr[slot] = NULL;
        pthread_cond_broadcast(&fk.cond);
        pthread_mutex_unlock(&fk.lock);
        if (r) {
                errno = r;
                return -1;
        }
        return 0;
}

static long fake_move_pages(int pid, unsigned long count, void **pages, const int *nodes, int *status,
                            int flags)
{
        static atomic_ulong seen;
        int every;
        bool fails;

        CHECK(nodes == NULL);
        pthread_mutex_lock(&fk.lock);
        every = fk.off_node_every;
        fails = fk.move_pages_fails;
        pthread_mutex_unlock(&fk.lock);
        if (fails) {
                errno = ENOSYS;
                return -1;
        }
        for (unsigned long i = 0; i < count; i++) {
                unsigned long k = atomic_fetch_add(&seen, 1);

                (void)pages[i];
                status[i] = every && k % (unsigned long)every == 0 ? 1 : 0;
        }
        return 0;
}

static int fake_fstat(int fd, struct stat *st)
{
        int err;

        pthread_mutex_lock(&fk.lock);
        fk.fstats++;
        err = fk.fstat_errno;
        memset(st, 0, sizeof(*st));
        st->st_size = fk.file_size;
        st->st_blocks = fk.file_blocks;
        pthread_mutex_unlock(&fk.lock);
        if (err) {
                errno = err;
                return -1;
        }
        return 0;
}

/* Zeroing happens right after the chunk's populate, by the same worker:
 * the latest madvise call at this address must be there already. */
static void fake_zero(void *addr, size_t len)
{
        bool populated = false;

        pthread_mutex_lock(&fk.lock);
        for (unsigned i = 0; i < fk.calls && i < MAX_CALLS; i++)
                if (fk.call_addr[i] == addr && fk.call_len[i] == len)
                        populated = true;
        CHECK(populated);
        if (fk.zcalls < MAX_CALLS) {
                fk.zcall_addr[fk.zcalls] = addr;
                fk.zcall_len[fk.zcalls] = len;
        }
        fk.zcalls++;
        pthread_mutex_unlock(&fk.lock);
}

/* What fstat reports for the file of the next zero job. */
static void fake_file(off_t size, off_t bytes_present)
{
        pthread_mutex_lock(&fk.lock);
        fk.file_size = size;
        fk.file_blocks = bytes_present / 512;
        pthread_mutex_unlock(&fk.lock);
}

static const struct engine_ops fake_ops = {
        .mmap = fake_mmap,
        .munmap = fake_munmap,
        .madvise = fake_madvise,
        .mbind = fake_mbind,
        .move_pages = fake_move_pages,
        .fstat = fake_fstat,
        .zero = fake_zero,
};

/* Wait under fk.lock until WHAT holds; the test fails after 10 s. */
#define FK_WAIT_UNTIL(what)                                                                       \
        do {                                                                                      \
                struct timespec until_;                                                           \
                                                                                                  \
                clock_gettime(CLOCK_REALTIME, &until_);                                           \
                until_.tv_sec += 10;                                                              \
                pthread_mutex_lock(&fk.lock);                                                     \
                while (!(what))                                                                   \
                        CHECK_INT(pthread_cond_timedwait(&fk.cond, &fk.lock, &until_), ==, 0);   \
                pthread_mutex_unlock(&fk.lock);                                                   \
        } while (0)

/* Until N callers sit inside madvise. */
static void wait_inside(int n) { FK_WAIT_UNTIL(fk.inside >= n); }

/* Until N munmaps have happened: a job that succeeded is unmapped by its
 * worker after on_done. */
static void wait_munmaps(unsigned n) { FK_WAIT_UNTIL(fk.munmaps >= n); }

static void gate(bool closed)
{
        pthread_mutex_lock(&fk.lock);
        fk.gate_closed = closed;
        pthread_cond_broadcast(&fk.cond);
        pthread_mutex_unlock(&fk.lock);
}

/* on_done bookkeeping: counts calls and waits for them. */
struct done {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned calls;
        enum job_state state;
        unsigned munmaps_before; /* fk.munmaps when on_done ran */
};

#define DONE_INIT { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER }

static void on_done(struct job *j, void *arg)
{
        struct done *d = arg;
        struct job_status st;

        unsigned munmaps;

        job_get_status(j, &st);
        CHECK(st.state != JOB_RUNNING);
        CHECK(st.finished_ns >= st.started_ns);
        pthread_mutex_lock(&fk.lock);
        munmaps = fk.munmaps;
        pthread_mutex_unlock(&fk.lock);
        pthread_mutex_lock(&d->lock);
        d->calls++;
        d->state = st.state;
        d->munmaps_before = munmaps;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
}

static void wait_done(struct done *d)
{
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 20;
        pthread_mutex_lock(&d->lock);
        while (d->calls == 0)
                CHECK_INT(pthread_cond_timedwait(&d->cond, &d->lock, &until), ==, 0);
        pthread_mutex_unlock(&d->lock);
}

static unsigned done_calls(struct done *d)
{
        pthread_mutex_lock(&d->lock);
        unsigned c = d->calls;
        pthread_mutex_unlock(&d->lock);
        return c;
}

/* A hand-built topology: node 0 with the first one or two CPUs we may run
 * on (so its worker count is its CPU count also under taskset or a cpuset),
 * node 2 memory-only. */
static struct topo *make_topo(bool with_memory_only_node)
{
        struct topo *t = calloc(1, sizeof(*t));
        static char cpulist[32];
        unsigned cpu[2], ncpu = 0;
        cpu_set_t allowed;

        CHECK_INT(sched_getaffinity(0, sizeof(allowed), &allowed), ==, 0);
        for (unsigned c = 0; c < 64 && ncpu < 2; c++)
                if (CPU_ISSET(c, &allowed))
                        cpu[ncpu++] = c;
        CHECK_INT(ncpu, >, 0);
        if (ncpu == 2)
                snprintf(cpulist, sizeof(cpulist), "%u,%u", cpu[0], cpu[1]);
        else
                snprintf(cpulist, sizeof(cpulist), "%u", cpu[0]);

        CHECK(t);
        t->n_nodes = with_memory_only_node ? 2 : 1;
        t->nodes = calloc(t->n_nodes, sizeof(*t->nodes));
        CHECK(t->nodes);
        for (size_t i = 0; i < t->n_nodes; i++) {
                struct topo_node *n = &t->nodes[i];

                n->id = i == 0 ? 0 : 2;
                n->cpus = CPU_ALLOC(64);
                CHECK(n->cpus);
                n->cpus_size = CPU_ALLOC_SIZE(64);
                CPU_ZERO_S(n->cpus_size, n->cpus);
                if (i == 0) {
                        for (unsigned c = 0; c < ncpu; c++)
                                CPU_SET_S(cpu[c], n->cpus_size, n->cpus);
                        n->cpu_count = ncpu;
                        n->cpulist = cpulist;
                } else
                        n->cpulist = "";
        }
        t->n_page_sizes = 1;
        t->page_sizes[0] = PAGE;
        return t;
}

/* The one-node topology most tests use; made by main. */
static struct topo *topo_;

static void free_topo(struct topo *t)
{
        for (size_t i = 0; i < t->n_nodes; i++)
                CPU_FREE(t->nodes[i].cpus);
        free(t->nodes);
        free(t);
}

static struct engine *make_engine(const struct topo *t, unsigned threads_per_node)
{
        struct engine_config cfg = { .topo = t, .threads_per_node = threads_per_node, .ops = &fake_ops };
        struct engine *e = NULL;

        CHECK_INT(engine_new(&cfg, &e), ==, 0);
        CHECK(e);
        return e;
}

static struct job *submit_spec(struct engine *e, struct job_spec spec, struct done *d)
{
        struct job *j = NULL;

        spec.fd = 0;
        spec.page_size = PAGE;
        spec.on_done = on_done;
        spec.arg = d;
        CHECK_INT(engine_submit(e, &spec, &j), ==, 0);
        CHECK(j);
        return j;
}

static struct job *submit(struct engine *e, int node, uint64_t size, unsigned threads, struct done *d)
{
        return submit_spec(e, (struct job_spec){ .node = node, .size_bytes = size, .threads = threads }, d);
}

/* The plan engine_submit makes for such a job: the same size and page size,
 * the node's worker count and the requested threads. */
static struct plan plan_for(const struct engine *e, int node, uint64_t size, unsigned threads)
{
        struct plan p;

        CHECK_INT(plan_make(size, PAGE, engine_node_workers(e, node), threads, &p), ==, 0);
        return p;
}

/* The mapping the latest submit got (the test thread is the only one that
 * submits, so it is the one just made). */
static uint8_t *last_map(void)
{
        pthread_mutex_lock(&fk.lock);
        uint8_t *m = fk.last_map;
        pthread_mutex_unlock(&fk.lock);
        CHECK(m);
        return m;
}

/* Which of P's chunks over SIZE starts at OFF (the chunks follow each other
 * from 0, each plan_chunk_len of what is left), with its length; -1 if none
 * starts there. */
static int64_t chunk_at(const struct plan *p, uint64_t size, uint64_t off, uint64_t *ret_len)
{
        uint64_t at = 0;

        for (int64_t k = 0; at < size; k++) {
                uint64_t len = plan_chunk_len(p, size - at);

                if (at == off) {
                        *ret_len = len;
                        return k;
                }
                at += len;
        }
        return -1;
}

/* The calls ADDR[i], LEN[i] (N of them, fk.lock held) that fell in the
 * mapping [BASE, BASE + SIZE): each must be exactly one of P's chunks
 * (starts where a chunk starts, with its length).  Counts them per chunk
 * into PER_CHUNK (MAX_CHUNKS entries, zeroed here) and returns the total. */
static unsigned calls_on_chunks(uint8_t *const *addr, const size_t *lens, unsigned n, const uint8_t *base,
                                uint64_t size, const struct plan *p, unsigned *per_chunk)
{
        unsigned total = 0;

        CHECK_U64(p->n_chunks, <=, MAX_CHUNKS);
        memset(per_chunk, 0, MAX_CHUNKS * sizeof(*per_chunk));
        CHECK_INT(n, <=, MAX_CALLS);
        for (unsigned i = 0; i < n; i++) {
                const uint8_t *a = addr[i];
                uint64_t len = 0;
                int64_t k;

                if (a < base || a >= base + size)
                        continue;
                k = chunk_at(p, size, (uint64_t)(a - base), &len);
                CHECK_INT(k, >=, 0);
                CHECK_U64((uint64_t)k, <, p->n_chunks);
                CHECK_U64(lens[i], ==, len);
                per_chunk[k]++;
                total++;
        }
        return total;
}

/* The madvise calls that fell in the mapping [BASE, BASE + SIZE), each
 * exactly one of P's chunks: counted per chunk into PER_CHUNK (NULL, or
 * MAX_CHUNKS entries); returns the total. */
static unsigned chunk_calls(const uint8_t *base, uint64_t size, const struct plan *p, unsigned *per_chunk)
{
        unsigned scratch[MAX_CHUNKS], total;

        pthread_mutex_lock(&fk.lock);
        total = calls_on_chunks(fk.call_addr, fk.call_len, fk.calls, base, size, p,
                                per_chunk ? per_chunk : scratch);
        pthread_mutex_unlock(&fk.lock);
        return total;
}

TEST(success)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        struct done d = DONE_INIT;
        struct job_status st;
        unsigned per[MAX_CHUNKS];
        uint64_t size = 323 * PAGE;
        struct plan p = plan_for(e, 0, size, 0);

        /* Several chunks, and a short last one. */
        CHECK_U64(p.n_chunks, >, 1);
        CHECK_U64(size % p.chunk_bytes, !=, 0);

        fake_reset();
        pthread_mutex_lock(&fk.lock);
        fk.off_node_every = 0;
        pthread_mutex_unlock(&fk.lock);

        struct job *j = submit(e, 0, size, 0, &d);
        uint8_t *base = last_map();
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, size);
        CHECK_INT(st.error, ==, 0);
        CHECK(st.verified);
        CHECK_U64(st.pages_off_node, ==, 0);
        CHECK_INT(st.threads, ==, engine_node_workers(e, 0));
        CHECK_INT(st.threads, ==, p.threads);
        CHECK(st.finished_ns >= st.started_ns);
        /* Ready before the mapping goes: on_done ran with it still there;
         * job_cancel (no effect on a finished job) returns only once the
         * final phase is over, the mapping gone, as job_free does. */
        CHECK_INT(d.munmaps_before, ==, 0);
        job_cancel(j);
        /* Every chunk populated exactly once, nothing else. */
        CHECK_INT(chunk_calls(base, size, &p, per), ==, p.n_chunks);
        for (uint64_t k = 0; k < p.n_chunks; k++)
                CHECK_INT(per[k], ==, 1);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, p.n_chunks);
        CHECK_INT(fk.mmaps, ==, 1);
        CHECK_INT(fk.munmaps, ==, 1);
        CHECK_INT(fk.mbinds, ==, 1);
        CHECK_INT(fk.mbind_node, ==, 0);
        CHECK_INT(fk.mmap_flags, ==, MAP_SHARED);
        pthread_mutex_unlock(&fk.lock);

        /* Cancel after done: nothing happens, on_done is not called again. */
        job_cancel(j);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_INT(done_calls(&d), ==, 1);
        job_free(j);
        engine_free(e);
}

TEST(placement)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        struct done d1 = DONE_INIT, d2 = DONE_INIT;
        struct job_status st;
        uint64_t size = 64 * PAGE;

        fake_reset();
        pthread_mutex_lock(&fk.lock);
        fk.off_node_every = 4;
        pthread_mutex_unlock(&fk.lock);
        struct job *j = submit(e, 0, size, 1, &d1);
        wait_done(&d1);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_INT(st.threads, ==, 1);
        CHECK(st.verified);
        CHECK_U64(st.pages_off_node, ==, 64 / 4);
        job_free(j);

        /* move_pages unavailable: done but not verified. */
        pthread_mutex_lock(&fk.lock);
        fk.move_pages_fails = true;
        pthread_mutex_unlock(&fk.lock);
        j = submit(e, 0, size, 0, &d2);
        wait_done(&d2);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK(!st.verified);
        CHECK_U64(st.pages_off_node, ==, 0);
        job_free(j);
        engine_free(e);
}

/* A byte in the middle of a middle chunk fails: the job fails with the
 * offset of the chunk holding it, having done exactly the chunks before it. */
static void check_failure(const struct topo *t, int err, uint64_t size)
{
        struct engine *e = make_engine(t, 1); /* one worker: chunks run in order */
        struct done d = DONE_INIT;
        struct job_status st;
        struct plan p = plan_for(e, 0, size, 0);
        uint64_t fail_chunk = p.n_chunks / 2;
        uint64_t fail_byte = fail_chunk * p.chunk_bytes + p.chunk_bytes / 2 + 4096;

        /* Neither the first chunk nor the last: chunks before it are done,
         * chunks after it are skipped.  Not on a chunk start: the reported
         * offset must be rounded down to one. */
        CHECK_U64(p.n_chunks, >=, 3);
        CHECK_U64(fail_byte / p.chunk_bytes, ==, fail_chunk);
        CHECK_U64(fail_byte % p.chunk_bytes, !=, 0);

        fake_reset();
        gate(true);
        struct job *j = submit(e, 0, size, 0, &d);
        uint8_t *base = last_map();
        wait_inside(1);
        pthread_mutex_lock(&fk.lock);
        CHECK(fk.call_addr[0] == base);
        fk.fail_base = base;
        fk.fail_off = fail_byte;
        fk.fail_errno = err;
        pthread_mutex_unlock(&fk.lock);
        gate(false);
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_FAILED);
        CHECK_INT(st.error, ==, -err);
        CHECK_U64(st.error_offset, ==, fail_chunk * p.chunk_bytes);
        CHECK_U64(st.bytes_done, ==, fail_chunk * p.chunk_bytes);
        CHECK(!st.verified);
        /* Chunks 0..fail_chunk in order, the rest skipped. */
        CHECK_INT(chunk_calls(base, size, &p, NULL), ==, fail_chunk + 1);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, fail_chunk + 1);
        for (uint64_t k = 0; k <= fail_chunk; k++)
                CHECK(fk.call_addr[k] == base + k * p.chunk_bytes);
        CHECK_INT(fk.munmaps, ==, 1);
        pthread_mutex_unlock(&fk.lock);
        /* A failed job unmaps before on_done (its reservation goes with it). */
        CHECK_INT(d.munmaps_before, ==, 1);
        CHECK_INT(done_calls(&d), ==, 1);
        job_free(j);
        engine_free(e);
}

/* 1 GiB: chunks of the full size. */
TEST(failure_efault_full_chunks)
{
        check_failure(topo_, EFAULT, 512 * PAGE);
}

/* 62 MiB: smaller chunks, and a short last one. */
TEST(failure_ehwpoison_short_last_chunk)
{
        check_failure(topo_, EHWPOISON, 31 * PAGE);
}

TEST(eintr)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        struct done d = DONE_INIT, d2 = DONE_INIT;
        struct job_status st;
        unsigned per[MAX_CHUNKS], twice = 0;
        uint64_t size = 128 * PAGE;
        struct plan p = plan_for(e, 0, size, 0);

        CHECK_U64(p.n_chunks, >, 1);

        /* Once: retried, the job succeeds; only the interrupted chunk is
         * asked for twice. */
        fake_reset();
        pthread_mutex_lock(&fk.lock);
        fk.eintr_left = 1;
        pthread_mutex_unlock(&fk.lock);
        struct job *j = submit(e, 0, size, 0, &d);
        uint8_t *base = last_map();
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, size);
        CHECK_INT(chunk_calls(base, size, &p, per), ==, p.n_chunks + 1);
        for (uint64_t k = 0; k < p.n_chunks; k++) {
                CHECK_INT(per[k], >=, 1);
                CHECK_INT(per[k], <=, 2);
                twice += per[k] == 2;
        }
        CHECK_INT(twice, ==, 1);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, p.n_chunks + 1);
        pthread_mutex_unlock(&fk.lock);
        job_free(j);

        /* For ever: the retry is bounded and the job fails with EINTR.  A
         * one-chunk job, so a single worker retries and nothing is done. */
        size = PAGE;
        p = plan_for(e, 0, size, 0);
        CHECK_U64(p.n_chunks, ==, 1);
        fake_reset();
        pthread_mutex_lock(&fk.lock);
        fk.eintr_forever = true;
        pthread_mutex_unlock(&fk.lock);
        j = submit(e, 0, size, 0, &d2);
        wait_done(&d2);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_FAILED);
        CHECK_INT(st.error, ==, -EINTR);
        CHECK_U64(st.error_offset, ==, 0);
        CHECK_U64(st.bytes_done, ==, 0);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, >, 1);
        CHECK_INT(fk.calls, <, 1000);
        pthread_mutex_unlock(&fk.lock);
        job_free(j);
        engine_free(e);
}

struct canceller {
        struct job *j;
        atomic_bool returned;
};

static void *cancel_thread(void *arg)
{
        struct canceller *c = arg;

        job_cancel(c->j);
        /* When job_cancel returns nobody may be inside a chunk. */
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.inside, ==, 0);
        pthread_mutex_unlock(&fk.lock);
        atomic_store(&c->returned, true);
        return NULL;
}

TEST(cancel)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        unsigned w = engine_node_workers(e, 0);
        struct done d = DONE_INIT;
        struct canceller c = { 0 };
        struct job_status st;
        unsigned per[MAX_CHUNKS];
        uint64_t size = 64 * PAGE;
        struct plan p = plan_for(e, 0, size, 0);
        pthread_t th;

        /* Every worker takes part and chunks are left over for after the cancel. */
        CHECK_INT(p.threads, ==, w);
        CHECK_U64(p.n_chunks, >, w);

        fake_reset();
        gate(true);
        c.j = submit(e, 0, size, 0, &d);
        uint8_t *base = last_map();
        wait_inside((int)w); /* every worker blocked inside a chunk */
        CHECK_INT(pthread_create(&th, NULL, cancel_thread, &c), ==, 0);
        usleep(100 * 1000);
        CHECK(!atomic_load(&c.returned)); /* still waiting for the workers */
        CHECK_INT(done_calls(&d), ==, 0);
        job_get_status(c.j, &st);
        CHECK_INT(st.state, ==, JOB_RUNNING);
        gate(false);
        CHECK_INT(pthread_join(th, NULL), ==, 0);
        CHECK(atomic_load(&c.returned));
        CHECK_INT(done_calls(&d), ==, 1);
        job_get_status(c.j, &st);
        CHECK_INT(st.state, ==, JOB_CANCELLED);
        /* The chunks that were in flight count (they finished); none more. */
        CHECK_U64(st.bytes_done, ==, (uint64_t)w * p.chunk_bytes);
        CHECK(st.finished_ns != 0);
        CHECK_INT(chunk_calls(base, size, &p, per), ==, w);
        for (uint64_t k = 0; k < p.n_chunks; k++)
                CHECK_INT(per[k], ==, k < w); /* handed out in order */
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, w); /* no chunk started after the cancel */
        CHECK_INT(fk.munmaps, ==, 1);
        pthread_mutex_unlock(&fk.lock);
        job_cancel(c.j); /* again: no effect */
        CHECK_INT(done_calls(&d), ==, 1);
        job_free(c.j);
        engine_free(e);
}

/* A job that finishes while it is being cancelled: one on_done only, and
 * the state is whichever won. */
TEST(cancel_race)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        /* The smallest chunk the planner makes (a one-page job's). */
        uint64_t min_chunk = plan_for(e, 0, PAGE, 0).chunk_bytes;

        fake_reset();
        for (int i = 0; i < 200; i++) {
                struct done d = DONE_INIT;
                struct job_status st;
                uint64_t size = (uint64_t)(1 + i % 3) * min_chunk;

                /* Jobs of one to three chunks, so they often finish mid-cancel. */
                CHECK_U64(plan_for(e, 0, size, 0).n_chunks, ==, 1 + i % 3);
                struct job *j = submit(e, 0, size, 0, &d);

                if (i % 2)
                        sched_yield();
                job_cancel(j);
                CHECK_INT(done_calls(&d), ==, 1);
                job_get_status(j, &st);
                CHECK(st.state == JOB_DONE || st.state == JOB_CANCELLED);
                job_free(j);
        }
        wait_munmaps(200);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.munmaps, ==, 200);
        pthread_mutex_unlock(&fk.lock);
        engine_free(e);
}

/* One worker, two jobs: once both are queued, chunks alternate. */
TEST(fairness)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 1);
        struct done da = DONE_INIT, db = DONE_INIT;
        unsigned per[MAX_CHUNKS], a = 0, b = 0;
        uint64_t size = 25 * PAGE; /* a short last chunk too */
        struct plan p = plan_for(e, 0, size, 0);
        uint64_t n = p.n_chunks;

        /* Enough chunks per job for a real alternation. */
        CHECK_U64(n, >=, 3);

        fake_reset();
        gate(true);
        struct job *ja = submit(e, 0, size, 0, &da);
        uint8_t *a_base = last_map();
        wait_inside(1);
        struct job *jb = submit(e, 0, size, 0, &db);
        uint8_t *b_base = last_map();
        gate(false);
        wait_done(&da);
        wait_done(&db);

        /* Each job: every chunk once. */
        CHECK_INT(chunk_calls(a_base, size, &p, per), ==, n);
        for (uint64_t k = 0; k < n; k++)
                CHECK_INT(per[k], ==, 1);
        CHECK_INT(chunk_calls(b_base, size, &p, per), ==, n);
        for (uint64_t k = 0; k < n; k++)
                CHECK_INT(per[k], ==, 1);

        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, 2 * n);
        CHECK(fk.call_addr[0] == a_base);
        for (unsigned i = 0; i < 2 * n; i++) {
                bool is_a = fk.call_addr[i] >= a_base && fk.call_addr[i] < a_base + size;

                if (is_a)
                        a++;
                else
                        b++;
                /* Round-robin: A, B, A, B, ... */
                CHECK_INT(is_a, ==, i % 2 == 0);
        }
        CHECK_INT(fk.max_inside, ==, 1);
        pthread_mutex_unlock(&fk.lock);
        CHECK_INT(a, ==, n);
        CHECK_INT(b, ==, n);
        job_free(ja);
        job_free(jb);
        engine_free(e);
}

/* Node 0 and memory-only node 2 run jobs at the same time. */
TEST(two_nodes)
{
        struct topo *t = make_topo(true);
        struct engine *e = make_engine(t, 0);
        struct done d0 = DONE_INIT, d2 = DONE_INIT;
        struct job_status st;
        pid_t tids[8];

        CHECK_INT(engine_node_workers(e, 0), ==, t->nodes[0].cpu_count);
        CHECK_INT(engine_node_workers(e, 2), ==, 1);
        CHECK_INT(engine_node_workers(e, 1), ==, 0);
        CHECK(!engine_node_pinned(e, 2));
        CHECK(!engine_node_pinned(e, 1));
        CHECK_INT(engine_node_tids(e, 2, tids, 8), ==, 1);
        CHECK(tids[0] > 0 && tids[0] != getpid());

        uint64_t size = 128 * PAGE;

        fake_reset();
        gate(true);
        struct job *j0 = submit(e, 0, size, 1, &d0);
        struct job *j2 = submit(e, 2, size, 0, &d2);
        wait_inside(2); /* both nodes inside a chunk at once */
        gate(false);
        wait_done(&d0);
        wait_done(&d2);
        job_get_status(j0, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        job_get_status(j2, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, size);
        job_free(j0);
        job_free(j2);
        engine_free(e);
        free_topo(t);
}

TEST(bad_submit)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 2);
        struct job_spec spec = { .node = 0, .fd = 0, .size_bytes = 4 * PAGE, .page_size = PAGE };
        struct job *j = (struct job *)0x1;

        fake_reset();
        CHECK_INT(engine_node_workers(e, 0), <=, 2);
        spec.node = 7;
        CHECK_INT(engine_submit(e, &spec, &j), ==, -ENOENT);
        spec.node = 0;
        spec.size_bytes = PAGE + 4096;
        CHECK_INT(engine_submit(e, &spec, &j), ==, -EINVAL);
        spec.size_bytes = 0;
        CHECK_INT(engine_submit(e, &spec, &j), ==, -EINVAL);
        spec.size_bytes = 4 * PAGE;
        spec.fd = -1;
        CHECK_INT(engine_submit(e, &spec, &j), ==, -EINVAL);
        spec.fd = 0;
        spec.kind = (enum job_kind)7;
        CHECK_INT(engine_submit(e, &spec, &j), ==, -EINVAL);
        spec.kind = JOB_POPULATE;
        spec.prio = (enum job_priority)9;
        CHECK_INT(engine_submit(e, &spec, &j), ==, -EINVAL);
        CHECK(j == (struct job *)0x1); /* untouched on failure */
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.mmaps, ==, 0);
        pthread_mutex_unlock(&fk.lock);
        engine_free(e);

        struct engine_config cfg = { .topo = NULL };
        struct engine *e2 = NULL;
        CHECK_INT(engine_new(&cfg, &e2), ==, -EINVAL);
        CHECK(e2 == NULL);
        engine_free(NULL);
        job_free(NULL);
}

/* engine_free with a job blocked in a chunk: cancels it (on_done runs) and
 * the job can still be freed afterwards. */
TEST(free_running)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        struct done d = DONE_INIT;

        fake_reset();
        gate(true);
        struct job *j = submit(e, 0, 512 * PAGE, 0, &d);
        wait_inside(1);
        gate(false);
        engine_free(e);
        CHECK_INT(done_calls(&d), ==, 1);
        job_free(j);
}


/* Index in the madvise log of the K-th call (0-based) that fell in
 * [BASE, BASE + SIZE), or -1. */
static int nth_call_in(const uint8_t *base, uint64_t size, unsigned k)
{
        int found = -1;

        pthread_mutex_lock(&fk.lock);
        for (unsigned i = 0; i < fk.calls && i < MAX_CALLS && found < 0; i++)
                if (fk.call_addr[i] >= base && fk.call_addr[i] < base + size && k-- == 0)
                        found = (int)i;
        pthread_mutex_unlock(&fk.lock);
        return found;
}

/* Index of the first madvise call in [BASE, BASE + SIZE), -1 if none. */
static int first_call_in(const uint8_t *base, uint64_t size) { return nth_call_in(base, size, 0); }

static struct plan low_plan_for(const struct engine *e, int node, uint64_t size, unsigned threads)
{
        struct plan p;

        CHECK_INT(plan_make_low(size, PAGE, engine_node_workers(e, node), threads, &p), ==, 0);
        return p;
}

/* The zero calls that fell in [BASE, BASE + SIZE): each exactly one chunk
 * of P, each chunk once.  Returns how many. */
static unsigned zero_calls(const uint8_t *base, uint64_t size, const struct plan *p)
{
        unsigned per[MAX_CHUNKS], total;

        pthread_mutex_lock(&fk.lock);
        total = calls_on_chunks(fk.zcall_addr, fk.zcall_len, fk.zcalls < MAX_CALLS ? fk.zcalls : MAX_CALLS,
                                base, size, p, per);
        pthread_mutex_unlock(&fk.lock);
        for (uint64_t k = 0; k < p->n_chunks; k++)
                CHECK_INT(per[k], <=, 1);
        return total;
}

/* A zero job on a fully populated file: mapped with MAP_POPULATE (its pages
 * are present: that fills the page table in one pass), every chunk is
 * populated (a cheap walk, the guard against a missing page) and then
 * zeroed, each exactly once; the job ends DONE with all its bytes,
 * placement checked, the mapping shared and gone. */
TEST(zero_job)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        struct done d = DONE_INIT;
        struct job_status st;
        unsigned per[MAX_CHUNKS];
        uint64_t size = 77 * PAGE;
        struct plan p = plan_for(e, 0, size, 0);

        CHECK_U64(p.n_chunks, >, 1);
        CHECK_STR(engine_zero_routine(e), "injected");
        fake_reset();
        fake_file((off_t)size, (off_t)size);
        struct job *j = submit_spec(e, (struct job_spec){ .node = 0, .size_bytes = size, .kind = JOB_ZERO }, &d);
        uint8_t *base = last_map();
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, size);
        CHECK(st.verified);
        CHECK_INT(chunk_calls(base, size, &p, per), ==, p.n_chunks);
        for (uint64_t k = 0; k < p.n_chunks; k++)
                CHECK_INT(per[k], ==, 1);
        CHECK_INT(zero_calls(base, size, &p), ==, p.n_chunks);
        CHECK_INT(d.munmaps_before, ==, 0);
        wait_munmaps(1); /* the munmap comes after on_done */
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.zcalls, ==, p.n_chunks);
        CHECK_INT(fk.fstats, ==, 1);
        CHECK_INT(fk.mmaps, ==, 1);
        CHECK_INT(fk.munmaps, ==, 1);
        CHECK_INT(fk.mmap_flags, ==, MAP_SHARED | MAP_POPULATE);
        CHECK_INT(fk.mmap_off, ==, 0);
        pthread_mutex_unlock(&fk.lock);
        CHECK_INT(done_calls(&d), ==, 1);
        job_free(j);
        engine_free(e);

        /* Without an injected routine the engine uses the best one. */
        struct engine_ops ops = fake_ops;
        struct engine_config cfg = { .topo = t, .ops = &ops };

        ops.zero = NULL;
        CHECK_INT(engine_new(&cfg, &e), ==, 0);
        CHECK_STR(engine_zero_routine(e), zero_best()->name);
        engine_free(e);
        CHECK(engine_zero_routine(NULL) == NULL);
}

/* Zeroing through a hole would take a new page from the kernel: refused
 * with -ENODATA before anything is mapped.  The check is on the whole file
 * (st_blocks covers st_size) and the file must reach the job's end. */
TEST(zero_refuses_holes)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        struct job_spec spec = { .node = 0, .fd = 0, .size_bytes = 16 * PAGE, .page_size = PAGE, .kind = JOB_ZERO };
        struct job *j = (struct job *)0x1;
        struct done d = DONE_INIT;

        fake_reset();
        fake_file(16 * PAGE, 15 * PAGE); /* one page missing */
        CHECK_INT(engine_submit(e, &spec, &j), ==, -ENODATA);
        fake_file(0, 0); /* empty file */
        CHECK_INT(engine_submit(e, &spec, &j), ==, -ENODATA);
        fake_file(15 * PAGE, 15 * PAGE); /* full, but shorter than the job */
        CHECK_INT(engine_submit(e, &spec, &j), ==, -ENODATA);
        fake_file(20 * PAGE, 16 * PAGE); /* the job's range is there, a hole beyond it */
        CHECK_INT(engine_submit(e, &spec, &j), ==, -ENODATA);
        pthread_mutex_lock(&fk.lock);
        fk.fstat_errno = EBADF;
        pthread_mutex_unlock(&fk.lock);
        CHECK_INT(engine_submit(e, &spec, &j), ==, -EBADF);
        CHECK(j == (struct job *)0x1);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.fstats, ==, 5);
        CHECK_INT(fk.mmaps, ==, 0);
        CHECK_INT(fk.zcalls, ==, 0);
        fk.fstat_errno = 0;
        pthread_mutex_unlock(&fk.lock);
        CHECK_STR(engine_error_slug(-ENODATA), "file-not-populated");
        CHECK(strstr(engine_error_cause(-ENODATA), "hole") != NULL);

        /* A populate job does not look: filling holes is its purpose. */
        fake_file(16 * PAGE, 0);
        j = submit(e, 0, 16 * PAGE, 0, &d);
        wait_done(&d);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.fstats, ==, 5);
        CHECK_INT(fk.zcalls, ==, 0);
        pthread_mutex_unlock(&fk.lock);
        job_free(j);
        engine_free(e);
}

/* Cancelling a zero job: the chunks in flight finish (populate and zero),
 * none starts after; bytes_done is exactly those chunks. */
TEST(zero_cancel)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        unsigned w = engine_node_workers(e, 0);
        struct done d = DONE_INIT;
        struct canceller c = { 0 };
        struct job_status st;
        uint64_t size = 64 * PAGE;
        struct plan p = plan_for(e, 0, size, 0);
        pthread_t th;

        CHECK_U64(p.n_chunks, >, w);
        fake_reset();
        fake_file((off_t)size, (off_t)size);
        gate(true);
        c.j = submit_spec(e, (struct job_spec){ .node = 0, .size_bytes = size, .kind = JOB_ZERO }, &d);
        uint8_t *base = last_map();
        wait_inside((int)w);
        CHECK_INT(pthread_create(&th, NULL, cancel_thread, &c), ==, 0);
        usleep(50 * 1000);
        CHECK(!atomic_load(&c.returned));
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.zcalls, ==, 0); /* still inside the populate of each chunk */
        pthread_mutex_unlock(&fk.lock);
        gate(false);
        CHECK_INT(pthread_join(th, NULL), ==, 0);
        job_get_status(c.j, &st);
        CHECK_INT(st.state, ==, JOB_CANCELLED);
        CHECK_U64(st.bytes_done, ==, (uint64_t)w * p.chunk_bytes);
        CHECK_INT(zero_calls(base, size, &p), ==, w);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, w);
        CHECK_INT(fk.zcalls, ==, w);
        CHECK_INT(fk.munmaps, ==, 1);
        pthread_mutex_unlock(&fk.lock);
        CHECK_INT(done_calls(&d), ==, 1);
        job_free(c.j);
        engine_free(e);
}

/* One worker.  A low-priority job submitted while a normal one has chunks
 * left gets none of them until the normal job's last chunk is handed out;
 * and a normal job arriving while a low-priority chunk is in flight takes
 * every chunk after that one before the low job gets its next. */
TEST(priority_one_worker)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 1);
        struct done da = DONE_INIT, dl = DONE_INIT, da2 = DONE_INIT, dl2 = DONE_INIT;
        struct job_status st;
        uint64_t a_size = 25 * PAGE, l_size = 64 * PAGE;
        struct plan pa = plan_for(e, 0, a_size, 0), pl = low_plan_for(e, 0, l_size, 0);

        CHECK_U64(pa.n_chunks, >=, 3);
        CHECK_U64(pl.n_chunks, >=, 3);
        /* The low job is cut finer than the same job at normal priority. */
        CHECK_U64(pl.chunk_bytes, <=, plan_for(e, 0, l_size, 0).chunk_bytes);

        /* Normal first, low submitted while it runs. */
        fake_reset();
        gate(true);
        struct job *a = submit(e, 0, a_size, 0, &da);
        uint8_t *a_base = last_map();
        wait_inside(1);
        struct job *l = submit_spec(e, (struct job_spec){ .node = 0, .size_bytes = l_size, .prio = JOB_PRIO_LOW }, &dl);
        uint8_t *l_base = last_map();
        gate(false);
        wait_done(&da);
        wait_done(&dl);
        CHECK_INT(chunk_calls(a_base, a_size, &pa, NULL), ==, pa.n_chunks);
        CHECK_INT(chunk_calls(l_base, l_size, &pl, NULL), ==, pl.n_chunks);
        /* Every call of A comes before the first of L. */
        CHECK_INT(first_call_in(l_base, l_size), ==, (int)pa.n_chunks);
        job_get_status(l, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, l_size);
        job_free(a);
        job_free(l);

        /* Low first, a chunk of it in flight; then a normal job arrives:
         * L0, A0 .. A(n-1), L1 .. L(m-1).  The low one is a zero job. */
        fake_reset();
        fake_file((off_t)l_size, (off_t)l_size);
        gate(true);
        l = submit_spec(e, (struct job_spec){ .node = 0, .size_bytes = l_size, .kind = JOB_ZERO, .prio = JOB_PRIO_LOW },
                        &dl2);
        l_base = last_map();
        wait_inside(1);
        a = submit(e, 0, a_size, 0, &da2);
        a_base = last_map();
        gate(false);
        wait_done(&da2);
        /* When the normal job is done, the low one has had only the chunk
         * that was in flight when it arrived. */
        CHECK_INT(first_call_in(l_base, l_size), ==, 0);
        CHECK_INT(first_call_in(a_base, a_size), ==, 1);
        CHECK_INT(nth_call_in(l_base, l_size, 1) == -1 || nth_call_in(l_base, l_size, 1) > (int)pa.n_chunks, ==, 1);
        wait_done(&dl2);
        CHECK_INT(nth_call_in(l_base, l_size, 1), ==, (int)pa.n_chunks + 1);
        CHECK_INT(zero_calls(l_base, l_size, &pl), ==, pl.n_chunks);
        job_get_status(l, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, l_size);
        job_free(a);
        job_free(l);
        engine_free(e);
}

/* A low-priority job that never got a chunk (a normal job holds the only
 * worker) can be cancelled at once: CANCELLED, nothing done, nothing
 * touched; the normal job then runs to the end as if it had been alone. */
TEST(priority_cancel_starved)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 1);
        struct done da = DONE_INIT, dl = DONE_INIT;
        struct job_status st;
        uint64_t size = 25 * PAGE;
        struct plan pa = plan_for(e, 0, size, 0);

        fake_reset();
        fake_file((off_t)size, (off_t)size);
        gate(true);
        struct job *a = submit(e, 0, size, 0, &da);
        uint8_t *a_base = last_map();
        wait_inside(1);
        struct job *l = submit_spec(e, (struct job_spec){ .node = 0, .size_bytes = size, .kind = JOB_ZERO,
                                                          .prio = JOB_PRIO_LOW }, &dl);
        uint8_t *l_base = last_map();
        job_cancel(l); /* returns with the worker still blocked inside A */
        CHECK_INT(done_calls(&dl), ==, 1);
        job_get_status(l, &st);
        CHECK_INT(st.state, ==, JOB_CANCELLED);
        CHECK_U64(st.bytes_done, ==, 0);
        job_get_status(a, &st);
        CHECK_INT(st.state, ==, JOB_RUNNING);
        gate(false);
        wait_done(&da);
        job_get_status(a, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_INT(chunk_calls(a_base, size, &pa, NULL), ==, pa.n_chunks);
        CHECK_INT(first_call_in(l_base, size), ==, -1);
        wait_munmaps(2); /* A unmaps after its on_done */
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, pa.n_chunks);
        CHECK_INT(fk.zcalls, ==, 0);
        CHECK_INT(fk.munmaps, ==, 2);
        pthread_mutex_unlock(&fk.lock);
        job_free(a);
        job_free(l);
        engine_free(e);
}

/* Two workers, a normal job capped at one thread: the idle worker does not
 * take the low-priority job while the normal job has chunks left (strict
 * priority, not work-conserving: the stock must not compete with a pool
 * warm for memory bandwidth), and does once they are all handed out. */
TEST(priority_idle_worker)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        struct done da = DONE_INIT, dl = DONE_INIT;
        uint64_t a_size = 32 * PAGE, l_size = 32 * PAGE;
        struct plan pa = plan_for(e, 0, a_size, 1), pl = low_plan_for(e, 0, l_size, 0);

        if (engine_node_workers(e, 0) < 2) {
                fprintf(stderr, "priority with an idle worker: skipped (one CPU here)\n");
                engine_free(e);
                return;
        }
        CHECK_U64(pa.n_chunks, >=, 3);
        CHECK_INT(pa.threads, ==, 1);
        CHECK_INT(pl.threads, >=, 2);

        fake_reset();
        gate(true);
        struct job *a = submit(e, 0, a_size, 1, &da);
        uint8_t *a_base = last_map();
        wait_inside(1);
        struct job *l = submit_spec(e, (struct job_spec){ .node = 0, .size_bytes = l_size, .prio = JOB_PRIO_LOW }, &dl);
        uint8_t *l_base = last_map();
        usleep(100 * 1000);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.inside, ==, 1);  /* the second worker stayed idle */
        CHECK_INT(fk.calls, ==, 1);
        pthread_mutex_unlock(&fk.lock);
        gate(false);
        wait_done(&da);
        wait_done(&dl);
        /* A's chunks run one after the other (one thread); its last is
         * handed out only after its last-but-one returned, and no chunk of
         * L before that. */
        CHECK_INT(first_call_in(l_base, l_size), >, nth_call_in(a_base, a_size, (unsigned)pa.n_chunks - 2));
        CHECK_INT(chunk_calls(l_base, l_size, &pl, NULL), ==, pl.n_chunks);
        job_free(a);
        job_free(l);
        engine_free(e);
}

/* A tail-range job (a stock file grown with ftruncate): the mapping starts
 * at the offset, chunks cover only [offset, size), bytes_done counts them. */
TEST(offset)
{
        const struct topo *t = topo_;
        struct engine *e = make_engine(t, 0);
        struct done d = DONE_INIT;
        struct job_status st;
        uint64_t size = 40 * PAGE, off = 8 * PAGE, len = size - off;
        struct plan p = plan_for(e, 0, len, 0);
        unsigned per[MAX_CHUNKS];
        struct job_spec bad = { .node = 0, .fd = 0, .size_bytes = size, .page_size = PAGE };
        struct job *j = (struct job *)0x1;

        fake_reset();
        j = submit_spec(e, (struct job_spec){ .node = 0, .size_bytes = size, .offset = off }, &d);
        uint8_t *base = last_map();
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.mmap_off, ==, off);
        CHECK_U64(fk.mmap_len, ==, len);
        pthread_mutex_unlock(&fk.lock);
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, len);
        CHECK(st.verified);
        CHECK_INT(chunk_calls(base, len, &p, per), ==, p.n_chunks);
        for (uint64_t k = 0; k < p.n_chunks; k++)
                CHECK_INT(per[k], ==, 1);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, p.n_chunks);
        pthread_mutex_unlock(&fk.lock);
        job_free(j);

        /* Refused: not on a page, at or past the end. */
        j = (struct job *)0x1;
        fake_reset();
        bad.offset = PAGE + 4096;
        CHECK_INT(engine_submit(e, &bad, &j), ==, -EINVAL);
        bad.offset = size;
        CHECK_INT(engine_submit(e, &bad, &j), ==, -EINVAL);
        bad.offset = size + PAGE;
        CHECK_INT(engine_submit(e, &bad, &j), ==, -EINVAL);
        CHECK(j == (struct job *)0x1);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.mmaps, ==, 0);
        pthread_mutex_unlock(&fk.lock);
        engine_free(e);
}

TEST(causes)
{
        CHECK_STR(engine_error_slug(-EFAULT), "hugepages-exhausted");
        CHECK_STR(engine_error_slug(EFAULT), "hugepages-exhausted");
        CHECK_STR(engine_error_slug(-ENOMEM), "out-of-memory");
        CHECK_STR(engine_error_slug(-EINTR), "interrupted");
        CHECK_STR(engine_error_slug(-EHWPOISON), "hardware-poison");
        CHECK_STR(engine_error_slug(-EINVAL), "populate-unsupported");
        CHECK_STR(engine_error_slug(-EIO), "populate-failed");
        CHECK(strstr(engine_error_cause(-EFAULT), "hugepages") != NULL);
        CHECK(strstr(engine_error_cause(-EINVAL), "5.14") != NULL);
        CHECK(engine_error_cause(-EPERM) != NULL);
}

int main(void)
{
        topo_ = make_topo(false);
        int r = test_run_all();
        free_topo(topo_);
        return r;
}
