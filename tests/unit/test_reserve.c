/* reserve: full, partial, refused (restored), floor refusal (nothing
 * written), shrink with in-use pages, write and read-back errors.
 *
 * A fixture tree is plain files, so on its own every write "succeeds" in
 * full.  The kernel's lies are played through the sysfs ops seam by a small
 * model of the kernel: a cap on how many pages the node can hold
 * (fragmentation), pages in use (nr - free) that shrinking cannot release,
 * and injected errors on chosen writes or reads. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fixture.h"
#include "reserve.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

#define NODE0_2M "devices/system/node/node0/hugepages/hugepages-2048kB/"
#define NODE0_MEMFREE (UINT64_C(5213476) * KIB) /* two-node fixture */

struct fake_kernel {
        uint64_t cap;        /* most pages the node can hold */
        int fail_write_nr;   /* fail this write (1-based) of nr_hugepages ... */
        int fail_write_err;  /* ... with this errno */
        int fail_read_after; /* fail reads of nr_hugepages after this many writes (0: never) */
        int writes;
        uint64_t written[8];
};

static void sibling(const char *path, const char *name, char *buf, size_t len)
{
        const char *slash = strrchr(path, '/');

        snprintf(buf, len, "%.*s/%s", (int)(slash - path), path, name);
}

static bool is_nr(const char *path)
{
        size_t n = strlen(path);

        return n >= 13 && strcmp(path + n - 13, "/nr_hugepages") == 0;
}

static int fake_write(const struct sysfs *fs, const char *path, uint64_t v, void *userdata)
{
        struct fake_kernel *k = userdata;
        uint64_t prev, free_, in_use, now;
        char p_free[256], p_surp[256];
        int r;

        if (!is_nr(path))
                return sysfs_default_ops.write_u64(fs, path, v, NULL);
        if (k->writes < (int)ARRAY_SIZE(k->written))
                k->written[k->writes] = v;
        k->writes++;
        if (k->writes == k->fail_write_nr)
                return -k->fail_write_err;

        sibling(path, "free_hugepages", p_free, sizeof(p_free));
        sibling(path, "surplus_hugepages", p_surp, sizeof(p_surp));
        CHECK_INT(sysfs_default_ops.read_u64(fs, path, &prev, NULL), ==, 0);
        CHECK_INT(sysfs_default_ops.read_u64(fs, p_free, &free_, NULL), ==, 0);
        in_use = prev - free_;
        now = v < k->cap ? v : k->cap;
        if (now < in_use)
                now = in_use;
        r = sysfs_default_ops.write_u64(fs, path, now, NULL);
        CHECK_INT(r, ==, 0);
        CHECK_INT(sysfs_default_ops.write_u64(fs, p_free, now - in_use, NULL), ==, 0);
        CHECK_INT(sysfs_default_ops.write_u64(fs, p_surp, now > v ? now - v : 0, NULL), ==, 0);
        return 0; /* like the kernel: success, whatever it managed */
}

static int fake_read(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        struct fake_kernel *k = userdata;

        if (k->fail_read_after && k->writes >= k->fail_read_after && is_nr(path))
                return -EIO;
        return sysfs_default_ops.read_u64(fs, path, ret, NULL);
}

static const struct sysfs_ops fake_ops = { .read_u64 = fake_read, .write_u64 = fake_write };

struct env {
        char *dir;
        struct sysfs *fs;
        struct fake_kernel k;
};

static void env_open(struct env *e, const char *fixture)
{
        memset(e, 0, sizeof(*e));
        e->dir = fixture_copy(fixture);
        e->k.cap = UINT64_MAX;
        CHECK_INT(sysfs_open(e->dir, &e->fs), ==, 0);
        sysfs_set_ops(e->fs, &fake_ops, &e->k);
}

static void env_close(struct env *e)
{
        sysfs_close(e->fs);
        fixture_remove(e->dir);
}

static uint64_t file_u64(struct env *e, const char *rel)
{
        uint64_t v;

        CHECK_INT(sysfs_default_ops.read_u64(e->fs, rel, &v, NULL), ==, 0);
        return v;
}

static const struct reserve_result poison = { 111, 111, 111, 111, 111, true, 111, 111, 111 };

static void check_untouched(const struct reserve_result *r)
{
        CHECK_U64(r->previous, ==, poison.previous);
        CHECK_U64(r->requested, ==, poison.requested);
        CHECK_U64(r->achieved, ==, poison.achieved);
        CHECK_U64(r->total, ==, poison.total);
        CHECK_U64(r->free, ==, poison.free);
        CHECK(r->complete == poison.complete);
}

TEST(full)
{
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 20 };
        struct reserve_result res = poison;
        struct env e;

        env_open(&e, "two-node");
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK_U64(res.previous, ==, 16);
        CHECK_U64(res.requested, ==, 20);
        CHECK_U64(res.achieved, ==, 20);
        CHECK_U64(res.total, ==, 20);
        CHECK_U64(res.free, ==, 16);
        CHECK(res.complete);
        CHECK_U64(file_u64(&e, NODE0_2M "nr_hugepages"), ==, 20);
        CHECK_INT(e.k.writes, ==, 1);
        /* The other node and size are left alone. */
        CHECK_U64(file_u64(&e, "devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"), ==, 8);
        CHECK_U64(file_u64(&e, "devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"), ==, 1);

        /* Asking for what is there writes nothing. */
        res = poison;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK_INT(e.k.writes, ==, 1);
        CHECK_U64(res.previous, ==, 20);
        CHECK_U64(res.achieved, ==, 20);
        CHECK(res.complete);
        env_close(&e);
}

TEST(partial_allowed)
{
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 24, .allow_partial = true };
        struct reserve_result res = poison;
        struct env e;

        env_open(&e, "two-node");
        e.k.cap = 18;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK_U64(res.previous, ==, 16);
        CHECK_U64(res.requested, ==, 24);
        CHECK_U64(res.achieved, ==, 18);
        CHECK_U64(res.total, ==, 18);
        CHECK_U64(res.free, ==, 14);
        CHECK(!res.complete);
        CHECK_INT(e.k.writes, ==, 1);
        CHECK_U64(file_u64(&e, NODE0_2M "nr_hugepages"), ==, 18);
        env_close(&e);
}

TEST(shortfall_restores)
{
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 24 };
        struct reserve_result res = poison;
        struct env e;

        env_open(&e, "two-node");
        e.k.cap = 18;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -EAGAIN);
        CHECK_U64(res.previous, ==, 16);
        CHECK_U64(res.requested, ==, 24);
        CHECK_U64(res.achieved, ==, 18);
        CHECK_U64(res.total, ==, 16);
        CHECK_U64(res.free, ==, 12);
        CHECK(!res.complete);
        CHECK_INT(e.k.writes, ==, 2);
        CHECK_U64(e.k.written[0], ==, 24);
        CHECK_U64(e.k.written[1], ==, 16);
        CHECK_U64(file_u64(&e, NODE0_2M "nr_hugepages"), ==, 16);
        CHECK_U64(file_u64(&e, NODE0_2M "free_hugepages"), ==, 12);

        /* A node that cannot grow at all: achieved is the old count. */
        e.k.cap = 16;
        e.k.writes = 0;
        res = poison;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -EAGAIN);
        CHECK_U64(res.achieved, ==, 16);
        CHECK_U64(res.total, ==, 16);

        /* The restore itself fails: that error wins, the result is not filled. */
        e.k.cap = 18;
        e.k.writes = 0;
        e.k.fail_write_nr = 2;
        e.k.fail_write_err = EIO;
        res = poison;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -EIO);
        check_untouched(&res);
        env_close(&e);
}

/* Exactly enough above the floor for 4 more pages: allowed. */
TEST(floor_allows_growth_up_to_it)
{
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 20 };
        struct reserve_result res = poison;
        struct env e;

        env_open(&e, "two-node");
        req.floor_bytes = NODE0_MEMFREE - 4 * 2 * MIB;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK(res.complete);
        CHECK_INT(e.k.writes, ==, 1);
        env_close(&e);
}

/* The two-node fixture with node 0's 2M pool at 16 pages, 12 free, written
 * behind the fake kernel's back (e->k.writes stays 0). */
static void floor_env(struct env *e)
{
        env_open(e, "two-node");
        CHECK_INT(sysfs_default_ops.write_u64(e->fs, NODE0_2M "nr_hugepages", 16, NULL), ==, 0);
        CHECK_INT(sysfs_default_ops.write_u64(e->fs, NODE0_2M "free_hugepages", 12, NULL), ==, 0);
}

/* One page more than the floor allows: refused, nothing written, counts
 * reported; the same for a floor above free memory, and for a count so
 * large the byte total overflows. */
TEST(floor_refuses_growth_past_it)
{
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 21 };
        struct reserve_result res = poison;
        char before[64], after[64];
        struct env e;

        floor_env(&e);
        fixture_read(e.dir, NODE0_2M "nr_hugepages", before, sizeof(before));
        req.floor_bytes = NODE0_MEMFREE - 4 * 2 * MIB;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOMEM);
        CHECK_INT(e.k.writes, ==, 0);
        CHECK_U64(res.previous, ==, 16);
        CHECK_U64(res.requested, ==, 21);
        CHECK_U64(res.achieved, ==, 16);
        CHECK_U64(res.total, ==, 16);
        CHECK_U64(res.free, ==, 12);
        CHECK(!res.complete);
        /* ... and what would have worked: the floor, the free memory, and
         * the largest count that keeps the floor free (16 + 4). */
        CHECK_U64(res.floor_bytes, ==, NODE0_MEMFREE - 4 * 2 * MIB);
        CHECK_U64(res.mem_free_bytes, ==, NODE0_MEMFREE);
        CHECK_U64(res.max_count, ==, 20);
        fixture_read(e.dir, NODE0_2M "nr_hugepages", after, sizeof(after));
        CHECK_STR(after, before);

        /* Floor above free memory (nothing more fits: max_count is the
         * current count); and a count so large the byte total overflows. */
        req.floor_bytes = NODE0_MEMFREE + 1;
        req.count = 17;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOMEM);
        CHECK_U64(res.max_count, ==, 16);
        CHECK_U64(res.floor_bytes, ==, NODE0_MEMFREE + 1);
        req.floor_bytes = 0;
        req.count = UINT64_MAX;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOMEM);
        CHECK_INT(e.k.writes, ==, 0);
        env_close(&e);
}

/* The floor does not stop shrinking. */
TEST(floor_does_not_stop_shrinking)
{
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 12, .floor_bytes = UINT64_MAX };
        struct reserve_result res = poison;
        struct env e;

        floor_env(&e);
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK(res.complete);
        CHECK_INT(e.k.writes, ==, 1);
        env_close(&e);
}

/* Missing meminfo: the floor cannot be checked, so growing writes nothing. */
TEST(floor_unknown_refuses_growth)
{
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 17 };
        struct reserve_result res = poison;
        struct env e;

        floor_env(&e);
        fixture_unlink(e.dir, "devices/system/node/node0/meminfo");
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOENT);
        check_untouched(&res);
        CHECK_INT(e.k.writes, ==, 0);
        env_close(&e);
}

TEST(shrink_in_use)
{
        /* two-node node0 2M: 16 pages, 12 free, so 4 in use. */
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 10 };
        struct reserve_result res = poison;
        struct env e;

        env_open(&e, "two-node");
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK_U64(res.previous, ==, 16);
        CHECK_U64(res.achieved, ==, 10);
        CHECK_U64(res.total, ==, 10);
        CHECK_U64(res.free, ==, 6);
        CHECK(res.complete);

        req.count = 2;
        res = poison;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK_U64(res.previous, ==, 10);
        CHECK_U64(res.requested, ==, 2);
        CHECK_U64(res.achieved, ==, 4);
        CHECK_U64(res.total, ==, 4);
        CHECK_U64(res.free, ==, 0);
        CHECK(!res.complete);
        CHECK_INT(e.k.writes, ==, 2); /* not "restored" */
        CHECK_U64(file_u64(&e, NODE0_2M "surplus_hugepages"), ==, 2);

        /* Shrinking ignores allow_partial: the same truth either way. */
        req.count = 0;
        req.allow_partial = true;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK_U64(res.achieved, ==, 4);
        CHECK(!res.complete);
        env_close(&e);
}

TEST(errors)
{
        struct reserve_req req = { .node = 0, .page_size = 2 * MIB, .count = 20 };
        struct reserve_result res = poison;
        char before[64], after[64];
        struct env e;

        env_open(&e, "two-node");
        fixture_read(e.dir, NODE0_2M "nr_hugepages", before, sizeof(before));
        e.k.fail_write_nr = 1;
        e.k.fail_write_err = EIO;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -EIO);
        check_untouched(&res);
        fixture_read(e.dir, NODE0_2M "nr_hugepages", after, sizeof(after));
        CHECK_STR(after, before);

        /* Read-only attribute (root ignores file modes, so it is injected). */
        e.k.writes = 0;
        e.k.fail_write_err = EACCES;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -EACCES);
        check_untouched(&res);

        /* The read-back fails. */
        e.k.writes = 0;
        e.k.fail_write_nr = 0;
        e.k.fail_read_after = 1;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -EIO);
        check_untouched(&res);
        e.k.fail_read_after = 0;

        /* Garbage counters. */
        fixture_write(e.dir, NODE0_2M "nr_hugepages", "lots\n");
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -EINVAL);
        fixture_write(e.dir, NODE0_2M "nr_hugepages", "16\n");
        fixture_write(e.dir, NODE0_2M "free_hugepages", "\n");
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -EINVAL);
        check_untouched(&res);
        env_close(&e);
}

TEST(unknown)
{
        struct reserve_req req = { .node = 1, .page_size = 2 * MIB, .count = 1 };
        struct reserve_result res = poison;
        struct env e;

        env_open(&e, "sparse");
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOENT); /* no node 1 */
        req.node = -1;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOENT);
        req.node = 2;
        req.page_size = 4 * MIB;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOENT);
        req.page_size = 0;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOENT);
        req.page_size = 3000;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOENT);
        check_untouched(&res);
        CHECK_INT(e.k.writes, ==, 0);

        /* Node 2 (non-contiguous id), 1 GiB pages: 1 -> 2 fits in its 2 GiB free. */
        req.page_size = GIB;
        req.count = 2;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, 0);
        CHECK_U64(res.previous, ==, 1);
        CHECK_U64(res.total, ==, 2);
        CHECK(res.complete);
        CHECK_U64(file_u64(&e, "devices/system/node/node2/hugepages/hugepages-1048576kB/nr_hugepages"), ==, 2);
        /* 2 -> 4 needs 2 GiB more than the 2 GiB free minus a 1 byte floor. */
        req.count = 4;
        req.floor_bytes = 1;
        CHECK_INT(reserve_apply(e.fs, &req, &res), ==, -ENOMEM);
        env_close(&e);
}

/* Without any hook: the real file calls on a plain tree. */
TEST(default_ops)
{
        struct reserve_req req = { .node = 1, .page_size = 2 * MIB, .count = 40 };
        struct reserve_result res = poison;
        char *dir = fixture_copy("memory-only");
        struct sysfs *fs;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        CHECK_INT(reserve_apply(fs, &req, &res), ==, 0);
        CHECK_U64(res.previous, ==, 128);
        CHECK_U64(res.achieved, ==, 40);
        CHECK_U64(res.total, ==, 40);
        CHECK_U64(res.free, ==, 100); /* a plain file does not move by itself */
        CHECK(res.complete);
        sysfs_close(fs);
        fixture_remove(dir);
}

TEST_MAIN()
