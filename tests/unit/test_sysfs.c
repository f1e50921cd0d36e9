/* sysfs: strict counter parsing, writes that leave one clean value, path
 * confinement to the root, directory walking, and the ops seam. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "fixture.h"
#include "sysfs.h"
#include "util.h"

TEST(open)
{
        struct sysfs *fs = NULL;

        CHECK_INT(sysfs_open("/nonexistent/hpw", &fs), ==, -ENOENT);
        CHECK(fs == NULL);
        CHECK_INT(sysfs_open("/etc/hostname", &fs), ==, -ENOTDIR);
        CHECK_INT(sysfs_open("", &fs), ==, -EINVAL);
        sysfs_close(NULL);
}

TEST(read_u64)
{
        static const struct {
                const char *text;
                int r;
                uint64_t v;
        } cases[] = {
                { "0\n", 0, 0 },
                { "42\n", 0, 42 },
                { "42", 0, 42 },
                { "18446744073709551615\n", 0, UINT64_MAX },
                { "18446744073709551616\n", -EINVAL, 0 },
                { "", -EINVAL, 0 },
                { "\n", -EINVAL, 0 },
                { "-1\n", -EINVAL, 0 },
                { "+1\n", -EINVAL, 0 },
                { " 1\n", -EINVAL, 0 },
                { "1 \n", -EINVAL, 0 },
                { "1\n\n", -EINVAL, 0 },
                { "0x10\n", -EINVAL, 0 },
                { "12abc\n", -EINVAL, 0 },
                { "1.5\n", -EINVAL, 0 },
                { "123456789012345678901234567890123456789\n", -EINVAL, 0 },
        };
        char *dir = fixture_copy("two-node");
        struct sysfs *fs;
        size_t i;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        for (i = 0; i < ARRAY_SIZE(cases); i++) {
                uint64_t v = 777;
                int r;

                fixture_write(dir, "counter", cases[i].text);
                r = sysfs_read_u64(fs, "counter", &v);
                if (r != cases[i].r)
                        fprintf(stderr, "case \"%s\"\n", cases[i].text);
                CHECK_INT(r, ==, cases[i].r);
                CHECK_U64(v, ==, r == 0 ? cases[i].v : 777); /* untouched on error */
        }
        {
                uint64_t v = 0;

                CHECK_INT(sysfs_read_u64(fs, "missing", &v), ==, -ENOENT);
                CHECK_INT(sysfs_read_u64(fs, "devices", &v), ==, -EISDIR);
                CHECK_INT(sysfs_read_u64(fs, "/etc/hostname", &v), ==, -EINVAL);
                CHECK_INT(sysfs_read_u64(fs, "", &v), ==, -EINVAL);
                CHECK_INT(sysfs_read_u64(fs, "devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", &v), ==, 0);
                CHECK_U64(v, ==, 8);
        }
        sysfs_close(fs);
        fixture_remove(dir);
}

TEST(write_u64)
{
        char *dir = fixture_copy("two-node");
        const char *p = "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages";
        struct sysfs *fs;
        char buf[64];
        uint64_t v;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        /* Shorter value over a longer one: no stale tail may survive. */
        fixture_write(dir, p, "123456\n");
        CHECK_INT(sysfs_write_u64(fs, p, 7), ==, 0);
        fixture_read(dir, p, buf, sizeof(buf));
        CHECK_STR(buf, "7\n");
        CHECK_INT(sysfs_read_u64(fs, p, &v), ==, 0);
        CHECK_U64(v, ==, 7);
        CHECK_INT(sysfs_write_u64(fs, p, UINT64_MAX), ==, 0);
        fixture_read(dir, p, buf, sizeof(buf));
        CHECK_STR(buf, "18446744073709551615\n");
        /* No file is created: sysfs has a fixed set of attributes. */
        CHECK_INT(sysfs_write_u64(fs, "devices/system/node/node9/x", 1), ==, -ENOENT);
        CHECK_INT(sysfs_write_u64(fs, "devices", 1), ==, -EISDIR);
        CHECK_INT(sysfs_write_u64(fs, "/tmp/hpw-escape", 1), ==, -EINVAL);
        CHECK_INT(access("/tmp/hpw-escape", F_OK), ==, -1);
        sysfs_close(fs);
        fixture_remove(dir);
}

TEST(read_str)
{
        char *dir = fixture_copy("two-node");
        struct sysfs *fs;
        char buf[8];

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        CHECK_INT(sysfs_read_str(fs, "devices/system/node/node1/cpulist", buf, sizeof(buf)), ==, 0);
        CHECK_STR(buf, "2-3");
        fixture_write(dir, "s", "1234567\n"); /* 8 bytes: does not fit 7 + NUL */
        strcpy(buf, "keep");
        CHECK_INT(sysfs_read_str(fs, "s", buf, sizeof(buf)), ==, -EFBIG);
        fixture_write(dir, "s", "1234567"); /* exactly fits */
        CHECK_INT(sysfs_read_str(fs, "s", buf, sizeof(buf)), ==, 0);
        CHECK_STR(buf, "1234567");
        fixture_write(dir, "s", "a b \n\n");
        CHECK_INT(sysfs_read_str(fs, "s", buf, sizeof(buf)), ==, 0);
        CHECK_STR(buf, "a b");
        fixture_write(dir, "s", "");
        CHECK_INT(sysfs_read_str(fs, "s", buf, sizeof(buf)), ==, 0);
        CHECK_STR(buf, "");
        CHECK_INT(sysfs_read_str(fs, "nope", buf, sizeof(buf)), ==, -ENOENT);
        sysfs_close(fs);
        fixture_remove(dir);
}

struct seen {
        unsigned mask;
        int calls;
};

static int note_node(const char *name, void *arg)
{
        struct seen *s = arg;

        s->calls++;
        if (strcmp(name, "node0") == 0)
                s->mask |= 1;
        else if (strcmp(name, "node1") == 0)
                s->mask |= 2;
        else
                s->mask |= 0x100;
        return 0;
}

static int stop_at_first(const char *name, void *arg)
{
        (*(int *)arg)++;
        return -ECANCELED;
}

TEST(exists_and_for_each)
{
        char *dir = fixture_copy("two-node");
        struct seen s = { 0 };
        struct sysfs *fs;
        int calls = 0;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        CHECK_INT(sysfs_exists(fs, "devices/system/node/node1"), ==, 0);
        CHECK_INT(sysfs_exists(fs, "devices/system/node/online"), ==, 0);
        CHECK_INT(sysfs_exists(fs, "devices/system/node/node2"), ==, -ENOENT);
        CHECK_INT(sysfs_for_each(fs, "devices/system/node", "node", note_node, &s), ==, 0);
        CHECK_INT(s.calls, ==, 2);
        CHECK_INT(s.mask, ==, 3);
        CHECK_INT(sysfs_for_each(fs, "devices/system/node", "node", stop_at_first, &calls), ==, -ECANCELED);
        CHECK_INT(calls, ==, 1);
        CHECK_INT(sysfs_for_each(fs, "devices/system/nodes", "", stop_at_first, &calls), ==, -ENOENT);
        CHECK_INT(sysfs_for_each(fs, "devices/system/node/online", "", stop_at_first, &calls), ==, -ENOTDIR);
        sysfs_close(fs);
        fixture_remove(dir);
}

/* The seam: a hook sees every counter access and may defer to the real one. */
struct hook_state {
        int reads, writes;
        uint64_t last_written;
};

static int hook_read(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        struct hook_state *h = userdata;

        h->reads++;
        if (strstr(path, "free_hugepages"))
                return -EIO;
        return sysfs_default_ops.read_u64(fs, path, ret, NULL);
}

static int hook_write(const struct sysfs *fs, const char *path, uint64_t v, void *userdata)
{
        struct hook_state *h = userdata;

        h->writes++;
        h->last_written = v;
        return sysfs_default_ops.write_u64(fs, path, v / 2, NULL);
}

TEST(ops)
{
        static const struct sysfs_ops ops = { .read_u64 = hook_read, .write_u64 = hook_write };
        const char *nr = "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages";
        const char *fr = "devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages";
        struct hook_state h = { 0 };
        char *dir = fixture_copy("two-node");
        struct sysfs *fs;
        uint64_t v;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        sysfs_set_ops(fs, &ops, &h);
        CHECK_INT(sysfs_write_u64(fs, nr, 40), ==, 0);
        CHECK_INT(sysfs_read_u64(fs, nr, &v), ==, 0);
        CHECK_U64(v, ==, 20);
        CHECK_INT(sysfs_read_u64(fs, fr, &v), ==, -EIO);
        CHECK_INT(h.reads, ==, 2);
        CHECK_INT(h.writes, ==, 1);
        CHECK_U64(h.last_written, ==, 40);
        sysfs_set_ops(fs, NULL, NULL);
        CHECK_INT(sysfs_read_u64(fs, fr, &v), ==, 0);
        CHECK_U64(v, ==, 12);
        CHECK_INT(h.reads, ==, 2);
        sysfs_close(fs);
        fixture_remove(dir);
}

/* sysfs_forbid_writes (--fixed-hugepages): every write is -EROFS before a
 * hook or the file sees it; the file keeps its value; reads still work. */
TEST(forbid_writes)
{
        static const struct sysfs_ops ops = { .read_u64 = hook_read, .write_u64 = hook_write };
        const char *nr = "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages";
        struct hook_state h = { 0 };
        char *dir = fixture_copy("two-node");
        struct sysfs *fs;
        char buf[64];
        uint64_t v;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        fixture_write(dir, nr, "64\n");
        sysfs_forbid_writes(fs);
        CHECK_INT(sysfs_write_u64(fs, nr, 128), ==, -EROFS);
        CHECK_INT(sysfs_write_u64(fs, nr, 64), ==, -EROFS);
        fixture_read(dir, nr, buf, sizeof(buf));
        CHECK_STR(buf, "64\n");
        CHECK_INT(sysfs_read_u64(fs, nr, &v), ==, 0);
        CHECK_U64(v, ==, 64);
        sysfs_set_ops(fs, &ops, &h);
        CHECK_INT(sysfs_write_u64(fs, nr, 128), ==, -EROFS);
        CHECK_INT(h.writes, ==, 0);
        sysfs_close(fs);
        fixture_remove(dir);
}

TEST_MAIN()
