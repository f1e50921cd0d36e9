/* plan: PURE sizing of a warm job — how it is cut into chunks and how many
 * workers take part.  No syscalls; table-tested in tests/unit/test_plan.c. */
#pragma once
#include <stdint.h>

struct plan {
        uint64_t chunk_bytes;   /* largest chunk, a multiple of the page size (size / (threads x 4) within [2 MiB, 64 MiB], or one page if larger) */
        uint64_t min_chunk_bytes; /* smallest tail chunk: 2 MiB or one page if larger (at most chunk_bytes) */
        uint64_t n_chunks;      /* chunks in all, the shrinking tail included (plan_chunk_len) */
        unsigned threads;       /* workers that take part: min(requested or available, available, size / chunk_bytes rounded up) */
};

/* Length of the chunk handed out when LEFT bytes (a positive multiple of
 * the page size) of the job are still to hand out: chunk_bytes, except in
 * the tail (see PLAN_TAIL_SHARES in plan.c) where it shrinks with LEFT down
 * to min_chunk_bytes; never more than LEFT.  Chunks start at 0 and follow
 * each other, so the k-th chunk's offset is the sum of the ones before. */
uint64_t plan_chunk_len(const struct plan *p, uint64_t left);

/* SIZE_BYTES must be a positive multiple of PAGE_SIZE (a power of two).
 * WORKERS is how many workers the node has; THREADS_REQUESTED 0 = all of them.
 * -EINVAL on bad arguments. */
int plan_make(uint64_t size_bytes, uint64_t page_size, unsigned workers, unsigned threads_requested,
              struct plan *ret);
/* The same for a low-priority job (stock refill, recycle): chunks of at most
 * 16 MiB (or one page if larger), so that a normal job arriving meanwhile
 * waits for little (see PLAN_LOW_CHUNK_BYTES in plan.c). */
int plan_make_low(uint64_t size_bytes, uint64_t page_size, unsigned workers, unsigned threads_requested,
                  struct plan *ret);
