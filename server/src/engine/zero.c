/* zero: zeroing that does not read what it overwrites, dispatched on CPU
 * features at run time.
 *
 * Why stores that skip the cache.  Zeroing a recycled pool file writes
 * gigabytes that nobody reads back soon (the next VM touches them much
 * later).  Ordinary stores first read every line into the cache
 * (read-for-ownership), then evict other data to make room: twice the memory
 * traffic and a polluted cache shared with the other workers.  Streaming
 * stores (MOVNTDQ and its AVX/AVX-512 forms) write whole lines through
 * write-combining buffers without reading them.  The kernel's own clear_page
 * for hugetlb faults uses cached stores, which is why zeroing in userspace
 * can beat truncate + populate.
 *
 * Why CLZERO first.  AMD's CLZERO clears one whole cache line per
 * instruction, weakly ordered like a streaming store, with no data operand
 * at all.  Measured on this project's machine kind (AMD EPYC, 2 vCPUs, a 2
 * or 4 GiB mapped hugetlbfs file, 2 threads, interleaved rounds, medians on
 * a busy host): clzero 45-55 GiB/s, AVX-512 streaming stores 23-39,
 * `rep stosb` 35, glibc memset 29-33; best rounds 55-75 against 47-49.  So
 * where the CPU has it, it goes first.
 *
 * Why run-time dispatch.  The daemon is built once for a generic x86-64 and
 * runs on hosts with and without AVX-512 or CLZERO.  Each routine is compiled
 * with a per-function target attribute (or is plain asm), and zero_best()
 * picks the first one in the table that the CPU (and, for AVX/AVX-512, the
 * kernel's saved-state support: libgcc checks XCR0) can run.  Other
 * architectures get memset.
 *
 * Shape of a routine: plain memset up to the first 64-byte boundary, four
 * cache lines per iteration, then single lines, an SFENCE so the weakly
 * ordered stores are globally visible before whatever the caller does next
 * (typically: mark the chunk done under a mutex), and memset for a tail
 * shorter than a line.  `erms` is a single `rep stosb` over the whole range
 * (the CPU's own string engine; cached or not is the microcode's choice),
 * kept so the bench can compare it. */
#include <string.h>
#include <stdint.h>

#include "util.h"
#include "zero.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define ZERO_X86 1
#endif

/* A cache line: the unit the streaming loops write and align to. */
#define LINE 64

static void zero_memset(void *dst, size_t len) { memset(dst, 0, len); }

#ifdef ZERO_X86
/* Bytes from P to the next line boundary, at most LEN. */
static size_t head_bytes(const uint8_t *p, size_t len)
{
        size_t h = (size_t)(-(uintptr_t)p & (LINE - 1));

        return h < len ? h : len;
}

/* The shape every streaming routine shares (see the top of the file),
 * with STORE_LINE(q) clearing the line at q. */
#define ZERO_STREAMING_(dst, len, STORE_LINE)                                  \
        do {                                                                   \
                uint8_t *p_ = (dst);                                           \
                size_t n_ = (len), h_ = head_bytes(p_, n_);                    \
                                                                               \
                memset(p_, 0, h_);                                             \
                p_ += h_;                                                      \
                n_ -= h_;                                                      \
                for (; n_ >= 4 * LINE; n_ -= 4 * LINE, p_ += 4 * LINE) {       \
                        STORE_LINE(p_);                                        \
                        STORE_LINE(p_ + LINE);                                 \
                        STORE_LINE(p_ + 2 * LINE);                             \
                        STORE_LINE(p_ + 3 * LINE);                             \
                }                                                              \
                for (; n_ >= LINE; n_ -= LINE, p_ += LINE)                     \
                        STORE_LINE(p_);                                        \
                _mm_sfence();                                                  \
                memset(p_, 0, n_);                                             \
        } while (0)

#define SSE2_LINE(q)                                                            \
        do {                                                                    \
                for (unsigned i_ = 0; i_ < LINE; i_ += 16)                      \
                        _mm_stream_si128((__m128i *)(void *)((q) + i_), _mm_setzero_si128()); \
        } while (0)
#define AVX2_LINE(q)                                                            \
        do {                                                                    \
                _mm256_stream_si256((__m256i *)(void *)(q), _mm256_setzero_si256());        \
                _mm256_stream_si256((__m256i *)(void *)((q) + 32), _mm256_setzero_si256()); \
        } while (0)
#define AVX512_LINE(q) _mm512_stream_si512((__m512i *)(void *)(q), _mm512_setzero_si512())

__attribute__((target("sse2"))) static void zero_sse2(void *dst, size_t len)
{
        ZERO_STREAMING_(dst, len, SSE2_LINE);
}

__attribute__((target("avx2"))) static void zero_avx2(void *dst, size_t len)
{
        ZERO_STREAMING_(dst, len, AVX2_LINE);
        /* Leave the upper halves of the vector registers clean for SSE code. */
        _mm256_zeroupper();
}

__attribute__((target("avx512f"))) static void zero_avx512(void *dst, size_t len)
{
        ZERO_STREAMING_(dst, len, AVX512_LINE);
        _mm256_zeroupper();
}

/* CLZERO (AMD): clears the whole line that RAX points into. */
static inline void clzero_line(uint8_t *p) { __asm__ volatile(".byte 0x0f, 0x01, 0xfc" : : "a"(p) : "memory"); }

static void zero_clzero(void *dst, size_t len)
{
        ZERO_STREAMING_(dst, len, clzero_line);
}

static void zero_erms(void *dst, size_t len)
{
        __asm__ volatile("rep stosb" : "+D"(dst), "+c"(len) : "a"(0) : "memory");
}

/* CLZERO is CPUID 0x80000008 EBX bit 0.  It clears the CPU's cache line,
 * which must be the LINE the loop steps by: CPUID 1 EBX[15:8] gives the
 * CLFLUSH line size in 8-byte units. */
static bool has_clzero(void)
{
        unsigned a, b, c, d;

        if (!__get_cpuid(1, &a, &b, &c, &d) || ((b >> 8) & 0xff) * 8 != LINE)
                return false;
        if (__get_cpuid_max(0x80000000, NULL) < 0x80000008)
                return false;
        __cpuid(0x80000008, a, b, c, d);
        return b & 1;
}

/* Enhanced REP MOVSB/STOSB: CPUID 7.0 EBX bit 9. */
static bool has_erms(void)
{
        unsigned a, b, c, d;

        return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 9) & 1;
}
#endif

/* Best first; usable() says which this machine can run. */
static const struct {
        struct zero_routine r;
        const char *feature; /* for __builtin_cpu_supports; NULL = always */
} table[] = {
#ifdef ZERO_X86
        { { "clzero", true, zero_clzero }, "clzero" },
        { { "avx512", true, zero_avx512 }, "avx512f" },
        { { "avx2", true, zero_avx2 }, "avx2" },
        { { "sse2", true, zero_sse2 }, "sse2" },
        { { "erms", false, zero_erms }, "erms" },
#endif
        { { "memset", false, zero_memset }, NULL },
};

static bool usable(size_t i)
{
#ifdef ZERO_X86
        /* __builtin_cpu_supports needs a string literal. */
        const char *f = table[i].feature;

        __builtin_cpu_init();
        if (!f)
                return true;
        if (strcmp(f, "avx512f") == 0)
                return __builtin_cpu_supports("avx512f");
        if (strcmp(f, "avx2") == 0)
                return __builtin_cpu_supports("avx2");
        if (strcmp(f, "sse2") == 0)
                return __builtin_cpu_supports("sse2");
        if (strcmp(f, "clzero") == 0)
                return has_clzero();
        if (strcmp(f, "erms") == 0)
                return has_erms();
        return false;
#else
        return table[i].feature == NULL;
#endif
}

size_t zero_supported(const struct zero_routine **out, size_t max)
{
        size_t n = 0;

        for (size_t i = 0; i < ARRAY_SIZE(table); i++)
                if (usable(i)) {
                        if (n < max)
                                out[n] = &table[i].r;
                        n++;
                }
        return n;
}

const struct zero_routine *zero_best(void)
{
        const struct zero_routine *r = NULL;

        /* memset is always usable, so there is at least one. */
        zero_supported(&r, 1);
        return r;
}

const struct zero_routine *zero_find(const char *name)
{
        for (size_t i = 0; name && i < ARRAY_SIZE(table); i++)
                if (strcmp(table[i].r.name, name) == 0)
                        return usable(i) ? &table[i].r : NULL;
        return NULL;
}
