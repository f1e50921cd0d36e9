/* journal: the daemon's durable state as one small JSON document.
 *
 * Format, version 1:
 *   {"version":1,"boot_id":"...",
 *    "reservations":[{"node":0,"page_size_bytes":2097152,"count":64}],
 *    "pools":[{"name":..,"node":..,"page_size_bytes":..,"size_bytes":..,
 *              "state":"warming|ready|failed|cancelled","threads":..,
 *              "ttl_seconds":..,"claimed":..,"created_at":..,"started_at":..,
 *              "finished_at":..,"bytes_done":..,"error_slug":"..",
 *              "error_detail":"..",
 *              "owner_pid":..,"owner_start_time":..,"from_stock":".."}],
 *    "stock_targets":[{"node":0,"page_size_bytes":..,"size_bytes":..,
 *                      "count":..}]}
 *
 * Stock files are rows of "pools" with a stock state
 * ("stock-warming", "stock", "dirty", "recycling") and a stock name
 * (pool_state.h: a first character no pool name has).  "stock_targets" and "from_stock" (written only when not
 * "none") are optional like the owner members, for the same reason.
 *
 * owner_pid and owner_start_time (a claimed pool bound to its VMM process,
 * and that process's start time, to tell it from a later one with the same
 * pid) came later and are optional: absent means no owner, so older journals
 * load as they are.  They are written only for a pool that has an owner.
 * The version stays 1 on purpose: an older daemon ignores them (its pools
 * then stay claimed, as they did) instead of refusing the whole journal.
 * "ready_boot_ns" (CLOCK_BOOTTIME when a pool turned ready, which its TTL
 * counts from; meaningful only under the same boot_id, and pools of another
 * boot are dropped anyway) is optional the same way: absent, the TTL counts
 * from finished_at as seen on the wall clock at load.
 *
 * Parsing is strict: every member listed above is required with its type,
 * numbers are exact integers (json.h), names follow the pool name rule, pool
 * names and (node, page size) reservation pairs are unique, page sizes are
 * powers of two and pool sizes positive multiples of them.  Members not
 * listed are ignored (a format that breaks readers bumps "version").  A
 * journal that is off in any way is -EINVAL: the caller quarantines it rather
 * than guess.  journal_save refuses to write a document it could not read
 * back, so a bug elsewhere surfaces at save time, not at the next start.
 *
 * Durability: write state.json.tmp, fsync it, rename it over state.json,
 * fsync the directory.  A crash leaves either the old or the new file, plus at
 * most a stale .tmp, which journal_load removes.
 *
 * The directory fsync only makes the rename itself survive a power loss or
 * a kernel crash, and both are reboots: a later start drops every pool row of
 * another boot (hugetlbfs forgot the files), keeping only the reservations
 * and the stock targets.  So a save through a journal_sync whose
 * reservations and stock targets are those the last fully synced save made
 * durable skips it: after a reboot the directory names either that file or a
 * later one, each complete (fsynced before its rename) and each with the same
 * reservations and targets.  A daemon crash (kill -9) loses nothing either
 * way: the rename is done, in the page cache, before the save returns.  This
 * halves the disk flushes of a stock hand-out, which is on the request path. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "json.h"
#include "util.h"

#define JOURNAL_VERSION 1
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#define STATE_FILE "state.json"
#define STATE_TMP "state.json.tmp"
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

int journal_parse(const char *buf, size_t len, struct journal **ret)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        _cleanup_(journal_freep) struct journal *j = NULL;
        const struct json *res, *pools;
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

        res = json_get(doc, "reservations");
        pools = json_get(doc, "pools");
        if (!json_is_array(res) || !json_is_array(pools))
                return -EINVAL;

        j->n_reservations = json_array_len(res);
        if (j->n_reservations) {
                j->reservations = calloc(j->n_reservations, sizeof(*j->reservations));
                if (!j->reservations)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < j->n_reservations; i++)
                if (parse_reservation(json_array_at(res, i), &j->reservations[i]) < 0)
                        return -EINVAL;

        j->n_pools = json_array_len(pools);
        if (j->n_pools) {
                j->pools = calloc(j->n_pools, sizeof(*j->pools));
                if (!j->pools)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < j->n_pools; i++)
                if (parse_pool(json_array_at(pools, i), &j->pools[i]) < 0)
                        return -EINVAL;

        const struct json *targets = json_get(doc, "stock_targets");
        if (targets) {
                if (!json_is_array(targets))
                        return -EINVAL;
                j->n_stock_targets = json_array_len(targets);
                if (j->n_stock_targets) {
                        j->stock_targets = calloc(j->n_stock_targets, sizeof(*j->stock_targets));
                        if (!j->stock_targets)
                                return -ENOMEM;
                }
                for (size_t i = 0; i < j->n_stock_targets; i++)
                        if (parse_stock_target(json_array_at(targets, i), &j->stock_targets[i]) < 0)
                                return -EINVAL;
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

char *journal_format(const struct journal *j)
{
        _cleanup_(json_freep) struct json *doc = NULL;
        struct json *arr;

        if (!j)
                return NULL;
        doc = json_new_object();
        json_add_u64(doc, "version", JOURNAL_VERSION);
        json_add_str(doc, "boot_id", j->boot_id);

        arr = json_add_array(doc, "reservations");
        for (size_t i = 0; arr && i < j->n_reservations; i++) {
                const struct journal_reservation *r = &j->reservations[i];
                struct json *o = json_append_object(arr);
                json_add_i64(o, "node", r->node);
                json_add_u64(o, "page_size_bytes", r->page_size);
                json_add_u64(o, "count", r->count);
        }

        arr = json_add_array(doc, "pools");
        for (size_t i = 0; arr && i < j->n_pools; i++) {
                const struct journal_pool *p = &j->pools[i];
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
        arr = j->n_stock_targets ? json_add_array(doc, "stock_targets") : NULL;
        for (size_t i = 0; arr && i < j->n_stock_targets; i++) {
                const struct journal_stock_target *t = &j->stock_targets[i];
                struct json *o = json_append_object(arr);
                json_add_i64(o, "node", t->node);
                json_add_u64(o, "page_size_bytes", t->page_size);
                json_add_u64(o, "size_bytes", t->size_bytes);
                json_add_u64(o, "count", t->count);
        }
        return json_print(doc);
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

int journal_load(const char *dir, struct journal **ret)
{
        char path[PATH_MAX];
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len = 0;
        int r;

        r = path_in(path, sizeof(path), dir, STATE_TMP);
        if (r < 0)
                return r;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;

        r = path_in(path, sizeof(path), dir, STATE_FILE);
        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EISDIR;
        if (st.st_size > (off_t)JOURNAL_MAX_BYTES)
                return -EFBIG;

        /* Read to EOF rather than trusting st_size. */
        buf = malloc(JOURNAL_MAX_BYTES + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(fd, buf + len, JOURNAL_MAX_BYTES + 1 - len);
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
        return journal_parse(buf, len, ret);
}

/* Tests only: the errno every save fails with (0 = none), as a full disk
 * (ENOSPC), an I/O error (EIO) or a read-only remount (EROFS) would, after
 * the temporary file was opened: the old state.json stays as it was. */
static atomic_int save_fault;

void journal_inject_save_error(int err)
{
        atomic_store(&save_fault, err < 0 ? -err : err);
}

/* The part of J that must survive a reboot, as text (caller frees): what a
 * save compares to decide whether the directory needs its fsync. */
static char *format_durable(const struct journal *j)
{
        struct journal d = {
                .n_reservations = j->n_reservations,
                .reservations = j->reservations,
                .n_stock_targets = j->n_stock_targets,
                .stock_targets = j->stock_targets,
        };
        return journal_format(&d);
}

void journal_sync_reset(struct journal_sync *s)
{
        if (!s)
                return;
        free(s->durable);
        s->durable = NULL;
}

int journal_save_sync(const char *dir, const struct journal *j, struct journal_sync *s)
{
        char tmp[PATH_MAX], final[PATH_MAX];
        _cleanup_free_ char *text = NULL, *durable = NULL;
        struct journal *check = NULL;
        bool dir_sync;
        int fd, r;

        r = path_in(tmp, sizeof(tmp), dir, STATE_TMP);
        if (r < 0)
                return r;
        r = path_in(final, sizeof(final), dir, STATE_FILE);
        if (r < 0)
                return r;

        text = journal_format(j);
        if (!text)
                return -ENOMEM;
        r = journal_parse(text, strlen(text), &check);
        if (r < 0)
                return r;
        journal_free(check);
        if (s) {
                durable = format_durable(j);
                if (!durable)
                        return -ENOMEM;
        }
        dir_sync = !s || !s->durable || strcmp(s->durable, durable) != 0;

        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = -atomic_load(&save_fault);
        if (r == 0)
                r = write_all(fd, text, strlen(text));
        if (r == 0)
                r = write_all(fd, "\n", 1);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, final) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return r;
        }
        if (!dir_sync) {
                s->light_saves++;
                return 0;
        }
        /* Until this fsync is known done, the next save syncs too. */
        journal_sync_reset(s);
        r = fsync_dir(dir);
        if (r < 0)
                return r;
        if (s) {
                s->durable = TAKE_PTR(durable);
                s->full_saves++;
        }
        return 0;
}

int journal_save(const char *dir, const struct journal *j)
{
        return journal_save_sync(dir, j, NULL);
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
                if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
                        return fsync_dir(dir);
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}
