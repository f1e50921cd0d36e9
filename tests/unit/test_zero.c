/* zero.c: every routine this machine can run clears exactly the bytes it is
 * given (every byte of the range is zero, the guard bytes on both sides keep
 * their pattern) for heads and tails that are not line-aligned, lengths below,
 * at and above one and four cache lines, and a 2 MiB page plus change; and the
 * dispatch picks the best supported routine (clzero where the CPU has it)
 * with memset always available. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "util.h"
#include "zero.h"

#define GUARD 128
#define PATTERN 0xa5

static void check_routine(const struct zero_routine *r, size_t align_off, size_t len)
{
        size_t total = GUARD + align_off + len + GUARD;
        uint8_t *buf = aligned_alloc(4096, (total + 4095) / 4096 * 4096);
        uint8_t *dst;

        CHECK(buf);
        memset(buf, PATTERN, total);
        /* GUARD is a multiple of 64, so dst is align_off past a line boundary. */
        dst = buf + GUARD + align_off;
        r->fn(dst, len);
        for (size_t i = 0; i < len; i++)
                if (dst[i] != 0)
                        CHECK_FAIL_("%s: byte %zu of %zu (offset %zu) is 0x%02x, not zero", r->name, i, len,
                                    align_off, dst[i]);
        for (size_t i = 0; i < GUARD + align_off; i++)
                if (buf[i] != PATTERN)
                        CHECK_FAIL_("%s: guard byte %zu before the range was written", r->name,
                                    GUARD + align_off - i);
        for (size_t i = 0; i < GUARD; i++)
                if (dst[len + i] != PATTERN)
                        CHECK_FAIL_("%s: guard byte %zu after the range (len %zu, offset %zu) was written", r->name,
                                    i, len, align_off);
        free(buf);
}

TEST(every_routine_zeroes_exactly_its_range)
{
        static const size_t lens[] = { 0, 1, 15, 16, 63, 64, 65, 127, 128, 255, 256, 257, 320, 1000, 4096,
                                       4096 + 7, 2 * MIB, 2 * MIB + 13 };
        static const size_t offs[] = { 0, 1, 8, 16, 31, 32, 48, 63 };
        const struct zero_routine *rs[8];
        size_t n = zero_supported(rs, ARRAY_SIZE(rs));

        CHECK_U64(n, >=, 1);
        CHECK_U64(n, <=, ARRAY_SIZE(rs));
        for (size_t k = 0; k < n; k++) {
                for (size_t i = 0; i < ARRAY_SIZE(lens); i++)
                        for (size_t o = 0; o < ARRAY_SIZE(offs); o++)
                                check_routine(rs[k], offs[o], lens[i]);
                fprintf(stderr, "zero: %s (streaming %d) ok\n", rs[k]->name, rs[k]->streaming);
        }
}

TEST(dispatch)
{
        const struct zero_routine *rs[8], *best = zero_best();
        size_t n = zero_supported(rs, ARRAY_SIZE(rs));

        CHECK(best);
        CHECK(best == rs[0]);
        /* memset is always there, and last (the fallback). */
        CHECK_STR(rs[n - 1]->name, "memset");
        CHECK(!rs[n - 1]->streaming);
        CHECK(zero_find("memset") == rs[n - 1]);
        CHECK(zero_find("no-such-routine") == NULL);
        CHECK(zero_find(NULL) == NULL);
        for (size_t k = 0; k < n; k++)
                CHECK(zero_find(rs[k]->name) == rs[k]);
        /* A short OUT still gets the count. */
        CHECK_U64(zero_supported(rs, 1), ==, n);
#if defined(__x86_64__)
        /* SSE2 is part of x86-64: the best routine streams. */
        CHECK(zero_find("sse2") != NULL);
        /* rep stosb is always there on x86-64; only with ERMS is it offered. */
        CHECK(zero_find("erms") == NULL || !zero_find("erms")->streaming);
        CHECK(best->streaming);
        if (zero_find("clzero"))
                CHECK_STR(best->name, "clzero");
        else if (__builtin_cpu_supports("avx512f"))
                CHECK_STR(best->name, "avx512");
        else if (__builtin_cpu_supports("avx2"))
                CHECK_STR(best->name, "avx2");
        else
                CHECK_STR(best->name, "sse2");
#endif
        fprintf(stderr, "zero: best routine here is %s\n", best->name);
}

TEST_MAIN()
