/* zero: non-temporal zeroing, dispatched on CPU features at run time.
 *
 * Why streaming stores.  Zeroing a recycled pool file writes gigabytes that
 * nobody reads back soon (the next VM touches them much later).  Ordinary
 * stores first read every line into the cache (read-for-ownership), then
 * evict other data to make room: twice the memory traffic and a polluted
 * cache shared with the other workers.  Streaming stores (MOVNTDQ and its
 * AVX/AVX-512 forms) write whole lines through write-combining buffers
 * without reading them.  The kernel's own clear_page for hugetlb faults
 * uses cached stores, which is why zeroing in userspace can beat
 * truncate + populate.
 *
 * Why run-time dispatch.  The daemon is built once for a generic x86-64 and
 * runs on hosts with and without AVX-512.  Each routine is compiled with a
 * per-function target attribute, and zero_best() picks the widest one that
 * __builtin_cpu_supports() says the CPU (and, for AVX/AVX-512, the kernel's
 * saved-state support: libgcc checks XCR0) can run.  Other architectures
 * get memset.
 *
 * Shape of a routine: plain memset up to the first 64-byte boundary, four
 * cache lines of streaming stores per iteration, then single lines, an
 * SFENCE so the weakly ordered streaming stores are globally visible before
 * whatever the caller does next (typically: mark the chunk done under a
 * mutex), and memset for a tail shorter than a line. */
#include <string.h>
#include <stdint.h>

#include "util.h"
#include "zero.h"

#if defined(__x86_64__) || defined(__i386__)
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

__attribute__((target("sse2"))) static void zero_sse2(void *dst, size_t len)
{
        uint8_t *p = dst;
        size_t h = head_bytes(p, len);
        const __m128i z = _mm_setzero_si128();

        memset(p, 0, h);
        p += h;
        len -= h;
        for (; len >= 4 * LINE; len -= 4 * LINE, p += 4 * LINE)
                for (unsigned i = 0; i < 4 * LINE; i += 16)
                        _mm_stream_si128((__m128i *)(void *)(p + i), z);
        for (; len >= LINE; len -= LINE, p += LINE)
                for (unsigned i = 0; i < LINE; i += 16)
                        _mm_stream_si128((__m128i *)(void *)(p + i), z);
        _mm_sfence();
        memset(p, 0, len);
}

__attribute__((target("avx2"))) static void zero_avx2(void *dst, size_t len)
{
        uint8_t *p = dst;
        size_t h = head_bytes(p, len);
        const __m256i z = _mm256_setzero_si256();

        memset(p, 0, h);
        p += h;
        len -= h;
        for (; len >= 4 * LINE; len -= 4 * LINE, p += 4 * LINE)
                for (unsigned i = 0; i < 4 * LINE; i += 32)
                        _mm256_stream_si256((__m256i *)(void *)(p + i), z);
        for (; len >= LINE; len -= LINE, p += LINE) {
                _mm256_stream_si256((__m256i *)(void *)p, z);
                _mm256_stream_si256((__m256i *)(void *)(p + 32), z);
        }
        _mm_sfence();
        /* Leave the upper halves of the vector registers clean for SSE code. */
        _mm256_zeroupper();
        memset(p, 0, len);
}

__attribute__((target("avx512f"))) static void zero_avx512(void *dst, size_t len)
{
        uint8_t *p = dst;
        size_t h = head_bytes(p, len);
        const __m512i z = _mm512_setzero_si512();

        memset(p, 0, h);
        p += h;
        len -= h;
        for (; len >= 4 * LINE; len -= 4 * LINE, p += 4 * LINE) {
                _mm512_stream_si512((__m512i *)(void *)p, z);
                _mm512_stream_si512((__m512i *)(void *)(p + LINE), z);
                _mm512_stream_si512((__m512i *)(void *)(p + 2 * LINE), z);
                _mm512_stream_si512((__m512i *)(void *)(p + 3 * LINE), z);
        }
        for (; len >= LINE; len -= LINE, p += LINE)
                _mm512_stream_si512((__m512i *)(void *)p, z);
        _mm_sfence();
        _mm256_zeroupper();
        memset(p, 0, len);
}
#endif

/* Best first; usable() says which this machine can run. */
static const struct {
        struct zero_routine r;
        const char *feature; /* for __builtin_cpu_supports; NULL = always */
} table[] = {
#ifdef ZERO_X86
        { { "avx512", true, zero_avx512 }, "avx512f" },
        { { "avx2", true, zero_avx2 }, "avx2" },
        { { "sse2", true, zero_sse2 }, "sse2" },
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
