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
        /* 2 MiB pages: about four chunks per worker, 2 to 64 MiB each; the last may be short. */
        { 2 * MIB, 2 * MIB, 4, 0, 0, 2 * MIB, 1, 1 },
        { 64 * MIB, 2 * MIB, 4, 0, 0, 4 * MIB, 16, 4 },      /* small pool: every worker busy */
        { 66 * MIB, 2 * MIB, 4, 0, 0, 4 * MIB, 17, 4 },      /* short last chunk */
        { 128 * MIB, 2 * MIB, 4, 0, 0, 8 * MIB, 16, 4 },
        { 64 * MIB, 2 * MIB, 2, 0, 0, 8 * MIB, 8, 2 },
        { 8 * MIB, 2 * MIB, 8, 0, 0, 2 * MIB, 4, 4 },        /* capped by chunks */
        { 4 * GIB, 2 * MIB, 2, 0, 0, 64 * MIB, 64, 2 },
        { 4 * GIB, 2 * MIB, 2, 1, 0, 64 * MIB, 64, 1 },
        { 4 * GIB, 2 * MIB, 2, 8, 0, 64 * MIB, 64, 2 },     /* capped by workers */
        { 4 * GIB, 2 * MIB, 128, 0, 0, 8 * MIB, 512, 128 },
        { 64 * GIB + 2 * MIB, 2 * MIB, 16, 0, 0, 64 * MIB, 1025, 16 },
        /* 1 GiB pages: a chunk is one page. */
        { 1 * GIB, 1 * GIB, 4, 0, 0, 1 * GIB, 1, 1 },
        { 3 * GIB, 1 * GIB, 4, 0, 0, 1 * GIB, 3, 3 },
        { 64 * GIB, 1 * GIB, 8, 3, 0, 1 * GIB, 64, 3 },
        /* 4 KiB pages (not hugetlb, but the arithmetic must hold). */
        { 4 * KIB, 4 * KIB, 1, 0, 0, 2 * MIB, 1, 1 },        /* at least the minimum chunk */
        { 64 * MIB + 4 * KIB, 4 * KIB, 1, 0, 0, 16 * MIB, 5, 1 },
        /* Huge sizes: no overflow in the chunk count. */
        { UINT64_MAX - (2 * MIB - 1), 2 * MIB, 8, 0, 0, 64 * MIB, UINT64_C(274877906944), 8 },
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
        { 4 * GIB, 2 * MIB, 2, 0, 0, 16 * MIB, 256, 2 },
        { 4 * GIB, 2 * MIB, 2, 1, 0, 16 * MIB, 256, 1 },
        { 64 * MIB, 2 * MIB, 2, 0, 0, 8 * MIB, 8, 2 },       /* below the cap: as plan_make */
        { 128 * MIB, 2 * MIB, 2, 0, 0, 16 * MIB, 8, 2 },
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
                struct plan p = { .chunk_bytes = 7, .n_chunks = 7, .threads = 7 };

                if (r->ret == 0)
                        continue;
                fprintf(stderr, "%s row %zu\n", what, i);
                CHECK_INT(make(r->size, r->page, r->workers, r->requested, &p), ==, r->ret);
                CHECK_U64(p.chunk_bytes, ==, 7);
                CHECK_U64(p.n_chunks, ==, 7);
                CHECK_INT(p.threads, ==, 7);
        }
}

/* An accepted row gets the table's chunk size, chunk count and threads;
 * chunks are whole pages and cover the size exactly: n-1 full ones and a
 * last one. */
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
                CHECK_U64((p.n_chunks - 1), <, r->size / p.chunk_bytes + 1);
                CHECK_U64(r->size - (p.n_chunks - 1) * p.chunk_bytes, <=, p.chunk_bytes);
                CHECK_U64(r->size - (p.n_chunks - 1) * p.chunk_bytes, >, 0);
        }
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
