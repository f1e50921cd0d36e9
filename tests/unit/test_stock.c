/* Unit tests for the stock of warm files (pools_stock.c) in pools_env.h's
 * environment: the two-node sysfs fixture (node 0: 64 free 2M pages, which
 * the fixture never decrements: tests that need pages to be gone write
 * free_hugepages themselves), a tmpfs directory for the hugetlbfs mount and
 * the real engine with fake_engine.h's gated ops. */
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "journal.h"
#include "pools.h"
#include "pools_env.h"

static int set1(struct pools *p, int node, uint64_t pages, uint64_t count, struct problem *err)
{
        struct stock_target_record t = { .node = node, .page_size = PAGE, .size_bytes = pages * PAGE,
                                          .count = count };
        memset(err, 0, sizeof(*err));
        return pools_set_stock(p, &t, 1, err);
}

/* Names of stock files in the mount (the caller frees nothing: fixed room). */
static size_t stock_files(const struct env *e, char names[][64], size_t max)
{
        char dir[256];
        snprintf(dir, sizeof(dir), "%.127s/%s", e->mount, POOLS_STOCK_DIR);
        DIR *d = opendir(dir);
        struct dirent *de;
        size_t n = 0;

        CHECK(d);
        while ((de = readdir(d)))
                if (de->d_name[0] == POOL_STOCK_PREFIX && n < max)
                        snprintf(names[n++], 64, "%.63s", de->d_name);
        closedir(d);
        return n;
}

static ino_t inode_of(const struct env *e, const char *name)
{
        char path[256];
        struct stat st;

        env_path(e, name, path, sizeof(path));
        CHECK_INT(stat(path, &st), ==, 0);
        return st.st_ino;
}

/* The inode of the one of the N stock files NAMES that is SIZE bytes long
 * (there must be one). */
static ino_t inode_of_size(const struct env *e, char names[][64], size_t n, uint64_t size)
{
        ino_t ino = 0;

        for (size_t i = 0; i < n; i++) {
                char path[256];
                struct stat st;
                env_path(e, names[i], path, sizeof(path));
                CHECK_INT(stat(path, &st), ==, 0);
                if ((uint64_t)st.st_size == size)
                        ino = st.st_ino;
        }
        CHECK(ino != 0);
        return ino;
}

/* Targets fill: stock files appear, fully populated, journalled, and are
 * no pools. */
TEST(fill)
{
        struct env e;
        struct problem err;
        char names[8][64];

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 4, 2, &err), ==, 0);
        wait_ready(p, 4, 2);
        struct stock_view s = stock_of(p, 4);
        CHECK_U64(s.deficit, ==, 0);
        CHECK_U64(s.warming, ==, 0);
        CHECK_U64(stock_files(&e, names, 8), ==, 2);
        for (int i = 0; i < 2; i++) {
                char path[256];
                struct stat st;
                env_path(&e, names[i], path, sizeof(path));
                CHECK_INT(stat(path, &st), ==, 0);
                CHECK_U64((uint64_t)st.st_blocks * 512, ==, 4 * PAGE);
        }

        struct pool_view *list;
        size_t n;
        CHECK_INT(pools_list(p, &list, &n), ==, 0);
        CHECK_U64(n, ==, 0);
        free(list);
        struct pool_view v;
        CHECK_INT(pools_get(p, names[0], &v, NULL), ==, -ENOENT);
        CHECK_INT(pools_delete(p, names[0], NULL), ==, -ENOENT);

        struct journal *j = load(&e);
        CHECK_U64(j->n_stock_targets, ==, 1);
        CHECK_U64(j->stock_targets[0].count, ==, 2);
        CHECK(jpool(j, names[0]));
        CHECK_STR(pool_state_name(jpool(j, names[0])->state), "stock");
        journal_free(j);

        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_refills, ==, 2);
        CHECK_U64(st.stock_refill_bytes, ==, 8 * PAGE);
        pools_free(p);
        env_fini(&e);
}

/* A file someone put at the pool's name is never replaced by a hand-out
 * (renameat2 RENAME_NOREPLACE answers EEXIST): the stock file stays in
 * stock, the foreign file keeps its inode and content, and the create falls
 * through to its own O_EXCL, which refuses it as pool-conflict. */
TEST(hand_out_never_replaces_a_file)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char names[8][64], path[256];

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        wait_ready(p, 4, 1);
        CHECK_U64(stock_files(&e, names, 8), ==, 1);
        ino_t stock_ino = inode_of(&e, names[0]);
        snprintf(path, sizeof(path), "%s/vm1", e.mount);
        FILE *f = fopen(path, "w");
        CHECK(f);
        fputs("not ours", f);
        fclose(f);
        ino_t foreign = inode_of(&e, "vm1");

        struct pool_req r = req("vm1", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, -EEXIST);
        CHECK_STR(err.slug, "pool-conflict");
        CHECK(inode_of(&e, "vm1") == foreign);
        struct stat st;
        CHECK_INT(stat(path, &st), ==, 0);
        CHECK_U64((uint64_t)st.st_size, ==, strlen("not ours"));
        CHECK(file_exists(&e, names[0]));
        CHECK(inode_of(&e, names[0]) == stock_ino);
        struct stock_view s = stock_of(p, 4);
        CHECK_U64(s.deficit, ==, 0);
        CHECK_INT(pools_get(p, "vm1", &v, NULL), ==, -ENOENT);
        struct pools_stats stats;
        pools_get_stats(p, &stats);
        CHECK_U64(stats.stock_hits, ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A create of the stocked spec is the stock file renamed: same inode,
 * ready at once, from_stock full; the stock refills behind it. */
TEST(hand_out_by_rename)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char names[8][64];

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        wait_ready(p, 4, 1);
        CHECK_U64(stock_files(&e, names, 8), ==, 1);
        ino_t ino = inode_of(&e, names[0]);

        fake_gate_set(true); /* the refill must not finish before we look */
        struct pool_req r = req("vm1", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        CHECK_U64(v.bytes_done, ==, 4 * PAGE);
        CHECK(inode_of(&e, "vm1") == ino);
        CHECK(!file_exists(&e, names[0]));
        struct journal *j = load(&e);
        CHECK(jpool(j, "vm1"));
        CHECK_INT(jpool(j, "vm1")->from_stock, ==, POOL_FROM_STOCK_FULL);
        CHECK(!jpool(j, names[0]));
        journal_free(j);

        /* The refill started (low priority, held at the gate). */
        WAIT_UNTIL(stock_of(p, 4).warming == 1);
        fake_gate_set(false);
        wait_ready(p, 4, 1);
        CHECK(inode_of(&e, "vm1") == ino);

        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_hits, ==, 1);
        CHECK_U64(st.stock_misses, ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A hand-out's saves, and the refill's, append to the log (one fdatasync,
 * no directory fsync, no snapshot rewrite); so does a target change, which
 * the log makes durable across a reboot as well.  Only the first save of a
 * process (at start) compacts. */
TEST(hand_out_save_is_light)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        struct pools_stats a, b;

        env_init(&e);
        struct pools *p = start(&e);
        pools_get_stats(p, &a);
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        pools_get_stats(p, &b);
        CHECK_U64(b.journal_saves_full, ==, a.journal_saves_full);
        CHECK_U64(b.journal_saves_light, >, a.journal_saves_light);
        wait_ready(p, 4, 1);

        pools_get_stats(p, &a);
        struct pool_req r = req("vm1", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        wait_ready(p, 4, 1);
        pools_get_stats(p, &b);
        CHECK_U64(b.journal_saves_full, ==, a.journal_saves_full);
        /* The hand-out, the refill's start and its "stock" at least. */
        CHECK_U64(b.journal_saves_light, >=, a.journal_saves_light + 3);
        struct journal *j = load(&e);
        CHECK(jpool(j, "vm1"));
        journal_free(j);

        CHECK_INT(set1(p, 0, 4, 2, &err), ==, 0);
        pools_get_stats(p, &a);
        CHECK_U64(a.journal_saves_full, ==, b.journal_saves_full);
        CHECK_U64(a.journal_saves_light, >, b.journal_saves_light);
        j = load(&e);
        CHECK_U64(j->n_stock_targets, ==, 1);
        CHECK_U64(j->stock_targets[0].count, ==, 2);
        journal_free(j);
        pools_free(p);
        env_fini(&e);
}

/* A size no stock file covers (smaller than all of them) is warmed as
 * usual and counted as a miss. */
TEST(miss_warms)
{
        struct env e;
        struct problem err;
        struct pool_view v;

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        wait_ready(p, 4, 1);
        struct pool_req r = req("vm2", 0, 3);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        wait_state(p, "vm2", POOL_READY);
        CHECK_U64(stock_of(p, 4).ready, ==, 1);
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_misses, ==, 1);
        CHECK_U64(st.stock_hits, ==, 0);
        pools_free(p);
        env_fini(&e);
}

static void check_refused_says(struct pools *p, const struct stock_target_record *t, size_t n, int want_r,
                               int status, const char *slug, const char *detail)
{
        struct problem err = {0};

        CHECK_INT(pools_set_stock(p, t, n, &err), ==, want_r);
        CHECK_INT(err.status, ==, status);
        CHECK_STR(err.slug, slug);
        if (detail)
                CHECK_STR(err.detail, detail);
}

static void check_refused(struct pools *p, const struct stock_target_record *t, size_t n, int want_r,
                          int status, const char *slug)
{
        check_refused_says(p, t, n, want_r, status, slug, NULL);
}

/* Bad targets are refused with the right problem and change nothing. */
TEST(validation)
{
        struct env e;
        struct problem err;

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 2, 1, &err), ==, 0);

        struct stock_target_record t = { .node = 7, .page_size = PAGE, .size_bytes = PAGE, .count = 1 };
        check_refused_says(p, &t, 1, -ENOENT, 404, "unknown-node", "target 0: there is no NUMA node 7");
        t = (struct stock_target_record){ .node = 0, .page_size = 4096, .size_bytes = 4096, .count = 1 };
        check_refused_says(p, &t, 1, -ENOENT, 404, "unknown-page-size",
                           "target 0: the kernel offers no hugepage size 4K (this host has 2M and 1G)");
        t = (struct stock_target_record){ .node = 0, .page_size = PAGE, .size_bytes = 0, .count = 1 };
        check_refused(p, &t, 1, -EINVAL, 422, "invalid-field");
        t.size_bytes = PAGE + 4096;
        check_refused(p, &t, 1, -EINVAL, 422, "invalid-field");
        t.size_bytes = PAGE;
        t.count = 0;
        check_refused(p, &t, 1, -EINVAL, 422, "invalid-field");
        /* size times count overflows 64 bits */
        t = (struct stock_target_record){ .node = 0, .page_size = PAGE, .size_bytes = UINT64_C(1) << 62,
                                           .count = 8 };
        check_refused(p, &t, 1, -EINVAL, 422, "invalid-field");
        /* duplicates */
        struct stock_target_record two[2] = {
                { .node = 0, .page_size = PAGE, .size_bytes = PAGE, .count = 1 },
                { .node = 0, .page_size = PAGE, .size_bytes = PAGE, .count = 2 },
        };
        check_refused(p, two, 2, -EINVAL, 422, "invalid-field");
        /* 9 files of 8 pages on a node of 64 pages: 409, and how many fit */
        t = (struct stock_target_record){ .node = 0, .page_size = PAGE, .size_bytes = 8 * PAGE, .count = 9 };
        memset(&err, 0, sizeof(err));
        CHECK_INT(pools_set_stock(p, &t, 1, &err), ==, -E2BIG);
        CHECK_INT(err.status, ==, 409);
        CHECK_STR(err.slug, "stock-too-large");
        CHECK(strstr(err.detail, "8 files of this size fit"));
        /* Two targets that fit alone but not together. */
        two[0] = (struct stock_target_record){ .node = 0, .page_size = PAGE, .size_bytes = 16 * PAGE, .count = 2 };
        two[1] = (struct stock_target_record){ .node = 0, .page_size = PAGE, .size_bytes = 8 * PAGE, .count = 5 };
        memset(&err, 0, sizeof(err));
        CHECK_INT(pools_set_stock(p, two, 2, &err), ==, -E2BIG);
        CHECK(strstr(err.detail, "4 files of this size fit"));

        /* Nothing changed. */
        struct stock_view *v;
        size_t n;
        CHECK_INT(pools_get_stock(p, &v, &n), ==, 0);
        CHECK_U64(n, ==, 1);
        CHECK_U64(v[0].target.size_bytes, ==, 2 * PAGE);
        free(v);
        struct journal *j = load(&e);
        CHECK_U64(j->n_stock_targets, ==, 1);
        journal_free(j);

        /* Empty targets: stock files go. */
        wait_ready(p, 2, 1);
        CHECK_INT(pools_set_stock(p, NULL, 0, &err), ==, 0);
        char names[4][64];
        CHECK_U64(stock_files(&e, names, 4), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A pool name that looks like a stock file is refused by the name rule. */
TEST(stock_like_pool_name)
{
        struct env e;
        struct problem err;
        struct pool_view v;

        env_init(&e);
        struct pools *p = start(&e);
        struct pool_req r = req("~n0-2048k-0", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
        CHECK_STR(err.slug, "invalid-field");
        CHECK(!file_exists(&e, "~n0-2048k-0"));
        pools_free(p);
        env_fini(&e);
}

/* A stock file's real name is no pool's: GET, wait, claim and DELETE of
 * it answer "no such pool" (the HTTP layer already refuses the name with
 * 422), a create of it is refused by the name rule, and the stock file is
 * still there, ready, afterwards. */
TEST(stock_file_name_is_no_pool)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char names[4][64];

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 2, 1, &err), ==, 0);
        wait_ready(p, 2, 1);
        CHECK_U64(stock_files(&e, names, 4), ==, 1);
        ino_t ino = inode_of(&e, names[0]);

        CHECK_INT(pools_get(p, names[0], &v, NULL), ==, -ENOENT);
        CHECK_INT(pools_wait(p, names[0], deadline_in(1), &v), ==, -ENOENT);
        CHECK_INT(pools_claim(p, names[0], &v, NULL), ==, -ENOENT);
        CHECK_INT(pools_delete(p, names[0], NULL), ==, -ENOENT);
        struct pool_req r = req("x", 0, 2);
        snprintf(r.name, sizeof(r.name), "%s", names[0]);
        CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
        CHECK_STR(err.slug, "invalid-field");

        CHECK(file_exists(&e, names[0]));
        CHECK(inode_of(&e, names[0]) == ino);
        CHECK_U64(stock_of(p, 2).ready, ==, 1);
        struct pool_view *all = NULL;
        size_t n = 99;
        CHECK_INT(pools_list(p, &all, &n), ==, 0);
        CHECK_U64(n, ==, 0);
        free(all);
        struct journal *j = load(&e);
        CHECK(jpool(j, names[0]));
        journal_free(j);
        pools_free(p);
        env_fini(&e);
}

/* A node with memory but no CPUs (CXL, HBM) is stocked as it is warmed for
 * pools: by its own engine workers, which run unpinned there (README,
 * --threads-per-node), with the memory bound to the node.  So a target on
 * it is accepted, filled, and handed out like any other. */
TEST(stock_on_memory_only_node)
{
        struct env e;
        struct problem err;
        struct pool_view v;

        env_init_fixture(&e, "memory-only");
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 1, 2, 1, &err), ==, 0);
        wait_ready(p, 2, 1);
        struct pool_req r = req("cxl", 1, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        CHECK_INT(v.node, ==, 1);
        wait_ready(p, 2, 1); /* refilled */
        CHECK_INT(pools_delete(p, "cxl", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A pool that needs pages stock refills still hold gets them: the stock
 * gives way instead of a 409. */
TEST(gives_way_to_pools)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        struct pools_stats st;

        env_init(&e);
        struct pools *p = start(&e);
        fake_gate_set(true);
        CHECK_INT(set1(p, 0, 16, 2, &err), ==, 0);
        WAIT_UNTIL(stock_of(p, 16).warming == 2);
        /* More than the node has even without stock: refused as before,
         * and no stock file is thrown away for nothing. */
        struct pool_req huge = req("huge", 0, 65);
        CHECK_INT(create(p, &huge, &v, &err), ==, -ENOMEM);
        CHECK_STR(err.slug, "insufficient-hugepages");
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_given_way, ==, 0);
        CHECK_U64(stock_of(p, 16).warming, ==, 2);

        /* 64 free, 32 promised to refills: 40 fits only if stock yields.
         * The removed refill's chunk in flight ends first (the gate opens
         * soon). */
        pthread_t t = open_gate_soon();
        struct pool_req r = req("big", 0, 40);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        pthread_join(t, NULL);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_given_way, ==, 1);
        /* (How many stock files follow depends on the fixture's free
         * count, which never moves here: the real-kernel test counts pages.) */
        wait_state(p, "big", POOL_READY);
        pools_free(p);
        env_fini(&e);
}

/* Reads of node 0's free count by the upkeep thread (its refill's look
 * for room), counted by a sysfs hook that answers as the fixture does. */
static unsigned upkeep_free_reads;

static int count_upkeep_reads(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        char name[16] = "";

        pthread_getname_np(pthread_self(), name, sizeof(name));
        if (strcmp(name, "hpw-pool-upkeep") == 0 && strstr(path, "node0/") && strstr(path, "/free_hugepages"))
                __atomic_add_fetch(&upkeep_free_reads, 1, __ATOMIC_SEQ_CST);
        return sysfs_default_ops.read_u64(fs, path, ret, userdata);
}

static int pass_write(const struct sysfs *fs, const char *path, uint64_t v, void *userdata)
{
        return sysfs_default_ops.write_u64(fs, path, v, userdata);
}

static const struct sysfs_ops upkeep_read_ops = { .read_u64 = count_upkeep_reads, .write_u64 = pass_write };

/* A target short for want of room refills as soon as a DELETE frees
 * pages, not at the next sweep (an hour away here): node 0 has no free
 * page when the target is set (the refill looks once and waits), then the
 * pool's pages come free with its release. */
TEST(release_wakes_the_refill)
{
        struct env e;
        struct problem err;
        struct pool_view v;

        env_init(&e);
        e.cfg.unmapped_sweep_ms = 3600 * 1000;
        sysfs_set_ops(e.fs, &upkeep_read_ops, NULL);
        struct pools *p = start(&e);
        struct pool_req r = req("vm", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "vm", POOL_READY);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");
        unsigned before = __atomic_load_n(&upkeep_free_reads, __ATOMIC_SEQ_CST);
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        WAIT_UNTIL(__atomic_load_n(&upkeep_free_reads, __ATOMIC_SEQ_CST) > before);
        /* The refill found no room; it looks no more until woken. */
        usleep(200 * 1000);
        CHECK_U64(stock_of(p, 4).warming + stock_of(p, 4).ready, ==, 0);

        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "64\n"); /* the kernel frees vm's pages */
        CHECK_INT(pools_delete_recycle(p, "vm", false, NULL), ==, 0);
        wait_ready(p, 4, 1);
        pools_free(p);
        env_fini(&e);
}

/* A mount with size= of 32 pages, as statfs reports it: every file's
 * pages (all of its size: ready files hold them, warming ones have them
 * reserved by their mapping) count against the limit. */
#define LIMIT_PAGES 32

/* Pages the files in DIR (not in its subdirectories) count. */
static uint64_t pages_in(const char *dir, uint64_t page_size)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        uint64_t used = 0;
        char path[512];
        struct stat st;

        CHECK(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        snprintf(path, sizeof(path), "%.300s/%.200s", dir, de->d_name);
                        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
                                used += (uint64_t)st.st_size / page_size;
                }
        closedir(d);
        return used;
}

/* The pool directory and its stock directory are on the one mount. */
static int limited_room(const char *dir, uint64_t page_size, uint64_t *ret)
{
        char stock[512];
        uint64_t used;

        snprintf(stock, sizeof(stock), "%.300s/%s", dir, POOLS_STOCK_DIR);
        used = pages_in(dir, page_size) + pages_in(stock, page_size);
        *ret = used < LIMIT_PAGES ? LIMIT_PAGES - used : 0;
        return 0;
}

/* The mount's size limit, not the node's free pages, is what a pool of a
 * full mount lacks (the node has 64 free): two ready 16-page stock files
 * fill it.  40 pages cannot fit even if the stock gave way: 409 naming the
 * mount's limit, no stock file removed.  8 pages fit once one file gives
 * way: created, one file removed, and its refill waits (no room). */
TEST(gives_way_by_mount_limit)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        struct pools_stats st;

        env_init(&e);
        e.cfg.mount_room = limited_room;
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 16, 2, &err), ==, 0);
        wait_ready(p, 16, 2);

        struct pool_req big = req("big", 0, 40);
        CHECK_INT(create(p, &big, &v, &err), ==, -ENOMEM);
        CHECK_STR(err.slug, "insufficient-hugepages");
        CHECK(strstr(err.detail, "size= limit"));
        CHECK(!file_exists(&e, "big"));
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_given_way, ==, 0);
        CHECK_U64(stock_of(p, 16).ready, ==, 2);

        struct pool_req r = req("fits", 0, 8);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_given_way, ==, 1);
        wait_state(p, "fits", POOL_READY);
        CHECK_U64(stock_of(p, 16).ready + stock_of(p, 16).warming, ==, 1);
        pools_free(p);
        env_fini(&e);
}

/* Stock files and targets survive a restart as they are: no refill job. */
TEST(restart_with_stock)
{
        struct env e;
        struct problem err;
        char names[4][64];

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 4, 2, &err), ==, 0);
        wait_ready(p, 4, 2);
        CHECK_U64(stock_files(&e, names, 4), ==, 2);
        ino_t ino = inode_of(&e, names[0]);
        pools_free(p);

        /* An unrecorded file with a stock name is an orphan; so is a
         * recorded stock name in the pool directory itself (where stock
         * files lived before the stock directory: reachable by the pool
         * group there, it is never taken into the stock). */
        char orphan[256], legacy[256];
        env_path(&e, "~n0-2048k-999", orphan, sizeof(orphan));
        write_file(orphan, "");
        snprintf(legacy, sizeof(legacy), "%.127s/%.63s", e.mount, names[1]);
        write_file(legacy, "");
        p = start(&e);
        CHECK(access(orphan, F_OK) < 0);
        CHECK(access(legacy, F_OK) < 0);
        struct stock_view s = stock_of(p, 4);
        CHECK_U64(s.ready, ==, 2);
        CHECK_U64(s.target.count, ==, 2);
        CHECK(inode_of(&e, names[0]) == ino);
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.jobs_started, ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A refill cut short (daemon stopped mid-job) resumes at start; a stock
 * record whose file is gone is dropped and refilled; a stock file that
 * lost pages is refilled before it can be handed out. */
TEST(restart_mid_refill)
{
        struct env e;
        struct problem err;
        char names[4][64];

        env_init(&e);
        struct pools *p = start(&e);
        fake_gate_set(true);
        CHECK_INT(set1(p, 0, 16, 1, &err), ==, 0);
        wait_inside();
        /* Two low-priority chunks of 16 MiB: stopping cancels after the
         * first, and the file stays stock-warming. */
        pthread_t t = open_gate_soon();
        pools_free(p);
        pthread_join(t, NULL);
        struct journal *j = load(&e);
        CHECK_U64(j->n_pools, ==, 1);
        CHECK_STR(pool_state_name(j->pools[0].state), "stock-warming");
        journal_free(j);

        p = start(&e);
        wait_ready(p, 16, 1);
        CHECK_U64(stock_files(&e, names, 4), ==, 1);
        pools_free(p);

        /* File gone while down: the row goes, a new file is made. */
        char path[256];
        env_path(&e, names[0], path, sizeof(path));
        CHECK_INT(unlink(path), ==, 0);
        p = start(&e);
        wait_ready(p, 16, 1);
        CHECK_U64(stock_files(&e, names, 4), ==, 1);
        pools_free(p);

        /* Lost pages: refilled, never handed out short. */
        env_path(&e, names[0], path, sizeof(path));
        CHECK_INT(truncate(path, 0), ==, 0);
        fake_gate_set(true);
        p = start(&e);
        CHECK_U64(stock_of(p, 16).warming, ==, 1);
        struct pool_view v;
        struct pool_req r = req("vm", 0, 16);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        fake_gate_set(false);
        wait_state(p, "vm", POOL_READY);
        pools_free(p);
        env_fini(&e);
}

/* --stock at start replaces the journal's targets; a bad one stops start. */
TEST(config_targets)
{
        struct env e;
        struct problem err;
        struct pools *p;

        env_init(&e);
        p = start(&e);
        CHECK_INT(set1(p, 0, 2, 1, &err), ==, 0);
        pools_free(p);

        struct stock_target_record t = { .node = 0, .page_size = PAGE, .size_bytes = 4 * PAGE, .count = 1 };
        e.cfg.stock_targets = &t;
        e.cfg.n_stock_targets = 1;
        p = start(&e);
        struct stock_view *v;
        size_t n;
        CHECK_INT(pools_get_stock(p, &v, &n), ==, 0);
        CHECK_U64(n, ==, 1);
        CHECK_U64(v[0].target.size_bytes, ==, 4 * PAGE);
        free(v);
        pools_free(p);

        t.node = 9; /* refused: -EDOM, the state is fine */
        p = NULL;
        CHECK_INT(pools_new(&e.cfg, &p), ==, -EDOM);
        CHECK(!p);
        env_fini(&e);
}

/* The journal: stock rows need stock names and the other way round;
 * targets round-trip; a journal without them (older) loads. */
TEST(journal_rows)
{
        static const char base[] =
                "{\"version\":1,\"boot_id\":\"b\",\"reservations\":[],\"pools\":[{\"name\":\"%s\",\"node\":0,"
                "\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"%s\",\"threads\":0,"
                "\"ttl_seconds\":0,\"claimed\":false,\"created_at\":1,\"started_at\":1,\"finished_at\":0,"
                "\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\"}]%s}";
        char buf[1024];
        struct journal *j = NULL;

        snprintf(buf, sizeof(buf), base, "~s1", "stock", "");
        CHECK_INT(journal_parse(buf, strlen(buf), &j), ==, 0);
        CHECK_U64(j->n_stock_targets, ==, 0);
        journal_free(j);
        snprintf(buf, sizeof(buf), base, "vm", "stock", "");
        CHECK_INT(journal_parse(buf, strlen(buf), &j), ==, -EINVAL);
        snprintf(buf, sizeof(buf), base, "~s1", "ready", "");
        CHECK_INT(journal_parse(buf, strlen(buf), &j), ==, -EINVAL);
        snprintf(buf, sizeof(buf), base, "~s1", "stock-warming",
                 ",\"stock_targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":3}]");
        CHECK_INT(journal_parse(buf, strlen(buf), &j), ==, 0);
        CHECK_U64(j->n_stock_targets, ==, 1);
        CHECK_U64(j->stock_targets[0].count, ==, 3);
        j->pools[0].from_stock = POOL_FROM_STOCK_NONE;
        char *text = journal_format(j);
        journal_free(j);
        CHECK(text);
        j = NULL;
        CHECK_INT(journal_parse(text, strlen(text), &j), ==, 0);
        CHECK_U64(j->n_stock_targets, ==, 1);
        CHECK_STR(pool_state_name(j->pools[0].state), "stock-warming");
        journal_free(j);
        free(text);
        /* duplicate targets */
        snprintf(buf, sizeof(buf), base, "~s1", "stock",
                 ",\"stock_targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":3},"
                 "{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1}]");
        CHECK_INT(journal_parse(buf, strlen(buf), &j), ==, -EINVAL);
        /* from_stock */
        snprintf(buf, sizeof(buf), base, "vm", "ready", "");
        char *at = strstr(buf, "\"error_detail\":\"\"");
        CHECK(at);
        char with[1100];
        snprintf(with, sizeof(with), "%.*s\"from_stock\":\"full\",%s", (int)(at - buf), buf, at);
        CHECK_INT(journal_parse(with, strlen(with), &j), ==, 0);
        CHECK_INT(j->pools[0].from_stock, ==, POOL_FROM_STOCK_FULL);
        journal_free(j);
        snprintf(with, sizeof(with), "%.*s\"from_stock\":\"most\",%s", (int)(at - buf), buf, at);
        CHECK_INT(journal_parse(with, strlen(with), &j), ==, -EINVAL);
}

/* Another size takes the largest smaller ready stock file, grows it and
 * warms only the part it gained (same inode, from_stock partial). */
TEST(partial_growth)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char names[4][64];
        struct stock_target_record t[2] = {
                { .node = 0, .page_size = PAGE, .size_bytes = 2 * PAGE, .count = 1 },
                { .node = 0, .page_size = PAGE, .size_bytes = 4 * PAGE, .count = 1 },
        };

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(pools_set_stock(p, t, 2, &err), ==, 0);
        wait_ready(p, 2, 1);
        wait_ready(p, 4, 1);
        CHECK_U64(stock_files(&e, names, 4), ==, 2);
        ino_t ino4 = inode_of_size(&e, names, 2, 4 * PAGE);

        fake_gate_set(true);
        struct pool_req r = req("grown", 0, 12);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_STR(pool_state_name(v.state), "warming");
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_PARTIAL);
        CHECK(inode_of(&e, "grown") == ino4);
        fake_gate_set(false);
        wait_state(p, "grown", POOL_READY);
        CHECK_INT(pools_get(p, "grown", &v, NULL), ==, 0);
        CHECK_U64(v.bytes_done, ==, 12 * PAGE);
        CHECK_U64(v.placement_verified, ==, 1);
        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "%.127s/grown", e.mount);
        CHECK_INT(stat(path, &st), ==, 0);
        CHECK_U64(st.st_size, ==, 12 * PAGE);
        CHECK_U64((uint64_t)st.st_blocks * 512, ==, 12 * PAGE);
        /* The job covered only the 8 pages the file gained. */
        struct pools_stats s;
        pools_get_stats(p, &s);
        CHECK_U64(s.stock_partial_hits, ==, 1);
        CHECK_U64(s.stock_misses, ==, 0);
        struct journal *j = load(&e);
        CHECK_INT(jpool(j, "grown")->from_stock, ==, POOL_FROM_STOCK_PARTIAL);
        journal_free(j);
        /* A size smaller than every stock file is a miss. */
        struct pool_req small = req("small", 0, 1);
        CHECK_INT(create(p, &small, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        wait_state(p, "small", POOL_READY);
        pools_free(p);
        env_fini(&e);
}

/* partial_growth's race, held open: the observer below stops the upkeep
 * thread inside its telling that the 4-page refill is done, which it does
 * after the file shows in the stock as ready but before it lets go of the
 * row.  (An observer must not block in the daemon; here it is the gate.) */
struct refill_gate {
        struct pools *p;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool armed, inside, open;
};

static void hold_refill_finish(void *arg, const char *name)
{
        struct refill_gate *g = arg;

        pthread_mutex_lock(&g->lock);
        bool armed = g->armed;
        pthread_mutex_unlock(&g->lock);
        if (!armed || !name || name[0] != POOL_STOCK_PREFIX || stock_of(g->p, 4).ready != 1)
                return;
        pthread_mutex_lock(&g->lock);
        g->armed = false;
        g->inside = true;
        pthread_cond_broadcast(&g->cond);
        uint64_t until = deadline_in(POLL_BOUND_S);
        struct timespec ts = { .tv_sec = (time_t)(until / 1000000000u), .tv_nsec = (long)(until % 1000000000u) };
        while (!g->open && now_mono_ns() < until)
                pthread_cond_timedwait(&g->cond, &g->lock, &ts);
        pthread_mutex_unlock(&g->lock);
}

static bool gate_inside(struct refill_gate *g)
{
        pthread_mutex_lock(&g->lock);
        bool inside = g->inside;
        pthread_mutex_unlock(&g->lock);
        return inside;
}

struct partial_create {
        struct pools *p;
        struct pool_req r;
        struct pool_view v;
        struct problem err;
        int rc;
};

static void *create_partial(void *arg)
{
        struct partial_create *c = arg;

        c->rc = create(c->p, &c->r, &c->v, &c->err);
        return NULL;
}

/* A create of another size while the upkeep thread still holds the largest
 * smaller stock file it has just shown ready (its refill's commit done, the
 * row not yet let go) waits for that file, as a create of the file's own
 * size does, rather than growing a smaller one: GET /v1/stock said the
 * larger one was ready.  (stress.sh found partial_growth taking the 2-page
 * file in its 53rd run.) */
TEST(partial_waits_for_refill_finishing)
{
        struct env e;
        struct problem err;
        struct refill_gate g = { .armed = false };
        struct stock_target_record t[2] = {
                { .node = 0, .page_size = PAGE, .size_bytes = 2 * PAGE, .count = 1 },
                { .node = 0, .page_size = PAGE, .size_bytes = 4 * PAGE, .count = 1 },
        };
        char names[4][64];
        pthread_t th;

        env_init(&e);
        struct pools *p = start(&e);
        g.p = p;
        pthread_condattr_t ca;
        pthread_mutex_init(&g.lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* deadline_in's clock */
        pthread_cond_init(&g.cond, &ca);
        pthread_condattr_destroy(&ca);
        pools_set_observer(p, hold_refill_finish, &g);
        CHECK_INT(pools_set_stock(p, t, 1, &err), ==, 0);
        wait_ready(p, 2, 1);
        pthread_mutex_lock(&g.lock);
        g.armed = true;
        pthread_mutex_unlock(&g.lock);
        CHECK_INT(pools_set_stock(p, t, 2, &err), ==, 0);
        WAIT_UNTIL(gate_inside(&g));
        /* The upkeep thread holds the 4-page file, shown ready. */
        CHECK_U64(stock_files(&e, names, 4), ==, 2);
        ino_t ino4 = inode_of_size(&e, names, 2, 4 * PAGE);

        fake_gate_set(true);
        struct partial_create c = { .p = p, .r = req("grown", 0, 12) };
        CHECK_INT(pthread_create(&th, NULL, create_partial, &c), ==, 0);
        usleep(200 * 1000); /* time to choose a file, wrongly or not */
        pthread_mutex_lock(&g.lock);
        g.open = true;
        pthread_cond_broadcast(&g.cond);
        pthread_mutex_unlock(&g.lock);
        CHECK_INT(pthread_join(th, NULL), ==, 0);
        CHECK_INT(c.rc, ==, CREATED);
        CHECK_INT(c.v.from_stock, ==, POOL_FROM_STOCK_PARTIAL);
        CHECK(inode_of(&e, "grown") == ino4);
        fake_gate_set(false);
        wait_state(p, "grown", POOL_READY);
        pools_set_observer(p, NULL, NULL);
        pools_free(p);
        pthread_cond_destroy(&g.cond);
        pthread_mutex_destroy(&g.lock);
        env_fini(&e);
}

/* The mount of the test that set it, for held_pages_write. */
static const struct env *held_env;

/* Pages the files in the mount hold (their blocks), as the kernel counts
 * them in use. */
static uint64_t held_pages(const struct env *e)
{
        char names[8][64], path[256];
        size_t n = stock_files(e, names, 8);
        uint64_t pages = 0;
        struct stat st;

        for (size_t i = 0; i < n; i++) {
                env_path(e, names[i], path, sizeof(path));
                if (stat(path, &st) == 0)
                        pages += (uint64_t)st.st_blocks * 512 / PAGE;
        }
        return pages;
}

/* nr_hugepages of node 0 as the kernel takes it: never below the pages the
 * files hold, and free_hugepages what is left. */
static int held_pages_write(const struct sysfs *fs, const char *path, uint64_t v, void *userdata)
{
        if (!strstr(path, "node0/") || !strstr(path, "/nr_hugepages"))
                return sysfs_default_ops.write_u64(fs, path, v, userdata);
        uint64_t held = held_pages(held_env), now = v < held ? held : v;
        char free_path[256];

        snprintf(free_path, sizeof(free_path), "%.*sfree_hugepages", (int)(strrchr(path, '/') + 1 - path), path);
        int r = sysfs_default_ops.write_u64(fs, path, now, userdata);
        return r < 0 ? r : sysfs_default_ops.write_u64(fs, free_path, now - held, userdata);
}

static int pass_read(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        return sysfs_default_ops.read_u64(fs, path, ret, userdata);
}

static const struct sysfs_ops held_pages_ops = { .read_u64 = pass_read, .write_u64 = held_pages_write };

/* A reservation that shrinks the node below its pages in use gets the
 * stock's pages: stock files go first (the fixture's counters stand in for
 * the kernel: 16 of 64 pages held by two ready stock files; a count
 * written leaves free what the files do not hold, so the file that gave
 * way finds no room to be refilled into). */
TEST(gives_way_to_reservations)
{
        struct env e;
        struct problem err;
        struct reserve_result res;

        env_init(&e);
        held_env = &e;
        sysfs_set_ops(e.fs, &held_pages_ops, NULL);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 8, 2, &err), ==, 0);
        wait_ready(p, 8, 2);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "48\n");
        /* Down to 60: free pages cover it, the stock stays. */
        struct reserve_req rq = { .node = 0, .page_size = PAGE, .count = 60 };
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_given_way, ==, 0);
        CHECK_U64(stock_of(p, 8).ready, ==, 2);
        /* Down to 10: 16 in use, so 6 must come from the stock: one file. */
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "64\n");
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "48\n");
        rq.count = 10;
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_given_way, ==, 1);
        CHECK_U64(stock_of(p, 8).ready + stock_of(p, 8).warming, ==, 1);
        pools_free(p);
        env_fini(&e);
}

/* A stock change that cannot be saved changes nothing and answers 503
 * state-write-failed with Retry-After, like every other failed save. */
TEST(set_save_failure_keeps_targets)
{
        struct env e;
        struct problem err = {0};
        char tmp[256];

        env_init(&e);
        struct pools *p = start(&e);
        /* Root ignores file modes; a directory where the temp file goes
         * makes journal_save fail. */
        snprintf(tmp, sizeof(tmp), "%s/state.json.tmp", e.state);
        CHECK_INT(mkdir(tmp, 0700), ==, 0);
        /* That only stops a compaction; an append to the log fails here as
         * a full disk would make it. */
        journal_inject_save_error(ENOSPC);
        CHECK(set1(p, 0, 2, 1, &err) < 0);
        journal_inject_save_error(0);
        CHECK_INT(err.status, ==, 503);
        CHECK_STR(err.slug, "state-write-failed");
        CHECK_INT(err.retry_after, ==, 0); /* the answer carries the catalog's Retry-After */
        struct stock_view *v = NULL;
        size_t n = 1;
        CHECK_INT(pools_get_stock(p, &v, &n), ==, 0);
        CHECK_INT(n, ==, 0);
        free(v);
        CHECK_INT(rmdir(tmp), ==, 0);
        env_fini_hooked(&e, p);
}

/* A stock file is the daemon's alone (mode 0600) until it is handed out;
 * the pool it becomes has the pool mode (0660) under its name. */
TEST(stock_files_private)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char names[8][64];

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        wait_ready(p, 4, 1);
        CHECK_U64(stock_files(&e, names, 8), ==, 1);
        CHECK_INT(mode_of(&e, names[0]), ==, 0600);
        struct pool_req r = req("vm1", 0, 4);
        snprintf(r.label, sizeof(r.label), "libvirt:vm1");
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        CHECK_STR(v.label, "libvirt:vm1"); /* a hand-out is labelled as a warm is */
        CHECK_INT(mode_of(&e, "vm1"), ==, 0660);
        wait_ready(p, 4, 1);
        CHECK_U64(stock_files(&e, names, 8), ==, 1);
        CHECK_INT(mode_of(&e, names[0]), ==, 0600);
        struct pool_req cold = req("cold", 0, 2);
        CHECK_INT(create(p, &cold, &v, &err), ==, CREATED);
        CHECK_INT(mode_of(&e, "cold"), ==, 0660);
        wait_state(p, "cold", POOL_READY);
        pools_free(p);
        env_fini(&e);
}

/* A ready stock file with a holder is never handed out: removed, and the
 * pool warmed fresh.  HOW: 'l' a second hard link, 'f' an open descriptor
 * in another process (its write lease refused).  Only root's processes
 * can get either: no other process can resolve a name in the stock
 * directory (stock_dir_private).  The hand-out looks into no process:
 * no holder scan is counted. */
static void held_stock(char how)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char names[8][64], path[256], lnk[256];
        pid_t holder = 0;

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        wait_ready(p, 4, 1);
        CHECK_U64(stock_files(&e, names, 8), ==, 1);
        ino_t ino = inode_of(&e, names[0]);
        env_path(&e, names[0], path, sizeof(path));
        snprintf(lnk, sizeof(lnk), "%.127s/../held-link", e.mount);
        if (how == 'l') {
                CHECK_INT(link(path, lnk), ==, 0);
        } else {
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                CHECK(fd >= 0);
                holder = child_spawn();
                close(fd);
                env_show_pid(&e, holder);
        }
        fake_gate_set(true); /* the refill waits */
        struct pool_req r = req("vm1", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        CHECK(inode_of(&e, "vm1") != ino);
        CHECK(!file_exists(&e, names[0]));
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_hits, ==, 0);
        CHECK_U64(st.stock_holder_scans, ==, 0);
        fake_gate_set(false);
        wait_state(p, "vm1", POOL_READY);
        if (holder)
                child_kill(holder);
        else
                CHECK_INT(unlink(lnk), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* Stock files live in the mount's stock directory, the daemon's alone
 * (mode 0700, its user and group): no other process can reach a name in
 * it, so none can take a descriptor of a stock file after it got there.  A
 * stock directory left open (a mode of 0777) is closed at start; one that
 * is a symbolic link is refused. */
TEST(stock_dir_private)
{
        struct env e;
        struct problem err;
        char dir[256], names[8][64], path[256], elsewhere[256];
        struct pools *p = NULL;
        struct stat st;

        env_init(&e);
        snprintf(dir, sizeof(dir), "%.127s/%s", e.mount, POOLS_STOCK_DIR);
        CHECK_INT(mkdir(e.mount, 0750), ==, 0);
        snprintf(path, sizeof(path), "%.127s/%s", e.mount, POOLS_DIR_MARKER);
        write_file(path, "");
        CHECK_INT(mkdir(dir, 0777), ==, 0);
        CHECK_INT(chmod(dir, 0777), ==, 0);
        p = start(&e);
        CHECK_INT(stat(dir, &st), ==, 0);
        CHECK_INT(st.st_mode & 07777, ==, 0700);
        CHECK_INT(st.st_uid, ==, geteuid());
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        wait_ready(p, 4, 1);
        CHECK_U64(stock_files(&e, names, 8), ==, 1);
        env_path(&e, names[0], path, sizeof(path));
        CHECK(strstr(path, "/" POOLS_STOCK_DIR "/"));
        CHECK_INT(mode_of(&e, names[0]), ==, 0600);
        pools_free(p);

        /* A link in its place: refused, nothing followed. */
        snprintf(elsewhere, sizeof(elsewhere), "%.127s/elsewhere", e.root);
        CHECK_INT(rename(dir, elsewhere), ==, 0);
        CHECK_INT(symlink(elsewhere, dir), ==, 0);
        p = NULL;
        CHECK_INT(pools_new(&e.cfg, &p), ==, -ENOTDIR);
        CHECK(!p);
        CHECK_INT(unlink(dir), ==, 0);
        CHECK_INT(rename(elsewhere, dir), ==, 0);
        env_fini(&e);
}

TEST(linked_stock_not_handed_out) { held_stock('l'); }
TEST(open_stock_not_handed_out) { held_stock('f'); }

/* The same for a partial hand-out: a held smaller stock file is not grown
 * into the pool. */
TEST(held_stock_not_grown)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char names[8][64], path[256];

        env_init(&e);
        struct pools *p = start(&e);
        CHECK_INT(set1(p, 0, 2, 1, &err), ==, 0);
        wait_ready(p, 2, 1);
        CHECK_U64(stock_files(&e, names, 8), ==, 1);
        env_path(&e, names[0], path, sizeof(path));
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        pid_t holder = child_spawn();
        close(fd);
        env_show_pid(&e, holder);
        fake_gate_set(true);
        struct pool_req r = req("grown", 0, 6);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        CHECK(!file_exists(&e, names[0]));
        fake_gate_set(false);
        wait_state(p, "grown", POOL_READY);
        child_kill(holder);
        pools_free(p);
        env_fini(&e);
}

/* The change generation moves with each kind of change a publisher of the
 * stock counts (a target set, a stock file added and turning ready, a
 * hand-out, a claim, a release, a pool gone, the target cleared and its
 * files gone), never backwards, and not at all in a read. */
TEST(generation_moves_on_changes_not_reads)
{
        struct env e;
        struct problem err;
        struct pool_view v, *list;
        struct stock_view *sv;
        size_t n;

        env_init(&e);
        struct pools *p = start(&e);
        uint64_t g = pools_generation(p);
        for (int i = 0; i < 3; i++) {
                CHECK_INT(pools_get_stock(p, &sv, &n), ==, 0);
                free(sv);
                CHECK_INT(pools_list(p, &list, &n), ==, 0);
                free(list);
                CHECK_INT(pools_get(p, "nope", &v, NULL), ==, -ENOENT);
                CHECK_U64(pools_generation(p), ==, g);
        }
        /* A refused change is no change. */
        CHECK_INT(set1(p, 0, 0, 1, &err), <, 0);
        CHECK_U64(pools_generation(p), ==, g);

        fake_gate_set(true);
        CHECK_INT(set1(p, 0, 4, 1, &err), ==, 0);
        uint64_t g1 = pools_generation(p);
        CHECK_U64(g1, >, g);
        WAIT_UNTIL(stock_of(p, 4).warming == 1);
        uint64_t g2 = pools_generation(p);
        CHECK_U64(g2, >=, g1);  /* the file added (maybe before g1 was read) */
        fake_gate_set(false);
        wait_ready(p, 4, 1);
        uint64_t g3 = pools_generation(p);
        CHECK_U64(g3, >, g2);                           /* warming -> ready */

        fake_gate_set(true);                            /* the refill waits */
        struct pool_req r = req("vm1", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        uint64_t g4 = pools_generation(p);
        CHECK_U64(g4, >, g3);                           /* handed out */
        CHECK_INT(pools_claim(p, "vm1", &v, NULL), ==, 0);
        uint64_t g5 = pools_generation(p);
        CHECK_U64(g5, >, g4);                           /* claimed */
        CHECK_INT(pools_delete(p, "vm1", NULL), ==, 0);
        uint64_t g6 = pools_generation(p);
        CHECK_U64(g6, >, g5);                           /* released, gone */
        /* The refill's job must be free to end: clearing cancels it, and a
         * cancel waits for the worker held at the gate. */
        fake_gate_set(false);
        CHECK_INT(pools_set_stock(p, NULL, 0, &err), ==, 0);
        uint64_t g7 = pools_generation(p);
        CHECK_U64(g7, >, g6);                           /* cleared, its file going */
        char names[8][64];
        WAIT_UNTIL(stock_files(&e, names, 8) == 0);
        CHECK_U64(pools_generation(p), >=, g7);
        pools_free(p);
        env_fini(&e);
}

TEST_MAIN()
