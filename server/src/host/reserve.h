/* reserve: set one node's persistent hugepage pool (nr_hugepages) and tell the
 * truth about what the kernel did.  The kernel may give fewer pages than asked
 * (fragmentation) and still report success, so every write is read back.
 *
 * May block for seconds (1 GiB pages compact memory): never call it on the
 * HTTP thread. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct sysfs;

/* floor_bytes value meaning "the default": 1/32 of the node's memory (enough
 * for the kernel, the VMM processes and page cache on a host that gives most
 * of its memory to guests), but at least 256 MiB for small nodes. */
#define RESERVE_FLOOR_AUTO UINT64_MAX
#define RESERVE_FLOOR_AUTO_DIVISOR 32
#define RESERVE_FLOOR_AUTO_MIN (UINT64_C(256) << 20)

/* The floor in bytes for a node of NODE_TOTAL bytes. */
uint64_t reserve_floor(uint64_t floor_bytes, uint64_t node_total);

struct reserve_req {
        int node;
        uint64_t page_size;    /* bytes */
        uint64_t count;        /* desired nr_hugepages on that node */
        bool allow_partial;
        uint64_t floor_bytes;  /* keep at least this much ordinary memory free on the node;
                                  RESERVE_FLOOR_AUTO for the default */
};

struct reserve_result {
        uint64_t previous;     /* nr_hugepages before */
        uint64_t requested;
        uint64_t achieved;     /* nr_hugepages read back after the write */
        uint64_t total;        /* nr_hugepages now (== previous after a restore) */
        uint64_t free;         /* free_hugepages now */
        bool complete;         /* achieved == requested */
        /* -ENOMEM (the floor) only: what would have worked. */
        uint64_t floor_bytes;  /* the floor applied on this node */
        uint64_t mem_free_bytes; /* the node's free memory when checked */
        uint64_t max_count;    /* the largest count that keeps the floor free */
};

/* Returns:
 *   0        done; *ret filled (complete=false only with allow_partial, or when
 *            shrinking could not free in-use pages);
 *   -ENOMEM  growing would leave the node with less free memory than the
 *            floor: nothing was written; *ret has the current counts, the
 *            floor, the free memory and max_count, the largest count that
 *            would have been allowed;
 *   -EAGAIN  the kernel gave fewer pages than asked and allow_partial was not
 *            set: the previous count was restored; *ret->achieved says what
 *            the kernel gave;
 *   -ENOENT  no such node / page size; other -errno on I/O failure. */
int reserve_apply(const struct sysfs *fs, const struct reserve_req *req, struct reserve_result *ret);
