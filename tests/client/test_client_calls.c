/* libhpwarm's calls against a fake hpwarmd (fake_server.py, started by
 * run_client_calls.py, which passes its URL as FAKE_URL): error state that
 * is never stale (every call, setters included, starts from nothing),
 * waits stopped by the progress callback or by hpw_cancel() from another
 * thread, a deadline in the middle of a long-poll, and each time the next
 * call on the same handle works; retries as the problem catalog says
 * (no-hugetlbfs never, busy with Retry-After, a claim retried). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "hpwarm.h"

#define M2 (2ull << 20)

static struct hpw *handle(void)
{
        const char *u = getenv("FAKE_URL");
        struct hpw *h = NULL;

        if (!u || !u[0])
                SKIP("run through run_client_calls.py (no fake server)");
        CHECK_INT(hpw_new(u, &h), ==, HPW_OK);
        CHECK_INT(hpw_set_timeouts(h, 2000, 10000), ==, HPW_OK);
        return h;
}

static uint64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Leave H with a failed call's state: a 404 with its problem. */
static void make_stale(struct hpw *h)
{
        struct hpw_pool *p = NULL;

        CHECK_INT(hpw_pool(h, "no-such-pool", &p), ==, HPW_E_NOT_FOUND);
        CHECK_INT(hpw_last_status(h), ==, 404);
        CHECK(hpw_last_problem(h) != NULL);
        CHECK(hpw_last_body(h)[0] != '\0');
        CHECK(hpw_last_message(h)[0] != '\0');
}

/* After a call that sent nothing, nothing of the 404 may show. */
#define CHECK_FRESH(h)                                          \
        do {                                                    \
                CHECK_INT(hpw_last_status(h), ==, 0);           \
                CHECK(hpw_last_problem(h) == NULL);             \
                CHECK_STR(hpw_last_body(h), "");                \
                CHECK_INT(hpw_last_slug(h), ==, HPW_SLUG_UNKNOWN); \
        } while (0)

/* Each call refuses a bad argument after a failed call: its message may say
 * why, but status, problem and body are the refusal's (none). */
#define STALE_THEN(call, want)                                  \
        do {                                                    \
                make_stale(h);                                  \
                CHECK_INT((call), ==, (want));                  \
                CHECK_FRESH(h);                                 \
        } while (0)

TEST(every_call_starts_with_fresh_error_state)
{
        struct hpw *h = handle();
        struct hpw_health *he = NULL;
        struct hpw_node_list *nl = NULL;
        struct hpw_node *n = NULL;
        struct hpw_reserve_result *r = NULL;
        struct hpw_pool_list *pl = NULL;
        struct hpw_pool *p = NULL;
        struct hpw_stock *st = NULL;
        struct hpw_handoff *ho = NULL;
        struct hpw_fleet *f = NULL;
        struct hpw_warm_request w = HPW_WARM_REQUEST_INIT;
        const char *names[] = { "a" };

        STALE_THEN(hpw_health(h, NULL), HPW_E_NULL_ARGUMENT);
        STALE_THEN(hpw_nodes(h, NULL), HPW_E_NULL_ARGUMENT);
        STALE_THEN(hpw_node(h, -1, &n), HPW_E_INVALID);
        STALE_THEN(hpw_reserve(h, 0, 0, 1, false, &r), HPW_E_INVALID);
        STALE_THEN(hpw_pools(h, NULL), HPW_E_NULL_ARGUMENT);
        STALE_THEN(hpw_pool(h, "bad name", &p), HPW_E_INVALID);
        STALE_THEN(hpw_warm(h, "x", &w, &p, NULL), HPW_E_INVALID);          /* size_bytes 0 */
        STALE_THEN(hpw_wait(h, "", 0, NULL, NULL, &p), HPW_E_INVALID);
        STALE_THEN(hpw_claim(h, "bad name", &p), HPW_E_INVALID);
        STALE_THEN(hpw_claim_pid(h, "x", 0, &p), HPW_E_INVALID);
        STALE_THEN(hpw_release(h, "bad name"), HPW_E_INVALID);
        STALE_THEN(hpw_stock_get(h, NULL), HPW_E_NULL_ARGUMENT);
        STALE_THEN(hpw_stock_set(h, NULL, 1, &st), HPW_E_NULL_ARGUMENT);
        STALE_THEN(hpw_handoff(h, "bochs", names, 1, &ho), HPW_E_INVALID);
        STALE_THEN(hpw_fleet_get(h, NULL, 1, HPW_FLEET_NODES, &f), HPW_E_NULL_ARGUMENT);
        STALE_THEN(hpw_set_timeouts(h, 2000, 10000), HPW_OK);
        STALE_THEN(hpw_set_token(h, ""), HPW_E_INVALID);
        STALE_THEN(hpw_set_token_file(h, NULL), HPW_OK);
        STALE_THEN(hpw_set_tls(h, NULL, NULL, NULL), HPW_OK);
        STALE_THEN(hpw_set_retry(h, 0, 1, 1), HPW_E_INVALID);
        make_stale(h);
        hpw_set_log(h, NULL, NULL);
        CHECK_FRESH(h);
        /* hpw_set_token_file's own message is about this call. */
        make_stale(h);
        CHECK_INT(hpw_set_token_file(h, "/nonexistent/token"), ==, HPW_E_IO);
        CHECK_FRESH(h);
        CHECK(strstr(hpw_last_message(h), "/nonexistent/token") != NULL);
        /* A success after a failure: its own status, no problem, no message. */
        make_stale(h);
        CHECK_INT(hpw_health(h, &he), ==, HPW_OK);
        CHECK_INT(hpw_last_status(h), ==, 200);
        CHECK(hpw_last_problem(h) == NULL);
        CHECK_STR(hpw_last_message(h), "");
        hpw_health_free(he);
        make_stale(h);
        CHECK_INT(hpw_nodes(h, &nl), ==, HPW_OK);
        CHECK(hpw_last_problem(h) == NULL);
        hpw_node_list_free(nl);
        make_stale(h);
        CHECK_INT(hpw_pools(h, &pl), ==, HPW_OK);
        CHECK(hpw_last_problem(h) == NULL);
        hpw_pool_list_free(pl);
        hpw_free(h);
}

TEST(problem_slug_as_enum)
{
        struct hpw *h = handle();
        struct hpw_pool *p = NULL;
        struct hpw_warm_request w = HPW_WARM_REQUEST_INIT;

        w.size_bytes = 2ull << 40;  /* the fake answers 409 insufficient-hugepages */
        CHECK_INT(hpw_warm(h, "toobig", &w, &p, NULL), ==, HPW_E_INSUFFICIENT);
        CHECK_INT(hpw_last_slug(h), ==, HPW_SLUG_INSUFFICIENT_HUGEPAGES);
        CHECK_INT(hpw_last_problem(h)->code, ==, HPW_SLUG_INSUFFICIENT_HUGEPAGES);
        hpw_free(h);
}

/* The available pages of each node and page size; free for a daemon that
 * does not report them (the fake's node 1). */
TEST(nodes_carry_available)
{
        struct hpw *h = handle();
        struct hpw_node_list *l = NULL;

        CHECK_INT(hpw_nodes(h, &l), ==, HPW_OK);
        CHECK_U64(l->n, ==, 2);
        CHECK(l->nodes[0]->hugepages[0]->available_reported);
        CHECK_U64(l->nodes[0]->hugepages[0]->available, ==, 60);
        CHECK(!l->nodes[1]->hugepages[0]->available_reported);
        CHECK_U64(l->nodes[1]->hugepages[0]->available, ==, l->nodes[1]->hugepages[0]->free);
        hpw_node_list_free(l);
        hpw_free(h);
}

static int calls;

static int stop_on_second(const struct hpw_pool *p, void *userdata)
{
        (void)userdata;
        CHECK_STR(p->state_name, "warming");
        return ++calls >= 2;
}

/* Create NAME (the fake's "stuck" and "slow" never finish warming). */
static void start_stuck(struct hpw *h, const char *name)
{
        struct hpw_pool *p = NULL;
        struct hpw_warm_request w = HPW_WARM_REQUEST_INIT;

        w.size_bytes = 8 * M2;
        CHECK_INT(hpw_warm(h, name, &w, &p, NULL), ==, HPW_OK);
        hpw_pool_free(p);
}

TEST(progress_callback_stops_the_wait)
{
        struct hpw *h = handle();
        struct hpw_pool *p = NULL;

        start_stuck(h, "stuck");
        calls = 0;
        /* No deadline: only the callback can end it. */
        CHECK_INT(hpw_wait(h, "stuck", 0, stop_on_second, NULL, &p), ==, HPW_E_CANCELLED);
        CHECK_INT(calls, ==, 2);
        CHECK(p != NULL);
        CHECK_STR(p->name, "stuck");
        CHECK(strstr(hpw_last_message(h), "cancelled") != NULL);
        hpw_pool_free(p);
        p = NULL;
        /* The same handle goes on as if nothing happened. */
        CHECK_INT(hpw_pool(h, "stuck", &p), ==, HPW_OK);
        CHECK_INT(hpw_last_status(h), ==, 200);
        hpw_pool_free(p);
        hpw_free(h);
}

struct canceller {
        struct hpw *h;
        unsigned after_ms;
};

static void *cancel_later(void *arg)
{
        struct canceller *c = arg;
        struct timespec ts = { .tv_sec = c->after_ms / 1000, .tv_nsec = (long)(c->after_ms % 1000) * 1000000 };

        nanosleep(&ts, NULL);
        hpw_cancel(c->h);
        return NULL;
}

/* No progress callback: the wait is one 30 s long-poll the fake holds open,
 * and another thread cancels it in flight. */
TEST(hpw_cancel_from_another_thread_mid_long_poll)
{
        struct hpw *h = handle();
        struct hpw_pool *p = NULL;
        struct hpw_node_list *l = NULL;
        struct canceller c = { h, 300 };
        pthread_t t;
        uint64_t t0;

        start_stuck(h, "slow");
        t0 = now_ms();
        CHECK_INT(pthread_create(&t, NULL, cancel_later, &c), ==, 0);
        /* A 20 s deadline only so a broken cancel fails instead of hanging. */
        enum hpw_error err = hpw_wait(h, "slow", 20000, NULL, NULL, &p);
        pthread_join(t, NULL);
        CHECK_INT(err, ==, HPW_E_CANCELLED);
        CHECK_U64(now_ms() - t0, <, 15000);
        CHECK(p == NULL);   /* no answer came before the cancel */
        /* The aborted long-poll's connection is gone: the next call gets a
         * fresh one and its own answer, not the old poll's. */
        CHECK_INT(hpw_nodes(h, &l), ==, HPW_OK);
        CHECK_U64(l->n, ==, 2);
        hpw_node_list_free(l);
        /* A call after the cancel is not cancelled by it. */
        CHECK_INT(hpw_pool(h, "slow", &p), ==, HPW_OK);
        hpw_pool_free(p);
        hpw_free(h);
}

/* "hang" is never answered: the deadline certainly passes mid-request. */
TEST(deadline_mid_request_leaves_no_connection_behind)
{
        struct hpw *h = handle();
        struct hpw_pool *p = NULL;
        struct hpw_health *he = NULL;

        CHECK_INT(hpw_wait(h, "hang", 300, NULL, NULL, &p), ==, HPW_E_TIMEOUT);
        CHECK(p == NULL);
        CHECK_INT(hpw_health(h, &he), ==, HPW_OK);
        CHECK_STR(he->status, "ok");
        hpw_health_free(he);
        hpw_free(h);
}

static unsigned count_log(const char *needle)
{
        const char *path = getenv("FAKE_LOG");
        char line[512];
        unsigned n = 0;
        FILE *f;

        CHECK(path != NULL);
        f = fopen(path, "r");
        CHECK(f != NULL);
        while (fgets(line, sizeof(line), f))
                n += strstr(line, needle) != NULL;
        fclose(f);
        return n;
}

TEST(permanent_refusal_is_not_retried)
{
        struct hpw *h = handle();
        struct hpw_pool *p = NULL;
        struct hpw_warm_request w = HPW_WARM_REQUEST_INIT;

        w.size_bytes = M2;
        CHECK_INT(hpw_warm(h, "nohugetlbfs", &w, &p, NULL), ==, HPW_E_UNAVAILABLE);
        CHECK_INT(hpw_last_slug(h), ==, HPW_SLUG_NO_HUGETLBFS);
        CHECK_INT(hpw_last_status(h), ==, 503);
        CHECK_U64(count_log("PUT /v1/pools/nohugetlbfs"), ==, 1);
        hpw_free(h);
}

TEST(retryable_slug_is_retried)
{
        struct hpw *h = handle();
        struct hpw_pool *p = NULL;

        CHECK_INT(hpw_set_retry(h, 3, 10, 20), ==, HPW_OK);
        CHECK_INT(hpw_pool(h, "busy", &p), ==, HPW_E_UNAVAILABLE);
        CHECK_INT(hpw_last_slug(h), ==, HPW_SLUG_BUSY);
        CHECK_U64(count_log("GET /v1/pools/busy"), ==, 3);
        hpw_free(h);
}

TEST(claim_is_retried)
{
        struct hpw *h = handle();
        struct hpw_pool *p = NULL;

        start_stuck(h, "flakyclaim");
        CHECK_INT(hpw_wait(h, "flakyclaim", 0, NULL, NULL, &p), ==, HPW_OK);
        hpw_pool_free(p);
        p = NULL;
        /* The fake answers the first claim 503, then claims. */
        CHECK_INT(hpw_claim(h, "flakyclaim", &p), ==, HPW_OK);
        CHECK(p->claimed);
        CHECK_U64(count_log("POST /v1/pools/flakyclaim/claim"), ==, 2);
        hpw_pool_free(p);
        hpw_free(h);
}

TEST(version_is_comparable)
{
        char want[32];

        CHECK_U64(hpw_version_num(), ==, HPW_VERSION_NUM);
        snprintf(want, sizeof(want), "%d.%d.%d", HPW_VERSION_MAJOR, HPW_VERSION_MINOR, HPW_VERSION_PATCH);
        CHECK_STR(hpw_version(), want);
}

TEST_MAIN()
