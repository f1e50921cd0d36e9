/* The pool core against the real kernel, run under tests/real/guard.sh (host-wide
 * lock, nr_hugepages restored, private 2 MiB hugetlbfs in $HPW_TEST_HUGETLBFS).
 * On node 0:
 *
 *  - reserve through pools_reserve (sysfs root /sys) until exactly 32 pages
 *    are free;
 *  - warm a 16-page pool: ready, verified on node 0, node free pages and
 *    HugePages_Free drop by exactly 16, the file reads as zero; DELETE gives
 *    the 16 back; an identical PUT answers 200;
 *  - exhaustion: more than is free -> 409 insufficient-hugepages, no file,
 *    no page taken;
 *  - cancel mid-warm: DELETE of a pool whose worker is inside its chunk
 *    (a slowed madvise) leaves no file and gives every page back;
 *  - two pools warming at the same time (the second created while the
 *    first's worker is held inside its populate), both ready;
 *  - TTL 1 s: released on its own, pages back;
 *  - restart with a ready pool: still ready, no page moved;
 *  - restart with a pool cut off half way (the worker stops after half its
 *    chunk, as a crash would leave it): resumes to ready, exactly 16 taken;
 *  - an orphan file in our directory: removed at start, counted, pages back;
 *  - the pool directory is ours (marker); the mount's root is refused.
 *
 * Only madvise is wrapped (to slow or cut a chunk on request); every other
 * kernel call is real.  Each test runs in a process of its own with its own
 * engine and registry (check.h's fixture); after a test, however it ended,
 * the runner removes the pool files and the journal it left, and guard.sh
 * restores the counts when the binary ends. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "meminfo.h"
#include "engine.h"
#include "journal.h"
#include "plan.h"
#include "pools.h"
#include "pools_testing.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

#define PAGE (2 * MIB)
#define RESERVE 32  /* node 0's free pages while the tests run */

/* ---- madvise wrapper ---- */

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool slow;         /* populate page by page, a few ms each */
        bool hold_half;    /* after half the range, wait at the gate */
        bool at_gate;
        bool release;      /* let the held worker go */
        bool cut;          /* when released: return without the second half */
        bool hold_start;   /* every populate waits at the gate before its first page */
        int waiting;       /* populates waiting there */
} mw = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static int populate(char *a, size_t len, bool slow)
{
        if (!slow)
                return madvise(a, len, MADV_POPULATE_WRITE);
        for (size_t off = 0; off < len; off += PAGE) {
                if (madvise(a + off, PAGE, MADV_POPULATE_WRITE) < 0)
                        return -1;
                usleep(5 * 1000);
        }
        return 0;
}

static int wrap_madvise(void *addr, size_t len, int advice)
{
        char *a = addr;
        bool slow, hold, cut;
        size_t half = len / 2 / PAGE * PAGE;

        pthread_mutex_lock(&mw.lock);
        if (advice == MADV_POPULATE_WRITE && mw.hold_start) {
                mw.waiting++;
                pthread_cond_broadcast(&mw.cond);
                while (mw.hold_start)
                        pthread_cond_wait(&mw.cond, &mw.lock);
                mw.waiting--;
        }
        slow = mw.slow;
        hold = mw.hold_half;
        pthread_mutex_unlock(&mw.lock);
        if (advice != MADV_POPULATE_WRITE || !hold)
                return populate(a, len, slow && advice == MADV_POPULATE_WRITE);

        if (populate(a, half, slow) < 0)
                return -1;
        pthread_mutex_lock(&mw.lock);
        mw.at_gate = true;
        pthread_cond_broadcast(&mw.cond);
        while (!mw.release)
                pthread_cond_wait(&mw.cond, &mw.lock);
        mw.at_gate = false;
        cut = mw.cut;
        pthread_mutex_unlock(&mw.lock);
        if (cut)
                return 0;
        return populate(a + half, len - half, slow);
}

static const struct engine_ops ops = { .madvise = wrap_madvise };

static void set_mode(bool slow, bool hold, bool cut)
{
        pthread_mutex_lock(&mw.lock);
        mw.slow = slow;
        mw.hold_half = hold;
        mw.cut = cut;
        mw.release = false;
        pthread_cond_broadcast(&mw.cond);
        pthread_mutex_unlock(&mw.lock);
}

static void wait_gate(void)
{
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 20;
        pthread_mutex_lock(&mw.lock);
        while (!mw.at_gate)
                CHECK_INT(pthread_cond_timedwait(&mw.cond, &mw.lock, &until), ==, 0);
        pthread_mutex_unlock(&mw.lock);
}

/* Hold every populate before its first page (true), or let them go. */
static void hold_start(bool on)
{
        pthread_mutex_lock(&mw.lock);
        mw.hold_start = on;
        pthread_cond_broadcast(&mw.cond);
        pthread_mutex_unlock(&mw.lock);
}

/* Whether a populate waits at the start gate within 20 s.  No check here:
 * the caller opens the gate before it checks, so a failure leaves no worker
 * held. */
static bool wait_held(void)
{
        struct timespec until;
        int r = 0;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 20;
        pthread_mutex_lock(&mw.lock);
        while (mw.waiting < 1 && r == 0)
                r = pthread_cond_timedwait(&mw.cond, &mw.lock, &until);
        bool held = mw.waiting >= 1;
        pthread_mutex_unlock(&mw.lock);
        return held;
}

static void *release_thread(void *arg)
{
        usleep(100 * 1000);
        pthread_mutex_lock(&mw.lock);
        mw.release = true;
        pthread_cond_broadcast(&mw.cond);
        pthread_mutex_unlock(&mw.lock);
        return NULL;
}

/* The cancel waits for the held worker: release it shortly, from elsewhere. */
static pthread_t release_soon(void)
{
        pthread_t t;

        CHECK_INT(pthread_create(&t, NULL, release_thread, NULL), ==, 0);
        return t;
}

/* ---- helpers ---- */

static struct sysfs *fs;
static struct topo *topo;
static struct engine *engine;
static struct pools_config cfg;
static char pooldir[POOL_DIR_MAX + 1], statedir[64];

static uint64_t node_free(void)
{
        struct hp_counts hp;

        CHECK_INT(topo_read_hugepages(fs, 0, PAGE, &hp), ==, 0);
        return hp.free;
}

static struct pools *start(void)
{
        struct pools *p = NULL;

        CHECK_INT(pools_new(&cfg, &p), ==, 0);
        return p;
}

static struct pool_req req(const char *name, uint64_t pages)
{
        struct pool_req r = { .node = 0, .size_bytes = pages * PAGE, .page_size = PAGE };

        snprintf(r.name, sizeof(r.name), "%s", name);
        return r;
}

/* What create() returns on success: whether pools_create made the pool. */
enum { EXISTED = 0, CREATED = 1 };

static int create(struct pools *p, const struct pool_req *r, struct pool_view *v)
{
        struct problem err = {0};
        bool created = false;
        int rc = pools_create(p, r, v, &created, &err);

        if (rc < 0)
                fprintf(stderr, "create %s: %d %s: %s\n", r->name, err.status, err.slug, err.detail);
        return rc < 0 ? rc : created ? CREATED : EXISTED;
}

static void wait_ready(struct pools *p, const char *name, struct pool_view *v)
{
        CHECK_INT(pools_wait(p, name, now_mono_ns() + 60 * UINT64_C(1000000000), v), ==, 0);
        CHECK_STR(pool_state_name(v->state), "ready");
}

/* Create NAME of PAGES pages, a new pool, and wait for it to turn ready. */
static void create_ready(struct pools *p, const char *name, uint64_t pages, struct pool_view *v)
{
        struct pool_req r = req(name, pages);

        CHECK_INT(create(p, &r, v), ==, CREATED);
        wait_ready(p, name, v);
}

static bool exists(const char *name)
{
        char path[4400];

        snprintf(path, sizeof(path), "%s/%s", pooldir, name);
        return access(path, F_OK) == 0;
}

static void check_zero(const char *path, uint64_t size)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        const uint64_t *w;

        CHECK(fd >= 0);
        w = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        CHECK(w != MAP_FAILED);
        for (uint64_t i = 0; i < size / sizeof(*w); i++)
                if (w[i] != 0)
                        CHECK_U64(w[i], ==, 0);
        munmap((void *)w, size);
        close(fd);
}

/* ---- the scenarios ---- */

static uint64_t mbase; /* HugePages_Free (all nodes) at the start */
/* Made by the fixture for each test: the registry it uses (a restart
 * replaces it); made by main: node 0's free pages after the reservation,
 * which each test restores. */
static struct pools *pools_;
static uint64_t base_;

static void remove_journal(const void *data, size_t len)
{
        char path[128];

        snprintf(path, sizeof(path), "%.*s/state.json", (int)len, (const char *)data);
        unlink(path);
}

/* Engine workers and the registry's threads are made in the test's process
 * (a fork would not carry them). */
static void pools_up(void)
{
        real_restore_dir(pooldir);
        test_defer(remove_journal, statedir, strlen(statedir));
        CHECK_INT(engine_new(&(struct engine_config){ .topo = topo, .ops = &ops }, &engine), ==, 0);
        cfg.engine = engine;
        pools_ = start();
}

static void pools_down(void)
{
        pools_free(pools_);
        pools_ = NULL;
        engine_free(engine);
        engine = NULL;
}

TEST(warm_delete_idempotent)
{
        struct pools *p = pools_;
        uint64_t base = base_;

        struct pool_view v;

        struct pool_req r = req("p16", 16);
        CHECK_INT(create(p, &r, &v), ==, CREATED);
        wait_ready(p, "p16", &v);
        CHECK(v.placement_verified);
        CHECK_U64(v.pages_off_node, ==, 0);
        CHECK_U64(v.bytes_done, ==, 16 * PAGE);
        CHECK_U64(node_free(), ==, base - 16);
        CHECK_U64(meminfo_free(), ==, mbase - 16);
        struct stat st;
        CHECK_INT(stat(v.path, &st), ==, 0);
        CHECK_U64((uint64_t)st.st_blocks * 512, ==, 16 * PAGE);
        CHECK_INT(st.st_mode & 0777, ==, 0660);
        check_zero(v.path, 16 * PAGE);
        CHECK_U64(node_free(), ==, base - 16); /* mapping it took nothing new */

        uint64_t warm, warming;
        pools_node_usage(p, 0, PAGE, &warm, &warming);
        CHECK_U64(warm, ==, 16);

        CHECK_INT(create(p, &r, &v), ==, EXISTED);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK_U64(node_free(), ==, base - 16);

        CHECK_INT(pools_delete(p, "p16", NULL), ==, 0);
        CHECK(!exists("p16"));
        CHECK_U64(node_free(), ==, base);
        CHECK_U64(meminfo_free(), ==, mbase);
}

TEST(exhaustion)
{
        struct pools *p = pools_;
        uint64_t base = base_;

        struct pool_view v;
        struct problem err = {0};
        struct pool_req r = req("huge", base + 1);

        CHECK_INT(pools_create(p, &r, &v, &(bool){false}, &err), ==, -ENOMEM);
        CHECK_INT(err.status, ==, 409);
        CHECK_STR(err.slug, "insufficient-hugepages");
        CHECK(!exists("huge"));
        CHECK_INT(pools_get(p, "huge", &v, NULL), ==, -ENOENT);
        CHECK_U64(node_free(), ==, base);
}

TEST(cancel_mid_warm)
{
        struct pools *p = pools_;
        uint64_t base = base_;

        struct pool_view v;
        struct pools_stats before, after;

        pools_get_stats(p, &before);
        set_mode(true, true, false);
        struct pool_req r = req("mid", RESERVE);
        CHECK_INT(create(p, &r, &v), ==, CREATED);
        wait_gate();
        CHECK_INT(pools_get(p, "mid", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "warming");
        CHECK_U64(node_free(), <, base);
        pthread_t t = release_soon();
        CHECK_INT(pools_delete(p, "mid", NULL), ==, 0);
        pthread_join(t, NULL);
        set_mode(false, false, false);
        CHECK(!exists("mid"));
        CHECK_INT(pools_get(p, "mid", &v, NULL), ==, -ENOENT);
        CHECK_U64(node_free(), ==, base);
        pools_get_stats(p, &after);
        CHECK_U64(after.jobs_cancelled, ==, before.jobs_cancelled + 1);
}

TEST(two_at_once)
{
        struct pools *p = pools_;
        uint64_t base = base_;

        struct pool_view a, b;

        /* Populates wait at the start gate until both pools exist: the
         * second is created while the first is mid-warm (a worker holds its
         * chunk), however slowly this machine runs. */
        hold_start(true);
        struct pool_req ra = req("two-a", 8), rb = req("two-b", 8);
        int rca = create(p, &ra, &a);
        bool held = rca == CREATED && wait_held();
        int rcb = create(p, &rb, &b);
        int ga = pools_get(p, "two-a", &a, NULL), gb = pools_get(p, "two-b", &b, NULL);
        hold_start(false);
        CHECK_INT(rca, ==, CREATED);
        CHECK(held); /* two-a's worker reached its populate */
        CHECK_INT(rcb, ==, CREATED);
        CHECK_INT(ga, ==, 0);
        CHECK_INT(gb, ==, 0);
        CHECK_STR(pool_state_name(a.state), "warming");
        CHECK_STR(pool_state_name(b.state), "warming");
        wait_ready(p, "two-a", &a);
        wait_ready(p, "two-b", &b);
        set_mode(false, false, false);
        CHECK_U64(node_free(), ==, base - 16);
        CHECK_INT(pools_delete(p, "two-a", NULL), ==, 0);
        CHECK_INT(pools_delete(p, "two-b", NULL), ==, 0);
        CHECK_U64(node_free(), ==, base);
}

TEST(ttl)
{
        struct pools *p = pools_;
        uint64_t base = base_;

        struct pool_view v;
        struct pools_stats s;

        struct pool_req r = req("ttl", 4);
        r.ttl_seconds = 1;
        CHECK_INT(create(p, &r, &v), ==, CREATED);
        wait_ready(p, "ttl", &v);
        CHECK(v.expires_at > 0);
        CHECK_U64(node_free(), ==, base - 4);
        for (int i = 0; i < 60 && pools_get(p, "ttl", &v, NULL) == 0; i++)
                usleep(50 * 1000);
        CHECK_INT(pools_get(p, "ttl", &v, NULL), ==, -ENOENT);
        CHECK(!exists("ttl"));
        CHECK_U64(node_free(), ==, base);
        pools_get_stats(p, &s);
        CHECK_U64(s.pools_expired, ==, 1);
}

TEST(restart)
{
        struct pools *p = pools_;
        uint64_t base = base_;

        struct pool_view v;

        /* A ready pool survives. */
        create_ready(p, "keep", 4, &v);
        pools_free(p);
        pools_ = NULL;
        CHECK_U64(node_free(), ==, base - 4);
        p = pools_ = start();
        CHECK_INT(pools_get(p, "keep", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK_U64(node_free(), ==, base - 4);

        /* A pool cut off half way resumes.  One worker, so exactly one
         * chunk is in flight when the cancel comes: the file then holds half
         * of the planner's first chunk. */
        struct plan pl;
        CHECK_INT(plan_make(16 * PAGE, PAGE, 1, 1, &pl), ==, 0);
        uint64_t half = pl.chunk_bytes / 2 / PAGE * PAGE;
        CHECK(half > 0 && half < 16 * PAGE);
        set_mode(false, true, true);
        struct pool_req r = req("resume", 16);
        r.threads = 1;
        CHECK_INT(create(p, &r, &v), ==, CREATED);
        wait_gate();
        pthread_t t = release_soon();
        pools_free(p); /* cancels; the worker returns with half the chunk done */
        pools_ = NULL;
        pthread_join(t, NULL);
        set_mode(false, false, false);
        snprintf(v.path, sizeof(v.path), "%s/resume", pooldir);
        struct stat st;
        CHECK_INT(stat(v.path, &st), ==, 0);
        CHECK_U64((uint64_t)st.st_blocks * 512, ==, half);
        CHECK_U64(node_free(), ==, base - 4 - half / PAGE);
        struct journal *j = NULL;
        CHECK_INT(journal_load(statedir, &j), ==, 0);
        bool found = false;
        for (size_t i = 0; i < j->n_pools; i++)
                if (strcmp(j->pools[i].name, "resume") == 0) {
                        CHECK_STR(pool_state_name(j->pools[i].state), "warming");
                        found = true;
                }
        CHECK(found);
        journal_free(j);

        p = pools_ = start();
        wait_ready(p, "resume", &v);
        CHECK_INT(stat(v.path, &st), ==, 0);
        CHECK_U64((uint64_t)st.st_blocks * 512, ==, 16 * PAGE);
        CHECK_U64(node_free(), ==, base - 4 - 16);
        check_zero(v.path, 16 * PAGE);
        CHECK_INT(pools_delete(p, "resume", NULL), ==, 0);
        CHECK_INT(pools_delete(p, "keep", NULL), ==, 0);
        CHECK_U64(node_free(), ==, base);
}

TEST(orphan)
{
        struct pools *p = pools_;
        uint64_t base = base_;

        char path[4400];
        struct pools_stats s;
        int fd;
        void *m;

        pools_free(p);
        pools_ = NULL;
        snprintf(path, sizeof(path), "%s/stray", pooldir);
        fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        CHECK_INT(ftruncate(fd, 2 * PAGE), ==, 0);
        m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        CHECK_INT(madvise(m, 2 * PAGE, MADV_POPULATE_WRITE), ==, 0);
        munmap(m, 2 * PAGE);
        close(fd);
        CHECK_U64(node_free(), ==, base - 2);

        p = pools_ = start();
        CHECK(!exists("stray"));
        pools_get_stats(p, &s);
        CHECK_U64(s.orphan_files_removed, ==, 1);
        CHECK_U64(node_free(), ==, base);
}

/* Stock on real hugetlbfs: refills take exactly their pages, a hand-out is
 * the stock file renamed (same inode, no page taken, reads as zero), the
 * refill follows, a pool that needs the stock's pages gets them, and
 * removing the targets gives every page back. */
static unsigned stock_ready(struct pools *p)
{
        struct stock_view *v = NULL;
        size_t n = 0;
        unsigned ready;

        CHECK_INT(pools_get_stock(p, &v, &n), ==, 0);
        ready = n ? v[0].ready : 0;
        free(v);
        return ready;
}

static void wait_stock(struct pools *p, unsigned want)
{
        for (int tries = 0; stock_ready(p) != want; tries++) {
                CHECK(tries < 60000);
                usleep(1000);
        }
}

TEST(stock)
{
        struct pools *p = pools_;
        uint64_t base = base_;

        struct stock_target_record t = { .node = 0, .page_size = PAGE, .size_bytes = 8 * PAGE, .count = 2 };
        struct problem err = {0};
        struct pool_view v;
        struct stat st;
        ino_t inos[2];
        int n_ino = 0;

        CHECK_INT(pools_set_stock(p, &t, 1, &err), ==, 0);
        wait_stock(p, 2);
        CHECK_U64(node_free(), ==, base - 16);
        CHECK_U64(meminfo_free(), ==, mbase - 16);
        char stockdir[sizeof(pooldir) + sizeof(POOLS_STOCK_DIR) + 1];
        snprintf(stockdir, sizeof(stockdir), "%s/%s", pooldir, POOLS_STOCK_DIR);
        DIR *d = opendir(stockdir);
        CHECK(d);
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] == POOL_STOCK_PREFIX && n_ino < 2) {
                        CHECK_INT(fstatat(dirfd(d), de->d_name, &st, 0), ==, 0);
                        CHECK_U64((uint64_t)st.st_blocks * 512, ==, 8 * PAGE);
                        inos[n_ino++] = st.st_ino;
                }
        closedir(d);
        CHECK_INT(n_ino, ==, 2);

        struct pool_req r = req("s8", 8);
        CHECK_INT(create(p, &r, &v), ==, CREATED);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        CHECK_INT(stat(v.path, &st), ==, 0);
        CHECK(st.st_ino == inos[0] || st.st_ino == inos[1]);
        check_zero(v.path, 8 * PAGE);
        wait_stock(p, 2); /* refilled */
        CHECK_U64(node_free(), ==, base - 24);

        /* 8 free, 16 in stock: a 20-page pool fits only if stock yields. */
        struct pool_req big = req("big", 20);
        CHECK_INT(create(p, &big, &v), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        wait_ready(p, "big", &v);
        struct pools_stats s;
        pools_get_stats(p, &s);
        CHECK_U64(s.stock_given_way, >=, 1);
        CHECK_U64(s.stock_hits, ==, 1);

        CHECK_INT(pools_set_stock(p, NULL, 0, &err), ==, 0);
        CHECK_INT(pools_delete(p, "s8", NULL), ==, 0);
        CHECK_INT(pools_delete(p, "big", NULL), ==, 0);
        CHECK_U64(node_free(), ==, base);
        CHECK_U64(meminfo_free(), ==, mbase);
}

int main(void)
{
        const char *mnt = getenv("HPW_TEST_HUGETLBFS");
        struct reserve_result res;
        struct pools *p;
        uint64_t base;

        if (!mnt || !*mnt)
                SKIP("HPW_TEST_HUGETLBFS not set (run under tests/real/guard.sh)");
        CHECK_INT(sysfs_open("/sys", &fs), ==, 0);
        CHECK_INT(topo_load(fs, &topo), ==, 0);
        if (!topo_has_page_size(topo, PAGE) || !topo_node(topo, 0))
                SKIP("no 2 MiB hugepages on node 0");
        struct engine_config ec = { .topo = topo, .ops = &ops };
        CHECK_INT(engine_new(&ec, &engine), ==, 0);

        snprintf(pooldir, sizeof(pooldir), "%s/hpwarm", mnt);
        snprintf(statedir, sizeof(statedir), "/tmp/hpw-pools-state.XXXXXX");
        CHECK(mkdtemp(statedir));
        CHECK_INT(pools_check_mount(pooldir, PAGE, (gid_t)-1), ==, 0);
        CHECK_INT(pools_check_mount(pooldir, GIB, (gid_t)-1), ==, -EXDEV);
        /* Created, so ours: it carries the marker. */
        char marker[4096];
        snprintf(marker, sizeof(marker), "%s/" POOLS_DIR_MARKER, pooldir);
        CHECK_INT(access(marker, F_OK), ==, 0);
        /* The mount's root is shared with other software (start-up would
         * remove their files): refused, and nothing written into it. */
        CHECK_INT(pools_check_mount(mnt, PAGE, (gid_t)-1), ==, -EBUSY);
        char rootmarker[4096];
        snprintf(rootmarker, sizeof(rootmarker), "%s/" POOLS_DIR_MARKER, mnt);
        CHECK(access(rootmarker, F_OK) < 0);
        cfg = (struct pools_config){
                .fs = fs,
                .topo = topo,
                .engine = engine,
                .state_dir = statedir,
                .mounts = { { .page_size = PAGE, .dir = pooldir } },
                .n_mounts = 1,
                .pool_gid = (gid_t)-1,
        };
        p = start();

        struct hp_counts hp;
        CHECK_INT(topo_read_hugepages(fs, 0, PAGE, &hp), ==, 0);
        /* Pages in use stay; exactly RESERVE free ones on top, whatever the
         * host had free before (the stock test counts on 8 left over). */
        struct reserve_req rq = { .node = 0, .page_size = PAGE, .count = hp.total - hp.free + RESERVE };
        int r = pools_reserve(p, &rq, &res, NULL);
        if (r == -EAGAIN || r == -ENOMEM)
                SKIP("cannot reserve 32 hugepages on node 0 (memory too fragmented or short)");
        CHECK_INT(r, ==, 0);
        CHECK(res.complete);
        base = node_free();
        CHECK_U64(base, ==, RESERVE);
        mbase = meminfo_free();

        /* The tests get a registry of their own each. */
        pools_free(p);
        engine_free(engine);
        engine = NULL;
        base_ = base;
        test_set_fixture(pools_up, pools_down);
        int ret = test_run_all();

        unlink(marker);
        char stockdir[sizeof(pooldir) + sizeof(POOLS_STOCK_DIR) + 1];
        snprintf(stockdir, sizeof(stockdir), "%s/%s", pooldir, POOLS_STOCK_DIR);
        CHECK_INT(rmdir(stockdir), ==, 0);
        CHECK_INT(rmdir(pooldir), ==, 0);
        char sj[128];
        snprintf(sj, sizeof(sj), "%s/state.json", statedir);
        unlink(sj);
        snprintf(sj, sizeof(sj), "%s/state.log", statedir);
        unlink(sj);
        rmdir(statedir);
        topo_free(topo);
        sysfs_close(fs);
        return ret;
}
