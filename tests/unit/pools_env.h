/* The pools test environment: the pool core without the kernel's hugetlbfs.  A
 * copy of the two-node sysfs fixture stands in for /sys (node 0: 64 free 2M
 * pages), a directory in /dev/shm (tmpfs) for the hugetlbfs mount
 * (skip_mount_check), and the real engine runs with fake_engine.h's gated
 * ops, one worker per node.  env_init() fills a struct env and its
 * pools_config; start() makes a registry from it; env_fini() removes it all
 * (and fixture.h removes what a failed test left, at exit).
 * One copy for every test binary that drives the pool core this way. */
#pragma once
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "engine.h"
#include "fake_engine.h"
#include "fixture.h"
#include "journal.h"
#include "pools.h"
#include "pools_testing.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

#define PAGE (2 * MIB)
#define HP_DIR(node) "devices/system/node/node" #node "/hugepages/hugepages-2048kB/"
/* The global reserved count of 2 MiB pages. */
#define RESV_2M "kernel/mm/hugepages/hugepages-2048kB/resv_hugepages"

/* ---- the gate, checked ---- */

static inline void wait_inside(void)
{
        CHECK_INT(fake_gate_wait_inside(10), ==, 0);
}

/* Cancelling waits for the worker at the gate: open it a little later, from
 * another thread, so the cancel is requested while the chunk is in flight. */
static inline pthread_t open_gate_soon(void)
{
        pthread_t t;

        CHECK_INT(fake_gate_open_soon(&t), ==, 0);
        return t;
}

/* ---- environment ---- */

struct env {
        char *sys;              /* fixture copy */
        char root[64];          /* /dev/shm/hpw-pools.XXXXXX */
        char mount[128], state[128], boot[128], proc[128];
        struct sysfs *fs;
        struct topo *topo;
        struct engine *engine;
        struct pools_config cfg;
};

static inline void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");
        CHECK(f);
        CHECK(fputs(text, f) >= 0);
        CHECK(fclose(f) == 0);
}

/* env_init on a copy of the sysfs fixture FIXTURE (tests/fixtures); it
 * must have node 0 with 2M pages. */
static inline void env_init_fixture(struct env *e, const char *fixture)
{
        memset(e, 0, sizeof(*e));
        e->sys = fixture_copy(fixture);
        snprintf(e->root, sizeof(e->root), "/dev/shm/hpw-pools.XXXXXX");
        if (!mkdtemp(e->root))
                SKIP("no /dev/shm");
        fixture_track_(e->root, true); /* removed at exit if a test fails */
        snprintf(e->mount, sizeof(e->mount), "%s/mnt", e->root);
        snprintf(e->state, sizeof(e->state), "%s/state", e->root);
        snprintf(e->boot, sizeof(e->boot), "%s/boot_id", e->root);
        CHECK_INT(mkdir(e->state, 0700), ==, 0);
        write_file(e->boot, "11111111-2222-3333-4444-555555555555\n");
        /* The processes whose mappings pools may scan: this one only.  The
         * host's /proc may hold processes nobody here can read (pid 1 of a
         * sandbox), and start-up keeps orphans when it cannot tell. */
        snprintf(e->proc, sizeof(e->proc), "%s/proc", e->root);
        CHECK_INT(mkdir(e->proc, 0700), ==, 0);
        {
                char link[192], target[64];
                snprintf(link, sizeof(link), "%s/%d", e->proc, (int)getpid());
                snprintf(target, sizeof(target), "/proc/%d", (int)getpid());
                CHECK_INT(symlink(target, link), ==, 0);
        }
        /* Plenty of free pages on node 0 unless a test says otherwise. */
        fixture_write(e->sys, HP_DIR(0) "free_hugepages", "64\n");
        fixture_write(e->sys, HP_DIR(0) "nr_hugepages", "64\n");
        /* No mapping of another process holds a reservation unless a test
         * says otherwise (resv_hugepages is global). */
        fixture_write(e->sys, RESV_2M, "0\n");

        CHECK_INT(sysfs_open(e->sys, &e->fs), ==, 0);
        CHECK_INT(topo_load(e->fs, &e->topo), ==, 0);
        struct engine_config ec = { .topo = e->topo, .threads_per_node = 1, .ops = fake_engine_gated_ops() };
        CHECK_INT(engine_new(&ec, &e->engine), ==, 0);

        e->cfg = (struct pools_config){
                .fs = e->fs,
                .topo = e->topo,
                .engine = e->engine,
                .state_dir = e->state,
                .boot_id_path = e->boot,
                .mounts = { { .page_size = PAGE, .dir = e->mount } },
                .n_mounts = 1,
                .pool_gid = (gid_t)-1,
                .skip_mount_check = true,
                .proc_root = e->proc,
        };
        fake_gate_set(false);
        fake_gate_fail_with(0);
}

/* Let the daemon's scans of /proc see process PID too (a stand-in for
 * another VMM, or an intruder holding a file). */
static inline void env_show_pid(const struct env *e, pid_t pid)
{
        char link[192], target[64];

        snprintf(link, sizeof(link), "%s/%d", e->proc, (int)pid);
        snprintf(target, sizeof(target), "/proc/%d", (int)pid);
        CHECK_INT(symlink(target, link), ==, 0);
}

/* Where NAME's file lives: a stock file in the mount's stock directory
 * (pools.h POOLS_STOCK_DIR), a pool's in the mount. */
static inline void env_path(const struct env *e, const char *name, char *buf, size_t size)
{
        if (name[0] == POOL_STOCK_PREFIX)
                snprintf(buf, size, "%.127s/%s/%.63s", e->mount, POOLS_STOCK_DIR, name);
        else
                snprintf(buf, size, "%.127s/%.63s", e->mount, name);
}

/* The permission bits of NAME's file in the mount. */
static inline unsigned mode_of(const struct env *e, const char *name)
{
        char path[256];
        struct stat st;

        env_path(e, name, path, sizeof(path));
        CHECK_INT(stat(path, &st), ==, 0);
        return st.st_mode & 07777;
}

static inline void env_init(struct env *e)
{
        env_init_fixture(e, "two-node");
}

static inline void env_fini(struct env *e)
{
        char *argv[] = { "rm", "-rf", e->root, NULL };

        engine_free(e->engine);
        topo_free(e->topo);
        sysfs_close(e->fs);
        fixture_remove(e->sys);
        fixture_run_(argv);
        fixture_track_(e->root, false);
}

/* The end of a test that hooked the sysfs ops: the registry goes first (its
 * threads may still read through the hook), then the hook, then the rest. */
static inline void env_fini_hooked(struct env *e, struct pools *p)
{
        pools_free(p);
        sysfs_set_ops(e->fs, NULL, NULL);
        env_fini(e);
}

static inline struct pools *start(struct env *e)
{
        struct pools *p = NULL;

        CHECK_INT(pools_new(&e->cfg, &p), ==, 0);
        CHECK(p);
        return p;
}

/* The two-node environment and the pools on it, its configuration as is. */
static inline struct pools *env_start(struct env *e)
{
        env_init(e);
        return start(e);
}

static inline struct pool_req req(const char *name, int node, uint64_t pages)
{
        struct pool_req r = { .node = node, .size_bytes = pages * PAGE, .page_size = PAGE };

        snprintf(r.name, sizeof(r.name), "%s", name);
        return r;
}

/* What create() returns on success: whether pools_create made the pool
 * (or handed it out from stock) or found an identical one. */
enum { EXISTED = 0, CREATED = 1 };

static inline int create(struct pools *p, const struct pool_req *r, struct pool_view *v, struct problem *err)
{
        bool created = false;
        int rc;

        memset(err, 0, sizeof(*err));
        rc = pools_create(p, r, v, &created, err);
        return rc < 0 ? rc : created ? CREATED : EXISTED;
}

/* The gated warm most tests start from: the gate closed, R's pool created
 * and a worker inside its populate, so the pool is certainly warming until
 * the test opens the gate (fake_gate_set(false)). */
static inline void create_gated(struct pools *p, const struct pool_req *r, struct pool_view *v,
                                struct problem *err)
{
        fake_gate_set(true);
        CHECK_INT(create(p, r, v, err), ==, CREATED);
        wait_inside();
}

static inline uint64_t deadline_in(double s) { return now_mono_ns() + (uint64_t)(s * 1e9); }

static inline void wait_state(struct pools *p, const char *name, enum pool_state want)
{
        struct pool_view v;

        CHECK_INT(pools_wait(p, name, deadline_in(20), &v), ==, 0);
        CHECK_STR(pool_state_name(v.state), pool_state_name(want));
}

static inline bool file_exists(const struct env *e, const char *name)
{
        char path[256];

        env_path(e, name, path, sizeof(path));
        return access(path, F_OK) == 0;
}

/* Read the journal as it is on disk now: the snapshot with its log
 * replayed.  Not journal_load(): that removes stale temporary files, which
 * is right at start-up but would race with a save still running in the
 * daemon under test. */
static inline struct journal *load(const struct env *e)
{
        static char buf[1 << 20];
        struct journal *j = NULL;
        char path[PATH_MAX];
        size_t n;
        FILE *f;

        snprintf(path, sizeof(path), "%s/state.json", e->state);
        f = fopen(path, "re");
        CHECK(f);
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        CHECK(n < sizeof(buf));
        CHECK_INT(journal_parse(buf, n, &j), ==, 0);
        snprintf(path, sizeof(path), "%s/state.log", e->state);
        f = fopen(path, "re");
        if (f) {
                n = fread(buf, 1, sizeof(buf), f);
                fclose(f);
                CHECK(n < sizeof(buf));
                CHECK_INT(journal_apply_log(j, buf, n), ==, 0);
        }
        return j;
}

/* With the daemon stopped: fold the log into the snapshot, so a test can
 * edit the state in state.json alone. */
static inline void compact_on_disk(const struct env *e)
{
        struct journal *j = NULL;

        CHECK_INT(journal_load(e->state, &j), ==, 0);
        CHECK_INT(journal_save(e->state, j), ==, 0);
        journal_free(j);
}

static inline const struct pool_record *jpool(const struct journal *j, const char *name)
{
        for (size_t i = 0; i < j->n_pools; i++)
                if (strcmp(j->pools[i].name, name) == 0)
                        return &j->pools[i];
        return NULL;
}

/* ---- the stock ---- */

/* How long a poll waits for what the registry's threads do before the test
 * fails: generous, for a loaded machine or a sanitizer build; a fast
 * machine does not wait for it. */
#define POLL_BOUND_S 30

static inline double poll_now_s_(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Poll COND every millisecond until it holds; the test fails after
 * POLL_BOUND_S seconds. */
#define WAIT_UNTIL(cond)                                               \
        do {                                                           \
                const double until_ = poll_now_s_() + POLL_BOUND_S;    \
                while (!(cond)) {                                      \
                        CHECK(poll_now_s_() < until_);                 \
                        usleep(1000);                                  \
                }                                                      \
        } while (0)

static inline const struct stock_view *find_target(const struct stock_view *v, size_t n, uint64_t pages)
{
        for (size_t i = 0; i < n; i++)
                if (v[i].target.size_bytes == pages * PAGE)
                        return &v[i];
        return NULL;
}

/* The target of PAGES-page files as GET /v1/stock shows it (all zero: none). */
static inline struct stock_view stock_of(struct pools *p, uint64_t pages)
{
        struct stock_view *v = NULL, out = {0};
        size_t n = 0;

        CHECK_INT(pools_get_stock(p, &v, &n), ==, 0);
        const struct stock_view *t = find_target(v, n, pages);
        if (t)
                out = *t;
        free(v);
        return out;
}

/* Wait until the target of PAGES-page files (it must exist) has READY
 * ready files. */
static inline bool stock_ready_is_(struct pools *p, uint64_t pages, unsigned ready)
{
        struct stock_view *v = NULL;
        size_t n = 0;

        CHECK_INT(pools_get_stock(p, &v, &n), ==, 0);
        const struct stock_view *t = find_target(v, n, pages);
        CHECK(t);
        bool done = t->ready == ready;
        free(v);
        return done;
}

static inline void wait_ready(struct pools *p, uint64_t pages, unsigned ready)
{
        WAIT_UNTIL(stock_ready_is_(p, pages, ready));
}

/* ---- helpers the pools tests share ---- */

/* Whether NAME exists, without the file check a GET makes (this test puts
 * a directory in place of the file, which a GET reports as file-changed). */
static inline int present(struct pools *p, const char *name)
{
        struct pool_view v;

        return pools_wait(p, name, now_mono_ns(), &v);
}

static inline void make_pool_file(const struct env *e, const char *name, uint64_t size, uint64_t present)
{
        char path[256];
        int fd;

        env_path(e, name, path, sizeof(path));
        fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0660);
        CHECK(fd >= 0);
        CHECK_INT(ftruncate(fd, (off_t)size), ==, 0);
        if (present)
                CHECK_INT(fallocate(fd, 0, 0, (off_t)present), ==, 0);
        close(fd);
}

/* Wait up to SECONDS until NAME is gone; true if it went. */
static inline bool gone_within(struct pools *p, const char *name, double seconds)
{
        struct pool_view v;
        uint64_t until = deadline_in(seconds);

        while (now_mono_ns() < until) {
                if (pools_get(p, name, &v, NULL) == -ENOENT)
                        return true;
                usleep(10 * 1000);
        }
        return pools_get(p, name, &v, NULL) == -ENOENT;
}

static inline void ready_pool(struct pools *p, const char *name)
{
        struct pool_view v;
        struct problem err;
        struct pool_req r = req(name, 0, 2);

        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, name, POOL_READY);
}

static inline void pool_path(const struct env *e, const char *name, char *buf, size_t size)
{
        env_path(e, name, buf, size);
}
