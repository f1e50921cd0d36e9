/* The engine against the real kernel, run under tests/real/guard.sh (which
 * restores nr_hugepages and provides a private hugetlbfs in
 * $HPW_TEST_HUGETLBFS).  On node 0 with 2 MiB pages:
 *
 *  - warm: a 32-page file ends DONE, verified on node 0, HugePages_Free
 *    dropped by exactly 32, the file holds 32 pages and reads as zero from a
 *    fresh mapping; warming it again (the resume path) takes no new page;
 *    unlinking gives all 32 back;
 *  - exhaustion: a file larger than the free pages is refused at submit with
 *    -ENOMEM (hugetlbfs reserves at mmap time), nothing is taken, nothing is
 *    left reserved;
 *  - cancel: a multi-chunk warm cancelled after its first chunk stops with exactly the
 *    pages of the chunks it finished in the file, and nothing changes after
 *    job_cancel returned; warming the file again (resume) completes it;
 *  - zero (recycle): every page of a warm file filled with a pattern, as a
 *    guest would; a zero job leaves every byte zero, and HugePages_Free,
 *    the file's page count and the reservations did not move (no page went
 *    back to the kernel or came from it);
 *  - a zero job on a file with a hole is refused (-ENODATA) and takes nothing;
 *  - a cancelled one-thread zero job stops at a chunk boundary: the bytes
 *    before bytes_done are zero, every byte after still holds the pattern;
 *  - tail range: a warm file grown with ftruncate and populated from the old
 *    end takes exactly the new pages; the old part keeps its content.
 *
 * Everything it creates it removes; when a failed check ends a test early,
 * the runner removes the files it left (each test runs in a process of its
 * own, check.h) and guard.sh restores the counts when the binary ends. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "meminfo.h"
#include "engine.h"
#include "plan.h"
#include "topo.h"
#include "util.h"

#define PAGE (2 * MIB)
#define NODE_HP "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/"
#define GLOBAL_HP "/sys/kernel/mm/hugepages/hugepages-2048kB/"
#define WANT_FREE 120 /* pages this test needs free on node 0 */

static char dir[4096];
static struct engine_config cfg_;
static struct engine *engine_; /* made by the fixture for every test */

static uint64_t read_u64(const char *path)
{
        FILE *f = fopen(path, "re");
        unsigned long long v = 0;

        CHECK(f);
        CHECK_INT(fscanf(f, "%llu", &v), ==, 1);
        fclose(f);
        return v;
}

static void write_u64(const char *path, uint64_t v)
{
        FILE *f = fopen(path, "we");

        CHECK(f);
        fprintf(f, "%llu\n", (unsigned long long)v);
        CHECK_INT(fclose(f), ==, 0);
}

static uint64_t node_free(void) { return read_u64(NODE_HP "free_hugepages"); }

static uint64_t resv(void) { return read_u64(GLOBAL_HP "resv_hugepages"); }

struct done {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool called;
};

static void on_done(struct job *j, void *arg)
{
        struct done *d = arg;

        pthread_mutex_lock(&d->lock);
        d->called = true;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
}

static void wait_done(struct done *d)
{
        pthread_mutex_lock(&d->lock);
        while (!d->called)
                pthread_cond_wait(&d->cond, &d->lock);
        pthread_mutex_unlock(&d->lock);
}

static int make_file(const char *name, uint64_t size, char *path, size_t path_size)
{
        int fd;

        snprintf(path, path_size, "%s/%s", dir, name);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        CHECK_INT(ftruncate(fd, (off_t)size), ==, 0);
        return fd;
}

static uint64_t file_pages(int fd)
{
        struct stat st;

        CHECK_INT(fstat(fd, &st), ==, 0);
        return (uint64_t)st.st_blocks * 512 / PAGE;
}

static int submit_spec(struct engine *e, struct job_spec spec, struct done *d, struct job **ret)
{
        spec.node = 0;
        spec.page_size = PAGE;
        spec.on_done = on_done;
        spec.arg = d;
        return engine_submit(e, &spec, ret);
}

static int submit(struct engine *e, int fd, uint64_t size, unsigned threads, struct done *d, struct job **ret)
{
        return submit_spec(e, (struct job_spec){ .fd = fd, .size_bytes = size, .threads = threads }, d, ret);
}

/* Warm a file of SIZE (created) and return its fd. */
static int warm_file(struct engine *e, const char *name, uint64_t size, char *path, size_t path_size)
{
        struct done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        struct job_status st;
        struct job *j = NULL;
        int fd = make_file(name, size, path, path_size);

        CHECK_INT(submit(e, fd, size, 0, &d, &j), ==, 0);
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        job_free(j);
        CHECK_U64(file_pages(fd), ==, size / PAGE);
        return fd;
}

/* The word at byte I of a file filled by fill(): never zero. */
static uint64_t pattern(uint64_t i) { return UINT64_C(0xa5a5a5a55a5a5a5a) ^ (i / PAGE) ^ ((i % PAGE) << 24); }

/* Write the pattern over [FROM, TO) of the file, as a guest would. */
static void fill(int fd, uint64_t from, uint64_t to)
{
        uint8_t *p = mmap(NULL, to, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

        CHECK(p != MAP_FAILED);
        for (uint64_t i = from; i < to; i += sizeof(uint64_t))
                *(uint64_t *)(void *)(p + i) = pattern(i);
        CHECK_INT(munmap(p, to), ==, 0);
}

/* J ended well: done, no error, SIZE bytes, every page verified on node 0. */
static void check_done(struct job *j, uint64_t size, struct job_status *ret)
{
        job_get_status(j, ret);
        CHECK_INT(ret->state, ==, JOB_DONE);
        CHECK_INT(ret->error, ==, 0);
        CHECK_U64(ret->bytes_done, ==, size);
        CHECK(ret->verified);
        CHECK_U64(ret->pages_off_node, ==, 0);
}

/* Close and remove a test file; node 0 then has FREE free pages. */
static void drop_file(int fd, const char *path, uint64_t free)
{
        CHECK_INT(close(fd), ==, 0);
        CHECK_INT(unlink(path), ==, 0);
        CHECK_U64(node_free(), ==, free);
}

/* Check every word of [FROM, TO): zero, or the pattern. */
static void expect(int fd, uint64_t from, uint64_t to, bool zero, const char *what)
{
        const uint8_t *p = mmap(NULL, to, PROT_READ, MAP_SHARED, fd, 0);

        CHECK(p != MAP_FAILED);
        for (uint64_t i = from; i < to; i += sizeof(uint64_t)) {
                uint64_t v = *(const uint64_t *)(const void *)(p + i), want = zero ? 0 : pattern(i);

                if (v != want)
                        CHECK_FAIL_("%s: word at byte %" PRIu64 " is %#" PRIx64 ", want %#" PRIx64, what, i, v, want);
        }
        CHECK_INT(munmap((void *)p, to), ==, 0);
}

/* Cancel J once its first chunk is in (polling every millisecond, or with
 * SPIN at every yield of the CPU, for chunks that go by fast); the job has
 * then ended, cancelled or done, and said so to D.  Its status in *ST. */
static void cancel_mid_job(struct job *j, const struct done *d, struct job_status *st, bool spin)
{
        do {
                if (spin)
                        sched_yield();
                else
                        usleep(1000);
                job_get_status(j, st);
        } while (st->state == JOB_RUNNING && st->bytes_done == 0);
        job_cancel(j);
        CHECK(d->called);
        job_get_status(j, st);
        CHECK(st->state == JOB_CANCELLED || st->state == JOB_DONE);
}

TEST(warm)
{
        struct engine *e = engine_;
        struct done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        struct done d2 = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        const uint64_t pages = 32, size = pages * PAGE;
        uint64_t free0 = node_free(), resv0 = resv();
        struct job_status st;
        struct job *j = NULL;
        char path[4200];
        uint8_t *p;
        int fd = make_file("warm", size, path, sizeof(path));

        CHECK_INT(submit(e, fd, size, 0, &d, &j), ==, 0);
        wait_done(&d);
        check_done(j, size, &st);
        job_free(j);
        CHECK_U64(free0 - node_free(), ==, pages);
        CHECK_U64(file_pages(fd), ==, pages);
        CHECK_U64(resv(), ==, resv0);
        fprintf(stderr, "warm: %" PRIu64 " MiB in %.1f ms with %u threads\n", size / MIB,
                (double)(st.finished_ns - st.started_ns) / 1e6, st.threads);

        /* A fresh mapping sees zeroed pages and takes none. */
        p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        CHECK(p != MAP_FAILED);
        for (uint64_t i = 0; i < size; i += sizeof(uint64_t))
                if (*(const uint64_t *)(p + i) != 0)
                        CHECK_FAIL_("byte range at %" PRIu64 " is not zero", i);
        CHECK_INT(munmap(p, size), ==, 0);
        CHECK_U64(free0 - node_free(), ==, pages);

        /* Warming a warm file again (resume after restart) succeeds and takes nothing. */
        CHECK_INT(submit(e, fd, size, 0, &d2, &j), ==, 0);
        wait_done(&d2);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.pages_off_node, ==, 0);
        job_free(j);
        CHECK_U64(free0 - node_free(), ==, pages);

        drop_file(fd, path, free0);
        CHECK_U64(resv(), ==, resv0);
}

TEST(exhaustion)
{
        struct engine *e = engine_;
        struct done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        uint64_t free0 = node_free(), resv0 = resv();
        const uint64_t size = (free0 + 8) * PAGE;
        struct job *j = (struct job *)0x1;
        char path[4200];
        int fd = make_file("too-big", size, path, sizeof(path));
        int r;

        /* hugetlbfs reserves the whole mapping at mmap time and refuses it
         * with ENOMEM: the job never starts and no page is touched. */
        r = submit(e, fd, size, 0, &d, &j);
        CHECK_INT(r, ==, -ENOMEM);
        CHECK(j == (struct job *)0x1);
        CHECK_STR(engine_error_slug(r), "out-of-memory");
        CHECK_U64(node_free(), ==, free0);
        CHECK_U64(resv(), ==, resv0);
        CHECK_U64(file_pages(fd), ==, 0);
        drop_file(fd, path, free0);
}

TEST(cancel)
{
        struct engine *e = engine_;
        struct done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        struct done d2 = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        const uint64_t pages = 96, size = pages * PAGE;
        uint64_t free0 = node_free(), resv0 = resv(), have;
        struct job_status st;
        struct job *j = NULL;
        struct plan p;
        char path[4200];
        int fd;

        /* The chunks engine_submit will cut this one-thread job into. */
        CHECK_INT(plan_make(size, PAGE, engine_node_workers(e, 0), 1, &p), ==, 0);
        CHECK_U64(p.n_chunks, >, 1);
        fd = make_file("cancel", size, path, sizeof(path));
        CHECK_INT(submit(e, fd, size, 1, &d, &j), ==, 0);
        /* Cancel once the first chunk is in, so the cut falls mid-job. */
        cancel_mid_job(j, &d, &st, false);
        have = file_pages(fd);
        /* Exactly the finished chunks are in the file: nobody was mid-chunk. */
        CHECK_U64(have * PAGE, ==, st.bytes_done);
        /* One worker goes in order: whole chunks, or all of it (the last
         * chunk may be short). */
        if (st.bytes_done != size)
                CHECK_U64(st.bytes_done % p.chunk_bytes, ==, 0);
        usleep(50 * 1000);
        CHECK_U64(file_pages(fd), ==, have);
        CHECK_U64(free0 - node_free(), ==, have);
        fprintf(stderr, "cancel: state %d after %" PRIu64 " of %" PRIu64 " pages\n", st.state, have, pages);
        job_free(j);

        /* Resume, as after a restart: the present pages stay, the rest come. */
        CHECK_INT(submit(e, fd, size, 0, &d2, &j), ==, 0);
        wait_done(&d2);
        check_done(j, size, &st);
        job_free(j);
        CHECK_U64(file_pages(fd), ==, pages);
        CHECK_U64(free0 - node_free(), ==, pages);
        CHECK_U64(resv(), ==, resv0);

        drop_file(fd, path, free0);
        CHECK_U64(resv(), ==, resv0);
}


/* Recycle: a guest-dirtied warm file comes back all zero, and no page moved
 * between the file and the kernel. */
TEST(zero)
{
        struct engine *e = engine_;
        struct done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        const uint64_t pages = 64, size = pages * PAGE;
        uint64_t free0 = node_free(), resv0 = resv(), mfree;
        struct job_status st;
        struct job *j = NULL;
        char path[4200];
        int fd = warm_file(e, "zero", size, path, sizeof(path));

        fill(fd, 0, size);
        expect(fd, 0, size, false, "pattern written");
        CHECK_U64(free0 - node_free(), ==, pages);
        free0 = node_free();
        mfree = meminfo_free();

        CHECK_INT(submit_spec(e, (struct job_spec){ .fd = fd, .size_bytes = size, .kind = JOB_ZERO }, &d, &j), ==, 0);
        wait_done(&d);
        check_done(j, size, &st);
        fprintf(stderr, "zero: %" PRIu64 " MiB in %.1f ms with %u threads (%s)\n", size / MIB,
                (double)(st.finished_ns - st.started_ns) / 1e6, st.threads, engine_zero_routine(e));
        job_free(j);

        CHECK_U64(node_free(), ==, free0);
        CHECK_U64(meminfo_free(), ==, mfree);
        CHECK_U64(resv(), ==, resv0);
        CHECK_U64(file_pages(fd), ==, pages);
        expect(fd, 0, size, true, "after the zero job");

        drop_file(fd, path, free0 + pages);
}

/* A hole: zeroing through it would fault in a fresh page; refused before
 * anything is mapped, and nothing changes. */
TEST(zero_hole)
{
        struct engine *e = engine_;
        struct done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        const uint64_t pages = 16, size = pages * PAGE;
        uint64_t free0 = node_free(), resv0 = resv();
        struct job *j = NULL;
        char path[4200];
        int fd = make_file("hole", size, path, sizeof(path));

        /* Populate the second half only: the first half is a hole. */
        CHECK_INT(submit_spec(e, (struct job_spec){ .fd = fd, .size_bytes = size, .offset = size / 2 }, &d, &j), ==, 0);
        wait_done(&d);
        struct job_status st;
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        job_free(j);
        CHECK_U64(file_pages(fd), ==, pages / 2);
        CHECK_U64(free0 - node_free(), ==, pages / 2);

        j = (struct job *)0x1;
        CHECK_INT(submit_spec(e, (struct job_spec){ .fd = fd, .size_bytes = size, .kind = JOB_ZERO }, &d, &j), ==,
                  -ENODATA);
        CHECK(j == (struct job *)0x1);
        /* Even a zero job of only the populated half: the rule is the whole file. */
        CHECK_INT(submit_spec(e, (struct job_spec){ .fd = fd, .size_bytes = size, .offset = size / 2, .kind = JOB_ZERO },
                              &d, &j), ==, -ENODATA);
        CHECK_U64(file_pages(fd), ==, pages / 2);
        CHECK_U64(free0 - node_free(), ==, pages / 2);
        CHECK_U64(resv(), ==, resv0);

        drop_file(fd, path, free0);
}

/* A one-thread zero job cancelled midway stops at a chunk boundary: the
 * bytes it reports done are zero, every byte after them is untouched. */
TEST(zero_cancel)
{
        struct engine *e = engine_;
        struct done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        const uint64_t pages = 96, size = pages * PAGE;
        uint64_t free0;
        struct job_status st;
        struct job *j = NULL;
        struct plan p;
        char path[4200];
        int fd = warm_file(e, "zero-cancel", size, path, sizeof(path));

        /* Low priority: the finest chunks, so the cancel falls midway. */
        CHECK_INT(plan_make_low(size, PAGE, engine_node_workers(e, 0), 1, &p), ==, 0);
        CHECK_U64(p.n_chunks, >, 4);
        fill(fd, 0, size);
        free0 = node_free();
        CHECK_INT(submit_spec(e, (struct job_spec){ .fd = fd, .size_bytes = size, .threads = 1, .kind = JOB_ZERO,
                                                    .prio = JOB_PRIO_LOW }, &d, &j), ==, 0);
        cancel_mid_job(j, &d, &st, true);
        fprintf(stderr, "zero cancel: state %d after %" PRIu64 " of %" PRIu64 " MiB (chunks of %" PRIu64 " MiB)\n",
                st.state, st.bytes_done / MIB, size / MIB, p.chunk_bytes / MIB);
        if (st.bytes_done != size)
                CHECK_U64(st.bytes_done % p.chunk_bytes, ==, 0);
        job_free(j);
        expect(fd, 0, st.bytes_done, true, "zeroed before the cancel");
        expect(fd, st.bytes_done, size, false, "left alone after the cancel");
        CHECK_U64(node_free(), ==, free0);
        CHECK_U64(file_pages(fd), ==, pages);

        CHECK_INT(close(fd), ==, 0);
        CHECK_INT(unlink(path), ==, 0);
}

/* Partial hand-out: a warm file grown with ftruncate and populated from its
 * old end takes exactly the new pages; the old part keeps what it held. */
TEST(tail)
{
        struct engine *e = engine_;
        struct done d = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false };
        const uint64_t old_pages = 16, new_pages = 24, old_size = old_pages * PAGE;
        const uint64_t size = (old_pages + new_pages) * PAGE;
        uint64_t free0, resv0 = resv();
        struct job_status st;
        struct job *j = NULL;
        char path[4200];
        int fd = warm_file(e, "tail", old_size, path, sizeof(path));

        fill(fd, 0, old_size);
        free0 = node_free();
        CHECK_INT(ftruncate(fd, (off_t)size), ==, 0);
        CHECK_INT(submit_spec(e, (struct job_spec){ .fd = fd, .size_bytes = size, .offset = old_size }, &d, &j), ==, 0);
        wait_done(&d);
        job_get_status(j, &st);
        CHECK_INT(st.state, ==, JOB_DONE);
        CHECK_U64(st.bytes_done, ==, size - old_size);
        CHECK(st.verified);
        CHECK_U64(st.pages_off_node, ==, 0);
        job_free(j);
        CHECK_U64(free0 - node_free(), ==, new_pages);
        CHECK_U64(file_pages(fd), ==, old_pages + new_pages);
        CHECK_U64(resv(), ==, resv0);
        expect(fd, 0, old_size, false, "old part after growing");
        expect(fd, old_size, size, true, "new part");

        drop_file(fd, path, free0 + old_pages);
}

/* Each test in its own process (check.h) gets its own engine: its workers
 * are threads, which a fork would not carry.  Whatever a test leaves in the
 * mount is removed after it, also when it fails. */
static void engine_up(void)
{
        real_restore_dir(dir);
        CHECK_INT(engine_new(&cfg_, &engine_), ==, 0);
        fprintf(stderr, "node 0: %u workers, pinned %d, memory bound %d\n", engine_node_workers(engine_, 0),
                engine_node_pinned(engine_, 0), engine_node_mem_bound(engine_, 0));
        CHECK(engine_node_workers(engine_, 0) >= 1);
}

static void engine_down(void)
{
        engine_free(engine_);
        engine_ = NULL;
}

int main(void)
{
        const char *mnt = getenv("HPW_TEST_HUGETLBFS");
        struct topo_node node = { .id = 0 };
        struct topo t = { .n_nodes = 1, .nodes = &node, .n_page_sizes = 1, .page_sizes = { PAGE } };
        char cpulist[4096] = "";
        uint64_t used;
        FILE *f;

        if (!mnt)
                SKIP("run me under tests/real/guard.sh");
        snprintf(dir, sizeof(dir), "%s", mnt);

        f = fopen("/sys/devices/system/node/node0/cpulist", "re");
        CHECK(f);
        if (!fgets(cpulist, sizeof(cpulist), f))
                cpulist[0] = '\0';
        fclose(f);
        cpulist[strcspn(cpulist, "\n")] = '\0';
        CHECK_INT(cpulist_parse(cpulist, &node.cpus, &node.cpus_size, &node.cpu_count), ==, 0);
        node.cpulist = cpulist;

        /* Pages in use stay; make WANT_FREE free ones on top (guard.sh restores). */
        used = read_u64(NODE_HP "nr_hugepages") - node_free();
        write_u64(NODE_HP "nr_hugepages", used + WANT_FREE);
        if (node_free() < WANT_FREE)
                SKIP("could not get enough free 2 MiB pages on node 0");

        cfg_ = (struct engine_config){ .topo = &t };
        test_set_fixture(engine_up, engine_down);
        int r = test_run_all();

        CPU_FREE(node.cpus);
        return r;
}
