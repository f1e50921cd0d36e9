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

/* A job is cut into at least this many chunks per worker, so that a pool
 * smaller than workers x 64 MiB still keeps every worker busy, and a worker
 * that runs slow leaves its peers at most a quarter of a share to wait on at
 * the end.  (Measured: one 64 MiB chunk for a 64 MiB pool left the second
 * worker idle and cost 30% against the ideal.) */
#define PLAN_CHUNKS_PER_THREAD 4

/* Smallest chunk: below a few MiB, syscall and queueing overhead per chunk
 * stops being noise. */
#define PLAN_MIN_CHUNK_BYTES (2 * MIB)

/* Largest chunk of a low-priority job (stock refill, recycle).  A normal job
 * that arrives while low-priority chunks are in flight waits for them (a
 * chunk is never interrupted), so this bounds how long a pool warm can be
 * held up by the stock: 16 MiB is 0.5-2 ms at the 8-30 GiB/s one thread
 * zeroes or populates, against ~30 ms for a 1 GiB warm with two threads.
 * Still 8 pages of 2 MiB per call, so the per-chunk cost stays noise. */
#define PLAN_LOW_CHUNK_BYTES (16 * MIB)

static bool is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

static int plan_cut(uint64_t size_bytes, uint64_t page_size, unsigned workers, unsigned threads_requested,
                    uint64_t max_chunk, struct plan *ret)
{
        uint64_t chunk, n;
        unsigned threads;

        if (!is_pow2(page_size) || size_bytes == 0 || size_bytes % page_size != 0 || workers == 0)
                return -EINVAL;

        /* A job can never have more workers than the node has. */
        threads = threads_requested ? threads_requested : workers;
        if (threads > workers)
                threads = workers;

        uint64_t lo = page_size > PLAN_MIN_CHUNK_BYTES ? page_size : PLAN_MIN_CHUNK_BYTES;
        uint64_t hi = page_size > max_chunk ? page_size : max_chunk;
        chunk = size_bytes / ((uint64_t)threads * PLAN_CHUNKS_PER_THREAD);
        chunk -= chunk % page_size;
        chunk = chunk < lo ? lo : chunk > hi ? hi : chunk;
        /* Written this way so sizes near UINT64_MAX cannot overflow. */
        n = size_bytes / chunk + (size_bytes % chunk != 0);
        if (threads > n)
                threads = (unsigned)n;

        *ret = (struct plan){ .chunk_bytes = chunk, .n_chunks = n, .threads = threads };
        return 0;
}

int plan_make(uint64_t size_bytes, uint64_t page_size, unsigned workers, unsigned threads_requested,
              struct plan *ret)
{
        return plan_cut(size_bytes, page_size, workers, threads_requested, PLAN_CHUNK_BYTES, ret);
}

int plan_make_low(uint64_t size_bytes, uint64_t page_size, unsigned workers, unsigned threads_requested,
                  struct plan *ret)
{
        return plan_cut(size_bytes, page_size, workers, threads_requested, PLAN_LOW_CHUNK_BYTES, ret);
}
