/* plan: how a warm job is cut into chunks and how many workers take part.
 *
 * Pure arithmetic, no syscalls, so it can be table-tested exhaustively.  A
 * chunk is the unit a worker pulls from a job: one MADV_POPULATE_WRITE call.
 * Its size is a trade-off (see PLAN_CHUNK_BYTES); every chunk starts on a
 * page boundary, and with two workers or more the last ones shrink (see
 * PLAN_TAIL_SHARES), so the workers finish together. */
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

/* The tail.  Equal chunks leave the workers finishing up to one chunk apart
 * (one idles while the other does its last chunk: 1-2 ms at 4 GiB, measured
 * as the median gap between the two workers' last chunks).  So once fewer
 * than PLAN_TAIL_SHARES chunks per worker are left, a chunk is the left
 * bytes / (workers x PLAN_TAIL_SHARES), rounded down to min_chunk_bytes:
 * the chunks shrink toward the end (guided self-scheduling) and the workers
 * finish about one smallest chunk apart, for a dozen or so more chunks per
 * job.  A job with one worker has no one to wait for and keeps equal
 * chunks. */
#define PLAN_TAIL_SHARES 2

static bool is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* Bytes left at which the tail starts (chunks shrink below it), or 0 when
 * there is no tail (one thread, or a product too large to matter). */
static uint64_t tail_start(const struct plan *p)
{
        uint64_t shares = (uint64_t)p->threads * PLAN_TAIL_SHARES;

        if (p->threads <= 1 || p->min_chunk_bytes >= p->chunk_bytes || shares > UINT64_MAX / p->chunk_bytes)
                return 0;
        return p->chunk_bytes * shares;
}

uint64_t plan_chunk_len(const struct plan *p, uint64_t left)
{
        uint64_t c = p->chunk_bytes;
        uint64_t tail = tail_start(p);

        if (tail && left < tail) {
                c = left / ((uint64_t)p->threads * PLAN_TAIL_SHARES);
                c -= c % p->min_chunk_bytes;
                if (c < p->min_chunk_bytes)
                        c = p->min_chunk_bytes;
        }
        return c < left ? c : left;
}

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

        struct plan p = { .chunk_bytes = chunk, .min_chunk_bytes = lo < chunk ? lo : chunk, .threads = threads };
        uint64_t tail = tail_start(&p), left = size_bytes;

        /* Full chunks up to the tail, counted at once (sizes near
         * UINT64_MAX), then the tail chunk by chunk: fewer than
         * workers x PLAN_TAIL_SHARES x chunk_bytes / min_chunk_bytes steps. */
        n = 0;
        if (tail && left >= tail) {
                uint64_t full = (left - tail) / chunk + 1;

                n = full;
                left -= full * chunk;
        } else if (!tail) {
                n = left / chunk;
                left -= n * chunk;
        }
        while (left) {
                left -= plan_chunk_len(&p, left);
                n++;
        }
        p.n_chunks = n;
        *ret = p;
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
