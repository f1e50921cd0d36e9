/* record: the one JSON form of each domain record (see record.h).
 *
 * Each record is a table of its plain members — key, kind, where the field
 * is — and three loops read the table: one writes the members, one reads
 * them back strictly, one compares two records as written.  A member added
 * to a table is written, read and compared alike, so the encoder and the
 * decoder cannot disagree on a name or a type.  What a table cannot say (a
 * pool's state by name, the optional members written only when set, the
 * rules across members) is code beside it.  The order of a table is the
 * order of the members in the JSON text, which the journal's bytes depend
 * on. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "record.h"
#include "util.h"

enum member_kind {
        M_INT,          /* int, written as a number, read as 0..INT_MAX */
        M_UINT,         /* unsigned, read as 0..UINT_MAX */
        M_U64,
        M_I64,
        M_BOOL,
        M_STR,          /* char[size], read when shorter than size */
};

struct member {
        const char *key;
        enum member_kind kind;
        size_t off, size;
};

#define MEMBER(type, key, field, kind) { key, kind, offsetof(type, field), sizeof(((type *)0)->field) }

/* The identity of a pool row (record_add_pool_identity writes the same
 * members, and the state after them). */
static const struct member pool_identity[] = {
        MEMBER(struct pool_record, "name", name, M_STR),
        MEMBER(struct pool_record, "node", node, M_INT),
        MEMBER(struct pool_record, "page_size_bytes", page_size, M_U64),
        MEMBER(struct pool_record, "size_bytes", size_bytes, M_U64),
};

/* The rest of a row's required members, after "state". */
static const struct member pool_members[] = {
        MEMBER(struct pool_record, "threads", threads, M_UINT),
        MEMBER(struct pool_record, "ttl_seconds", ttl_seconds, M_U64),
        MEMBER(struct pool_record, "claimed", claimed, M_BOOL),
        MEMBER(struct pool_record, "created_at", created_at, M_I64),
        MEMBER(struct pool_record, "started_at", started_at, M_I64),
        MEMBER(struct pool_record, "finished_at", finished_at, M_I64),
        MEMBER(struct pool_record, "bytes_done", bytes_done, M_U64),
        MEMBER(struct pool_record, "error_slug", error_slug, M_STR),
        MEMBER(struct pool_record, "error_detail", error_detail, M_STR),
};

static const struct member reservation_members[] = {
        MEMBER(struct reservation_record, "node", node, M_INT),
        MEMBER(struct reservation_record, "page_size_bytes", page_size, M_U64),
        MEMBER(struct reservation_record, "count", count, M_U64),
};

static const struct member stock_target_members[] = {
        MEMBER(struct stock_target_record, "node", node, M_INT),
        MEMBER(struct stock_target_record, "page_size_bytes", page_size, M_U64),
        MEMBER(struct stock_target_record, "size_bytes", size_bytes, M_U64),
        MEMBER(struct stock_target_record, "count", count, M_U64),
};

static const struct member elastic_members[] = {
        MEMBER(struct elastic_policy_record, "node", node, M_INT),
        MEMBER(struct elastic_policy_record, "page_size_bytes", page_size, M_U64),
        MEMBER(struct elastic_policy_record, "min", min, M_U64),
        MEMBER(struct elastic_policy_record, "max", max, M_U64),
        MEMBER(struct elastic_policy_record, "headroom", headroom, M_U64),
        MEMBER(struct elastic_policy_record, "idle_seconds", idle_seconds, M_U64),
        MEMBER(struct elastic_policy_record, "allow_best_effort", allow_best_effort, M_BOOL),
};

static void add_members(struct json *o, const void *rec, const struct member *m, size_t n)
{
        const char *base = rec;

        for (size_t i = 0; i < n; i++) {
                const void *at = base + m[i].off;
                switch (m[i].kind) {
                case M_INT:
                        json_add_i64(o, m[i].key, *(const int *)at);
                        break;
                case M_UINT:
                        json_add_u64(o, m[i].key, *(const unsigned *)at);
                        break;
                case M_U64:
                        json_add_u64(o, m[i].key, *(const uint64_t *)at);
                        break;
                case M_I64:
                        json_add_i64(o, m[i].key, *(const int64_t *)at);
                        break;
                case M_BOOL:
                        json_add_bool(o, m[i].key, *(const bool *)at);
                        break;
                case M_STR:
                        json_add_str(o, m[i].key, at);
                        break;
                }
        }
}

/* Read member M of O into its field of REC: 0 or -EINVAL. */
static int get_member(const struct json *o, void *rec, const struct member *m)
{
        char *at = (char *)rec + m->off;
        uint64_t u;
        const char *s;
        size_t len;

        switch (m->kind) {
        case M_INT:
                if (json_get_u64(o, m->key, &u) < 0 || u > INT_MAX)
                        return -EINVAL;
                *(int *)(void *)at = (int)u;
                return 0;
        case M_UINT:
                if (json_get_u64(o, m->key, &u) < 0 || u > UINT_MAX)
                        return -EINVAL;
                *(unsigned *)(void *)at = (unsigned)u;
                return 0;
        case M_U64:
                return json_get_u64(o, m->key, (uint64_t *)(void *)at) < 0 ? -EINVAL : 0;
        case M_I64:
                return json_get_i64(o, m->key, (int64_t *)(void *)at) < 0 ? -EINVAL : 0;
        case M_BOOL:
                return json_get_bool(o, m->key, (bool *)(void *)at) < 0 ? -EINVAL : 0;
        case M_STR:
                if (json_get_str(o, m->key, &s) < 0)
                        return -EINVAL;
                len = strlen(s);
                if (len >= m->size)
                        return -EINVAL;
                memcpy(at, s, len + 1);
                return 0;
        }
        return -EINVAL;
}

static int get_members(const struct json *o, void *rec, const struct member *m, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (get_member(o, rec, &m[i]) < 0)
                        return -EINVAL;
        return 0;
}

static bool members_equal(const void *a, const void *b, const struct member *m, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const char *x = (const char *)a + m[i].off, *y = (const char *)b + m[i].off;
                if (m[i].kind == M_STR ? strcmp(x, y) != 0 : memcmp(x, y, m[i].size) != 0)
                        return false;
        }
        return true;
}

static bool power_of_two(uint64_t v)
{
        return v && !(v & (v - 1));
}

/* SIZE bytes made of pages of PAGE_SIZE: at least one, whole pages. */
static bool whole_pages(uint64_t page_size, uint64_t size)
{
        return power_of_two(page_size) && size != 0 && size % page_size == 0;
}

void record_add_pool_identity(struct json *o, const char *name, int node, uint64_t page_size,
                              uint64_t size_bytes, enum pool_state state)
{
        struct pool_record id = { .node = node, .page_size = page_size, .size_bytes = size_bytes };

        if (!o)
                return;
        /* The name is read where it is: a view's buffer need not be a row's. */
        json_add_str(o, "name", name);
        add_members(o, &id, pool_identity + 1, ARRAY_SIZE(pool_identity) - 1);
        json_add_str(o, "state", pool_state_name(state));
}

void record_add_pool(struct json *o, const struct pool_record *p)
{
        if (!o || !p)
                return;
        record_add_pool_identity(o, p->name, p->node, p->page_size, p->size_bytes, p->state);
        add_members(o, p, pool_members, ARRAY_SIZE(pool_members));
        if (p->ready_boot_ns)
                json_add_u64(o, "ready_boot_ns", p->ready_boot_ns);
        if (p->owner_pid > 0) {
                json_add_i64(o, "owner_pid", p->owner_pid);
                json_add_u64(o, "owner_start_time", p->owner_start);
        }
        if (p->from_stock != POOL_FROM_STOCK_NONE)
                json_add_str(o, "from_stock", pool_from_stock_name(p->from_stock));
        if (p->label[0])
                json_add_str(o, "label", p->label);
        if (p->file_owned) {
                json_add_u64(o, "file_uid", p->file_uid);
                json_add_u64(o, "file_gid", p->file_gid);
        }
}

void record_add_reservation(struct json *o, const struct reservation_record *r)
{
        if (o && r)
                add_members(o, r, reservation_members, ARRAY_SIZE(reservation_members));
}

void record_add_stock_target(struct json *o, const struct stock_target_record *t)
{
        if (o && t)
                add_members(o, t, stock_target_members, ARRAY_SIZE(stock_target_members));
}

void record_add_elastic_policy(struct json *o, const struct elastic_policy_record *e)
{
        if (o && e)
                add_members(o, e, elastic_members, ARRAY_SIZE(elastic_members));
}

/* A row's optional members, each checked when present. */
static int parse_pool_optional(const struct json *o, struct pool_record *p)
{
        static const struct member from_stock = { "from_stock", M_STR, 0, 16 };
        static const struct member label = MEMBER(struct pool_record, "label", label, M_STR);
        static const struct member ready = MEMBER(struct pool_record, "ready_boot_ns", ready_boot_ns, M_U64);
        static const struct member owner[] = {
                MEMBER(struct pool_record, "owner_pid", owner_pid, M_INT),
                MEMBER(struct pool_record, "owner_start_time", owner_start, M_U64),
        };
        uint64_t uid, gid;
        char from[16];

        if (json_get(o, "from_stock") &&
            (get_member(o, from, &from_stock) < 0 || pool_from_stock_parse(from, &p->from_stock) < 0))
                return -EINVAL;
        if (json_get(o, "label") && (get_member(o, p, &label) < 0 || !pool_label_valid(p->label)))
                return -EINVAL;
        if (json_get(o, "ready_boot_ns") && get_member(o, p, &ready) < 0)
                return -EINVAL;
        if (json_get(o, "file_uid") || json_get(o, "file_gid")) {
                if (json_get_u64(o, "file_uid", &uid) < 0 || json_get_u64(o, "file_gid", &gid) < 0 ||
                    uid >= UINT32_MAX || gid >= UINT32_MAX)
                        return -EINVAL;
                p->file_owned = true;
                p->file_uid = (uint32_t)uid;
                p->file_gid = (uint32_t)gid;
        }
        /* Optional, together, and only on a claimed pool. */
        if ((json_get(o, "owner_pid") || json_get(o, "owner_start_time")) &&
            (get_members(o, p, owner, ARRAY_SIZE(owner)) < 0 || p->owner_pid <= 0 || !p->claimed))
                return -EINVAL;
        return 0;
}

int record_parse_pool(const struct json *o, struct pool_record *ret)
{
        static const struct member state_member = { "state", M_STR, 0, 16 };
        struct pool_record p = {};
        char state[16];

        assert_return(ret, -EINVAL);
        if (!json_is_object(o) || get_members(o, &p, pool_identity, ARRAY_SIZE(pool_identity)) < 0)
                return -EINVAL;
        if (!whole_pages(p.page_size, p.size_bytes))
                return -EINVAL;
        if (get_member(o, state, &state_member) < 0 || pool_state_parse(state, &p.state) < 0)
                return -EINVAL;
        if (pool_state_is_stock(p.state) ? !pool_stock_name_valid(p.name) : !pool_name_valid(p.name))
                return -EINVAL;
        if (get_members(o, &p, pool_members, ARRAY_SIZE(pool_members)) < 0 || parse_pool_optional(o, &p) < 0)
                return -EINVAL;
        *ret = p;
        return 0;
}

int record_parse_reservation(const struct json *o, struct reservation_record *ret)
{
        struct reservation_record r = {};

        assert_return(ret, -EINVAL);
        if (!json_is_object(o) || get_members(o, &r, reservation_members, ARRAY_SIZE(reservation_members)) < 0)
                return -EINVAL;
        if (!power_of_two(r.page_size))
                return -EINVAL;
        *ret = r;
        return 0;
}

int record_parse_stock_target(const struct json *o, struct stock_target_record *ret)
{
        struct stock_target_record t = {};

        assert_return(ret, -EINVAL);
        if (!json_is_object(o) || get_members(o, &t, stock_target_members, ARRAY_SIZE(stock_target_members)) < 0)
                return -EINVAL;
        if (!whole_pages(t.page_size, t.size_bytes))
                return -EINVAL;
        *ret = t;
        return 0;
}

int record_check_elastic_policy(const struct elastic_policy_record *p, char *why, size_t size)
{
        if (p->max == 0) {
                snprintf(why, size, "\"max\" must be at least 1 page");
                return -EINVAL;
        }
        if (p->max > ELASTIC_PAGES_MAX) {
                snprintf(why, size, "\"max\" of %" PRIu64 " pages is over the limit of %" PRIu64, p->max,
                         ELASTIC_PAGES_MAX);
                return -EINVAL;
        }
        if (p->min > p->max) {
                snprintf(why, size, "\"min\" (%" PRIu64 ") is above \"max\" (%" PRIu64 ")", p->min, p->max);
                return -EINVAL;
        }
        if (p->headroom > p->max) {
                snprintf(why, size, "\"headroom\" (%" PRIu64 ") is above \"max\" (%" PRIu64 ")", p->headroom,
                         p->max);
                return -EINVAL;
        }
        if (p->idle_seconds == 0 || p->idle_seconds > ELASTIC_IDLE_MAX) {
                snprintf(why, size, "\"idle_seconds\" must be 1 to %" PRIu64 " (a pool that gives pages back "
                         "at once would oscillate)", ELASTIC_IDLE_MAX);
                return -EINVAL;
        }
        return 0;
}

int record_parse_elastic_policy(const struct json *o, struct elastic_policy_record *ret)
{
        struct elastic_policy_record e = {};

        assert_return(ret, -EINVAL);
        if (!json_is_object(o) || get_members(o, &e, elastic_members, ARRAY_SIZE(elastic_members)) < 0)
                return -EINVAL;
        char why[160];
        if (!power_of_two(e.page_size) || record_check_elastic_policy(&e, why, sizeof(why)) < 0)
                return -EINVAL;
        *ret = e;
        return 0;
}

bool record_pool_equal(const struct pool_record *a, const struct pool_record *b)
{
        assert_return(a && b, false);
        return members_equal(a, b, pool_identity, ARRAY_SIZE(pool_identity)) && a->state == b->state &&
               members_equal(a, b, pool_members, ARRAY_SIZE(pool_members)) &&
               a->ready_boot_ns == b->ready_boot_ns && a->owner_pid == b->owner_pid &&
               (a->owner_pid <= 0 || a->owner_start == b->owner_start) && a->from_stock == b->from_stock &&
               strcmp(a->label, b->label) == 0 && a->file_owned == b->file_owned &&
               (!a->file_owned || (a->file_uid == b->file_uid && a->file_gid == b->file_gid));
}
