/* problem: the catalog of problem types and RFC 9457 problem details.
 * problem_raise describes the problem itself (status, slug and title from the
 * catalog row, detail from the caller); the extension members (counts, Allow,
 * Retry-After) are left as the caller set them, before or after, so a handler
 * can add them in any order.  Details are forced to valid UTF-8.  Encoding
 * goes through the json builder, never cJSON directly. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "problem.h"

#define PROBLEM_TYPE_PREFIX "urn:hpwarm:problem:"

/* Whether the same request, sent again unchanged, can succeed once the
 * condition passes by itself, soon: load (busy, too-many-waits), a restart
 * (stopping), a disk that recovers (state-write-failed).  Clients retry
 * those, after Retry-After, and nothing else.  Capacity refusals are FINAL
 * although they carry Retry-After (too-many-pools, node-warm-limit) or may
 * pass when pools go (insufficient-hugepages): only a pool released by
 * someone else ends them, and a scheduler places elsewhere rather than
 * wait.  no-hugetlbfs lasts until the daemon is configured and restarted. */
#define RETRY true
#define FINAL false

/* The catalog: one row per slug, indexed by enum problem_id.  A title is
 * short, names the kind of problem and never this occurrence (that is the
 * detail).  tests/api/test_openapi.py parses these rows (one per line, in
 * this exact shape) and checks api/openapi.yaml and api/problems.json list
 * the same. */
static const struct problem_type catalog[PROBLEM__COUNT] = {
        [PROBLEM_MALFORMED_JSON] = { "malformed-json", 400, "Malformed JSON", FINAL },
        [PROBLEM_INVALID_FIELD] = { "invalid-field", 422, "Invalid field", FINAL },
        [PROBLEM_UNEXPECTED_BODY] = { "unexpected-body", 400, "Unexpected body", FINAL },
        [PROBLEM_NOT_FOUND] = { "not-found", 404, "Not found", FINAL },
        [PROBLEM_METHOD_NOT_ALLOWED] = { "method-not-allowed", 405, "Method not allowed", FINAL },
        [PROBLEM_BODY_TOO_LARGE] = { "body-too-large", 413, "Request body too large", FINAL },
        [PROBLEM_URI_TOO_LONG] = { "uri-too-long", 414, "URI too long", FINAL },
        [PROBLEM_UNSUPPORTED_MEDIA_TYPE] = { "unsupported-media-type", 415, "Unsupported media type", FINAL },
        [PROBLEM_HEADERS_TOO_LARGE] = { "headers-too-large", 431, "Request header too large", FINAL },
        [PROBLEM_UNAUTHORIZED] = { "unauthorized", 401, "Unauthorized", FINAL },
        [PROBLEM_FORBIDDEN] = { "forbidden", 403, "Forbidden", FINAL },
        [PROBLEM_BUSY] = { "busy", 503, "Too busy", RETRY },
        [PROBLEM_TOO_MANY_WAITS] = { "too-many-waits", 429, "Too many long-polls", RETRY },
        [PROBLEM_STOPPING] = { "stopping", 503, "Shutting down", RETRY },
        [PROBLEM_INTERNAL_ERROR] = { "internal-error", 500, "Internal error", FINAL },
        [PROBLEM_UNKNOWN_NODE] = { "unknown-node", 404, "Unknown NUMA node", FINAL },
        [PROBLEM_UNKNOWN_PAGE_SIZE] = { "unknown-page-size", 404, "Unknown page size", FINAL },
        [PROBLEM_SYSFS_ERROR] = { "sysfs-error", 500, "Cannot access hugepage counters", FINAL },
        [PROBLEM_INSUFFICIENT_MEMORY] = { "insufficient-memory", 409, "Not enough free memory on the node", FINAL },
        [PROBLEM_RESERVE_SHORTFALL] = { "reserve-shortfall", 409, "The kernel gave fewer pages than asked", FINAL },
        [PROBLEM_POOL_NOT_FOUND] = { "pool-not-found", 404, "No such pool", FINAL },
        [PROBLEM_POOL_NOT_READY] = { "pool-not-ready", 409, "Pool not ready", FINAL },
        [PROBLEM_POOL_OWNED] = { "pool-owned", 409, "Pool bound to another process", FINAL },
        [PROBLEM_POOL_CONFLICT] = { "pool-conflict", 409, "A different pool has that name", FINAL },
        [PROBLEM_POOL_TOO_LARGE] = { "pool-too-large", 413, "Pool too large", FINAL },
        [PROBLEM_TOO_MANY_POOLS] = { "too-many-pools", 429, "Too many pools", FINAL },
        [PROBLEM_NODE_WARM_LIMIT] = { "node-warm-limit", 429, "Too much warm memory on the node", FINAL },
        [PROBLEM_INSUFFICIENT_HUGEPAGES] = { "insufficient-hugepages", 409, "Not enough free hugepages", FINAL },
        [PROBLEM_NO_HUGETLBFS] = { "no-hugetlbfs", 503, "No hugetlbfs for that page size", FINAL },
        [PROBLEM_POOL_FILE_ERROR] = { "pool-file-error", 500, "Pool file error", FINAL },
        [PROBLEM_STATE_WRITE_FAILED] = { "state-write-failed", 503, "Cannot save state", RETRY },
        [PROBLEM_WARM_START_FAILED] = { "warm-start-failed", 500, "Cannot start warming", FINAL },
        [PROBLEM_HUGEPAGES_EXHAUSTED] = { "hugepages-exhausted", 500, "Hugepages exhausted while warming", FINAL },
        [PROBLEM_OUT_OF_MEMORY] = { "out-of-memory", 500, "Out of memory while warming", FINAL },
        [PROBLEM_INTERRUPTED] = { "interrupted", 500, "Warming interrupted", FINAL },
        [PROBLEM_HARDWARE_POISON] = { "hardware-poison", 500, "Hardware-poisoned hugepage", FINAL },
        [PROBLEM_POPULATE_UNSUPPORTED] = { "populate-unsupported", 500, "Kernel cannot prefault the pool", FINAL },
        [PROBLEM_POPULATE_FAILED] = { "populate-failed", 500, "Warming failed", FINAL },
        [PROBLEM_FILE_MISSING] = { "file-missing", 500, "Pool file missing", FINAL },
        [PROBLEM_FILE_CHANGED] = { "file-changed", 500, "Pool file changed by someone else", FINAL },
        [PROBLEM_CANCELLED] = { "cancelled", 500, "Warming cancelled", FINAL },
        [PROBLEM_STOCK_TOO_LARGE] = { "stock-too-large", 409, "Stock targets do not fit the node", FINAL },
        [PROBLEM_POLICY_NOT_FOUND] = { "policy-not-found", 404, "No elastic policy", FINAL },
        [PROBLEM_GROWTH_NOT_RELIABLE] = { "growth-not-reliable", 409, "Runtime growth of these pages is not reliable", FINAL },
        [PROBLEM_HUGEPAGES_FIXED] = { "hugepages-fixed", 409, "Hugepages are fixed on this host", FINAL },
};

const struct problem_type *problem_type(enum problem_id id)
{
        if ((int)id <= PROBLEM_NONE || id >= PROBLEM__COUNT || !catalog[id].slug)
                return NULL;
        return &catalog[id];
}

enum problem_id problem_from_slug(const char *slug)
{
        if (!slug)
                return PROBLEM_NONE;
        for (int id = PROBLEM_NONE + 1; id < PROBLEM__COUNT; id++)
                if (catalog[id].slug && strcmp(catalog[id].slug, slug) == 0)
                        return (enum problem_id)id;
        return PROBLEM_NONE;
}

/* Length of the valid UTF-8 sequence at S (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 if the bytes there are not one. */
static size_t utf8_seq_len(const unsigned char *s)
{
        unsigned char c = s[0];
        if (c < 0x80)
                return 1;
        size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!n)
                return 0;
        for (size_t i = 1; i < n; i++)
                if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
                        return 0;
        if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
            (c == 0xf4 && s[1] > 0x8f))
                return 0;
        return n;
}

/* A truncated detail may end inside a multi-byte UTF-8 sequence; drop that
 * partial sequence rather than mark it invalid below. */
static void trim_partial_utf8(char *s)
{
        size_t len = strlen(s), k = len, need;
        unsigned char lead;

        while (k > 0 && len - k < 4 && ((unsigned char)s[k - 1] & 0xc0) == 0x80)
                k--;
        if (k == 0)
                return;
        lead = (unsigned char)s[k - 1];
        if (lead < 0xc0)
                return;
        need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
        if (len - (k - 1) < need)
                s[k - 1] = '\0';
}

/* Details quote what clients sent (a path segment, a key), which may be any
 * bytes; JSON text must be UTF-8 (RFC 8259 section 8.1).  Replace each byte
 * that does not start a valid sequence with '?', in place; this also drops
 * a sequence that vsnprintf cut in half. */
static void make_utf8(char *s)
{
        for (unsigned char *p = (unsigned char *)s; *p;) {
                size_t n = utf8_seq_len(p);
                if (n) {
                        p += n;
                } else {
                        *p++ = '?';
                }
        }
}

static void set_detail(struct problem *p, const char *fmt, va_list ap)
{
        int n = vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
        if (n >= (int)sizeof(p->detail))
                trim_partial_utf8(p->detail);
        make_utf8(p->detail);
}

/* The row to raise for ID: ID's own, or internal-error for a value outside
 * the catalog (a bug; asserted in builds with assertions). */
static enum problem_id checked_id(enum problem_id id)
{
        bool known = problem_type(id) != NULL;
        assert(known && "problem id outside the catalog");
        return known ? id : PROBLEM_INTERNAL_ERROR;
}

static void set_row(struct problem *p, enum problem_id id)
{
        const struct problem_type *t = &catalog[id];
        p->id = id;
        p->status = t->status;
        p->slug = t->slug;
        p->title = t->title;
}

/* Retry-After of the 429 and 503 answers, in seconds, where the code that
 * raised one has no better figure: every such answer carries one.  A save
 * that failed (a full or failing disk) is not fixed at once; pool limits
 * pass as pools are claimed, deleted or expire, on the scale of a minute;
 * a missing hugetlbfs directory needs a restart, so its hint is long. */
unsigned problem_retry_after(enum problem_id id)
{
        switch (id) {
        case PROBLEM_STATE_WRITE_FAILED:
                return 5;
        case PROBLEM_TOO_MANY_POOLS:
        case PROBLEM_NODE_WARM_LIMIT:
                return 60;
        case PROBLEM_NO_HUGETLBFS:
                return 300;
        default:
                return 1;
        }
}

void problem_raise(struct problem *p, enum problem_id id, const char *fmt, ...)
{
        va_list ap;

        if (!p)
                return;
        set_row(p, checked_id(id));
        va_start(ap, fmt);
        set_detail(p, fmt, ap);
        va_end(ap);
}

void problem_raise_slug(struct problem *p, const char *slug, const char *fmt, ...)
{
        enum problem_id id = problem_from_slug(slug);
        va_list ap;

        if (!p)
                return;
        if (id != PROBLEM_NONE) {
                set_row(p, id);
        } else {
                p->id = PROBLEM_NONE;
                p->status = 500;
                p->slug = slug;
                p->title = PROBLEM_UNKNOWN_TITLE;
        }
        va_start(ap, fmt);
        set_detail(p, fmt, ap);
        va_end(ap);
}

struct json *problem_to_value(const struct problem *p)
{
        struct json *o;
        char type[128];

        if (!p)
                return NULL;
        if (p->slug)
                snprintf(type, sizeof(type), PROBLEM_TYPE_PREFIX "%s", p->slug);
        else
                snprintf(type, sizeof(type), "about:blank");

        o = json_new_object();
        json_add_str(o, "type", type);
        json_add_str(o, "title", p->title ? p->title : "Error");
        json_add_i64(o, "status", p->status);
        json_add_str(o, "detail", p->detail);
        if (p->has_counts) {
                json_add_u64(o, "requested", p->requested);
                json_add_u64(o, "achieved", p->achieved);
        }
        if (p->has_floor) {
                json_add_u64(o, "memory_floor_bytes", p->floor_bytes);
                json_add_u64(o, "memory_free_bytes", p->mem_free_bytes);
                json_add_u64(o, "max_count", p->max_count);
        }
        return o;
}

char *problem_to_json(const struct problem *p)
{
        struct json *o = problem_to_value(p);
        char *text = json_print(o);
        json_free(o);
        return text;
}
