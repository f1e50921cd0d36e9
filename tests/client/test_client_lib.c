/* Unit tests of libhpwarm's pure parts: backoff and retry decisions, status
 * mapping, URL splitting, JSON decoding of server answers (including hostile
 * and wrong-shaped ones), request bodies.  No network.  Each rule is a
 * TEST() of check.h's, run in a process of its own, so a failed check names
 * its rule and the other rules still run; HPW_TEST=name runs one. */
#include <curl/curl.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "json_read.h"

static const struct hpw_retry_policy pol = { .max_attempts = 6, .base_ms = 100, .cap_ms = 1000 };

/* rnd = 0 gives the lower bound (half the step), rnd = half the upper. */
TEST(backoff_within_its_jitter_bounds)
{
        static const struct { unsigned attempt; uint64_t lo, hi; } t[] = {
                { 1, 50, 100 }, { 2, 100, 200 }, { 3, 200, 400 }, { 4, 400, 800 },
                { 5, 500, 1000 }, { 6, 500, 1000 }, { 40, 500, 1000 },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                CHECK_U64(hpw_backoff_ms(&pol, t[i].attempt, 0), ==, t[i].lo);
                uint64_t half = (t[i].hi - t[i].lo);
                CHECK_U64(hpw_backoff_ms(&pol, t[i].attempt, half), ==, t[i].hi);
                for (uint64_t r = 0; r < 5000; r += 37) {
                        uint64_t d = hpw_backoff_ms(&pol, t[i].attempt, r);
                        CHECK_U64(d, >=, t[i].lo);
                        CHECK_U64(d, <=, t[i].hi);
                }
        }
}

/* Attempt 0 is treated as the first retry, not as a zero delay; a huge
 * attempt number does not overflow the doubling. */
TEST(backoff_attempt_zero_and_huge_attempts)
{
        CHECK_U64(hpw_backoff_ms(&pol, 0, 0), ==, 50);
        struct hpw_retry_policy big = { 10, 1, UINT64_MAX / 2 };
        CHECK_U64(hpw_backoff_ms(&big, 200, 0), >, 0);
}

/* Retryable statuses and connection failures, idempotent only. */
TEST(retry_idempotent_on_retryable_answers_only)
{
        const uint64_t none = UINT64_MAX;

        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 503, -1, none, 0), ==, 50);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 502, -1, none, 0), ==, 50);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 504, -1, none, 0), ==, 50);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 429, -1, none, 0), ==, 50);
        CHECK_INT(hpw_retry_delay(&pol, 2, true, HPW_E_UNREACHABLE, 0, -1, none, 0), ==, 100);
        CHECK_INT(hpw_retry_delay(&pol, 1, false, HPW_OK, 503, -1, none, 0), ==, -1);
        CHECK_INT(hpw_retry_delay(&pol, 1, false, HPW_E_UNREACHABLE, 0, -1, none, 0), ==, -1);
        /* Not retryable. */
        static const long no[] = { 200, 400, 401, 403, 404, 409, 413, 422, 500, 501 };
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, no[i], -1, none, 0), ==, -1);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_E_TIMEOUT, 0, -1, none, 0), ==, -1);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_E_TLS, 0, -1, none, 0), ==, -1);
}

TEST(retry_stops_when_attempts_run_out)
{
        const uint64_t none = UINT64_MAX;

        CHECK_INT(hpw_retry_delay(&pol, 6, true, HPW_OK, 503, -1, none, 0), ==, -1);
        CHECK_INT(hpw_retry_delay(&pol, 5, true, HPW_OK, 503, -1, none, 0), >=, 0);
}

/* Retry-After is a lower bound... */
TEST(retry_after_is_a_capped_lower_bound)
{
        const uint64_t none = UINT64_MAX;

        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 429, 2, none, 0), ==, 2000);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 503, 0, none, 0), ==, 50);
        /* ...up to HPW_RETRY_AFTER_MAX_S, also for values that would
         * overflow when turned into milliseconds... */
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 503, HPW_RETRY_AFTER_MAX_S, none, 0), ==,
                  HPW_RETRY_AFTER_MAX_S * 1000);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 503, HPW_RETRY_AFTER_MAX_S + 1, none, 0), ==,
                  HPW_RETRY_AFTER_MAX_S * 1000);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 429, INT64_MAX, none, 0), ==,
                  HPW_RETRY_AFTER_MAX_S * 1000);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 429, INT64_MAX / 1000 + 1, none, 0), ==,
                  HPW_RETRY_AFTER_MAX_S * 1000);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 429, INT64_MAX, 120000, 0), ==,
                  HPW_RETRY_AFTER_MAX_S * 1000);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 429, INT64_MAX, 30000, 0), ==, -1);
        /* ...and ignored without an HTTP answer. */
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_E_UNREACHABLE, 0, 7, none, 0), ==, 50);
}

/* A huge backoff cap saturates instead of wrapping to "give up". */
TEST(retry_huge_backoff_cap_saturates)
{
        const uint64_t none = UINT64_MAX;

        struct hpw_retry_policy huge = { 6, 1ull << 62, UINT64_MAX };
        CHECK_INT(hpw_retry_delay(&huge, 3, true, HPW_OK, 503, -1, none, 0), >, 0);
        CHECK_INT(hpw_retry_delay(&huge, 3, true, HPW_OK, 503, -1, INT64_MAX, 0), ==, -1);
}

/* The deadline wins: a wait that would end past it means give up. */
TEST(retry_gives_up_past_the_deadline)
{
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 429, 2, 1500, 0), ==, -1);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 429, 2, 2500, 0), ==, 2000);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 503, -1, 60, 0), ==, -1);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 503, -1, 0, 0), ==, -1);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, HPW_OK, 503, -1, 100, 0), ==, 50);
}

/* Retries by the catalog: a known slug decides by its retryable flag,
 * whatever its status; without one the status decides. */
TEST(retry_by_catalog_slug)
{
        const uint64_t none = UINT64_MAX;

        CHECK_INT(hpw_retry_delay_slug(&pol, 1, true, HPW_OK, 503, HPW_SLUG_NO_HUGETLBFS, -1, none, 0), ==, -1);
        CHECK_INT(hpw_retry_delay_slug(&pol, 1, true, HPW_OK, 503, HPW_SLUG_NO_HUGETLBFS, 1, none, 0), ==, -1);
        CHECK_INT(hpw_retry_delay_slug(&pol, 1, true, HPW_OK, 429, HPW_SLUG_TOO_MANY_POOLS, -1, none, 0), ==, -1);
        CHECK_INT(hpw_retry_delay_slug(&pol, 1, true, HPW_OK, 503, HPW_SLUG_BUSY, -1, none, 0), ==, 50);
        CHECK_INT(hpw_retry_delay_slug(&pol, 1, true, HPW_OK, 503, HPW_SLUG_STOPPING, 2, none, 0), ==, 2000);
        CHECK_INT(hpw_retry_delay_slug(&pol, 1, true, HPW_OK, 429, HPW_SLUG_TOO_MANY_WAITS, 1, none, 0), ==, 1000);
        CHECK_INT(hpw_retry_delay_slug(&pol, 1, true, HPW_OK, 503, HPW_SLUG_UNKNOWN, -1, none, 0), ==, 50);
        CHECK_INT(hpw_retry_delay_slug(&pol, 1, true, HPW_OK, 500, HPW_SLUG_INTERNAL_ERROR, -1, none, 0), ==, -1);
        CHECK_INT(hpw_retry_delay_slug(&pol, 1, false, HPW_OK, 503, HPW_SLUG_BUSY, -1, none, 0), ==, -1);
}

/* The generated table answers as the catalog says, both ways. */
TEST(slug_table_both_ways)
{
        CHECK_INT(hpw_slug_from_name("insufficient-hugepages"), ==, HPW_SLUG_INSUFFICIENT_HUGEPAGES);
        CHECK_STR(hpw_slug_name(HPW_SLUG_NO_HUGETLBFS), "no-hugetlbfs");
        CHECK_INT(hpw_slug_status(HPW_SLUG_NO_HUGETLBFS), ==, 503);
        CHECK(!hpw_slug_retryable(HPW_SLUG_NO_HUGETLBFS));
        CHECK(hpw_slug_retryable(HPW_SLUG_BUSY));
        CHECK_INT(hpw_slug_from_name("no-such-slug"), ==, HPW_SLUG_UNKNOWN);
        CHECK_INT(hpw_slug_from_name(NULL), ==, HPW_SLUG_UNKNOWN);
        CHECK_STR(hpw_slug_name(HPW_SLUG_UNKNOWN), "");
        CHECK_STR(hpw_slug_name((enum hpw_slug)(HPW_SLUG_COUNT + 1)), "");
        CHECK_INT(hpw_slug_status((enum hpw_slug)-1), ==, 0);
        for (int i = 1; i <= HPW_SLUG_COUNT; i++)
                CHECK_INT(hpw_slug_from_name(hpw_slug_name((enum hpw_slug)i)), ==, i);
}

/* A problem body names its slug as the enum; another namespace's type does
 * not. */
TEST(problem_type_names_its_slug)
{
        struct hpw_problem *p = NULL;
        const char *b = "{\"type\":\"urn:hpwarm:problem:pool-owned\",\"title\":\"t\",\"status\":409}";
        CHECK_INT(hpw_json_problem(b, strlen(b), &p), ==, HPW_OK);
        CHECK_INT(p->code, ==, HPW_SLUG_POOL_OWNED);
        hpw_problem_free(p);
        b = "{\"type\":\"https://example.com/pool-owned\",\"title\":\"t\",\"status\":409}";
        CHECK_INT(hpw_json_problem(b, strlen(b), &p), ==, HPW_OK);
        CHECK_INT(p->code, ==, HPW_SLUG_UNKNOWN);
        hpw_problem_free(p);
}

TEST(transport_errors_map_to_hpw_errors)
{
        /* A connect that timed out (SYN dropped) is unreachable, and retried. */
        CHECK_INT(hpw_transport_error(CURLE_OPERATION_TIMEDOUT, false), ==, HPW_E_UNREACHABLE);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, hpw_transport_error(CURLE_OPERATION_TIMEDOUT, false), 0, -1,
                                  UINT64_MAX, 0), >=, 0);
        /* A server that was reached and then too slow is a timeout, not retried. */
        CHECK_INT(hpw_transport_error(CURLE_OPERATION_TIMEDOUT, true), ==, HPW_E_TIMEOUT);
        CHECK_INT(hpw_retry_delay(&pol, 1, true, hpw_transport_error(CURLE_OPERATION_TIMEDOUT, true), 0, -1,
                                  UINT64_MAX, 0), ==, -1);
        CHECK_INT(hpw_transport_error(CURLE_OK, true), ==, HPW_OK);
        CHECK_INT(hpw_transport_error(CURLE_COULDNT_CONNECT, false), ==, HPW_E_UNREACHABLE);
        CHECK_INT(hpw_transport_error(CURLE_GOT_NOTHING, true), ==, HPW_E_UNREACHABLE);
        CHECK_INT(hpw_transport_error(CURLE_PEER_FAILED_VERIFICATION, true), ==, HPW_E_TLS);
        CHECK_INT(hpw_transport_error(CURLE_URL_MALFORMAT, false), ==, HPW_E_INVALID);
        CHECK_INT(hpw_transport_error(CURLE_WRITE_ERROR, true), ==, HPW_E_PROTOCOL);
}

TEST(statuses_map_to_hpw_errors)
{
        CHECK_INT(hpw_status_error(200, NULL), ==, HPW_OK);
        CHECK_INT(hpw_status_error(201, NULL), ==, HPW_OK);
        CHECK_INT(hpw_status_error(204, NULL), ==, HPW_OK);
        CHECK_INT(hpw_status_error(400, NULL), ==, HPW_E_BAD_REQUEST);
        CHECK_INT(hpw_status_error(422, "invalid-field"), ==, HPW_E_BAD_REQUEST);
        CHECK_INT(hpw_status_error(401, NULL), ==, HPW_E_UNAUTHORIZED);
        CHECK_INT(hpw_status_error(403, NULL), ==, HPW_E_FORBIDDEN);
        CHECK_INT(hpw_status_error(404, NULL), ==, HPW_E_NOT_FOUND);
        CHECK_INT(hpw_status_error(409, "pool-conflict"), ==, HPW_E_CONFLICT);
        CHECK_INT(hpw_status_error(409, NULL), ==, HPW_E_CONFLICT);
        CHECK_INT(hpw_status_error(409, "insufficient-hugepages"), ==, HPW_E_INSUFFICIENT);
        CHECK_INT(hpw_status_error(409, "insufficient-memory"), ==, HPW_E_INSUFFICIENT);
        CHECK_INT(hpw_status_error(409, "reserve-shortfall"), ==, HPW_E_INSUFFICIENT);
        CHECK_INT(hpw_status_error(429, NULL), ==, HPW_E_RATE_LIMITED);
        CHECK_INT(hpw_status_error(503, NULL), ==, HPW_E_UNAVAILABLE);
        CHECK_INT(hpw_status_error(500, NULL), ==, HPW_E_SERVER);
        CHECK_INT(hpw_status_error(418, NULL), ==, HPW_E_BAD_REQUEST);
        CHECK_INT(hpw_status_error(302, NULL), ==, HPW_E_HTTP);
}

TEST(pool_name_rule)
{
        CHECK(hpw_name_valid("vm-42"));
        CHECK(hpw_name_valid("a"));
        CHECK(hpw_name_valid("A.b_c-9"));
        CHECK(!hpw_name_valid(""));
        CHECK(!hpw_name_valid(NULL));
        CHECK(!hpw_name_valid("-x"));
        CHECK(!hpw_name_valid(".x"));
        CHECK(!hpw_name_valid("a/b"));
        CHECK(!hpw_name_valid("a b"));
        CHECK(!hpw_name_valid("a?wait=1"));
        char n65[66];
        memset(n65, 'a', 65);
        n65[65] = '\0';
        CHECK(!hpw_name_valid(n65));
        n65[64] = '\0';
        CHECK(hpw_name_valid(n65));
}

TEST(strerror_and_state_names)
{
        for (int e = 0; e <= HPW_E_HTTP; e++)
                CHECK(hpw_strerror((enum hpw_error)e)[0] != '\0');
        CHECK_STR(hpw_strerror((enum hpw_error)9999), "unknown error");
        CHECK_STR(hpw_pool_state_name(HPW_POOL_READY), "ready");
}

TEST(page_size_format)
{
        char b[32];
        hpw_format_page_size(2ull << 20, b, sizeof(b));
        CHECK_STR(b, "2M");
        hpw_format_page_size(1ull << 30, b, sizeof(b));
        CHECK_STR(b, "1G");
        hpw_format_page_size(64ull << 10, b, sizeof(b));
        CHECK_STR(b, "64kB");
}

TEST(url_split_accepts_what_the_cli_takes)
{
        char *base = NULL, *sock = NULL;

        CHECK_INT(hpw_url_split("unix:///run/hpwarmd/api.sock", &base, &sock), ==, HPW_OK);
        CHECK_STR(base, "http://localhost");
        CHECK_STR(sock, "/run/hpwarmd/api.sock");
        free(base);
        free(sock);
        CHECK_INT(hpw_url_split("http://127.0.0.1:8080/", &base, &sock), ==, HPW_OK);
        CHECK_STR(base, "http://127.0.0.1:8080");
        CHECK(sock == NULL);
        free(base);
        CHECK_INT(hpw_url_split("https://h.example:443", &base, &sock), ==, HPW_OK);
        CHECK_STR(base, "https://h.example:443");
        free(base);
        /* What the CLI's --url takes: HOST:PORT is http, a path and unix:/PATH
         * a unix socket. */
        CHECK_INT(hpw_url_split("127.0.0.1:7411", &base, &sock), ==, HPW_OK);
        CHECK_STR(base, "http://127.0.0.1:7411");
        CHECK(sock == NULL);
        free(base);
        CHECK_INT(hpw_url_split("/run/x.sock", &base, &sock), ==, HPW_OK);
        CHECK_STR(base, "http://localhost");
        CHECK_STR(sock, "/run/x.sock");
        free(base);
        free(sock);
        CHECK_INT(hpw_url_split("unix:/run/x.sock", &base, &sock), ==, HPW_OK);
        CHECK_STR(sock, "/run/x.sock");
        free(base);
        free(sock);
}

/* Refused URLs write nothing. */
TEST(url_split_refuses_writing_nothing)
{
        char *base = (char *)"untouched", *sock = (char *)"untouched";

        CHECK_INT(hpw_url_split("unix://relative.sock", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("unix://", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("ftp://x", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("http://", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("http://h/?x", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("unix:relative.sock", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("//x.sock", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("/", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("user@h:80", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split("h:80/v1", &base, &sock), ==, HPW_E_INVALID);
        CHECK_INT(hpw_url_split(":80", &base, &sock), ==, HPW_E_INVALID);
        /* Written only on success. */
        CHECK_STR(base, "untouched");
        CHECK_STR(sock, "untouched");
}

#define J(s) s, strlen(s)

TEST(json_pool_decodes_every_field)
{
        const char *body =
                "{\"name\":\"vm-42\",\"node\":1,\"page_size_bytes\":2097152,\"size_bytes\":1073741824,"
                "\"state\":\"ready\",\"bytes_done\":1073741824,\"rate_bytes_per_second\":2147483648.5,"
                "\"threads\":2,\"started_at\":1700000000,\"finished_at\":\"2023-11-14T22:13:21Z\","
                "\"elapsed_seconds\":0.5,\"error\":null,\"path\":\"/dev/hugepages/hpwarm/vm-42\","
                "\"placement\":{\"verified\":true,\"pages_off_node\":0},\"claimed\":false,"
                "\"expires_at\":\"2023-11-14T23:13:20+01:00\",\"future_field\":[1,2],"
                "\"handoff\":{\"qemu\":\"-object memory-backend-file,id=m0\",\"cloud_hypervisor\":\"--memory-zone id=z\"}}";
        struct hpw_pool *p = NULL;

        CHECK_INT(hpw_json_pool(J(body), &p), ==, HPW_OK);
        CHECK_STR(p->name, "vm-42");
        CHECK_INT(p->node, ==, 1);
        CHECK_U64(p->page_size_bytes, ==, 2097152);
        CHECK_U64(p->size_bytes, ==, 1ull << 30);
        CHECK_INT(p->state, ==, HPW_POOL_READY);
        CHECK_STR(p->state_name, "ready");
        CHECK(p->rate_bytes_per_second > 2147483648.0);
        CHECK_INT(p->threads, ==, 2);
        CHECK_INT(p->started_at, ==, 1700000000);
        CHECK_INT(p->finished_at, ==, 1700000001);
        CHECK_INT(p->expires_at, ==, 1700000000);
        CHECK(p->error == NULL);
        CHECK(p->placement_verified);
        CHECK(!p->claimed);
        /* Not in this body: 0. */
        CHECK_U64(p->ttl_seconds, ==, 0);
        CHECK_INT(p->owner_pid, ==, 0);
        CHECK_INT(p->unmapped_since, ==, 0);
        hpw_pool_free(p);
        p = NULL;
        /* As hpwarmd sends them: ttl, an owner or null, unmapped_since as
         * RFC 3339 or null. */
        CHECK_INT(hpw_json_pool(J("{\"name\":\"a\",\"state\":\"ready\",\"ttl_seconds\":600,\"owner_pid\":4242,"
                                  "\"unmapped_since\":\"2023-11-14T22:13:20Z\"}"), &p), ==, HPW_OK);
        CHECK_U64(p->ttl_seconds, ==, 600);
        CHECK_INT(p->owner_pid, ==, 4242);
        CHECK_INT(p->unmapped_since, ==, 1700000000);
        hpw_pool_free(p);
        p = NULL;
        CHECK_INT(hpw_json_pool(J("{\"name\":\"a\",\"state\":\"ready\",\"owner_pid\":null,"
                                  "\"unmapped_since\":null}"), &p), ==, HPW_OK);
        CHECK_INT(p->owner_pid, ==, 0);
        CHECK_INT(p->unmapped_since, ==, 0);
        hpw_pool_free(p);
        CHECK_INT(hpw_json_pool(J(body), &p), ==, HPW_OK);
        CHECK_STR(p->handoff_qemu, "-object memory-backend-file,id=m0");
        CHECK_STR(p->handoff_cloud_hypervisor, "--memory-zone id=z");
        CHECK_STR(p->json, body);
        hpw_pool_free(p);
}

/* hpw_pool_handoff(): every format of the table by its name, "" for one
 * the answer leaves out, NULL for a name the library does not know. */
TEST(pool_handoff_by_vmm_name)
{
        struct hpw_pool *p = NULL;
        CHECK_INT(hpw_json_pool(J("{\"name\":\"a\",\"state\":\"ready\",\"handoff\":{\"qemu\":\"-q\","
                                  "\"qemu_argv\":[\"-q\"],\"cloud_hypervisor\":\"--c\",\"libvirt\":\"<x/>\"}}"),
                                &p), ==, HPW_OK);
        CHECK_STR(hpw_pool_handoff(p, "qemu"), "-q");
        CHECK_STR(hpw_pool_handoff(p, "cloud-hypervisor"), "--c");
        CHECK_STR(hpw_pool_handoff(p, "libvirt"), "<x/>");
        CHECK_STR(hpw_pool_handoff(p, "qemu"), p->handoff_qemu);
        CHECK_STR(hpw_pool_handoff(p, "cloud-hypervisor"), p->handoff_cloud_hypervisor);
        CHECK(hpw_pool_handoff(p, "ch") == NULL);
        CHECK(hpw_pool_handoff(p, "cloud_hypervisor") == NULL);
        CHECK(hpw_pool_handoff(p, "xen") == NULL);
        CHECK(hpw_pool_handoff(p, NULL) == NULL);
        CHECK(hpw_pool_handoff(NULL, "qemu") == NULL);
        hpw_pool_free(p);
        p = NULL;
        /* A pool without a file: every format "". */
        CHECK_INT(hpw_json_pool(J("{\"name\":\"a\",\"state\":\"failed\"}"), &p), ==, HPW_OK);
        for (size_t i = 0; i < hpw_n_vmms; i++)
                CHECK_STR(hpw_pool_handoff(p, hpw_vmms[i].name), "");
        hpw_pool_free(p);
}

/* A failed pool carries its problem; unknown states are kept by name. */
TEST(json_pool_failed_and_unknown_states)
{
        struct hpw_pool *p = NULL;
        const char *failed = "{\"name\":\"x\",\"state\":\"failed\",\"error\":{\"type\":"
                             "\"urn:hpwarm:problem:insufficient-hugepages\",\"title\":\"t\",\"status\":409,"
                             "\"detail\":\"d\"}}";
        CHECK_INT(hpw_json_pool(J(failed), &p), ==, HPW_OK);
        CHECK_INT(p->state, ==, HPW_POOL_FAILED);
        CHECK(p->error != NULL);
        CHECK_STR(p->error->slug, "insufficient-hugepages");
        CHECK_INT(p->error->status, ==, 409);
        CHECK_STR(p->path, "");
        CHECK_STR(p->handoff_qemu, "");
        hpw_pool_free(p);
        CHECK_INT(hpw_json_pool(J("{\"name\":\"x\",\"state\":\"frozen\"}"), &p), ==, HPW_OK);
        CHECK_INT(p->state, ==, HPW_POOL_UNKNOWN);
        CHECK_STR(p->state_name, "frozen");
        hpw_pool_free(p);
}

/* Wrong shapes: refused, nothing written. */
TEST(json_pool_refuses_wrong_shapes)
{
        struct hpw_pool *p = (struct hpw_pool *)0x1;

        CHECK_INT(hpw_json_pool(J("[]"), &p), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_pool(J("{\"name\":1,\"state\":\"ready\"}"), &p), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_pool(J("{\"Name\":\"x\",\"State\":\"ready\"}"), &p), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_pool(J("{\"name\":\"x\""), &p), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_pool(J("<html>"), &p), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_pool("", 0, &p), ==, HPW_E_PROTOCOL);
        CHECK(p == (struct hpw_pool *)0x1);
}

TEST(json_pool_list)
{
        struct hpw_pool_list *l = NULL;

        CHECK_INT(hpw_json_pool_list(J("{\"pools\":[{\"name\":\"a\",\"state\":\"warming\"},"
                                       "{\"name\":\"b\",\"state\":\"ready\"}]}"), &l), ==, HPW_OK);
        CHECK_INT(l->n, ==, 2);
        CHECK_STR(l->pools[1]->name, "b");
        hpw_pool_list_free(l);
        CHECK_INT(hpw_json_pool_list(J("{\"pools\":[]}"), &l), ==, HPW_OK);
        CHECK_INT(l->n, ==, 0);
        hpw_pool_list_free(l);
        CHECK_INT(hpw_json_pool_list(J("{\"pools\":[{\"name\":\"a\"}]}"), &l), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_pool_list(J("{\"pools\":{}}"), &l), ==, HPW_E_PROTOCOL);
}

/* Paging: pages append in order, the text becomes one document without
 * "next", and a "next" that is not the page's last name, or a page that
 * does not move forward, is a protocol error (no endless paging). */
TEST(json_pool_list_pages_move_forward_only)
{
        struct hpw_pool_list *acc = NULL;
        char *next = NULL;

        CHECK_INT(hpw_json_pool_list_page(J("{\"pools\":[{\"name\":\"a\",\"state\":\"ready\"},"
                                            "{\"name\":\"b\",\"state\":\"ready\"}],\"next\":\"b\"}"),
                                          &acc, &next), ==, HPW_OK);
        CHECK_STR(next, "b");
        free(next);
        CHECK_INT(hpw_json_pool_list_page(J("{\"pools\":[{\"name\":\"c\",\"state\":\"warming\"}]}"), &acc,
                                          &next), ==, HPW_OK);
        CHECK(next == NULL);
        CHECK_INT(acc->n, ==, 3);
        CHECK_STR(acc->pools[2]->name, "c");
        CHECK_STR(acc->pools[0]->name, "a");
        CHECK(strstr(acc->json, "\"next\"") == NULL);
        CHECK(strstr(acc->json, "\"a\"") && strstr(acc->json, "\"c\""));
        /* Backwards: refused, and the list so far is kept as it was. */
        CHECK_INT(hpw_json_pool_list_page(J("{\"pools\":[{\"name\":\"a\",\"state\":\"ready\"}]}"), &acc,
                                          &next), ==, HPW_E_PROTOCOL);
        CHECK_INT(acc->n, ==, 3);
        hpw_pool_list_free(acc);

        acc = NULL;
        CHECK_INT(hpw_json_pool_list_page(J("{\"pools\":[{\"name\":\"a\",\"state\":\"ready\"}],"
                                            "\"next\":\"z\"}"), &acc, &next), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_pool_list_page(J("{\"pools\":[],\"next\":\"a\"}"), &acc, &next), ==,
                  HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_pool_list_page(J("{\"pools\":[{\"name\":\"a\",\"state\":\"ready\"}],"
                                            "\"next\":7}"), &acc, &next), ==, HPW_E_PROTOCOL);
        CHECK(acc == NULL);
}

/* GET /v1/handoff answers: the words a caller execs, so strict. */
TEST(json_handoff_qemu_and_libvirt)
{
        const char *qemu =
                "{\"vmm\":\"qemu\",\"pools\":[{\"name\":\"a\"}],\"memory_bytes\":268435456,"
                "\"args\":\"-object 'memory-backend-file,id=mem-a,mem-path=/p q/a' -machine memory-backend=mem-a\","
                "\"argv\":[\"-object\",\"memory-backend-file,id=mem-a,mem-path=/p q/a\",\"-machine\","
                "\"memory-backend=mem-a\"],\"note\":\"add -m 256M\",\"future\":1}";
        const char *libvirt =
                "{\"vmm\":\"libvirt\",\"memory_bytes\":2097152,\"argv\":[\"-object\",\"x\"],"
                "\"xml\":\"<qemu:commandline>\\n</qemu:commandline>\","
                "\"namespace\":\"xmlns:qemu=\\\"http://libvirt.org/schemas/domain/qemu/1.0\\\"\"}";
        struct hpw_handoff *x = NULL;

        CHECK_INT(hpw_json_handoff(J(qemu), &x), ==, HPW_OK);
        CHECK_STR(x->vmm, "qemu");
        CHECK_U64(x->memory_bytes, ==, 256u << 20);
        CHECK_INT(x->n_argv, ==, 4);
        CHECK_STR(x->argv[1], "memory-backend-file,id=mem-a,mem-path=/p q/a");
        CHECK_STR(x->argv[3], "memory-backend=mem-a");
        CHECK(x->argv[4] == NULL);
        CHECK_STR(x->args, "-object 'memory-backend-file,id=mem-a,mem-path=/p q/a' -machine memory-backend=mem-a");
        CHECK_STR(x->xml, "");
        CHECK_STR(x->xml_namespace, "");
        CHECK_STR(x->note, "add -m 256M");
        CHECK_STR(x->json, qemu);
        hpw_handoff_free(x);

        CHECK_INT(hpw_json_handoff(J(libvirt), &x), ==, HPW_OK);
        CHECK_STR(x->xml, "<qemu:commandline>\n</qemu:commandline>");
        CHECK_STR(x->xml_namespace, "xmlns:qemu=\"http://libvirt.org/schemas/domain/qemu/1.0\"");
        CHECK_STR(x->args, "");
        CHECK_STR(x->note, "");
        hpw_handoff_free(x);
        hpw_handoff_free(NULL);
}

/* Wrong shapes: each is refused and nothing is returned. */
TEST(json_handoff_refuses_wrong_shapes)
{
        struct hpw_handoff *x;
        static const char *const bad[] = {
                "[]",
                "{\"memory_bytes\":1,\"args\":\"a\",\"argv\":[\"a\"]}",                         /* no vmm */
                "{\"vmm\":\"xen\",\"memory_bytes\":1,\"args\":\"a\",\"argv\":[\"a\"]}",          /* unknown vmm */
                "{\"vmm\":\"qemu\",\"args\":\"a\",\"argv\":[\"a\"]}",                            /* no total */
                "{\"vmm\":\"qemu\",\"memory_bytes\":0,\"args\":\"a\",\"argv\":[\"a\"]}",         /* zero total */
                "{\"vmm\":\"qemu\",\"memory_bytes\":-1,\"args\":\"a\",\"argv\":[\"a\"]}",
                "{\"vmm\":\"qemu\",\"memory_bytes\":\"1\",\"args\":\"a\",\"argv\":[\"a\"]}",
                "{\"vmm\":\"qemu\",\"memory_bytes\":1,\"args\":\"a\"}",                          /* no argv */
                "{\"vmm\":\"qemu\",\"memory_bytes\":1,\"args\":\"a\",\"argv\":[]}",              /* empty argv */
                "{\"vmm\":\"qemu\",\"memory_bytes\":1,\"args\":\"a\",\"argv\":\"a\"}",
                "{\"vmm\":\"qemu\",\"memory_bytes\":1,\"args\":\"a\",\"argv\":[\"a\",2]}",       /* a non-string word */
                "{\"vmm\":\"qemu\",\"memory_bytes\":1,\"args\":\"a\",\"argv\":[\"a\",null]}",
                "{\"vmm\":\"qemu\",\"memory_bytes\":1,\"argv\":[\"a\"]}",                        /* no args */
                "{\"vmm\":\"cloud-hypervisor\",\"memory_bytes\":1,\"args\":7,\"argv\":[\"a\"]}",
                "{\"vmm\":\"libvirt\",\"memory_bytes\":1,\"argv\":[\"a\"],\"namespace\":\"n\"}", /* no xml */
                "{\"vmm\":\"libvirt\",\"memory_bytes\":1,\"argv\":[\"a\"],\"xml\":\"x\"}",       /* no namespace */
                "{\"VMM\":\"qemu\",\"memory_bytes\":1,\"args\":\"a\",\"argv\":[\"a\"]}",         /* case matters */
                "{\"vmm\":\"qemu\",\"memory_bytes\":1,\"args\":\"a\",\"argv\":[\"a\"]} x",       /* trailing junk */
                NULL,
        };
        for (size_t i = 0; bad[i]; i++) {
                x = (struct hpw_handoff *)0x1;
                int r = hpw_json_handoff(J(bad[i]), &x);

                if (r != HPW_E_PROTOCOL)
                        fprintf(stderr, "handoff answer %zu accepted: %s\n", i, bad[i]);
                CHECK_INT(r, ==, HPW_E_PROTOCOL);
                CHECK(x == (struct hpw_handoff *)0x1);
        }
}

/* Arguments are checked before anything is sent. */
TEST(handoff_checks_arguments_before_sending)
{
        struct hpw_handoff *x = NULL;
        struct hpw *h = NULL;
        const char *one[] = { "vm-a" }, *badname[] = { "../x" };
        const char *many[HPW_HANDOFF_MAX_POOLS + 1];
        for (size_t i = 0; i <= HPW_HANDOFF_MAX_POOLS; i++)
                many[i] = "p";
        CHECK_INT(hpw_new("http://127.0.0.1:1", &h), ==, HPW_OK);
        CHECK_INT(hpw_handoff(h, "xen", one, 1, &x), ==, HPW_E_INVALID);
        CHECK_INT(hpw_handoff(h, NULL, one, 1, &x), ==, HPW_E_NULL_ARGUMENT);
        CHECK_INT(hpw_handoff(h, "qemu", one, 0, &x), ==, HPW_E_INVALID);
        CHECK_INT(hpw_handoff(h, "qemu", NULL, 1, &x), ==, HPW_E_NULL_ARGUMENT);
        CHECK_INT(hpw_handoff(h, "qemu", badname, 1, &x), ==, HPW_E_INVALID);
        CHECK_INT(hpw_handoff(h, "qemu", many, HPW_HANDOFF_MAX_POOLS + 1, &x), ==, HPW_E_INVALID);
        CHECK_INT(hpw_handoff(h, "qemu", one, 1, NULL), ==, HPW_E_NULL_ARGUMENT);
        CHECK_INT(hpw_last_status(h), ==, 0);
        hpw_free(h);
}

TEST(json_nodes_decode)
{
        const char *body = "{\"nodes\":[{\"id\":0,\"cpus\":\"0-1\",\"cpu_count\":2,"
                           "\"memory\":{\"total_bytes\":8589934592,\"free_bytes\":4294967296},"
                           "\"hugepages\":[{\"page_size_bytes\":2097152,\"total\":64,\"free\":60,"
                           "\"surplus\":0,\"warm\":4,\"warming\":0},{\"page_size_bytes\":1073741824,"
                           "\"total\":0,\"free\":0,\"surplus\":0}]},"
                           "{\"id\":2,\"cpus\":\"\",\"cpu_count\":0,\"memory\":{\"total_bytes\":1,"
                           "\"free_bytes\":1},\"hugepages\":[]}],\"reserved\":[]}";
        struct hpw_node_list *l = NULL;

        CHECK_INT(hpw_json_node_list(J(body), &l), ==, HPW_OK);
        CHECK_INT(l->n, ==, 2);
        CHECK_INT(l->nodes[0]->id, ==, 0);
        CHECK_STR(l->nodes[0]->cpus, "0-1");
        CHECK_INT(l->nodes[0]->cpu_count, ==, 2);
        CHECK_U64(l->nodes[0]->memory_total_bytes, ==, 8589934592ull);
        CHECK_INT(l->nodes[0]->n_hugepages, ==, 2);
        CHECK_U64(l->nodes[0]->hugepages[0]->free, ==, 60);
        /* No "available" (an older daemon): free is the bound. */
        CHECK(!l->nodes[0]->hugepages[0]->available_reported);
        CHECK_U64(l->nodes[0]->hugepages[0]->available, ==, 60);
        CHECK_U64(l->nodes[0]->hugepages[0]->warm, ==, 4);
        CHECK_U64(l->nodes[0]->hugepages[1]->page_size_bytes, ==, 1ull << 30);
        CHECK_INT(l->nodes[1]->id, ==, 2);
        CHECK_INT(l->nodes[1]->n_hugepages, ==, 0);
        hpw_node_list_free(l);
}

/* Negative, fractional and missing ids are not a node. */
TEST(json_nodes_refuse_bad_nodes_and_trailing_bytes)
{
        struct hpw_node_list *l = NULL;

        CHECK_INT(hpw_json_node_list(J("{\"nodes\":[{\"id\":-1.5}]}"), &l), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_node_list(J("{\"nodes\":[{\"cpus\":\"0\"}]}"), &l), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_node_list(J("{\"nodes\":[{\"id\":0,\"hugepages\":[{\"total\":1}]}]}"), &l), ==,
                  HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_node_list(J("{\"nodes\":[{\"id\":0,\"hugepages\":{}}]}"), &l), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_node_list(J("{}"), &l), ==, HPW_E_PROTOCOL);
        /* One whole object or nothing: bytes after it are not an answer. */
        CHECK_INT(hpw_json_node_list(J("{\"nodes\":[]}},{\"url\":\"http://forged\"}"), &l), ==,
                  HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_node_list(J("{\"nodes\":[]}x"), &l), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_node_list("{\"nodes\":[]}\0{", 14, &l), ==, HPW_E_PROTOCOL);
        CHECK_INT(hpw_json_node_list(J(" {\"nodes\":[]} \r\n\t"), &l), ==, HPW_OK);
        hpw_node_list_free(l);
}

/* Reprinted compact, one whole document or nothing. */
TEST(json_reprint_one_document)
{
        char *rp = hpw_json_reprint(J(" {\"nodes\" : [ ],\"a\":\"\\u0022\"}\n"));
        CHECK_STR(rp, "{\"nodes\":[],\"a\":\"\\\"\"}");
        free(rp);
        CHECK(!hpw_json_reprint(J("{\"nodes\":[]}]")));
        CHECK(!hpw_json_reprint(J("[1]")));
}

/* Reported: taken as is, also 0 while free is not. */
TEST(json_nodes_available_as_reported)
{
        struct hpw_node_list *l = NULL;

        CHECK_INT(hpw_json_node_list(J("{\"nodes\":[{\"id\":0,\"hugepages\":[{\"page_size_bytes\":2097152,"
                                       "\"free\":60,\"available\":0}]}]}"), &l), ==, HPW_OK);
        CHECK(l->nodes[0]->hugepages[0]->available_reported);
        CHECK_U64(l->nodes[0]->hugepages[0]->available, ==, 0);
        hpw_node_list_free(l);
}

/* One node; a negative count is treated as absent. */
TEST(json_node_negative_count_is_absent)
{
        struct hpw_node *n = NULL;

        CHECK_INT(hpw_json_node(J("{\"id\":3,\"cpus\":\"4-7\",\"hugepages\":[{\"page_size_bytes\":2097152,"
                                  "\"total\":1e3,\"free\":-1}]}"), &n), ==, HPW_OK);
        CHECK_INT(n->id, ==, 3);
        CHECK_U64(n->hugepages[0]->total, ==, 1000);
        CHECK_U64(n->hugepages[0]->free, ==, 0);  /* negative: treated as absent */
        hpw_node_free(n);
}

/* Times: numbers only within what a double carries exactly (a cast of 1e300
 * to int64_t is undefined), RFC 3339 offsets only as +HH:MM digits. */
TEST(json_times_exact_numbers_and_rfc3339)
{
        static const struct { const char *v; int64_t want; } t[] = {
                { "1700000000", 1700000000 },
                { "1e300", 0 },
                { "-1e300", 0 },
                { "9007199254740993e3", 0 },
                { "\"2023-11-14T22:13:20Z\"", 1700000000 },
                { "\"2023-11-14T22:13:20.250Z\"", 1700000000 },
                { "\"2023-11-14T23:13:20+01:00\"", 1700000000 },
                { "\"2023-11-14T21:43:20-00:30\"", 1700000000 },
                { "\"2023-11-14T22:13:20\"", 1700000000 },
                { "\"2023-11-14T23:13:20+0a:00\"", 0 },
                { "\"2023-11-14T23:13:20+01:0\"", 0 },
                { "\"2023-11-14T23:13:20+01-00\"", 0 },
                { "\"2023-11-14T23:13:20+99:00\"", 0 },
                { "\"2023-11-14T23:13:20+01:00x\"", 0 },
                { "\"2023-11-14T23:13:20Zjunk\"", 0 },
                { "\"2023-11-14T23:13:20+\\u0000\"", 0 },
                { "\"not a time\"", 0 },
                { "true", 0 },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char body[256];
                struct hpw_pool *p = NULL;

                snprintf(body, sizeof(body), "{\"name\":\"x\",\"state\":\"ready\",\"started_at\":%s}", t[i].v);
                CHECK_INT(hpw_json_pool(J(body), &p), ==, HPW_OK);
                if (p->started_at != t[i].want)
                        fprintf(stderr, "time %s\n", t[i].v);
                CHECK_INT(p->started_at, ==, t[i].want);
                hpw_pool_free(p);
        }
}

/* An answer with more than HPW_MAX_ITEMS items in an array is refused. */
TEST(json_caps_items_per_array)
{
        const char *item = "{\"id\":0},";
        size_t cap = strlen("{\"nodes\":[]}") + (HPW_MAX_ITEMS + 1) * strlen(item) + 1, len;
        char *b = malloc(cap), *p;
        struct hpw_node_list *l = NULL;

        CHECK(b);
        for (size_t want = HPW_MAX_ITEMS; want <= HPW_MAX_ITEMS + 1; want++) {
                p = b + sprintf(b, "{\"nodes\":[");
                for (size_t i = 0; i < want; i++)
                        p += sprintf(p, "%s", item);
                p[-1] = ']';
                *p++ = '}';
                *p = '\0';
                len = (size_t)(p - b);
                if (want == HPW_MAX_ITEMS) {
                        CHECK_INT(hpw_json_node_list(b, len, &l), ==, HPW_OK);
                        CHECK_U64(l->n, ==, HPW_MAX_ITEMS);
                        hpw_node_list_free(l);
                } else {
                        CHECK_INT(hpw_json_node_list(b, len, &l), ==, HPW_E_PROTOCOL);
                }
        }
        /* The same for a node's page sizes. */
        free(b);
        item = "{\"page_size_bytes\":2097152},";
        b = malloc(64 + (HPW_MAX_ITEMS + 1) * strlen(item));
        CHECK(b);
        p = b + sprintf(b, "{\"id\":0,\"hugepages\":[");
        for (size_t i = 0; i <= HPW_MAX_ITEMS; i++)
                p += sprintf(p, "%s", item);
        p[-1] = ']';
        *p++ = '}';
        *p = '\0';
        struct hpw_node *n = NULL;
        CHECK_INT(hpw_json_node(b, (size_t)(p - b), &n), ==, HPW_E_PROTOCOL);
        free(b);
}

/* One struct with a member of every kind, for the table loop's rules. */
struct jrow_test {
        uint64_t u;
        int i;
        unsigned un;
        bool b;
        double d;
        int64_t t;
        char *s;
        char c[8];
        uint64_t need_u;
        int need_i;
        char *need_s;
};

static const struct hpw_jfield jrow_opt[] = {
        HPW_JOPT(struct jrow_test, "u", u, HPW_J_U64),
        HPW_JOPT(struct jrow_test, "i", i, HPW_J_INT),
        HPW_JOPT(struct jrow_test, "un", un, HPW_J_UNSIGNED),
        HPW_JOPT(struct jrow_test, "b", b, HPW_J_BOOL),
        HPW_JOPT(struct jrow_test, "d", d, HPW_J_DOUBLE),
        HPW_JOPT(struct jrow_test, "t", t, HPW_J_TIME),
        HPW_JOPT(struct jrow_test, "s", s, HPW_J_STR),
        HPW_JOPT(struct jrow_test, "c", c, HPW_J_CHARS),
};

static const struct hpw_jfield jrow_req[] = {
        HPW_JOPT(struct jrow_test, "s", s, HPW_J_STR),
        HPW_JGET(struct jrow_test, "need_u", need_u, HPW_J_U64),
        HPW_JGET(struct jrow_test, "need_i", need_i, HPW_J_INT),
        HPW_JGET(struct jrow_test, "need_s", need_s, HPW_J_STR),
};

/* Read BODY's object through TABLE into a zeroed *X; the error. */
static enum hpw_error jrow_read(const char *body, struct jrow_test *x, const struct hpw_jfield *f, size_t n)
{
        cJSON *o = hpw_json_parse_object(J(body));
        enum hpw_error err;

        CHECK(o);
        memset(x, 0, sizeof(*x));
        err = hpw_jfields(o, x, f, n);
        cJSON_Delete(o);
        return err;
}

static void jrow_clear(struct jrow_test *x)
{
        free(x->s);
        free(x->need_s);
        memset(x, 0, sizeof(*x));
}

#define JROW(body, x, table) jrow_read(body, x, table, sizeof(table) / sizeof((table)[0]))

/* The member table's loop: each kind reads through its getter, an optional
 * member absent or of another type is its default ("" for a string, never
 * NULL), a required one is HPW_E_PROTOCOL, checked before any member is
 * written. */
TEST(json_table_rows_read_through_their_getters)
{
        struct jrow_test x;

        CHECK_INT(JROW("{\"u\":9007199254740992,\"i\":-2147483648,\"un\":7,\"b\":true,\"d\":2.5,"
                       "\"t\":\"2024-01-02T03:04:05+01:00\",\"s\":\"str\",\"c\":\"1234567\"}", &x, jrow_opt), ==, HPW_OK);
        CHECK_U64(x.u, ==, 9007199254740992ull);
        CHECK_INT(x.i, ==, INT32_MIN);
        CHECK_U64(x.un, ==, 7);
        CHECK(x.b);
        CHECK(x.d == 2.5);
        CHECK_INT(x.t, ==, 1704164645 - 3600);    /* 03:04:05 at +01:00 is 02:04:05Z */
        CHECK_STR(x.s, "str");
        CHECK_STR(x.c, "1234567");
        jrow_clear(&x);

        /* Absent: the defaults. */
        CHECK_INT(JROW("{}", &x, jrow_opt), ==, HPW_OK);
        CHECK_U64(x.u, ==, 0);
        CHECK_INT(x.i, ==, 0);
        CHECK(!x.b);
        CHECK(x.d == 0.0);
        CHECK_INT(x.t, ==, 0);
        CHECK(x.s);
        CHECK_STR(x.s, "");
        CHECK_STR(x.c, "");
        jrow_clear(&x);
        /* A missing parent object reads as every member absent. */
        memset(&x, 0, sizeof(x));
        CHECK_INT(hpw_jfields(NULL, &x, jrow_opt, sizeof(jrow_opt) / sizeof(jrow_opt[0])), ==, HPW_OK);
        CHECK_STR(x.s, "");
        jrow_clear(&x);

        /* Of another type, or past a getter's bounds: the defaults too.
         * u64: whole numbers in [0, 2^53]; int: int's range; a time that
         * is not one is 0; a char[] member is cut to fit. */
        CHECK_INT(JROW("{\"u\":9007199254740994,\"i\":2147483648,\"b\":1,\"d\":\"2.5\",\"t\":\"2024-01-02\","
                       "\"s\":5,\"c\":\"123456789\"}", &x, jrow_opt), ==, HPW_OK);
        CHECK_U64(x.u, ==, 0);
        CHECK_INT(x.i, ==, 0);
        CHECK(!x.b);
        CHECK(x.d == 0.0);
        CHECK_INT(x.t, ==, 0);
        CHECK_STR(x.s, "");
        CHECK_STR(x.c, "1234567");
        jrow_clear(&x);
        CHECK_INT(JROW("{\"u\":-1,\"i\":1.5,\"s\":null,\"c\":[]}", &x, jrow_opt), ==, HPW_OK);
        CHECK_U64(x.u, ==, 0);
        CHECK_INT(x.i, ==, 0);
        CHECK_STR(x.s, "");
        CHECK_STR(x.c, "");
        jrow_clear(&x);
        /* unsigned is the u64 read cast down, as the decoders always did
         * (a pool's threads, a node's cpu_count). */
        CHECK_INT(JROW("{\"un\":4294967301}", &x, jrow_opt), ==, HPW_OK);
        CHECK_U64(x.un, ==, 5);
        jrow_clear(&x);
}

TEST(json_table_required_rows_or_protocol)
{
        static const char *const bad[] = {
                "{\"need_i\":1,\"need_s\":\"x\"}",                              /* need_u missing */
                "{\"need_u\":\"1\",\"need_i\":1,\"need_s\":\"x\"}",             /* need_u a string */
                "{\"need_u\":9007199254740994,\"need_i\":1,\"need_s\":\"x\"}",  /* past 2^53 */
                "{\"need_u\":-1,\"need_i\":1,\"need_s\":\"x\"}",
                "{\"need_u\":1.5,\"need_i\":1,\"need_s\":\"x\"}",
                "{\"need_u\":1,\"need_i\":2147483648,\"need_s\":\"x\"}",       /* past int */
                "{\"need_u\":1,\"need_i\":-2147483649,\"need_s\":\"x\"}",
                "{\"need_u\":1,\"need_i\":null,\"need_s\":\"x\"}",
                "{\"need_u\":1,\"need_i\":1}",                                  /* need_s missing */
                "{\"need_u\":1,\"need_i\":1,\"need_s\":7}",
                "{\"need_u\":1,\"need_i\":1,\"need_s\":null}",
        };
        struct jrow_test x;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char body[160];
                /* An optional string before the required rows: nothing is
                 * written (nothing to free) when one is wrong. */
                snprintf(body, sizeof(body), "{\"s\":\"early\",%s", bad[i] + 1);
                CHECK_INT(JROW(body, &x, jrow_req), ==, HPW_E_PROTOCOL);
                CHECK(!x.s);
                CHECK(!x.need_s);
                CHECK_U64(x.need_u, ==, 0);
        }
        CHECK_INT(JROW("{\"need_u\":9007199254740992,\"need_i\":2147483647,\"need_s\":\"\"}", &x, jrow_req), ==,
                  HPW_OK);
        CHECK_U64(x.need_u, ==, 9007199254740992ull);
        CHECK_INT(x.need_i, ==, INT32_MAX);
        CHECK_STR(x.need_s, "");
        CHECK_STR(x.s, "");
        jrow_clear(&x);
        /* A missing parent object has no required member either. */
        memset(&x, 0, sizeof(x));
        CHECK_INT(hpw_jfields(NULL, &x, jrow_req, sizeof(jrow_req) / sizeof(jrow_req[0])), ==, HPW_E_PROTOCOL);
}

/* Problem bodies keep their extension members. */
TEST(json_problem_extensions)
{
        struct hpw_problem *p = NULL;
        CHECK_INT(hpw_json_problem(J("{\"type\":\"urn:hpwarm:problem:reserve-shortfall\",\"title\":\"Short\","
                                     "\"status\":409,\"detail\":\"got 3\",\"requested\":8,\"achieved\":3}"), &p),
                  ==, HPW_OK);
        CHECK_STR(p->slug, "reserve-shortfall");
        CHECK_U64(p->requested, ==, 8);
        CHECK_U64(p->achieved, ==, 3);
        hpw_problem_free(p);
        CHECK_INT(hpw_json_problem(J("{\"type\":\"urn:hpwarm:problem:insufficient-memory\",\"status\":409,"
                                     "\"memory_floor_bytes\":268435456,\"memory_free_bytes\":1073741824,"
                                     "\"max_count\":384}"), &p), ==, HPW_OK);
        CHECK_U64(p->memory_floor_bytes, ==, 268435456);
        CHECK_U64(p->max_count, ==, 384);
        CHECK_U64(p->requested, ==, 0);
        hpw_problem_free(p);
        CHECK_INT(hpw_json_problem(J("{\"type\":\"https://x/probs/out-of-cheese\"}"), &p), ==, HPW_OK);
        CHECK_STR(p->slug, "out-of-cheese");
        CHECK_STR(p->title, "");
        hpw_problem_free(p);
        CHECK_INT(hpw_json_problem(J("{}"), &p), ==, HPW_OK);
        CHECK_STR(p->slug, "");
        hpw_problem_free(p);
        CHECK_INT(hpw_json_problem(J("not json"), &p), ==, HPW_E_PROTOCOL);
}

TEST(json_health_needs_status)
{
        struct hpw_health *hl = NULL;
        CHECK_INT(hpw_json_health(J("{\"status\":\"ok\",\"version\":\"0.1.0\"}"), &hl), ==, HPW_OK);
        CHECK_STR(hl->status, "ok");
        CHECK_STR(hl->version, "0.1.0");
        hpw_health_free(hl);
        CHECK_INT(hpw_json_health(J("{\"version\":\"0.1.0\"}"), &hl), ==, HPW_E_PROTOCOL);
}

TEST(json_reserve_complete_by_default)
{
        struct hpw_reserve_result *r = NULL;
        CHECK_INT(hpw_json_reserve(J("{\"node\":0,\"page_size_bytes\":2097152,\"requested\":8,\"total\":5,"
                                     "\"free\":5,\"complete\":false}"), &r), ==, HPW_OK);
        CHECK(!r->complete);
        CHECK_U64(r->total, ==, 5);
        hpw_reserve_result_free(r);
        CHECK_INT(hpw_json_reserve(J("{\"node\":0,\"total\":5}"), &r), ==, HPW_OK);
        CHECK(r->complete);
        hpw_reserve_result_free(r);
        CHECK_INT(hpw_json_reserve(J("{\"node\":\"0\",\"total\":5}"), &r), ==, HPW_E_PROTOCOL);
}

/* Request bodies: only the members set, sizes exact. */
TEST(reserve_and_warm_request_bodies)
{
        char *s = hpw_json_reserve_body(12, true);
        CHECK_STR(s, "{\"count\":12,\"allow_partial\":true}");
        free(s);
        struct hpw_warm_request w = { .size = sizeof(w), .node = 1, .size_bytes = 64ull << 30, .page_size = 1ull << 30 };
        s = hpw_json_warm_body(&w);
        CHECK_STR(s, "{\"node\":1,\"size_bytes\":68719476736,\"page_size\":\"1G\",\"reserve\":false}");
        free(s);
        w = (struct hpw_warm_request){ .size = sizeof(w), .node = 0, .size_bytes = 1 << 21, .threads = 3, .ttl_seconds = 600,
                                       .reserve = true };
        s = hpw_json_warm_body(&w);
        CHECK_STR(s, "{\"node\":0,\"size_bytes\":2097152,\"threads\":3,\"ttl_seconds\":600,\"reserve\":true}");
        free(s);
}

/* GET/PUT /v1/stock answers: the shape the API promises, then hostile ones. */
TEST(json_stock_decodes)
{
        struct hpw_stock *st = NULL;

        CHECK_INT(hpw_json_stock(J("{\"targets\":[{\"node\":1,\"page_size_bytes\":2097152,\"size_bytes\":4294967296,"
                                   "\"count\":2,\"ready\":1,\"warming\":1,\"recycling\":0,\"deficit\":1},"
                                   "{\"node\":0,\"page_size_bytes\":1073741824,\"size_bytes\":68719476736,"
                                   "\"count\":1,\"ready\":0,\"future\":{\"x\":1}}]}"), &st), ==, HPW_OK);
        CHECK_U64(st->n, ==, 2);
        CHECK_INT(st->targets[0]->node, ==, 1);
        CHECK_U64(st->targets[0]->page_size_bytes, ==, 2097152);
        CHECK_U64(st->targets[0]->size_bytes, ==, 4294967296ull);
        CHECK_U64(st->targets[0]->count, ==, 2);
        CHECK_U64(st->targets[0]->ready, ==, 1);
        CHECK_U64(st->targets[0]->warming, ==, 1);
        CHECK_U64(st->targets[0]->deficit, ==, 1);
        /* warming, recycling, deficit default to 0; unknown members ignored. */
        CHECK_U64(st->targets[1]->size_bytes, ==, 64ull << 30);
        CHECK_U64(st->targets[1]->warming + st->targets[1]->recycling + st->targets[1]->deficit, ==, 0);
        CHECK(strstr(st->json, "\"future\"") != NULL);
        hpw_stock_free(st);
        st = NULL;
        CHECK_INT(hpw_json_stock(J("{\"targets\":[]}"), &st), ==, HPW_OK);
        CHECK_U64(st->n, ==, 0);
        CHECK(st->targets == NULL);
        hpw_stock_free(st);
        hpw_stock_free(NULL);
}

/* Each of these is not a stock answer: HPW_E_PROTOCOL, nothing written. */
TEST(json_stock_refuses_hostile_answers)
{
        struct hpw_stock *st;
        static const char *const bad[] = {
                "",
                "not json",
                "{\"targets\":[",                                    /* cut short */
                "{\"targets\":[]} {\"targets\":[]}",                  /* trailing document */
                "[]",
                "{}",                                                /* no targets */
                "{\"targets\":{}}",
                "{\"targets\":null}",
                "{\"Targets\":[]}",                                   /* case matters */
                "{\"targets\":[1]}",
                "{\"targets\":[{}]}",
                /* each required member missing in turn */
                "{\"targets\":[{\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1,\"ready\":0}]}",
                "{\"targets\":[{\"node\":0,\"size_bytes\":2097152,\"count\":1,\"ready\":0}]}",
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"count\":1,\"ready\":0}]}",
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"ready\":0}]}",
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1}]}",
                /* wrong types and values */
                "{\"targets\":[{\"node\":\"0\",\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1,"
                "\"ready\":0}]}",
                "{\"targets\":[{\"node\":-1,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1,"
                "\"ready\":0}]}",
                "{\"targets\":[{\"node\":0.5,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1,"
                "\"ready\":0}]}",
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":0,\"size_bytes\":2097152,\"count\":1,\"ready\":0}]}",
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1,"
                "\"ready\":-3}]}",
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1,"
                "\"ready\":true}]}",
                /* huge counts: past what a double carries exactly, or not finite */
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1,"
                "\"ready\":18446744073709551616}]}",
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,"
                "\"count\":9007199254740993000,\"ready\":0}]}",
                "{\"targets\":[{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":1e400,\"count\":1,"
                "\"ready\":0}]}",
                "{\"targets\":[{\"node\":4294967296,\"page_size_bytes\":2097152,\"size_bytes\":2097152,"
                "\"count\":1,\"ready\":0}]}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                st = (struct hpw_stock *)&st;   /* a value that must survive */
                if (hpw_json_stock(bad[i], strlen(bad[i]), &st) != HPW_E_PROTOCOL)
                        fprintf(stderr, "stock body %zu accepted: %s\n", i, bad[i]);
                CHECK_INT(hpw_json_stock(bad[i], strlen(bad[i]), &st), ==, HPW_E_PROTOCOL);
                CHECK(st == (struct hpw_stock *)&st);
        }
}

/* More targets than any answer may carry. */
TEST(json_stock_caps_targets)
{
        struct hpw_stock *st = NULL;
        const char *item = "{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"count\":1,\"ready\":1},";
        size_t cap = 32 + (HPW_MAX_ITEMS + 1) * strlen(item);
        char *b = malloc(cap), *p;
        CHECK(b);
        p = b + sprintf(b, "{\"targets\":[");
        for (size_t i = 0; i <= HPW_MAX_ITEMS; i++)
                p += sprintf(p, "%s", item);
        p[-1] = ']';
        *p++ = '}';
        CHECK_INT(hpw_json_stock(b, (size_t)(p - b), &st), ==, HPW_E_PROTOCOL);
        free(b);
}

/* The request body: page sizes spelled as the API takes them, sizes exact. */
TEST(stock_request_body)
{
        struct hpw_stock_target t[] = {
                { .node = 0, .page_size_bytes = 2ull << 20, .size_bytes = 4ull << 30, .count = 2, .ready = 9 },
                { .node = 3, .page_size_bytes = 1ull << 30, .size_bytes = 1ull << 40, .count = 1 },
        };
        const struct hpw_stock_target *tp[] = { &t[0], &t[1] };
        char *s = hpw_json_stock_body(tp, 2);
        CHECK_STR(s, "{\"targets\":[{\"node\":0,\"page_size\":\"2M\",\"size_bytes\":4294967296,\"count\":2},"
                     "{\"node\":3,\"page_size\":\"1G\",\"size_bytes\":1099511627776,\"count\":1}]}");
        free(s);
        s = hpw_json_stock_body(tp, 0);
        CHECK_STR(s, "{\"targets\":[]}");
        free(s);
}

/* A pool says whether it came from stock; "" from a daemon without. */
TEST(json_pool_from_stock)
{
        struct hpw_pool *pl = NULL;
        CHECK_INT(hpw_json_pool(J("{\"name\":\"a\",\"state\":\"ready\",\"from_stock\":\"full\"}"), &pl), ==, HPW_OK);
        CHECK_STR(pl->from_stock, "full");
        hpw_pool_free(pl);
        CHECK_INT(hpw_json_pool(J("{\"name\":\"a\",\"state\":\"ready\"}"), &pl), ==, HPW_OK);
        CHECK_STR(pl->from_stock, "");
        hpw_pool_free(pl);
        CHECK_INT(hpw_json_pool(J("{\"name\":\"a\",\"state\":\"ready\",\"from_stock\":7}"), &pl), ==, HPW_OK);
        CHECK_STR(pl->from_stock, "");
        hpw_pool_free(pl);
}

static void write_file(const char *path, const char *data, size_t len)
{
        FILE *f = fopen(path, "we");

        CHECK(f);
        CHECK_U64(fwrite(data, 1, len, f), ==, len);
        CHECK_INT(fclose(f), ==, 0);
}

/* test_defer's cleanup: remove the token file and its directory. */
static void remove_token_dir(const void *dir, size_t len)
{
        char path[64];

        (void)len;
        snprintf(path, sizeof(path), "%s/token", (const char *)dir);
        unlink(path);
        rmdir(dir);
}

/* Token files in hpwarmd's format; sizes at and past the limit. */
TEST(token_files_in_hpwarmds_format)
{
        struct hpw *h = NULL;
        char dir[] = "/tmp/hpw-token-XXXXXX", path[64];
        char *big = malloc((64u << 10) + 2);
        static const struct { const char *data; enum hpw_error want; const char *why; } t[] = {
                { "s3cret\n", HPW_OK, NULL },
                { "  s3cret  \r\n", HPW_OK, NULL },
                { "# admin token for host a\n\n   \n\ts3cret\nsecond-token\n", HPW_OK, NULL },
                { "# only a comment\n\n", HPW_E_IO, "no token" },
                { "", HPW_E_IO, "no token" },
                { "two words\n", HPW_E_IO, "one word" },
                { "caf\xc3\xa9\n", HPW_E_IO, "one word" },
        };

        CHECK_INT(hpw_new(NULL, &h), ==, HPW_OK);
        CHECK(big);
        CHECK(mkdtemp(dir));
        test_defer(remove_token_dir, dir, sizeof(dir));
        snprintf(path, sizeof(path), "%s/token", dir);
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                write_file(path, t[i].data, strlen(t[i].data));
                CHECK_INT(hpw_set_token_file(h, path), ==, t[i].want);
                if (t[i].why)
                        CHECK(strstr(hpw_last_message(h), t[i].why) != NULL);
                else
                        CHECK_STR(hpw_last_message(h), "");
        }
        /* A 4095-byte file (the old buffer's edge), exactly 64 KiB, one more. */
        static const size_t sizes[] = { 4095, 4096, 64u << 10, (64u << 10) + 1 };
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
                memset(big, 'a', sizes[i]);
                big[sizes[i] - 1] = '\n';
                write_file(path, big, sizes[i]);
                CHECK_INT(hpw_set_token_file(h, path), ==, sizes[i] <= (64u << 10) ? HPW_OK : HPW_E_IO);
        }
        CHECK(strstr(hpw_last_message(h), "too big") != NULL);
        write_file(path, "ab\0cd\n", 6);
        CHECK_INT(hpw_set_token_file(h, path), ==, HPW_E_IO);
        unlink(path);
        rmdir(dir);
        free(big);
        /* NULL leaves the handle as a fresh one. */
        CHECK_INT(hpw_set_token_file(h, NULL), ==, HPW_OK);
        hpw_free(h);
}

/* A handle refuses a bad URL, a missing token file, a token that would
 * split a header and retry settings that make no sense. */
TEST(handle_refuses_bad_settings)
{
        struct hpw *h = NULL;

        CHECK_INT(hpw_new("ftp://nope", &h), ==, HPW_E_INVALID);
        CHECK(h == NULL);
        CHECK_INT(hpw_new(NULL, &h), ==, HPW_OK);
        CHECK_INT(hpw_set_token_file(h, "/nonexistent/token"), ==, HPW_E_IO);
        CHECK(strstr(hpw_last_message(h), "/nonexistent/token") != NULL);
        CHECK_INT(hpw_set_token_file(h, NULL), ==, HPW_OK);
        CHECK_INT(hpw_set_token(h, "a\r\nX-Evil: 1"), ==, HPW_E_INVALID);
        CHECK_INT(hpw_set_token(h, "abc"), ==, HPW_OK);
        CHECK_INT(hpw_set_retry(h, 0, 100, 1000), ==, HPW_E_INVALID);
        CHECK_INT(hpw_set_retry(h, 3, 100, 10), ==, HPW_E_INVALID);
        /* The refusal's message names the call and the rule, nothing else. */
        CHECK_STR(hpw_last_message(h), "hpw_set_retry: cap_ms >= base_ms does not hold");
        CHECK(hpw_last_problem(h) == NULL);
        hpw_free(h);
}

/* Names and arguments are checked before anything goes on the wire. */
TEST(calls_check_arguments_before_the_wire)
{
        struct hpw *h = NULL;
        struct hpw_pool *p = NULL;

        CHECK_INT(hpw_new(NULL, &h), ==, HPW_OK);
        CHECK_INT(hpw_pool(h, "../etc", &p), ==, HPW_E_INVALID);
        CHECK_INT(hpw_release(h, "a b"), ==, HPW_E_INVALID);
        struct hpw_warm_request w = { .size = sizeof(w), .node = 0, .size_bytes = 0 };
        CHECK_INT(hpw_warm(h, "x", &w, &p, NULL), ==, HPW_E_INVALID);
        /* A claim's pid must name a process: no 0, no negative (the CLI
         * test checks the body a valid one sends). */
        CHECK_INT(hpw_claim_pid(h, "x", 0, &p), ==, HPW_E_INVALID);
        CHECK_INT(hpw_claim_pid(h, "x", -1, &p), ==, HPW_E_INVALID);
        CHECK_INT(hpw_claim_pid(h, "a b", 1, &p), ==, HPW_E_INVALID);
        CHECK(p == NULL);
        hpw_free(h);
}

/* Stock targets are checked before anything goes on the wire (no answer
 * recorded; below, the same call that does send is HPW_E_UNREACHABLE, not
 * HPW_E_INVALID). */
TEST(stock_targets_checked_before_the_wire)
{
        struct hpw *h = NULL;

        CHECK_INT(hpw_new(NULL, &h), ==, HPW_OK);
        struct hpw_stock *st = NULL;
        struct hpw_stock_target tg[HPW_STOCK_MAX_TARGETS + 1];
        for (size_t i = 0; i <= HPW_STOCK_MAX_TARGETS; i++)
                tg[i] = (struct hpw_stock_target){ .size = sizeof(tg[i]), .node = 0, .page_size_bytes = 2ull << 20,
                                                   .size_bytes = (i + 1) * (2ull << 20), .count = 1 };
        const struct hpw_stock_target *tgp[HPW_STOCK_MAX_TARGETS + 1];
        for (size_t i = 0; i <= HPW_STOCK_MAX_TARGETS; i++)
                tgp[i] = &tg[i];
        CHECK_INT(hpw_stock_set(h, tgp, HPW_STOCK_MAX_TARGETS + 1, &st), ==, HPW_E_INVALID);
        CHECK_INT(hpw_stock_set(h, NULL, 1, &st), ==, HPW_E_NULL_ARGUMENT);
        CHECK_INT(hpw_stock_set(h, tgp, 1, NULL), ==, HPW_E_NULL_ARGUMENT);
        CHECK_INT(hpw_stock_set(NULL, tgp, 1, &st), ==, HPW_E_NULL_HANDLE);
        CHECK_INT(hpw_stock_get(h, NULL), ==, HPW_E_NULL_ARGUMENT);
        tg[1].node = -1;
        CHECK_INT(hpw_stock_set(h, tgp, 2, &st), ==, HPW_E_INVALID);
        tg[1].node = 0;
        tg[1].count = 0;
        CHECK_INT(hpw_stock_set(h, tgp, 2, &st), ==, HPW_E_INVALID);
        tg[1].count = 1;
        tg[1].size_bytes = 0;
        CHECK_INT(hpw_stock_set(h, tgp, 2, &st), ==, HPW_E_INVALID);
        tg[1].size_bytes = 4ull << 20;
        tg[1].page_size_bytes = 0;
        CHECK_INT(hpw_stock_set(h, tgp, 2, &st), ==, HPW_E_INVALID);
        CHECK(st == NULL);
        CHECK_INT(hpw_last_status(h), ==, 0);
        hpw_free(h);
        /* The same handle kind, now really asked: unreachable, not invalid. */
        CHECK_INT(hpw_new("unix:///nonexistent/hpwarm-test.sock", &h), ==, HPW_OK);
        CHECK_INT(hpw_set_retry(h, 1, 1, 1), ==, HPW_OK);
        CHECK_INT(hpw_stock_set(h, tgp, 1, &st), ==, HPW_E_UNREACHABLE);
        CHECK_INT(hpw_stock_get(h, &st), ==, HPW_E_UNREACHABLE);
        CHECK(st == NULL);
        hpw_free(h);
}

TEST(destructors_accept_null)
{
        hpw_free(NULL);
        hpw_pool_free(NULL);
        hpw_node_list_free(NULL);
        hpw_fleet_free(NULL);
}

TEST_MAIN()
