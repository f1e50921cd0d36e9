/* Unit tests for recycling released pools into stock (pools_recycle.c) in pools_env.h's
 * environment: the two-node sysfs fixture, a tmpfs directory for the
 * hugetlbfs mount, the real engine with fake_engine.h's gated ops (a zero
 * job's chunk is one gated madvise, then real non-temporal zeroing), and a
 * /proc that holds this process only: a file the test maps itself is
 * "mapped by a process" for the daemon's maps scan.
 *
 * The fixture's free page count never moves: a test that wants no refill
 * writes free_hugepages 0, so a released pool is the only way back to the
 * stock. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "journal.h"
#include "pools.h"
#include "pools_env.h"

#define PAGES 4
#define PATTERN 0xa5

static struct pools *start_fast(struct env *e)
{
        e->cfg.recycle_check_ms = 20;
        return start(e);
}

/* A fresh environment and a registry on it. */
static struct pools *begin(struct env *e)
{
        env_init(e);
        return start_fast(e);
}

static void set_target(struct pools *p, uint64_t pages, uint64_t count)
{
        struct stock_target_record t = { .node = 0, .page_size = PAGE, .size_bytes = pages * PAGE,
                                          .count = count };
        struct problem err = {0};

        CHECK_INT(pools_set_stock(p, &t, 1, &err), ==, 0);
}

static void path_of(const struct env *e, const char *name, char *buf, size_t size)
{
        env_path(e, name, buf, size);
}

static ino_t ino_of(const struct env *e, const char *name)
{
        char path[256];
        struct stat st;

        path_of(e, name, path, sizeof(path));
        CHECK_INT(stat(path, &st), ==, 0);
        return st.st_ino;
}

/* Whether every byte of NAME's file is BYTE. */
static bool all_bytes(const struct env *e, const char *name, unsigned char byte)
{
        static unsigned char buf[1 << 16];
        char path[256];
        bool ok = true;
        ssize_t n;
        int fd;

        path_of(e, name, path, sizeof(path));
        fd = open(path, O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                for (ssize_t i = 0; i < n && ok; i++)
                        ok = buf[i] == byte;
        close(fd);
        return ok;
}

/* Every byte of NAME's file (PAGES pages) PATTERN, as a guest leaves it. */
static void fill(const struct env *e, const char *name, uint64_t pages)
{
        char path[256];

        path_of(e, name, path, sizeof(path));
        int fd = open(path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        unsigned char *m = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        memset(m, PATTERN, pages * PAGE);
        CHECK_INT(munmap(m, pages * PAGE), ==, 0);
        close(fd);
}

/* A ready pool NAME of PAGES pages, every byte PATTERN (as a guest left it). */
static void used_pool(struct pools *p, const struct env *e, const char *name)
{
        struct pool_req r = req(name, 0, PAGES);
        struct problem err;
        struct pool_view v;

        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, name, POOL_READY);
        fill(e, name, PAGES);
}

/* The only stock row in the journal (NULL: none). */
static const struct pool_record *stock_row(const struct journal *j)
{
        const struct pool_record *row = NULL;

        for (size_t i = 0; i < j->n_pools; i++)
                if (pool_state_is_stock(j->pools[i].state)) {
                        CHECK(!row);
                        row = &j->pools[i];
                }
        return row;
}

/* The journal's only stock row is in state WANT. */
static void check_row(const struct env *e, const char *want)
{
        struct journal *j = load(e);

        CHECK(stock_row(j));
        CHECK_STR(pool_state_name(stock_row(j)->state), want);
        journal_free(j);
}

/* Wait until the journal's stock row is in state WANT; its name in NAME. */
static bool journal_row_is(const struct env *e, enum pool_state want, char name[64])
{
        struct journal *j = load(e);
        const struct pool_record *row = stock_row(j);
        bool done = row && row->state == want;

        if (done)
                snprintf(name, 64, "%.63s", row->name);
        journal_free(j);
        return done;
}

static void wait_journal(const struct env *e, enum pool_state want, char name[64])
{
        WAIT_UNTIL(journal_row_is(e, want, name));
}

static void *map_file(const struct env *e, const char *name)
{
        char path[256];

        path_of(e, name, path, sizeof(path));
        int fd = open(path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        void *m = mmap(NULL, PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        close(fd);
        return m;
}

/* Release pool "vm" with the stock target of its size short and no free
 * page to refill it from: its file goes to the stock. */
static void release_to_short_stock(struct env *e, struct pools *p)
{
        fixture_write(e->sys, HP_DIR(0) "free_hugepages", "0\n");
        set_target(p, PAGES, 1);
        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
}

/* PATH opened with FLAGS (close-on-exec), or the test fails. */
static int open_or_fail(const char *path, int flags)
{
        int fd = open(path, flags | O_CLOEXEC);

        CHECK(fd >= 0);
        return fd;
}

/* A registry with pool "vm" used as a guest would; its file's path in
 * PATH. */
static struct pools *begin_used(struct env *e, char *path, size_t size)
{
        struct pools *p = begin(e);

        used_pool(p, e, "vm");
        path_of(e, "vm", path, size);
        return p;
}

/* Pool "vm" used, mapped by this process (its VM still runs) and released
 * with the target of its size short and no free page to refill it: a dirty
 * stock row, NAME.  The mapping in *RET_MAP. */
static struct pools *released_while_mapped(struct env *e, void **ret_map, char name[64])
{
        struct pools *p = begin(e);
        used_pool(p, e, "vm");
        *ret_map = map_file(e, "vm");
        release_to_short_stock(e, p);
        wait_journal(e, POOL_DIRTY, name);
        return p;
}

/* A moment (many of the upkeep's checks) later, released file NAME is
 * still a dirty row and still holds the guest's pattern. */
static void check_still_dirty(struct env *e, const char *name)
{
        usleep(300 * 1000);
        check_row(e, "dirty");
        CHECK(all_bytes(e, name, PATTERN));
}

/* The end of a test whose released file NAME was let go: it comes back to
 * the stock, all zero. */
static void end_recycled(struct env *e, struct pools *p, const char *name)
{
        wait_ready(p, PAGES, 1);
        CHECK(all_bytes(e, name, 0));
        pools_free(p);
        env_fini(e);
}

/* A pool of the stock target's size, used, released with the target short
 * (no free pages to refill): no longer a pool, its name free; its file is
 * a dirty stock row (journalled) while this process maps it, a recycling
 * one (journalled before any byte changes) once nothing does, then stock
 * (journalled), all zero, the same inode; the next create of that size
 * gets it as from_stock full. */
TEST(recycle_cycle)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char name[64];

        struct pools *p = begin(&e);
        used_pool(p, &e, "vm");
        ino_t ino = ino_of(&e, "vm");
        void *m = map_file(&e, "vm"); /* the VM still runs */
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");
        set_target(p, PAGES, 1);
        CHECK_U64(stock_of(p, PAGES).deficit, ==, 1);

        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, -ENOENT);
        CHECK(!file_exists(&e, "vm"));
        struct journal *j = load(&e);
        CHECK(!jpool(j, "vm"));
        CHECK(stock_row(j));
        CHECK_STR(pool_state_name(stock_row(j)->state), "dirty");
        snprintf(name, sizeof(name), "%.63s", stock_row(j)->name);
        journal_free(j);
        CHECK(ino_of(&e, name) == ino);
        struct stock_view s = stock_of(p, PAGES);
        CHECK_U64(s.recycling, ==, 1);
        CHECK_U64(s.dirty, ==, 1);
        CHECK_U64(s.deficit, ==, 0);
        struct pool_view *list;
        size_t n;
        CHECK_INT(pools_list(p, &list, &n), ==, 0);
        CHECK_U64(n, ==, 0);
        free(list);

        /* Mapped: many checks later, still dirty and untouched. */
        check_still_dirty(&e, name);

        /* Unmapped: saved as recycling before the first chunk is zeroed
         * (the gate holds the job before it writes). */
        fake_gate_set(true);
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        wait_journal(&e, POOL_RECYCLING, name);
        wait_inside();
        CHECK(all_bytes(&e, name, PATTERN));
        CHECK_U64(stock_of(p, PAGES).ready, ==, 0);
        CHECK_U64(stock_of(p, PAGES).recycling, ==, 1);
        CHECK_U64(stock_of(p, PAGES).dirty, ==, 0);
        fake_gate_set(false);
        wait_ready(p, PAGES, 1);
        wait_journal(&e, POOL_STOCK, name);
        CHECK(all_bytes(&e, name, 0));
        CHECK(ino_of(&e, name) == ino);
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_recycle_kept, ==, 1);
        CHECK_U64(st.stock_recycled, ==, 1);
        CHECK_U64(st.stock_recycled_bytes, ==, PAGES * PAGE);
        CHECK_U64(st.released_delete, ==, 1);

        struct pool_req r = req("vm2", 0, PAGES);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        CHECK(ino_of(&e, "vm2") == ino);
        CHECK(all_bytes(&e, "vm2", 0));
        pools_free(p);
        env_fini(&e);
}

/* A process that holds the file open without mapping it (the maps scan
 * cannot see it) keeps it dirty too: the kernel refuses the daemon a
 * write lease while another open file of the inode exists. */
TEST(open_file_waits)
{
        struct env e;
        char name[64], path[256];

        struct pools *p = begin_used(&e, path, sizeof(path));
        int fd = open_or_fail(path, O_RDONLY);
        release_to_short_stock(&e, p);
        wait_journal(&e, POOL_DIRTY, name);
        check_still_dirty(&e, name);
        CHECK_U64(stock_of(p, PAGES).dirty, ==, 1);
        close(fd);
        end_recycled(&e, p, name);
}

/* A private mount namespace for this test (its process only), so the pool
 * directory can be made read-only as an operator's remount would; before
 * any thread exists (unshare refuses a threaded process). */
static void private_mounts(void)
{
        if (unshare(CLONE_NEWNS) < 0)
                SKIP("no mount namespace (unshare refused)");
        CHECK_INT(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), ==, 0);
}

static void set_read_only(const char *dir, bool ro)
{
        if (ro) {
                CHECK_INT(mount(dir, dir, NULL, MS_BIND, NULL), ==, 0);
                CHECK_INT(mount(NULL, dir, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL), ==, 0);
        } else {
                CHECK_INT(umount(dir), ==, 0);
        }
}

/* A release whose file can be neither renamed for recycling nor removed (a
 * read-only mount) fails and changes nothing: the pool stays, under its
 * name with its file, the journal holds it and no dirty row, the stock
 * counts nothing recycling.  Once the mount is writable again the same
 * DELETE recycles it, and the name takes a new pool. */
TEST(release_on_read_only_mount_fails_cleanly)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        char name[64];

        private_mounts();
        struct pools *p = begin(&e);
        used_pool(p, &e, "vm");
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");
        set_target(p, PAGES, 1);
        set_read_only(e.mount, true);
        CHECK_INT(pools_delete(p, "vm", NULL), ==, -EROFS);
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, 0);
        CHECK_INT(v.state, ==, POOL_READY);
        CHECK(file_exists(&e, "vm"));
        struct journal *j = load(&e);
        CHECK(jpool(j, "vm"));
        CHECK(!stock_row(j));
        journal_free(j);
        CHECK_U64(stock_of(p, PAGES).recycling, ==, 0);
        CHECK_U64(stock_of(p, PAGES).deficit, ==, 1);

        set_read_only(e.mount, false);
        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
        CHECK(!file_exists(&e, "vm"));
        wait_journal(&e, POOL_STOCK, name); /* recycled: nothing maps it */
        CHECK(all_bytes(&e, name, 0));
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "64\n");
        struct pool_req r = req("vm", 0, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "vm", POOL_READY);
        pools_free(p);
        env_fini(&e);
}

/* Whether the text FD (a file this test wrote stderr to) holds NEEDLE. */
static bool log_has(int fd, const char *needle)
{
        static char buf[1 << 16];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        CHECK(n >= 0);
        buf[n] = '\0';
        return strstr(buf, needle) != NULL;
}

/* A dirty file replaced by another file of its name (not the daemon's) is
 * not recycled, and is left where it is: the log says so, not "removing
 * it".  The row goes; the stranger's file stays with its bytes. */
TEST(replaced_dirty_file_is_left_and_logged_so)
{
        struct env e;
        char name[64], path[256], other[256];
        void *m;
        char tmpl[] = "/tmp/hpw-log.XXXXXX";
        int log_fd = mkstemp(tmpl);

        CHECK(log_fd >= 0);
        unlink(tmpl);
        CHECK(dup2(log_fd, STDERR_FILENO) == STDERR_FILENO);
        struct pools *p = released_while_mapped(&e, &m, name);
        path_of(&e, name, path, sizeof(path));
        path_of(&e, "stranger", other, sizeof(other));
        int fd = open(other, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        close(fd);
        CHECK_INT(rename(other, path), ==, 0);
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        struct pools_stats st;
        WAIT_UNTIL((pools_get_stats(p, &st), st.stock_recycle_discarded == 1));
        CHECK(file_exists(&e, name));
        CHECK(log_has(log_fd, "leaving the file"));
        CHECK(!log_has(log_fd, "removing it"));
        pools_free(p);
        env_fini(&e);
        unlink(path);
}

/* The name of a recycled pool is free at once: a new pool of that name. */
TEST(name_free_at_once)
{
        struct env e;

        struct pools *p = begin(&e);
        used_pool(p, &e, "vm");
        void *m = map_file(&e, "vm");
        release_to_short_stock(&e, p);
        CHECK_U64(stock_of(p, PAGES).dirty, ==, 1);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "64\n");
        struct pool_req r = req("vm", 0, 2);
        struct problem err;
        struct pool_view v;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        wait_state(p, "vm", POOL_READY);
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* No deficit (the target is full): the released file is removed. */
TEST(no_deficit_removes)
{
        struct env e;

        struct pools *p = begin(&e);
        set_target(p, PAGES, 1);
        wait_ready(p, PAGES, 1);
        used_pool(p, &e, "vm2"); /* takes the stock file; wait for the refill */
        wait_ready(p, PAGES, 1);
        CHECK_U64(stock_of(p, PAGES).deficit, ==, 0);
        CHECK_INT(pools_delete(p, "vm2", NULL), ==, 0);
        CHECK(!file_exists(&e, "vm2"));
        struct stock_view s = stock_of(p, PAGES);
        CHECK_U64(s.recycling, ==, 0);
        CHECK_U64(s.ready, ==, 1);
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_recycle_kept, ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* ?recycle=false: removed even with a deficit; and a pool of another size,
 * or one that is not ready, is never kept. */
TEST(opt_out_and_other_sizes)
{
        struct env e;
        struct problem err;
        struct pool_view v;

        struct pools *p = begin(&e);
        used_pool(p, &e, "a");
        used_pool(p, &e, "b");
        struct pool_req r = req("other", 0, PAGES + 1);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "other", POOL_READY);
        fake_gate_set(true);
        struct pool_req w = req("warm", 0, PAGES);
        CHECK_INT(create(p, &w, &v, &err), ==, CREATED);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");
        set_target(p, PAGES, 2);
        CHECK_INT(pools_delete_recycle(p, "a", false, NULL), ==, 0);
        CHECK_INT(pools_delete(p, "other", NULL), ==, 0);
        pthread_t t = open_gate_soon();
        CHECK_INT(pools_delete(p, "warm", NULL), ==, 0);
        pthread_join(t, NULL);
        CHECK(!file_exists(&e, "a"));
        CHECK(!file_exists(&e, "other"));
        CHECK(!file_exists(&e, "warm"));
        CHECK_U64(stock_of(p, PAGES).recycling, ==, 0);
        CHECK_U64(stock_of(p, PAGES).deficit, ==, 2);
        /* and the default recycles */
        CHECK_INT(pools_delete(p, "b", NULL), ==, 0);
        CHECK_U64(stock_of(p, PAGES).recycling + stock_of(p, PAGES).ready, ==, 1);
        pools_free(p);
        env_fini(&e);
}

/* A TTL expiry is a release too: recycled when the target is short. */
TEST(ttl_release_recycles)
{
        struct env e;
        struct problem err;
        struct pool_view v;

        struct pools *p = begin(&e);
        struct pool_req r = req("ttl", 0, PAGES);
        r.ttl_seconds = 1;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "ttl", POOL_READY);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");
        set_target(p, PAGES, 1);
        wait_ready(p, PAGES, 1);
        CHECK(!file_exists(&e, "ttl"));
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.pools_expired, ==, 1);
        CHECK_U64(st.stock_recycled, ==, 1);
        pools_free(p);
        env_fini(&e);
}

/* A zero job that fails: the file is removed, never stock. */
TEST(zero_failure_removes)
{
        struct env e;
        char name[64];

        struct pools *p = begin(&e);
        used_pool(p, &e, "vm");
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");
        set_target(p, PAGES, 1);
        fake_gate_set(true);
        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
        wait_journal(&e, POOL_RECYCLING, name);
        fake_gate_fail_with(EIO);
        fake_gate_set(false);
        WAIT_UNTIL(!file_exists(&e, name));
        fake_gate_fail_with(0);
        struct pools_stats st;
        WAIT_UNTIL((pools_get_stats(p, &st), st.stock_recycle_discarded == 1));
        CHECK_U64(st.stock_recycled, ==, 0);
        /* The file goes first, then the row. */
        WAIT_UNTIL(stock_of(p, PAGES).recycling == 0);
        CHECK_U64(stock_of(p, PAGES).ready, ==, 0);
        struct journal *j = load(&e);
        CHECK(!stock_row(j));
        journal_free(j);
        pools_free(p);
        env_fini(&e);
}

/* A file whose pages went (its VM gave them back) is not zeroed: removed. */
TEST(holes_removed)
{
        struct env e;
        char name[64], path[256];
        void *m;
        struct pools *p = released_while_mapped(&e, &m, name);

        path_of(&e, name, path, sizeof(path));
        int fd = open(path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK_INT(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, PAGE), ==, 0);
        close(fd);
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        /* The file goes first, then the row. */
        WAIT_UNTIL(stock_of(p, PAGES).recycling == 0);
        CHECK(!file_exists(&e, name));
        pools_free(p);
        env_fini(&e);
}

/* Killed mid-recycle (the journal says recycling, the zeroing stopped
 * half-way): at start the row is not handed out, is zeroed again from the
 * start, and only then joins the stock. */
TEST(restart_mid_recycle)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char name[64];

        struct pools *p = begin(&e);
        struct pool_req big = req("vm", 0, 16);
        CHECK_INT(create(p, &big, &v, &err), ==, CREATED);
        wait_state(p, "vm", POOL_READY);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");
        struct stock_target_record t = { .node = 0, .page_size = PAGE, .size_bytes = 16 * PAGE, .count = 1 };
        CHECK_INT(pools_set_stock(p, &t, 1, &err), ==, 0);
        fill(&e, "vm", 16);
        fake_gate_set(true);
        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
        wait_journal(&e, POOL_RECYCLING, name);
        wait_inside();
        /* Two low-priority chunks of 16 MiB: stopping cancels after the
         * first, half the file zeroed. */
        pthread_t th = open_gate_soon();
        pools_free(p);
        pthread_join(th, NULL);
        check_row(&e, "recycling");
        CHECK(!all_bytes(&e, name, 0));

        fake_gate_set(true);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "32\n");
        p = start_fast(&e);
        struct stock_view s = stock_of(p, 16);
        CHECK_U64(s.ready, ==, 0);
        CHECK_U64(s.recycling, ==, 1);
        struct pool_req again = req("vm3", 0, 16);
        CHECK_INT(create(p, &again, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_NONE);
        CHECK(file_exists(&e, name));
        fake_gate_set(false);
        wait_state(p, "vm3", POOL_READY);
        wait_ready(p, 16, 1);
        CHECK(all_bytes(&e, name, 0));
        struct journal *j = load(&e);
        CHECK_STR(pool_state_name(jpool(j, name)->state), "stock");
        journal_free(j);
        pools_free(p);
        env_fini(&e);
}

/* Restart with a dirty row whose file is still mapped: it stays dirty and
 * untouched, and is recycled once unmapped. */
TEST(restart_dirty)
{
        struct env e;
        char name[64];
        void *m;
        struct pools *p = released_while_mapped(&e, &m, name);

        pools_free(p);

        p = start_fast(&e);
        usleep(200 * 1000);
        struct stock_view s = stock_of(p, PAGES);
        CHECK_U64(s.dirty, ==, 1);
        CHECK_U64(s.ready, ==, 0);
        CHECK(all_bytes(&e, name, PATTERN));
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        end_recycled(&e, p, name);
}

/* Giving way (a reservation needs pages): a dirty file still mapped frees
 * nothing and is kept; a recycling one is removed, its zero job
 * cancelled. */
TEST(gives_way)
{
        struct env e;
        struct reserve_result res;
        char name[64];
        void *m;
        struct pools *p = released_while_mapped(&e, &m, name);

        /* 4 of 64 pages in use (the dirty file); shrink to 2. */
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "60\n");
        struct reserve_req rq = { .node = 0, .page_size = PAGE, .count = 2 };
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_given_way, ==, 0);
        CHECK(file_exists(&e, name));
        CHECK_U64(stock_of(p, PAGES).dirty, ==, 1);

        fake_gate_set(true);
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        wait_journal(&e, POOL_RECYCLING, name);
        wait_inside();
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "64\n");
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "60\n");
        pthread_t t = open_gate_soon();
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        pthread_join(t, NULL);
        pools_get_stats(p, &st);
        CHECK_U64(st.stock_given_way, ==, 1);
        CHECK_U64(st.stock_recycled, ==, 0);
        CHECK(!file_exists(&e, name));
        pools_free(p);
        env_fini(&e);
}

/* Trimming the targets removes files on their way back too. */
TEST(trim_removes_dirty)
{
        struct env e;
        struct problem err;
        char name[64];
        void *m;
        struct pools *p = released_while_mapped(&e, &m, name);

        CHECK_INT(pools_set_stock(p, NULL, 0, &err), ==, 0);
        CHECK(!file_exists(&e, name));
        struct journal *j = load(&e);
        CHECK(!stock_row(j));
        journal_free(j);
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A release deciding whether to recycle while a refill of the same target
 * is between the deficit it saw and its row in the registry: the refill's
 * file counts, so the target never ends with more files than it asks for.
 * The sysfs hook releases the pool from inside the refill's read of the
 * node's counters (the upkeep thread, admit_lock held, `lock` not). */
static struct {
        struct pools *p;
        bool armed;
        int deleted;
} race;

static int race_read(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        char me[16] = "";

        pthread_getname_np(pthread_self(), me, sizeof(me));
        if (race.armed && strcmp(me, "hpw-pool-upkeep") == 0 && strstr(path, "/free_hugepages")) {
                race.armed = false;
                race.deleted = pools_delete(race.p, "vm", NULL) == 0 ? 1 : -1;
        }
        return sysfs_default_ops.read_u64(fs, path, ret, userdata);
}

TEST(refill_and_release_race)
{
        static const struct sysfs_ops ops = { .read_u64 = race_read };
        struct env e;

        env_init(&e);
        sysfs_set_ops(e.fs, &ops, NULL);
        struct pools *p = start_fast(&e);
        race.p = p;
        used_pool(p, &e, "vm");
        race.armed = true;
        set_target(p, PAGES, 1);
        wait_ready(p, PAGES, 1);
        CHECK_INT(race.deleted, ==, 1);
        CHECK(!file_exists(&e, "vm"));
        /* Let a wrongly kept file come back as stock before counting. */
        usleep(200 * 1000);
        struct stock_view s = stock_of(p, PAGES);
        CHECK_U64((uint64_t)s.ready + s.warming + s.recycling, ==, 1);
        struct journal *j = load(&e);
        unsigned rows = 0;
        for (size_t i = 0; i < j->n_pools; i++)
                rows += pool_state_is_stock(j->pools[i].state);
        CHECK_U64(rows, ==, 1);
        journal_free(j);
        env_fini_hooked(&e, p);
}

/* A released pool is made private (0600) at once: no new unprivileged
 * open of a dirty file. */
TEST(released_file_private)
{
        struct env e;
        void *m;
        char name[64];

        struct pools *p = released_while_mapped(&e, &m, name);
        CHECK_INT(mode_of(&e, name), ==, 0600);
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        end_recycled(&e, p, name);
}

/* An O_PATH descriptor held across the DELETE by another process (no
 * mapping, and no open file a lease would see): the file stays dirty and
 * untouched while it is held, and is recycled once the holder goes. */
TEST(opath_holder_waits)
{
        struct env e;
        char name[64], path[256];

        struct pools *p = begin_used(&e, path, sizeof(path));
        int fd = open_or_fail(path, O_PATH);
        pid_t holder = child_spawn();
        close(fd);
        env_show_pid(&e, holder);
        release_to_short_stock(&e, p);
        wait_journal(&e, POOL_DIRTY, name);
        check_still_dirty(&e, name);
        child_kill(holder);
        end_recycled(&e, p, name);
}

/* A second hard link made while the pool was in use: the released file is
 * never zeroed into the stock (another name reaches its pages): removed. */
TEST(linked_release_discarded)
{
        struct env e;
        char path[256], lnk[256];

        struct pools *p = begin_used(&e, path, sizeof(path));
        snprintf(lnk, sizeof(lnk), "%.127s/../vm-link", e.mount);
        CHECK_INT(link(path, lnk), ==, 0);
        release_to_short_stock(&e, p);
        struct pools_stats st;
        struct stock_view s;
        /* The discard is counted before its row goes: wait for both. */
        WAIT_UNTIL((pools_get_stats(p, &st), s = stock_of(p, PAGES),
                    st.stock_recycle_discarded == 1 && s.ready + s.recycling == 0));
        CHECK_U64(st.stock_recycled, ==, 0);
        struct journal *j = load(&e);
        CHECK(!stock_row(j));
        journal_free(j);
        CHECK_INT(unlink(lnk), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A pool handed to one user (file_uid, file_gid: mode 0600, that owner) --
 * from the stock or warmed -- is the daemon's again (its user, 0600) the
 * moment it is released, and a PUT asking another owner is refused. */
TEST(owned_pool_file)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        char name[64], path[256];
        struct stat st;

        if (geteuid() != 0)
                SKIP("chown to another user needs root");
        struct pools *p = begin(&e);
        set_target(p, PAGES, 1);
        wait_ready(p, PAGES, 1);
        struct pool_req r = req("vm", 0, PAGES);
        r.file_owned = true;
        r.file_uid = 65534;
        r.file_gid = 65533;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        CHECK(v.file_owned);
        path_of(&e, "vm", path, sizeof(path));
        CHECK_INT(stat(path, &st), ==, 0);
        CHECK_INT(st.st_mode & 07777, ==, 0600);
        CHECK_INT(st.st_uid, ==, 65534);
        CHECK_INT(st.st_gid, ==, 65533);
        struct pool_req other = r;
        other.file_uid = 1000;
        CHECK_INT(create(p, &other, &v, &err), ==, -EEXIST);
        CHECK(strstr(err.detail, "owner"));
        other.file_owned = false;
        CHECK_INT(create(p, &other, &v, &err), ==, -EEXIST);
        CHECK_INT(create(p, &r, &v, &err), ==, EXISTED);
        struct journal *j = load(&e);
        CHECK(jpool(j, "vm")->file_owned);
        CHECK_INT(jpool(j, "vm")->file_uid, ==, 65534);
        CHECK_INT(jpool(j, "vm")->file_gid, ==, 65533);
        journal_free(j);

        /* A warm of its own, too. */
        struct pool_req cold = r;
        snprintf(cold.name, sizeof(cold.name), "cold");
        cold.size_bytes = 2 * PAGE;
        CHECK_INT(create(p, &cold, &v, &err), ==, CREATED);
        path_of(&e, "cold", path, sizeof(path));
        CHECK_INT(stat(path, &st), ==, 0);
        CHECK_INT(st.st_mode & 07777, ==, 0600);
        CHECK_INT(st.st_uid, ==, 65534);
        wait_state(p, "cold", POOL_READY);

        /* Released with the target short: the dirty file is ours. */
        wait_ready(p, PAGES, 1);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");
        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
        /* the stock is full again: vm's file is removed, not kept */
        CHECK(!file_exists(&e, "vm"));
        struct pool_req again = r;
        snprintf(again.name, sizeof(again.name), "vm2");
        CHECK_INT(create(p, &again, &v, &err), ==, CREATED);
        CHECK_INT(v.from_stock, ==, POOL_FROM_STOCK_FULL);
        void *m = map_file(&e, "vm2"); /* its VMM still runs: it stays dirty */
        CHECK_INT(pools_delete(p, "vm2", NULL), ==, 0);
        wait_journal(&e, POOL_DIRTY, name);
        path_of(&e, name, path, sizeof(path));
        CHECK_INT(stat(path, &st), ==, 0);
        CHECK_INT(st.st_mode & 07777, ==, 0600);
        CHECK_INT(st.st_uid, ==, geteuid());
        CHECK_INT(st.st_gid, ==, getegid());
        CHECK_INT(munmap(m, PAGES * PAGE), ==, 0);
        end_recycled(&e, p, name);
}

TEST_MAIN()
