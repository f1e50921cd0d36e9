/* units: the shared size grammar table, and formatting, as the daemon sees them. */
#include <errno.h>

#include "check.h"
#include "size_cases.h"
#include "units.h"
#include "util.h"

/* The shared table (tests/common/size_cases.h), which the client's test
 * runs through the CLI's parser too: what one side accepts, the other does. */
TEST(shared_size_table)
{
        for (size_t i = 0; i < ARRAY_SIZE(size_cases); i++) {
                const struct size_case *c = &size_cases[i];
                uint64_t v = 12345, pv = 12345;
                int r = parse_size(c->s, &v);
                int pr = parse_page_size(c->s, &pv);

                if (r != c->size_r || (pr == 0) != (c->page_ok == 1))
                        fprintf(stderr, "case \"%s\": size %d (want %d), page %d (want %s)\n", c->s, r,
                                c->size_r, pr, c->page_ok ? "ok" : "refused");
                CHECK_INT(r, ==, c->size_r);
                CHECK_U64(v, ==, r == 0 ? c->v : 12345);
                CHECK_INT(pr, ==, c->page_ok ? 0 : -EINVAL);
                CHECK_U64(pv, ==, pr == 0 ? c->v : 12345);
        }
        CHECK_INT(parse_page_size(NULL, NULL), ==, -EINVAL);
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
