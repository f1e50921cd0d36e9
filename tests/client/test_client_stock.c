/* libhpwarm's stock calls against fake hpwarmd servers (fake_server.py,
 * started by run_client_stock.py, which passes their URLs in the
 * environment): a round trip through hpw_stock_set and hpw_stock_get, the
 * pool's from_stock after hpw_warm, the daemon's refusals with their problem
 * detail, a daemon without stock, hostile answers (malformed JSON, missing
 * members, counts no double carries) and the fleet query of /v1/stock.
 *
 *   FAKE_GOOD       a fake daemon with stock support, no targets yet
 *   FAKE_OLD        one without stock (404 on /v1/stock)
 *   FAKE_MALFORMED, FAKE_MISSING, FAKE_HUGE, FAKE_BADGEN
 *                   ones whose /v1/stock answers 200 with a hostile body
 *   FAKE_GEN        one whose /v1/stock always says generation 42
 *   FAKE_DEAD       a loopback URL nothing listens on */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hpwarm.h"

#define M2 (2ull << 20)

static const char *url(const char *var)
{
        const char *u = getenv(var);

        if (!u || !u[0])
                SKIP("run through run_client_stock.py (no fake servers)");
        return u;
}

static struct hpw *handle(const char *var)
{
        struct hpw *h = NULL;

        CHECK_INT(hpw_new(url(var), &h), ==, HPW_OK);
        CHECK_INT(hpw_set_timeouts(h, 2000, 5000), ==, HPW_OK);
        return h;
}

TEST(stock_set_then_get_round_trip)
{
        struct hpw *h = handle("FAKE_GOOD");
        struct hpw_stock *st = NULL;
        const struct hpw_stock_target t[] = {
                { .size = sizeof(struct hpw_stock_target), .node = 0, .page_size_bytes = M2, .size_bytes = 8 << 20, .count = 2 },
                { .size = sizeof(struct hpw_stock_target), .node = 1, .page_size_bytes = M2, .size_bytes = 16 << 20, .count = 1, .ready = 99 },
        };

        CHECK_INT(hpw_stock_set(h, (const struct hpw_stock_target *const[]){ &t[0], &t[1] }, 2, &st), ==, HPW_OK);
        CHECK_INT(hpw_last_status(h), ==, 200);
        CHECK_U64(st->n, ==, 2);
        CHECK_INT(st->targets[1]->node, ==, 1);
        CHECK_U64(st->targets[1]->size_bytes, ==, 16 << 20);
        CHECK_U64(st->targets[1]->count, ==, 1);
        hpw_stock_free(st);
        st = NULL;
        CHECK_INT(hpw_stock_get(h, &st), ==, HPW_OK);
        CHECK_U64(st->n, ==, 2);
        CHECK_INT(st->targets[0]->node, ==, 0);
        CHECK_U64(st->targets[0]->page_size_bytes, ==, M2);
        CHECK_U64(st->targets[0]->size_bytes, ==, 8 << 20);
        CHECK_U64(st->targets[0]->count, ==, 2);
        CHECK_U64(st->targets[0]->ready, ==, 2);   /* the fake fills at once */
        CHECK(strstr(st->json, "\"targets\"") != NULL);
        hpw_stock_free(st);
        hpw_free(h);
}

TEST(warm_of_a_stocked_size_says_from_stock)
{
        struct hpw *h = handle("FAKE_GOOD");
        struct hpw_stock *st = NULL;
        const struct hpw_stock_target t = { .size = sizeof(struct hpw_stock_target), .node = 0, .page_size_bytes = M2, .size_bytes = 8 << 20, .count = 1 };
        struct hpw_warm_request w = { .size = sizeof(w), .node = 0, .size_bytes = 8 << 20 };
        struct hpw_pool *p = NULL;
        bool created = false;

        CHECK_INT(hpw_stock_set(h, (const struct hpw_stock_target *const[]){ &t }, 1, &st), ==, HPW_OK);
        hpw_stock_free(st);
        CHECK_INT(hpw_warm(h, "lib-stocked", &w, &p, &created), ==, HPW_OK);
        CHECK(created);
        CHECK_STR(p->from_stock, "full");
        CHECK_INT(p->state, ==, HPW_POOL_READY);
        hpw_pool_free(p);
        w.size_bytes = 4 << 20;
        CHECK_INT(hpw_warm(h, "lib-unstocked", &w, &p, NULL), ==, HPW_OK);
        CHECK_STR(p->from_stock, "none");
        hpw_pool_free(p);
        CHECK_INT(hpw_pool(h, "lib-stocked", &p), ==, HPW_OK);
        CHECK_STR(p->from_stock, "full");
        hpw_pool_free(p);
        CHECK_INT(hpw_release(h, "lib-stocked"), ==, HPW_OK);
        CHECK_INT(hpw_release(h, "lib-unstocked"), ==, HPW_OK);
        hpw_free(h);
}

TEST(stock_refusals_carry_the_problem)
{
        struct hpw *h = handle("FAKE_GOOD");
        struct hpw_stock *st = NULL;
        struct hpw_stock_target t = { .size = sizeof(struct hpw_stock_target), .node = 0, .page_size_bytes = M2, .size_bytes = 8 << 20, .count = 1 };

        CHECK_INT(hpw_stock_set(h, (const struct hpw_stock_target *const[]){ &t }, 1, &st), ==, HPW_OK);
        hpw_stock_free(st);
        st = NULL;
        t.node = 7;
        CHECK_INT(hpw_stock_set(h, (const struct hpw_stock_target *const[]){ &t }, 1, &st), ==, HPW_E_NOT_FOUND);
        CHECK(hpw_last_problem(h) != NULL);
        CHECK_STR(hpw_last_problem(h)->slug, "unknown-node");
        CHECK(strstr(hpw_last_message(h), "target 0: there is no NUMA node 7") != NULL);
        t.node = 0;
        t.size_bytes = 1ull << 30;              /* node 0 has 64 2M pages */
        CHECK_INT(hpw_stock_set(h, (const struct hpw_stock_target *const[]){ &t }, 1, &st), ==, HPW_E_CONFLICT);
        CHECK_STR(hpw_last_problem(h)->slug, "stock-too-large");
        CHECK_INT(hpw_last_problem(h)->status, ==, 409);
        t.size_bytes = 8 << 20;
        t.count = 5000;                         /* over the daemon's limit */
        CHECK_INT(hpw_stock_set(h, (const struct hpw_stock_target *const[]){ &t }, 1, &st), ==, HPW_E_BAD_REQUEST);
        CHECK_STR(hpw_last_problem(h)->slug, "invalid-field");
        CHECK(st == NULL);
        /* Nothing changed by the refusals: the last good set stands. */
        CHECK_INT(hpw_stock_get(h, &st), ==, HPW_OK);
        CHECK_U64(st->n, ==, 1);
        CHECK_U64(st->targets[0]->size_bytes, ==, 8 << 20);
        hpw_stock_free(st);
        /* An empty list clears. */
        st = NULL;
        CHECK_INT(hpw_stock_set(h, NULL, 0, &st), ==, HPW_OK);
        CHECK_U64(st->n, ==, 0);
        hpw_stock_free(st);
        hpw_free(h);
}

TEST(daemon_without_stock_is_not_found)
{
        struct hpw *h = handle("FAKE_OLD");
        struct hpw_stock *st = NULL;
        struct hpw_warm_request w = { .size = sizeof(w), .node = 0, .size_bytes = 4 << 20 };
        struct hpw_pool *p = NULL;

        CHECK_INT(hpw_stock_get(h, &st), ==, HPW_E_NOT_FOUND);
        CHECK(st == NULL);
        CHECK_INT(hpw_warm(h, "lib-old", &w, &p, NULL), ==, HPW_OK);
        CHECK_STR(p->from_stock, "");           /* the daemon did not say */
        hpw_pool_free(p);
        hpw_free(h);
}

/* A 200 whose body is not a stock answer: HPW_E_PROTOCOL, nothing returned,
 * the body kept for the caller to look at. */
static void hostile(const char *var, const char *marker)
{
        struct hpw *h = handle(var);
        struct hpw_stock *st = NULL;
        const struct hpw_stock_target t = { .size = sizeof(struct hpw_stock_target), .node = 0, .page_size_bytes = M2, .size_bytes = 8 << 20, .count = 1 };

        CHECK_INT(hpw_stock_get(h, &st), ==, HPW_E_PROTOCOL);
        CHECK(st == NULL);
        CHECK_INT(hpw_last_status(h), ==, 200);
        CHECK(strstr(hpw_last_body(h), marker) != NULL);
        CHECK(strstr(hpw_last_message(h), "not the expected JSON") != NULL);
        CHECK_INT(hpw_stock_set(h, (const struct hpw_stock_target *const[]){ &t }, 1, &st), ==, HPW_E_PROTOCOL);
        CHECK(st == NULL);
        hpw_free(h);
}

/* The change generation: read when the daemon says it, has_generation
 * false when it does not (an older daemon), refused when it is no whole
 * number.  hpw_stock_wait_change sends the query and parses the same way
 * (the waits themselves are proven against the real daemon, in
 * integration.stock_watch and placement.real). */
TEST(stock_generation)
{
        struct hpw *h = handle("FAKE_GEN");
        struct hpw_stock *st = NULL;

        CHECK_INT(hpw_stock_get(h, &st), ==, HPW_OK);
        CHECK(st->has_generation);
        CHECK_U64(st->generation, ==, 42);
        hpw_stock_free(st);
        st = NULL;
        CHECK_INT(hpw_stock_wait_change(h, 41, 1, &st), ==, HPW_OK);
        CHECK_U64(st->generation, ==, 42);
        hpw_stock_free(st);
        st = NULL;
        CHECK_INT(hpw_stock_wait_change(h, 0, HPW_STOCK_WAIT_MAX_S + 1, &st), ==, HPW_E_INVALID);
        CHECK_INT(hpw_stock_wait_change(h, 0, 1, NULL), ==, HPW_E_NULL_ARGUMENT);
        CHECK_INT(hpw_stock_wait_change(NULL, 0, 1, &st), ==, HPW_E_NULL_HANDLE);
        CHECK(st == NULL);
        hpw_free(h);

        h = handle("FAKE_GOOD");                /* says no generation */
        CHECK_INT(hpw_stock_get(h, &st), ==, HPW_OK);
        CHECK(!st->has_generation);
        CHECK_U64(st->generation, ==, 0);
        hpw_stock_free(st);
        st = NULL;
        CHECK_INT(hpw_stock_wait_change(h, 0, 30, &st), ==, HPW_OK);    /* answered at once */
        CHECK(!st->has_generation);
        hpw_stock_free(st);
        hpw_free(h);

        h = handle("FAKE_BADGEN");
        st = NULL;
        CHECK_INT(hpw_stock_get(h, &st), ==, HPW_E_PROTOCOL);
        CHECK(st == NULL);
        CHECK_INT(hpw_stock_wait_change(h, 0, 1, &st), ==, HPW_E_PROTOCOL);
        CHECK(st == NULL);
        hpw_free(h);
}

TEST(malformed_stock_answer_is_a_protocol_error)
{
        hostile("FAKE_MALFORMED", "{\"targets\":[{\"node\":0");
}

TEST(stock_answer_missing_members_is_a_protocol_error)
{
        hostile("FAKE_MISSING", "\"count\":1");
}

TEST(stock_answer_with_huge_counts_is_a_protocol_error)
{
        hostile("FAKE_HUGE", "1e300");
}

TEST(fleet_stock_per_host)
{
        struct hpw *h = handle("FAKE_GOOD");
        const char *urls[] = { url("FAKE_GOOD"), url("FAKE_OLD"), url("FAKE_MALFORMED"), url("FAKE_DEAD") };
        struct hpw_fleet *f = NULL;

        CHECK_INT(hpw_fleet_get(h, urls, 4, HPW_FLEET_STOCK, &f), ==, HPW_OK);
        CHECK_U64(f->n, ==, 4);
        CHECK_INT(f->hosts[0]->err, ==, HPW_OK);
        CHECK(f->hosts[0]->stock != NULL && f->hosts[0]->nodes == NULL && f->hosts[0]->pools == NULL);
        CHECK_INT(f->hosts[1]->err, ==, HPW_E_NOT_FOUND);
        CHECK(f->hosts[1]->stock == NULL);
        CHECK_STR(f->hosts[1]->message, "HTTP 404");
        CHECK_INT(f->hosts[2]->err, ==, HPW_E_PROTOCOL);
        CHECK(f->hosts[2]->stock == NULL);
        CHECK_INT(f->hosts[3]->err, ==, HPW_E_UNREACHABLE);
        hpw_fleet_free(f);
        CHECK_INT(hpw_fleet_get(h, urls, 4, (enum hpw_fleet_what)3, &f), ==, HPW_E_INVALID);
        hpw_free(h);
}

TEST_MAIN()
