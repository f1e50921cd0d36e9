/* topo: NUMA nodes, their CPUs and the hugepage sizes the kernel offers, read
 * once at start into an immutable snapshot; plus readers for the counters that
 * change (free memory, per-node hugepage counts, global reservations).
 *
 * Node ids need not be contiguous (0 and 2); a node may have no CPUs
 * (memory-only). */
#pragma once
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sysfs;

#define TOPO_MAX_PAGE_SIZES 4

struct topo_node {
        int id;
        char *cpulist;        /* kernel's cpulist string, e.g. "0-3,8" ("" if none) */
        unsigned cpu_count;
        cpu_set_t *cpus;      /* CPU_ALLOC'd, cpus_size bytes; empty set if none */
        size_t cpus_size;
};

struct topo {
        size_t n_nodes;
        struct topo_node *nodes;           /* sorted by id */
        size_t n_page_sizes;
        uint64_t page_sizes[TOPO_MAX_PAGE_SIZES]; /* bytes, ascending */
};

/* Read devices/system/node/node*: cpulist, and kernel/mm/hugepages/hugepages-*kB.
 * The caller owns *ret (topo_free).  -ENOENT if there is no node at all. */
int topo_load(const struct sysfs *fs, struct topo **ret);
void topo_free(struct topo *t); /* accepts NULL */

/* NULL if there is no node ID. */
const struct topo_node *topo_node(const struct topo *t, int id);
bool topo_has_page_size(const struct topo *t, uint64_t page_size);

/* Parse a cpulist ("0-3,8,10-11") into a CPU_ALLOC'd set.  Caller frees with
 * CPU_FREE.  -EINVAL on syntax errors. */
int cpulist_parse(const char *s, cpu_set_t **ret_set, size_t *ret_size, unsigned *ret_count);

struct hp_counts {
        uint64_t total;   /* nr_hugepages */
        uint64_t free;    /* free_hugepages */
        uint64_t surplus; /* surplus_hugepages */
};

/* devices/system/node/nodeN/hugepages/hugepages-<kB>kB/{nr,free,surplus}_hugepages */
int topo_read_hugepages(const struct sysfs *fs, int node, uint64_t page_size, struct hp_counts *ret);
/* devices/system/node/nodeN/meminfo: MemTotal and MemFree, in bytes. */
int topo_read_meminfo(const struct sysfs *fs, int node, uint64_t *ret_total, uint64_t *ret_free);
/* kernel/mm/hugepages/hugepages-<kB>kB/resv_hugepages (global; none per node). */
int topo_read_resv(const struct sysfs *fs, uint64_t page_size, uint64_t *ret);
