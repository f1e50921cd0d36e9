/* Unit tests for problem.c: the catalog (one row per slug, lookups both
 * ways), problem_raise formatting and truncation, and the exact RFC 9457 body
 * problem_to_json produces. */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "engine.h"
#include "problem.h"
#include "util.h"

/* problem_raise fills status, slug and title from the row, the detail
 * from the format; extension members are the caller's. */
TEST(raise_fills_row_and_detail)
{
        struct problem p = { .has_counts = true, .requested = 3, .retry_after = 5 };

        problem_raise(&p, PROBLEM_UNKNOWN_NODE, "no node %d (have %s)", 7, "0-1");
        CHECK_INT(p.id, ==, PROBLEM_UNKNOWN_NODE);
        CHECK_INT(p.status, ==, 404);
        CHECK_STR(p.slug, "unknown-node");
        CHECK_STR(p.title, "Unknown NUMA node");
        CHECK_STR(p.detail, "no node 7 (have 0-1)");
        /* Extension members are the caller's. */
        CHECK(p.has_counts);
        CHECK_U64(p.requested, ==, 3);
        CHECK_INT(p.retry_after, ==, 5);
        problem_raise(NULL, PROBLEM_MALFORMED_JSON, "ignored");
}

/* A long detail is cut to fit, never leaving half a UTF-8 sequence. */
TEST(detail_cut_at_whole_utf8_sequence)
{
        struct problem p = {0};
        char big[2000];

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        problem_raise(&p, PROBLEM_MALFORMED_JSON, "%s", big);
        CHECK_U64(strlen(p.detail), ==, sizeof(p.detail) - 1);

        big[510] = '\0';
        problem_raise(&p, PROBLEM_MALFORMED_JSON, "%s\xc3\xa9", big);
        CHECK_U64(strlen(p.detail), ==, 510);
        big[510] = 'x';
        big[509] = '\0';
        problem_raise(&p, PROBLEM_MALFORMED_JSON, "%s\xc3\xa9", big);
        CHECK_U64(strlen(p.detail), ==, 511);
        CHECK_STR(p.detail + 509, "\xc3\xa9");
        big[509] = 'x';
        big[508] = '\0';
        problem_raise(&p, PROBLEM_MALFORMED_JSON, "%s\xf0\x9f\x98\x80", big);
        CHECK_U64(strlen(p.detail), ==, 508);
}

/* Client bytes quoted in a detail come out as valid UTF-8: each byte that
 * starts no valid sequence becomes '?'; valid ones stay. */
TEST(detail_forced_to_utf8)
{
        struct problem p = {0};

        problem_raise(&p, PROBLEM_UNKNOWN_NODE, "no node \"%s\"", "a\xff\xc3\xa9\xed\xa0\x80\xc0\xafz\xe2\x82");
        CHECK_STR(p.detail, "no node \"a?\xc3\xa9???\?\?z??\"");
}

TEST(to_json)
{
        struct problem p = {};
        char *s;

        problem_raise(&p, PROBLEM_INVALID_FIELD, "field \"count\" must be %s", "a non-negative integer");
        s = problem_to_json(&p);
        CHECK_STR(s, "{\"type\":\"urn:hpwarm:problem:invalid-field\",\"title\":\"Invalid field\","
                     "\"status\":422,\"detail\":\"field \\\"count\\\" must be a non-negative "
                     "integer\"}");
        free(s);

        problem_raise(&p, PROBLEM_RESERVE_SHORTFALL, "got fewer pages");
        p.has_counts = true;
        p.requested = 64;
        p.achieved = UINT64_C(9007199254740993);
        s = problem_to_json(&p);
        CHECK_STR(s, "{\"type\":\"urn:hpwarm:problem:reserve-shortfall\",\"title\":\"The kernel gave "
                     "fewer pages than asked\",\"status\":409,\"detail\":\"got fewer pages\","
                     "\"requested\":64,\"achieved\":9007199254740993}");
        free(s);

        /* The memory floor's refusal says what would work. */
        struct problem fl = { .has_floor = true, .floor_bytes = 268435456, .mem_free_bytes = 1073741824,
                              .max_count = 384 };
        problem_raise(&fl, PROBLEM_INSUFFICIENT_MEMORY, "floor");
        s = problem_to_json(&fl);
        CHECK_STR(s, "{\"type\":\"urn:hpwarm:problem:insufficient-memory\",\"title\":\"Not enough free "
                     "memory on the node\",\"status\":409,\"detail\":\"floor\",\"memory_floor_bytes\":268435456,"
                     "\"memory_free_bytes\":1073741824,\"max_count\":384}");
        free(s);

        struct problem blank = { .status = 500 };
        s = problem_to_json(&blank);
        CHECK_STR(s, "{\"type\":\"about:blank\",\"title\":\"Error\",\"status\":500,\"detail\":\"\"}");
        free(s);
        CHECK(problem_to_json(NULL) == NULL);
}

/* Every id has a row: a slug of lower-case words joined by '-', an error
 * status, a non-empty title; no slug twice; lookups go both ways. */
TEST(catalog_rows)
{
        for (int id = PROBLEM_NONE + 1; id < PROBLEM__COUNT; id++) {
                const struct problem_type *t = problem_type((enum problem_id)id);
                CHECK(t != NULL);
                CHECK(t->slug != NULL && t->title != NULL);
                CHECK(t->slug[0] >= 'a' && t->slug[0] <= 'z');
                CHECK_U64(strspn(t->slug, "abcdefghijklmnopqrstuvwxyz-"), ==, strlen(t->slug));
                CHECK(t->title[0] != '\0');
                CHECK_INT(t->status, >=, 400);
                CHECK_INT(t->status, <=, 599);
                CHECK_INT(problem_from_slug(t->slug), ==, id);
                for (int other = PROBLEM_NONE + 1; other < id; other++)
                        if (strcmp(problem_type((enum problem_id)other)->slug, t->slug) == 0)
                                CHECK_STR(t->slug, "(a slug used by no earlier row)");
        }
}

/* Out-of-range ids and unknown slugs have no row. */
TEST(catalog_misses)
{
        CHECK(problem_type(PROBLEM_NONE) == NULL);
        CHECK(problem_type(PROBLEM__COUNT) == NULL);
        CHECK(problem_type((enum problem_id)-1) == NULL);
        CHECK_INT(problem_from_slug(NULL), ==, PROBLEM_NONE);
        CHECK_INT(problem_from_slug(""), ==, PROBLEM_NONE);
        CHECK_INT(problem_from_slug("no-such-slug"), ==, PROBLEM_NONE);
        CHECK_INT(problem_from_slug("Unknown-Node"), ==, PROBLEM_NONE);   /* case-sensitive */
        CHECK_INT(problem_from_slug("unknown-node "), ==, PROBLEM_NONE);  /* exact */
}

/* A stored slug (a pool's error) gets its catalog row; one the catalog does
 * not know keeps its slug with status 500 and the unknown title. */
TEST(raise_slug)
{
        struct problem p = {0};

        problem_raise_slug(&p, "hugepages-exhausted", "node %d ran out", 1);
        CHECK_INT(p.id, ==, PROBLEM_HUGEPAGES_EXHAUSTED);
        CHECK_INT(p.status, ==, 500);
        CHECK_STR(p.title, problem_type(PROBLEM_HUGEPAGES_EXHAUSTED)->title);
        CHECK_STR(p.detail, "node 1 ran out");

        problem_raise_slug(&p, "no-hugetlbfs", "gone");
        CHECK_INT(p.status, ==, 503);
        CHECK_STR(p.title, "No hugetlbfs for that page size");

        problem_raise_slug(&p, "from-a-newer-daemon", "kept");
        CHECK_INT(p.id, ==, PROBLEM_NONE);
        CHECK_INT(p.status, ==, 500);
        CHECK_STR(p.slug, "from-a-newer-daemon");
        CHECK_STR(p.title, PROBLEM_UNKNOWN_TITLE);
        CHECK_STR(p.detail, "kept");
        problem_raise_slug(NULL, "cancelled", "ignored");
}

/* Every slug the engine stores as a pool's error is in the catalog. */
TEST(engine_slugs_in_catalog)
{
        static const int errs[] = { EFAULT, ENOMEM, EINTR, EHWPOISON, EINVAL, EIO, 0 };

        for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
                const char *slug = engine_error_slug(-errs[i]);
                if (problem_from_slug(slug) == PROBLEM_NONE)
                        CHECK_STR(slug, "(a slug in the catalog)");
        }
}

/* Retryable means the same request may succeed later by itself: load,
 * a restart and a failed save, all 429 or 503.  Capacity refusals and
 * no-hugetlbfs are not, although they carry Retry-After. */
TEST(retryable_only_load_restart_and_failed_save)
{
        const enum problem_id retry[] = { PROBLEM_BUSY, PROBLEM_TOO_MANY_WAITS, PROBLEM_STOPPING,
                                          PROBLEM_STATE_WRITE_FAILED };
        for (int id = PROBLEM_NONE + 1; id < PROBLEM__COUNT; id++) {
                const struct problem_type *t = problem_type((enum problem_id)id);
                bool want = false;

                for (size_t i = 0; i < ARRAY_SIZE(retry); i++)
                        want |= retry[i] == (enum problem_id)id;
                if (t->retryable != want)
                        printf("slug %s (%d): retryable %d\n", t->slug, t->status, t->retryable);
                CHECK(t->retryable == want);
                if (t->retryable)
                        CHECK(t->status == 429 || t->status == 503);
        }
        CHECK(!problem_type(PROBLEM_NO_HUGETLBFS)->retryable);
        CHECK(!problem_type(PROBLEM_TOO_MANY_POOLS)->retryable);
}

/* Every 429 and 503 of the catalog has a Retry-After to send when its
 * raiser set none, and the ones that say how long match what they mean. */
TEST(retry_after_for_every_429_and_503)
{
        for (int id = 1; id < PROBLEM__COUNT; id++) {
                const struct problem_type *t = problem_type(id);
                CHECK(t != NULL);
                if (t->status == 429 || t->status == 503)
                        CHECK_INT(problem_retry_after(id), >, 0);
        }
        CHECK_INT(problem_retry_after(PROBLEM_STATE_WRITE_FAILED), ==, 5);
        CHECK_INT(problem_retry_after(PROBLEM_TOO_MANY_POOLS), ==, 60);
        CHECK_INT(problem_retry_after(PROBLEM_NODE_WARM_LIMIT), ==, 60);
        CHECK_INT(problem_retry_after(PROBLEM_NO_HUGETLBFS), ==, 300);
}

TEST_MAIN()
