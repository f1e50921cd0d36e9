/* Unit tests for metrics.c: exact exposition text, escaping, one header per
 * family, name checks, and the counter store under concurrent increments. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "metrics.h"

TEST(exact_output)
{
        struct prom *p = prom_new();
        const struct prom_label l0[] = { { "numa_node", "0" }, { "page_size_bytes", "2097152" } };
        const struct prom_label l1[] = { { "numa_node", "1" }, { "page_size_bytes", "2097152" } };
        char *text;

        CHECK(p);
        prom_header(p, "hpwarmd_hugepages_free_bytes", "Free hugepage bytes per node.", "gauge");
        prom_sample_u64(p, "hpwarmd_hugepages_free_bytes", l0, 2, UINT64_C(134217728));
        prom_header(p, "hpwarmd_hugepages_free_bytes", "ignored", "gauge");
        prom_sample_u64(p, "hpwarmd_hugepages_free_bytes", l1, 2, UINT64_MAX);
        prom_header(p, "hpwarmd_warm_rate", "Help with \\ and\nnewline.", "gauge");
        prom_sample_double(p, "hpwarmd_warm_rate", NULL, 0, 0.1);
        prom_sample_double(p, "hpwarmd_warm_rate", NULL, 0, 1e21);
        prom_sample_double(p, "hpwarmd_warm_rate", NULL, 0, 1.0 / 3.0);
        prom_sample_double(p, "hpwarmd_warm_rate", NULL, 0, INFINITY);
        prom_sample_double(p, "hpwarmd_warm_rate", NULL, 0, -INFINITY);
        prom_sample_double(p, "hpwarmd_warm_rate", NULL, 0, NAN);
        text = prom_finish(p);
        CHECK_STR(text,
                  "# HELP hpwarmd_hugepages_free_bytes Free hugepage bytes per node.\n"
                  "# TYPE hpwarmd_hugepages_free_bytes gauge\n"
                  "hpwarmd_hugepages_free_bytes{numa_node=\"0\",page_size_bytes=\"2097152\"} "
                  "134217728\n"
                  "hpwarmd_hugepages_free_bytes{numa_node=\"1\",page_size_bytes=\"2097152\"} "
                  "18446744073709551615\n"
                  "# HELP hpwarmd_warm_rate Help with \\\\ and\\nnewline.\n"
                  "# TYPE hpwarmd_warm_rate gauge\n"
                  "hpwarmd_warm_rate 0.1\n"
                  "hpwarmd_warm_rate 1e+21\n"
                  "hpwarmd_warm_rate 0.33333333333333331\n"
                  "hpwarmd_warm_rate +Inf\n"
                  "hpwarmd_warm_rate -Inf\n"
                  "hpwarmd_warm_rate NaN\n");
        free(text);

        /* An empty scrape is an empty string, not an error. */
        text = prom_finish(prom_new());
        CHECK_STR(text, "");
        free(text);
        CHECK(prom_finish(NULL) == NULL);
        prom_free(NULL);
}

TEST(escaping)
{
        struct prom *p = prom_new();
        const struct prom_label l[] = { { "path", "a\\b\"c\nd" }, { "empty", "" } };
        char *text;

        prom_sample_u64(p, "x", l, 2, 1);
        text = prom_finish(p);
        CHECK_STR(text, "x{path=\"a\\\\b\\\"c\\nd\",empty=\"\"} 1\n");
        free(text);
}

TEST(invalid_names)
{
        const char *bad_metrics[] = { "", "1abc", "a-b", "a b", "a{b}" };
        const char *bad_labels[] = { "", "__reserved", "a:b", "9", "a-b" };
        const struct prom_label nullv[] = { { "k", NULL } };

        for (size_t i = 0; i < sizeof(bad_metrics) / sizeof(bad_metrics[0]); i++) {
                struct prom *p = prom_new();
                CHECK(!prom_metric_name_valid(bad_metrics[i]));
                prom_sample_u64(p, bad_metrics[i], NULL, 0, 1);
                CHECK(prom_finish(p) == NULL);
        }
        for (size_t i = 0; i < sizeof(bad_labels) / sizeof(bad_labels[0]); i++) {
                struct prom *p = prom_new();
                const struct prom_label l[] = { { bad_labels[i], "v" } };
                CHECK(!prom_label_name_valid(bad_labels[i]));
                prom_sample_u64(p, "ok", l, 1, 1);
                CHECK(prom_finish(p) == NULL);
        }
        CHECK(prom_metric_name_valid("ns:sub_total"));
        CHECK(prom_label_name_valid("_x9"));

        struct prom *p = prom_new();
        prom_sample_u64(p, "ok", nullv, 1, 1);
        CHECK(prom_finish(p) == NULL);
        p = prom_new();
        prom_header(p, "bad name", "h", "gauge");
        CHECK(prom_finish(p) == NULL);
}

TEST(counter_vec_basic)
{
        const char *names[] = { "route", "method", "code" };
        const char *bad[] = { "ok", "__no" };
        struct counter_vec *cv = NULL;
        struct prom *p;
        char *text;

        CHECK_INT(counter_vec_new("bad-name", "h", names, 3, &cv), ==, -EINVAL);
        CHECK_INT(counter_vec_new("x_total", "h", bad, 2, &cv), ==, -EINVAL);
        CHECK_INT(counter_vec_new("x_total", "h", names, COUNTER_VEC_MAX_LABELS + 1, &cv), ==,
                  -EINVAL);
        CHECK(cv == NULL);

        CHECK_INT(counter_vec_new("hpwarmd_http_requests_total", "HTTP requests by route.", names,
                                  3, &cv),
                  ==, 0);
        CHECK_INT(counter_vec_inc(cv, "/v1/nodes/{id}", "GET", "200"), ==, 0);
        CHECK_INT(counter_vec_inc(cv, "/v1/health", "GET", "200"), ==, 0);
        CHECK_INT(counter_vec_inc(cv, "/v1/nodes/{id}", "GET", "200"), ==, 0);
        CHECK_INT(counter_vec_inc(cv, "/v1/nodes/{id}", "GET", "404"), ==, 0);
        CHECK_INT(counter_vec_add(cv, (const char *const[]){ "/v1/health", "GET", "200" }, 3, 5),
                  ==, 0);
        /* Wrong arity or NULL values are refused. */
        CHECK_INT(counter_vec_inc(cv, "/v1/health", "GET"), ==, -EINVAL);
        CHECK_INT(counter_vec_inc(cv, "/v1/health", "GET", NULL), ==, -EINVAL);
        CHECK_INT(counter_vec_add(NULL, NULL, 0, 1), ==, -EINVAL);

        CHECK_U64(counter_vec_get(cv, (const char *const[]){ "/v1/nodes/{id}", "GET", "200" }, 3),
                  ==, 2);
        CHECK_U64(counter_vec_get(cv, (const char *const[]){ "/v1/nodes", "GET", "200" }, 3), ==,
                  0);

        p = prom_new();
        counter_vec_emit(cv, p);
        text = prom_finish(p);
        CHECK_STR(text, "# HELP hpwarmd_http_requests_total HTTP requests by route.\n"
                        "# TYPE hpwarmd_http_requests_total counter\n"
                        "hpwarmd_http_requests_total{route=\"/v1/health\",method=\"GET\","
                        "code=\"200\"} 6\n"
                        "hpwarmd_http_requests_total{route=\"/v1/nodes/{id}\",method=\"GET\","
                        "code=\"200\"} 2\n"
                        "hpwarmd_http_requests_total{route=\"/v1/nodes/{id}\",method=\"GET\","
                        "code=\"404\"} 1\n");
        free(text);
        counter_vec_free(cv);
        counter_vec_free(NULL);
}

TEST(counter_vec_cap)
{
        const char *names[] = { "n" };
        struct counter_vec *cv = NULL;
        char v[16];

        CHECK_INT(counter_vec_new("cap_total", NULL, names, 1, &cv), ==, 0);
        for (int i = 0; i < COUNTER_VEC_MAX_SERIES; i++) {
                snprintf(v, sizeof(v), "%d", i);
                CHECK_INT(counter_vec_inc(cv, v), ==, 0);
        }
        CHECK_INT(counter_vec_inc(cv, "new"), ==, -E2BIG);
        CHECK_INT(counter_vec_inc(cv, "7"), ==, 0); /* existing series still count */
        CHECK_U64(counter_vec_get(cv, (const char *const[]){ "7" }, 1), ==, 2);
        counter_vec_free(cv);

        /* No labels at all. */
        CHECK_INT(counter_vec_new("plain_total", "h", NULL, 0, &cv), ==, 0);
        CHECK_INT(counter_vec_add(cv, (const char *const[]){ NULL }, 0, 3), ==, 0);
        struct prom *p = prom_new();
        counter_vec_emit(cv, p);
        char *text = prom_finish(p);
        CHECK_STR(text, "# HELP plain_total h\n# TYPE plain_total counter\nplain_total 3\n");
        free(text);
        counter_vec_free(cv);
}

#define THREADS 4
#define PER_THREAD 20000

static void *hammer(void *arg)
{
        struct counter_vec *cv = arg;
        const char *codes[] = { "200", "404", "409" };

        for (int i = 0; i < PER_THREAD; i++)
                if (counter_vec_inc(cv, "/v1/pools/{name}", "PUT", codes[i % 3]) != 0)
                        abort();
        return NULL;
}

TEST(counter_vec_threads)
{
        const char *names[] = { "route", "method", "code" };
        struct counter_vec *cv = NULL;
        pthread_t t[THREADS];
        uint64_t total = 0;

        CHECK_INT(counter_vec_new("req_total", "h", names, 3, &cv), ==, 0);
        for (int i = 0; i < THREADS; i++)
                CHECK_INT(pthread_create(&t[i], NULL, hammer, cv), ==, 0);
        for (int i = 0; i < THREADS; i++)
                CHECK_INT(pthread_join(t[i], NULL), ==, 0);
        for (int c = 0; c < 3; c++) {
                const char *codes[] = { "200", "404", "409" };
                uint64_t v = counter_vec_get(
                        cv, (const char *const[]){ "/v1/pools/{name}", "PUT", codes[c] }, 3);
                CHECK_U64(v, >=, THREADS * (PER_THREAD / 3));
                total += v;
        }
        CHECK_U64(total, ==, THREADS * PER_THREAD);
        counter_vec_free(cv);
}

/* Bucket boundaries are inclusive upper bounds ("le"); beyond the last one
 * is +Inf; NaN never lands in a finite bucket. */
TEST(histogram_bucket)
{
        const double b[] = { 0.001, 0.01, 1 };
        CHECK_U64(histogram_bucket(b, 3, 0), ==, 0);
        CHECK_U64(histogram_bucket(b, 3, 0.001), ==, 0);
        CHECK_U64(histogram_bucket(b, 3, 0.0011), ==, 1);
        CHECK_U64(histogram_bucket(b, 3, 1), ==, 2);
        CHECK_U64(histogram_bucket(b, 3, 1.5), ==, 3);
        CHECK_U64(histogram_bucket(b, 3, INFINITY), ==, 3);
        CHECK_U64(histogram_bucket(b, 3, NAN), ==, 3);
}

/* The duration layout covers 1 ms to 10 min, strictly increasing. */
TEST(duration_bounds)
{
        CHECK(METRICS_DURATION_BOUNDS[0] == 0.001);
        CHECK(METRICS_DURATION_BOUNDS[METRICS_DURATION_BUCKETS - 1] == 600);
        for (size_t i = 1; i < METRICS_DURATION_BUCKETS; i++)
                if (!(METRICS_DURATION_BOUNDS[i] > METRICS_DURATION_BOUNDS[i - 1]))
                        CHECK_FAIL_("bound %zu (%g) not above bound %zu (%g)", i, METRICS_DURATION_BOUNDS[i], i - 1,
                                    METRICS_DURATION_BOUNDS[i - 1]);
}

/* prom_histogram: cumulative buckets, +Inf equal to _count, le last. */
TEST(histogram_exact)
{
        const double b[] = { 0.005, 0.5 };
        const uint64_t counts[] = { 2, 0, 1 };
        struct prom *p = prom_new();
        char *text;

        CHECK(p);
        prom_header(p, "hpwarmd_warm_duration_seconds", "Warm time.", "histogram");
        prom_histogram(p, "hpwarmd_warm_duration_seconds", NULL, 0, b, 2, counts, 7.25);
        text = prom_finish(p);
        CHECK_STR(text, "# HELP hpwarmd_warm_duration_seconds Warm time.\n"
                        "# TYPE hpwarmd_warm_duration_seconds histogram\n"
                        "hpwarmd_warm_duration_seconds_bucket{le=\"0.005\"} 2\n"
                        "hpwarmd_warm_duration_seconds_bucket{le=\"0.5\"} 2\n"
                        "hpwarmd_warm_duration_seconds_bucket{le=\"+Inf\"} 3\n"
                        "hpwarmd_warm_duration_seconds_sum 7.25\n"
                        "hpwarmd_warm_duration_seconds_count 3\n");
        free(text);
}

/* metrics_observe_request: one count per request by {route, method, code},
 * one latency sample by {route, method}; odd methods fold into "other". */
TEST(http_metrics)
{
        struct http_metrics m;
        uint64_t counts[METRICS_DURATION_BUCKETS + 1];
        double sum;

        CHECK_INT(http_metrics_init(&m), ==, 0);
        metrics_observe_request(&m, "/v1/pools/{name}", "GET", 200, 0.0004);
        metrics_observe_request(&m, "/v1/pools/{name}", "GET", 200, 42);
        metrics_observe_request(&m, "/v1/pools/{name}", "GET", 404, 0.002);
        metrics_observe_request(&m, NULL, "BREW", 405, 0.003);
        CHECK_U64(counter_vec_get(m.requests, (const char *const[]){ "/v1/pools/{name}", "GET", "200" }, 3), ==, 2);
        CHECK_U64(counter_vec_get(m.requests, (const char *const[]){ "/v1/pools/{name}", "GET", "404" }, 3), ==, 1);
        CHECK_U64(counter_vec_get(m.requests, (const char *const[]){ "unmatched", "other", "405" }, 3), ==, 1);
        histogram_vec_get(m.duration, (const char *const[]){ "/v1/pools/{name}", "GET" }, 2, counts, &sum);
        CHECK_U64(counts[0], ==, 1);  /* 0.4 ms <= 1 ms */
        CHECK_U64(counts[1], ==, 1);  /* 2 ms <= 2.5 ms */
        CHECK_U64(counts[13], ==, 0); /* 30 s */
        CHECK_U64(counts[14], ==, 1); /* 42 s <= 60 s */
        CHECK(fabs(sum - 42.0024) < 1e-9);

        struct prom *p = prom_new();
        http_metrics_emit(&m, p);
        char *text = prom_finish(p);
        CHECK(text);
        CHECK(strstr(text, "# TYPE hpwarmd_http_request_duration_seconds histogram\n"));
        CHECK(strstr(text, "hpwarmd_http_request_duration_seconds_bucket{route=\"/v1/pools/{name}\","
                           "method=\"GET\",le=\"0.001\"} 1\n"));
        CHECK(strstr(text, "hpwarmd_http_request_duration_seconds_bucket{route=\"/v1/pools/{name}\","
                           "method=\"GET\",le=\"+Inf\"} 3\n"));
        CHECK(strstr(text, "hpwarmd_http_request_duration_seconds_count{route=\"unmatched\",method=\"other\"} 1\n"));
        CHECK(strstr(text, "# TYPE hpwarmd_http_requests_total counter\n"));
        free(text);
        http_metrics_done(&m);
}

/* Histograms refuse bounds that are not finite and strictly increasing,
 * and a label called "le". */
TEST(histogram_invalid)
{
        struct histogram_vec *hv = NULL;
        const char *const l[] = { "route" }, *const le[] = { "le" };
        CHECK_INT(histogram_vec_new("a_seconds", "", (const double[]){ 1, 1 }, 2, l, 1, &hv), ==, -EINVAL);
        CHECK_INT(histogram_vec_new("a_seconds", "", (const double[]){ 2, 1 }, 2, l, 1, &hv), ==, -EINVAL);
        CHECK_INT(histogram_vec_new("a_seconds", "", (const double[]){ 1, INFINITY }, 2, l, 1, &hv), ==, -EINVAL);
        CHECK_INT(histogram_vec_new("a_seconds", "", (const double[]){ 1 }, 0, l, 1, &hv), ==, -EINVAL);
        CHECK_INT(histogram_vec_new("a_seconds", "", (const double[]){ 1 }, 1, le, 1, &hv), ==, -EINVAL);
        CHECK(hv == NULL);
        CHECK_INT(histogram_vec_new("a_seconds", "", (const double[]){ 1 }, 1, l, 1, &hv), ==, 0);
        CHECK_INT(histogram_vec_observe(hv, (const char *const[]){ "x" }, 1, NAN), ==, -EINVAL);
        CHECK_INT(histogram_vec_observe(hv, (const char *const[]){ "x", "y" }, 2, 1), ==, -EINVAL);
        histogram_vec_free(hv);
}

TEST_MAIN()
