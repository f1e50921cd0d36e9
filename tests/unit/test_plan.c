/* Table test of the chunk planner: sizes, page sizes, thread counts and the
 * arguments it must refuse.  The expected chunk sizes are written out as
 * numbers on purpose, so a change of the constant has to change this table. */
#include <errno.h>

#include "check.h"
#include "plan.h"
#include "util.h"

struct row {
        uint64_t size, page;
        unsigned workers, requested;
        int ret;
        uint64_t chunk, n;
        unsigned threads;
};

static const struct row rows[] = {
        /* 2 MiB pages: about four chunks per worker, 2 to 64 MiB each; with
         * two workers or more the last ones shrink (the tail), down to 2 MiB. */
        { 2 * MIB, 2 * MIB, 4, 0, 0, 2 * MIB, 1, 1 },
        { 64 * MIB, 2 * MIB, 4, 0, 0, 4 * MIB, 23, 4 },      /* small pool: every worker busy */
        { 66 * MIB, 2 * MIB, 4, 0, 0, 4 * MIB, 24, 4 },      /* short last chunk */
        { 128 * MIB, 2 * MIB, 4, 0, 0, 8 * MIB, 29, 4 },
        { 64 * MIB, 2 * MIB, 2, 0, 0, 8 * MIB, 14, 2 },
        { 8 * MIB, 2 * MIB, 8, 0, 0, 2 * MIB, 4, 4 },        /* capped by chunks */
        { 4 * GIB, 2 * MIB, 2, 0, 0, 64 * MIB, 78, 2 },       /* 61 full, 17 in the tail */
        { 4 * GIB, 2 * MIB, 2, 1, 0, 64 * MIB, 64, 1 },       /* one worker: no tail */
        { 4 * GIB, 2 * MIB, 2, 8, 0, 64 * MIB, 78, 2 },     /* capped by workers */
        { 4 * GIB, 2 * MIB, 128, 0, 0, 8 * MIB, 980, 128 },
        { 64 * GIB + 2 * MIB, 2 * MIB, 16, 0, 0, 64 * MIB, 1150, 16 },
        /* 1 GiB pages: a chunk is one page. */
        { 1 * GIB, 1 * GIB, 4, 0, 0, 1 * GIB, 1, 1 },
        { 3 * GIB, 1 * GIB, 4, 0, 0, 1 * GIB, 3, 3 },
        { 64 * GIB, 1 * GIB, 8, 3, 0, 1 * GIB, 64, 3 },
        /* 4 KiB pages (not hugetlb, but the arithmetic must hold). */
        { 4 * KIB, 4 * KIB, 1, 0, 0, 2 * MIB, 1, 1 },        /* at least the minimum chunk */
        { 64 * MIB + 4 * KIB, 4 * KIB, 1, 0, 0, 16 * MIB, 5, 1 },
        /* Huge sizes: no overflow in the chunk count. */
        { UINT64_MAX - (2 * MIB - 1), 2 * MIB, 8, 0, 0, 64 * MIB, UINT64_C(274877907006), 8 },
        { UINT64_MAX - (GIB - 1), 1 * GIB, 8, 0, 0, 1 * GIB, UINT64_C(17179869184) - 1, 8 },
        /* Refused. */
        { 0, 2 * MIB, 4, 0, -EINVAL, 0, 0, 0 },              /* zero size */
        { 3 * MIB, 2 * MIB, 4, 0, -EINVAL, 0, 0, 0 },        /* not a multiple */
        { 2 * MIB + 1, 2 * MIB, 4, 0, -EINVAL, 0, 0, 0 },
        { 1 * GIB + 2 * MIB, 1 * GIB, 4, 0, -EINVAL, 0, 0, 0 },
        { 6 * MIB, 3 * MIB, 4, 0, -EINVAL, 0, 0, 0 },        /* page not a power of two */
        { 2 * MIB, 0, 4, 0, -EINVAL, 0, 0, 0 },              /* no page size */
        { 2 * MIB, 2 * MIB, 0, 0, -EINVAL, 0, 0, 0 },        /* no workers */
        { UINT64_MAX, 2 * MIB, 4, 0, -EINVAL, 0, 0, 0 },
};

/* Low priority (stock refills, recycles): the same rules with chunks of at
 * most 16 MiB, so a pool warm arriving meanwhile waits for little. */
static const struct row low_rows[] = {
        { 4 * GIB, 2 * MIB, 2, 0, 0, 16 * MIB, 265, 2 },
        { 4 * GIB, 2 * MIB, 2, 1, 0, 16 * MIB, 256, 1 },
        { 64 * MIB, 2 * MIB, 2, 0, 0, 8 * MIB, 14, 2 },      /* below the cap: as plan_make */
        { 128 * MIB, 2 * MIB, 2, 0, 0, 16 * MIB, 17, 2 },
        { 130 * MIB, 2 * MIB, 1, 0, 0, 16 * MIB, 9, 1 },     /* short last chunk */
        { 2 * MIB, 2 * MIB, 4, 0, 0, 2 * MIB, 1, 1 },
        { 3 * GIB, 1 * GIB, 4, 0, 0, 1 * GIB, 3, 3 },        /* a page larger than the cap: one page */
        { 0, 2 * MIB, 4, 0, -EINVAL, 0, 0, 0 },
        { 2 * MIB, 2 * MIB, 0, 0, -EINVAL, 0, 0, 0 },
        { 3 * MIB, 2 * MIB, 4, 0, -EINVAL, 0, 0, 0 },
};

typedef int (*plan_fn)(uint64_t size, uint64_t page, unsigned workers, unsigned requested, struct plan *ret);

/* A refused row returns its errno and leaves the out-parameter untouched. */
static void check_refused(const char *what, const struct row *rows_, size_t n, plan_fn make)
{
        for (size_t i = 0; i < n; i++) {
                const struct row *r = &rows_[i];
                struct plan p = { .chunk_bytes = 7, .min_chunk_bytes = 7, .n_chunks = 7, .threads = 7 };

                if (r->ret == 0)
                        continue;
                fprintf(stderr, "%s row %zu\n", what, i);
                CHECK_INT(make(r->size, r->page, r->workers, r->requested, &p), ==, r->ret);
                CHECK_U64(p.chunk_bytes, ==, 7);
                CHECK_U64(p.n_chunks, ==, 7);
                CHECK_INT(p.threads, ==, 7);
        }
}

/* Walks the chunks of P over SIZE as the engine hands them out: each a
 * whole number of pages, none above chunk_bytes, none shrinking back up
 * again, full ones until the tail, tail ones at least min_chunk_bytes
 * except a last remainder, covering SIZE exactly in n_chunks chunks; with
 * one thread all but the last are full. */
static void check_walk(const struct plan *p, uint64_t size, uint64_t page)
{
        uint64_t left = size, n = 0, prev = p->chunk_bytes;

        CHECK_U64(p->min_chunk_bytes, <=, p->chunk_bytes);
        CHECK_U64(p->min_chunk_bytes % page, ==, 0);
        while (left) {
                uint64_t c = plan_chunk_len(p, left);

                CHECK_U64(c, >, 0);
                CHECK_U64(c, <=, left);
                CHECK_U64(c % page, ==, 0);
                CHECK_U64(c, <=, prev);
                if (c < left)
                        CHECK_U64(c, >=, p->min_chunk_bytes);
                if (p->threads == 1 && c < left)
                        CHECK_U64(c, ==, p->chunk_bytes);
                prev = c;
                left -= c;
                n++;
        }
        CHECK_U64(n, ==, p->n_chunks);
}

/* An accepted row gets the table's chunk size, chunk count and threads;
 * chunks are whole pages and cover the size exactly (walked, where the
 * count is small enough to walk). */
static void check_accepted(const char *what, const struct row *rows_, size_t n, plan_fn make)
{
        for (size_t i = 0; i < n; i++) {
                const struct row *r = &rows_[i];
                struct plan p = { .chunk_bytes = 7, .n_chunks = 7, .threads = 7 };

                if (r->ret != 0)
                        continue;
                fprintf(stderr, "%s row %zu\n", what, i);
                CHECK_INT(make(r->size, r->page, r->workers, r->requested, &p), ==, 0);
                CHECK_U64(p.chunk_bytes, ==, r->chunk);
                CHECK_U64(p.n_chunks, ==, r->n);
                CHECK_INT(p.threads, ==, r->threads);
                CHECK_U64(p.chunk_bytes % r->page, ==, 0);
                CHECK(p.threads >= 1);
                CHECK_U64(p.n_chunks, >=, r->size / p.chunk_bytes);
                if (p.n_chunks <= 100000)
                        check_walk(&p, r->size, r->page);
        }
}

/* The tail of a 4 GiB job on two workers, written out: 61 chunks of 64 MiB,
 * then each a quarter of what is left (two shares per worker), rounded down
 * to 2 MiB, at least 2 MiB. */
TEST(tail_of_4g_on_two_workers)
{
        static const uint64_t tail_mib[] = { 48, 36, 26, 20, 14, 12, 8, 6, 4, 4, 2, 2, 2, 2, 2, 2, 2 };
        struct plan p;
        uint64_t left = 4 * GIB;

        CHECK_INT(plan_make(4 * GIB, 2 * MIB, 2, 0, &p), ==, 0);
        CHECK_U64(p.min_chunk_bytes, ==, 2 * MIB);
        for (unsigned i = 0; i < 61; i++) {
                CHECK_U64(plan_chunk_len(&p, left), ==, 64 * MIB);
                left -= 64 * MIB;
        }
        for (size_t i = 0; i < ARRAY_SIZE(tail_mib); i++) {
                CHECK_U64(plan_chunk_len(&p, left), ==, tail_mib[i] * MIB);
                left -= tail_mib[i] * MIB;
        }
        CHECK_U64(left, ==, 0);
        CHECK_U64(p.n_chunks, ==, 61 + ARRAY_SIZE(tail_mib));
}

TEST(refused_rows_leave_plan_untouched)
{
        check_refused("plan_make", rows, ARRAY_SIZE(rows), plan_make);
}

TEST(accepted_rows_cover_the_size)
{
        check_accepted("plan_make", rows, ARRAY_SIZE(rows), plan_make);
}

TEST(low_refused_rows_leave_plan_untouched)
{
        check_refused("plan_make_low", low_rows, ARRAY_SIZE(low_rows), plan_make_low);
}

TEST(low_accepted_rows_cover_the_size)
{
        check_accepted("plan_make_low", low_rows, ARRAY_SIZE(low_rows), plan_make_low);
}

TEST_MAIN()
