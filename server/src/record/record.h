/* record: the daemon's domain records — a pool (or stock file) row, a stock
 * target, an elastic policy, a reservation — and the one JSON form of each.
 *
 * A record is one struct here and one encoder (and its strict decoder) in
 * record.c, used by the journal (its snapshot and its log records) and by
 * the handlers (the API's pool and policy objects spell the same members
 * the same way), so the two can never drift apart.  The name rules and the
 * lifecycle a row moves through are pool_state.h's.  Only base headers below
 * this module; the journal, the pool core and the handlers include it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool_state.h"

struct json;

struct reservation_record {
        int node;
        uint64_t page_size;
        uint64_t count;
};

struct pool_record {
        char name[POOL_NAME_MAX + 1];
        int node;
        uint64_t page_size;
        uint64_t size_bytes;
        enum pool_state state;
        unsigned threads;        /* requested, 0 = default */
        uint64_t ttl_seconds;    /* 0 = none */
        bool claimed;
        int64_t created_at;      /* unix seconds */
        int64_t started_at;      /* unix seconds */
        int64_t finished_at;     /* unix seconds, 0 = not finished (or no wall clock): display */
        uint64_t ready_boot_ns;  /* CLOCK_BOOTTIME when it turned ready, 0 = not ready; TTLs
                                  * count from it.  Valid within the journal's boot_id only */
        uint64_t bytes_done;     /* at last save */
        int owner_pid;           /* claimed by this process (the VMM); 0 = none */
        uint64_t owner_start;    /* its start time, /proc/PID/stat field 22 */
        char error_slug[POOL_ERROR_SLUG_MAX];     /* "" = none */
        char error_detail[POOL_ERROR_DETAIL_MAX];
        enum pool_from_stock from_stock; /* optional in the file; none when absent */
        char label[POOL_LABEL_MAX + 1];  /* optional in the file; "" = none */
        /* The pool file's owner as handed out (mode 0600), when given at
         * PUT; else the file is in --pool-group, mode 0660.  Optional,
         * together. */
        bool file_owned;
        uint32_t file_uid, file_gid;
};

/* A stock target: keep COUNT ready files of SIZE_BYTES on (NODE, PAGE_SIZE). */
struct stock_target_record {
        int node;
        uint64_t page_size;
        uint64_t size_bytes;
        uint64_t count;
};

/* An elastic policy (pools_elastic.c): the pool of (NODE, PAGE_SIZE) grows
 * on demand up to MAX and gives back free pages beyond HEADROOM that stayed
 * free for IDLE_SECONDS, never below MIN.  Counts in pages. */
struct elastic_policy_record {
        int node;
        uint64_t page_size;
        uint64_t min, max, headroom, idle_seconds;
        bool allow_best_effort;
};

/* Bounds on what a policy may say: numbers beyond them are a mistake (no
 * node has 2^32 hugepages; a give-back a year away is never).  */
#define ELASTIC_PAGES_MAX (UINT64_C(1) << 32)
#define ELASTIC_IDLE_MAX (UINT64_C(366) * 24 * 3600)

/* The rule of a policy's numbers, in one wording for every path that takes
 * one: PUT .../policy (pools_set_elastic), --elastic (options.c) and the
 * journal's replay (record_parse_elastic_policy), so the journal refuses
 * what the API refuses.  Not its node or page size: the caller knows the
 * topology.  0, or -EINVAL with WHY (of SIZE bytes) saying what is wrong. */
int record_check_elastic_policy(const struct elastic_policy_record *p, char *why, size_t size);

/* Encoders: add the record's members to the JSON object O (a NULL O, as an
 * allocation failure of the builder leaves it, adds nothing).
 *
 * The members a pool is known by: name, node, page_size_bytes, size_bytes
 * and state.  The journal's rows and the API's pool objects spell them
 * alike, so a reader of the journal recognises the API's pool. */
void record_add_pool_identity(struct json *o, const char *name, int node, uint64_t page_size,
                              uint64_t size_bytes, enum pool_state state);
/* A pool row as the journal keeps it: the identity, then threads,
 * ttl_seconds, claimed, the times, bytes_done, error_slug, error_detail,
 * then the optional members (ready_boot_ns when set, owner_pid and
 * owner_start_time for an owned pool, from_stock when not "none", label
 * when set, file_uid and file_gid for an owned file). */
void record_add_pool(struct json *o, const struct pool_record *p);
/* node (a number), page_size_bytes and count. */
void record_add_reservation(struct json *o, const struct reservation_record *r);
/* node, page_size_bytes, size_bytes and count. */
void record_add_stock_target(struct json *o, const struct stock_target_record *t);
/* As the journal and the policy routes spell it: node as a number, counts
 * in pages, idle_seconds, allow_best_effort. */
void record_add_elastic_policy(struct json *o, const struct elastic_policy_record *e);

/* Decoders, strict: every member the encoder always writes is required with
 * its type, numbers are exact integers (json.h), an optional member is
 * checked when present, members not listed are ignored, and the record's
 * rules hold (page sizes powers of two, sizes positive multiples of them,
 * names by pool_state.h's rules: a stock row has a stock name and a stock
 * state, a pool neither; a policy's numbers by record_check_elastic_policy).  0 with *RET filled, or -EINVAL (O not an object included)
 * and *RET untouched. */
int record_parse_pool(const struct json *o, struct pool_record *ret);
int record_parse_reservation(const struct json *o, struct reservation_record *ret);
int record_parse_stock_target(const struct json *o, struct stock_target_record *ret);
int record_parse_elastic_policy(const struct json *o, struct elastic_policy_record *ret);

/* Whether A and B are written alike (the same members, the same values):
 * what a save compares to know a row changed.  An owner's start time is
 * not written without its pid, nor a file's owner without file_owned. */
bool record_pool_equal(const struct pool_record *a, const struct pool_record *b);
