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
 * route templates rather than raw paths. */
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
