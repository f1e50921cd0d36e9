/* recycle_bench FILE SIZE_BYTES THREADS ROUNDS [ROUTINE...]: the recycle
 * benchmark of the stock of warm files.  How fast can a populated hugetlbfs file that a
 * guest has dirtied be made all-zero again?
 *
 *   r1  in place, in userspace: map the file MAP_SHARED, each thread
 *       MADV_POPULATE_WRITE on its share (only maps the present pages, as
 *       hpwarmd's zero job does) then zeroes it with ROUTINE (zero.c:
 *       streaming stores, or memset for contrast); no page leaves the file;
 *   r2  the kernel path: ftruncate to 0 (the pages go back to the free
 *       pool), ftruncate back to SIZE_BYTES, map, each thread
 *       MADV_POPULATE_WRITE on its share (the kernel takes pages again and
 *       clears each with its clear_page).
 *
 * Same file, same THREADS threads, created and parked on a barrier before
 * any clock starts (no thread creation inside a timing, see populate_ideal);
 * each timing covers mmap to munmap (plus the two ftruncates for r2).
 * Before every timed run the file is dirtied with a pattern (untimed) and
 * after it every 4 KiB of it is checked for zero (sampled, untimed); r1 must
 * leave HugePages_Free exactly as it was.  ROUNDS rounds run the contenders
 * in an order that rotates each round, after one untimed warm-up round.
 * ROUTINE defaults to the best one zero.c picks here, plus memset;
 * "nopop:ROUTINE" zeroes without the MADV_POPULATE_WRITE first (the stores
 * then take the page faults), to see what the engine's populate-first costs.
 *
 * Prints one line of JSON with every round's seconds.  It creates FILE and
 * never unlinks it: the bench script decides. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "zero.h"

#include "bench_args.h"

#define MAX_ROUTINES 8
#define DIRT 0x5a

enum op { OP_POPULATE, OP_ZERO, OP_ZERO_NOPOP, OP_DIRTY, OP_EXIT };

/* A contender of r1: a routine, with or without populate first. */
struct contender {
        const struct zero_routine *r;
        bool nopop;
        char label[40];
};

struct worker {
        pthread_t thread;
        uint8_t *addr;
        size_t len;
        int err;
};

/* Set by the main thread before `start`, read by the workers after it. */
static struct {
        enum op op;
        const struct zero_routine *routine;
        pthread_barrier_t start, done;
        struct worker *w;
        unsigned n;
} g;

static int populate(uint8_t *addr, size_t len)
{
        while (len && madvise(addr, len, MADV_POPULATE_WRITE) < 0)
                if (errno != EINTR)
                        return errno;
        return 0;
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;

        for (;;) {
                pthread_barrier_wait(&g.start);
                if (g.op == OP_EXIT)
                        return NULL;
                switch (g.op) {
                case OP_POPULATE:
                        w->err = populate(w->addr, w->len);
                        break;
                case OP_ZERO:
                        w->err = populate(w->addr, w->len);
                        if (!w->err)
                                g.routine->fn(w->addr, w->len);
                        break;
                case OP_ZERO_NOPOP:
                        g.routine->fn(w->addr, w->len);
                        break;
                case OP_DIRTY:
                        memset(w->addr, DIRT, w->len);
                        break;
                case OP_EXIT:
                        break;
                }
                pthread_barrier_wait(&g.done);
        }
}

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
        printf("{\"error\":\"%s: %s\"}\n", what, strerror(err));
        exit(1);
}

static uint64_t hugepages_free(void)
{
        FILE *f = fopen("/proc/meminfo", "re");
        char line[256];
        unsigned long long v = 0;

        if (!f)
                die("/proc/meminfo", errno);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "HugePages_Free: %llu", &v) == 1)
                        break;
        fclose(f);
        return v;
}

/* Give every worker its share of MAP (whole pages) and run OP on all. */
static void run(enum op op, uint8_t *map, uint64_t pages, uint64_t page)
{
        for (unsigned i = 0, first = 0; i < g.n; i++) {
                uint64_t k = pages / g.n + (i < pages % g.n);

                g.w[i].addr = map + first * page;
                g.w[i].len = k * page;
                g.w[i].err = 0;
                first += (unsigned)k;
        }
        g.op = op;
        pthread_barrier_wait(&g.start);
        pthread_barrier_wait(&g.done);
        for (unsigned i = 0; i < g.n; i++)
                if (g.w[i].err)
                        die(op == OP_ZERO ? "zero: madvise(MADV_POPULATE_WRITE)" : "madvise(MADV_POPULATE_WRITE)",
                            g.w[i].err);
}

static uint8_t *map_file(int fd, uint64_t size)
{
        uint8_t *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

        if (m == MAP_FAILED)
                die("mmap", errno);
        return m;
}

/* Untimed: the file is fully populated and holds the pattern everywhere. */
static void dirty(int fd, uint64_t size, uint64_t page)
{
        uint8_t *m = map_file(fd, size);
        struct stat st;

        run(OP_DIRTY, m, size / page, page);
        munmap(m, size);
        if (fstat(fd, &st) < 0)
                die("fstat", errno);
        if ((uint64_t)st.st_blocks * 512 != size)
                die("the file is not fully populated before a round", EIO);
}

/* Untimed: one word in every 4 KiB (at a varying place) is zero. */
static void check_zero(int fd, uint64_t size, const char *who)
{
        const uint8_t *m = map_file(fd, size);

        for (uint64_t i = 0; i < size; i += 4096) {
                uint64_t at = i + ((i / 4096) * 8 % 4096);

                if (*(const uint64_t *)(const void *)(m + at) != 0) {
                        printf("{\"error\":\"%s left a non-zero word at byte %" PRIu64 "\"}\n", who, at);
                        exit(1);
                }
        }
        munmap((void *)m, size);
}

static double r1(int fd, uint64_t size, uint64_t page, const struct contender *c)
{
        uint64_t free0 = hugepages_free();
        double t0, t1;
        uint8_t *m;

        dirty(fd, size, page);
        t0 = now_s();
        m = map_file(fd, size);
        g.routine = c->r;
        run(c->nopop ? OP_ZERO_NOPOP : OP_ZERO, m, size / page, page);
        munmap(m, size);
        t1 = now_s();
        check_zero(fd, size, c->label);
        if (hugepages_free() != free0)
                die("zeroing in place moved pages between the file and the kernel", EIO);
        return t1 - t0;
}

static double r2(int fd, uint64_t size, uint64_t page)
{
        double t0, t1;
        uint8_t *m;

        dirty(fd, size, page);
        t0 = now_s();
        if (ftruncate(fd, 0) < 0 || ftruncate(fd, (off_t)size) < 0)
                die("ftruncate", errno);
        m = map_file(fd, size);
        run(OP_POPULATE, m, size / page, page);
        munmap(m, size);
        t1 = now_s();
        check_zero(fd, size, "truncate+populate");
        return t1 - t0;
}

int main(int argc, char **argv)
{
        struct contender routines[MAX_ROUTINES];
        unsigned long long size, threads, rounds;
        unsigned n_routines = 0;
        struct statfs sfs;
        uint64_t page;
        const char *bad;
        char *end;
        int fd;

        if (argc < 5) {
                fprintf(stderr, "usage: %s FILE SIZE_BYTES THREADS ROUNDS [ROUTINE...]\n", argv[0]);
                return 2;
        }
        errno = 0;
        size = strtoull(argv[2], &end, 10);
        if (errno || *end || size == 0 || size > SIZE_MAX)
                die("bad SIZE_BYTES", EINVAL);
        if (!bench_threads_rounds(argv, &threads, &rounds, &bad))
                die(bad, EINVAL);
        for (int i = 5; i < argc; i++) {
                bool nopop = strncmp(argv[i], "nopop:", 6) == 0;
                const struct zero_routine *r = zero_find(argv[i] + (nopop ? 6 : 0));

                if (!r) {
                        printf("{\"error\":\"routine %s is unknown or not supported here\"}\n", argv[i]);
                        return 1;
                }
                if (n_routines == MAX_ROUTINES)
                        die("too many routines", EINVAL);
                routines[n_routines].r = r;
                routines[n_routines].nopop = nopop;
                snprintf(routines[n_routines].label, sizeof(routines[n_routines].label), "%s%s",
                         nopop ? "nopop:" : "", r->name);
                n_routines++;
        }
        if (n_routines == 0) {
                routines[n_routines++] = (struct contender){ .r = zero_best() };
                if (zero_best() != zero_find("memset"))
                        routines[n_routines++] = (struct contender){ .r = zero_find("memset") };
                for (unsigned k = 0; k < n_routines; k++)
                        snprintf(routines[k].label, sizeof(routines[k].label), "%s", routines[k].r->name);
        }

        fd = open(argv[1], O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                die("open", errno);
        if (fstatfs(fd, &sfs) < 0)
                die("fstatfs", errno);
        page = (uint64_t)sfs.f_bsize;
        if (page == 0 || size % page)
                die("SIZE_BYTES is not a multiple of the page size", EINVAL);
        if (threads > size / page)
                threads = size / page;
        if (ftruncate(fd, (off_t)size) < 0)
                die("ftruncate", errno);

        /* The threads exist before anything is timed. */
        g.n = (unsigned)threads;
        g.w = calloc(g.n, sizeof(*g.w));
        if (!g.w)
                die("calloc", ENOMEM);
        pthread_barrier_init(&g.start, NULL, g.n + 1);
        pthread_barrier_init(&g.done, NULL, g.n + 1);
        for (unsigned i = 0; i < g.n; i++) {
                int err = pthread_create(&g.w[i].thread, NULL, worker_main, &g.w[i]);

                if (err)
                        die("pthread_create", err);
        }

        /* Populate once, then one untimed round of everything. */
        uint8_t *m = map_file(fd, size);
        run(OP_POPULATE, m, size / page, page);
        munmap(m, size);
        for (unsigned k = 0; k < n_routines; k++)
                r1(fd, size, page, &routines[k]);
        r2(fd, size, page);

        unsigned n_c = n_routines + 1;
        double *t = calloc(rounds * n_c, sizeof(*t));
        if (!t)
                die("calloc", ENOMEM);
        for (unsigned long long rnd = 0; rnd < rounds; rnd++)
                for (unsigned i = 0; i < n_c; i++) {
                        unsigned c = (unsigned)((i + rnd) % n_c);

                        t[rnd * n_c + c] = c < n_routines ? r1(fd, size, page, &routines[c]) : r2(fd, size, page);
                }

        g.op = OP_EXIT;
        pthread_barrier_wait(&g.start);
        for (unsigned i = 0; i < g.n; i++)
                pthread_join(g.w[i].thread, NULL);
        close(fd);

        printf("{\"size_bytes\":%llu,\"page_size_bytes\":%" PRIu64 ",\"threads\":%u,\"rounds\":%llu,\"best\":\"%s\",\"r1\":{",
               size, page, g.n, rounds, zero_best()->name);
        for (unsigned c = 0; c <= n_routines; c++) {
                if (c == n_routines)
                        printf("},\"r2\":[");
                else
                        printf("%s\"%s\":[", c ? "," : "", routines[c].label);
                for (unsigned long long rnd = 0; rnd < rounds; rnd++)
                        printf("%s%.6f", rnd ? "," : "", t[rnd * n_c + c]);
                printf("]");
        }
        printf("}\n");
        free(t);
        free(g.w);
        return 0;
}
