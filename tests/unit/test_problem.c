/* Unit tests for problem.c: problem_set formatting and truncation, and the
 * exact RFC 9457 body problem_to_json produces. */
#include <string.h>

#include "check.h"
#include "problem.h"

static void test_set(void)
{
        struct problem p = { .has_counts = true, .requested = 3, .retry_after = 5 };
        char big[2000];

        problem_set(&p, 404, "unknown-node", "Unknown node", "no node %d (have %s)", 7, "0-1");
        CHECK_INT(p.status, ==, 404);
        CHECK_STR(p.slug, "unknown-node");
        CHECK_STR(p.title, "Unknown node");
        CHECK_STR(p.detail, "no node 7 (have 0-1)");
        /* Extension members are the caller's. */
        CHECK(p.has_counts);
        CHECK_U64(p.requested, ==, 3);
        CHECK_INT(p.retry_after, ==, 5);

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        problem_set(&p, 400, "s", "t", "%s", big);
        CHECK_U64(strlen(p.detail), ==, sizeof(p.detail) - 1);
        problem_set(NULL, 400, "s", "t", "ignored");

        /* Truncation never leaves half a UTF-8 sequence behind. */
        big[510] = '\0';
        problem_set(&p, 400, "s", "t", "%s\xc3\xa9", big);
        CHECK_U64(strlen(p.detail), ==, 510);
        big[510] = 'x';
        big[509] = '\0';
        problem_set(&p, 400, "s", "t", "%s\xc3\xa9", big);
        CHECK_U64(strlen(p.detail), ==, 511);
        CHECK_STR(p.detail + 509, "\xc3\xa9");
        big[509] = 'x';
        big[508] = '\0';
        problem_set(&p, 400, "s", "t", "%s\xf0\x9f\x98\x80", big);
        CHECK_U64(strlen(p.detail), ==, 508);

        /* Client bytes quoted in a detail come out as valid UTF-8: each byte
         * that starts no valid sequence becomes '?'; valid ones stay. */
        problem_set(&p, 404, "s", "t", "no node \"%s\"", "a\xff\xc3\xa9\xed\xa0\x80\xc0\xafz\xe2\x82");
        CHECK_STR(p.detail, "no node \"a?\xc3\xa9???\?\?z??\"");
}

static void test_to_json(void)
{
        struct problem p = {};
        char *s;

        problem_set(&p, 422, "invalid-field", "Invalid field", "field \"count\" must be %s",
                    "a non-negative integer");
        s = problem_to_json(&p);
        CHECK_STR(s, "{\"type\":\"urn:hpwarm:problem:invalid-field\",\"title\":\"Invalid field\","
                     "\"status\":422,\"detail\":\"field \\\"count\\\" must be a non-negative "
                     "integer\"}");
        free(s);

        problem_set(&p, 409, "shortfall", "Reservation shortfall", "got fewer pages");
        p.has_counts = true;
        p.requested = 64;
        p.achieved = UINT64_C(9007199254740993);
        s = problem_to_json(&p);
        CHECK_STR(s, "{\"type\":\"urn:hpwarm:problem:shortfall\",\"title\":\"Reservation "
                     "shortfall\",\"status\":409,\"detail\":\"got fewer pages\","
                     "\"requested\":64,\"achieved\":9007199254740993}");
        free(s);

        /* The memory floor's refusal says what would work. */
        struct problem fl = { .has_floor = true, .floor_bytes = 268435456, .mem_free_bytes = 1073741824,
                              .max_count = 384 };
        problem_set(&fl, 409, "insufficient-memory", "Not enough free memory on the node", "floor");
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

int main(void)
{
        test_set();
        test_to_json();
        return 0;
}
