/* metrics: a tiny Prometheus text exposition (format 0.0.4) builder and a
 * thread-safe labelled counter store.
 *
 * struct prom builds one scrape: the caller emits each metric family as a
 * group, prom_header() first ("# HELP" and "# TYPE", written once per family
 * name however often it is called), then its samples.  Metric and label names
 * are checked against the Prometheus rules; label values and help text are
 * escaped.  Any error (allocation, invalid name) is remembered and makes
 * prom_finish() return NULL, so a scrape needs one check at the end.
 *
 * struct counter_vec is a counter family with fixed label names and a small
 * sorted table of label values -> count, guarded by a mutex; the HTTP layer
 * counts requests by {route, method, code} in one.  Its cardinality is capped
 * (COUNTER_VEC_MAX_SERIES): callers must feed it bounded label values, such as
 * route templates rather than raw paths.
 *
 * Histograms (Prometheus type "histogram": cumulative _bucket{le=...}, _sum,
 * _count) aggregate across a fleet where a summary cannot.  prom_histogram()
 * writes one series from per-bucket counts a caller keeps itself;
 * struct histogram_vec is the labelled, thread-safe store (the same table as
 * counter_vec, each series with its buckets).  Durations use one bucket
 * layout, METRICS_DURATION_BOUNDS: 1 ms to 10 min, roughly 1-2.5-5 per
 * decade up to 10 s, then 30 s, 1, 2, 5 and 10 min: a GET takes well under
 * 1 ms, a long-poll up to 300 s, a warm from milliseconds (a small pool) to
 * minutes (hundreds of GiB, or 1 GiB pages that compact memory first). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct prom_label {
        const char *key;
        const char *value;
};

struct prom;

/* NULL on allocation failure.  Caller ends with prom_finish or prom_free. */
struct prom *prom_new(void);
void prom_free(struct prom *p); /* accepts NULL */

/* TYPE is "counter", "gauge", "untyped", ...  No-op after the first call for
 * NAME. */
void prom_header(struct prom *p, const char *name, const char *help, const char *type);
/* One sample line: NAME{k="v",...} VALUE.  N_LABELS may be 0 (LABELS NULL). */
void prom_sample_u64(struct prom *p, const char *name, const struct prom_label *labels,
                     size_t n_labels, uint64_t v);
void prom_sample_double(struct prom *p, const char *name, const struct prom_label *labels,
                        size_t n_labels, double v);
/* Free P and return the text (caller frees), or NULL if anything failed. */
char *prom_finish(struct prom *p);

/* Names of metrics ([a-zA-Z_:][a-zA-Z0-9_:]*) and labels ([a-zA-Z_][a-zA-Z0-9_]*,
 * not starting with "__"). */
bool prom_metric_name_valid(const char *name);
bool prom_label_name_valid(const char *name);

#define COUNTER_VEC_MAX_LABELS 4
#define COUNTER_VEC_MAX_SERIES 1024

struct counter_vec;

/* NAME should end in "_total".  LABEL_NAMES (N_LABELS of them, at most
 * COUNTER_VEC_MAX_LABELS) are copied.  -EINVAL on invalid names. */
int counter_vec_new(const char *name, const char *help, const char *const *label_names,
                    size_t n_labels, struct counter_vec **ret);
void counter_vec_free(struct counter_vec *cv); /* accepts NULL */

/* Add DELTA to the series with these label VALUES (N_VALUES must equal the
 * number of label names).  -EINVAL on a count mismatch or NULL value, -E2BIG
 * when the series cap is reached, -ENOMEM.  Safe from any thread. */
int counter_vec_add(struct counter_vec *cv, const char *const *values, size_t n_values,
                    uint64_t delta);
/* counter_vec_inc(cv, "a", "b") adds 1 to series {a, b}. */
#define counter_vec_inc(cv, ...)                                                  \
        counter_vec_add((cv), (const char *const[]){__VA_ARGS__},                 \
                        sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *), 1)
/* Current value of one series, 0 if it was never counted. */
uint64_t counter_vec_get(struct counter_vec *cv, const char *const *values, size_t n_values);
/* Emit the family (header and every series, sorted by label values) into P. */
void counter_vec_emit(struct counter_vec *cv, struct prom *p);

/* ---- histograms ---- */

#define METRICS_DURATION_BUCKETS 18
extern const double METRICS_DURATION_BOUNDS[METRICS_DURATION_BUCKETS];
#define HISTOGRAM_MAX_BOUNDS 32

/* Index of the bucket V falls in: the first I with V <= BOUNDS[I], or
 * N_BOUNDS (the +Inf bucket). */
size_t histogram_bucket(const double *bounds, size_t n_bounds, double v);

/* Emit one histogram series NAME_bucket{LABELS...,le=B} (cumulative),
 * NAME_sum and NAME_count.  COUNTS has N_BOUNDS + 1 per-bucket (not
 * cumulative) counts, the last one for +Inf.  The caller gives the family's
 * header (type "histogram") once. */
void prom_histogram(struct prom *p, const char *name, const struct prom_label *labels, size_t n_labels,
                    const double *bounds, size_t n_bounds, const uint64_t *counts, double sum);

struct histogram_vec;

/* BOUNDS: N_BOUNDS (1..HISTOGRAM_MAX_BOUNDS) finite upper bounds, strictly
 * increasing, copied.  Label names as for counter_vec ("le" is reserved).
 * -EINVAL on invalid names or bounds. */
int histogram_vec_new(const char *name, const char *help, const double *bounds, size_t n_bounds,
                      const char *const *label_names, size_t n_labels, struct histogram_vec **ret);
void histogram_vec_free(struct histogram_vec *hv); /* accepts NULL */
/* Count V in the series with these label VALUES.  Errors as counter_vec_add. */
int histogram_vec_observe(struct histogram_vec *hv, const char *const *values, size_t n_values, double v);
/* Copy one series: N_BOUNDS + 1 per-bucket counts to RET_COUNTS (zeros if
 * never observed) and the sum to RET_SUM. */
void histogram_vec_get(struct histogram_vec *hv, const char *const *values, size_t n_values,
                       uint64_t *ret_counts, double *ret_sum);
/* Emit the family (header, every series sorted by label values) into P. */
void histogram_vec_emit(struct histogram_vec *hv, struct prom *p);

/* The HTTP layer's per-request signals: hpwarmd_http_requests_total{route,
 * method,code} and hpwarmd_http_request_duration_seconds{route,method}.
 * ROUTE is the route template (NULL: "unmatched"); methods other than the
 * usual seven count as "other", so clients cannot grow the tables. */
struct http_metrics {
        struct counter_vec *requests;
        struct histogram_vec *duration;
};
int http_metrics_init(struct http_metrics *m);
void http_metrics_done(struct http_metrics *m);
void metrics_observe_request(struct http_metrics *m, const char *route, const char *method, int status,
                             double seconds);
void http_metrics_emit(struct http_metrics *m, struct prom *p);
