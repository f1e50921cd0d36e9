/* hpwarm.h: the C client of hpwarmd, the hugepage pool warming service.
 *
 * One opaque handle (struct hpw) holds a target URL and its options; each call
 * is one API operation, synchronous, bounded by the handle's total timeout
 * (the caller's deadline, which also bounds every retry).  Results come back
 * as plain C structs.
 *
 * Ownership, once for the whole header: every object a call returns through a
 * `**ret` or `*ret` out-parameter belongs to the caller and is released with
 * the matching hpw_*_free() function (all of them accept NULL).  Strings inside
 * a result belong to that result.  Pointers returned by hpw_last_problem(),
 * hpw_last_message() and hpw_strerror() belong to the library: the first two
 * stay valid until the next call on the same handle, hpw_strerror()'s forever.
 * Out-parameters are written only when the call succeeds, except where a
 * function says otherwise (hpw_wait).
 *
 * Errors: every call returns an enum hpw_error; the values only ever grow and
 * never change meaning.  After a failed call that got an answer from the
 * server, hpw_last_problem() gives its RFC 9457 problem detail.
 *
 * Fresh error state: every call that takes a handle (setters included)
 * clears the handle's last status, problem, body and message on entry, also
 * when it then refuses its arguments, so what hpw_last_*() report is always
 * about the latest call.
 *
 * Threads: a handle is used by one thread at a time (one handle per thread,
 * or a shared handle behind the caller's own lock); separate handles are
 * independent.  The one exception is hpw_cancel(), which any thread may call
 * on a handle another thread is using.  The library never logs;
 * hpw_set_log() installs a callback.
 *
 * ABI: the library's soname is libhpwarm.so.HPW_SOVERSION and every symbol
 * carries the version node HPWARM_0.1.  Structs grow only at their end, and
 * only where the library or a size field knows how big they are:
 *  - results are allocated by the library and reached through pointers
 *    (lists are arrays of pointers, never arrays of structs), so a later
 *    library may append members without breaking callers built today;
 *  - requests the caller fills (struct hpw_warm_request, struct
 *    hpw_stock_target given to hpw_stock_set) begin with `size`, set to
 *    sizeof() by the HPW_*_INIT macros; the library reads only the members
 *    that size covers and defaults the rest.
 * Size-prefixed structs rather than opaque handles with accessors: callers
 * keep plain structs with designated initializers and direct reads (no
 * forty getters), and the growth rule is one integer the library checks.
 *
 * Targets: what the CLI's --url takes: "http://host:port",
 * "https://host:port", "unix:///path/to.sock", "unix:/path/to.sock",
 * "/path/to.sock" (a unix socket) and "host:port" (http://host:port).
 * The library always connects to the target itself: proxies named in the
 * environment (http_proxy, https_proxy, all_proxy) are ignored, so the bearer
 * token goes to hpwarmd and nowhere else.
 */
#ifndef HPWARM_H
#define HPWARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(HPW_BUILDING) && defined(__GNUC__)
#define HPW_EXPORT __attribute__((visibility("default")))
#else
#define HPW_EXPORT
#endif

/* The version this header belongs to.  HPW_VERSION_NUM is
 * MAJOR << 16 | MINOR << 8 | PATCH, so versions compare as integers:
 * `hpw_version_num() >= HPW_VERSION_NUM` at run time says the library
 * loaded is at least the one the caller was built against. */
#define HPW_VERSION_MAJOR 0
#define HPW_VERSION_MINOR 1
#define HPW_VERSION_PATCH 0
#define HPW_VERSION_NUM ((HPW_VERSION_MAJOR << 16) | (HPW_VERSION_MINOR << 8) | HPW_VERSION_PATCH)
/* The soname's number: it changes with every incompatible ABI change. */
#define HPW_SOVERSION 0

/* The problem slugs of hpwarmd's catalog (enum hpw_slug, HPW_SLUG_*),
 * generated from the installed problems.json. */
#include "hpwarm_problems.h"

/* Stable error codes.  New ones are only ever appended. */
enum hpw_error {
        HPW_OK = 0,
        HPW_E_INVALID = 1,        /* bad argument to a library call */
        HPW_E_NOMEM = 2,
        HPW_E_IO = 3,             /* reading a local file (token) failed */
        HPW_E_UNREACHABLE = 4,    /* could not connect: refused, no route, DNS, no socket */
        HPW_E_TIMEOUT = 5,        /* the deadline passed */
        HPW_E_TLS = 6,            /* TLS handshake or certificate problem */
        HPW_E_PROTOCOL = 7,       /* the answer was not what the API promises */
        HPW_E_BAD_REQUEST = 8,    /* 400, 405, 413, 415, 422 */
        HPW_E_UNAUTHORIZED = 9,   /* 401 */
        HPW_E_FORBIDDEN = 10,     /* 403 */
        HPW_E_NOT_FOUND = 11,     /* 404 */
        HPW_E_CONFLICT = 12,      /* 409 (other than insufficient hugepages) */
        HPW_E_INSUFFICIENT = 13,  /* 409 insufficient-hugepages/-memory, reserve-shortfall */
        HPW_E_RATE_LIMITED = 14,  /* 429 after retries ran out */
        HPW_E_UNAVAILABLE = 15,   /* 502/503/504 after retries ran out */
        HPW_E_SERVER = 16,        /* other 5xx */
        HPW_E_POOL_FAILED = 17,   /* hpw_wait: the pool ended failed or cancelled */
        HPW_E_HTTP = 18,          /* any other unexpected HTTP status */
        HPW_E_CANCELLED = 19,     /* hpw_cancel() or the progress callback stopped the call */
        /* Misuse of a call, answered before anything is sent (see "Misuse"
         * below; libraries before these values answered HPW_E_INVALID): */
        HPW_E_NULL_HANDLE = 20,   /* the handle is NULL */
        HPW_E_NULL_ARGUMENT = 21, /* a pointer the call needs is NULL */
        HPW_E_STRUCT_SIZE = 22,   /* a request's size member is below its first version's */
};

/* Misuse: every call checks its stated preconditions first and answers a
 * broken one at once, with nothing sent and no out-parameter written:
 * HPW_E_NULL_HANDLE for a NULL handle, HPW_E_NULL_ARGUMENT for a NULL
 * out-parameter, request, name or list (or a NULL item of a list),
 * HPW_E_STRUCT_SIZE for a size-prefixed request whose size member was not
 * set with its HPW_*_INIT macro, and HPW_E_INVALID for a value the call does
 * not take (a name that is not [A-Za-z0-9][A-Za-z0-9._-]{0,63}, a negative
 * node, a zero size, a count over its limit).  hpw_last_message() then
 * names the call and the rule ("hpw_warm: req->node >= 0 does not hold").
 * Rules are checked handle first, then the out-parameter, then the other
 * arguments left to right.
 * Destructors (hpw_*_free) and hpw_cancel() take NULL as a no-op.
 * hpw_error_is_misuse() tells all four from the errors of a call that ran. */
static inline bool hpw_error_is_misuse(enum hpw_error err)
{
        return err == HPW_E_INVALID || err == HPW_E_NULL_HANDLE || err == HPW_E_NULL_ARGUMENT ||
               err == HPW_E_STRUCT_SIZE;
}

/* A static English description; never NULL, also for unknown values. */
HPW_EXPORT const char *hpw_strerror(enum hpw_error err);

/* RFC 9457 problem detail from the server. */
struct hpw_problem {
        char *type;               /* e.g. "urn:hpwarm:problem:insufficient-hugepages" */
        char *slug;               /* the part after the last ':' ("insufficient-hugepages") */
        char *title;
        int status;
        char *detail;
        uint64_t requested, achieved; /* reserve shortfall extension, 0 if absent */
        /* insufficient-memory (the node's memory floor) extension, 0 if
         * absent: the floor, and the largest page count that fits above it. */
        uint64_t memory_floor_bytes, max_count;
        /* The slug as the catalog's enum: HPW_SLUG_UNKNOWN for a slug this
         * library does not know (a newer daemon) or no slug at all. */
        enum hpw_slug code;
};

/* The catalog, for callers that branch on a problem without strcmp.  NAME
 * "insufficient-hugepages" <-> HPW_SLUG_INSUFFICIENT_HUGEPAGES; unknown
 * names give HPW_SLUG_UNKNOWN, unknown values "" and status 0.
 * hpw_slug_retryable(): the catalog says trying the same request later may
 * succeed (busy, stopping, too-many-waits, ...); permanent refusals such as
 * no-hugetlbfs are not, and the library never retries them. */
HPW_EXPORT enum hpw_slug hpw_slug_from_name(const char *name);
HPW_EXPORT const char *hpw_slug_name(enum hpw_slug s);
HPW_EXPORT int hpw_slug_status(enum hpw_slug s);
HPW_EXPORT bool hpw_slug_retryable(enum hpw_slug s);

struct hpw;

/* Create a handle for URL (NULL = "unix:///run/hpwarmd/api.sock"; the
 * spellings under "Targets" above).  Defaults: connect timeout 5 s, total
 * timeout 30 s, no token, system CAs.  HPW_E_INVALID for any other URL. */
HPW_EXPORT enum hpw_error hpw_new(const char *url, struct hpw **ret);
HPW_EXPORT void hpw_free(struct hpw *h);

/* Timeouts in milliseconds.  TOTAL bounds a whole call including retries;
 * 0 means no limit.  CONNECT bounds each connection attempt (0 = curl default). */
HPW_EXPORT enum hpw_error hpw_set_timeouts(struct hpw *h, uint64_t connect_ms, uint64_t total_ms);
/* Read a bearer token from PATH, in hpwarmd's token-file format: blank lines
 * and lines starting with '#' are skipped, the first other line (trimmed) is
 * the token, one word of visible ASCII.  NULL removes it.  HPW_E_IO if the
 * file cannot be read, is over 64 KiB or holds no such token;
 * hpw_last_message() then says which. */
HPW_EXPORT enum hpw_error hpw_set_token_file(struct hpw *h, const char *path);
/* Bearer token given directly; NULL removes it. */
HPW_EXPORT enum hpw_error hpw_set_token(struct hpw *h, const char *token);
/* TLS: CA bundle to verify the server with, client certificate and key (PEM)
 * for mutual TLS.  NULL keeps the default (system CAs / no client cert). */
HPW_EXPORT enum hpw_error hpw_set_tls(struct hpw *h, const char *ca_file, const char *cert_file,
                                      const char *key_file);
/* Retries of idempotent calls: at most MAX_ATTEMPTS attempts in total (1 = no
 * retry; default 6), backoff starting at BASE_MS (default 100) doubling up to
 * CAP_MS (default 5000), with jitter, never past the deadline. */
HPW_EXPORT enum hpw_error hpw_set_retry(struct hpw *h, unsigned max_attempts, uint64_t base_ms,
                                        uint64_t cap_ms);

enum hpw_log_level { HPW_LOG_DEBUG = 0, HPW_LOG_INFO = 1, HPW_LOG_WARNING = 2 };
typedef void (*hpw_log_fn)(enum hpw_log_level level, const char *msg, void *userdata);
/* Install a log callback (NULL = silent, the default). */
HPW_EXPORT void hpw_set_log(struct hpw *h, hpw_log_fn fn, void *userdata);

/* Stop the call in progress on H, from any thread (the one call that may be
 * made while another thread uses H; it only sets a flag).  The call returns
 * HPW_E_CANCELLED soon after: at once between attempts or long-polls,
 * within about a second (libcurl's progress interval) while a request is in
 * flight, whose connection is then closed, so the next call on H starts on a
 * fresh one.  A call that starts after hpw_cancel() returned is not
 * affected: each call clears the flag on entry. */
HPW_EXPORT void hpw_cancel(struct hpw *h);

/* The problem detail of the last failed call, or NULL when the server sent
 * none (e.g. connection failure). */
HPW_EXPORT const struct hpw_problem *hpw_last_problem(const struct hpw *h);
/* A one-line human description of the last failure (curl's message, the
 * problem's title/detail, or why hpw_set_token_file refused a file), "" after
 * success. */
HPW_EXPORT const char *hpw_last_message(const struct hpw *h);
/* HTTP status of the last answer, 0 if none. */
HPW_EXPORT int hpw_last_status(const struct hpw *h);
/* The last problem's slug as the catalog's enum; HPW_SLUG_UNKNOWN when
 * there was no problem or the slug is not in this library's catalog. */
HPW_EXPORT enum hpw_slug hpw_last_slug(const struct hpw *h);
/* Raw body of the last answer (the server's JSON), "" if none. */
HPW_EXPORT const char *hpw_last_body(const struct hpw *h);

/* ---- results ---- */

struct hpw_health {
        char *status;             /* "ok" */
        char *version;
        char *json;               /* the server's JSON, verbatim */
};
HPW_EXPORT void hpw_health_free(struct hpw_health *x);

struct hpw_hugepages {
        uint64_t page_size_bytes;
        uint64_t total, free, surplus; /* pages */
        uint64_t warm, warming;        /* pages in ready / warming pools */
        /* Pages a new pool can get now: free minus what warming pools still
         * need and pages reserved by mappings not yet faulted.  A daemon that
         * does not report it (older versions): equal to free, and
         * available_reported false. */
        uint64_t available;
        bool available_reported;
        /* An elastic pool (its policy's bounds, pages); false for a static
         * one and on daemons that do not report it.  runtime_growth:
         * "reliable", "best-effort", or "" when not reported. */
        bool elastic;
        uint64_t elastic_min, elastic_max, elastic_headroom, elastic_idle_seconds;
        char runtime_growth[16];
};

struct hpw_node {
        int id;
        char *cpus;               /* cpulist, e.g. "0-3,8" ("" for memory-only) */
        unsigned cpu_count;
        uint64_t memory_total_bytes, memory_free_bytes;
        size_t n_hugepages;
        struct hpw_hugepages **hugepages; /* N_HUGEPAGES pointers */
        char *json;
        /* The daemon runs with --fixed-hugepages: it changes no hugepage
         * count on this host (reserve grows nothing; hpw_reserve and
         * hpw_set_elastic are refused, slug HPW_SLUG_HUGEPAGES_FIXED).
         * false on daemons that do not report it. */
        bool hugepages_fixed;
};
HPW_EXPORT void hpw_node_free(struct hpw_node *x);

struct hpw_node_list {
        size_t n;
        struct hpw_node **nodes;  /* N pointers; their json members are NULL */
        char *json;
};
HPW_EXPORT void hpw_node_list_free(struct hpw_node_list *x);

struct hpw_reserve_result {
        int node;
        uint64_t page_size_bytes;
        uint64_t requested, total, free;
        bool complete;            /* false: fewer pages than asked (allow_partial) */
        char *json;
};
HPW_EXPORT void hpw_reserve_result_free(struct hpw_reserve_result *x);

/* An elastic policy (pages, seconds): the node's pool grows on demand up to
 * max and gives back free pages beyond headroom idle for idle_seconds,
 * never below min. */
struct hpw_elastic_policy {
        uint64_t min, max, headroom, idle_seconds;
        bool allow_best_effort;   /* accept gigantic pages without CMA */
};
struct hpw_elastic {
        int node;
        uint64_t page_size_bytes;
        struct hpw_elastic_policy policy;
        char runtime_growth[16];  /* "reliable" or "best-effort" */
        uint64_t grown_pages, returned_pages;
        char *json;
};
HPW_EXPORT void hpw_elastic_free(struct hpw_elastic *x);

enum hpw_pool_state {
        HPW_POOL_UNKNOWN = 0,     /* a state this library does not know */
        HPW_POOL_WARMING = 1,
        HPW_POOL_READY = 2,
        HPW_POOL_FAILED = 3,
        HPW_POOL_CANCELLED = 4,
};
HPW_EXPORT const char *hpw_pool_state_name(enum hpw_pool_state s);

struct hpw_pool_handoffs;

struct hpw_pool {
        char *name;
        int node;
        uint64_t page_size_bytes;
        uint64_t size_bytes;
        enum hpw_pool_state state;
        char *state_name;         /* as the server spelled it */
        uint64_t bytes_done;
        double rate_bytes_per_second;
        unsigned threads;
        int64_t started_at;       /* unix seconds, 0 = unknown */
        int64_t finished_at;      /* unix seconds, 0 = not finished */
        double elapsed_seconds;
        struct hpw_problem *error; /* NULL unless failed */
        char *path;               /* pool file; "" if none */
        bool placement_verified;
        uint64_t pages_off_node;
        bool claimed;
        int64_t expires_at;       /* unix seconds, 0 = none */
        char *handoff_qemu;       /* complete words for a one-node guest on this pool; "" if not offered */
        char *handoff_cloud_hypervisor;
        char *json;               /* NULL for members of a list */
        /* Whether the pool came out of the daemon's stock: "full" (a ready
         * stock file renamed into place: ready at once), "partial" (a smaller
         * stock file grown; only the new part warms), "none", or "" when the
         * server does not say (a daemon without stock). */
        char *from_stock;
        uint64_t ttl_seconds;     /* the pool's TTL after it turned ready, 0 = none */
        int owner_pid;            /* the VMM process named by hpw_claim_pid, 0 = none */
        int64_t unmapped_since;   /* unix seconds since a claimed pool's file has been mapped by
                                     no process, 0 = mapped, unclaimed or not reported */
        char *label;              /* the pool's label, "" = none or not reported */
        bool file_owned;          /* the file is FILE_UID:FILE_GID's, mode 0600 */
        uint32_t file_uid, file_gid;
        /* Every VMM format's text for this pool, the library's own layout:
         * read it with hpw_pool_handoff() (since 0.4). */
        struct hpw_pool_handoffs *handoffs;
};
HPW_EXPORT void hpw_pool_free(struct hpw_pool *x);

/* The text that hands pool P alone to VMM ("qemu", "cloud-hypervisor",
 * "libvirt", or any format the library knows; see hpw_handoff()): the
 * words, shell-quoted, or for libvirt the <qemu:commandline> fragment.  ""
 * when the pool offers none (no file, or the daemon does not compose that
 * format); NULL when P is NULL or VMM is no format this library knows.  The
 * string belongs to P (valid until it is freed).  handoff_qemu and
 * handoff_cloud_hypervisor hold the same texts as
 * hpw_pool_handoff(P, "qemu") and hpw_pool_handoff(P, "cloud-hypervisor").
 * Since 0.4. */
HPW_EXPORT const char *hpw_pool_handoff(const struct hpw_pool *p, const char *vmm);

struct hpw_pool_list {
        size_t n;
        struct hpw_pool **pools;  /* N pointers */
        char *json;
};
HPW_EXPORT void hpw_pool_list_free(struct hpw_pool_list *x);

/* ---- calls ---- */

HPW_EXPORT enum hpw_error hpw_health(struct hpw *h, struct hpw_health **ret);
HPW_EXPORT enum hpw_error hpw_nodes(struct hpw *h, struct hpw_node_list **ret);
HPW_EXPORT enum hpw_error hpw_node(struct hpw *h, int node, struct hpw_node **ret);

/* Set NODE's persistent pool of PAGE_SIZE pages to COUNT pages.  A shortfall
 * without ALLOW_PARTIAL is HPW_E_INSUFFICIENT (problem carries requested and
 * achieved); with it, HPW_OK and (*ret)->complete == false. */
HPW_EXPORT enum hpw_error hpw_reserve(struct hpw *h, int node, uint64_t page_size, uint64_t count,
                                      bool allow_partial, struct hpw_reserve_result **ret);

/* PUT /v1/nodes/NODE/hugepages/SIZE/policy: make the pool elastic.  A bad
 * policy is HPW_E_INVALID (422), one that does not fit (memory floor,
 * gigantic pages without CMA) HPW_E_INSUFFICIENT or a conflict (409); the
 * problem says why. */
HPW_EXPORT enum hpw_error hpw_set_elastic(struct hpw *h, int node, uint64_t page_size,
                                          const struct hpw_elastic_policy *policy, struct hpw_elastic **ret);

HPW_EXPORT enum hpw_error hpw_pools(struct hpw *h, struct hpw_pool_list **ret);
HPW_EXPORT enum hpw_error hpw_pool(struct hpw *h, const char *name, struct hpw_pool **ret);

struct hpw_warm_request {
        size_t size;              /* sizeof(struct hpw_warm_request): use HPW_WARM_REQUEST_INIT */
        int node;
        uint64_t size_bytes;
        uint64_t page_size;       /* bytes; 0 = server default */
        unsigned threads;         /* 0 = server default */
        uint64_t ttl_seconds;     /* 0 = none */
        bool reserve;             /* grow the node's pool first if short */
        /* Whom the pool is for ([A-Za-z0-9][A-Za-z0-9:._-]{0,127}), NULL or
         * "" = none: a later warm of the pool with another label is refused
         * (HPW_E_CONFLICT).  Read only when SIZE covers it (added in 0.2). */
        const char *label;
        /* With FILE_OWNED: the pool's file is handed out owned by
         * FILE_UID:FILE_GID, mode 0600 (one VMM's user alone may open it);
         * else it is in the daemon's pool group.  Added in 0.2, like label. */
        bool file_owned;
        uint32_t file_uid, file_gid;
};
/* struct hpw_warm_request r = HPW_WARM_REQUEST_INIT; then set members. */
#define HPW_WARM_REQUEST_INIT { .size = sizeof(struct hpw_warm_request) }
/* Create (or find identical) pool NAME and start warming it.  *ret_created
 * (may be NULL) tells 201 from 200.  HPW_E_STRUCT_SIZE when REQ->size is
 * smaller than the first version of the struct (a caller that did not set
 * it); HPW_E_INVALID for a negative node or a size of 0. */
HPW_EXPORT enum hpw_error hpw_warm(struct hpw *h, const char *name, const struct hpw_warm_request *req,
                                   struct hpw_pool **ret, bool *ret_created);

/* Called by hpw_wait after each answer, e.g. to draw progress.  Return 0 to
 * go on waiting, anything else to stop: hpw_wait then returns
 * HPW_E_CANCELLED with *ret the pool just seen. */
typedef int (*hpw_progress_fn)(const struct hpw_pool *pool, void *userdata);
/* Long-poll until NAME is no longer warming or TIMEOUT_MS passes (0 = no
 * limit; the handle's total timeout does not apply).  With PROGRESS set the
 * server is asked about once a second, else at most every 30 s.
 * Returns HPW_OK (ready), HPW_E_POOL_FAILED (failed or cancelled; the problem
 * is the pool's error), HPW_E_TIMEOUT, HPW_E_PROTOCOL for a state this
 * library does not know (HPW_POOL_UNKNOWN), HPW_E_CANCELLED (the progress
 * callback or hpw_cancel() stopped it), or a request error.  *ret receives
 * the last pool seen on HPW_OK and HPW_E_POOL_FAILED, and on HPW_E_TIMEOUT
 * and HPW_E_CANCELLED when any answer came first; otherwise it is left
 * alone.  A deadline or cancel in the middle of a long-poll closes that
 * connection: the next call on H does not inherit it. */
HPW_EXPORT enum hpw_error hpw_wait(struct hpw *h, const char *name, uint64_t timeout_ms,
                                   hpw_progress_fn progress, void *userdata, struct hpw_pool **ret);

/* Mark the pool taken by a VM.  Retried like a GET: claiming a pool again
 * answers it unchanged (the API makes a claim idempotent). */
HPW_EXPORT enum hpw_error hpw_claim(struct hpw *h, const char *name, struct hpw_pool **ret);
/* As hpw_claim, naming PID (> 0) as the VMM process that maps the pool: the
 * daemon releases the pool when that process exits.  Sends {"pid":PID}.
 * HPW_E_INVALID for PID <= 0; a server that knows no such process answers
 * 422 (HPW_E_BAD_REQUEST).  Retried like hpw_claim: the same pid again
 * is the same claim. */
HPW_EXPORT enum hpw_error hpw_claim_pid(struct hpw *h, const char *name, int pid, struct hpw_pool **ret);
/* Cancel and delete the pool; its pages return to the node's free pool.
 * HPW_E_NOT_FOUND if there is no such pool, except when the DELETE was
 * retried: a 404 then means an earlier attempt did it, and is HPW_OK. */
HPW_EXPORT enum hpw_error hpw_release(struct hpw *h, const char *name);

/* ---- stock: warm files the daemon keeps ready ahead of requests ---- */

/* Most targets one hpw_stock_set() sends (the server's limit too). */
#define HPW_STOCK_MAX_TARGETS 64

/* One stock target: keep COUNT ready files of SIZE_BYTES on NODE in
 * PAGE_SIZE_BYTES pages.  A PUT /v1/pools of exactly that node, page size
 * and size is then answered ready at once (hpw_pool.from_stock "full").
 * The counters are what the daemon reports; hpw_stock_set() ignores them. */
struct hpw_stock_target {
        size_t size;              /* sizeof(struct hpw_stock_target): use HPW_STOCK_TARGET_INIT */
        int node;
        uint64_t page_size_bytes;
        uint64_t size_bytes;
        uint64_t count;           /* files wanted */
        uint64_t ready;           /* files ready to hand out */
        uint64_t warming;         /* files being filled */
        uint64_t recycling;       /* released pools being zeroed for the stock */
        uint64_t deficit;         /* files still missing */
};
#define HPW_STOCK_TARGET_INIT { .size = sizeof(struct hpw_stock_target) }

struct hpw_stock {
        size_t n;
        struct hpw_stock_target **targets; /* N pointers, in the server's order */
        char *json;
        /* Added in 0.3 (the library allocates this struct, so older callers
         * never see the difference): the daemon's change generation this
         * document shows, which moves whenever the stock or the pools can
         * have changed; HAS_GENERATION is false from a daemon that does not
         * say (older than the generation), GENERATION then 0. */
        uint64_t generation;
        bool has_generation;
};
HPW_EXPORT void hpw_stock_free(struct hpw_stock *x);

/* GET /v1/stock: every target with its counts.  A daemon without stock
 * answers 404 (HPW_E_NOT_FOUND). */
HPW_EXPORT enum hpw_error hpw_stock_get(struct hpw *h, struct hpw_stock **ret);
/* Longest TIMEOUT_S of hpw_stock_wait_change (the server's limit). */
#define HPW_STOCK_WAIT_MAX_S 300u
/* GET /v1/stock?wait=change&after=AFTER&timeout=TIMEOUT_S (added in 0.3):
 * one long poll, answered with the stock as soon as the daemon's change
 * generation is no longer AFTER (a change, or a daemon restarted since
 * AFTER was read), or after TIMEOUT_S seconds with (*ret)->generation ==
 * AFTER.  The daemon holds the request without a thread of its own; the
 * caller waits in it instead of polling.  The request's bound is TIMEOUT_S
 * plus 5 s (not hpw_set_timeouts' total); hpw_cancel() stops it within
 * about a second.  A daemon without the generation answers at once with
 * (*ret)->has_generation false: poll that one.  HPW_E_INVALID for TIMEOUT_S
 * over HPW_STOCK_WAIT_MAX_S; HPW_E_RATE_LIMITED when the daemon's waits of
 * this caller are all taken (--max-waits-per-caller).  Caller frees *ret
 * with hpw_stock_free. */
HPW_EXPORT enum hpw_error hpw_stock_wait_change(struct hpw *h, uint64_t after, unsigned timeout_s,
                                                struct hpw_stock **ret);
/* PUT /v1/stock: replace every target with *TARGETS[0..N) (N = 0 removes them
 * all, and the daemon deletes its stock files).  Only node,
 * page_size_bytes, size_bytes and count are sent.  HPW_E_INVALID, with
 * nothing sent, for N over HPW_STOCK_MAX_TARGETS, a negative node, a page
 * size or size of 0, or a count of 0; HPW_E_NULL_ARGUMENT for TARGETS NULL
 * with N > 0 or a target NULL; HPW_E_STRUCT_SIZE for a target whose size is
 * smaller than the first version's.  The server
 * answers 404 for an unknown node or page size (HPW_E_NOT_FOUND), 422 for a
 * size that is not a multiple of the page size, a count over its limit or
 * two targets naming the same node, page size and size (HPW_E_BAD_REQUEST),
 * 409 "stock-too-large" when the targets cannot fit the node
 * (HPW_E_CONFLICT; the detail says how many fit).  *ret is the new stock as
 * hpw_stock_get() would return it. */
HPW_EXPORT enum hpw_error hpw_stock_set(struct hpw *h, const struct hpw_stock_target *const *targets, size_t n,
                                        struct hpw_stock **ret);

/* ---- handoff: the VMM arguments that make warm pools a guest's RAM ---- */

/* Most pools one hpw_handoff() composes (the server's limit too). */
#define HPW_HANDOFF_MAX_POOLS 64

struct hpw_handoff {
        char *vmm;                /* "qemu", "cloud-hypervisor" or "libvirt" */
        uint64_t memory_bytes;    /* the pools' total: QEMU's -m (libvirt's <memory>) must equal it */
        char *args;               /* qemu, cloud-hypervisor: the words shell-quoted where needed; "" for libvirt */
        char **argv;              /* N_ARGV words to exec, NULL-terminated (libvirt: QEMU's words) */
        size_t n_argv;
        char *xml;                /* libvirt: the <qemu:commandline> fragment; "" otherwise */
        char *xml_namespace;      /* libvirt: the attribute the <domain> element must carry
                                     (the answer's "namespace"); "" otherwise */
        char *note;               /* what the caller adds (for QEMU: -m with the total, -smp ...); may be "" */
        char *json;               /* the server's JSON, verbatim */
        size_t n_as_unchecked;    /* hpw_handoff_as(): pools whose source the server does not hold,
                                     so it could not compare their sizes (0 otherwise); since 0.3 */
};
HPW_EXPORT void hpw_handoff_free(struct hpw_handoff *x);

/* Compose POOLS[0..N) (1 to HPW_HANDOFF_MAX_POOLS ready or claimed pools,
 * names distinct) into one guest for VMM ("qemu", "cloud-hypervisor",
 * "libvirt"): with one pool the guest's RAM is that pool; with several,
 * guest NUMA node i is POOLS[i].  GET /v1/handoff.  HPW_E_INVALID for a bad
 * VMM, N or name, HPW_E_NULL_ARGUMENT for a NULL one (nothing is sent); HPW_E_NOT_FOUND for an unknown pool;
 * HPW_E_CONFLICT when a pool is not ready (problem slug "pool-not-ready");
 * HPW_E_BAD_REQUEST for what the server refuses (e.g. a name given twice).
 * The caller still adds -m equal to (*ret)->memory_bytes, -smp, kernel,
 * disks: see (*ret)->note. */
HPW_EXPORT enum hpw_error hpw_handoff(struct hpw *h, const char *vmm, const char *const *pools, size_t n,
                                      struct hpw_handoff **ret);

/* hpw_handoff() for a migration destination (or a local live update): the
 * same composition with POOLS[i] mapped under the id source pool AS[i]'s
 * handoff gives (QEMU: -object ...,id=mem-AS[i] and the -machine / -numa
 * word naming it), so the incoming stream's RAM blocks find it.  GET
 * /v1/handoff?...&as=.  Misuse as for hpw_handoff(), and for a NULL AS
 * (HPW_E_NULL_ARGUMENT) or a bad name in it (HPW_E_INVALID); HPW_E_BAD_REQUEST (problem "invalid-field") when the
 * server refuses: the AS names repeat, VMM is cloud-hypervisor (whose
 * restore and receive take the zones from the source), or a source pool the
 * server holds differs from its destination in size or page size.  A source
 * the server does not hold is on another host: its pool object in
 * (*ret)->json says "as_checked": false, and the caller compares it with
 * the source's daemon (hpw_pool() there), as `hpwarm handoff --source-url`
 * does.  Since HPWARM_0.3. */
HPW_EXPORT enum hpw_error hpw_handoff_as(struct hpw *h, const char *vmm, const char *const *pools,
                                         const char *const *as, size_t n, struct hpw_handoff **ret);

/* ---- fleet: one request to many hosts at once ---- */

enum hpw_fleet_what { HPW_FLEET_NODES = 0, HPW_FLEET_POOLS = 1, HPW_FLEET_STOCK = 2 };

struct hpw_fleet_host {
        char *url;
        enum hpw_error err;       /* HPW_OK if the host answered as expected */
        char *message;            /* why not, "" on success */
        struct hpw_node_list *nodes; /* HPW_FLEET_NODES and HPW_OK, else NULL */
        struct hpw_pool_list *pools; /* HPW_FLEET_POOLS and HPW_OK, else NULL */
        struct hpw_stock *stock;     /* HPW_FLEET_STOCK and HPW_OK, else NULL */
};

struct hpw_fleet {
        size_t n;
        struct hpw_fleet_host **hosts; /* N pointers, in the order of URLS */
};
HPW_EXPORT void hpw_fleet_free(struct hpw_fleet *x);

/* Ask every URL at once (one attempt each, no retries) for WHAT (GET
 * /v1/nodes, /v1/pools or /v1/stock), each bounded by the handle's connect
 * and total timeouts; token and TLS options of H apply to all.  Succeeds
 * even when hosts fail: see each host's err (a daemon without stock answers
 * /v1/stock with 404, HPW_E_NOT_FOUND). */
HPW_EXPORT enum hpw_error hpw_fleet_get(struct hpw *h, const char *const *urls, size_t n,
                                        enum hpw_fleet_what what, struct hpw_fleet **ret);

/* ==== fleet placement through Prometheus (client/src/fleet/prom.c) ====
 *
 * One PromQL instant query finds the hosts that can take a pool; the best
 * few are then asked directly, because only a host can say what it has now
 * (and only a host can grant a pool).  The query keeps series of targets
 * whose last scrape succeeded (up == 1) and whose last sample is at most
 * max_age_s old, and returns per host and NUMA node either a ready stock
 * file of exactly SIZE (hpwarmd_stock_bytes{state="ready",size_bytes=SIZE})
 * or hugepages that cover SIZE (hpwarmd_hugepages_bytes{state="available"},
 * or state="free" for daemons without "available").  Ranked as `hpwarm
 * fleet place` ranks: stock files first (most ready, then most available
 * pages), then most available pages; ties by host label value, then node.
 * Metric names and labels relied on: docs/FLEET.md. */

/* Options, a request the caller fills: start from HPW_PROM_PLACE_OPTS_INIT
 * (SIZE = sizeof, as for struct hpw_warm_request).  Pointers are borrowed
 * for the call only. */
struct hpw_prom_place_opts {
        size_t size;                /* sizeof(struct hpw_prom_place_opts) */
        const char *prometheus_url; /* "http(s)://host:port[/prefix]", required */
        const char *host_label;     /* label naming the host; NULL = "instance" */
        /* The host's URL, "{LABEL}" replaced by the label's value; NULL =
         * "http://{LABEL}".  The value must look like HOST or HOST:PORT. */
        const char *url_template;
        uint64_t size_bytes;        /* required, a multiple of page_size */
        uint64_t page_size;         /* bytes; 0 = 2 MiB */
        unsigned max_age_s;         /* newest sample older than this: host skipped; 0 = 60 */
        unsigned confirm;           /* hosts asked directly per round; 0 = 3 */
        const char *warm_name;      /* non-NULL: PUT pool NAME on the chosen node,
                                       falling down the list on 409 */
};
#define HPW_PROM_PLACE_OPTS_INIT { .size = sizeof(struct hpw_prom_place_opts) }

struct hpw_prom_placement {
        char *url;                /* the chosen host's URL */
        char *host;               /* its host label value */
        int node;
        uint64_t page_size_bytes;
        bool stock;               /* chosen for a ready stock file (else available pages) */
        uint64_t stock_ready;     /* ready stock files of the size, as the host answered */
        uint64_t available;       /* available pages (free where the host does not say), as the host answered */
        uint64_t free;            /* free pages, as the host answered */
        size_t offered;           /* host/node candidates Prometheus returned */
        size_t asked;             /* hosts asked directly */
        size_t refused;           /* hosts that answered the warm with 409 */
        struct hpw_pool *pool;    /* warm_name: the pool as the host answered, else NULL */
        bool created;             /* warm_name: 201 (else an identical pool existed) */
};
HPW_EXPORT void hpw_prom_placement_free(struct hpw_prom_placement *x);

/* Place SIZE bytes through Prometheus.  H's token, TLS files and timeouts
 * apply to the hosts (as hpw_fleet_get); Prometheus gets H's timeouts, no
 * token and the system CAs.  HPW_E_INVALID for bad options (nothing sent;
 * HPW_E_NULL_ARGUMENT without OPTS or its prometheus_url, HPW_E_STRUCT_SIZE
 * for OPTS->size not set by HPW_PROM_PLACE_OPTS_INIT);
 * HPW_E_INSUFFICIENT when Prometheus offers nothing or no host asked
 * confirms it has room (hpw_last_message() says which); Prometheus'
 * transport errors as for any call (HPW_E_UNREACHABLE, ...) and
 * HPW_E_PROTOCOL for an answer that is not a Prometheus vector; with
 * warm_name, a warm error other than 409 as hpw_warm returns it;
 * HPW_E_CANCELLED after hpw_cancel() (the query or a round of the hosts;
 * a warm already sent runs to its answer). */
HPW_EXPORT enum hpw_error hpw_prom_place(struct hpw *h, const struct hpw_prom_place_opts *opts,
                                         struct hpw_prom_placement **ret);
/* ==== end of fleet placement through Prometheus ==== */

/* ==== OpenStack Placement (client/src/fleet/placement.c, keystone.c) ====
 *
 * Publishes a host's warm hugepages as Placement inventory, so Nova's
 * scheduler can ask for them (a flavor's resources:CUSTOM_HPWARM_2M=N) and
 * hold them as allocations: docs/OPENSTACK.md.  One child resource provider
 * per NUMA node, named "<compute node>_hpwarm_numa<N>", parent the compute
 * node's provider (the one nova-compute made), with inventory of one
 * resource class per page size the node has, CUSTOM_HPWARM_<SIZE>
 * (CUSTOM_HPWARM_2M, CUSTOM_HPWARM_1G; CUSTOM_HPWARM_64K, _16G on other
 * hosts), in pages:
 *   total    = ready stock pages + pages of pools handed out from stock
 *              (from_stock full or partial, warming or ready) + reserved
 *   reserved = pages of stock files still warming or being recycled
 * so what Placement can allocate (total - reserved) is the warm pages ready
 * now plus those VMs already hold.  A total that would put the capacity
 * below what allocations use is not written: the capacity is kept at the
 * usage (nothing more can be allocated) and the class is marked kept.
 * Nothing is written when Placement already holds the inventory; a 409
 * generation conflict (another writer) is retried after re-reading. */

/* Keystone v3 credentials (what the OS_* variables carry): a password of a
 * user in a project, or an application credential.  Pointers are borrowed
 * for hpw_placement_new only (they are copied). */
struct hpw_openstack_auth {
        const char *auth_url;              /* OS_AUTH_URL, e.g. http://keystone:5000/v3 */
        const char *username, *password;   /* OS_USERNAME, OS_PASSWORD */
        const char *project_name;          /* OS_PROJECT_NAME */
        const char *user_domain_name;      /* OS_USER_DOMAIN_NAME; NULL = "Default" */
        const char *project_domain_name;   /* OS_PROJECT_DOMAIN_NAME; NULL = "Default" */
        const char *app_cred_id, *app_cred_secret; /* OS_APPLICATION_CREDENTIAL_ID/_SECRET */
        const char *interface;             /* OS_INTERFACE: catalog interface; NULL = "public" */
        const char *region;                /* OS_REGION_NAME; NULL = any */
};

struct hpw_placement_opts {
        size_t size;                /* sizeof(struct hpw_placement_opts): HPW_PLACEMENT_OPTS_INIT */
        const char *placement_url;  /* http(s)://host:port[/prefix]; NULL = Keystone's catalog */
        const char *compute_node;   /* the compute node's provider name (nova: its hypervisor hostname) */
        const char *token_file;     /* a Keystone token (hpwarmd's token-file format); NULL = none */
        const struct hpw_openstack_auth *auth; /* NULL (or auth_url NULL) = no Keystone */
};
#define HPW_PLACEMENT_OPTS_INIT { .size = sizeof(struct hpw_placement_opts) }

/* One resource class of one child provider after a sync (pages). */
struct hpw_placement_class {
        const char *resource_class;  /* "CUSTOM_HPWARM_2M", "CUSTOM_HPWARM_1G", ... (static) */
        uint64_t page_size_bytes;
        uint64_t ready, in_use, warming; /* what the daemon said */
        uint32_t total, reserved;    /* the inventory Placement holds now (0, 0: none) */
        uint32_t used;               /* Placement's usage, as last read */
        bool kept;                   /* the capacity was held at the usage (stock below it) */
};

struct hpw_placement_provider {
        int node;
        char *name, *uuid;
        uint32_t generation;
        bool created;                /* made by this sync */
        bool written;                /* its inventory was written by this sync */
        size_t n;
        struct hpw_placement_class **classes; /* N pointers */
};

struct hpw_placement_sync {
        char *placement_url;         /* the endpoint used */
        char *compute_node_uuid;
        size_t n;
        struct hpw_placement_provider **providers; /* N pointers, by node */
        unsigned writes;             /* inventory writes this sync made */
        unsigned conflicts;          /* 409s retried after re-reading */
};
HPW_EXPORT void hpw_placement_sync_free(struct hpw_placement_sync *x);

/* A Placement session: the options, the Keystone token (renewed before it
 * expires) and what Placement was last seen to hold, so a sync that finds
 * nothing changed asks Placement nothing.  Uses H (its target, token and
 * timeouts) for hpwarmd; H must outlive it.  HPW_E_INVALID for bad options
 * (no compute node, a name Placement cannot hold, neither a URL nor a
 * Keystone URL, an auth without a user or application credential);
 * HPW_E_IO for a token file that cannot be read. */
struct hpw_placement;
HPW_EXPORT enum hpw_error hpw_placement_new(struct hpw *h, const struct hpw_placement_opts *opts,
                                            struct hpw_placement **ret);
HPW_EXPORT void hpw_placement_free(struct hpw_placement *p);
/* One sync: ask hpwarmd, then bring Placement's child providers to match.
 * REREAD: read Placement's inventory and usage again even when the daemon's
 * counts did not change (another writer may have changed them).
 * HPW_E_NOT_FOUND when Placement has no provider of the compute node's
 * name (nothing is created); HPW_E_UNAUTHORIZED/FORBIDDEN when Keystone or
 * Placement refuses the credentials; transport errors as for any call;
 * HPW_E_CONFLICT when conflicts outlast the retries.  hpw_last_message()
 * on the session's handle says what failed (never a secret). */
HPW_EXPORT enum hpw_error hpw_placement_sync(struct hpw_placement *p, bool reread,
                                             struct hpw_placement_sync **ret);
/* ==== end of OpenStack Placement ==== */

/* "2M", "1G" or "<n>kB": the canonical page-size spelling the API accepts.
 * Writes at most LEN bytes including the NUL. */
HPW_EXPORT void hpw_format_page_size(uint64_t bytes, char *buf, size_t len);

/* Library version, "MAJOR.MINOR.PATCH", and the same as a number to compare
 * with HPW_VERSION_NUM. */
HPW_EXPORT const char *hpw_version(void);
HPW_EXPORT unsigned hpw_version_num(void);

#ifdef __cplusplus
}
#endif
#endif
