/* client: the handle of libhpwarm and its request loop.
 *
 * A handle holds where the server is (URL, token, TLS files), how long a
 * call may take and how it retries, and the last answer: its status, body,
 * problem and message, so a caller can explain a failure after the fact
 * without the library logging.  hpw_request() owns the retry loop and the
 * caller's deadline; the public calls that use it live in client_nodes.c
 * and client_pools.c, which share the handle through handle.h.  Every call
 * starts with hpw_begin_call(), so nothing the last call left describes
 * this one. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "handle.h"
#include "precond.h"

#define HPW_DEFAULT_URL "unix:///run/hpwarmd/api.sock"
#define HPW_DEFAULT_CONNECT_MS 5000
#define HPW_DEFAULT_TOTAL_MS 30000
/* Largest token file read: hpwarmd's own token files (up to 1024 tokens of
 * up to 4 KiB, with comments) are what people will point us at. */
#define HPW_TOKEN_FILE_MAX (64u << 10)

uint64_t hpw_now_ms(void)
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
bool hpw_sleep_unless_cancelled(struct hpw *h, uint64_t ms)
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

        hpw_assert_return(ret, HPW_E_NULL_ARGUMENT);
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
                h->rng = (uint64_t)hpw_now_ms() ^ ((uint64_t)getpid() << 32);
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
void hpw_begin_call(struct hpw *h)
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
enum hpw_error hpw_cancelled(struct hpw *h, const char *what)
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
        hpw_begin_call(h);
        hpw_assert_handle(h);
        h->connect_ms = connect_ms;
        h->total_ms = total_ms;
        return HPW_OK;
}

enum hpw_error hpw_set_token(struct hpw *h, const char *token)
{
        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, !token || (token[0] && !strpbrk(token, "\r\n")), HPW_E_INVALID);
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

        hpw_begin_call(h);
        hpw_assert_handle(h);
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
        hpw_begin_call(h);
        hpw_assert_handle(h);
        if ((ca_file && set_str(&h->ca_file, ca_file)) || (cert_file && set_str(&h->cert_file, cert_file)) ||
            (key_file && set_str(&h->key_file, key_file)))
                return HPW_E_NOMEM;
        return HPW_OK;
}

enum hpw_error hpw_set_retry(struct hpw *h, unsigned max_attempts, uint64_t base_ms, uint64_t cap_ms)
{
        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, max_attempts > 0, HPW_E_INVALID);
        hpw_assert_return_h(h, base_ms > 0, HPW_E_INVALID);
        hpw_assert_return_h(h, cap_ms >= base_ms, HPW_E_INVALID);
        h->retry = (struct hpw_retry_policy){ max_attempts, base_ms, cap_ms };
        return HPW_OK;
}

void hpw_set_log(struct hpw *h, hpw_log_fn fn, void *userdata)
{
        hpw_begin_call(h);
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

void hpw_conn_get(const struct hpw *h, struct hpw_conn *ret)
{
        *ret = (struct hpw_conn){
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
enum hpw_error hpw_request(struct hpw *h, const char *method, const char *path, const char *body,
                           bool idempotent, uint64_t deadline, uint64_t attempt_cap_ms)
{
        struct hpw_conn c;
        enum hpw_error err;
        unsigned attempt = 0;

        hpw_conn_get(h, &c);
        h->attempts = 0;
        for (;;) {
                uint64_t now = hpw_now_ms(), remaining = UINT64_MAX, tmo = 0;
                int64_t delay;

                if (atomic_load(&h->cancel))
                        return hpw_cancelled(h, path);
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
                        return hpw_cancelled(h, path);
                if (err == HPW_E_UNREACHABLE && deadline && hpw_now_ms() >= deadline) {
                        /* The caller's deadline ran out before a connection
                         * was made (a deadline of a few ms, a slow resolver):
                         * that is a timeout, not a server that is not there. */
                        size_t n = strlen(h->message);
                        snprintf(h->message + n, sizeof(h->message) - n, " (the deadline passed first)");
                        return HPW_E_TIMEOUT;
                }
                if (deadline) {
                        now = hpw_now_ms();
                        remaining = now < deadline ? deadline - now : 0;
                }
                delay = hpw_retry_delay_slug(&h->retry, attempt, idempotent, h->last.transport, h->last.status,
                                             h->problem ? h->problem->code : HPW_SLUG_UNKNOWN,
                                             h->last.retry_after_s, remaining, next_rand(h));
                if (delay < 0)
                        return err;
                logf_(h, HPW_LOG_INFO, "%s; retry %u in %lld ms", h->message, attempt,
                      (long long)delay);
                if (!hpw_sleep_unless_cancelled(h, (uint64_t)delay))
                        return hpw_cancelled(h, path);
        }
}

uint64_t hpw_call_deadline(const struct hpw *h)
{
        return h->total_ms ? hpw_now_ms() + h->total_ms : 0;
}

/* ERR is what a hpw_json_*() parser said of the answer in h->last (they all
 * answer HPW_E_PROTOCOL for a missing body); a shape error gets a message. */
enum hpw_error hpw_parsed(struct hpw *h, enum hpw_error err)
{
        if (err == HPW_E_PROTOCOL)
                snprintf(h->message, sizeof(h->message), "answer is not the expected JSON (HTTP %ld)",
                         h->last.status);
        return err;
}

/* ---- for prom.c: placement through Prometheus asks hosts as this handle would ---- */

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

enum hpw_error hpw_misuse(struct hpw *h, const char *fn, const char *rule, enum hpw_error err)
{
        hpw_set_failure(h, "%s: %s does not hold", fn, rule);
        return err;
}

void hpw_set_failure(struct hpw *h, const char *fmt, ...)
{
        va_list ap;

        clear_last(h);
        va_start(ap, fmt);
        vsnprintf(h->message, sizeof(h->message), fmt, ap);
        va_end(ap);
}

bool hpw_cancel_requested(struct hpw *h)
{
        return atomic_load(&h->cancel);
}
