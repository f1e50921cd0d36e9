/* problem: RFC 9457 problem details, the one shape every error takes on the
 * wire.  Handlers and core modules fill a struct problem; http.c sends it as
 * application/problem+json.  `type` is "urn:hpwarm:problem:<slug>" so scripts
 * can match the slug (e.g. "insufficient-hugepages"). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

struct problem {
        int status;          /* HTTP status code; 0 = no problem */
        const char *slug;    /* static string, e.g. "malformed-json" */
        const char *title;   /* static string, short and stable for the slug */
        char detail[512];    /* this occurrence, for humans */
        /* Extension members, sent only when set. */
        bool has_counts;     /* reserve shortfall: "requested" and "achieved" */
        uint64_t requested, achieved;
        bool has_floor;      /* insufficient-memory: "memory_floor_bytes", "memory_free_bytes", "max_count" */
        uint64_t floor_bytes, mem_free_bytes, max_count;
        unsigned retry_after; /* 429/503: seconds, 0 = none */
};

void problem_set(struct problem *p, int status, const char *slug, const char *title,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

struct json;
/* Encode as JSON; the caller frees the string.  NULL on allocation failure. */
char *problem_to_json(const struct problem *p);
/* The same as a JSON value, to embed in another document (a pool's "error");
 * the caller owns it (json_free, or json_add_value into a parent). */
struct json *problem_to_value(const struct problem *p);
