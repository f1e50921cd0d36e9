/* journal_log: the daemon's durable state: a snapshot (state.json, one JSON
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
 * process always compacts: it never appends after a tail it did not write.
 *
 * The journal is three files (journal_internal.h): this one, the change log
 * and what uses it (replay, append, compaction, load); journal_codec.c, the
 * documents as JSON; journal_files.c, the state directory and durability. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
#include "journal_internal.h"
#include "json.h"
#include "record.h"
#include "util.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
/* "xxxxxxxx ": the CRC in front of each log line. */
#define LOG_PREFIX_LEN 9
/* The log is compacted once it is as large as the snapshot, but never
 * below this: with a few pools, compacting every few changes would cost
 * two directory fsyncs each. */
#define LOG_COMPACT_MIN (256 * KIB)

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
        _cleanup_free_ struct pool_record *put = NULL;
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
        r = journal_parse_pools(json_get(doc, "put"), &put, &n_put);
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_array_len(drop); i++) {
                char name[JOURNAL_NAME_MAX + 1];
                ssize_t at;

                if (journal_get_strbuf(json_array_at(drop, i), "name", name, sizeof(name)) < 0)
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
                        struct pool_record *np = realloc(j->pools, ncap * sizeof(*np));
                        if (!np)
                                return -ENOMEM;
                        j->pools = np;
                        *cap = ncap;
                }
                j->pools[j->n_pools++] = put[i];
        }
        if ((v = json_get(doc, "reservations"))) {
                struct reservation_record *res;
                size_t n;
                r = journal_parse_reservations(v, &res, &n);
                if (r < 0)
                        return r;
                free(j->reservations);
                j->reservations = res;
                j->n_reservations = n;
        }
        if ((v = json_get(doc, "stock_targets"))) {
                struct stock_target_record *t;
                size_t n;
                r = journal_parse_stock_targets(v, &t, &n);
                if (r < 0)
                        return r;
                free(j->stock_targets);
                j->stock_targets = t;
                j->n_stock_targets = n;
        }
        if ((v = json_get(doc, "elastic_policies"))) {
                struct elastic_policy_record *e;
                size_t n;
                r = journal_parse_elastic_policies(v, &e, &n);
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
        if (json_get_u64(doc, "version", &version) < 0 || version < 2)
                return -EINVAL;
        if (version > JOURNAL_VERSION)
                return -EPROTONOSUPPORT;
        if (journal_get_strbuf(doc, "snapshot", id, sizeof(id)) < 0 || !journal_snapshot_id_valid(id))
                return -EINVAL;
        return j->snapshot_id[0] && strcmp(id, j->snapshot_id) == 0;
}

int journal_apply_log(struct journal *j, const char *buf, size_t len)
{
        size_t cap, off = 0;
        bool header = true;
        int r;

        assert_return(j, -EINVAL);
        assert_return(buf || len == 0, -EINVAL);
        cap = j->n_pools;
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
        return journal_check_unique(j);
}


int journal_load(const char *dir, struct journal **ret)
{
        char path[PATH_MAX];
        _cleanup_free_ char *buf = NULL, *log = NULL;
        _cleanup_(journal_freep) struct journal *j = NULL;
        size_t len = 0, log_len = 0;
        int r;

        assert_return(dir, -EINVAL);
        assert_return(ret, -EINVAL);
        for (size_t i = 0; i < 2; i++) {
                r = journal_path_in(path, sizeof(path), dir, i ? LOG_TMP : STATE_TMP);
                if (r < 0)
                        return r;
                if (unlink(path) < 0 && errno != ENOENT)
                        return -errno;
        }

        r = journal_path_in(path, sizeof(path), dir, STATE_FILE);
        if (r < 0)
                return r;
        r = journal_read_small_file(path, &buf, &len);
        if (r < 0)
                return r;
        r = journal_parse(buf, len, &j);
        if (r < 0)
                return r;

        r = journal_path_in(path, sizeof(path), dir, LOG_FILE);
        if (r < 0)
                return r;
        r = journal_read_small_file(path, &log, &log_len);
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
        journal_new_snapshot_id(id);
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
        r = journal_path_in(tmp, sizeof(tmp), dir, STATE_TMP);
        if (r == 0)
                r = journal_path_in(final, sizeof(final), dir, STATE_FILE);
        if (r == 0)
                r = journal_write_replace(tmp, final, text, tlen + 1, NULL);
        journal_crash_if(JOURNAL_CRASH_SNAPSHOT_RENAMED);
        if (r == 0)
                r = journal_fsync_dir(dir);
        if (r == 0)
                r = journal_path_in(tmp, sizeof(tmp), dir, LOG_TMP);
        if (r == 0)
                r = journal_path_in(final, sizeof(final), dir, LOG_FILE);
        if (r == 0)
                r = journal_write_replace(tmp, final, header, hlen, &fd);
        journal_crash_if(JOURNAL_CRASH_LOG_RENAMED);
        if (r == 0)
                r = journal_fsync_dir(dir);
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
        return strcmp((*(const struct pool_record *const *)a)->name,
                      (*(const struct pool_record *const *)b)->name);
}


/* J's rows sorted by name, or -EINVAL if two share one. */
static int sorted_rows(const struct journal *j, const struct pool_record ***ret)
{
        const struct pool_record **v = malloc((j->n_pools ? j->n_pools : 1) * sizeof(*v));

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
        _cleanup_free_ const struct pool_record **old = NULL, **new = NULL;
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
                        journal_add_pool_row(put, new[k++]);
                        changed = true;
                } else {
                        if (!record_pool_equal(old[i], new[k])) {
                                journal_add_pool_row(put, new[k]);
                                changed = true;
                        }
                        i++, k++;
                }
        }
        if (!journal_reservations_equal(base, j)) {
                journal_add_reservations(doc, j->reservations, j->n_reservations);
                changed = true;
        }
        if (!journal_targets_equal(base, j)) {
                journal_add_stock_targets(doc, j->stock_targets, j->n_stock_targets);
                changed = true;
        }
        if (!journal_policies_equal(base, j)) {
                journal_add_elastic_policies(doc, j->elastic, j->n_elastic);
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
        r = journal_injected_error();
        if (r == 0 && journal_crash_armed(JOURNAL_CRASH_APPEND_HALF)) {
                (void)journal_write_all(s->log_fd, line, len / 2);
                (void)fdatasync(s->log_fd);
                raise(SIGKILL);
        }
        if (r == 0)
                r = journal_write_all(s->log_fd, line, len);
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

        assert_return(dir, -EINVAL);
        assert_return(j, -EINVAL);
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
        _cleanup_free_ struct pool_record *put = NULL;
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
                if (journal_get_strbuf(json_array_at(drop, i), "name", name, sizeof(name)) < 0)
                        return -EINVAL;
        }
        r = journal_parse_pools(json_get(doc, "put"), &put, &n);
        if (r < 0)
                return r;
        return n == n_put ? 0 : -EINVAL;
}

int journal_append_rows(const struct journal *head, const struct pool_record *put, size_t n_put,
                        const char (*drop)[JOURNAL_NAME_MAX + 1], size_t n_drop, struct journal_sync *s)
{
        _cleanup_(json_freep) struct json *doc = json_new_object();
        _cleanup_free_ char *text = NULL;
        _cleanup_(journal_freep) struct journal *next_head = NULL;
        bool resv, targets, policies;
        size_t bound;
        int r;

        assert_return(head, -EINVAL);
        assert_return(put || n_put == 0, -EINVAL);
        assert_return(drop || n_drop == 0, -EINVAL);
        if (!s || !s->base || strcmp(s->base->boot_id, head->boot_id) != 0)
                return -EAGAIN;
        if (!doc)
                return -ENOMEM;
        resv = !journal_reservations_equal(s->base, head);
        targets = !journal_targets_equal(s->base, head);
        policies = !journal_policies_equal(s->base, head);
        if (!n_put && !n_drop && !resv && !targets && !policies) {
                s->light_saves++;       /* already durable */
                return 0;
        }
        struct json *jput = json_add_array(doc, "put"), *jdrop = json_add_array(doc, "drop");
        for (size_t i = 0; i < n_drop; i++)
                json_add_str(json_append_object(jdrop), "name", drop[i]);
        for (size_t i = 0; i < n_put; i++)
                journal_add_pool_row(jput, &put[i]);
        if (resv)
                journal_add_reservations(doc, head->reservations, head->n_reservations);
        if (targets)
                journal_add_stock_targets(doc, head->stock_targets, head->n_stock_targets);
        if (policies)
                journal_add_elastic_policies(doc, head->elastic, head->n_elastic);
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
        assert_return(dir, -EINVAL);
        assert_return(j, -EINVAL);
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

