/* journal: the daemon's durable state: a snapshot (state.json, one JSON
 * document) and a log of changes since it (state.log), so the cost of a
 * change follows what changed, not how many rows the host has.  SQLite's
 * WAL and Redis's AOF rewrite are the models.
 *
 * Snapshot, version 2 (version 1 is the same without "snapshot", and has no
 * log; it is read as it is and the first save replaces it, so a daemon that
 * only reads version 1 refuses what this one writes rather than miss its log):
 *   {"version":2,"boot_id":"...","snapshot":"<16 hex digits>",
 *    "reservations":[{"node":0,"page_size_bytes":2097152,"count":64}],
 *    "pools":[{"name":..,"node":..,"page_size_bytes":..,"size_bytes":..,
 *              "state":"warming|ready|failed|cancelled","threads":..,
 *              "ttl_seconds":..,"claimed":..,"created_at":..,"started_at":..,
 *              "finished_at":..,"bytes_done":..,"error_slug":"..",
 *              "error_detail":"..",
 *              "owner_pid":..,"owner_start_time":..,"from_stock":".."}],
 *    "stock_targets":[{"node":0,"page_size_bytes":..,"size_bytes":..,
 *                      "count":..}],
 *    "elastic_policies":[{"node":0,"page_size_bytes":..,"min":..,"max":..,
 *                         "headroom":..,"idle_seconds":..,
 *                         "allow_best_effort":..}]}
 *
 * Log: lines "<CRC-32C of TEXT, 8 hex digits> TEXT\n".  The first TEXT is the
 * header {"version":2,"snapshot":"<id>"}: the snapshot this log extends.
 * Every later one is a record, one per save, holding every row that save
 * changed, so a save is atomic as the whole-file rename was:
 *   {"put":[<pool rows, as above>],"drop":[{"name":".."}],
 *    "reservations":[..],"stock_targets":[..]}
 * "put" rows are added or replace the row of that name; "drop" names rows
 * that must be there; "reservations", "stock_targets" and
 * "elastic_policies" are present only when they changed, and then whole.
 *
 * Stock files are rows of "pools" with a stock state ("stock-warming",
 * "stock", "dirty", "recycling") and a stock name (pool_state.h: a first character
 * no pool name has).  "stock_targets" and "from_stock" (written only when not
 * "none") are optional in the snapshot, like the owner members: absent means
 * none.  owner_pid and owner_start_time (a claimed pool bound to its VMM
 * process, and that process's start time) are written only for a pool that
 * has an owner.  "ready_boot_ns" (CLOCK_BOOTTIME when a pool turned ready,
 * which its TTL counts from; meaningful only under the same boot_id) is
 * optional the same way: absent, the TTL counts from finished_at.
 *
 * Parsing is strict: every member listed above is required with its type,
 * numbers are exact integers (json.h), names follow the pool name rule, pool
 * names and (node, page size) reservation pairs are unique, page sizes are
 * powers of two and pool sizes positive multiples of them.  Members not
 * listed are ignored (a format that breaks readers bumps "version").  A
 * journal that is off in any way is -EINVAL: the caller quarantines it rather
 * than guess.  A save refuses to write what it could not read back (the
 * snapshot, or the record replayed onto what it extends), so a bug elsewhere
 * surfaces at save time, not at the next start.
 *
 * Durability.  A save through a journal_sync appends one record and
 * fdatasyncs the log: it is durable when the save returns, against a crash
 * and a power loss alike (the log's name was made durable when it was
 * created).  When the log has grown as large as the snapshot (at least
 * LOG_COMPACT_MIN) the save compacts instead: the state is written as a new
 * snapshot with a new id (temp file, fsync, rename, fsync dir), then a new
 * log naming that id replaces the old (the same way).  A crash between the
 * two leaves the new snapshot and the old log, whose header names another
 * snapshot: it is stale, already folded in, and ignored.  The order (the
 * snapshot's rename made durable before the log's) means the directory
 * never holds the old snapshot with the new, empty log.
 *
 * Damage.  A last line without its newline, or a last line whose CRC does
 * not match, is a torn append (a crash or power loss during a write that was
 * never acknowledged): it is ignored and the next save, which compacts,
 * drops it.  A bad line with lines after it is damage, not a crash: -EINVAL,
 * as is a record whose CRC matches but whose content is off (it removes a
 * row that is not there, say), or a log whose header is.  A header of a newer
 * version is -EPROTONOSUPPORT, as is such a snapshot.  The first save of a
 * process always compacts: it never appends after a tail it did not write. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "json.h"
#include "util.h"

#define JOURNAL_VERSION 2
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define STATE_FILE "state.json"
#define STATE_TMP "state.json.tmp"
#define LOG_FILE "state.log"
#define LOG_TMP "state.log.tmp"
/* "xxxxxxxx ": the CRC in front of each log line. */
#define LOG_PREFIX_LEN 9
/* The log is compacted once it is as large as the snapshot, but never
 * below this: with a few pools, compacting every few changes would cost
 * two directory fsyncs each. */
#define LOG_COMPACT_MIN (256 * KIB)
/* Our journal holds at most a few thousand small records; anything much
 * larger is not ours. */
#define JOURNAL_MAX_BYTES (16 * MIB)

void journal_free(struct journal *j)
{
        if (!j)
                return;
        free(j->reservations);
        free(j->pools);
        free(j->stock_targets);
        free(j->elastic);
        free(j);
}

/* ---- parsing ---- */

static bool power_of_two(uint64_t v)
{
        return v && !(v & (v - 1));
}

static int get_int(const struct json *o, const char *key, int *ret)
{
        uint64_t v;
        int r = json_get_u64(o, key, &v);
        if (r < 0)
                return -EINVAL;
        if (v > INT_MAX)
                return -EINVAL;
        *ret = (int)v;
        return 0;
}

static int get_u64(const struct json *o, const char *key, uint64_t *ret)
{
        return json_get_u64(o, key, ret) < 0 ? -EINVAL : 0;
}

static int get_i64(const struct json *o, const char *key, int64_t *ret)
{
        return json_get_i64(o, key, ret) < 0 ? -EINVAL : 0;
}

/* Copy string member KEY into BUF[SIZE]; too long is -EINVAL. */
static int get_strbuf(const struct json *o, const char *key, char *buf, size_t size)
{
        const char *s;
        size_t n;

        if (json_get_str(o, key, &s) < 0)
                return -EINVAL;
        n = strlen(s);
        if (n >= size)
                return -EINVAL;
        memcpy(buf, s, n + 1);
        return 0;
}

static int parse_reservation(const struct json *o, struct journal_reservation *ret)
{
        struct journal_reservation r = {};

        if (!json_is_object(o))
                return -EINVAL;
        if (get_int(o, "node", &r.node) < 0 || get_u64(o, "page_size_bytes", &r.page_size) < 0 ||
            get_u64(o, "count", &r.count) < 0)
                return -EINVAL;
        if (!power_of_two(r.page_size))
                return -EINVAL;
        *ret = r;
        return 0;
}

static int parse_pool(const struct json *o, struct journal_pool *ret)
{
        struct journal_pool p = {};
        char state[16];
        uint64_t threads;

        if (!json_is_object(o))
                return -EINVAL;
        if (get_strbuf(o, "name", p.name, sizeof(p.name)) < 0)
                return -EINVAL;
        if (get_int(o, "node", &p.node) < 0 || get_u64(o, "page_size_bytes", &p.page_size) < 0 ||
            get_u64(o, "size_bytes", &p.size_bytes) < 0)
                return -EINVAL;
        if (!power_of_two(p.page_size) || p.size_bytes == 0 || p.size_bytes % p.page_size)
                return -EINVAL;
        if (get_strbuf(o, "state", state, sizeof(state)) < 0 ||
            pool_state_parse(state, &p.state) < 0)
                return -EINVAL;
        if (pool_state_is_stock(p.state) ? !pool_stock_name_valid(p.name) : !pool_name_valid(p.name))
                return -EINVAL;
        if (json_get(o, "from_stock")) {
                char from[16];
                if (get_strbuf(o, "from_stock", from, sizeof(from)) < 0 ||
                    pool_from_stock_parse(from, &p.from_stock) < 0)
                        return -EINVAL;
        }
        if (json_get(o, "label") &&
            (get_strbuf(o, "label", p.label, sizeof(p.label)) < 0 || !pool_label_valid(p.label)))
                return -EINVAL;
        if (get_u64(o, "threads", &threads) < 0 || threads > UINT_MAX)
                return -EINVAL;
        p.threads = (unsigned)threads;
        if (get_u64(o, "ttl_seconds", &p.ttl_seconds) < 0 ||
            json_get_bool(o, "claimed", &p.claimed) < 0 ||
            get_i64(o, "created_at", &p.created_at) < 0 ||
            get_i64(o, "started_at", &p.started_at) < 0 ||
            get_i64(o, "finished_at", &p.finished_at) < 0 ||
            get_u64(o, "bytes_done", &p.bytes_done) < 0)
                return -EINVAL;
        if (get_strbuf(o, "error_slug", p.error_slug, sizeof(p.error_slug)) < 0 ||
            get_strbuf(o, "error_detail", p.error_detail, sizeof(p.error_detail)) < 0)
                return -EINVAL;
        if (json_get(o, "ready_boot_ns") && get_u64(o, "ready_boot_ns", &p.ready_boot_ns) < 0)
                return -EINVAL;
        if (json_get(o, "file_uid") || json_get(o, "file_gid")) {
                uint64_t uid, gid;
                if (get_u64(o, "file_uid", &uid) < 0 || get_u64(o, "file_gid", &gid) < 0 ||
                    uid >= UINT32_MAX || gid >= UINT32_MAX)
                        return -EINVAL;
                p.file_owned = true;
                p.file_uid = (uint32_t)uid;
                p.file_gid = (uint32_t)gid;
        }
        /* Optional, together, and only on a claimed pool. */
        if (json_get(o, "owner_pid") || json_get(o, "owner_start_time")) {
                if (get_int(o, "owner_pid", &p.owner_pid) < 0 || p.owner_pid <= 0 ||
                    get_u64(o, "owner_start_time", &p.owner_start) < 0 || !p.claimed)
                        return -EINVAL;
        }
        *ret = p;
        return 0;
}

static int parse_stock_target(const struct json *o, struct journal_stock_target *ret)
{
        struct journal_stock_target t = {};

        if (!json_is_object(o))
                return -EINVAL;
        if (get_int(o, "node", &t.node) < 0 || get_u64(o, "page_size_bytes", &t.page_size) < 0 ||
            get_u64(o, "size_bytes", &t.size_bytes) < 0 || get_u64(o, "count", &t.count) < 0)
                return -EINVAL;
        if (!power_of_two(t.page_size) || t.size_bytes == 0 || t.size_bytes % t.page_size)
                return -EINVAL;
        *ret = t;
        return 0;
}

/* ---- elastic policies (optional member "elastic_policies") ---- */

static int parse_elastic(const struct json *o, struct journal_elastic_policy *ret)
{
        struct journal_elastic_policy e = {};

        if (!json_is_object(o))
                return -EINVAL;
        if (get_int(o, "node", &e.node) < 0 || get_u64(o, "page_size_bytes", &e.page_size) < 0 ||
            get_u64(o, "min", &e.min) < 0 || get_u64(o, "max", &e.max) < 0 ||
            get_u64(o, "headroom", &e.headroom) < 0 || get_u64(o, "idle_seconds", &e.idle_seconds) < 0 ||
            json_get_bool(o, "allow_best_effort", &e.allow_best_effort) < 0)
                return -EINVAL;
        if (!power_of_two(e.page_size) || e.min > e.max || e.headroom > e.max || e.idle_seconds == 0)
                return -EINVAL;
        *ret = e;
        return 0;
}

static int parse_elastic_policies(const struct json *arr, struct journal_elastic_policy **ret, size_t *ret_n)
{
        _cleanup_free_ struct journal_elastic_policy *e = NULL;
        size_t n;

        if (!json_is_array(arr))
                return -EINVAL;
        n = json_array_len(arr);
        if (n && !(e = calloc(n, sizeof(*e))))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (parse_elastic(json_array_at(arr, i), &e[i]) < 0)
                        return -EINVAL;
                for (size_t k = 0; k < i; k++)
                        if (e[k].node == e[i].node && e[k].page_size == e[i].page_size)
                                return -EINVAL;
        }
        *ret = TAKE_PTR(e);
        *ret_n = n;
        return 0;
}

/* "elastic_policies" even when empty: a log record that removes the last
 * policy must say so (the snapshot leaves an empty list out). */
static void add_elastic_policies(struct json *doc, const struct journal_elastic_policy *e, size_t n)
{
        struct json *arr = json_add_array(doc, "elastic_policies");

        for (size_t i = 0; arr && i < n; i++)
                journal_add_elastic_policy(json_append_object(arr), &e[i]);
}

void journal_add_elastic_policy(struct json *o, const struct journal_elastic_policy *e)
{
        json_add_i64(o, "node", e->node);
        json_add_u64(o, "page_size_bytes", e->page_size);
        json_add_u64(o, "min", e->min);
        json_add_u64(o, "max", e->max);
        json_add_u64(o, "headroom", e->headroom);
        json_add_u64(o, "idle_seconds", e->idle_seconds);
        json_add_bool(o, "allow_best_effort", e->allow_best_effort);
}

static int cmp_pool_names(const void *a, const void *b)
{
        return strcmp(((const struct journal_pool *)a)->name,
                      ((const struct journal_pool *)b)->name);
}

static int cmp_reservations(const void *a, const void *b)
{
        const struct journal_reservation *x = a, *y = b;
        if (x->node != y->node)
                return x->node < y->node ? -1 : 1;
        if (x->page_size != y->page_size)
                return x->page_size < y->page_size ? -1 : 1;
        return 0;
}

/* Uniqueness checks on sorted copies, so the journal keeps its order. */
static int check_unique(const struct journal *j)
{
        _cleanup_free_ struct journal_pool *pools = NULL;
        _cleanup_free_ struct journal_reservation *res = NULL;

        if (j->n_pools > 1) {
                pools = malloc(j->n_pools * sizeof(*pools));
                if (!pools)
                        return -ENOMEM;
                memcpy(pools, j->pools, j->n_pools * sizeof(*pools));
                qsort(pools, j->n_pools, sizeof(*pools), cmp_pool_names);
                for (size_t i = 1; i < j->n_pools; i++)
                        if (cmp_pool_names(&pools[i - 1], &pools[i]) == 0)
                                return -EINVAL;
        }
        for (size_t i = 0; i < j->n_stock_targets; i++)
                for (size_t k = i + 1; k < j->n_stock_targets; k++) {
                        const struct journal_stock_target *a = &j->stock_targets[i], *b = &j->stock_targets[k];
                        if (a->node == b->node && a->page_size == b->page_size && a->size_bytes == b->size_bytes)
                                return -EINVAL;
                }
        if (j->n_reservations > 1) {
                res = malloc(j->n_reservations * sizeof(*res));
                if (!res)
                        return -ENOMEM;
                memcpy(res, j->reservations, j->n_reservations * sizeof(*res));
                qsort(res, j->n_reservations, sizeof(*res), cmp_reservations);
                for (size_t i = 1; i < j->n_reservations; i++)
                        if (cmp_reservations(&res[i - 1], &res[i]) == 0)
                                return -EINVAL;
        }
        return 0;
}

static void json_freep(struct json **v)
{
        json_free(*v);
}

static void journal_freep(struct journal **j)
{
        journal_free(*j);
}

/* The arrays of a snapshot or a log record; *RET owned by the caller
 * (NULL when empty). */
static int parse_reservations(const struct json *arr, struct journal_reservation **ret, size_t *ret_n)
{
        size_t n = json_array_len(arr);
        struct journal_reservation *v = NULL;

        if (!json_is_array(arr))
                return -EINVAL;
        if (n && !(v = calloc(n, sizeof(*v))))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (parse_reservation(json_array_at(arr, i), &v[i]) < 0) {
                        free(v);
                        return -EINVAL;
                }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int parse_pools(const struct json *arr, struct journal_pool **ret, size_t *ret_n)
{
        size_t n = json_array_len(arr);
        struct journal_pool *v = NULL;

        if (!json_is_array(arr))
                return -EINVAL;
        if (n && !(v = calloc(n, sizeof(*v))))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (parse_pool(json_array_at(arr, i), &v[i]) < 0) {
                        free(v);
                        return -EINVAL;
                }
        *ret = v;
        *ret_n = n;
        return 0;
}

static int parse_stock_targets(const struct json *arr, struct journal_stock_target **ret, size_t *ret_n)
{
        size_t n = json_array_len(arr);
        struct journal_stock_target *v = NULL;

        if (!json_is_array(arr))
                return -EINVAL;
        if (n && !(v = calloc(n, sizeof(*v))))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (parse_stock_target(json_array_at(arr, i), &v[i]) < 0) {
                        free(v);
                        return -EINVAL;
                }
        *ret = v;
        *ret_n = n;
        return 0;
}

/* A snapshot id: 16 lower-case hex digits. */
static bool snapshot_id_valid(const char *s)
{
        size_t n = strspn(s, "0123456789abcdef");
        return n == JOURNAL_SNAPSHOT_ID_LEN && s[n] == '\0';
}

int journal_parse(const char *buf, size_t len, struct journal **ret)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        _cleanup_(journal_freep) struct journal *j = NULL;
        const struct json *targets;
        uint64_t version;
        int r;

        r = json_parse(buf, len, &doc);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        if (!json_is_object(doc))
                return -EINVAL;
        if (get_u64(doc, "version", &version) < 0 || version == 0)
                return -EINVAL;
        /* A newer daemon wrote it: refuse it whole, never guess at it. */
        if (version > JOURNAL_VERSION)
                return -EPROTONOSUPPORT;

        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        if (get_strbuf(doc, "boot_id", j->boot_id, sizeof(j->boot_id)) < 0)
                return -EINVAL;
        /* Version 1 has no log, hence no snapshot id; version 2 has one
         * whenever a log may extend it (journal_format writes it when set). */
        if (version >= 2 && json_get(doc, "snapshot") &&
            (get_strbuf(doc, "snapshot", j->snapshot_id, sizeof(j->snapshot_id)) < 0 ||
             !snapshot_id_valid(j->snapshot_id)))
                return -EINVAL;

        r = parse_reservations(json_get(doc, "reservations"), &j->reservations, &j->n_reservations);
        if (r < 0)
                return r;
        r = parse_pools(json_get(doc, "pools"), &j->pools, &j->n_pools);
        if (r < 0)
                return r;
        targets = json_get(doc, "stock_targets");
        if (targets) {
                r = parse_stock_targets(targets, &j->stock_targets, &j->n_stock_targets);
                if (r < 0)
                        return r;
        }

        if (json_get(doc, "elastic_policies")) {
                r = parse_elastic_policies(json_get(doc, "elastic_policies"), &j->elastic, &j->n_elastic);
                if (r < 0)
                        return r;
        }
        r = check_unique(j);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

void journal_add_pool_identity(struct json *o, const char *name, int node, uint64_t page_size,
                               uint64_t size_bytes, enum pool_state state)
{
        json_add_str(o, "name", name);
        json_add_i64(o, "node", node);
        json_add_u64(o, "page_size_bytes", page_size);
        json_add_u64(o, "size_bytes", size_bytes);
        json_add_str(o, "state", pool_state_name(state));
}

/* ---- formatting ---- */

static void add_reservations(struct json *doc, const struct journal_reservation *res, size_t n)
{
        struct json *arr = json_add_array(doc, "reservations");

        for (size_t i = 0; arr && i < n; i++) {
                struct json *o = json_append_object(arr);
                json_add_i64(o, "node", res[i].node);
                json_add_u64(o, "page_size_bytes", res[i].page_size);
                json_add_u64(o, "count", res[i].count);
        }
}

static void add_pool_row(struct json *arr, const struct journal_pool *p)
{
        struct json *o = json_append_object(arr);

        journal_add_pool_identity(o, p->name, p->node, p->page_size, p->size_bytes, p->state);
        json_add_u64(o, "threads", p->threads);
        json_add_u64(o, "ttl_seconds", p->ttl_seconds);
        json_add_bool(o, "claimed", p->claimed);
        json_add_i64(o, "created_at", p->created_at);
        json_add_i64(o, "started_at", p->started_at);
        json_add_i64(o, "finished_at", p->finished_at);
        json_add_u64(o, "bytes_done", p->bytes_done);
        json_add_str(o, "error_slug", p->error_slug);
        json_add_str(o, "error_detail", p->error_detail);
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

/* "stock_targets" even when empty: a log record that empties them must say so. */
static void add_stock_targets(struct json *doc, const struct journal_stock_target *t, size_t n)
{
        struct json *arr = json_add_array(doc, "stock_targets");

        for (size_t i = 0; arr && i < n; i++) {
                struct json *o = json_append_object(arr);
                json_add_i64(o, "node", t[i].node);
                json_add_u64(o, "page_size_bytes", t[i].page_size);
                json_add_u64(o, "size_bytes", t[i].size_bytes);
                json_add_u64(o, "count", t[i].count);
        }
}

char *journal_format(const struct journal *j)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        struct json *arr;

        if (!j)
                return NULL;
        doc = json_new_object();
        json_add_u64(doc, "version", JOURNAL_VERSION);
        json_add_str(doc, "boot_id", j->boot_id);
        if (j->snapshot_id[0])
                json_add_str(doc, "snapshot", j->snapshot_id);
        add_reservations(doc, j->reservations, j->n_reservations);
        arr = json_add_array(doc, "pools");
        for (size_t i = 0; arr && i < j->n_pools; i++)
                add_pool_row(arr, &j->pools[i]);
        if (j->n_stock_targets)
                add_stock_targets(doc, j->stock_targets, j->n_stock_targets);
        if (j->n_elastic)
                add_elastic_policies(doc, j->elastic, j->n_elastic);
        return json_print(doc);
}

/* ---- the log ---- */

/* CRC-32C (Castagnoli, reflected 0x82F63B78), as iSCSI and ext4 use it: a
 * torn or flipped record must not pass for a good one. */
uint32_t journal_crc32c(const void *data, size_t len)
{
        static uint32_t table[256];
        static atomic_bool ready;
        const unsigned char *b = data;
        uint32_t crc = ~UINT32_C(0);

        if (!atomic_load_explicit(&ready, memory_order_acquire)) {
                for (uint32_t i = 0; i < 256; i++) {
                        uint32_t c = i;
                        for (int k = 0; k < 8; k++)
                                c = c & 1 ? (c >> 1) ^ UINT32_C(0x82F63B78) : c >> 1;
                        table[i] = c;       /* the same values whichever thread wins */
                }
                atomic_store_explicit(&ready, true, memory_order_release);
        }
        while (len--)
                crc = table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
        return ~crc;
}

/* One log line: 8 hex digits of CRC-32C over TEXT, a space, TEXT, "\n".
 * Caller frees. */
static char *log_line(const char *text, size_t *ret_len)
{
        size_t n = strlen(text);
        char *line = malloc(n + LOG_PREFIX_LEN + 2);

        if (!line)
                return NULL;
        snprintf(line, LOG_PREFIX_LEN + 1, "%08" PRIx32 " ", journal_crc32c(text, n));
        memcpy(line + LOG_PREFIX_LEN, text, n);
        line[LOG_PREFIX_LEN + n] = '\n';
        line[LOG_PREFIX_LEN + n + 1] = '\0';
        *ret_len = LOG_PREFIX_LEN + n + 1;
        return line;
}

/* Check LINE[LEN] (without its "\n"): its text, or NULL when the CRC or the
 * framing is off. */
static const char *line_text(const char *line, size_t len, size_t *ret_len)
{
        char hex[9];
        char *end;
        unsigned long crc;

        if (len < LOG_PREFIX_LEN + 2 || line[LOG_PREFIX_LEN - 1] != ' ')
                return NULL;
        memcpy(hex, line, 8);
        hex[8] = '\0';
        if (strspn(hex, "0123456789abcdef") != 8)
                return NULL;
        crc = strtoul(hex, &end, 16);
        if (journal_crc32c(line + LOG_PREFIX_LEN, len - LOG_PREFIX_LEN) != (uint32_t)crc)
                return NULL;
        *ret_len = len - LOG_PREFIX_LEN;
        return line + LOG_PREFIX_LEN;
}

static ssize_t find_row(const struct journal *j, const char *name)
{
        for (size_t i = 0; i < j->n_pools; i++)
                if (j->pools[i].name[0] && strcmp(j->pools[i].name, name) == 0)
                        return (ssize_t)i;
        return -1;
}

/* Apply one record to J.  Removed rows become tombstones (an empty name),
 * squeezed out once at the end of the log, so a long log replays in time
 * linear in its rows rather than moving the array on every removal. */
static int apply_record(struct journal *j, const char *text, size_t len, size_t *cap)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        _cleanup_free_ struct journal_pool *put = NULL;
        const struct json *drop, *v;
        size_t n_put = 0;
        int r;

        r = json_parse(text, len, &doc);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        if (!json_is_object(doc))
                return -EINVAL;
        drop = json_get(doc, "drop");
        if (!json_is_array(drop))
                return -EINVAL;
        r = parse_pools(json_get(doc, "put"), &put, &n_put);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_array_len(drop); i++) {
                char name[JOURNAL_NAME_MAX + 1];
                ssize_t at;

                if (get_strbuf(json_array_at(drop, i), "name", name, sizeof(name)) < 0)
                        return -EINVAL;
                at = find_row(j, name);
                if (at < 0)
                        return -EINVAL;       /* removes what is not there: not ours */
                j->pools[at].name[0] = '\0';
        }
        for (size_t i = 0; i < n_put; i++) {
                ssize_t at = find_row(j, put[i].name);
                if (at >= 0) {
                        j->pools[at] = put[i];
                        continue;
                }
                if (j->n_pools == *cap) {
                        size_t ncap = *cap ? *cap * 2 : 16;
                        struct journal_pool *np = realloc(j->pools, ncap * sizeof(*np));
                        if (!np)
                                return -ENOMEM;
                        j->pools = np;
                        *cap = ncap;
                }
                j->pools[j->n_pools++] = put[i];
        }
        if ((v = json_get(doc, "reservations"))) {
                struct journal_reservation *res;
                size_t n;
                r = parse_reservations(v, &res, &n);
                if (r < 0)
                        return r;
                free(j->reservations);
                j->reservations = res;
                j->n_reservations = n;
        }
        if ((v = json_get(doc, "stock_targets"))) {
                struct journal_stock_target *t;
                size_t n;
                r = parse_stock_targets(v, &t, &n);
                if (r < 0)
                        return r;
                free(j->stock_targets);
                j->stock_targets = t;
                j->n_stock_targets = n;
        }
        if ((v = json_get(doc, "elastic_policies"))) {
                struct journal_elastic_policy *e;
                size_t n;
                r = parse_elastic_policies(v, &e, &n);
                if (r < 0)
                        return r;
                free(j->elastic);
                j->elastic = e;
                j->n_elastic = n;
        }
        return 0;
}

/* Squeeze out the tombstones apply_record leaves. */
static void squeeze(struct journal *j)
{
        size_t w = 0;

        for (size_t i = 0; i < j->n_pools; i++)
                if (j->pools[i].name[0])
                        j->pools[w++] = j->pools[i];
        j->n_pools = w;
}

/* The log's first line: its version and the snapshot it extends.  1: it
 * extends J's snapshot; 0: another one (stale); <0: unusable. */
static int check_header(const struct journal *j, const char *text, size_t len)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        char id[sizeof(j->snapshot_id)];
        uint64_t version;

        if (json_parse(text, len, &doc) < 0 || !json_is_object(doc))
                return -EINVAL;
        if (get_u64(doc, "version", &version) < 0 || version < 2)
                return -EINVAL;
        if (version > JOURNAL_VERSION)
                return -EPROTONOSUPPORT;
        if (get_strbuf(doc, "snapshot", id, sizeof(id)) < 0 || !snapshot_id_valid(id))
                return -EINVAL;
        return j->snapshot_id[0] && strcmp(id, j->snapshot_id) == 0;
}

int journal_apply_log(struct journal *j, const char *buf, size_t len)
{
        size_t cap = j->n_pools, off = 0;
        bool header = true;
        int r;

        j->log_records = 0;
        j->log_torn = j->log_stale = false;
        while (off < len) {
                const char *nl = memchr(buf + off, '\n', len - off);
                const char *text;
                size_t tlen;

                if (!nl) {
                        /* An append cut short: never acknowledged. */
                        j->log_torn = true;
                        break;
                }
                text = line_text(buf + off, (size_t)(nl - (buf + off)), &tlen);
                off = (size_t)(nl - buf) + 1;
                if (!text) {
                        /* The last line may be a torn write whose newline
                         * reached the disk before the rest; a bad line with
                         * good ones after it is damage, not a crash. */
                        if (off == len) {
                                j->log_torn = true;
                                break;
                        }
                        return -EINVAL;
                }
                if (header) {
                        r = check_header(j, text, tlen);
                        if (r < 0)
                                return r;
                        if (r == 0) {
                                /* A compaction's new snapshot got in before
                                 * its new log: the snapshot holds all of it. */
                                j->log_stale = true;
                                return 0;
                        }
                        header = false;
                        continue;
                }
                r = apply_record(j, text, tlen, &cap);
                if (r < 0)
                        return r;
                j->log_records++;
        }
        squeeze(j);
        return check_unique(j);
}

/* ---- files ---- */

static int path_in(char *buf, size_t size, const char *dir, const char *name)
{
        int n = snprintf(buf, size, "%s/%s", dir, name);
        if (n < 0 || (size_t)n >= size)
                return -ENAMETOOLONG;
        return 0;
}

static int fsync_dir(const char *dir)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fsync(fd) < 0)
                return -errno;
        return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Read all of PATH (a regular file within the size limit); caller frees. */
static int read_small_file(const char *path, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len = 0, cap;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EISDIR;
        if (st.st_size > (off_t)JOURNAL_MAX_BYTES)
                return -EFBIG;
        /* Read to EOF rather than trusting st_size, into a buffer sized by it
         * (plus one, to see growth) so a small journal costs little. */
        cap = (size_t)st.st_size + 1;
        buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;
                if (len == cap) {
                        char *nb;
                        if (cap > JOURNAL_MAX_BYTES)
                                return -EFBIG;
                        cap = cap * 2 > JOURNAL_MAX_BYTES + 1 ? JOURNAL_MAX_BYTES + 1 : cap * 2;
                        nb = realloc(buf, cap + 1);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                n = read(fd, buf + len, cap - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > JOURNAL_MAX_BYTES)
                        return -EFBIG;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int journal_load(const char *dir, struct journal **ret)
{
        char path[PATH_MAX];
        _cleanup_free_ char *buf = NULL, *log = NULL;
        _cleanup_(journal_freep) struct journal *j = NULL;
        size_t len = 0, log_len = 0;
        int r;

        for (size_t i = 0; i < 2; i++) {
                r = path_in(path, sizeof(path), dir, i ? LOG_TMP : STATE_TMP);
                if (r < 0)
                        return r;
                if (unlink(path) < 0 && errno != ENOENT)
                        return -errno;
        }

        r = path_in(path, sizeof(path), dir, STATE_FILE);
        if (r < 0)
                return r;
        r = read_small_file(path, &buf, &len);
        if (r < 0)
                return r;
        r = journal_parse(buf, len, &j);
        if (r < 0)
                return r;

        r = path_in(path, sizeof(path), dir, LOG_FILE);
        if (r < 0)
                return r;
        r = read_small_file(path, &log, &log_len);
        if (r == -ENOENT) {
                j->log_stale = false;
        } else if (r < 0) {
                return r;
        } else {
                r = journal_apply_log(j, log, log_len);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(j);
        return 0;
}

/* Tests only: the errno every save fails with (0 = none), as a full disk
 * (ENOSPC), an I/O error (EIO) or a read-only remount (EROFS) would, after
 * the file it writes was opened: what was saved before stays as it was. */
static atomic_int save_fault;

void journal_inject_save_error(int err)
{
        atomic_store(&save_fault, err < 0 ? -err : err);
}

/* Tests only: where the process kills itself (journal.h). */
static atomic_int crash_point;

void journal_inject_crash(enum journal_crash_point at)
{
        atomic_store(&crash_point, (int)at);
}

static void crash_if(enum journal_crash_point at)
{
        if (atomic_load(&crash_point) == (int)at)
                raise(SIGKILL);
}

static struct journal *journal_dup(const struct journal *j)
{
        _cleanup_(journal_freep) struct journal *d = calloc(1, sizeof(*d));

        if (!d)
                return NULL;
        memcpy(d->boot_id, j->boot_id, sizeof(d->boot_id));
        memcpy(d->snapshot_id, j->snapshot_id, sizeof(d->snapshot_id));
        if (j->n_reservations &&
            !(d->reservations = malloc(j->n_reservations * sizeof(*d->reservations))))
                return NULL;
        if (j->n_pools && !(d->pools = malloc(j->n_pools * sizeof(*d->pools))))
                return NULL;
        if (j->n_stock_targets &&
            !(d->stock_targets = malloc(j->n_stock_targets * sizeof(*d->stock_targets))))
                return NULL;
        if (j->n_reservations)
                memcpy(d->reservations, j->reservations, j->n_reservations * sizeof(*d->reservations));
        if (j->n_pools)
                memcpy(d->pools, j->pools, j->n_pools * sizeof(*d->pools));
        if (j->n_stock_targets)
                memcpy(d->stock_targets, j->stock_targets, j->n_stock_targets * sizeof(*d->stock_targets));
        if (j->n_elastic && !(d->elastic = malloc(j->n_elastic * sizeof(*d->elastic))))
                return NULL;
        if (j->n_elastic)
                memcpy(d->elastic, j->elastic, j->n_elastic * sizeof(*d->elastic));
        d->n_reservations = j->n_reservations;
        d->n_pools = j->n_pools;
        d->n_stock_targets = j->n_stock_targets;
        d->n_elastic = j->n_elastic;
        return TAKE_PTR(d);
}

void journal_sync_reset(struct journal_sync *s)
{
        if (!s)
                return;
        if (s->base && s->log_fd >= 0)
                close(s->log_fd);
        journal_free(s->base);
        s->base = NULL;
        s->log_fd = -1;
        s->log_bytes = s->snapshot_bytes = 0;
        s->rows_stale = false;
}

/* Write TEXT[LEN] to TMP, fsync it and rename it to FINAL.  *RET_FD: the
 * file, still open for appending (NULL: closed). */
static int write_replace(const char *tmp, const char *final, const char *text, size_t len, int *ret_fd)
{
        int fd, r;

        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = -atomic_load(&save_fault);
        if (r == 0)
                r = write_all(fd, text, len);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        crash_if(ret_fd ? JOURNAL_CRASH_LOG_WRITTEN : JOURNAL_CRASH_SNAPSHOT_WRITTEN);
        if (r == 0 && rename(tmp, final) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                unlink(tmp);
                return r;
        }
        if (ret_fd)
                *ret_fd = fd;
        else if (close(fd) < 0)
                return -errno;
        return 0;
}

static void new_snapshot_id(char id[JOURNAL_SNAPSHOT_ID_LEN + 1])
{
        uint64_t v;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
                v = now_mono_ns() ^ ((uint64_t)getpid() << 32);
        snprintf(id, JOURNAL_SNAPSHOT_ID_LEN + 1, "%016" PRIx64, v);
}

/* Compaction: J as a new snapshot and an empty log that extends it.  The
 * snapshot is renamed in and the directory fsynced before the new log
 * replaces the old one, so the directory never names the old snapshot with
 * the new log (which would lose the old log's records); the new snapshot
 * with the old log is harmless (the old log is stale: another snapshot id). */
static int compact(const char *dir, const struct journal *j, struct journal_sync *s)
{
        char tmp[PATH_MAX], final[PATH_MAX], id[JOURNAL_SNAPSHOT_ID_LEN + 1];
        _cleanup_free_ char *text = NULL, *header = NULL, *htext = NULL;
        _cleanup_(journal_freep) struct journal *snap = NULL;
        struct journal *check = NULL;
        size_t hlen, tlen;
        int fd = -1, r;

        snap = journal_dup(j);
        if (!snap)
                return -ENOMEM;
        new_snapshot_id(id);
        memcpy(snap->snapshot_id, id, sizeof(id));
        text = journal_format(snap);
        if (!text)
                return -ENOMEM;
        tlen = strlen(text);
        r = journal_parse(text, tlen, &check);
        if (r < 0)
                return r;
        journal_free(check);
        if (asprintf(&htext, "{\"version\":%d,\"snapshot\":\"%s\"}", JOURNAL_VERSION, id) < 0) {
                htext = NULL;
                return -ENOMEM;
        }
        header = log_line(htext, &hlen);
        if (!header)
                return -ENOMEM;
        text[tlen] = '\n';      /* journal_format's NUL: the file ends in a newline */

        /* From here on what the log extends changes: until this is done,
         * nothing may append to the old one. */
        journal_sync_reset(s);
        r = path_in(tmp, sizeof(tmp), dir, STATE_TMP);
        if (r == 0)
                r = path_in(final, sizeof(final), dir, STATE_FILE);
        if (r == 0)
                r = write_replace(tmp, final, text, tlen + 1, NULL);
        crash_if(JOURNAL_CRASH_SNAPSHOT_RENAMED);
        if (r == 0)
                r = fsync_dir(dir);
        if (r == 0)
                r = path_in(tmp, sizeof(tmp), dir, LOG_TMP);
        if (r == 0)
                r = path_in(final, sizeof(final), dir, LOG_FILE);
        if (r == 0)
                r = write_replace(tmp, final, header, hlen, &fd);
        crash_if(JOURNAL_CRASH_LOG_RENAMED);
        if (r == 0)
                r = fsync_dir(dir);
        if (r < 0) {
                if (fd >= 0)
                        close(fd);
                return r;
        }
        if (!s) {
                close(fd);
                return 0;
        }
        s->base = TAKE_PTR(snap);
        s->log_fd = fd;
        s->log_bytes = hlen;
        s->snapshot_bytes = tlen + 1;
        s->full_saves++;
        return 0;
}

static int cmp_row_ptrs(const void *a, const void *b)
{
        return strcmp((*(const struct journal_pool *const *)a)->name,
                      (*(const struct journal_pool *const *)b)->name);
}

/* Equal as written: an owner's start time is not written without its pid. */
bool journal_rows_equal(const struct journal_pool *a, const struct journal_pool *b)
{
        return a->node == b->node && a->page_size == b->page_size &&
               a->size_bytes == b->size_bytes && a->state == b->state && a->threads == b->threads &&
               a->ttl_seconds == b->ttl_seconds && a->claimed == b->claimed &&
               a->created_at == b->created_at && a->started_at == b->started_at &&
               a->finished_at == b->finished_at && a->ready_boot_ns == b->ready_boot_ns &&
               a->bytes_done == b->bytes_done && a->owner_pid == b->owner_pid &&
               (a->owner_pid <= 0 || a->owner_start == b->owner_start) && a->from_stock == b->from_stock &&
               a->file_owned == b->file_owned &&
               (!a->file_owned || (a->file_uid == b->file_uid && a->file_gid == b->file_gid)) &&
               strcmp(a->name, b->name) == 0 && strcmp(a->error_slug, b->error_slug) == 0 &&
               strcmp(a->error_detail, b->error_detail) == 0 && strcmp(a->label, b->label) == 0;
}

/* Field by field: the structs have padding. */
static bool reservations_equal(const struct journal *a, const struct journal *b)
{
        if (a->n_reservations != b->n_reservations)
                return false;
        for (size_t i = 0; i < a->n_reservations; i++) {
                const struct journal_reservation *x = &a->reservations[i], *y = &b->reservations[i];
                if (x->node != y->node || x->page_size != y->page_size || x->count != y->count)
                        return false;
        }
        return true;
}

static bool targets_equal(const struct journal *a, const struct journal *b)
{
        if (a->n_stock_targets != b->n_stock_targets)
                return false;
        for (size_t i = 0; i < a->n_stock_targets; i++) {
                const struct journal_stock_target *x = &a->stock_targets[i], *y = &b->stock_targets[i];
                if (x->node != y->node || x->page_size != y->page_size || x->size_bytes != y->size_bytes ||
                    x->count != y->count)
                        return false;
        }
        return true;
}

static bool policies_equal(const struct journal *a, const struct journal *b)
{
        if (a->n_elastic != b->n_elastic)
                return false;
        for (size_t i = 0; i < a->n_elastic; i++) {
                const struct journal_elastic_policy *x = &a->elastic[i], *y = &b->elastic[i];
                if (x->node != y->node || x->page_size != y->page_size || x->min != y->min || x->max != y->max ||
                    x->headroom != y->headroom || x->idle_seconds != y->idle_seconds ||
                    x->allow_best_effort != y->allow_best_effort)
                        return false;
        }
        return true;
}

/* J's rows sorted by name, or -EINVAL if two share one. */
static int sorted_rows(const struct journal *j, const struct journal_pool ***ret)
{
        const struct journal_pool **v = malloc((j->n_pools ? j->n_pools : 1) * sizeof(*v));

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < j->n_pools; i++)
                v[i] = &j->pools[i];
        qsort(v, j->n_pools, sizeof(*v), cmp_row_ptrs);
        for (size_t i = 1; i < j->n_pools; i++)
                if (strcmp(v[i - 1]->name, v[i]->name) == 0) {
                        free(v);
                        return -EINVAL;
                }
        *ret = v;
        return 0;
}

/* The record that turns S->base into J: the rows that changed or are new
 * ("put"), those gone ("drop"), and the reservations, stock targets and
 * elastic policies whole when they changed.  *RET NULL: nothing changed. */
static int diff_record(const struct journal *base, const struct journal *j, char **ret)
{
        _cleanup_free_ const struct journal_pool **old = NULL, **new = NULL;
        _cleanup_(json_freep) struct json *doc = json_new_object();
        struct json *put = json_add_array(doc, "put"), *drop = json_add_array(doc, "drop");
        bool changed = false;
        size_t i = 0, k = 0;
        int r;

        if (!doc)
                return -ENOMEM;
        if ((r = sorted_rows(base, &old)) < 0 || (r = sorted_rows(j, &new)) < 0)
                return r;
        while (i < base->n_pools || k < j->n_pools) {
                int c = i == base->n_pools ? 1 : k == j->n_pools ? -1 : strcmp(old[i]->name, new[k]->name);
                if (c < 0) {
                        json_add_str(json_append_object(drop), "name", old[i++]->name);
                        changed = true;
                } else if (c > 0) {
                        add_pool_row(put, new[k++]);
                        changed = true;
                } else {
                        if (!journal_rows_equal(old[i], new[k])) {
                                add_pool_row(put, new[k]);
                                changed = true;
                        }
                        i++, k++;
                }
        }
        if (!reservations_equal(base, j)) {
                add_reservations(doc, j->reservations, j->n_reservations);
                changed = true;
        }
        if (!targets_equal(base, j)) {
                add_stock_targets(doc, j->stock_targets, j->n_stock_targets);
                changed = true;
        }
        if (!policies_equal(base, j)) {
                add_elastic_policies(doc, j->elastic, j->n_elastic);
                changed = true;
        }
        *ret = NULL;
        if (!changed)
                return 0;
        *ret = json_print(doc);
        return *ret ? 0 : -ENOMEM;
}

/* Apply the record TEXT to a copy of BASE, as a start would: a record this
 * daemon could not replay is refused before it is written.  *RET: the copy,
 * which is then exactly what the files hold (the next save's base).  The
 * rows are not compared with J again: the unit and fuzz tests hold the diff
 * to that, and a second diff would double the cost of a save. */
static int replay_record(const struct journal *base, const struct journal *j, const char *text,
                         struct journal **ret)
{
        _cleanup_(journal_freep) struct journal *copy = journal_dup(base);
        size_t cap;
        int r;

        if (!copy)
                return -ENOMEM;
        cap = copy->n_pools;
        r = apply_record(copy, text, strlen(text), &cap);
        if (r < 0)
                return r;
        squeeze(copy);
        if (copy->n_pools != j->n_pools)
                return -EINVAL;
        *ret = TAKE_PTR(copy);
        return 0;
}

/* Append one record and fdatasync it; NEXT becomes S's base.  On any
 * failure the log is cut back to where it was and S forgotten, so the next
 * save compacts. */
static int append_text(struct journal_sync *s, const char *text);

static int append(struct journal_sync *s, struct journal *next, const char *text)
{
        int r = append_text(s, text);

        if (r < 0) {
                journal_free(next);
                return r;
        }
        journal_free(s->base);
        s->base = next;
        return 0;
}

/* The write of one record (append's, and journal_append_rows'); on failure
 * the log is cut back and S reset. */
static int append_text(struct journal_sync *s, const char *text)
{
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r;

        line = log_line(text, &len);
        if (!line)
                return -ENOMEM;
        r = -atomic_load(&save_fault);
        if (r == 0 && atomic_load(&crash_point) == JOURNAL_CRASH_APPEND_HALF) {
                (void)write_all(s->log_fd, line, len / 2);
                (void)fdatasync(s->log_fd);
                raise(SIGKILL);
        }
        if (r == 0)
                r = write_all(s->log_fd, line, len);
        if (r == 0 && fdatasync(s->log_fd) < 0)
                r = -errno;
        if (r < 0) {
                if (ftruncate(s->log_fd, (off_t)s->log_bytes) == 0)
                        (void)fdatasync(s->log_fd);
                journal_sync_reset(s);
                return r;
        }
        s->log_bytes += len;
        s->light_saves++;
        return 0;
}

int journal_save_sync(const char *dir, const struct journal *j, struct journal_sync *s)
{
        _cleanup_free_ char *text = NULL;
        size_t bound;
        int r;

        /* A new boot or a new directory: the log's rows mean nothing there.
         * Rows not kept (journal_append_rows): nothing to diff against. */
        if (!s || !s->base || s->rows_stale || strcmp(s->base->boot_id, j->boot_id) != 0)
                return compact(dir, j, s);
        r = diff_record(s->base, j, &text);
        if (r < 0)
                return r;
        if (!text) {
                s->light_saves++;       /* already durable */
                return 0;
        }
        struct journal *next = NULL;
        r = replay_record(s->base, j, text, &next);
        if (r < 0)
                return r;
        /* Redis's AOF rewrite: once the log is as large as the snapshot (or a
         * floor, for small ones), fold it in, so a start replays at most about
         * a snapshot's worth of records and the files stay under the limit. */
        bound = s->snapshot_bytes > LOG_COMPACT_MIN ? s->snapshot_bytes : LOG_COMPACT_MIN;
        if (s->log_bytes + strlen(text) + LOG_PREFIX_LEN + 1 > bound) {
                journal_free(next);
                return compact(dir, j, s);
        }
        return append(s, next, text);
}

/* A record journal_append_rows made, read back as a start would read it:
 * N_PUT rows that parse, N_DROP names that follow the name rule. */
static int check_rows_record(const char *text, size_t n_put, size_t n_drop)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        _cleanup_free_ struct journal_pool *put = NULL;
        const struct json *drop;
        size_t n = 0;
        int r;

        r = json_parse(text, strlen(text), &doc);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        drop = json_get(doc, "drop");
        if (!json_is_array(drop) || json_array_len(drop) != n_drop)
                return -EINVAL;
        for (size_t i = 0; i < n_drop; i++) {
                char name[JOURNAL_NAME_MAX + 1];
                if (get_strbuf(json_array_at(drop, i), "name", name, sizeof(name)) < 0)
                        return -EINVAL;
        }
        r = parse_pools(json_get(doc, "put"), &put, &n);
        if (r < 0)
                return r;
        return n == n_put ? 0 : -EINVAL;
}

int journal_append_rows(const struct journal *head, const struct journal_pool *put, size_t n_put,
                        const char (*drop)[JOURNAL_NAME_MAX + 1], size_t n_drop, struct journal_sync *s)
{
        _cleanup_(json_freep) struct json *doc = json_new_object();
        _cleanup_free_ char *text = NULL;
        _cleanup_(journal_freep) struct journal *next_head = NULL;
        bool resv, targets, policies;
        size_t bound;
        int r;

        if (!s || !s->base || strcmp(s->base->boot_id, head->boot_id) != 0)
                return -EAGAIN;
        if (!doc)
                return -ENOMEM;
        resv = !reservations_equal(s->base, head);
        targets = !targets_equal(s->base, head);
        policies = !policies_equal(s->base, head);
        if (!n_put && !n_drop && !resv && !targets && !policies) {
                s->light_saves++;       /* already durable */
                return 0;
        }
        struct json *jput = json_add_array(doc, "put"), *jdrop = json_add_array(doc, "drop");
        for (size_t i = 0; i < n_drop; i++)
                json_add_str(json_append_object(jdrop), "name", drop[i]);
        for (size_t i = 0; i < n_put; i++)
                add_pool_row(jput, &put[i]);
        if (resv)
                add_reservations(doc, head->reservations, head->n_reservations);
        if (targets)
                add_stock_targets(doc, head->stock_targets, head->n_stock_targets);
        if (policies)
                add_elastic_policies(doc, head->elastic, head->n_elastic);
        text = json_print(doc);
        if (!text)
                return -ENOMEM;
        bound = s->snapshot_bytes > LOG_COMPACT_MIN ? s->snapshot_bytes : LOG_COMPACT_MIN;
        if (s->log_bytes + strlen(text) + LOG_PREFIX_LEN + 1 > bound)
                return -EAGAIN;
        r = check_rows_record(text, n_put, n_drop);
        if (r < 0)
                return r;
        /* What the files will hold besides the rows, for the next save's
         * comparison; made before the write, so a failure to copy writes
         * nothing. */
        struct journal h = *head;
        h.n_pools = 0;
        h.pools = NULL;
        next_head = journal_dup(&h);
        if (!next_head)
                return -ENOMEM;
        memcpy(next_head->snapshot_id, s->base->snapshot_id, sizeof(next_head->snapshot_id));
        r = append_text(s, text);
        if (r < 0)
                return r;
        journal_free(s->base);
        s->base = TAKE_PTR(next_head);
        s->rows_stale = true;
        return 0;
}

int journal_save(const char *dir, const struct journal *j)
{
        return compact(dir, j, NULL);
}

const char *journal_load_error(int r)
{
        switch (r) {
        case -EINVAL:
                return "it is not a valid journal (corrupt or truncated JSON, or a member missing, "
                       "of the wrong type or out of range)";
        case -EFBIG:
                return "it is larger than the 16 MiB limit, so it is not ours";
        case -EISDIR:
                return "it is not a regular file";
        case -EPROTONOSUPPORT:
                return "a newer hpwarmd wrote it (journal version above " STRINGIFY(JOURNAL_VERSION) ")";
        default:
                return strerror(-r);
        }
}

/* Several quarantines within one second get a counter suffix. */
#define QUARANTINE_TRIES 100

/* The log goes aside with its snapshot, under the same SUFFIX: apart, it
 * means nothing, and the next start must not replay it. */
static int quarantine_log(const char *dir, const char *suffix)
{
        char from[PATH_MAX], to[PATH_MAX];
        int r, n;

        r = path_in(from, sizeof(from), dir, LOG_FILE);
        if (r < 0)
                return r;
        n = snprintf(to, sizeof(to), "%s%s", from, suffix);
        if (n < 0 || (size_t)n >= sizeof(to))
                return -ENAMETOOLONG;
        if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static bool quarantine_log_free(const char *dir, const char *suffix)
{
        char to[PATH_MAX];
        struct stat st;
        int n = snprintf(to, sizeof(to), "%s/" LOG_FILE "%s", dir, suffix);

        return n > 0 && (size_t)n < sizeof(to) && lstat(to, &st) < 0 && errno == ENOENT;
}

int journal_quarantine(const char *dir)
{
        char from[PATH_MAX], to[PATH_MAX];
        long now = (long)time(NULL);
        int r;

        r = path_in(from, sizeof(from), dir, STATE_FILE);
        if (r < 0)
                return r;
        for (int i = 0; i < QUARANTINE_TRIES; i++) {
                int n = i == 0 ? snprintf(to, sizeof(to), "%s.corrupt-%ld", from, now)
                               : snprintf(to, sizeof(to), "%s.corrupt-%ld.%d", from, now, i);
                if (n < 0 || (size_t)n >= sizeof(to))
                        return -ENAMETOOLONG;
                /* A suffix free for both names, so the pair stays a pair. */
                if (!quarantine_log_free(dir, to + strlen(from)))
                        continue;
                if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
                        return quarantine_log(dir, to + strlen(from)) ?: fsync_dir(dir);
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}
