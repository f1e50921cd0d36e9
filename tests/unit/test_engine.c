/* Engine tests with injected kernel calls: mappings are PROT_NONE anonymous
 * reservations that nothing touches, madvise is a fake that can fail at a
 * given offset, return EINTR, or block at a gate until the test opens it,
 * and move_pages reports a chosen placement.  Covers success, error with its
 * offset, EINTR retry and its bound, cancellation while workers are inside a
 * chunk, round-robin fairness on one node, jobs on two nodes of a hand-built
 * topology (one memory-only), and engine_free with a job still running. */
#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine.h"
#include "topo.h"
#include "util.h"

#define PAGE (2 * MIB)
#define CHUNK (64 * MIB) /* the planner's chunk for 2 MiB pages */
#define MAX_CALLS 4096

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
        unsigned mmaps, munmaps, mbinds;
        int mbind_node;
        int mmap_flags;
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
        pthread_mutex_unlock(&fk.lock);
}

static void *fake_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
        void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

        pthread_mutex_lock(&fk.lock);
        fk.mmaps++;
        fk.mmap_flags = flags;
        pthread_mutex_unlock(&fk.lock);
        return p;
}

static int fake_munmap(void *addr, size_t len)
{
        pthread_mutex_lock(&fk.lock);
        /* Unmapping while a worker is inside a chunk of it would be the bug. */
        for (size_t i = 0; i < ARRAY_SIZE(fk.inside_addr); i++)
                CHECK(!(fk.inside_addr[i] >= (uint8_t *)addr && fk.inside_addr[i] < (uint8_t *)addr + len));
        fk.munmaps++;
        pthread_mutex_unlock(&fk.lock);
        return munmap(addr, len);
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
        CHECK_U64(len % PAGE, ==, 0);
        CHECK_U64(len, <=, CHUNK);
        pthread_mutex_lock(&fk.lock);
        if (fk.calls < MAX_CALLS)
                fk.call_addr[fk.calls] = a;
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

static const struct engine_ops fake_ops = {
        .mmap = fake_mmap,
        .munmap = fake_munmap,
        .madvise = fake_madvise,
        .mbind = fake_mbind,
        .move_pages = fake_move_pages,
};

/* Wait (bounded) until N callers sit inside madvise. */
static void wait_inside(int n)
{
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&fk.lock);
        while (fk.inside < n)
                CHECK_INT(pthread_cond_timedwait(&fk.cond, &fk.lock, &until), ==, 0);
        pthread_mutex_unlock(&fk.lock);
}

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
};

#define DONE_INIT { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER }

static void on_done(struct job *j, void *arg)
{
        struct done *d = arg;
        struct job_status st;

        job_get_status(j, &st);
        CHECK(st.state != JOB_RUNNING);
        CHECK(st.finished_ns >= st.started_ns);
        pthread_mutex_lock(&d->lock);
        d->calls++;
        d->state = st.state;
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

/* A hand-built topology: node 0 with CPU 0 (and CPU 1 when the machine has
 * it), node 2 memory-only. */
static struct topo *make_topo(bool with_memory_only_node)
{
        struct topo *t = calloc(1, sizeof(*t));
        unsigned ncpu = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 1;

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
                                CPU_SET_S(c, n->cpus_size, n->cpus);
                        n->cpu_count = ncpu;
                        n->cpulist = ncpu == 2 ? "0-1" : "0";
                } else
                        n->cpulist = "";
        }
        t->n_page_sizes = 1;
        t->page_sizes[0] = PAGE;
        return t;
}

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

static struct job *submit(struct engine *e, int node, uint64_t size, unsigned threads, struct done *d)
{
        struct job_spec spec = {
                .node = node, .fd = 0, .size_bytes = size, .page_size = PAGE,
                .threads = threads, .on_done = on_done, .arg = d,
        };
        struct job *j = NULL;

        CHECK_INT(engine_submit(e, &spec, &j), ==, 0);
        CHECK(j);
        return j;
}

static void test_success(const struct topo *t)
{
        struct engine *e = make_engine(t, 0);
        struct done d = DONE_INIT;
        struct job_status st;
        uint64_t size = 10 * CHUNK + 3 * PAGE;

        fake_reset();
        pthread_mutex_lock(&fk.lock);
        fk.off_node_every = 0;
        pthread_mutex_unlock(&fk.lock);

        struct job *j = submit(e, 0, size, 0, &d);
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, size);
        CHECK_INT(st.error, ==, 0);
        CHECK(st.verified);
        CHECK_U64(st.pages_off_node, ==, 0);
        CHECK_INT(st.threads, ==, engine_node_workers(e, 0));
        CHECK(st.finished_ns >= st.started_ns);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, 11);
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

static void test_placement(const struct topo *t)
{
        struct engine *e = make_engine(t, 0);
        struct done d1 = DONE_INIT, d2 = DONE_INIT;
        struct job_status st;
        uint64_t size = 2 * CHUNK; /* 64 pages */

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

static void test_failure(const struct topo *t, int err)
{
        struct engine *e = make_engine(t, 1); /* one worker: chunks run in order */
        struct done d = DONE_INIT;
        struct job_status st;
        uint64_t size = 8 * CHUNK;

        fake_reset();
        gate(true);
        struct job *j = submit(e, 0, size, 0, &d);
        wait_inside(1);
        pthread_mutex_lock(&fk.lock);
        fk.fail_base = fk.call_addr[0];
        fk.fail_off = 3 * CHUNK + 5 * PAGE;
        fk.fail_errno = err;
        pthread_mutex_unlock(&fk.lock);
        gate(false);
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_FAILED);
        CHECK_INT(st.error, ==, -err);
        CHECK_U64(st.error_offset, ==, 3 * CHUNK);
        CHECK_U64(st.bytes_done, ==, 3 * CHUNK);
        CHECK(!st.verified);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, 4); /* the rest was skipped */
        CHECK_INT(fk.munmaps, ==, 1);
        pthread_mutex_unlock(&fk.lock);
        CHECK_INT(done_calls(&d), ==, 1);
        job_free(j);
        engine_free(e);
}

static void test_eintr(const struct topo *t)
{
        struct engine *e = make_engine(t, 0);
        struct done d = DONE_INIT, d2 = DONE_INIT;
        struct job_status st;

        /* Once: retried, the job succeeds. */
        fake_reset();
        pthread_mutex_lock(&fk.lock);
        fk.eintr_left = 1;
        pthread_mutex_unlock(&fk.lock);
        struct job *j = submit(e, 0, 4 * CHUNK, 0, &d);
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, 4 * CHUNK);
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, 5);
        pthread_mutex_unlock(&fk.lock);
        job_free(j);

        /* For ever: the retry is bounded and the job fails with EINTR. */
        fake_reset();
        pthread_mutex_lock(&fk.lock);
        fk.eintr_forever = true;
        pthread_mutex_unlock(&fk.lock);
        j = submit(e, 0, 1 * CHUNK, 0, &d2);
        wait_done(&d2);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_FAILED);
        CHECK_INT(st.error, ==, -EINTR);
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

static void test_cancel(const struct topo *t)
{
        struct engine *e = make_engine(t, 0);
        unsigned w = engine_node_workers(e, 0);
        struct done d = DONE_INIT;
        struct canceller c = { 0 };
        struct job_status st;
        pthread_t th;

        fake_reset();
        gate(true);
        c.j = submit(e, 0, 32 * CHUNK, 0, &d);
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
        CHECK_U64(st.bytes_done, <=, (uint64_t)w * CHUNK);
        CHECK(st.finished_ns != 0);
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
static void test_cancel_race(const struct topo *t)
{
        struct engine *e = make_engine(t, 0);

        fake_reset();
        for (int i = 0; i < 200; i++) {
                struct done d = DONE_INIT;
                struct job_status st;
                struct job *j = submit(e, 0, (uint64_t)(1 + i % 3) * CHUNK, 0, &d);

                if (i % 2)
                        sched_yield();
                job_cancel(j);
                CHECK_INT(done_calls(&d), ==, 1);
                job_get_status(j, &st);
                CHECK(st.state == JOB_DONE || st.state == JOB_CANCELLED);
                job_free(j);
        }
        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.munmaps, ==, 200);
        pthread_mutex_unlock(&fk.lock);
        engine_free(e);
}

/* One worker, two jobs: once both are queued, chunks alternate. */
static void test_fairness(const struct topo *t)
{
        struct engine *e = make_engine(t, 1);
        struct done da = DONE_INIT, db = DONE_INIT;
        uint8_t *a_base;
        unsigned a = 0, b = 0;

        fake_reset();
        gate(true);
        struct job *ja = submit(e, 0, 6 * CHUNK, 0, &da);
        wait_inside(1);
        struct job *jb = submit(e, 0, 6 * CHUNK, 0, &db);
        gate(false);
        wait_done(&da);
        wait_done(&db);

        pthread_mutex_lock(&fk.lock);
        CHECK_INT(fk.calls, ==, 12);
        a_base = fk.call_addr[0];
        for (unsigned i = 0; i < 12; i++) {
                bool is_a = fk.call_addr[i] >= a_base && fk.call_addr[i] < a_base + 6 * CHUNK;

                if (is_a)
                        a++;
                else
                        b++;
                /* Round-robin: A, B, A, B, ... */
                CHECK_INT(is_a, ==, i % 2 == 0);
        }
        CHECK_INT(fk.max_inside, ==, 1);
        pthread_mutex_unlock(&fk.lock);
        CHECK_INT(a, ==, 6);
        CHECK_INT(b, ==, 6);
        job_free(ja);
        job_free(jb);
        engine_free(e);
}

/* Node 0 and memory-only node 2 run jobs at the same time. */
static void test_two_nodes(void)
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

        fake_reset();
        gate(true);
        struct job *j0 = submit(e, 0, 4 * CHUNK, 1, &d0);
        struct job *j2 = submit(e, 2, 4 * CHUNK, 0, &d2);
        wait_inside(2); /* both nodes inside a chunk at once */
        gate(false);
        wait_done(&d0);
        wait_done(&d2);
        job_get_status(j0, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        job_get_status(j2, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, 4 * CHUNK);
        job_free(j0);
        job_free(j2);
        engine_free(e);
        free_topo(t);
}

static void test_bad_submit(const struct topo *t)
{
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
static void test_free_running(const struct topo *t)
{
        struct engine *e = make_engine(t, 0);
        struct done d = DONE_INIT;

        fake_reset();
        gate(true);
        struct job *j = submit(e, 0, 16 * CHUNK, 0, &d);
        wait_inside(1);
        gate(false);
        engine_free(e);
        CHECK_INT(done_calls(&d), ==, 1);
        job_free(j);
}

static void test_causes(void)
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
        struct topo *t = make_topo(false);

        test_causes();
        test_success(t);
        test_placement(t);
        test_failure(t, EFAULT);
        test_failure(t, EHWPOISON);
        test_eintr(t);
        test_cancel(t);
        test_cancel_race(t);
        test_fairness(t);
        test_two_nodes();
        test_bad_submit(t);
        test_free_running(t);
        free_topo(t);
        return 0;
}
