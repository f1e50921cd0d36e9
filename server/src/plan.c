/* plan: how a warm job is cut into chunks and how many workers take part.
 *
 * Pure arithmetic, no syscalls, so it can be table-tested exhaustively.  A
 * chunk is the unit a worker pulls from a job: one MADV_POPULATE_WRITE call.
 * Its size is a trade-off (see PLAN_CHUNK_BYTES); every chunk starts on a
 * page boundary and only the last one may be shorter. */
#include <errno.h>
#include <stdbool.h>

#include "plan.h"
#include "util.h"

/* 64 MiB: at the 2-10 GiB/s one thread zeroes, a chunk takes roughly 6-30 ms.
 * That is short enough for smooth progress reports, for a cancel to stop
 * within a blink, and for each populate call to give the mmap lock back often
 * (other threads' mmap/munmap do not wait long behind us); it is long enough
 * that the syscall and queueing cost per chunk (microseconds) is noise.  It is
 * a multiple of every page size below it.  Pages at least this large (1 GiB)
 * make a chunk of exactly one page. */
#define PLAN_CHUNK_BYTES (64 * MIB)

static bool is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

int plan_make(uint64_t size_bytes, uint64_t page_size, unsigned workers, unsigned threads_requested,
              struct plan *ret)
{
        uint64_t chunk, n;
        unsigned threads;

        if (!is_pow2(page_size) || size_bytes == 0 || size_bytes % page_size != 0 || workers == 0)
                return -EINVAL;

        chunk = page_size >= PLAN_CHUNK_BYTES ? page_size : PLAN_CHUNK_BYTES;
        /* Written this way so sizes near UINT64_MAX cannot overflow. */
        n = size_bytes / chunk + (size_bytes % chunk != 0);

        /* A job can never have more workers than the node has. */
        threads = threads_requested ? threads_requested : workers;
        if (threads > workers)
                threads = workers;
        if (threads > n)
                threads = (unsigned)n;

        *ret = (struct plan){ .chunk_bytes = chunk, .n_chunks = n, .threads = threads };
        return 0;
}
