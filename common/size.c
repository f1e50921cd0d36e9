/* size: see size.h for the grammar and why it is strict.  A table of units
 * with their shifts is the whole grammar; the explanation function looks at
 * the same table, so it can only suggest spellings that parse. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "size.h"

#define SIZE_MIN_PAGE (UINT64_C(4) << 10)   /* smallest base page of any Linux architecture */

static const struct {
        const char *name;
        unsigned shift;
} units[] = {
        { "K", 10 }, { "KiB", 10 }, { "kB", 10 },
        { "M", 20 }, { "MiB", 20 },
        { "G", 30 }, { "GiB", 30 },
        { "T", 40 }, { "TiB", 40 },
};
#define N_UNITS (sizeof(units) / sizeof(units[0]))

/* Digits, then an optional unit.  *RET_UNIT: index of the unit or -1. */
static int parse(const char *s, int *ret_unit, uint64_t *ret)
{
        const char *p = s;
        uint64_t v = 0;
        int unit = -1;

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
                for (size_t i = 0; i < N_UNITS; i++)
                        if (strcmp(p, units[i].name) == 0)
                                unit = (int)i;
                if (unit < 0)
                        return -EINVAL;
                if (v > (UINT64_MAX >> units[unit].shift))
                        return -ERANGE;
                v <<= units[unit].shift;
        }
        *ret_unit = unit;
        *ret = v;
        return 0;
}

int hpw_size_parse(const char *s, uint64_t *ret)
{
        uint64_t v;
        int unit, r = parse(s, &unit, &v);

        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

int hpw_page_size_parse(const char *s, uint64_t *ret)
{
        uint64_t v;
        int unit;

        if (parse(s, &unit, &v) < 0 || unit < 0 || v < SIZE_MIN_PAGE || (v & (v - 1)) != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

void hpw_size_format(uint64_t bytes, char *buf, size_t len)
{
        static const struct { char suffix; unsigned shift; } steps[] = {
                { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 },
        };

        if (!buf || len == 0)
                return;
        if (bytes != 0)
                for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
                        if (bytes % (UINT64_C(1) << steps[i].shift) == 0) {
                                snprintf(buf, len, "%" PRIu64 "%c", bytes >> steps[i].shift, steps[i].suffix);
                                return;
                        }
        snprintf(buf, len, "%" PRIu64, bytes);
}

void hpw_size_explain(const char *s, bool page, char *buf, size_t len)
{
        const char *p = s;
        uint64_t v;
        int unit, r;

        if (!buf || len == 0)
                return;
        buf[0] = '\0';
        if (!s || !*s) {
                snprintf(buf, len, "empty; write digits and a unit, e.g. %s", page ? "2M" : "1G");
                return;
        }
        r = parse(s, &unit, &v);
        if (r == 0) {
                if (!page)
                        return;
                if (unit < 0)
                        snprintf(buf, len, "'%.40s': a page size needs a unit, e.g. 2M or 1G", s);
                else if (v < SIZE_MIN_PAGE || (v & (v - 1)) != 0)
                        snprintf(buf, len, "'%.40s' is not a page size (a power of two, 4K or more, e.g. 2M or 1G)",
                                 s);
                return;
        }
        if (r == -ERANGE) {
                snprintf(buf, len, "'%.40s' is too large (at most 2^64-1 bytes)", s);
                return;
        }
        while (*p >= '0' && *p <= '9')
                p++;
        if (p == s || (s[0] == '0' && p - s > 1)) {
                snprintf(buf, len, "'%.40s' is not a size: digits (no sign or leading zero) and a unit K, M, G "
                         "or T, e.g. %s", s, page ? "2M" : "1G");
                return;
        }
        if (*p == '.') {
                snprintf(buf, len, "'%.40s': no fractions; use a smaller unit (1536M, not 1.5G)", s);
                return;
        }
        /* Digits were fine: the unit is wrong.  A unit that differs only in
         * case, or a decimal-looking one (MB), gets the spelling that works. */
        for (size_t i = 0; i < N_UNITS; i++) {
                size_t n = strlen(units[i].name);
                bool decimal = n == 1 && (strcasecmp(p, (char[]){ units[i].name[0], 'B', 0 }) == 0);

                if (strcasecmp(p, units[i].name) == 0 || decimal) {
                        snprintf(buf, len, "'%.40s': units are binary and case-sensitive (K M G T, KiB MiB GiB "
                                 "TiB, kB); write %.*s%s", s, (int)(p - s), s, units[i].name);
                        return;
                }
        }
        snprintf(buf, len, "'%.40s': unknown unit '%.16s'; use K, M, G or T (binary, e.g. %s)", s, p,
                 page ? "2M" : "1G");
}
