/* topo: every fixture parsed exactly as its files say; cpulist and meminfo
 * parsers against hostile input; missing files. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fixture.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

static struct sysfs *open_fixture(const char *name)
{
        char path[4096];
        struct sysfs *fs;

        snprintf(path, sizeof(path), "%s/%s", fixture_src_dir(), name);
        CHECK_INT(sysfs_open(path, &fs), ==, 0);
        return fs;
}

static void check_hp(const struct sysfs *fs, int node, uint64_t size, uint64_t total, uint64_t free_,
                     uint64_t surplus)
{
        struct hp_counts c;

        CHECK_INT(topo_read_hugepages(fs, node, size, &c), ==, 0);
        CHECK_U64(c.total, ==, total);
        CHECK_U64(c.free, ==, free_);
        CHECK_U64(c.surplus, ==, surplus);
}

static void check_mem(const struct sysfs *fs, int node, uint64_t total_kb, uint64_t free_kb)
{
        uint64_t t, f;

        CHECK_INT(topo_read_meminfo(fs, node, &t, &f), ==, 0);
        CHECK_U64(t, ==, total_kb * KIB);
        CHECK_U64(f, ==, free_kb * KIB);
}

TEST(two_node)
{
        struct sysfs *fs = open_fixture("two-node");
        const struct topo_node *n;
        struct topo *t;
        uint64_t v;

        CHECK_INT(topo_load(fs, &t), ==, 0);
        CHECK_U64(t->n_nodes, ==, 2);
        CHECK_INT(t->nodes[0].id, ==, 0);
        CHECK_STR(t->nodes[0].cpulist, "0-1");
        CHECK_INT(t->nodes[0].cpu_count, ==, 2);
        CHECK(CPU_ISSET_S(0, t->nodes[0].cpus_size, t->nodes[0].cpus));
        CHECK(CPU_ISSET_S(1, t->nodes[0].cpus_size, t->nodes[0].cpus));
        CHECK(!CPU_ISSET_S(2, t->nodes[0].cpus_size, t->nodes[0].cpus));
        CHECK_INT(t->nodes[1].id, ==, 1);
        CHECK_STR(t->nodes[1].cpulist, "2-3");
        CHECK_INT(t->nodes[1].cpu_count, ==, 2);
        CHECK(CPU_ISSET_S(3, t->nodes[1].cpus_size, t->nodes[1].cpus));
        CHECK(!CPU_ISSET_S(1, t->nodes[1].cpus_size, t->nodes[1].cpus));

        CHECK_U64(t->n_page_sizes, ==, 2);
        CHECK_U64(t->page_sizes[0], ==, 2 * MIB);
        CHECK_U64(t->page_sizes[1], ==, GIB);
        CHECK(topo_has_page_size(t, 2 * MIB));
        CHECK(topo_has_page_size(t, GIB));
        CHECK(!topo_has_page_size(t, 4 * KIB));

        n = topo_node(t, 1);
        CHECK(n == &t->nodes[1]);
        CHECK(topo_node(t, 2) == NULL);
        CHECK(topo_node(t, -1) == NULL);

        check_hp(fs, 0, 2 * MIB, 16, 12, 0);
        check_hp(fs, 1, 2 * MIB, 8, 7, 1);
        check_hp(fs, 0, GIB, 1, 1, 0);
        check_hp(fs, 1, GIB, 2, 0, 0);
        check_mem(fs, 0, 8141892, 5213476);
        check_mem(fs, 1, 8257536, 6094848);
        CHECK_INT(topo_read_resv(fs, 2 * MIB, &v), ==, 0);
        CHECK_U64(v, ==, 3);
        CHECK_INT(topo_read_resv(fs, GIB, &v), ==, 0);
        CHECK_U64(v, ==, 0);

        /* Absent things are -ENOENT; nonsense sizes -EINVAL. */
        {
                struct hp_counts c;
                uint64_t a, b;

                CHECK_INT(topo_read_hugepages(fs, 2, 2 * MIB, &c), ==, -ENOENT);
                CHECK_INT(topo_read_hugepages(fs, -1, 2 * MIB, &c), ==, -ENOENT);
                CHECK_INT(topo_read_hugepages(fs, 0, 64 * KIB, &c), ==, -ENOENT);
                CHECK_INT(topo_read_hugepages(fs, 0, 1000, &c), ==, -EINVAL);
                CHECK_INT(topo_read_hugepages(fs, 0, 0, &c), ==, -EINVAL);
                CHECK_INT(topo_read_meminfo(fs, 5, &a, &b), ==, -ENOENT);
                CHECK_INT(topo_read_resv(fs, 32 * MIB, &a), ==, -ENOENT);
        }
        topo_free(t);
        sysfs_close(fs);
}

TEST(four_node)
{
        static const char *const cpus[] = { "0-3", "4-7", "8-11", "12-15" };
        struct sysfs *fs = open_fixture("four-node");
        struct topo *t;
        uint64_t v;
        size_t i;

        CHECK_INT(topo_load(fs, &t), ==, 0);
        CHECK_U64(t->n_nodes, ==, 4);
        for (i = 0; i < 4; i++) {
                CHECK_INT(t->nodes[i].id, ==, i);
                CHECK_STR(t->nodes[i].cpulist, cpus[i]);
                CHECK_INT(t->nodes[i].cpu_count, ==, 4);
                CHECK(CPU_ISSET_S(i * 4 + 3, t->nodes[i].cpus_size, t->nodes[i].cpus));
        }
        CHECK_U64(t->n_page_sizes, ==, 1);
        CHECK_U64(t->page_sizes[0], ==, 2 * MIB);
        CHECK(!topo_has_page_size(t, GIB));
        check_hp(fs, 0, 2 * MIB, 32, 32, 0);
        check_hp(fs, 1, 2 * MIB, 0, 0, 0);
        check_hp(fs, 2, 2 * MIB, 64, 10, 0);
        check_hp(fs, 3, 2 * MIB, 4, 4, 0);
        check_mem(fs, 2, 16777216, 9437184);
        CHECK_INT(topo_read_resv(fs, 2 * MIB, &v), ==, 0);
        CHECK_U64(v, ==, 5);
        topo_free(t);
        sysfs_close(fs);
}

TEST(memory_only)
{
        struct sysfs *fs = open_fixture("memory-only");
        struct topo *t;

        CHECK_INT(topo_load(fs, &t), ==, 0);
        CHECK_U64(t->n_nodes, ==, 2);
        CHECK_STR(t->nodes[0].cpulist, "0-3");
        CHECK_INT(t->nodes[0].cpu_count, ==, 4);
        CHECK_INT(t->nodes[1].id, ==, 1);
        CHECK_STR(t->nodes[1].cpulist, "");
        CHECK_INT(t->nodes[1].cpu_count, ==, 0);
        CHECK(t->nodes[1].cpus != NULL);
        CHECK_INT(CPU_COUNT_S(t->nodes[1].cpus_size, t->nodes[1].cpus), ==, 0);
        check_hp(fs, 1, 2 * MIB, 128, 100, 0);
        check_mem(fs, 1, 33554432, 33030144);
        topo_free(t);
        sysfs_close(fs);
}

TEST(sparse)
{
        struct sysfs *fs = open_fixture("sparse");
        struct topo *t;

        CHECK_INT(topo_load(fs, &t), ==, 0);
        CHECK_U64(t->n_nodes, ==, 2);
        CHECK_INT(t->nodes[0].id, ==, 0);
        CHECK_INT(t->nodes[1].id, ==, 2);
        CHECK(topo_node(t, 1) == NULL);
        CHECK(topo_node(t, 2) == &t->nodes[1]);
        CHECK_STR(t->nodes[0].cpulist, "0,2");
        CHECK_STR(t->nodes[1].cpulist, "1,3");
        CHECK(CPU_ISSET_S(2, t->nodes[0].cpus_size, t->nodes[0].cpus));
        CHECK(!CPU_ISSET_S(1, t->nodes[0].cpus_size, t->nodes[0].cpus));
        CHECK_U64(t->n_page_sizes, ==, 2);
        check_hp(fs, 2, 2 * MIB, 20, 15, 0);
        check_hp(fs, 2, GIB, 1, 1, 0);
        check_mem(fs, 2, 4194304, 2097152);
        {
                struct hp_counts c;

                CHECK_INT(topo_read_hugepages(fs, 1, 2 * MIB, &c), ==, -ENOENT);
        }
        topo_free(t);
        sysfs_close(fs);
}

/* Node directories are sorted by id, numerically, whatever readdir says. */
TEST(many_nodes_sorted)
{
        static const int ids[] = { 10, 2, 33, 5 };
        char *dir = fixture_copy("memory-only");
        char path[4096], rel[256];
        struct sysfs *fs;
        struct topo *t;
        size_t i;

        for (i = 0; i < ARRAY_SIZE(ids); i++) {
                snprintf(path, sizeof(path), "%s/devices/system/node/node%d", dir, ids[i]);
                CHECK_INT(mkdir(path, 0755), ==, 0);
                snprintf(rel, sizeof(rel), "devices/system/node/node%d/cpulist", ids[i]);
                fixture_write(dir, rel, "\n");
        }
        /* Not nodes: ignored. */
        snprintf(path, sizeof(path), "%s/devices/system/node/nodeX", dir);
        CHECK_INT(mkdir(path, 0755), ==, 0);
        snprintf(path, sizeof(path), "%s/devices/system/node/node", dir);
        CHECK_INT(mkdir(path, 0755), ==, 0);
        snprintf(path, sizeof(path), "%s/devices/system/node/node07", dir);
        CHECK_INT(mkdir(path, 0755), ==, 0);

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        CHECK_INT(topo_load(fs, &t), ==, 0);
        CHECK_U64(t->n_nodes, ==, 6);
        CHECK_INT(t->nodes[0].id, ==, 0);
        CHECK_INT(t->nodes[1].id, ==, 1);
        CHECK_INT(t->nodes[2].id, ==, 2);
        CHECK_INT(t->nodes[3].id, ==, 5);
        CHECK_INT(t->nodes[4].id, ==, 10);
        CHECK_INT(t->nodes[5].id, ==, 33);
        CHECK_STR(t->nodes[0].cpulist, "0-3");
        topo_free(t);
        sysfs_close(fs);
        fixture_remove(dir);
}

TEST(load_failures)
{
        const char *cl = "devices/system/node/node1/cpulist";
        char *dir = fixture_copy("two-node");
        struct topo *t = NULL;
        struct sysfs *fs;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);

        fixture_write(dir, cl, "2-x\n");
        CHECK_INT(topo_load(fs, &t), ==, -EINVAL);
        CHECK(t == NULL);
        fixture_unlink(dir, cl);
        CHECK_INT(topo_load(fs, &t), ==, -ENOENT);
        fixture_write(dir, cl, "2-3\n");

        /* Unparseable page size directories are skipped; no directory at all
         * means no hugetlb: zero sizes, still a topology. */
        {
                char path[4096];

                snprintf(path, sizeof(path), "%s/kernel/mm/hugepages/hugepages-3000kB", dir);
                CHECK_INT(mkdir(path, 0755), ==, 0);
                snprintf(path, sizeof(path), "%s/kernel/mm/hugepages/hugepages-junk", dir);
                CHECK_INT(mkdir(path, 0755), ==, 0);
                CHECK_INT(topo_load(fs, &t), ==, 0);
                CHECK_U64(t->n_page_sizes, ==, 2);
                topo_free(t);
                char *argv[] = { "rm", "-rf", NULL, NULL };
                snprintf(path, sizeof(path), "%s/kernel/mm/hugepages", dir);
                argv[2] = path;
                fixture_run_(argv);
                CHECK_INT(topo_load(fs, &t), ==, 0);
                CHECK_U64(t->n_page_sizes, ==, 0);
                CHECK_U64(t->n_nodes, ==, 2);
                topo_free(t);
                t = NULL;
        }
        /* No node directory at all. */
        {
                char *argv[] = { "rm", "-rf", NULL, NULL };
                char path[4096];

                snprintf(path, sizeof(path), "%s/devices/system/node", dir);
                argv[2] = path;
                fixture_run_(argv);
                CHECK_INT(topo_load(fs, &t), ==, -ENOENT);
                CHECK_INT(mkdir(path, 0755), ==, 0);
                CHECK_INT(topo_load(fs, &t), ==, -ENOENT);
                CHECK(t == NULL);
        }
        topo_free(NULL);
        sysfs_close(fs);
        fixture_remove(dir);
}

TEST(counter_failures)
{
        const char *nr = "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages";
        const char *fr = "devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages";
        char *dir = fixture_copy("two-node");
        struct hp_counts c = { 99, 99, 99 };
        struct sysfs *fs;
        uint64_t v = 99;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        fixture_write(dir, nr, "garbage\n");
        CHECK_INT(topo_read_hugepages(fs, 0, 2 * MIB, &c), ==, -EINVAL);
        fixture_write(dir, nr, "-1\n");
        CHECK_INT(topo_read_hugepages(fs, 0, 2 * MIB, &c), ==, -EINVAL);
        fixture_write(dir, nr, "16\n");
        fixture_unlink(dir, fr);
        CHECK_INT(topo_read_hugepages(fs, 0, 2 * MIB, &c), ==, -ENOENT);
        CHECK_U64(c.total, ==, 99); /* untouched on failure */
        fixture_write(dir, "kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "3 \n");
        CHECK_INT(topo_read_resv(fs, 2 * MIB, &v), ==, -EINVAL);
        CHECK_U64(v, ==, 99);
        sysfs_close(fs);
        fixture_remove(dir);
}

TEST(meminfo_parse)
{
        static const struct {
                const char *text;
                int r;
                uint64_t total_kb, free_kb;
        } cases[] = {
                { "Node 0 MemTotal:        5072668 kB\nNode 0 MemFree:         4640252 kB\n", 0, 5072668, 4640252 },
                /* order does not matter; other lines, bare counts allowed */
                { "Node 0 MemFree: 1 kB\nNode 0 HugePages_Total:     0\nNode 0 MemTotal: 2 kB\n", 0, 2, 1 },
                { "Node 0 MemTotal: 2 kB\nNode 0 MemFree: 1 kB", 0, 2, 1 }, /* no final newline */
                { "Node 0 MemTotal: 2 kB\n", -EINVAL, 0, 0 },                /* no MemFree */
                { "Node 0 MemFree: 1 kB\n", -EINVAL, 0, 0 },                 /* no MemTotal */
                { "", -EINVAL, 0, 0 },
                { "Node 1 MemTotal: 2 kB\nNode 1 MemFree: 1 kB\n", -EINVAL, 0, 0 }, /* wrong node */
                { "Node 0 MemTotal: 2 MB\nNode 0 MemFree: 1 kB\n", -EINVAL, 0, 0 },
                { "Node 0 MemTotal: -2 kB\nNode 0 MemFree: 1 kB\n", -EINVAL, 0, 0 },
                { "Node 0 MemTotal: 2kB\nNode 0 MemFree: 1 kB\n", -EINVAL, 0, 0 },
                { "Node 0 MemTotal: kB\nNode 0 MemFree: 1 kB\n", -EINVAL, 0, 0 },
                { "Node 0 MemTotal 2 kB\nNode 0 MemFree: 1 kB\n", -EINVAL, 0, 0 },
                { "Node 0 MemTotal: 2 kB\nNode 0 MemFree: 3 kB\n", -EINVAL, 0, 0 }, /* free > total */
                { "Node 0 MemTotal: 2 kB\nNode 0 MemTotal: 2 kB\nNode 0 MemFree: 1 kB\n", -EINVAL, 0, 0 },
                { "Node 0 MemTotal: 99999999999999999999 kB\nNode 0 MemFree: 1 kB\n", -EINVAL, 0, 0 },
                { "Node 0 MemTotal: 18014398509481984 kB\nNode 0 MemFree: 1 kB\n", -EINVAL, 0, 0 }, /* *1024 overflows */
                { "garbage\n", -EINVAL, 0, 0 },
        };
        char *dir = fixture_copy("two-node");
        struct sysfs *fs;
        size_t i;

        CHECK_INT(sysfs_open(dir, &fs), ==, 0);
        for (i = 0; i < ARRAY_SIZE(cases); i++) {
                uint64_t t = 7, f = 7;
                int r;

                fixture_write(dir, "devices/system/node/node0/meminfo", cases[i].text);
                r = topo_read_meminfo(fs, 0, &t, &f);
                if (r != cases[i].r)
                        fprintf(stderr, "case %zu\n", i);
                CHECK_INT(r, ==, cases[i].r);
                CHECK_U64(t, ==, r == 0 ? cases[i].total_kb * KIB : 7);
                CHECK_U64(f, ==, r == 0 ? cases[i].free_kb * KIB : 7);
        }
        sysfs_close(fs);
        fixture_remove(dir);
}

TEST(cpulist_parse)
{
        static const struct {
                const char *s;
                int r;
                unsigned count;
                int max; /* highest CPU set, -1 if none */
        } cases[] = {
                { "", 0, 0, -1 },
                { "\n", 0, 0, -1 },
                { "0", 0, 1, 0 },
                { "0-3", 0, 4, 3 },
                { "0-3\n", 0, 4, 3 },
                { "0-3,8,10-11", 0, 7, 11 },
                { "5-5", 0, 1, 5 },
                { "1,0", 0, 2, 1 },
                { "0-1,1-2", 0, 3, 2 },       /* overlap counted once */
                { "2000-2047", 0, 48, 2047 }, /* beyond CPU_SETSIZE */
                { "8191", 0, 1, 8191 },
                { "8192", -EINVAL, 0, 0 },
                { "99999999999999999999", -EINVAL, 0, 0 },
                { "3-1", -EINVAL, 0, 0 },
                { "1,,2", -EINVAL, 0, 0 },
                { ",1", -EINVAL, 0, 0 },
                { "1,", -EINVAL, 0, 0 },
                { "-1", -EINVAL, 0, 0 },
                { "1-", -EINVAL, 0, 0 },
                { "1-2-3", -EINVAL, 0, 0 },
                { " 1", -EINVAL, 0, 0 },
                { "a", -EINVAL, 0, 0 },
                { "0-7:2/4", -EINVAL, 0, 0 },
                { "1\n\n", -EINVAL, 0, 0 },
        };
        size_t i;

        for (i = 0; i < ARRAY_SIZE(cases); i++) {
                cpu_set_t *set = NULL;
                size_t size = 0;
                unsigned count = 99;
                int r = cpulist_parse(cases[i].s, &set, &size, &count);

                if (r != cases[i].r)
                        fprintf(stderr, "case \"%s\"\n", cases[i].s);
                CHECK_INT(r, ==, cases[i].r);
                if (r < 0) {
                        CHECK(set == NULL);
                        CHECK_INT(count, ==, 99);
                        continue;
                }
                CHECK_INT(count, ==, cases[i].count);
                CHECK_INT(CPU_COUNT_S(size, set), ==, cases[i].count);
                CHECK(size >= CPU_ALLOC_SIZE(CPU_SETSIZE));
                if (cases[i].max >= 0) {
                        CHECK(CPU_ISSET_S((size_t)cases[i].max, size, set));
                        CHECK(size * 8 >= (size_t)cases[i].max + 1);
                }
                CPU_FREE(set);
        }
        {
                cpu_set_t *set;
                size_t size;
                unsigned count;

                CHECK_INT(cpulist_parse("0-3,8,10-11", &set, &size, &count), ==, 0);
                CHECK(CPU_ISSET_S(8, size, set));
                CHECK(!CPU_ISSET_S(9, size, set));
                CHECK(CPU_ISSET_S(10, size, set));
                CPU_FREE(set);
                CHECK_INT(cpulist_parse(NULL, &set, &size, &count), ==, -EINVAL);
        }
}

/* Read-only: the parsers accept what this machine's kernel really prints.
 * Real file formats are the ones that matter; fixtures only imitate them. */
TEST(real_sysfs)
{
        struct sysfs *fs;
        struct topo *t;
        size_t i, j;

        if (access("/sys/devices/system/node/node0", F_OK) < 0) {
                fprintf(stderr, "no /sys/devices/system/node here: real-sysfs check skipped\n");
                return;
        }
        CHECK_INT(sysfs_open("/sys", &fs), ==, 0);
        CHECK_INT(topo_load(fs, &t), ==, 0);
        CHECK(t->n_nodes >= 1);
        for (i = 0; i < t->n_nodes; i++) {
                uint64_t total, free_;

                CHECK_INT(topo_read_meminfo(fs, t->nodes[i].id, &total, &free_), ==, 0);
                CHECK(total > 0 && free_ <= total);
                for (j = 0; j < t->n_page_sizes; j++) {
                        struct hp_counts c;
                        uint64_t resv;

                        CHECK_INT(topo_read_hugepages(fs, t->nodes[i].id, t->page_sizes[j], &c), ==, 0);
                        CHECK(c.free <= c.total);
                        CHECK_INT(topo_read_resv(fs, t->page_sizes[j], &resv), ==, 0);
                }
        }
        topo_free(t);
        sysfs_close(fs);
}

TEST_MAIN()
