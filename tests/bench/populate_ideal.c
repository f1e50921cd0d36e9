/* populate_ideal [--spawn] FILE SIZE_BYTES THREADS: the "ideal" baseline of
 * the warm benchmark.  It does the least that prefaulting a hugetlbfs file
 * can do: map it MAP_SHARED, cut it into THREADS equal page-aligned ranges
 * and let each thread populate its range with one MADV_POPULATE_WRITE.  No
 * NUMA binding, no chunking, no progress: whatever hpwarmd adds on top of
 * this is its overhead.  The clock covers mmap to munmap, as hpwarmd's warm
 * does.
 *
 * By default the threads are created and parked on a barrier BEFORE the
 * clock starts, and released together once the file is mapped; a second
 * barrier tells the main thread they are all done (they exit after the
 * clock stops).  That is the strongest known form: creating a thread maps
 * its stack, which takes the mmap lock as a writer, so threads created while
 * others populate (which hold it as readers) convoy behind them -- what
 * cloud-hypervisor's prefault change measured, and why hpwarmd creates its
 * workers at start.  --spawn is the older, weaker form kept for comparison:
 * threads created inside the clock, one after the other, each starting to
 * populate at once.
 *
 * Prints one line of JSON.  It creates FILE (and sizes it) if needed, and
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

struct range {
        uint8_t *addr;
        size_t len;
        int err;
        pthread_t thread;
};

/* Parked mode: every worker and the main thread meet at `start` once the
 * ranges are set, and at `done` when all are populated. */
static pthread_barrier_t start, done;

static void populate_range(struct range *r)
{
        /* EINTR leaves the pages done so far in place: retrying is cheap. */
        while (r->len && madvise(r->addr, r->len, MADV_POPULATE_WRITE) < 0) {
                if (errno != EINTR) {
                        r->err = errno;
                        break;
                }
        }
}

static void *populate(void *arg)
{
        populate_range(arg);
        return NULL;
}

static void *parked(void *arg)
{
        pthread_barrier_wait(&start);
        populate_range(arg);
        pthread_barrier_wait(&done);
        return NULL;
}

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, int err)
{
        printf("{\"error\":\"%s: %s\"}\n", what, strerror(err));
        return 1;
}

int main(int argc, char **argv)
{
        unsigned long long size, threads;
        struct range *ranges;
        struct statfs sfs;
        struct stat st;
        uint64_t page, pages;
        double t0, t1;
        uint8_t *map;
        char *end;
        int fd, err = 0;
        bool spawn = false;

        if (argc == 5 && strcmp(argv[1], "--spawn") == 0) {
                spawn = true;
                argv++;
                argc--;
        }
        if (argc != 4) {
                fprintf(stderr, "usage: %s [--spawn] FILE SIZE_BYTES THREADS\n", argv[0]);
                return 2;
        }
        errno = 0;
        size = strtoull(argv[2], &end, 10);
        if (errno || *end || size == 0 || size > SIZE_MAX)
                return fail("bad SIZE_BYTES", EINVAL);
        threads = strtoull(argv[3], &end, 10);
        if (errno || *end || threads == 0 || threads > 4096)
                return fail("bad THREADS", EINVAL);

        fd = open(argv[1], O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
                return fail("open", errno);
        /* hugetlbfs reports its page size as the block size. */
        if (fstatfs(fd, &sfs) < 0 || fstat(fd, &st) < 0)
                return fail("stat", errno);
        page = (uint64_t)sfs.f_bsize;
        if (page == 0 || size % page)
                return fail("SIZE_BYTES is not a multiple of the page size", EINVAL);
        if ((unsigned long long)st.st_size < size && ftruncate(fd, (off_t)size) < 0)
                return fail("ftruncate", errno);

        pages = size / page;
        if (threads > pages)
                threads = pages;
        ranges = calloc(threads, sizeof(*ranges));
        if (!ranges)
                return fail("calloc", ENOMEM);

        if (!spawn) {
                pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
                pthread_barrier_init(&done, NULL, (unsigned)threads + 1);
                for (unsigned long long i = 0; i < threads; i++)
                        if ((err = pthread_create(&ranges[i].thread, NULL, parked, &ranges[i])))
                                return fail("pthread_create", err);
        }

        t0 = now_s();
        map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return fail("mmap", errno);
        for (unsigned long long i = 0, first = 0; i < threads; i++) {
                /* Equal shares of whole pages; the first ones take the remainder. */
                uint64_t n = pages / threads + (i < pages % threads);

                ranges[i].addr = map + first * page;
                ranges[i].len = n * page;
                first += n;
                if (spawn && (err = pthread_create(&ranges[i].thread, NULL, populate, &ranges[i])))
                        return fail("pthread_create", err);
        }
        if (!spawn) {
                /* The barrier publishes the ranges to the workers. */
                pthread_barrier_wait(&start);
                pthread_barrier_wait(&done);
        } else
                for (unsigned long long i = 0; i < threads; i++)
                        pthread_join(ranges[i].thread, NULL);
        munmap(map, size);
        t1 = now_s();
        for (unsigned long long i = 0; i < threads; i++) {
                if (!spawn)
                        pthread_join(ranges[i].thread, NULL);
                if (ranges[i].err && !err)
                        err = ranges[i].err;
        }
        close(fd);
        if (err)
                return fail("madvise(MADV_POPULATE_WRITE)", err);

        printf("{\"size_bytes\":%llu,\"page_size_bytes\":%" PRIu64
               ",\"threads\":%llu,\"mode\":\"%s\",\"elapsed_seconds\":%.6f,\"gib_per_second\":%.3f}\n",
               size, page, threads, spawn ? "spawn" : "parked", t1 - t0, (double)size / (1 << 30) / (t1 - t0));
        free(ranges);
        return 0;
}
