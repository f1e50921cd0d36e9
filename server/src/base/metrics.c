/* metrics: Prometheus text exposition and labelled counters (see metrics.h).
 *
 * The text builder is a growable buffer with a sticky error flag; family
 * names already given a header are kept in a small list so repeated
 * prom_header calls are harmless.  A scrape emits a few dozen families, so a
 * linear search is enough.
 *
 * The counter store keeps its series sorted by label values: lookups are a
 * binary search under the mutex, and emission order is stable, which makes
 * scrapes diffable and tests exact. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "util.h"

struct prom {
        char *buf;
        size_t len, cap;
        bool failed;
        char **families; /* names given a header */
        size_t n_families, cap_families;
};

struct prom *prom_new(void)
{
        return calloc(1, sizeof(struct prom));
}

void prom_free(struct prom *p)
{
        if (!p)
                return;
        for (size_t i = 0; i < p->n_families; i++)
                free(p->families[i]);
        free(p->families);
        free(p->buf);
        free(p);
}

static bool reserve(struct prom *p, size_t more)
{
        size_t need, cap;
        char *b;

        if (p->failed)
                return false;
        if (more > SIZE_MAX / 2 - p->len) {
                p->failed = true;
                return false;
        }
        need = p->len + more + 1;
        if (need <= p->cap)
                return true;
        cap = p->cap ? p->cap : 1024;
        while (cap < need)
                cap *= 2;
        b = realloc(p->buf, cap);
        if (!b) {
                p->failed = true;
                return false;
        }
        p->buf = b;
        p->cap = cap;
        return true;
}

static void put(struct prom *p, const char *s, size_t n)
{
        if (!reserve(p, n))
                return;
        memcpy(p->buf + p->len, s, n);
        p->len += n;
        p->buf[p->len] = '\0';
}

static void puts_(struct prom *p, const char *s)
{
        put(p, s, strlen(s));
}

/* Escape backslash and newline; also the double quote inside label values. */
static void put_escaped(struct prom *p, const char *s, bool quote)
{
        for (; *s; s++) {
                if (*s == '\\')
                        put(p, "\\\\", 2);
                else if (*s == '\n')
                        put(p, "\\n", 2);
                else if (quote && *s == '"')
                        put(p, "\\\"", 2);
                else
                        put(p, s, 1);
        }
}

static bool name_char(char c, bool first, bool colon)
{
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
                return true;
        if (colon && c == ':')
                return true;
        return !first && c >= '0' && c <= '9';
}

bool prom_metric_name_valid(const char *name)
{
        if (!name || !*name)
                return false;
        for (size_t i = 0; name[i]; i++)
                if (!name_char(name[i], i == 0, true))
                        return false;
        return true;
}

bool prom_label_name_valid(const char *name)
{
        if (!name || !*name || strncmp(name, "__", 2) == 0)
                return false;
        for (size_t i = 0; name[i]; i++)
                if (!name_char(name[i], i == 0, false))
                        return false;
        return true;
}

static bool family_seen(struct prom *p, const char *name)
{
        for (size_t i = 0; i < p->n_families; i++)
                if (strcmp(p->families[i], name) == 0)
                        return true;
        return false;
}

static bool family_add(struct prom *p, const char *name)
{
        char *copy;

        if (p->n_families == p->cap_families) {
                size_t cap = p->cap_families ? p->cap_families * 2 : 16;
                char **f = realloc(p->families, cap * sizeof(*f));
                if (!f)
                        return false;
                p->families = f;
                p->cap_families = cap;
        }
        copy = strdup(name);
        if (!copy)
                return false;
        p->families[p->n_families++] = copy;
        return true;
}

void prom_header(struct prom *p, const char *name, const char *help, const char *type)
{
        if (!p || p->failed)
                return;
        if (!prom_metric_name_valid(name) || !type) {
                p->failed = true;
                return;
        }
        if (family_seen(p, name))
                return;
        if (!family_add(p, name)) {
                p->failed = true;
                return;
        }
        puts_(p, "# HELP ");
        puts_(p, name);
        puts_(p, " ");
        put_escaped(p, help ? help : "", false);
        puts_(p, "\n# TYPE ");
        puts_(p, name);
        puts_(p, " ");
        puts_(p, type);
        puts_(p, "\n");
}

static void put_series(struct prom *p, const char *name, const struct prom_label *labels,
                       size_t n_labels)
{
        if (!prom_metric_name_valid(name)) {
                p->failed = true;
                return;
        }
        puts_(p, name);
        if (n_labels == 0)
                return;
        puts_(p, "{");
        for (size_t i = 0; i < n_labels; i++) {
                if (!prom_label_name_valid(labels[i].key) || !labels[i].value) {
                        p->failed = true;
                        return;
                }
                if (i)
                        puts_(p, ",");
                puts_(p, labels[i].key);
                puts_(p, "=\"");
                put_escaped(p, labels[i].value, true);
                puts_(p, "\"");
        }
        puts_(p, "}");
}

/* One sample line: the series, a space, VALUE. */
static void put_sample(struct prom *p, const char *name, const struct prom_label *labels, size_t n_labels,
                       const char *value)
{
        if (!p || p->failed)
                return;
        put_series(p, name, labels, n_labels);
        puts_(p, " ");
        puts_(p, value);
        puts_(p, "\n");
}

void prom_sample_u64(struct prom *p, const char *name, const struct prom_label *labels,
                     size_t n_labels, uint64_t v)
{
        char num[24];

        snprintf(num, sizeof(num), "%" PRIu64, v);
        put_sample(p, name, labels, n_labels, num);
}

/* Shortest of %.15g / %.17g that reads back as V; Prometheus spells the
 * special values +Inf, -Inf and NaN. */
static void format_double(char *buf, size_t size, double v)
{
        if (isnan(v)) {
                snprintf(buf, size, "NaN");
                return;
        }
        if (isinf(v)) {
                snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
                return;
        }
        snprintf(buf, size, "%.15g", v);
        if (strtod(buf, NULL) != v)
                snprintf(buf, size, "%.17g", v);
}

void prom_sample_double(struct prom *p, const char *name, const struct prom_label *labels,
                        size_t n_labels, double v)
{
        char num[40];

        format_double(num, sizeof(num), v);
        put_sample(p, name, labels, n_labels, num);
}

char *prom_finish(struct prom *p)
{
        char *text;

        if (!p)
                return NULL;
        if (!p->failed && !p->buf)
                put(p, "", 0); /* an empty scrape is "" */
        text = p->failed ? NULL : TAKE_PTR(p->buf);
        prom_free(p);
        return text;
}

/* ---- counter store ---- */

struct series {
        char *values[COUNTER_VEC_MAX_LABELS];
        uint64_t count;
        uint64_t *buckets; /* histograms: n_bounds + 1 per-bucket counts */
        double sum;        /* histograms */
};

struct counter_vec {
        pthread_mutex_t lock;
        char *name, *help;
        char *label_names[COUNTER_VEC_MAX_LABELS];
        size_t n_labels;
        struct series *series; /* sorted by values */
        size_t n_series, cap_series;
        double bounds[HISTOGRAM_MAX_BOUNDS]; /* histograms only */
        size_t n_bounds;                     /* 0: a counter */
};

void counter_vec_free(struct counter_vec *cv)
{
        if (!cv)
                return;
        for (size_t i = 0; i < cv->n_series; i++)
        {
                for (size_t k = 0; k < cv->n_labels; k++)
                        free(cv->series[i].values[k]);
                free(cv->series[i].buckets);
        }
        free(cv->series);
        for (size_t k = 0; k < cv->n_labels; k++)
                free(cv->label_names[k]);
        free(cv->name);
        free(cv->help);
        pthread_mutex_destroy(&cv->lock);
        free(cv);
}

int counter_vec_new(const char *name, const char *help, const char *const *label_names,
                    size_t n_labels, struct counter_vec **ret)
{
        struct counter_vec *cv;

        if (!prom_metric_name_valid(name) || n_labels > COUNTER_VEC_MAX_LABELS)
                return -EINVAL;
        for (size_t k = 0; k < n_labels; k++)
                if (!prom_label_name_valid(label_names[k]))
                        return -EINVAL;

        cv = calloc(1, sizeof(*cv));
        if (!cv)
                return -ENOMEM;
        pthread_mutex_init(&cv->lock, NULL);
        cv->name = strdup(name);
        cv->help = strdup(help ? help : "");
        cv->n_labels = n_labels;
        for (size_t k = 0; k < n_labels; k++)
                if (!(cv->label_names[k] = strdup(label_names[k]))) {
                        counter_vec_free(cv);
                        return -ENOMEM;
                }
        if (!cv->name || !cv->help) {
                counter_vec_free(cv);
                return -ENOMEM;
        }
        *ret = cv;
        return 0;
}

static int cmp_values(const struct counter_vec *cv, const char *const *a, char *const *b)
{
        for (size_t k = 0; k < cv->n_labels; k++) {
                int c = strcmp(a[k], b[k]);
                if (c)
                        return c;
        }
        return 0;
}

/* Binary search under the lock: index of the match, or where it would go. */
static size_t find(const struct counter_vec *cv, const char *const *values, bool *found)
{
        size_t lo = 0, hi = cv->n_series;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = cmp_values(cv, values, cv->series[mid].values);
                if (c == 0) {
                        *found = true;
                        return mid;
                }
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        *found = false;
        return lo;
}

static int insert_locked(struct counter_vec *cv, size_t at, const char *const *values)
{
        struct series s = {};

        if (cv->n_series >= COUNTER_VEC_MAX_SERIES)
                return -E2BIG;
        if (cv->n_series == cv->cap_series) {
                size_t cap = cv->cap_series ? cv->cap_series * 2 : 16;
                struct series *n = realloc(cv->series, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                cv->series = n;
                cv->cap_series = cap;
        }
        if (cv->n_bounds && !(s.buckets = calloc(cv->n_bounds + 1, sizeof(uint64_t))))
                return -ENOMEM;
        for (size_t k = 0; k < cv->n_labels; k++)
                if (!(s.values[k] = strdup(values[k]))) {
                        for (size_t j = 0; j < k; j++)
                                free(s.values[j]);
                        free(s.buckets);
                        return -ENOMEM;
                }
        memmove(&cv->series[at + 1], &cv->series[at],
                (cv->n_series - at) * sizeof(cv->series[0]));
        cv->series[at] = s;
        cv->n_series++;
        return 0;
}

static bool values_ok(const struct counter_vec *cv, const char *const *values, size_t n)
{
        if (n != cv->n_labels || (n && !values))
                return false;
        for (size_t k = 0; k < n; k++)
                if (!values[k])
                        return false;
        return true;
}

int counter_vec_add(struct counter_vec *cv, const char *const *values, size_t n_values,
                    uint64_t delta)
{
        bool found;
        size_t at;
        int r = 0;

        if (!cv || !values_ok(cv, values, n_values))
                return -EINVAL;
        pthread_mutex_lock(&cv->lock);
        at = find(cv, values, &found);
        if (!found)
                r = insert_locked(cv, at, values);
        if (r == 0)
                cv->series[at].count += delta;
        pthread_mutex_unlock(&cv->lock);
        return r;
}

uint64_t counter_vec_get(struct counter_vec *cv, const char *const *values, size_t n_values)
{
        uint64_t v = 0;
        bool found;
        size_t at;

        if (!cv || !values_ok(cv, values, n_values))
                return 0;
        pthread_mutex_lock(&cv->lock);
        at = find(cv, values, &found);
        if (found)
                v = cv->series[at].count;
        pthread_mutex_unlock(&cv->lock);
        return v;
}

void counter_vec_emit(struct counter_vec *cv, struct prom *p)
{
        struct prom_label labels[COUNTER_VEC_MAX_LABELS];

        if (!cv || !p)
                return;
        prom_header(p, cv->name, cv->help, "counter");
        pthread_mutex_lock(&cv->lock);
        for (size_t i = 0; i < cv->n_series; i++) {
                for (size_t k = 0; k < cv->n_labels; k++)
                        labels[k] = (struct prom_label){ cv->label_names[k],
                                                         cv->series[i].values[k] };
                prom_sample_u64(p, cv->name, labels, cv->n_labels, cv->series[i].count);
        }
        pthread_mutex_unlock(&cv->lock);
}

/* ---- histograms ---- */

const double METRICS_DURATION_BOUNDS[METRICS_DURATION_BUCKETS] = {
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
        1, 2.5, 5, 10, 30, 60, 120, 300, 600,
};

size_t histogram_bucket(const double *bounds, size_t n_bounds, double v)
{
        size_t i = 0;

        while (i < n_bounds && !(v <= bounds[i]))
                i++;
        return i;
}

void prom_histogram(struct prom *p, const char *name, const struct prom_label *labels, size_t n_labels,
                    const double *bounds, size_t n_bounds, const uint64_t *counts, double sum)
{
        struct prom_label l[COUNTER_VEC_MAX_LABELS + 1];
        char series[256], le[40];
        uint64_t cum = 0;

        if (!p || p->failed)
                return;
        if (n_labels > COUNTER_VEC_MAX_LABELS || strlen(name) + sizeof("_bucket") > sizeof(series)) {
                p->failed = true;
                return;
        }
        for (size_t k = 0; k < n_labels; k++)
                l[k] = labels[k];
        snprintf(series, sizeof(series), "%s_bucket", name);
        for (size_t i = 0; i <= n_bounds; i++) {
                cum += counts[i];
                if (i < n_bounds)
                        format_double(le, sizeof(le), bounds[i]);
                else
                        snprintf(le, sizeof(le), "+Inf");
                l[n_labels] = (struct prom_label){"le", le};
                prom_sample_u64(p, series, l, n_labels + 1, cum);
        }
        snprintf(series, sizeof(series), "%s_sum", name);
        prom_sample_double(p, series, labels, n_labels, sum);
        snprintf(series, sizeof(series), "%s_count", name);
        prom_sample_u64(p, series, labels, n_labels, cum);
}

struct histogram_vec {
        struct counter_vec *cv; /* with n_bounds > 0 */
};

int histogram_vec_new(const char *name, const char *help, const double *bounds, size_t n_bounds,
                      const char *const *label_names, size_t n_labels, struct histogram_vec **ret)
{
        struct histogram_vec *hv;
        int r;

        if (n_bounds < 1 || n_bounds > HISTOGRAM_MAX_BOUNDS)
                return -EINVAL;
        for (size_t i = 0; i < n_bounds; i++)
                if (!isfinite(bounds[i]) || (i && !(bounds[i] > bounds[i - 1])))
                        return -EINVAL;
        for (size_t k = 0; k < n_labels; k++)
                if (label_names[k] && strcmp(label_names[k], "le") == 0)
                        return -EINVAL;
        hv = calloc(1, sizeof(*hv));
        if (!hv)
                return -ENOMEM;
        r = counter_vec_new(name, help, label_names, n_labels, &hv->cv);
        if (r < 0) {
                free(hv);
                return r;
        }
        memcpy(hv->cv->bounds, bounds, n_bounds * sizeof(double));
        hv->cv->n_bounds = n_bounds;
        *ret = hv;
        return 0;
}

void histogram_vec_free(struct histogram_vec *hv)
{
        if (!hv)
                return;
        counter_vec_free(hv->cv);
        free(hv);
}

int histogram_vec_observe(struct histogram_vec *hv, const char *const *values, size_t n_values, double v)
{
        struct counter_vec *cv;
        bool found;
        size_t at;
        int r = 0;

        if (!hv || !values_ok(hv->cv, values, n_values) || isnan(v))
                return -EINVAL;
        cv = hv->cv;
        pthread_mutex_lock(&cv->lock);
        at = find(cv, values, &found);
        if (!found)
                r = insert_locked(cv, at, values);
        if (r == 0) {
                cv->series[at].count++;
                cv->series[at].buckets[histogram_bucket(cv->bounds, cv->n_bounds, v)]++;
                cv->series[at].sum += v;
        }
        pthread_mutex_unlock(&cv->lock);
        return r;
}

void histogram_vec_get(struct histogram_vec *hv, const char *const *values, size_t n_values,
                       uint64_t *ret_counts, double *ret_sum)
{
        bool found;
        size_t at;

        if (!hv)
                return;
        memset(ret_counts, 0, (hv->cv->n_bounds + 1) * sizeof(uint64_t));
        *ret_sum = 0;
        if (!values_ok(hv->cv, values, n_values))
                return;
        pthread_mutex_lock(&hv->cv->lock);
        at = find(hv->cv, values, &found);
        if (found) {
                memcpy(ret_counts, hv->cv->series[at].buckets, (hv->cv->n_bounds + 1) * sizeof(uint64_t));
                *ret_sum = hv->cv->series[at].sum;
        }
        pthread_mutex_unlock(&hv->cv->lock);
}

void histogram_vec_emit(struct histogram_vec *hv, struct prom *p)
{
        struct prom_label labels[COUNTER_VEC_MAX_LABELS];
        struct counter_vec *cv;

        if (!hv || !p)
                return;
        cv = hv->cv;
        prom_header(p, cv->name, cv->help, "histogram");
        pthread_mutex_lock(&cv->lock);
        for (size_t i = 0; i < cv->n_series; i++) {
                for (size_t k = 0; k < cv->n_labels; k++)
                        labels[k] = (struct prom_label){cv->label_names[k], cv->series[i].values[k]};
                prom_histogram(p, cv->name, labels, cv->n_labels, cv->bounds, cv->n_bounds, cv->series[i].buckets,
                               cv->series[i].sum);
        }
        pthread_mutex_unlock(&cv->lock);
}

/* ---- HTTP request signals ---- */

int http_metrics_init(struct http_metrics *m)
{
        int r;

        *m = (struct http_metrics){0};
        r = counter_vec_new("hpwarmd_http_requests_total", "HTTP requests by route template, method and status code.",
                            (const char *const[]){"route", "method", "code"}, 3, &m->requests);
        if (r < 0)
                return r;
        r = histogram_vec_new("hpwarmd_http_request_duration_seconds",
                              "Time from a request's headers to its response being queued, by route template "
                              "and method (long-polls included).",
                              METRICS_DURATION_BOUNDS, METRICS_DURATION_BUCKETS,
                              (const char *const[]){"route", "method"}, 2, &m->duration);
        if (r < 0) {
                http_metrics_done(m);
                return r;
        }
        return 0;
}

void http_metrics_done(struct http_metrics *m)
{
        counter_vec_free(m->requests);
        histogram_vec_free(m->duration);
        *m = (struct http_metrics){0};
}

void metrics_observe_request(struct http_metrics *m, const char *route, const char *method, int status,
                             double seconds)
{
        static const char *const known[] = {"GET", "PUT", "POST", "DELETE", "HEAD", "PATCH", "OPTIONS"};
        const char *mth = "other";
        char code[12];

        if (!m)
                return;
        for (size_t i = 0; i < ARRAY_SIZE(known); i++)
                if (method && strcmp(method, known[i]) == 0)
                        mth = known[i];
        if (!route)
                route = "unmatched";
        snprintf(code, sizeof(code), "%d", status);
        if (m->requests)
                counter_vec_inc(m->requests, route, mth, code);
        if (m->duration)
                histogram_vec_observe(m->duration, (const char *const[]){route, mth}, 2,
                                      seconds < 0 ? 0 : seconds);
}

void http_metrics_emit(struct http_metrics *m, struct prom *p)
{
        if (!m)
                return;
        counter_vec_emit(m->requests, p);
        histogram_vec_emit(m->duration, p);
}
