/* journal: the daemon's durable state — reservations it made, pools it
 * holds, stock targets — as a snapshot ("state.json") and a log of the
 * changes since ("state.log", one checksummed record per save, fdatasynced),
 * compacted into a new snapshot when it grows (journal.c has the format).
 * Stamped with the kernel's boot_id, since a reboot empties hugetlbfs and
 * the runtime pools. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool_state.h"

#define JOURNAL_NAME_MAX POOL_NAME_MAX
#define JOURNAL_SNAPSHOT_ID_LEN 16

struct journal_reservation {
        int node;
        uint64_t page_size;
        uint64_t count;
};

struct journal_pool {
        char name[JOURNAL_NAME_MAX + 1];
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
struct journal_stock_target {
        int node;
        uint64_t page_size;
        uint64_t size_bytes;
        uint64_t count;
};

/* An elastic policy (pools_elastic.c): the pool of (NODE, PAGE_SIZE) grows
 * on demand up to MAX and gives back free pages beyond HEADROOM that stayed
 * free for IDLE_SECONDS, never below MIN.  Counts in pages. */
struct journal_elastic_policy {
        int node;
        uint64_t page_size;
        uint64_t min, max, headroom, idle_seconds;
        bool allow_best_effort;
};

struct journal {
        char boot_id[40];        /* /proc/sys/kernel/random/boot_id */
        size_t n_reservations;
        struct journal_reservation *reservations;
        size_t n_pools;
        struct journal_pool *pools;
        /* Optional ("stock_targets"): older journals have none.  Unique by
         * (node, page size, size). */
        size_t n_stock_targets;
        struct journal_stock_target *stock_targets;
        /* Optional ("elastic_policies"): older journals have none.  Unique
         * by (node, page size). */
        size_t n_elastic;
        struct journal_elastic_policy *elastic;
        /* The snapshot's id ("" = none: a version 1 file, or not saved). */
        char snapshot_id[JOURNAL_SNAPSHOT_ID_LEN + 1];
        /* What journal_load (journal_apply_log) found in the log, to report:
         * records replayed; a torn last line ignored; a log of another
         * snapshot ignored (a compaction cut short). */
        size_t log_records;
        bool log_torn, log_stale;
};

/* Strict parse (unknown states, bad types, names that break the name rule
 * — a stock row has a stock name and a stock state, a pool neither —,
 * duplicate pool names -> -EINVAL).  Caller owns *ret (journal_free). */
int journal_parse(const char *buf, size_t len, struct journal **ret);
/* Caller frees. */
char *journal_format(const struct journal *j);
void journal_free(struct journal *j); /* accepts NULL */

/* Replay the log text BUF[LEN] onto J (its snapshot): 0, -EINVAL (damage,
 * see journal.c) or -EPROTONOSUPPORT; J is half-changed on failure. */
int journal_apply_log(struct journal *j, const char *buf, size_t len);
/* CRC-32C of DATA[LEN], as the log's lines carry it. */
uint32_t journal_crc32c(const void *data, size_t len);

/* Load DIR/state.json and replay DIR/state.log onto it.  Removes the
 * temporary files a crash may leave (state.json.tmp, state.log.tmp).
 * -ENOENT when there is none (first start); a journal that is there but
 * cannot be used is
 *   -EINVAL           corrupt or truncated (not valid, or a member off);
 *   -EFBIG            over the size limit;
 *   -EISDIR           not a regular file;
 *   -EPROTONOSUPPORT  a newer version than this daemon reads;
 *   or open/read's -errno (unreadable).
 * The caller refuses to start on any of these unless told to discard the
 * journal (journal_quarantine): a journal it cannot read says nothing about
 * which files are in use. */
int journal_load(const char *dir, struct journal **ret);
/* What is wrong with a journal journal_load refused with R, for a message. */
const char *journal_load_error(int r);
/* Tests only: make every journal_save fail with ERR (ENOSPC, EIO, EROFS...)
 * until called with 0. */
void journal_inject_save_error(int err);
/* Tests only: the save that reaches AT kills its own process (SIGKILL), as
 * a kill -9 landing there would: between the steps of a compaction, or
 * halfway through an append's write. */
enum journal_crash_point {
        JOURNAL_CRASH_NONE,
        JOURNAL_CRASH_SNAPSHOT_WRITTEN,  /* new snapshot fsynced, not renamed */
        JOURNAL_CRASH_SNAPSHOT_RENAMED,  /* renamed, directory not fsynced */
        JOURNAL_CRASH_LOG_WRITTEN,       /* the new log's header fsynced, not renamed */
        JOURNAL_CRASH_LOG_RENAMED,       /* both renamed, directory not fsynced */
        JOURNAL_CRASH_APPEND_HALF,       /* half a record written */
};
void journal_inject_crash(enum journal_crash_point at);
/* Compact: replace DIR's snapshot with J and its log with an empty one,
 * durably (each file fsynced before its rename, the directory after each). */
int journal_save(const char *dir, const struct journal *j);

/* The saves to one state dir, kept by their caller under its save lock
 * (zeroed to start; journal_sync_reset frees): what the snapshot and log on
 * disk hold, and the log open for appending. */
struct journal_sync {
        struct journal *base;      /* NULL = none yet: the next save compacts */
        int log_fd;                /* valid while base is set */
        size_t log_bytes, snapshot_bytes;
        unsigned long full_saves;  /* compactions (they fsync the directory) */
        unsigned long light_saves; /* appends (one fdatasync), and saves of no change */
        /* base's rows are not kept: journal_append_rows' caller keeps what
         * the files hold, row by row (the next journal_save_sync compacts). */
        bool rows_stale;
};
/* Make J durable: append what changed since S's last save as one record,
 * or compact when S has none yet, the boot changed, or the log has grown to
 * its bound.  On failure what was durable stays so and S is reset.  S NULL:
 * journal_save. */
int journal_save_sync(const char *dir, const struct journal *j, struct journal_sync *s);
void journal_sync_reset(struct journal_sync *s); /* accepts NULL */
/* A save of what changed, for a caller that knows it row by row (the
 * registry), so a save costs the changes, not the rows: PUT (rows added or
 * changed), DROP (names of rows the files hold that are gone; applied
 * before PUT, so one name may be in both), and HEAD's boot id, reservations,
 * stock targets and elastic policies (written, whole, when they differ from
 * what the files hold; HEAD's pools are not read).  One record, appended
 * and fdatasynced as journal_save_sync does, after it was read back.
 * -EAGAIN, nothing written and S as it was, when the save must compact
 * instead (no save yet, another boot, or the log at its bound): the caller
 * then makes the whole state and calls journal_save_sync.  Other failures
 * reset S as journal_save_sync's do.  From the first such save on, S no
 * longer keeps the rows (rows_stale). */
int journal_append_rows(const struct journal *head, const struct journal_pool *put, size_t n_put,
                        const char (*drop)[JOURNAL_NAME_MAX + 1], size_t n_drop, struct journal_sync *s);
/* The same field comparison a save makes: whether A and B are written
 * alike. */
bool journal_rows_equal(const struct journal_pool *a, const struct journal_pool *b);
struct json;
/* Add the members a pool is known by to O: name, node, page_size_bytes,
 * size_bytes and state.  The journal's rows and the API's pool objects
 * spell them alike, so a reader of state.json recognises the API's pool. */
/* Add an elastic policy's members to O, as the journal and the policy
 * routes spell them (node as a number, counts in pages). */
void journal_add_elastic_policy(struct json *o, const struct journal_elastic_policy *e);
void journal_add_pool_identity(struct json *o, const char *name, int node, uint64_t page_size,
                               uint64_t size_bytes, enum pool_state state);

/* Move an unusable state.json aside to state.json.corrupt-<unix time>, and
 * state.log, if any, to state.log.corrupt-<the same>. */
int journal_quarantine(const char *dir);

