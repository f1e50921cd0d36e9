/* internal.h: what the library's own files share and nothing else sees.
 *
 * The library is split so that each outside dependency has one owner:
 * http.c alone includes libcurl, json.c alone includes cJSON, retry.c is pure
 * policy (backoff, status mapping) with no I/O so it can be table-tested, and
 * client.c strings them together into the public calls.  Everything here is
 * hidden from the shared library's symbol table (-fvisibility=hidden); the
 * static library still exposes it to our unit tests and the CLI. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpwarm.h"

/* ---- retry.c (pure) ---- */

struct hpw_retry_policy {
        unsigned max_attempts;   /* total attempts, >= 1 */
        uint64_t base_ms;        /* first backoff step */
        uint64_t cap_ms;         /* largest backoff step */
};

/* Exponential backoff with "equal jitter": the step for attempt ATTEMPT
 * (1 = the first retry) is min(cap, base * 2^(attempt-1)); the delay is half
 * of that plus RND modulo the other half, so retries from many clients spread
 * out but never collapse to zero.  Pure. */
uint64_t hpw_backoff_ms(const struct hpw_retry_policy *p, unsigned attempt, uint64_t rnd);

/* Largest Retry-After we honour, in seconds: longer ones are taken as this
 * (a minute is as long as any retry of ours should sleep; the caller's
 * deadline still decides whether to wait at all). */
#define HPW_RETRY_AFTER_MAX_S 60

/* Decide whether to try again after a failed attempt.  ATTEMPTS_DONE >= 1;
 * TRANSPORT is the curl-level outcome (HPW_OK when an HTTP answer came);
 * STATUS the HTTP status; RETRY_AFTER_S the Retry-After header in seconds or
 * -1; REMAINING_MS time left before the caller's deadline (UINT64_MAX = none).
 * Returns the delay in ms before the next attempt, or -1 to give up. */
int64_t hpw_retry_delay(const struct hpw_retry_policy *p, unsigned attempts_done, bool idempotent,
                        enum hpw_error transport, long status, int64_t retry_after_s,
                        uint64_t remaining_ms, uint64_t rnd);

/* Map an HTTP status (and the problem slug, may be NULL) to the public enum.
 * 2xx -> HPW_OK. */
enum hpw_error hpw_status_error(long status, const char *slug);

/* Valid pool name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
bool hpw_name_valid(const char *name);

/* ---- http.c (libcurl) ---- */

/* Bodies we accept from a server: ours are a few KiB, a node list or a long
 * pool list some hundred KiB at most.  A bigger answer is not our API (or is
 * hostile) and is HPW_E_PROTOCOL before it costs us memory. */
#define HPW_MAX_BODY (1u << 20)

struct hpw_conn {
        const char *base_url;    /* "http://host:port" (for unix sockets "http://localhost") */
        const char *socket_path; /* NULL unless unix:// */
        const char *token;       /* NULL = no Authorization header */
        const char *ca_file, *cert_file, *key_file;
        uint64_t connect_ms;
};

struct hpw_http_resp {
        enum hpw_error transport; /* HPW_OK when an HTTP answer came */
        char message[256];        /* curl's reason when transport != HPW_OK */
        long status;
        int64_t retry_after_s;    /* -1 = none */
        char *body;               /* NUL-terminated, malloc'd; NULL if none */
        size_t len;
};
void hpw_http_resp_clear(struct hpw_http_resp *r);

/* A curl result (CURLcode) as the public enum.  CONNECTED: the attempt got
 * a connection (curl's connect time is not 0); a timeout without one is
 * HPW_E_UNREACHABLE (retryable), with one HPW_E_TIMEOUT. */
enum hpw_error hpw_transport_error(int curl_code, bool connected);

/* Split URL into the base URL curl should use and the unix socket path.
 * Accepts http://, https://, unix:///abs/path.  Caller frees both. */
enum hpw_error hpw_url_split(const char *url, char **ret_base, char **ret_socket);

struct hpw_http;
enum hpw_error hpw_http_new(struct hpw_http **ret);
void hpw_http_free(struct hpw_http *x);
/* One attempt.  TIMEOUT_MS 0 = none.  Fills *resp always (transport says how
 * it went); returns HPW_E_NOMEM only for local allocation failure. */
enum hpw_error hpw_http_perform(struct hpw_http *x, const struct hpw_conn *c, const char *method,
                                const char *path, const char *body, uint64_t timeout_ms,
                                struct hpw_http_resp *resp);
/* GET PATH from N hosts at once.  CONNS[i] describes host i.  RESPS is an
 * array of N the caller provides and later clears. */
enum hpw_error hpw_http_multi_get(const struct hpw_conn *conns, size_t n, const char *path,
                                  uint64_t timeout_ms, struct hpw_http_resp *resps);
void hpw_http_global_init(void);
void hpw_http_global_cleanup(void);

/* ---- json.c (cJSON) ---- */

/* Parsers of server answers: HPW_E_PROTOCOL when the body is not the shape
 * the API promises, HPW_E_NOMEM.  Unknown members are ignored (the API may
 * grow); lookups are case-sensitive; the body must be one JSON object with
 * nothing but whitespace after it.  The verbatim body is kept in ->json. */
enum hpw_error hpw_json_health(const char *body, size_t len, struct hpw_health **ret);
enum hpw_error hpw_json_node(const char *body, size_t len, struct hpw_node **ret);
enum hpw_error hpw_json_node_list(const char *body, size_t len, struct hpw_node_list **ret);
enum hpw_error hpw_json_reserve(const char *body, size_t len, struct hpw_reserve_result **ret);
enum hpw_error hpw_json_pool(const char *body, size_t len, struct hpw_pool **ret);
enum hpw_error hpw_json_pool_list(const char *body, size_t len, struct hpw_pool_list **ret);
/* One page of a paged list into *ACC (json.c). */
enum hpw_error hpw_json_pool_list_page(const char *body, size_t len, struct hpw_pool_list **acc,
                                       char **ret_next);
/* GET /v1/handoff: vmm, memory_bytes and a non-empty argv of strings are
 * required; args (qemu, cloud-hypervisor) or xml and namespace (libvirt)
 * too, as strings. */
enum hpw_error hpw_json_handoff(const char *body, size_t len, struct hpw_handoff **ret);
/* GET and PUT /v1/stock: "targets" is an array of objects, each with node,
 * page_size_bytes, size_bytes, count and ready (whole numbers) required;
 * warming, recycling and deficit default to 0. */
enum hpw_error hpw_json_stock(const char *body, size_t len, struct hpw_stock **ret);
/* Most items in any array of an answer (nodes, pools, page sizes); more is
 * HPW_E_PROTOCOL, so a hostile answer cannot make us allocate for it. */
#define HPW_MAX_ITEMS 65536

/* BODY parsed (one object, only whitespace after it) and printed again by
 * cJSON, compact: what may be embedded in a larger JSON document.  NULL if
 * BODY is not such an object or on allocation failure; caller frees. */
char *hpw_json_reprint(const char *body, size_t len);
/* A problem+json body; NULL-safe fields are "" when absent. */
enum hpw_error hpw_json_problem(const char *body, size_t len, struct hpw_problem **ret);
void hpw_problem_free(struct hpw_problem *p);

/* Request bodies; NULL on allocation failure.  Caller frees. */
char *hpw_json_reserve_body(uint64_t count, bool allow_partial);
char *hpw_json_warm_body(const struct hpw_warm_request *req);
/* {"targets":[{"node":..,"page_size":"2M","size_bytes":..,"count":..},...]} */
char *hpw_json_stock_body(const struct hpw_stock_target *t, size_t n);

/* Internal release of member contents (for arrays). */
void hpw_node_clear(struct hpw_node *n);
void hpw_pool_clear(struct hpw_pool *p);
