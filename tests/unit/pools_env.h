/* The pools test environment: pools.c without the kernel's hugetlbfs.  A
 * copy of the two-node sysfs fixture stands in for /sys (node 0: 64 free 2M
 * pages), a directory in /dev/shm (tmpfs) for the hugetlbfs mount
 * (skip_mount_check), and the real engine runs with fake_engine.h's gated
 * ops, one worker per node.  env_init() fills a struct env and its
 * pools_config; start() makes a registry from it; env_fini() removes it all
 * (and fixture.h removes what a failed test left, at exit).
 * One copy for every test binary that drives pools.c this way. */
#pragma once
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "engine.h"
#include "fake_engine.h"
#include "fixture.h"
#include "journal.h"
#include "pools.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

#define PAGE (2 * MIB)
#define HP_DIR(node) "devices/system/node/node" #node "/hugepages/hugepages-2048kB/"

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

static inline struct pool_req req(const char *name, int node, uint64_t pages)
{
        struct pool_req r = { .node = node, .size_bytes = pages * PAGE, .page_size = PAGE };

        snprintf(r.name, sizeof(r.name), "%s", name);
        return r;
}

static inline int create(struct pools *p, const struct pool_req *r, struct pool_view *v, struct problem *err)
{
        memset(err, 0, sizeof(*err));
        return pools_create(p, r, v, err);
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

        snprintf(path, sizeof(path), "%s/%s", e->mount, name);
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

static inline const struct journal_pool *jpool(const struct journal *j, const char *name)
{
        for (size_t i = 0; i < j->n_pools; i++)
                if (strcmp(j->pools[i].name, name) == 0)
                        return &j->pools[i];
        return NULL;
}

/* ---- the stock ---- */

/* Poll COND every millisecond; the test fails after TRIES polls. */
#define WAIT_UNTIL(cond, tries)                           \
        do {                                              \
                for (int tries_ = 0; !(cond); tries_++) { \
                        CHECK(tries_ < (tries));          \
                        usleep(1000);                     \
                }                                         \
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
static inline void wait_ready(struct pools *p, uint64_t pages, unsigned ready)
{
        for (int tries = 0;; tries++) {
                struct stock_view *v = NULL;
                size_t n = 0;
                CHECK_INT(pools_get_stock(p, &v, &n), ==, 0);
                const struct stock_view *t = find_target(v, n, pages);
                CHECK(t);
                bool done = t->ready == ready;
                free(v);
                if (done)
                        return;
                CHECK(tries < 10000);
                usleep(1000);
        }
}
