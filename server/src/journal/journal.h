/* journal: the daemon's durable state — reservations it made, pools it
 * holds, stock targets — as a snapshot ("state.json") and a log of the
 * changes since ("state.log", one checksummed record per save, fdatasynced),
 * compacted into a new snapshot when it grows (journal_log.c has the format).
 * Stamped with the kernel's boot_id, since a reboot empties hugetlbfs and
 * the runtime pools. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"

#define JOURNAL_NAME_MAX POOL_NAME_MAX
#define JOURNAL_SNAPSHOT_ID_LEN 16

struct journal {
        char boot_id[40];        /* /proc/sys/kernel/random/boot_id */
        size_t n_reservations;
        struct reservation_record *reservations;
        size_t n_pools;
        struct pool_record *pools;
        /* Optional ("stock_targets"): older journals have none.  Unique by
         * (node, page size, size). */
        size_t n_stock_targets;
        struct stock_target_record *stock_targets;
        /* Optional ("elastic_policies"): older journals have none.  Unique
         * by (node, page size). */
        size_t n_elastic;
        struct elastic_policy_record *elastic;
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
 * see journal_log.c) or -EPROTONOSUPPORT; J is half-changed on failure. */
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
int journal_append_rows(const struct journal *head, const struct pool_record *put, size_t n_put,
                        const char (*drop)[JOURNAL_NAME_MAX + 1], size_t n_drop, struct journal_sync *s);
/* Move an unusable state.json aside to state.json.corrupt-<unix time>, and
 * state.log, if any, to state.log.corrupt-<the same>. */
int journal_quarantine(const char *dir);

