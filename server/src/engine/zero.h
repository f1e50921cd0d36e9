/* zero: clear memory without reading it first (CLZERO or non-temporal
 * streaming stores), choosing the best routine the CPU supports at run time.  Used by the engine to zero a
 * populated hugetlbfs file in place (a recycle) without taking its pages back
 * from the kernel.  Pure CPU work: no syscalls, no allocation. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct zero_routine {
        const char *name;   /* "clzero", "avx512", "avx2", "sse2", "erms", "memset" */
        bool streaming;     /* non-temporal stores or CLZERO (false: rep stosb, memset) */
        /* Sets LEN bytes at DST to zero.  Any alignment and length work; the
         * streaming routines go fastest on 64-byte aligned ranges (pages). */
        void (*fn)(void *dst, size_t len);
};

/* The best routine this CPU and kernel support (CLZERO, else the widest
 * streaming stores, else the portable memset).  Static; never NULL. */
const struct zero_routine *zero_best(void);
/* The routine called NAME if this machine can run it, else NULL. */
const struct zero_routine *zero_find(const char *name);
/* Fills OUT with up to MAX routines this machine can run, best first, and
 * returns how many there are (memset is always one of them). */
size_t zero_supported(const struct zero_routine **out, size_t max);
