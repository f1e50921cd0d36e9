/* size_cases.h: the one table of the size grammar (common/size.h), included
 * by the daemon's unit test (tests/unit/test_units.c, through units.h) and by
 * the client's (tests/client/test_cli.c, through the CLI's parser), so both
 * sides are checked against the same rows: whatever one accepts, the other
 * does, with the same value.
 *
 * Each row: the string; what parsing it as a byte count gives (0 or -errno,
 * and the value); whether it is a page size (and then the value is the same).
 * The rows use EINVAL and ERANGE: include <errno.h> first. */
#pragma once
#include <stdint.h>

struct size_case {
        const char *s;
        int size_r;        /* hpw_size_parse: 0, -EINVAL or -ERANGE */
        uint64_t v;        /* the value when size_r == 0 */
        int page_ok;       /* 1: also a valid page size (same value) */
};

#define SC_K(n) ((uint64_t)(n) << 10)
#define SC_M(n) ((uint64_t)(n) << 20)
#define SC_G(n) ((uint64_t)(n) << 30)
#define SC_T(n) ((uint64_t)(n) << 40)

static const struct size_case size_cases[] = {
        /* every unit spelling, all binary */
        { "2M", 0, SC_M(2), 1 },
        { "2MiB", 0, SC_M(2), 1 },
        { "2048kB", 0, SC_M(2), 1 },       /* the kernel's spelling: sizes too (was 422) */
        { "2048K", 0, SC_M(2), 1 },
        { "2048KiB", 0, SC_M(2), 1 },
        { "1G", 0, SC_G(1), 1 },
        { "1GiB", 0, SC_G(1), 1 },
        { "1048576kB", 0, SC_G(1), 1 },
        { "1024M", 0, SC_G(1), 1 },
        { "4K", 0, SC_K(4), 1 },
        { "64kB", 0, SC_K(64), 1 },
        { "16G", 0, SC_G(16), 1 },
        { "1T", 0, SC_T(1), 1 },
        { "2TiB", 0, SC_T(2), 1 },
        { "64G", 0, SC_G(64), 1 },
        /* byte counts that are not page sizes */
        { "0", 0, 0, 0 },
        { "4096", 0, 4096, 0 },            /* a page size needs a unit */
        { "2097152", 0, SC_M(2), 0 },
        { "3M", 0, SC_M(3), 0 },           /* not a power of two */
        { "1536kB", 0, SC_K(1536), 0 },
        { "2K", 0, SC_K(2), 0 },           /* below 4 KiB */
        { "0M", 0, 0, 0 },
        { "1K", 0, SC_K(1), 0 },
        { "18446744073709551615", 0, UINT64_MAX, 0 },
        { "16777215T", 0, SC_T(16777215), 0 },
        /* overflow */
        { "18446744073709551616", -ERANGE, 0, 0 },
        { "99999999999999999999G", -ERANGE, 0, 0 },
        { "16777216T", -ERANGE, 0, 0 },
        { "17179869184G", -ERANGE, 0, 0 },
        /* refused: case, decimal-looking units, unknown units */
        { "2m", -EINVAL, 0, 0 },
        { "2mib", -EINVAL, 0, 0 },
        { "2MB", -EINVAL, 0, 0 },
        { "2mb", -EINVAL, 0, 0 },
        { "2Mi", -EINVAL, 0, 0 },
        { "2048KB", -EINVAL, 0, 0 },
        { "2048kb", -EINVAL, 0, 0 },
        { "1g", -EINVAL, 0, 0 },
        { "64GB", -EINVAL, 0, 0 },
        { "10B", -EINVAL, 0, 0 },
        { "1P", -EINVAL, 0, 0 },
        { "1GG", -EINVAL, 0, 0 },
        { "2M2M", -EINVAL, 0, 0 },
        /* refused: syntax */
        { "", -EINVAL, 0, 0 },
        { "M", -EINVAL, 0, 0 },
        { "-2M", -EINVAL, 0, 0 },
        { "+2M", -EINVAL, 0, 0 },
        { " 2M", -EINVAL, 0, 0 },
        { "2M ", -EINVAL, 0, 0 },
        { "2 M", -EINVAL, 0, 0 },
        { "02M", -EINVAL, 0, 0 },
        { "010", -EINVAL, 0, 0 },
        { "1.5G", -EINVAL, 0, 0 },
        { "1e9", -EINVAL, 0, 0 },
        { "0x10", -EINVAL, 0, 0 },
};
