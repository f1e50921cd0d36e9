/* units: sizes as people and the kernel write them.
 *
 * All units are binary (K = KiB = 1024).  "kB" is accepted for page sizes
 * only because it is the kernel's own spelling in hugepages-2048kB and
 * /proc/meminfo, where it also means 1024.  Parsing is strict on purpose:
 * these strings arrive in URLs and request bodies, and a lenient parser
 * ("2m", " 2M", "2.0M", "02M") would give one resource several names.  Page
 * sizes must carry a unit, since a bare "2048" could mean bytes or kB. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "units.h"
#include "util.h"

/* The smallest page any Linux architecture we run on uses. */
#define MIN_PAGE_SIZE (4 * KIB)

struct unit {
        const char *name;
        unsigned shift;
        bool page_only; /* "kB": kernel spelling, page sizes only */
};

static const struct unit units[] = {
        { "K", 10, false },   { "KiB", 10, false }, { "kB", 10, true },
        { "M", 20, false },   { "MiB", 20, false },
        { "G", 30, false },   { "GiB", 30, false },
        { "T", 40, false },   { "TiB", 40, false },
};

/* Digits then an optional unit from the table.  Leading zeros are refused
 * (except "0" itself) so each size has one spelling.  -EINVAL on syntax,
 * -ERANGE when the digits or the scaled value overflow. */
static int parse_scaled(const char *s, bool page_size, bool *ret_had_unit, uint64_t *ret)
{
        const char *p = s;
        uint64_t v = 0;
        unsigned shift = 0;
        bool had_unit = false;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                unsigned d = (unsigned)(*p - '0');

                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        if (*p) {
                size_t i;

                for (i = 0; i < ARRAY_SIZE(units); i++)
                        if (strcmp(p, units[i].name) == 0 && (page_size || !units[i].page_only))
                                break;
                if (i == ARRAY_SIZE(units))
                        return -EINVAL;
                shift = units[i].shift;
                had_unit = true;
        }
        if (shift && v > (UINT64_MAX >> shift))
                return -ERANGE;
        *ret_had_unit = had_unit;
        *ret = v << shift;
        return 0;
}

int parse_page_size(const char *s, uint64_t *ret)
{
        bool had_unit;
        uint64_t v;
        int r;

        r = parse_scaled(s, true, &had_unit, &v);
        if (r < 0)
                return -EINVAL;
        if (!had_unit || v < MIN_PAGE_SIZE || (v & (v - 1)) != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

int parse_size(const char *s, uint64_t *ret)
{
        bool had_unit;
        uint64_t v;
        int r;

        r = parse_scaled(s, false, &had_unit, &v);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

void format_size(uint64_t bytes, char *buf, size_t len)
{
        static const struct {
                char suffix;
                unsigned shift;
        } steps[] = { { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 } };
        size_t i;

        if (!buf || len == 0)
                return;
        if (bytes != 0)
                for (i = 0; i < ARRAY_SIZE(steps); i++) {
                        uint64_t unit = UINT64_C(1) << steps[i].shift;

                        if (bytes % unit == 0) {
                                snprintf(buf, len, "%" PRIu64 "%c", bytes / unit, steps[i].suffix);
                                return;
                        }
                }
        snprintf(buf, len, "%" PRIu64, bytes);
}
