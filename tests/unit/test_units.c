/* units: table tests for page sizes and byte counts, valid and hostile. */
#include <errno.h>

#include "check.h"
#include "units.h"
#include "util.h"

TEST(parse_page_size)
{
        static const struct {
                const char *s;
                int r;
                uint64_t v;
        } cases[] = {
                { "2M", 0, 2 * MIB },
                { "2MiB", 0, 2 * MIB },
                { "2048kB", 0, 2 * MIB },
                { "2048K", 0, 2 * MIB },
                { "2048KiB", 0, 2 * MIB },
                { "1G", 0, GIB },
                { "1GiB", 0, GIB },
                { "1048576kB", 0, GIB },
                { "1024M", 0, GIB },
                { "4K", 0, 4 * KIB },
                { "64kB", 0, 64 * KIB },
                { "16G", 0, 16 * GIB },
                { "1T", 0, UINT64_C(1) << 40 },
                { "", -EINVAL, 0 },
                { "M", -EINVAL, 0 },
                { "0M", -EINVAL, 0 },
                { "2m", -EINVAL, 0 },
                { "2mib", -EINVAL, 0 },
                { "2MB", -EINVAL, 0 },
                { "2Mi", -EINVAL, 0 },
                { "2048KB", -EINVAL, 0 },
                { "2048kb", -EINVAL, 0 },
                { "1g", -EINVAL, 0 },
                { "3M", -EINVAL, 0 },        /* not a power of two */
                { "1536kB", -EINVAL, 0 },
                { "2K", -EINVAL, 0 },        /* below 4 KiB */
                { "2097152", -EINVAL, 0 },   /* unit required */
                { "2048", -EINVAL, 0 },
                { "-2M", -EINVAL, 0 },
                { "+2M", -EINVAL, 0 },
                { " 2M", -EINVAL, 0 },
                { "2M ", -EINVAL, 0 },
                { "2 M", -EINVAL, 0 },
                { "02M", -EINVAL, 0 },
                { "1.5G", -EINVAL, 0 },
                { "2M2M", -EINVAL, 0 },
                { "99999999999999999999G", -EINVAL, 0 },
                { "17179869184G", -EINVAL, 0 }, /* 2^34 G overflows */
        };
        size_t i;

        for (i = 0; i < ARRAY_SIZE(cases); i++) {
                uint64_t v = 12345;
                int r = parse_page_size(cases[i].s, &v);

                if (r != cases[i].r)
                        fprintf(stderr, "case \"%s\"\n", cases[i].s);
                CHECK_INT(r, ==, cases[i].r);
                CHECK_U64(v, ==, r == 0 ? cases[i].v : 12345);
        }
        CHECK_INT(parse_page_size(NULL, NULL), ==, -EINVAL);
}

TEST(parse_size)
{
        static const struct {
                const char *s;
                int r;
                uint64_t v;
        } cases[] = {
                { "0", 0, 0 },
                { "4096", 0, 4096 },
                { "64G", 0, 64 * GIB },
                { "512M", 0, 512 * MIB },
                { "1GiB", 0, GIB },
                { "3M", 0, 3 * MIB },
                { "1K", 0, KIB },
                { "1KiB", 0, KIB },
                { "2T", 0, UINT64_C(2) << 40 },
                { "2TiB", 0, UINT64_C(2) << 40 },
                { "18446744073709551615", 0, UINT64_MAX },
                { "16777215T", 0, UINT64_C(16777215) << 40 },
                { "18446744073709551616", -ERANGE, 0 },
                { "99999999999999999999G", -ERANGE, 0 },
                { "16777216T", -ERANGE, 0 },
                { "17179869184G", -ERANGE, 0 },
                { "", -EINVAL, 0 },
                { "G", -EINVAL, 0 },
                { "-1", -EINVAL, 0 },
                { "+1", -EINVAL, 0 },
                { "1.5G", -EINVAL, 0 },
                { "1e9", -EINVAL, 0 },
                { "64g", -EINVAL, 0 },
                { "64GB", -EINVAL, 0 },
                { "2048kB", -EINVAL, 0 }, /* kB is the kernel's page-size spelling only */
                { "64 G", -EINVAL, 0 },
                { " 64G", -EINVAL, 0 },
                { "0x10", -EINVAL, 0 },
                { "010", -EINVAL, 0 },
        };
        size_t i;

        for (i = 0; i < ARRAY_SIZE(cases); i++) {
                uint64_t v = 12345;
                int r = parse_size(cases[i].s, &v);

                if (r != cases[i].r)
                        fprintf(stderr, "case \"%s\"\n", cases[i].s);
                CHECK_INT(r, ==, cases[i].r);
                CHECK_U64(v, ==, r == 0 ? cases[i].v : 12345);
        }
        CHECK_INT(parse_size(NULL, NULL), ==, -EINVAL);
}

TEST(format_size)
{
        static const struct {
                uint64_t v;
                const char *s;
        } cases[] = {
                { 0, "0" },
                { 1, "1" },
                { 1000, "1000" },
                { KIB, "1K" },
                { 512 * KIB, "512K" },
                { 2 * MIB, "2M" },
                { 1536 * KIB, "1536K" },
                { GIB, "1G" },
                { 64 * GIB, "64G" },
                { 3 * MIB, "3M" },
                { UINT64_C(1) << 40, "1T" },
                { UINT64_MAX, "18446744073709551615" },
        };
        char buf[32];
        size_t i;

        for (i = 0; i < ARRAY_SIZE(cases); i++) {
                format_size(cases[i].v, buf, sizeof(buf));
                CHECK_STR(buf, cases[i].s);
        }
        /* Truncates, never overflows. */
        format_size(64 * GIB, buf, 3);
        CHECK_STR(buf, "64");
        /* Round trip for every page size we print. */
        for (i = 12; i <= 40; i++) {
                uint64_t v;

                format_size(UINT64_C(1) << i, buf, sizeof(buf));
                CHECK_INT(parse_page_size(buf, &v), ==, 0);
                CHECK_U64(v, ==, UINT64_C(1) << i);
        }
}

TEST_MAIN()
