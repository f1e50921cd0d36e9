/* problem: RFC 9457 problem details, the one shape every error takes on the
 * wire.  Handlers and core modules fill a struct problem; http.c sends it as
 * application/problem+json.  `type` is "urn:hpwarm:problem:<slug>" so scripts
 * can match the slug (e.g. "insufficient-hugepages").
 *
 * Every problem the daemon can send is one row of a catalog {slug, status,
 * title} indexed by enum problem_id, and is raised through it
 * (problem_raise), so a slug always answers with the same status and title.
 * api/openapi.yaml lists the same rows; tests/api/test_openapi.py reads the
 * table in problem.c and checks both agree.  The ids never leave the
 * process; the slugs are the published contract (scripts match them): a
 * slug is added, never renamed or removed. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* PROBLEM_<SLUG IN UPPER CASE, '-' -> '_'>.  The rows are in problem.c.
 * The values are published as the ids of api/problems.json (clients build
 * their enum from them), so a new slug goes at the end, before
 * PROBLEM__COUNT, whatever group it belongs to. */
enum problem_id {
        PROBLEM_NONE = 0,               /* not a problem; problem_from_slug's miss */
        /* Request shape and routing. */
        PROBLEM_MALFORMED_JSON,
        PROBLEM_INVALID_FIELD,
        PROBLEM_UNEXPECTED_BODY,
        PROBLEM_NOT_FOUND,
        PROBLEM_METHOD_NOT_ALLOWED,
        PROBLEM_BODY_TOO_LARGE,
        PROBLEM_URI_TOO_LONG,
        PROBLEM_UNSUPPORTED_MEDIA_TYPE,
        PROBLEM_HEADERS_TOO_LARGE,
        /* Access and load. */
        PROBLEM_UNAUTHORIZED,
        PROBLEM_FORBIDDEN,
        PROBLEM_BUSY,
        PROBLEM_TOO_MANY_WAITS,
        PROBLEM_STOPPING,
        PROBLEM_INTERNAL_ERROR,
        /* Nodes and reservations. */
        PROBLEM_UNKNOWN_NODE,
        PROBLEM_UNKNOWN_PAGE_SIZE,
        PROBLEM_SYSFS_ERROR,
        PROBLEM_INSUFFICIENT_MEMORY,
        PROBLEM_RESERVE_SHORTFALL,
        /* Pools: admission and requests. */
        PROBLEM_POOL_NOT_FOUND,
        PROBLEM_POOL_NOT_READY,
        PROBLEM_POOL_OWNED,
        PROBLEM_POOL_CONFLICT,
        PROBLEM_POOL_TOO_LARGE,
        PROBLEM_TOO_MANY_POOLS,
        PROBLEM_NODE_WARM_LIMIT,
        PROBLEM_INSUFFICIENT_HUGEPAGES,
        PROBLEM_NO_HUGETLBFS,
        PROBLEM_POOL_FILE_ERROR,
        PROBLEM_STATE_WRITE_FAILED,
        PROBLEM_WARM_START_FAILED,
        /* Pools: why a warm job failed (a pool's stored "error"). */
        PROBLEM_HUGEPAGES_EXHAUSTED,
        PROBLEM_OUT_OF_MEMORY,
        PROBLEM_INTERRUPTED,
        PROBLEM_HARDWARE_POISON,
        PROBLEM_POPULATE_UNSUPPORTED,
        PROBLEM_POPULATE_FAILED,
        PROBLEM_FILE_MISSING,
        PROBLEM_FILE_CHANGED,
        PROBLEM_CANCELLED,
        /* Stock. */
        PROBLEM_STOCK_TOO_LARGE,
        PROBLEM_POLICY_NOT_FOUND,
        PROBLEM_GROWTH_NOT_RELIABLE,
        /* Hosts whose hugepage counts the daemon must not change. */
        PROBLEM_HUGEPAGES_FIXED,
        PROBLEM__COUNT
};

/* One row of the catalog; static strings. */
struct problem_type {
        const char *slug;
        int status;
        const char *title;
        bool retryable;  /* the same request may succeed later, unchanged */
};

struct problem {
        int status;          /* HTTP status code; 0 = no problem */
        const char *slug;    /* static string, e.g. "malformed-json" */
        const char *title;   /* static string, the catalog's title for the slug */
        enum problem_id id;  /* its catalog row; PROBLEM_NONE for a stored slug
                              * the catalog does not know (problem_raise_slug) */
        char detail[512];    /* this occurrence, for humans */
        /* Extension members, sent only when set. */
        bool has_counts;     /* reserve shortfall: "requested" and "achieved" */
        uint64_t requested, achieved;
        bool has_floor;      /* insufficient-memory: "memory_floor_bytes", "memory_free_bytes", "max_count" */
        uint64_t floor_bytes, mem_free_bytes, max_count;
        unsigned retry_after; /* 429/503: seconds, 0 = none */
};

/* The Retry-After (seconds) a 429 or 503 of ID carries unless its raiser
 * set one. */
unsigned problem_retry_after(enum problem_id id);
/* The catalog row of ID; NULL for PROBLEM_NONE and out-of-range values. */
const struct problem_type *problem_type(enum problem_id id);
/* The id whose slug is SLUG (exact, case-sensitive); PROBLEM_NONE when the
 * catalog has no such slug or SLUG is NULL. */
enum problem_id problem_from_slug(const char *slug);

/* Fill P's status, slug and title from ID's row and its detail from FMT (cut
 * to fit, forced to valid UTF-8).  The extension members are left as the
 * caller set them, before or after.  P may be NULL (nothing happens).  An ID
 * outside the catalog is a bug: it asserts, and without assertions raises
 * PROBLEM_INTERNAL_ERROR with the same detail. */
void problem_raise(struct problem *p, enum problem_id id, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The title a slug the catalog does not know gets in problem_raise_slug. */
#define PROBLEM_UNKNOWN_TITLE "Unknown problem"

/* For a problem stored by slug (a pool's error in the journal): the catalog
 * row when SLUG is in it; otherwise SLUG is kept as given (it must outlive
 * P's use: a journal written by another version may carry slugs this one
 * does not know), with status 500, PROBLEM_UNKNOWN_TITLE and id
 * PROBLEM_NONE. */
void problem_raise_slug(struct problem *p, const char *slug, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

struct json;
/* Encode as JSON; the caller frees the string.  NULL on allocation failure. */
char *problem_to_json(const struct problem *p);
/* The same as a JSON value, to embed in another document (a pool's "error");
 * the caller owns it (json_free, or json_add_value into a parent). */
struct json *problem_to_value(const struct problem *p);
