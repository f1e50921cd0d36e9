/* handle.h: the handle (struct hpw) and its request loop, shared by the
 * files that make the public calls.
 *
 * client.c owns the handle: its settings, the last answer it remembers and
 * hpw_request(), the retry loop under the caller's deadline.  The call
 * files (client_nodes.c: host, nodes, stock, fleet; client_pools.c: pools,
 * waits, claims, handoff) build a path and a body, run hpw_request() and
 * hand the answer to a json_answers.c decoder; they read and write the
 * handle's last answer (h->last, h->problem, h->message) and nothing else.
 * Only the cancel flag is touched by another thread (hpw_cancel()). */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

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

/* Monotonic milliseconds. */
uint64_t hpw_now_ms(void);
/* Sleep MS unless H is cancelled first; false when it was. */
bool hpw_sleep_unless_cancelled(struct hpw *h, uint64_t ms);
/* The failure of a call stopped by hpw_cancel() or the progress callback:
 * the last answer forgotten, the message "WHAT: cancelled". */
enum hpw_error hpw_cancelled(struct hpw *h, const char *what);
/* Run one API request with retries until DEADLINE (monotonic ms, 0 = none).
 * ATTEMPT_CAP_MS, if not 0, bounds each attempt (long-polls).  On HPW_OK the
 * answer is in h->last; on failure h->problem and h->message say why. */
enum hpw_error hpw_request(struct hpw *h, const char *method, const char *path, const char *body,
                           bool idempotent, uint64_t deadline, uint64_t attempt_cap_ms);
/* The deadline of one call under the handle's total timeout (0 = none). */
uint64_t hpw_call_deadline(const struct hpw *h);
/* ERR is what a hpw_json_*() parser said of the answer in h->last (they all
 * answer HPW_E_PROTOCOL for a missing body); a shape error gets a message. */
enum hpw_error hpw_parsed(struct hpw *h, enum hpw_error err);
