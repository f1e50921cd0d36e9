/* internal.h: what the library's own files share and nothing else sees.
 *
 * The library is split so that each outside dependency has one owner and
 * calls only point down: http.c alone includes libcurl; the JSON files
 * (json.c's strict reader and request bodies, json_answers.c, prom_json.c,
 * placement_json.c) alone include cJSON; retry.c is pure policy (backoff,
 * status mapping) with no I/O so it can be table-tested; names.c holds the
 * fixed words every layer uses (strerror, page sizes); client.c owns the
 * handle and its request loop, and client_nodes.c and client_pools.c make
 * the public calls on it.  Everything here is hidden from the shared
 * library's symbol table (-fvisibility=hidden); the static library still
 * exposes it to our unit tests and the CLI. */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpwarm.h"
#include "vmm.h"

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

/* As hpw_retry_delay, with the answer's problem slug: a slug the catalog
 * knows decides by its retryable flag (no-hugetlbfs, a 503, is never
 * retried); without a problem or with a slug this library does not know,
 * the status decides (429, 502, 503, 504). */
int64_t hpw_retry_delay_slug(const struct hpw_retry_policy *p, unsigned attempts_done, bool idempotent,
                             enum hpw_error transport, long status, enum hpw_slug slug,
                             int64_t retry_after_s, uint64_t remaining_ms, uint64_t rnd);

/* Map an HTTP status (and the problem slug, may be NULL) to the public enum.
 * 2xx -> HPW_OK. */
enum hpw_error hpw_status_error(long status, const char *slug);

/* The smallest request structs this library takes: their first version's
 * size (up to and including the last member of 0.1).  A caller built against
 * a later header passes a larger size; the library reads what it knows. */
#define HPW_END_OF(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))
#define HPW_WARM_REQUEST_V1_SIZE HPW_END_OF(struct hpw_warm_request, reserve)
#define HPW_STOCK_TARGET_V1_SIZE HPW_END_OF(struct hpw_stock_target, deficit)

/* Valid pool name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
bool hpw_name_valid(const char *name);

/* ---- vmm.c: the VMM formats, common/vmm_formats.def's rows ---- */

struct hpw_vmm {
        const char *name;             /* what hpw_handoff() and --vmm take, and answers say */
        const char *key;              /* the pool object's "handoff" member */
        const char *alias;            /* another word --vmm takes, or NULL */
        enum hpw_vmm_output output;   /* shell words ("args") or an XML fragment ("xml") */
        const char *as_refused;       /* NULL when --as is composed, else why not (the CLI's words) */
};
/* The table, in common/vmm_formats.def's order.  Nothing else is in vmm.c,
 * so a test build can link its own copy with rows added. */
extern const struct hpw_vmm hpw_vmms[];
extern const size_t hpw_n_vmms;

/* A pool's texts, one per row of hpw_vmms[] (those of the first N rows
 * read; hpw_pool_handoff() reads them). */
struct hpw_pool_handoffs {
        size_t n;
        char *text[];
};

/* The row NAME names exactly (ALIAS_OK: or by its alias), or NULL
 * (names.c). */
const struct hpw_vmm *hpw_vmm_find(const char *name, bool alias_ok);
/* The names as a person reads them, joined by SEP and the last by LAST
 * ("qemu, cloud-hypervisor or libvirt"); TAKES_AS: only the rows that
 * compose --as. */
void hpw_vmm_names(char *buf, size_t len, const char *sep, const char *last, bool takes_as);

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
        atomic_bool *cancel;     /* set: stop the transfer (hpw_cancel); NULL = never */
        /* Other services (Placement, Keystone: placement.c, keystone.c):
         * extra request header lines ("Name: value"), NULL-terminated, sent
         * as they are (they may carry a token: they are the caller's to wipe);
         * and the name of one answer header to keep in resp->header. */
        const char *const *headers;
        const char *want_header;
};

struct hpw_http_resp {
        enum hpw_error transport; /* HPW_OK when an HTTP answer came */
        char message[256];        /* curl's reason when transport != HPW_OK */
        long status;
        int64_t retry_after_s;    /* -1 = none */
        char *body;               /* NUL-terminated, malloc'd; NULL if none */
        size_t len;
        char *header;             /* conn->want_header's value, malloc'd; NULL if none
                                     (wiped when cleared: it may be a token) */
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

/* ---- json.c, json_answers.c (cJSON); destructors in json_free.c ---- */
/* BODY (LEN bytes) as one JSON object with nothing after it but
 * whitespace, or NULL: the strict top level every reader here starts from
 * (json.c, placement_json.c).  The caller frees it with cJSON_Delete. */
struct cJSON;
struct cJSON *hpw_json_parse_object(const char *body, size_t len);

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
/* One page of a paged list into *ACC (json_answers.c). */
enum hpw_error hpw_json_pool_list_page(const char *body, size_t len, struct hpw_pool_list **acc,
                                       char **ret_next);
/* GET /v1/handoff: vmm (a row of the table), memory_bytes and a non-empty
 * argv of strings are required; args (a shell format) or xml and namespace
 * (an XML format) too, as strings. */
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
char *hpw_json_elastic_body(const struct hpw_elastic_policy *p);
enum hpw_error hpw_json_elastic(const char *body, size_t len, struct hpw_elastic **ret);
char *hpw_json_warm_body(const struct hpw_warm_request *req);
/* {"targets":[{"node":..,"page_size":"2M","size_bytes":..,"count":..},...]} */
char *hpw_json_stock_body(const struct hpw_stock_target *const *t, size_t n);

/* Internal release of member contents, the item itself kept (for arrays
 * and the decoders' failure paths; json_free.c). */
void hpw_node_clear(struct hpw_node *n);
void hpw_pool_clear(struct hpw_pool *p);
void hpw_health_clear(struct hpw_health *x);
void hpw_handoff_clear(struct hpw_handoff *x);

/* ---- Prometheus placement (prom.c; its answers parsed in prom_json.c) ---- */

/* One sample of prom.c's placement query: the host label's value, the
 * query's "hpw_kind" label ("stock" or "free"), numa_node and
 * page_size_bytes, and the value (bytes) as a whole number. */
struct hpw_prom_sample {
        char *host;
        char *kind;
        int node;
        uint64_t page_size;
        uint64_t value;
};
void hpw_prom_samples_free(struct hpw_prom_sample *s, size_t n);
/* A Prometheus /api/v1/query answer of resultType "vector".  Samples
 * without HOST_LABEL, hpw_kind, a numeric numa_node and page_size_bytes or
 * with a value that is not a whole non-negative number are skipped and
 * counted in *RET_SKIPPED.  HPW_E_BAD_REQUEST when Prometheus answered
 * status "error" (ERRBUF says its errorType and error), HPW_E_PROTOCOL for
 * any other shape. */
enum hpw_error hpw_json_prom_vector(const char *body, size_t len, const char *host_label,
                                    struct hpw_prom_sample **ret, size_t *ret_n, size_t *ret_skipped,
                                    char *errbuf, size_t errlen);

/* Pure parts of prom.c, for its table tests. */
/* The placement query (see hpw_prom_place); NULL on allocation failure.
 * HOST_LABEL must be a valid Prometheus label name. */
char *hpw_prom_query(const char *host_label, uint64_t size, uint64_t page_size, unsigned max_age_s,
                     unsigned limit);
/* TEMPLATE with "{LABEL}" replaced by VALUE into BUF; -EINVAL when VALUE
 * is not HOST or HOST:PORT (letters, digits, '.', '-', '_', ':', '[', ']')
 * or TEMPLATE lacks the placeholder, -ENAMETOOLONG when it does not fit. */
int hpw_prom_url(const char *tmpl, const char *label, const char *value, char *buf, size_t len);
/* Valid Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*, not starting "__". */
bool hpw_prom_label_valid(const char *s);
/* S percent-encoded for a URL query (unreserved characters kept); caller
 * frees; NULL on allocation failure. */
char *hpw_prom_escape(const char *s);

/* ---- client.c, for prom.c: the handle's settings ---- */

/* H's connection settings (target, token, TLS) and total timeout. */
void hpw_conn_get(const struct hpw *h, struct hpw_conn *ret);
uint64_t hpw_total_timeout_ms(const struct hpw *h);
/* A new handle for URL with H's token, TLS files, timeouts, retry policy
 * and log callback. */
enum hpw_error hpw_clone_for(const struct hpw *h, const char *url, struct hpw **ret);
/* What every public call does first (forget the last call, a cancel meant
 * for it included), and whether hpw_cancel() was called since. */
void hpw_begin_call(struct hpw *h);
bool hpw_cancel_requested(struct hpw *h);
/* Forget H's last answer and make MSG what hpw_last_message() says. */
void hpw_set_failure(struct hpw *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- OpenStack (placement.c, keystone.c; their bodies in placement_json.c) ---- */

/* Resource classes one provider holds at most: one per page size its
 * node has (offer.h's OFFER_MAX_SIZES; placement.c checks they agree). */
#define HPW_PL_MAX_CLASSES 8

/* One class's inventory as Placement holds it. */
struct hpw_pl_inv {
        bool present;
        uint32_t total, reserved;
};
/* The first provider of a GET /resource_providers answer: *RET_FOUND false
 * when the list is empty.  HPW_E_PROTOCOL for any other shape. */
enum hpw_error hpw_pj_provider(const char *body, size_t len, bool *ret_found, char **ret_uuid,
                               uint32_t *ret_generation);
/* GET /resource_providers/{uuid}/inventories: the generation, INV[i] for
 * the N classes NAMES[i] (N at most HPW_PL_MAX_CLASSES), and *RET_OTHERS:
 * the inventories object without them, printed (classes someone else put
 * on the provider; "{}" when none), so a write keeps them.  Caller frees
 * *RET_OTHERS. */
enum hpw_error hpw_pj_inventories(const char *body, size_t len, const char *const *names, size_t n,
                                  uint32_t *ret_generation, struct hpw_pl_inv *inv, char **ret_others);
/* GET /resource_providers/{uuid}/usages: USED[i] for the N classes
 * NAMES[i] (0 when absent). */
enum hpw_error hpw_pj_usages(const char *body, size_t len, const char *const *names, size_t n, uint32_t *used);
/* The first error code of a Placement error body ("placement.concurrent_update")
 * into BUF; "" when there is none. */
void hpw_pj_error(const char *body, size_t len, char *code, size_t codelen, char *detail, size_t detlen);
/* PUT /resource_providers/{uuid}/inventories: GENERATION, OTHERS (as
 * hpw_pj_inventories printed them; NULL = none) and of the N classes
 * NAMES[i] those INV[i] has present (min_unit 1, max_unit total, step 1,
 * ratio 1.0).  NULL on allocation failure or OTHERS not an object. */
char *hpw_pj_inventories_body(uint32_t generation, const char *others, const char *const *names, size_t n,
                              const struct hpw_pl_inv *inv);
/* POST /resource_providers {"name":NAME,"parent_provider_uuid":PARENT}. */
char *hpw_pj_provider_body(const char *name, const char *parent_uuid);

/* Keystone v3: POST /v3/auth/tokens.  The body for password or
 * application-credential auth (scoped to the project for a password). */
char *hpw_pj_keystone_body(const struct hpw_openstack_auth *a);
/* The token answer: its expiry (unix seconds; 0 when absent) and, when
 * WANT_TYPE is given, the URL of the catalog's first endpoint of that
 * service type on INTERFACE (and REGION when not NULL), NULL when none. */
enum hpw_error hpw_pj_keystone_token(const char *body, size_t len, const char *want_type, const char *interface,
                                     const char *region, int64_t *ret_expires, char **ret_url);

/* keystone.c: a token for A.  *RET_TOKEN (wipe before freeing) and its
 * expiry; *RET_URL the catalog's placement endpoint (NULL when none).
 * Failures are described with hpw_set_failure on H (never the secret). */
enum hpw_error hpw_keystone_token(struct hpw *h, const struct hpw_openstack_auth *a, char **ret_token,
                                  int64_t *ret_expires, char **ret_url);
/* An RFC 3339 UTC time ("2026-12-01T21:09:00.000000Z") as unix seconds; -1 if not one. */
int64_t hpw_pj_time(const char *s);
