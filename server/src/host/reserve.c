/* reserve: set one node's persistent hugepage pool and report what the kernel
 * really did.
 *
 * Writing nodeN/.../nr_hugepages asks the kernel to grow or shrink the pool.
 * It answers success even when it found fewer contiguous pages than asked
 * (fragmentation) and, when shrinking, silently keeps pages that are in use.
 * So the write is never trusted: the count is read back and compared.  A
 * shortfall is undone unless the caller said partial is fine, so a failed
 * request leaves the machine as it was.  Growing is refused up front, with
 * nothing written, when it would eat into the ordinary memory floor: the
 * kernel would otherwise happily take memory the node's workloads need.
 *
 * Each call is a read-modify-write of one pool: callers must not run two on
 * the same node and page size at once, or the restore of one could undo the
 * other.  All I/O goes through sysfs.h; tests inject a lying kernel there. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "reserve.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

static void fill_result(struct reserve_result *ret, const struct reserve_req *req, uint64_t previous,
                        uint64_t achieved, const struct hp_counts *now)
{
        ret->previous = previous;
        ret->requested = req->count;
        ret->achieved = achieved;
        ret->total = now->total;
        ret->free = now->free;
        ret->complete = achieved == req->count;
}

uint64_t reserve_floor(uint64_t floor_bytes, uint64_t node_total)
{
        if (floor_bytes != RESERVE_FLOOR_AUTO)
                return floor_bytes;
        uint64_t f = node_total / RESERVE_FLOOR_AUTO_DIVISOR;
        return f < RESERVE_FLOOR_AUTO_MIN ? RESERVE_FLOOR_AUTO_MIN : f;
}

/* Would growing from CURRENT by DELTA pages of PAGE_SIZE leave less than
 * the floor free?  On -ENOMEM, *RET gets the floor, the free memory and the
 * largest count that would fit, so the refusal can say what would work. */
static int check_floor(const struct sysfs *fs, const struct reserve_req *req, uint64_t current,
                       uint64_t delta, struct reserve_result *ret)
{
        uint64_t total, mem_free, need, floor, room;
        int r;

        r = topo_read_meminfo(fs, req->node, &total, &mem_free);
        if (r < 0)
                return r;
        floor = reserve_floor(req->floor_bytes, total);
        room = mem_free > floor ? (mem_free - floor) / req->page_size : 0;
        if (__builtin_mul_overflow(delta, req->page_size, &need) || mem_free < floor ||
            mem_free - floor < need) {
                ret->floor_bytes = floor;
                ret->mem_free_bytes = mem_free;
                ret->max_count = current > UINT64_MAX - room ? UINT64_MAX : current + room;
                return -ENOMEM;
        }
        return 0;
}

int reserve_apply(const struct sysfs *fs, const struct reserve_req *req, struct reserve_result *ret)
{
        struct hp_counts before, after;
        uint64_t achieved;
        char path[160];
        int r;

        if (req->node < 0 || req->page_size == 0 || req->page_size % KIB != 0)
                return -ENOENT;
        r = topo_read_hugepages(fs, req->node, req->page_size, &before);
        if (r < 0)
                return r;

        if (req->count == before.total) {
                /* Nothing to ask the kernel; do not trigger compaction for it. */
                fill_result(ret, req, before.total, before.total, &before);
                return 0;
        }

        if (req->count > before.total) {
                struct reserve_result floor_res = {0};

                r = check_floor(fs, req, before.total, req->count - before.total, &floor_res);
                if (r == -ENOMEM) {
                        fill_result(ret, req, before.total, before.total, &before);
                        ret->floor_bytes = floor_res.floor_bytes;
                        ret->mem_free_bytes = floor_res.mem_free_bytes;
                        ret->max_count = floor_res.max_count;
                }
                if (r < 0)
                        return r;
        }

        snprintf(path, sizeof(path), "devices/system/node/node%d/hugepages/hugepages-%" PRIu64 "kB/nr_hugepages",
                 req->node, req->page_size / KIB);
        r = sysfs_write_u64(fs, path, req->count);
        if (r < 0)
                return r;
        r = sysfs_read_u64(fs, path, &achieved);
        if (r < 0)
                return r;

        if (req->count > before.total && achieved < req->count && !req->allow_partial) {
                /* Give back what we got, so a refused request changes nothing.
                 * Shrinking to the old count cannot fail for want of memory:
                 * the pages just added are free. */
                r = sysfs_write_u64(fs, path, before.total);
                if (r < 0)
                        return r;
                r = topo_read_hugepages(fs, req->node, req->page_size, &after);
                if (r < 0)
                        return r;
                fill_result(ret, req, before.total, achieved, &after);
                return -EAGAIN;
        }

        /* Shrinking that stops short (pages in use) is reported, not undone:
         * the free pages were released, which is what shrinking is for. */
        r = topo_read_hugepages(fs, req->node, req->page_size, &after);
        if (r < 0)
                return r;
        fill_result(ret, req, before.total, achieved, &after);
        return 0;
}
