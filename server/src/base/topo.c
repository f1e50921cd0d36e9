/* topo: what the machine looks like, read from sysfs.
 *
 * The shape (nodes, their CPUs, the hugepage sizes the kernel offers) is read
 * once into an immutable snapshot that any thread may read without locks;
 * the counters that move (free memory, pool sizes, reservations) are read on
 * demand by the small readers at the bottom, never cached.
 *
 * Node ids come from the directory names, not from a count, because they need
 * not be contiguous (0 and 2) and a node may have memory but no CPUs.  Every
 * file is parsed strictly: a counter that is not a plain number is an error
 * (-EINVAL), not a zero, so a broken fixture or kernel change is noticed. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysfs.h"
#include "topo.h"
#include "util.h"

#define NODE_DIR "devices/system/node"
#define HUGEPAGES_DIR "kernel/mm/hugepages"

/* Highest CPU number we accept in a cpulist.  The kernel's NR_CPUS tops out
 * at 8192; anything beyond is garbage, and bounding it bounds CPU_ALLOC. */
#define CPULIST_MAX_CPU 8191
/* cpulist is short ("0-63,128-191"); even a pathological every-other-CPU list
 * of 8192 CPUs fits. */
#define CPULIST_FILE_MAX (48 * 1024)
/* Per-node meminfo is about 1.5 KiB today; leave room for new fields. */
#define MEMINFO_FILE_MAX (16 * 1024)
/* Sets are at least CPU_SETSIZE wide so they mix with sched_getaffinity()
 * results in a plain cpu_set_t. */
#define CPUSET_MIN_CPUS CPU_SETSIZE

/* Parse a whole decimal number in [s, end); -EINVAL on anything else. */
static int parse_uint_range(const char *s, const char *end, unsigned long max, unsigned long *ret)
{
        unsigned long v = 0;

        if (s == end)
                return -EINVAL;
        for (; s < end; s++) {
                unsigned long d;

                if (*s < '0' || *s > '9')
                        return -EINVAL;
                d = (unsigned long)(*s - '0');
                if (d > max || v > (max - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int cpulist_parse(const char *s, cpu_set_t **ret_set, size_t *ret_size, unsigned *ret_count)
{
        size_t n = s ? strlen(s) : 0;
        unsigned long max_cpu = 0;
        const char *p, *end;
        unsigned ncpus, count = 0;
        cpu_set_t *set = NULL;
        size_t size = 0;
        int pass;

        if (!s)
                return -EINVAL;
        if (n > 0 && s[n - 1] == '\n')
                n--;
        end = s + n;

        /* Two passes: validate and find the highest CPU, then fill. */
        for (pass = 0; pass < 2; pass++) {
                if (pass == 1) {
                        ncpus = max_cpu + 1 > CPUSET_MIN_CPUS ? (unsigned)max_cpu + 1 : CPUSET_MIN_CPUS;
                        set = CPU_ALLOC(ncpus);
                        if (!set)
                                return -ENOMEM;
                        size = CPU_ALLOC_SIZE(ncpus);
                        CPU_ZERO_S(size, set);
                }
                for (p = s; p < end;) {
                        const char *comma = memchr(p, ',', (size_t)(end - p));
                        const char *item_end = comma ? comma : end;
                        const char *dash = memchr(p, '-', (size_t)(item_end - p));
                        unsigned long lo, hi, c;
                        int r;

                        r = parse_uint_range(p, dash ? dash : item_end, CPULIST_MAX_CPU, &lo);
                        if (r == 0)
                                r = dash ? parse_uint_range(dash + 1, item_end, CPULIST_MAX_CPU, &hi)
                                         : (hi = lo, 0);
                        if (r == 0 && hi < lo)
                                r = -EINVAL;
                        /* A trailing comma leaves an empty last item. */
                        if (r == 0 && comma && comma + 1 == end)
                                r = -EINVAL;
                        if (r < 0) {
                                if (pass == 1)
                                        CPU_FREE(set);
                                return r;
                        }
                        if (pass == 0) {
                                if (hi > max_cpu)
                                        max_cpu = hi;
                        } else {
                                for (c = lo; c <= hi; c++)
                                        CPU_SET_S(c, size, set);
                        }
                        p = comma ? comma + 1 : end;
                }
        }
        count = (unsigned)CPU_COUNT_S(size, set);
        *ret_set = set;
        *ret_size = size;
        *ret_count = count;
        return 0;
}

/* "node12" -> 12; -EINVAL for anything else under the node directory
 * ("node" prefix with no number, leading zeros). */
static int parse_node_name(const char *name, int *ret)
{
        unsigned long v;
        const char *digits = name + strlen("node");
        int r;

        if (strncmp(name, "node", 4) != 0 || (digits[0] == '0' && digits[1] != '\0'))
                return -EINVAL;
        r = parse_uint_range(digits, digits + strlen(digits), INT_MAX, &v);
        if (r < 0)
                return r;
        *ret = (int)v;
        return 0;
}

/* "hugepages-2048kB" -> 2 MiB in bytes; -EINVAL if not a power of two. */
static int parse_hugepages_name(const char *name, uint64_t *ret)
{
        const char *digits = name + strlen("hugepages-");
        size_t n;
        unsigned long kb;
        uint64_t bytes;
        int r;

        if (strncmp(name, "hugepages-", 10) != 0)
                return -EINVAL;
        n = strlen(digits);
        if (n < 3 || strcmp(digits + n - 2, "kB") != 0)
                return -EINVAL;
        r = parse_uint_range(digits, digits + n - 2, ULONG_MAX >> 10, &kb);
        if (r < 0)
                return r;
        bytes = (uint64_t)kb << 10;
        if (bytes == 0 || (bytes & (bytes - 1)) != 0)
                return -EINVAL;
        *ret = bytes;
        return 0;
}

struct ids {
        int *v;
        size_t n, cap;
};

static int collect_node(const char *name, void *arg)
{
        struct ids *ids = arg;
        int id;

        if (parse_node_name(name, &id) < 0)
                return 0; /* not a node directory */
        if (ids->n == ids->cap) {
                size_t cap = ids->cap ? ids->cap * 2 : 8;
                int *v = reallocarray(ids->v, cap, sizeof(*v));

                if (!v)
                        return -ENOMEM;
                ids->v = v;
                ids->cap = cap;
        }
        ids->v[ids->n++] = id;
        return 0;
}

static int collect_page_size(const char *name, void *arg)
{
        struct topo *t = arg;
        uint64_t size;
        size_t i;

        if (parse_hugepages_name(name, &size) < 0)
                return 0;
        if (t->n_page_sizes == TOPO_MAX_PAGE_SIZES)
                return -E2BIG;
        /* Insert sorted ascending. */
        for (i = t->n_page_sizes; i > 0 && t->page_sizes[i - 1] > size; i--)
                t->page_sizes[i] = t->page_sizes[i - 1];
        t->page_sizes[i] = size;
        t->n_page_sizes++;
        return 0;
}

static int cmp_int(const void *a, const void *b)
{
        int x = *(const int *)a, y = *(const int *)b;

        return (x > y) - (x < y);
}

/* Node ID's file NAME (at most MAX bytes) into *RET, malloc'd. */
static int read_node_file(const struct sysfs *fs, int id, const char *name, size_t max, char **ret)
{
        _cleanup_free_ char *buf = malloc(max);
        char path[128];
        int r;

        if (!buf)
                return -ENOMEM;
        snprintf(path, sizeof(path), NODE_DIR "/node%d/%s", id, name);
        r = sysfs_read_str(fs, path, buf, max);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(buf);
        return 0;
}

static int load_node(const struct sysfs *fs, int id, struct topo_node *node)
{
        _cleanup_free_ char *buf = NULL;
        int r;

        r = read_node_file(fs, id, "cpulist", CPULIST_FILE_MAX, &buf);
        if (r < 0)
                return r;
        r = cpulist_parse(buf, &node->cpus, &node->cpus_size, &node->cpu_count);
        if (r < 0)
                return r;
        node->cpulist = strdup(buf);
        if (!node->cpulist) {
                CPU_FREE(node->cpus);
                node->cpus = NULL;
                return -ENOMEM;
        }
        node->id = id;
        return 0;
}

void topo_free(struct topo *t)
{
        size_t i;

        if (!t)
                return;
        for (i = 0; i < t->n_nodes; i++) {
                free(t->nodes[i].cpulist);
                if (t->nodes[i].cpus)
                        CPU_FREE(t->nodes[i].cpus);
        }
        free(t->nodes);
        free(t);
}

static void topo_freep(struct topo **t) { topo_free(*t); }

int topo_load(const struct sysfs *fs, struct topo **ret)
{
        _cleanup_(topo_freep) struct topo *t = NULL;
        _cleanup_free_ int *ids_v = NULL;
        struct ids ids = { 0 };
        size_t i;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        r = sysfs_for_each(fs, NODE_DIR, "node", collect_node, &ids);
        ids_v = ids.v;
        if (r < 0)
                return r;
        if (ids.n == 0)
                return -ENOENT;
        qsort(ids.v, ids.n, sizeof(*ids.v), cmp_int);

        t->nodes = calloc(ids.n, sizeof(*t->nodes));
        if (!t->nodes)
                return -ENOMEM;
        for (i = 0; i < ids.n; i++) {
                r = load_node(fs, ids.v[i], &t->nodes[i]);
                if (r < 0)
                        return r;
                t->n_nodes++;
        }

        /* A kernel without hugetlb has no such directory: no sizes, not an error. */
        r = sysfs_for_each(fs, HUGEPAGES_DIR, "hugepages-", collect_page_size, t);
        if (r < 0 && r != -ENOENT)
                return r;

        *ret = TAKE_PTR(t);
        return 0;
}

const struct topo_node *topo_node(const struct topo *t, int id)
{
        size_t i;

        for (i = 0; i < t->n_nodes; i++)
                if (t->nodes[i].id == id)
                        return &t->nodes[i];
        return NULL;
}

bool topo_has_page_size(const struct topo *t, uint64_t page_size)
{
        size_t i;

        for (i = 0; i < t->n_page_sizes; i++)
                if (t->page_sizes[i] == page_size)
                        return true;
        return false;
}

/* Page sizes are whole kB in every sysfs directory name. */
static int page_size_kb(uint64_t page_size, uint64_t *ret)
{
        if (page_size == 0 || page_size % KIB != 0)
                return -EINVAL;
        *ret = page_size / KIB;
        return 0;
}

int topo_read_hugepages(const struct sysfs *fs, int node, uint64_t page_size, struct hp_counts *ret)
{
        static const char *const names[] = { "nr_hugepages", "free_hugepages", "surplus_hugepages" };
        uint64_t kb, v[3];
        char path[160];
        size_t i;
        int r;

        if (node < 0)
                return -ENOENT;
        r = page_size_kb(page_size, &kb);
        if (r < 0)
                return r;
        for (i = 0; i < ARRAY_SIZE(names); i++) {
                snprintf(path, sizeof(path), NODE_DIR "/node%d/hugepages/hugepages-%" PRIu64 "kB/%s",
                         node, kb, names[i]);
                r = sysfs_read_u64(fs, path, &v[i]);
                if (r < 0)
                        return r;
        }
        ret->total = v[0];
        ret->free = v[1];
        ret->surplus = v[2];
        return 0;
}

/* One meminfo line: "Node <id> <Key>: <value> kB".  Sets *ret_key (not
 * terminated; *ret_key_len bytes) and *ret_kb.  -EINVAL if the line does not
 * have that shape or names another node. */
static int parse_meminfo_line(const char *line, const char *end, int node,
                              const char **ret_key, size_t *ret_key_len, uint64_t *ret_kb)
{
        const char *p = line, *key, *colon, *num;
        unsigned long id;
        uint64_t v = 0;

        if ((size_t)(end - p) < 5 || strncmp(p, "Node ", 5) != 0)
                return -EINVAL;
        p += 5;
        num = p;
        while (p < end && *p >= '0' && *p <= '9')
                p++;
        if (parse_uint_range(num, p, INT_MAX, &id) < 0 || (int)id != node)
                return -EINVAL;
        if (p == end || *p != ' ')
                return -EINVAL;
        p++;
        key = p;
        colon = memchr(p, ':', (size_t)(end - p));
        if (!colon || colon == key)
                return -EINVAL;
        p = colon + 1;
        while (p < end && *p == ' ')
                p++;
        num = p;
        while (p < end && *p >= '0' && *p <= '9') {
                unsigned d = (unsigned)(*p - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
                p++;
        }
        if (p == num)
                return -EINVAL;
        /* HugePages_* lines carry a bare count; the ones we use are in kB. */
        if (end - p == 3 && strncmp(p, " kB", 3) == 0) {
                if (v > UINT64_MAX / KIB)
                        return -EINVAL;
        } else if (p != end) {
                return -EINVAL;
        }
        *ret_key = key;
        *ret_key_len = (size_t)(colon - key);
        *ret_kb = v;
        return 0;
}

static bool key_is(const char *key, size_t len, const char *want)
{
        return strlen(want) == len && memcmp(key, want, len) == 0;
}

int topo_read_meminfo(const struct sysfs *fs, int node, uint64_t *ret_total, uint64_t *ret_free)
{
        _cleanup_free_ char *buf = NULL;
        uint64_t total = 0, free_kb = 0;
        bool have_total = false, have_free = false;
        const char *p, *end;
        int r;

        if (node < 0)
                return -ENOENT;
        r = read_node_file(fs, node, "meminfo", MEMINFO_FILE_MAX, &buf);
        if (r < 0)
                return r;
        end = buf + strlen(buf);
        for (p = buf; p < end;) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *line_end = nl ? nl : end;
                const char *key;
                size_t key_len;
                uint64_t v;

                r = parse_meminfo_line(p, line_end, node, &key, &key_len, &v);
                if (r < 0)
                        return r;
                if (key_is(key, key_len, "MemTotal")) {
                        if (have_total)
                                return -EINVAL;
                        total = v;
                        have_total = true;
                } else if (key_is(key, key_len, "MemFree")) {
                        if (have_free)
                                return -EINVAL;
                        free_kb = v;
                        have_free = true;
                }
                p = nl ? nl + 1 : end;
        }
        if (!have_total || !have_free || free_kb > total)
                return -EINVAL;
        *ret_total = total * KIB;
        *ret_free = free_kb * KIB;
        return 0;
}

int topo_read_resv(const struct sysfs *fs, uint64_t page_size, uint64_t *ret)
{
        char path[96];
        uint64_t kb;
        int r;

        r = page_size_kb(page_size, &kb);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), HUGEPAGES_DIR "/hugepages-%" PRIu64 "kB/resv_hugepages", kb);
        return sysfs_read_u64(fs, path, ret);
}
