/* prio_bench DIR SIZE_BYTES THREADS ROUNDS: does a low-priority job (a stock
 * refill or recycle) slow a pool warm on the same node?  It drives the real
 * engine (hpwcore) on node 0 with THREADS workers and 2 MiB pages in DIR
 * (a hugetlbfs directory), and times, per round, in a rotating order:
 *
 *   alone          a populate job of SIZE_BYTES (normal priority), alone;
 *   beside_low     the same populate submitted while a low-priority zero
 *                  job over a populated file of SIZE_BYTES/2 is running (its
 *                  first chunk has begun): the engine serves the populate's
 *                  chunks first, so it should only wait for the zero job's
 *                  chunks already in flight;
 *   beside_normal  the same with the zero job at normal priority (what the
 *                  priority saves: the two share the workers round-robin);
 *   zero_alone     the zero job alone (the engine's recycle rate).
 *
 * A populate is timed from engine_submit to its on_done (the mapping, every
 * chunk, the placement check and the munmap); its file's pages go back to
 * the kernel between rounds (ftruncate to 0 and back, untimed), so every
 * populate takes and clears fresh pages.  Prints one line of JSON with every
 * round's seconds and leaves DIR as it found it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "topo.h"
#include "util.h"
#include "zero.h"

#include "bench_args.h"

#define PAGE (2 * MIB)

enum { ALONE, BESIDE_LOW, BESIDE_NORMAL, ZERO_ALONE, N_CONTENDERS };
static const char *const names[N_CONTENDERS] = { "alone", "beside_low", "beside_normal", "zero_alone" };

struct done {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool called;
        uint64_t at_ns;
};

static void on_done(struct job *j, void *arg)
{
        struct done *d = arg;
        uint64_t now = now_mono_ns();

        pthread_mutex_lock(&d->lock);
        d->called = true;
        d->at_ns = now;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
}

static void done_init(struct done *d)
{
        pthread_mutex_init(&d->lock, NULL);
        pthread_cond_init(&d->cond, NULL);
        d->called = false;
}

static uint64_t wait_done(struct done *d)
{
        pthread_mutex_lock(&d->lock);
        while (!d->called)
                pthread_cond_wait(&d->cond, &d->lock);
        uint64_t at = d->at_ns;
        pthread_mutex_unlock(&d->lock);
        return at;
}

static void die(const char *what, int err)
{
        printf("{\"error\":\"%s: %s\"}\n", what, strerror(err < 0 ? -err : err));
        exit(1);
}

static struct job *submit(struct engine *e, int fd, uint64_t size, enum job_kind kind, enum job_priority prio,
                          struct done *d)
{
        struct job_spec spec = { .node = 0, .fd = fd, .size_bytes = size, .page_size = PAGE,
                                 .kind = kind, .prio = prio, .on_done = on_done, .arg = d };
        struct job *j = NULL;
        int r;

        done_init(d);
        r = engine_submit(e, &spec, &j);
        if (r < 0)
                die(kind == JOB_ZERO ? "engine_submit (zero)" : "engine_submit (populate)", r);
        return j;
}

static void expect_done(struct job *j, const char *what)
{
        struct job_status st;

        job_get_status(j, &st);
        if (st.state != JOB_DONE) {
                printf("{\"error\":\"%s ended in state %d: %s\"}\n", what, st.state, engine_error_cause(st.error));
                exit(1);
        }
}

/* Zero jobs that were over before the populate could start beside them. */
static unsigned restarts;

/* The real zeroing routine, behind a wrapper that says when a zero job's
 * first chunk has begun: the populate is then submitted while the zero job
 * is certainly at work, whatever the machine's speed (a poll for a
 * finished chunk can miss a small job that ends with that chunk). */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool started;
} zero_seen = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
static void (*zero_real)(void *addr, size_t len);

static void zero_signalling(void *addr, size_t len)
{
        pthread_mutex_lock(&zero_seen.lock);
        zero_seen.started = true;
        pthread_cond_broadcast(&zero_seen.cond);
        pthread_mutex_unlock(&zero_seen.lock);
        zero_real(addr, len);
}

static void zero_seen_reset(void)
{
        pthread_mutex_lock(&zero_seen.lock);
        zero_seen.started = false;
        pthread_mutex_unlock(&zero_seen.lock);
}

static void zero_seen_wait(void)
{
        pthread_mutex_lock(&zero_seen.lock);
        while (!zero_seen.started)
                pthread_cond_wait(&zero_seen.cond, &zero_seen.lock);
        pthread_mutex_unlock(&zero_seen.lock);
}

/* The populate target's pages go back to the kernel (untimed). */
static void release(int fd, uint64_t size)
{
        if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)size) < 0)
                die("ftruncate", errno);
}

static double populate_alone(struct engine *e, int fa, uint64_t size)
{
        struct done d;
        uint64_t t0;

        release(fa, size);
        t0 = now_mono_ns();
        struct job *j = submit(e, fa, size, JOB_POPULATE, JOB_PRIO_NORMAL, &d);
        uint64_t t1 = wait_done(&d);
        expect_done(j, "populate");
        job_free(j);
        return (double)(t1 - t0) / 1e9;
}

/* The populate, submitted once the zero job of FB is at work (its first
 * chunk has begun).  Should the zero job still be over before the
 * populate's first chunk, the round is counted in `restarts` and kept: it
 * only makes the contention smaller, never the verdict a matter of speed. */
static double populate_beside(struct engine *e, int fa, uint64_t size, int fb, uint64_t b_size,
                              enum job_priority zprio)
{
        struct done da, db;
        struct job_status st;
        uint64_t t0;

        release(fa, size);
        zero_seen_reset();
        struct job *jb = submit(e, fb, b_size, JOB_ZERO, zprio, &db);
        zero_seen_wait();
        t0 = now_mono_ns();
        struct job *ja = submit(e, fa, size, JOB_POPULATE, JOB_PRIO_NORMAL, &da);
        job_get_status(jb, &st);
        if (st.state != JOB_RUNNING)
                restarts++;
        uint64_t t1 = wait_done(&da);
        wait_done(&db);
        expect_done(ja, "populate");
        expect_done(jb, "zero");
        job_free(ja);
        job_free(jb);
        return (double)(t1 - t0) / 1e9;
}

static double zero_alone(struct engine *e, int fb, uint64_t b_size)
{
        struct done d;
        uint64_t t0 = now_mono_ns();
        struct job *j = submit(e, fb, b_size, JOB_ZERO, JOB_PRIO_LOW, &d);
        uint64_t t1 = wait_done(&d);

        expect_done(j, "zero");
        job_free(j);
        return (double)(t1 - t0) / 1e9;
}

static int make_file(const char *dir, const char *name, uint64_t size, char *path, size_t path_size)
{
        int fd;

        snprintf(path, path_size, "%s/%s", dir, name);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                die(path, errno);
        if (ftruncate(fd, (off_t)size) < 0)
                die("ftruncate", errno);
        return fd;
}

int main(int argc, char **argv)
{
        unsigned long long size, threads, rounds;
        char cpulist[4096] = "", pa[4200], pb[4200];
        struct topo_node node = { .id = 0 };
        struct topo t = { .n_nodes = 1, .nodes = &node, .n_page_sizes = 1, .page_sizes = { PAGE } };
        struct engine *e = NULL;
        uint64_t b_size;
        const char *bad;
        char *end;
        FILE *f;
        int r, fa, fb;

        if (argc != 5) {
                fprintf(stderr, "usage: %s DIR SIZE_BYTES THREADS ROUNDS\n", argv[0]);
                return 2;
        }
        errno = 0;
        size = strtoull(argv[2], &end, 10);
        if (errno || *end || size < 4 * PAGE || size % PAGE)
                die("SIZE_BYTES must be a multiple of 2 MiB, at least 8 MiB", EINVAL);
        if (!bench_threads_rounds(argv, &threads, &rounds, &bad))
                die(bad, EINVAL);
        b_size = size / 2 / PAGE * PAGE;

        f = fopen("/sys/devices/system/node/node0/cpulist", "re");
        if (!f)
                die("node0/cpulist", errno);
        if (!fgets(cpulist, sizeof(cpulist), f))
                cpulist[0] = '\0';
        fclose(f);
        cpulist[strcspn(cpulist, "\n")] = '\0';
        r = cpulist_parse(cpulist, &node.cpus, &node.cpus_size, &node.cpu_count);
        if (r < 0)
                die("cpulist_parse", r);
        node.cpulist = cpulist;

        /* The workers exist before anything is timed, as in the daemon. */
        zero_real = zero_best()->fn;
        static const struct engine_ops ops = { .zero = zero_signalling };
        struct engine_config cfg = { .topo = &t, .threads_per_node = (unsigned)threads, .ops = &ops };
        r = engine_new(&cfg, &e);
        if (r < 0)
                die("engine_new", r);

        fa = make_file(argv[1], "prio-bench-populate", size, pa, sizeof(pa));
        fb = make_file(argv[1], "prio-bench-stock", b_size, pb, sizeof(pb));
        {
                /* The stock file is populated once; zero jobs need every page. */
                struct done d;
                struct job *j = submit(e, fb, b_size, JOB_POPULATE, JOB_PRIO_NORMAL, &d);

                wait_done(&d);
                expect_done(j, "populating the stock file");
                job_free(j);
        }

        double *tm = calloc(rounds * N_CONTENDERS, sizeof(*tm));
        if (!tm)
                die("calloc", ENOMEM);
        /* One untimed warm-up round, then ROUNDS rotating ones. */
        for (long long rnd = -1; rnd < (long long)rounds; rnd++)
                for (unsigned i = 0; i < N_CONTENDERS; i++) {
                        unsigned c = (unsigned)((i + (unsigned long long)(rnd + 1)) % N_CONTENDERS);
                        double s = c == ALONE         ? populate_alone(e, fa, size)
                                   : c == BESIDE_LOW  ? populate_beside(e, fa, size, fb, b_size, JOB_PRIO_LOW)
                                   : c == BESIDE_NORMAL ? populate_beside(e, fa, size, fb, b_size, JOB_PRIO_NORMAL)
                                                      : zero_alone(e, fb, b_size);

                        if (rnd >= 0)
                                tm[rnd * N_CONTENDERS + c] = s;
                }

        printf("{\"size_bytes\":%llu,\"zero_size_bytes\":%" PRIu64 ",\"threads\":%u,\"rounds\":%llu,\"zero_routine\":\"%s\""
               ",\"zero_restarts\":%u",
               size, b_size, engine_node_workers(e, 0), rounds, zero_best()->name, restarts);
        for (unsigned c = 0; c < N_CONTENDERS; c++) {
                printf(",\"%s\":[", names[c]);
                for (unsigned long long rnd = 0; rnd < rounds; rnd++)
                        printf("%s%.6f", rnd ? "," : "", tm[rnd * N_CONTENDERS + c]);
                printf("]");
        }
        printf("}\n");

        engine_free(e);
        close(fa);
        close(fb);
        unlink(pa);
        unlink(pb);
        free(tm);
        CPU_FREE(node.cpus);
        return 0;
}
