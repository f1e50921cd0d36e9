/* Unit tests for pool_state.c: the lifecycle table and pool_transition, the hold
 * table, state names.  The expected moves are written out here a second
 * time, on purpose: an edge added to (or dropped from) pool_state.c's table by
 * mistake fails the matrix test, which names the move. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "record.h"
#include "pool_state.h"
#include "util.h"

static const struct {
        enum pool_state from, to;
} expected_moves[] = {
        { POOL_NEW, POOL_WARMING },
        { POOL_WARMING, POOL_WARMING },
        { POOL_WARMING, POOL_READY },
        { POOL_WARMING, POOL_FAILED },
        { POOL_WARMING, POOL_CANCELLED },
        { POOL_READY, POOL_WARMING },
        { POOL_READY, POOL_FAILED },
        { POOL_NEW, POOL_STOCK_WARMING },
        { POOL_STOCK_WARMING, POOL_STOCK_WARMING },
        { POOL_STOCK_WARMING, POOL_STOCK },
        { POOL_STOCK, POOL_STOCK_WARMING },
        { POOL_STOCK, POOL_READY },
        { POOL_STOCK, POOL_WARMING },
        { POOL_READY, POOL_DIRTY },
        { POOL_DIRTY, POOL_RECYCLING },
        { POOL_RECYCLING, POOL_RECYCLING },
        { POOL_RECYCLING, POOL_STOCK },
};

static bool expected(enum pool_state from, enum pool_state to)
{
        for (size_t i = 0; i < ARRAY_SIZE(expected_moves); i++)
                if (expected_moves[i].from == from && expected_moves[i].to == to)
                        return true;
        return false;
}

static bool is_final(enum pool_state s) { return s == POOL_FAILED || s == POOL_CANCELLED; }

static struct pool_record record(enum pool_state s)
{
        struct pool_record r;

        memset(&r, 0, sizeof(r));
        snprintf(r.name, sizeof(r.name), "vm-1");
        r.node = 0;
        r.page_size = 2 * MIB;
        r.size_bytes = 4 * MIB;
        r.state = s;    /* a record as loaded from a journal */
        return r;
}

static int64_t now_s(void) { return (int64_t)time(NULL); }

/* Every (from, to) pair: allowed exactly when expected. */
TEST(matrix)
{
        for (int f = 0; f < _POOL_STATE_MAX; f++)
                for (int t = 0; t < _POOL_STATE_MAX; t++) {
                        bool want = expected((enum pool_state)f, (enum pool_state)t);
                        bool got = pool_transition_allowed((enum pool_state)f, (enum pool_state)t);
                        if (want != got) {
                                fprintf(stderr, "move %s -> %s: expected %s, the table says %s\n",
                                        pool_state_name((enum pool_state)f), pool_state_name((enum pool_state)t),
                                        want ? "allowed" : "refused", got ? "allowed" : "refused");
                                CHECK(want == got);
                        }
                }
        CHECK(!pool_transition_allowed(POOL_WARMING, _POOL_STATE_MAX));
        CHECK(!pool_transition_allowed(_POOL_STATE_MAX, POOL_WARMING));
        CHECK(!pool_transition_allowed((enum pool_state)-1, POOL_WARMING));
}

/* pool_transition agrees with the table for every pair; a refused move
 * leaves the record exactly as it was. */
TEST(transition_follows_table)
{
        for (int f = 0; f < _POOL_STATE_MAX; f++)
                for (int t = 0; t < _POOL_STATE_MAX; t++) {
                        struct pool_record r = record((enum pool_state)f), before = r;
                        const char *cause = is_final((enum pool_state)t) ? "some-cause" : NULL;
                        int q = pool_transition(&r, (enum pool_state)t, cause, cause ? "%s" : NULL, "why");

                        if (expected((enum pool_state)f, (enum pool_state)t)) {
                                CHECK_INT(q, ==, 0);
                                CHECK_INT(r.state, ==, t);
                        } else {
                                CHECK_INT(q, ==, -EPERM);
                                CHECK(memcmp(&r, &before, sizeof(r)) == 0);
                        }
                }
}

TEST(final_needs_cause)
{
        struct pool_record r = record(POOL_WARMING), before = r;

        CHECK_INT(pool_transition(&r, POOL_FAILED, NULL, NULL), ==, -EPERM);
        CHECK(memcmp(&r, &before, sizeof(r)) == 0);
        CHECK_INT(pool_transition(&r, POOL_CANCELLED, NULL, NULL), ==, -EPERM);
        CHECK(memcmp(&r, &before, sizeof(r)) == 0);
}

TEST(nonfinal_takes_no_cause)
{
        struct pool_record r = record(POOL_WARMING), before = r;

        CHECK_INT(pool_transition(&r, POOL_READY, "hugepages-exhausted", "%s", "x"), ==, -EPERM);
        CHECK(memcmp(&r, &before, sizeof(r)) == 0);
}

TEST(out_of_range_refused)
{
        struct pool_record r = record(POOL_WARMING), before = r;

        CHECK_INT(pool_transition(&r, _POOL_STATE_MAX, NULL, NULL), ==, -EPERM);
        CHECK_INT(pool_transition(&r, (enum pool_state)42, "x", "%s", "y"), ==, -EPERM);
        CHECK(memcmp(&r, &before, sizeof(r)) == 0);
}

TEST(failure_records_cause_and_time)
{
        struct pool_record r = record(POOL_WARMING);
        int64_t t0 = now_s();

        CHECK_INT(pool_transition(&r, POOL_FAILED, "hugepages-exhausted", "offset %d failed", 4096), ==, 0);
        CHECK_STR(pool_state_name(r.state), "failed");
        CHECK_STR(r.error_slug, "hugepages-exhausted");
        CHECK_STR(r.error_detail, "offset 4096 failed");
        CHECK_INT(r.finished_at, >=, t0);
        CHECK_INT(r.finished_at, <=, now_s());
}

TEST(cancel_records_cause)
{
        struct pool_record r = record(POOL_WARMING);

        CHECK_INT(pool_transition(&r, POOL_CANCELLED, "cancelled", "%s", "stopped"), ==, 0);
        CHECK_STR(pool_state_name(r.state), "cancelled");
        CHECK_STR(r.error_slug, "cancelled");
        CHECK_STR(r.error_detail, "stopped");
        CHECK_INT(r.finished_at, >, 0);
}

/* A ready pool that fails at start keeps the time its warm finished. */
TEST(failure_keeps_finish_time)
{
        struct pool_record r = record(POOL_READY);

        r.finished_at = 1000;
        CHECK_INT(pool_transition(&r, POOL_FAILED, "file-missing", "%s", "gone"), ==, 0);
        CHECK_INT(r.finished_at, ==, 1000);
}

/* A detail longer than the record holds is cut, not overrun. */
TEST(long_detail_truncated)
{
        struct pool_record r = record(POOL_WARMING);
        char big[2 * POOL_ERROR_DETAIL_MAX];

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        CHECK_INT(pool_transition(&r, POOL_FAILED, "pool-file-error", "%s", big), ==, 0);
        CHECK_INT(strlen(r.error_detail), ==, POOL_ERROR_DETAIL_MAX - 1);
}

TEST(ready_sets_finish_time)
{
        struct pool_record r = record(POOL_WARMING);
        int64_t t0 = now_s();

        CHECK_INT(pool_transition(&r, POOL_READY, NULL, NULL), ==, 0);
        CHECK_INT(r.finished_at, >=, t0);
        CHECK_STR(r.error_slug, "");
}

TEST(rewarm_clears_finish_time)
{
        struct pool_record r = record(POOL_READY);

        r.finished_at = 1000;
        CHECK_INT(pool_transition(&r, POOL_WARMING, NULL, NULL), ==, 0);
        CHECK_INT(r.finished_at, ==, 0);
}

TEST(final_states_are_final)
{
        for (int t = 0; t < _POOL_STATE_MAX; t++) {
                CHECK(!pool_transition_allowed(POOL_FAILED, (enum pool_state)t));
                CHECK(!pool_transition_allowed(POOL_CANCELLED, (enum pool_state)t));
        }
}

TEST(names)
{
        enum pool_state s;

        CHECK_STR(pool_state_name(POOL_WARMING), "warming");
        CHECK_STR(pool_state_name(POOL_READY), "ready");
        CHECK_STR(pool_state_name(POOL_FAILED), "failed");
        CHECK_STR(pool_state_name(POOL_CANCELLED), "cancelled");
        CHECK_STR(pool_state_name(POOL_STOCK_WARMING), "stock-warming");
        CHECK_STR(pool_state_name(POOL_STOCK), "stock");
        CHECK_STR(pool_state_name(POOL_DIRTY), "dirty");
        CHECK_STR(pool_state_name(POOL_RECYCLING), "recycling");
        CHECK(pool_state_name(_POOL_STATE_MAX) == NULL);
        for (int i = POOL_WARMING; i < _POOL_STATE_MAX; i++) {
                CHECK_INT(pool_state_parse(pool_state_name((enum pool_state)i), &s), ==, 0);
                CHECK_INT(s, ==, i);
        }
}

/* A ready pool never goes back to the stock directly: a file handed to a
 * VM returns only through dirty and recycling, and only a completed recycle
 * reaches stock. */
TEST(stock_rows)
{
        CHECK(pool_state_is_stock(POOL_STOCK));
        CHECK(pool_state_is_stock(POOL_STOCK_WARMING));
        CHECK(pool_state_is_stock(POOL_DIRTY));
        CHECK(pool_state_is_stock(POOL_RECYCLING));
        CHECK(!pool_state_is_stock(POOL_READY));
        CHECK(!pool_state_is_stock(POOL_WARMING));
        CHECK(!pool_transition_allowed(POOL_READY, POOL_STOCK));
        CHECK(!pool_transition_allowed(POOL_STOCK_WARMING, POOL_READY));
        CHECK(!pool_transition_allowed(POOL_WARMING, POOL_STOCK));
        /* The security invariant: nothing dirty is ever handed out or
         * joins the stock without a zeroing. */
        CHECK(!pool_transition_allowed(POOL_DIRTY, POOL_STOCK));
        CHECK(!pool_transition_allowed(POOL_DIRTY, POOL_READY));
        CHECK(!pool_transition_allowed(POOL_RECYCLING, POOL_READY));
        CHECK(!pool_transition_allowed(POOL_WARMING, POOL_DIRTY));
}

/* Stock names can never be pool names, and the other way round. */
TEST(stock_names)
{
        CHECK(pool_stock_name_valid("~1"));
        CHECK(pool_stock_name_valid("~n0-2097152-17"));
        CHECK(!pool_stock_name_valid("~"));
        CHECK(!pool_stock_name_valid("1"));
        CHECK(!pool_stock_name_valid("~a/b"));
        CHECK(!pool_stock_name_valid("~~"));
        CHECK(!pool_stock_name_valid(NULL));
        CHECK(!pool_name_valid("~1"));
        CHECK(!pool_stock_name_valid("a~1"));
}

/* "new" is never saved: a journal that says so is not ours. */
TEST(parse_refuses_unsaved_and_unknown)
{
        enum pool_state s = POOL_READY;

        CHECK_INT(pool_state_parse("new", &s), ==, -EINVAL);
        CHECK_INT(pool_state_parse("Ready", &s), ==, -EINVAL);
        CHECK_INT(pool_state_parse("", &s), ==, -EINVAL);
        CHECK_INT(pool_state_parse(NULL, &s), ==, -EINVAL);
        CHECK_INT(s, ==, POOL_READY);
}

TEST(hold_table)
{
        static const struct {
                enum pool_hold from, to;
        } allowed[] = {
                { POOL_FREE, POOL_BUSY },
                { POOL_FREE, POOL_CREATING },
                { POOL_CREATING, POOL_FREE },
                { POOL_BUSY, POOL_FREE },
                { POOL_BUSY, POOL_RELEASING },
                { POOL_RELEASING, POOL_REMOVING },
                { POOL_RELEASING, POOL_BUSY },
        };

        for (int f = 0; f < _POOL_HOLD_MAX; f++)
                for (int t = 0; t < _POOL_HOLD_MAX; t++) {
                        bool want = false;
                        for (size_t i = 0; i < ARRAY_SIZE(allowed); i++)
                                want |= allowed[i].from == (enum pool_hold)f && allowed[i].to == (enum pool_hold)t;
                        if (want != pool_hold_allowed((enum pool_hold)f, (enum pool_hold)t)) {
                                fprintf(stderr, "hold %s -> %s: expected %s\n", pool_hold_name((enum pool_hold)f),
                                        pool_hold_name((enum pool_hold)t), want ? "allowed" : "refused");
                                CHECK(false);
                        }
                }
        CHECK_STR(pool_hold_name(POOL_REMOVING), "removing");
        CHECK_STR(pool_hold_name(POOL_RELEASING), "releasing");
        CHECK(pool_hold_name(_POOL_HOLD_MAX) == NULL);
}

/* VALID takes MAX characters of 'a' and refuses MAX + 1. */
static void check_longest(bool (*valid)(const char *), size_t max)
{
        char longest[POOL_NAME_MAX + POOL_LABEL_MAX + 2];

        CHECK(max + 2 <= sizeof(longest));
        memset(longest, 'a', max + 1);
        longest[max] = '\0';
        CHECK(valid(longest));
        longest[max] = 'a';
        longest[max + 1] = '\0';
        CHECK(!valid(longest));
}

TEST(name_rule)
{
        CHECK(pool_name_valid("vm-1.mem_0"));
        CHECK(!pool_name_valid(".x"));
        CHECK(!pool_name_valid(NULL));
        check_longest(pool_name_valid, POOL_NAME_MAX);
}

/* Labels: [A-Za-z0-9:._-], a letter or digit first, 1 to 128 characters. */
TEST(label_rule)
{
        CHECK(pool_label_valid("libvirt:0b6e3a4e-6d1c-4d8e-9a57-0c5c1f3f7e21"));
        CHECK(pool_label_valid("a"));
        CHECK(!pool_label_valid(""));
        CHECK(!pool_label_valid(NULL));
        CHECK(!pool_label_valid(":x"));
        CHECK(!pool_label_valid("a b"));
        CHECK(!pool_label_valid("a/b"));
        CHECK(!pool_label_valid("a\n"));
        check_longest(pool_label_valid, POOL_LABEL_MAX);
}

TEST_MAIN()
