/* client: the public calls of libhpwarm.
 *
 * Each call builds a path and body, runs request() — which owns the retry
 * loop and the caller's deadline — and hands the answer to json.c.  The
 * handle remembers the last answer's status, body, problem and message so a
 * caller can explain a failure after the fact without the library logging.
 * Waiting is a loop of server long-polls (GET ?wait=ready&timeout=S): the
 * server holds each request until the pool changes or S passes, so neither
 * side spins; the loop ends at the caller's deadline. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define HPW_DEFAULT_URL "unix:///run/hpwarmd/api.sock"
#define HPW_DEFAULT_CONNECT_MS 5000
#define HPW_DEFAULT_TOTAL_MS 30000
/* Longest single long-poll: short enough that a proxy or NAT in between does
 * not drop an idle connection, long enough to be a handful of requests per
 * minute per waiter. */
#define HPW_LONGPOLL_MAX_S 30
/* Extra time a long-poll request gets beyond the server-side timeout, for
 * the answer to travel. */
#define HPW_LONGPOLL_SLACK_MS 5000
/* A server that answers a long-poll at once while still warming would make
 * us spin; never ask again sooner than this. */
#define HPW_POLL_MIN_INTERVAL_MS 200
/* Largest token file read: hpwarmd's own token files (up to 1024 tokens of
 * up to 4 KiB, with comments) are what people will point us at. */
#define HPW_TOKEN_FILE_MAX (64u << 10)

struct hpw {
        char *url;
        char *base_url;
        char *socket_path;
        char *token;
        char *ca_file, *cert_file, *key_file;
        uint64_t connect_ms, total_ms;
        struct hpw_retry_policy retry;
        hpw_log_fn log_fn;
        void *log_data;
        uint64_t rng;

        struct hpw_http *http;
        /* The last answer. */
        struct hpw_http_resp last;
        struct hpw_problem *problem;
        char message[512];
        unsigned attempts;       /* attempts the last request() made */
        /* Set by hpw_cancel() from any thread, cleared by begin() when a
         * call starts; read by request(), hpw_wait() and libcurl's progress
         * hook (http.c).  The only member another thread touches. */
        atomic_bool cancel;
};

const char *hpw_version(void)
{
        return HPW_VERSION_STRING;
}

unsigned hpw_version_num(void)
{
        return HPW_VERSION_NUM;
}

const char *hpw_strerror(enum hpw_error err)
{
        switch (err) {
        case HPW_OK: return "success";
        case HPW_E_INVALID: return "invalid argument";
        case HPW_E_NOMEM: return "out of memory";
        case HPW_E_IO: return "cannot read local file";
        case HPW_E_UNREACHABLE: return "server unreachable";
        case HPW_E_TIMEOUT: return "timed out";
        case HPW_E_TLS: return "TLS error";
        case HPW_E_PROTOCOL: return "unexpected answer from server";
        case HPW_E_BAD_REQUEST: return "request rejected by server";
        case HPW_E_UNAUTHORIZED: return "unauthorized";
        case HPW_E_FORBIDDEN: return "forbidden";
        case HPW_E_NOT_FOUND: return "not found";
        case HPW_E_CONFLICT: return "conflict";
        case HPW_E_INSUFFICIENT: return "insufficient hugepages";
        case HPW_E_RATE_LIMITED: return "rate limited";
        case HPW_E_UNAVAILABLE: return "service unavailable";
        case HPW_E_SERVER: return "server error";
        case HPW_E_POOL_FAILED: return "pool failed";
        case HPW_E_HTTP: return "unexpected HTTP status";
        case HPW_E_CANCELLED: return "cancelled";
        }
        return "unknown error";
}

const char *hpw_pool_state_name(enum hpw_pool_state s)
{
        switch (s) {
        case HPW_POOL_WARMING: return "warming";
        case HPW_POOL_READY: return "ready";
        case HPW_POOL_FAILED: return "failed";
        case HPW_POOL_CANCELLED: return "cancelled";
        case HPW_POOL_UNKNOWN: break;
        }
        return "unknown";
}

void hpw_format_page_size(uint64_t bytes, char *buf, size_t len)
{
        if (bytes && bytes % (1ull << 30) == 0)
                snprintf(buf, len, "%lluG", (unsigned long long)(bytes >> 30));
        else if (bytes && bytes % (1ull << 20) == 0)
                snprintf(buf, len, "%lluM", (unsigned long long)(bytes >> 20));
        else
                snprintf(buf, len, "%llukB", (unsigned long long)(bytes >> 10));
}

static uint64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(uint64_t ms)
{
        struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* How often a sleep between attempts looks at the cancel flag. */
#define HPW_CANCEL_CHECK_MS 50

/* Sleep MS unless H is cancelled first; false when it was. */
static bool sleep_unless_cancelled(struct hpw *h, uint64_t ms)
{
        while (ms && !atomic_load(&h->cancel)) {
                uint64_t step = ms < HPW_CANCEL_CHECK_MS ? ms : HPW_CANCEL_CHECK_MS;
                sleep_ms(step);
                ms -= step;
        }
        return !atomic_load(&h->cancel);
}

/* xorshift64*: jitter only needs to differ between clients, not be secret. */
static uint64_t next_rand(struct hpw *h)
{
        uint64_t x = h->rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        h->rng = x;
        return x * 0x2545F4914F6CDD1Dull;
}

static void logf_(struct hpw *h, enum hpw_log_level lvl, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void logf_(struct hpw *h, enum hpw_log_level lvl, const char *fmt, ...)
{
        char msg[512];
        va_list ap;

        if (!h->log_fn)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        h->log_fn(lvl, msg, h->log_data);
}

static enum hpw_error set_str(char **dst, const char *src)
{
        char *s = NULL;

        if (src && !(s = strdup(src)))
                return HPW_E_NOMEM;
        free(*dst);
        *dst = s;
        return HPW_OK;
}

enum hpw_error hpw_new(const char *url, struct hpw **ret)
{
        struct hpw *h;
        enum hpw_error err;

        if (!ret)
                return HPW_E_INVALID;
        if (!url)
                url = HPW_DEFAULT_URL;
        h = calloc(1, sizeof(*h));
        if (!h)
                return HPW_E_NOMEM;
        err = hpw_url_split(url, &h->base_url, &h->socket_path);
        if (err != HPW_OK) {
                free(h);
                return err;
        }
        hpw_http_global_init();
        h->url = strdup(url);
        err = h->url ? hpw_http_new(&h->http) : HPW_E_NOMEM;
        if (err != HPW_OK) {
                hpw_free(h);
                return err;
        }
        h->connect_ms = HPW_DEFAULT_CONNECT_MS;
        h->total_ms = HPW_DEFAULT_TOTAL_MS;
        h->retry = (struct hpw_retry_policy){ .max_attempts = 6, .base_ms = 100, .cap_ms = 5000 };
        if (getrandom(&h->rng, sizeof(h->rng), GRND_NONBLOCK) != sizeof(h->rng))
                h->rng = (uint64_t)now_ms() ^ ((uint64_t)getpid() << 32);
        h->rng |= 1;
        h->last.retry_after_s = -1;
        *ret = h;
        return HPW_OK;
}

static void clear_last(struct hpw *h)
{
        hpw_http_resp_clear(&h->last);
        h->last.retry_after_s = -1;
        hpw_problem_free(h->problem);
        h->problem = NULL;
        h->message[0] = '\0';
        h->attempts = 0;
}

/* Entry of every call that takes a handle: nothing the last call left
 * (status, problem, body, message, a cancel meant for it) may describe this
 * one, also when it refuses its arguments before any request. */
static void begin(struct hpw *h)
{
        if (!h)
                return;
        clear_last(h);
        atomic_store(&h->cancel, false);
}

void hpw_cancel(struct hpw *h)
{
        if (h)
                atomic_store(&h->cancel, true);
}

enum hpw_slug hpw_last_slug(const struct hpw *h)
{
        return h && h->problem ? h->problem->code : HPW_SLUG_UNKNOWN;
}

/* The failure of a call stopped by hpw_cancel() or the progress callback. */
static enum hpw_error cancelled(struct hpw *h, const char *what)
{
        hpw_http_resp_clear(&h->last);
        hpw_problem_free(h->problem);
        h->problem = NULL;
        snprintf(h->message, sizeof(h->message), "%s: cancelled", what);
        return HPW_E_CANCELLED;
}

void hpw_free(struct hpw *h)
{
        if (!h)
                return;
        clear_last(h);
        hpw_http_free(h->http);
        free(h->url);
        free(h->base_url);
        free(h->socket_path);
        if (h->token) {
                explicit_bzero(h->token, strlen(h->token));
                free(h->token);
        }
        free(h->ca_file);
        free(h->cert_file);
        free(h->key_file);
        free(h);
        hpw_http_global_cleanup();
}

enum hpw_error hpw_set_timeouts(struct hpw *h, uint64_t connect_ms, uint64_t total_ms)
{
        begin(h);
        if (!h)
                return HPW_E_INVALID;
        h->connect_ms = connect_ms;
        h->total_ms = total_ms;
        return HPW_OK;
}

enum hpw_error hpw_set_token(struct hpw *h, const char *token)
{
        begin(h);
        begin(h);
        if (!h || (token && (!token[0] || strpbrk(token, "\r\n"))))
                return HPW_E_INVALID;
        if (h->token)
                explicit_bzero(h->token, strlen(h->token));
        return set_str(&h->token, token);
}

/* Same format as hpwarmd's token files, so one file can serve both: blank
 * lines and lines starting with '#' are skipped, surrounding whitespace is
 * trimmed, and the first remaining line is the token (one word of visible
 * ASCII).  The file is read whole into a buffer one byte larger than the
 * limit, so a full buffer means "too big" and a file of exactly the limit
 * still loads. */
enum hpw_error hpw_set_token_file(struct hpw *h, const char *path)
{
        char *buf, *line, *tok = NULL;
        const char *why = NULL;
        size_t n;
        FILE *f;
        enum hpw_error err = HPW_E_IO;

        begin(h);
        if (!h)
                return HPW_E_INVALID;
        if (!path)
                return hpw_set_token(h, NULL);
        buf = malloc(HPW_TOKEN_FILE_MAX + 1);
        if (!buf)
                return HPW_E_NOMEM;
        f = fopen(path, "re");
        if (!f) {
                snprintf(h->message, sizeof(h->message), "%s: %s", path, strerror(errno));
                free(buf);
                return HPW_E_IO;
        }
        n = fread(buf, 1, HPW_TOKEN_FILE_MAX + 1, f);
        if (ferror(f))
                why = "read error";
        else if (n > HPW_TOKEN_FILE_MAX)
                why = "file too big for a token file";
        else if (memchr(buf, '\0', n))
                why = "file holds a NUL byte";
        fclose(f);
        if (!why) {
                buf[n] = '\0';
                for (line = buf; line && !tok; ) {
                        char *next = strchr(line, '\n'), *e;

                        if (next)
                                *next++ = '\0';
                        while (*line && strchr(" \t\r\v\f", *line))
                                line++;
                        e = line + strlen(line);
                        while (e > line && strchr(" \t\r\v\f", e[-1]))
                                *--e = '\0';
                        if (*line && *line != '#')
                                tok = line;
                        line = next;
                }
                if (!tok)
                        why = "no token in file (only blank lines and # comments)";
        }
        for (const char *c = tok; !why && c && *c; c++)
                if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
                        why = "the token must be one word of visible ASCII";
        if (why)
                snprintf(h->message, sizeof(h->message), "%s: %s", path, why);
        else if ((err = hpw_set_token(h, tok)) == HPW_E_INVALID)
                snprintf(h->message, sizeof(h->message), "%s: not a token", path);
        explicit_bzero(buf, HPW_TOKEN_FILE_MAX + 1);
        free(buf);
        return err;
}

enum hpw_error hpw_set_tls(struct hpw *h, const char *ca_file, const char *cert_file, const char *key_file)
{
        begin(h);
        if (!h)
                return HPW_E_INVALID;
        if ((ca_file && set_str(&h->ca_file, ca_file)) || (cert_file && set_str(&h->cert_file, cert_file)) ||
            (key_file && set_str(&h->key_file, key_file)))
                return HPW_E_NOMEM;
        return HPW_OK;
}

enum hpw_error hpw_set_retry(struct hpw *h, unsigned max_attempts, uint64_t base_ms, uint64_t cap_ms)
{
        begin(h);
        begin(h);
        if (!h || max_attempts == 0 || base_ms == 0 || cap_ms < base_ms)
                return HPW_E_INVALID;
        h->retry = (struct hpw_retry_policy){ max_attempts, base_ms, cap_ms };
        return HPW_OK;
}

void hpw_set_log(struct hpw *h, hpw_log_fn fn, void *userdata)
{
        begin(h);
        if (!h)
                return;
        h->log_fn = fn;
        h->log_data = userdata;
}

const struct hpw_problem *hpw_last_problem(const struct hpw *h)
{
        return h ? h->problem : NULL;
}

const char *hpw_last_message(const struct hpw *h)
{
        return h ? h->message : "";
}

int hpw_last_status(const struct hpw *h)
{
        return h ? (int)h->last.status : 0;
}

const char *hpw_last_body(const struct hpw *h)
{
        return h && h->last.body ? h->last.body : "";
}

static void conn_of(const struct hpw *h, struct hpw_conn *c)
{
        *c = (struct hpw_conn){
                .base_url = h->base_url,
                .socket_path = h->socket_path,
                .token = h->token,
                .ca_file = h->ca_file,
                .cert_file = h->cert_file,
                .key_file = h->key_file,
                .connect_ms = h->connect_ms,
                .cancel = (atomic_bool *)&h->cancel,
        };
}

/* Classify a finished attempt into the public enum, filling h->problem and
 * h->message for failures. */
static enum hpw_error classify(struct hpw *h, const char *method, const char *path)
{
        const struct hpw_http_resp *r = &h->last;
        enum hpw_error err;

        hpw_problem_free(h->problem);
        h->problem = NULL;
        if (r->transport != HPW_OK) {
                snprintf(h->message, sizeof(h->message), "%s %s: %s", method, path, r->message);
                return r->transport;
        }
        if (r->status >= 200 && r->status < 300) {
                h->message[0] = '\0';
                return HPW_OK;
        }
        if (r->body && hpw_json_problem(r->body, r->len, &h->problem) != HPW_OK)
                h->problem = NULL;
        err = hpw_status_error(r->status, h->problem ? h->problem->slug : NULL);
        if (h->problem && h->problem->title[0])
                snprintf(h->message, sizeof(h->message), "%s%s%s", h->problem->title,
                         h->problem->detail[0] ? ": " : "", h->problem->detail);
        else
                snprintf(h->message, sizeof(h->message), "%s %s: HTTP %ld", method, path, r->status);
        return err;
}

/* Run one API request with retries until DEADLINE (monotonic ms, 0 = none).
 * TIMEOUT_CAP_MS, if not 0, bounds each attempt (long-polls).  On HPW_OK the
 * answer is in h->last. */
static enum hpw_error request(struct hpw *h, const char *method, const char *path, const char *body,
                              bool idempotent, uint64_t deadline, uint64_t attempt_cap_ms)
{
        struct hpw_conn c;
        enum hpw_error err;
        unsigned attempt = 0;

        conn_of(h, &c);
        h->attempts = 0;
        for (;;) {
                uint64_t now = now_ms(), remaining = UINT64_MAX, tmo = 0;
                int64_t delay;

                if (atomic_load(&h->cancel))
                        return cancelled(h, path);
                if (deadline) {
                        if (now >= deadline) {
                                clear_last(h);
                                snprintf(h->message, sizeof(h->message), "%s %s: deadline passed",
                                         method, path);
                                return HPW_E_TIMEOUT;
                        }
                        remaining = deadline - now;
                        tmo = remaining;
                }
                if (attempt_cap_ms && (!tmo || attempt_cap_ms < tmo))
                        tmo = attempt_cap_ms;
                clear_last(h);
                err = hpw_http_perform(h->http, &c, method, path, body, tmo, &h->last);
                if (err != HPW_OK)
                        return err;
                h->attempts = ++attempt;
                err = classify(h, method, path);
                if (err == HPW_OK)
                        return HPW_OK;
                if (err == HPW_E_CANCELLED)
                        return cancelled(h, path);
                if (err == HPW_E_UNREACHABLE && deadline && now_ms() >= deadline) {
                        /* The caller's deadline ran out before a connection
                         * was made (a deadline of a few ms, a slow resolver):
                         * that is a timeout, not a server that is not there. */
                        size_t n = strlen(h->message);
                        snprintf(h->message + n, sizeof(h->message) - n, " (the deadline passed first)");
                        return HPW_E_TIMEOUT;
                }
                if (deadline) {
                        now = now_ms();
                        remaining = now < deadline ? deadline - now : 0;
                }
                delay = hpw_retry_delay_slug(&h->retry, attempt, idempotent, h->last.transport, h->last.status,
                                             h->problem ? h->problem->code : HPW_SLUG_UNKNOWN,
                                             h->last.retry_after_s, remaining, next_rand(h));
                if (delay < 0)
                        return err;
                logf_(h, HPW_LOG_INFO, "%s; retry %u in %lld ms", h->message, attempt,
                      (long long)delay);
                if (!sleep_unless_cancelled(h, (uint64_t)delay))
                        return cancelled(h, path);
        }
}

static uint64_t call_deadline(const struct hpw *h)
{
        return h->total_ms ? now_ms() + h->total_ms : 0;
}

/* ERR is what a hpw_json_*() parser said of the answer in h->last (they all
 * answer HPW_E_PROTOCOL for a missing body); a shape error gets a message. */
static enum hpw_error parsed(struct hpw *h, enum hpw_error err)
{
        if (err == HPW_E_PROTOCOL)
                snprintf(h->message, sizeof(h->message), "answer is not the expected JSON (HTTP %ld)",
                         h->last.status);
        return err;
}

enum hpw_error hpw_health(struct hpw *h, struct hpw_health **ret)
{
        enum hpw_error err;

        begin(h);
        if (!h || !ret)
                return HPW_E_INVALID;
        err = request(h, "GET", "/v1/health", NULL, true, call_deadline(h), 0);
        return err ? err : parsed(h, hpw_json_health(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_nodes(struct hpw *h, struct hpw_node_list **ret)
{
        enum hpw_error err;

        begin(h);
        if (!h || !ret)
                return HPW_E_INVALID;
        err = request(h, "GET", "/v1/nodes", NULL, true, call_deadline(h), 0);
        return err ? err : parsed(h, hpw_json_node_list(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_node(struct hpw *h, int node, struct hpw_node **ret)
{
        char path[64];
        enum hpw_error err;

        begin(h);
        if (!h || !ret || node < 0)
                return HPW_E_INVALID;
        snprintf(path, sizeof(path), "/v1/nodes/%d", node);
        err = request(h, "GET", path, NULL, true, call_deadline(h), 0);
        return err ? err : parsed(h, hpw_json_node(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_reserve(struct hpw *h, int node, uint64_t page_size, uint64_t count, bool allow_partial,
                           struct hpw_reserve_result **ret)
{
        char path[96], ps[32];
        char *body;
        enum hpw_error err;

        begin(h);
        if (!h || !ret || node < 0 || page_size == 0)
                return HPW_E_INVALID;
        hpw_format_page_size(page_size, ps, sizeof(ps));
        snprintf(path, sizeof(path), "/v1/nodes/%d/hugepages/%s", node, ps);
        body = hpw_json_reserve_body(count, allow_partial);
        if (!body)
                return HPW_E_NOMEM;
        err = request(h, "PUT", path, body, true, call_deadline(h), 0);
        free(body);
        return err ? err : parsed(h, hpw_json_reserve(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_set_elastic(struct hpw *h, int node, uint64_t page_size, const struct hpw_elastic_policy *policy,
                               struct hpw_elastic **ret)
{
        char path[112], ps[32];
        char *body;
        enum hpw_error err;

        begin(h);
        if (!h || !ret || !policy || node < 0 || page_size == 0)
                return HPW_E_INVALID;
        hpw_format_page_size(page_size, ps, sizeof(ps));
        snprintf(path, sizeof(path), "/v1/nodes/%d/hugepages/%s/policy", node, ps);
        body = hpw_json_elastic_body(policy);
        if (!body)
                return HPW_E_NOMEM;
        err = request(h, "PUT", path, body, true, call_deadline(h), 0);
        free(body);
        return err ? err : parsed(h, hpw_json_elastic(h->last.body, h->last.len, ret));
}

/* Pages of at most this many pools (the server's largest page): a host of a
 * thousand pools is one request, a denser one a few, each answer bounded. */
#define POOLS_PAGE 1000

/* Page through the list: each request asks for the names after the last
 * page's "next"; a server without paging answers everything at once and no
 * "next", which ends the loop too.  One deadline covers all pages. */
enum hpw_error hpw_pools(struct hpw *h, struct hpw_pool_list **ret)
{
        struct hpw_pool_list *acc = NULL;
        char path[128], *next = NULL;
        uint64_t deadline;
        enum hpw_error err;

        begin(h);
        if (!h || !ret)
                return HPW_E_INVALID;
        deadline = call_deadline(h);
        snprintf(path, sizeof(path), "/v1/pools?limit=%d", POOLS_PAGE);
        for (;;) {
                err = request(h, "GET", path, NULL, true, deadline, 0);
                if (err == HPW_OK)
                        err = parsed(h, hpw_json_pool_list_page(h->last.body, h->last.len, &acc, &next));
                if (err != HPW_OK || !next)
                        break;
                /* Pool names need no escaping in a query (hpw_name_valid). */
                snprintf(path, sizeof(path), "/v1/pools?limit=%d&after=%s", POOLS_PAGE, next);
                free(next);
                next = NULL;
        }
        if (err != HPW_OK) {
                hpw_pool_list_free(acc);
                return err;
        }
        *ret = acc;
        return HPW_OK;
}

enum hpw_error hpw_pool(struct hpw *h, const char *name, struct hpw_pool **ret)
{
        char path[128];
        enum hpw_error err;

        begin(h);
        if (!h || !ret || !hpw_name_valid(name))
                return HPW_E_INVALID;
        snprintf(path, sizeof(path), "/v1/pools/%s", name);
        err = request(h, "GET", path, NULL, true, call_deadline(h), 0);
        return err ? err : parsed(h, hpw_json_pool(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_warm(struct hpw *h, const char *name, const struct hpw_warm_request *req,
                        struct hpw_pool **ret, bool *ret_created)
{
        char path[128];
        char *body;
        enum hpw_error err;

        begin(h);
        if (!h || !ret || !req || req->size < HPW_WARM_REQUEST_V1_SIZE || !hpw_name_valid(name) ||
            req->node < 0 || req->size_bytes == 0)
                return HPW_E_INVALID;
        snprintf(path, sizeof(path), "/v1/pools/%s", name);
        body = hpw_json_warm_body(req);
        if (!body)
                return HPW_E_NOMEM;
        /* PUT of an identical pool answers 200 with the existing one, so a
         * retry after a lost answer is safe. */
        err = request(h, "PUT", path, body, true, call_deadline(h), 0);
        free(body);
        if (err == HPW_OK)
                err = parsed(h, hpw_json_pool(h->last.body, h->last.len, ret));
        if (err == HPW_OK && ret_created)
                *ret_created = h->last.status == 201;
        return err;
}

enum hpw_error hpw_stock_get(struct hpw *h, struct hpw_stock **ret)
{
        enum hpw_error err;

        begin(h);
        if (!h || !ret)
                return HPW_E_INVALID;
        err = request(h, "GET", "/v1/stock", NULL, true, call_deadline(h), 0);
        return err ? err : parsed(h, hpw_json_stock(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_stock_wait_change(struct hpw *h, uint64_t after, unsigned timeout_s, struct hpw_stock **ret)
{
        char path[96];
        enum hpw_error err;

        begin(h);
        if (!h || !ret || timeout_s > HPW_STOCK_WAIT_MAX_S)
                return HPW_E_INVALID;
        snprintf(path, sizeof(path), "/v1/stock?wait=change&after=%llu&timeout=%u", (unsigned long long)after,
                 timeout_s);
        /* The wait is the caller's choice of length: its own bound, not
         * the handle's total. */
        uint64_t cap = (uint64_t)timeout_s * 1000 + HPW_LONGPOLL_SLACK_MS;
        err = request(h, "GET", path, NULL, true, now_ms() + cap, cap);
        return err ? err : parsed(h, hpw_json_stock(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_stock_set(struct hpw *h, const struct hpw_stock_target *const *targets, size_t n,
                             struct hpw_stock **ret)
{
        char *body;
        enum hpw_error err;

        begin(h);
        if (!h || !ret || n > HPW_STOCK_MAX_TARGETS || (n && !targets))
                return HPW_E_INVALID;
        for (size_t i = 0; i < n; i++)
                if (!targets[i] || targets[i]->size < HPW_STOCK_TARGET_V1_SIZE || targets[i]->node < 0 ||
                    targets[i]->page_size_bytes == 0 || targets[i]->size_bytes == 0 || targets[i]->count == 0)
                        return HPW_E_INVALID;
        body = hpw_json_stock_body(targets, n);
        if (!body)
                return HPW_E_NOMEM;
        /* A PUT of the whole target list: sending it twice leaves the same
         * targets, so a retry after a lost answer is safe. */
        err = request(h, "PUT", "/v1/stock", body, true, call_deadline(h), 0);
        free(body);
        return err ? err : parsed(h, hpw_json_stock(h->last.body, h->last.len, ret));
}

/* GET /v1/handoff for POOLS, with as= when AS is given. */
static enum hpw_error handoff_get(struct hpw *h, const char *vmm, const char *const *pools, const char *const *as,
                                  size_t n, struct hpw_handoff **ret)
{
        /* "/v1/handoff?vmm=cloud-hypervisor&pools=" and N names of at most 64
         * characters with a comma each, "&as=" and as many again. */
        char path[64 + 2 * HPW_HANDOFF_MAX_POOLS * 65];
        size_t len;
        enum hpw_error err;

        if (!h || !ret || !vmm || !pools || n == 0 || n > HPW_HANDOFF_MAX_POOLS ||
            (strcmp(vmm, "qemu") != 0 && strcmp(vmm, "cloud-hypervisor") != 0 && strcmp(vmm, "libvirt") != 0))
                return HPW_E_INVALID;
        len = (size_t)snprintf(path, sizeof(path), "/v1/handoff?vmm=%s&pools=", vmm);
        for (size_t i = 0; i < n; i++) {
                if (!hpw_name_valid(pools[i]))
                        return HPW_E_INVALID;
                len += (size_t)snprintf(path + len, sizeof(path) - len, "%s%s", i ? "," : "", pools[i]);
        }
        for (size_t i = 0; as && i < n; i++) {
                if (!hpw_name_valid(as[i]))
                        return HPW_E_INVALID;
                len += (size_t)snprintf(path + len, sizeof(path) - len, "%s%s", i ? "," : "&as=", as[i]);
        }
        err = request(h, "GET", path, NULL, true, call_deadline(h), 0);
        return err ? err : parsed(h, hpw_json_handoff(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_handoff(struct hpw *h, const char *vmm, const char *const *pools, size_t n,
                           struct hpw_handoff **ret)
{
        begin(h);
        return handoff_get(h, vmm, pools, NULL, n, ret);
}

enum hpw_error hpw_handoff_as(struct hpw *h, const char *vmm, const char *const *pools, const char *const *as,
                              size_t n, struct hpw_handoff **ret)
{
        begin(h);
        if (!as)
                return HPW_E_INVALID;
        return handoff_get(h, vmm, pools, as, n, ret);
}

enum hpw_error hpw_wait(struct hpw *h, const char *name, uint64_t timeout_ms, hpw_progress_fn progress,
                        void *userdata, struct hpw_pool **ret)
{
        uint64_t deadline, started;
        struct hpw_pool *pool = NULL;
        enum hpw_error err;

        begin(h);
        if (!h || !ret || !hpw_name_valid(name))
                return HPW_E_INVALID;
        started = now_ms();
        deadline = timeout_ms ? started + timeout_ms : 0;
        for (;;) {
                char path[160];
                uint64_t poll_s = progress ? 1 : HPW_LONGPOLL_MAX_S, t0 = now_ms();
                struct hpw_pool *p = NULL;

                if (deadline) {
                        uint64_t left = t0 < deadline ? deadline - t0 : 0;
                        /* Ask the server to answer before our deadline. */
                        if (left / 1000 < poll_s)
                                poll_s = left / 1000;
                }
                snprintf(path, sizeof(path), "/v1/pools/%s?wait=ready&timeout=%llu", name,
                         (unsigned long long)poll_s);
                err = request(h, "GET", path, NULL, true, deadline, poll_s * 1000 + HPW_LONGPOLL_SLACK_MS);
                if (err == HPW_OK)
                        err = parsed(h, hpw_json_pool(h->last.body, h->last.len, &p));
                if (err != HPW_OK) {
                        if ((err == HPW_E_TIMEOUT || err == HPW_E_CANCELLED) && pool) {
                                *ret = pool;
                                return err;
                        }
                        hpw_pool_free(pool);
                        return err;
                }
                hpw_pool_free(pool);
                pool = p;
                if ((progress && progress(pool, userdata) != 0) || atomic_load(&h->cancel)) {
                        cancelled(h, name);
                        *ret = pool;
                        return HPW_E_CANCELLED;
                }
                if (pool->state == HPW_POOL_UNKNOWN) {
                        /* Not a state we could wait out: without knowing
                         * whether it ends, waiting would only run to the
                         * deadline (or forever without one). */
                        snprintf(h->message, sizeof(h->message), "pool %s is in unknown state '%s'",
                                 name, pool->state_name);
                        hpw_pool_free(pool);
                        return HPW_E_PROTOCOL;
                }
                if (pool->state != HPW_POOL_WARMING)
                        break;
                if (deadline && now_ms() >= deadline) {
                        snprintf(h->message, sizeof(h->message), "pool %s still %s at the deadline",
                                 name, pool->state_name);
                        *ret = pool;
                        return HPW_E_TIMEOUT;
                }
                if (now_ms() - t0 < HPW_POLL_MIN_INTERVAL_MS &&
                    !sleep_unless_cancelled(h, HPW_POLL_MIN_INTERVAL_MS)) {
                        cancelled(h, name);
                        *ret = pool;
                        return HPW_E_CANCELLED;
                }
        }
        if (pool->state == HPW_POOL_READY) {
                *ret = pool;
                return HPW_OK;
        }
        /* Failed or cancelled: surface the pool's own problem. */
        hpw_problem_free(h->problem);
        h->problem = NULL;
        if (pool->error) {
                h->problem = calloc(1, sizeof(*h->problem));
                if (h->problem) {
                        h->problem->type = strdup(pool->error->type);
                        h->problem->slug = strdup(pool->error->slug);
                        h->problem->title = strdup(pool->error->title);
                        h->problem->detail = strdup(pool->error->detail);
                        h->problem->status = pool->error->status;
                        h->problem->code = pool->error->code;
                        if (!h->problem->type || !h->problem->slug || !h->problem->title ||
                            !h->problem->detail) {
                                hpw_problem_free(h->problem);
                                h->problem = NULL;
                        }
                }
        }
        snprintf(h->message, sizeof(h->message), "pool %s %s%s%s", name, pool->state_name,
                 pool->error ? ": " : "",
                 pool->error ? (pool->error->detail[0] ? pool->error->detail : pool->error->title) : "");
        *ret = pool;
        return HPW_E_POOL_FAILED;
}

/* BODY NULL: a claim as before pids existed (no body at all, which every
 * server version takes). */
static enum hpw_error claim(struct hpw *h, const char *name, const char *body, struct hpw_pool **ret)
{
        char path[160];
        enum hpw_error err;

        snprintf(path, sizeof(path), "/v1/pools/%s/claim", name);
        /* Claiming a claimed pool again (with the same pid, if any) answers
         * it unchanged, so a retry after a lost answer is safe. */
        err = request(h, "POST", path, body, true, call_deadline(h), 0);
        return err ? err : parsed(h, hpw_json_pool(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_claim(struct hpw *h, const char *name, struct hpw_pool **ret)
{
        begin(h);
        if (!h || !ret || !hpw_name_valid(name))
                return HPW_E_INVALID;
        return claim(h, name, NULL, ret);
}

enum hpw_error hpw_claim_pid(struct hpw *h, const char *name, int pid, struct hpw_pool **ret)
{
        char body[32];

        begin(h);
        if (!h || !ret || !hpw_name_valid(name) || pid <= 0)
                return HPW_E_INVALID;
        snprintf(body, sizeof(body), "{\"pid\":%d}", pid);
        return claim(h, name, body, ret);
}

/* A DELETE retried after a lost answer may find its own work done: 404 on
 * any attempt after the first is success.  When the first attempt really
 * never arrived (the pool did not exist at all) this still ends where the
 * caller wanted, with no such pool. */
enum hpw_error hpw_release(struct hpw *h, const char *name)
{
        char path[128];
        enum hpw_error err;

        begin(h);
        if (!h || !hpw_name_valid(name))
                return HPW_E_INVALID;
        snprintf(path, sizeof(path), "/v1/pools/%s", name);
        err = request(h, "DELETE", path, NULL, true, call_deadline(h), 0);
        if (err == HPW_E_NOT_FOUND && h->attempts > 1) {
                hpw_problem_free(h->problem);
                h->problem = NULL;
                h->message[0] = '\0';
                return HPW_OK;
        }
        return err;
}

void hpw_fleet_free(struct hpw_fleet *x)
{
        if (!x)
                return;
        for (size_t i = 0; x->hosts && i < x->n; i++) {
                if (!x->hosts[i])
                        continue;
                free(x->hosts[i]->url);
                free(x->hosts[i]->message);
                hpw_node_list_free(x->hosts[i]->nodes);
                hpw_pool_list_free(x->hosts[i]->pools);
                hpw_stock_free(x->hosts[i]->stock);
                free(x->hosts[i]);
        }
        free(x->hosts);
        free(x);
}

enum hpw_error hpw_fleet_get(struct hpw *h, const char *const *urls, size_t n, enum hpw_fleet_what what,
                             struct hpw_fleet **ret)
{
        struct hpw_conn *conns = NULL;
        struct hpw_http_resp *resps = NULL;
        char **bases = NULL, **socks = NULL;
        struct hpw_fleet *f = NULL;
        enum hpw_error err = HPW_OK;

        static const char *const paths[] = {
                [HPW_FLEET_NODES] = "/v1/nodes", [HPW_FLEET_POOLS] = "/v1/pools", [HPW_FLEET_STOCK] = "/v1/stock",
        };

        begin(h);
        if (!h || !ret || (n && !urls) || (what != HPW_FLEET_NODES && what != HPW_FLEET_POOLS &&
                                           what != HPW_FLEET_STOCK))
                return HPW_E_INVALID;
        f = calloc(1, sizeof(*f));
        conns = calloc(n ? n : 1, sizeof(*conns));
        resps = calloc(n ? n : 1, sizeof(*resps));
        bases = calloc(n ? n : 1, sizeof(*bases));
        socks = calloc(n ? n : 1, sizeof(*socks));
        if (!f || !conns || !resps || !bases || !socks ||
            (n && !(f->hosts = calloc(n, sizeof(*f->hosts))))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        f->n = n;
        for (size_t i = 0; i < n; i++) {
                conn_of(h, &conns[i]);
                if (!(f->hosts[i] = calloc(1, sizeof(*f->hosts[i]))) ||
                    !(f->hosts[i]->url = strdup(urls[i] ? urls[i] : ""))) {
                        err = HPW_E_NOMEM;
                        goto out;
                }
                f->hosts[i]->err = urls[i] ? hpw_url_split(urls[i], &bases[i], &socks[i]) : HPW_E_INVALID;
                if (f->hosts[i]->err == HPW_E_NOMEM) {
                        err = HPW_E_NOMEM;
                        goto out;
                }
                /* A bad URL keeps its slot (NULL base: not asked). */
                conns[i].base_url = bases[i];
                conns[i].socket_path = socks[i];
        }
        err = hpw_http_multi_get(conns, n, paths[what], h->total_ms, resps);
        if (err == HPW_OK && atomic_load(&h->cancel))
                err = cancelled(h, paths[what]);
        if (err != HPW_OK)
                goto out;
        for (size_t i = 0; i < n; i++) {
                struct hpw_fleet_host *fh = f->hosts[i];
                const struct hpw_http_resp *r = &resps[i];
                char msg[300] = "";

                if (fh->err != HPW_OK) {
                        snprintf(msg, sizeof(msg), "invalid URL");
                } else if (r->transport != HPW_OK) {
                        fh->err = r->transport;
                        snprintf(msg, sizeof(msg), "%s", r->message);
                } else if ((fh->err = hpw_status_error(r->status, NULL)) != HPW_OK) {
                        snprintf(msg, sizeof(msg), "HTTP %ld", r->status);
                } else if (!r->body) {
                        fh->err = HPW_E_PROTOCOL;
                        snprintf(msg, sizeof(msg), "%s", hpw_strerror(fh->err));
                } else {
                        fh->err = what == HPW_FLEET_NODES   ? hpw_json_node_list(r->body, r->len, &fh->nodes)
                                  : what == HPW_FLEET_POOLS ? hpw_json_pool_list(r->body, r->len, &fh->pools)
                                                            : hpw_json_stock(r->body, r->len, &fh->stock);
                        if (fh->err != HPW_OK)
                                snprintf(msg, sizeof(msg), "%s", hpw_strerror(fh->err));
                }
                if (!(fh->message = strdup(msg))) {
                        err = HPW_E_NOMEM;
                        goto out;
                }
        }
out:
        for (size_t i = 0; i < n; i++) {
                if (resps)
                        hpw_http_resp_clear(&resps[i]);
                if (bases)
                        free(bases[i]);
                if (socks)
                        free(socks[i]);
        }
        free(conns);
        free(resps);
        free(bases);
        free(socks);
        if (err != HPW_OK) {
                hpw_fleet_free(f);
                return err;
        }
        *ret = f;
        return HPW_OK;
}

/* ---- for prom.c: placement through Prometheus asks hosts as this handle would ---- */

void hpw_conn_get(const struct hpw *h, struct hpw_conn *ret)
{
        conn_of(h, ret);
}

uint64_t hpw_total_timeout_ms(const struct hpw *h)
{
        return h->total_ms;
}

enum hpw_error hpw_clone_for(const struct hpw *h, const char *url, struct hpw **ret)
{
        struct hpw *c = NULL;
        enum hpw_error err = hpw_new(url, &c);

        if (err == HPW_OK)
                err = set_str(&c->token, h->token);
        if (err == HPW_OK)
                err = hpw_set_tls(c, h->ca_file, h->cert_file, h->key_file);
        if (err != HPW_OK) {
                hpw_free(c);
                return err;
        }
        c->connect_ms = h->connect_ms;
        c->total_ms = h->total_ms;
        c->retry = h->retry;
        c->log_fn = h->log_fn;
        c->log_data = h->log_data;
        *ret = c;
        return HPW_OK;
}

void hpw_set_failure(struct hpw *h, const char *fmt, ...)
{
        va_list ap;

        clear_last(h);
        va_start(ap, fmt);
        vsnprintf(h->message, sizeof(h->message), fmt, ap);
        va_end(ap);
}

void hpw_begin_call(struct hpw *h)
{
        begin(h);
}

bool hpw_cancel_requested(struct hpw *h)
{
        return atomic_load(&h->cancel);
}
