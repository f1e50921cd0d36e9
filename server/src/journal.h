/* journal: the daemon's durable state — reservations it made and pools it
 * holds — as one JSON document in the state dir ("state.json"), written
 * atomically (temp file, fsync, rename, fsync dir; the last only when what
 * must outlive a reboot changed) and stamped with the kernel's boot_id,
 * since a reboot empties hugetlbfs and the runtime pools. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool_state.h"

#define JOURNAL_NAME_MAX POOL_NAME_MAX

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
};

/* Strict parse (unknown states, bad types, names that break the name rule
 * — a stock row has a stock name and a stock state, a pool neither —,
 * duplicate pool names -> -EINVAL).  Caller owns *ret (journal_free). */
int journal_parse(const char *buf, size_t len, struct journal **ret);
/* Caller frees. */
char *journal_format(const struct journal *j);
void journal_free(struct journal *j); /* accepts NULL */

/* Load DIR/state.json.  Removes a stale DIR/state.json.tmp left by a crash.
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
/* Atomically replace DIR/state.json with J, durably: the file is fsynced
 * before its rename and the directory after it. */
int journal_save(const char *dir, const struct journal *j);

/* What the saves to one state dir have made durable across a reboot, kept by
 * their caller (zeroed to start; journal_sync_reset frees): the reservations
 * and stock targets of the last save whose directory fsync succeeded. */
struct journal_sync {
        char *durable;             /* their text; NULL = none yet (the next save is full) */
        unsigned long full_saves;  /* saves that fsynced the directory */
        unsigned long light_saves; /* saves that could skip it */
};
/* journal_save, except that the directory fsync is skipped when J's
 * reservations and stock targets are those S last made durable: only pool
 * rows changed, and a reboot drops those anyway (journal.c).  S NULL: as
 * journal_save. */
int journal_save_sync(const char *dir, const struct journal *j, struct journal_sync *s);
void journal_sync_reset(struct journal_sync *s); /* accepts NULL */
struct json;
/* Add the members a pool is known by to O: name, node, page_size_bytes,
 * size_bytes and state.  The journal's rows and the API's pool objects
 * spell them alike, so a reader of state.json recognises the API's pool. */
void journal_add_pool_identity(struct json *o, const char *name, int node, uint64_t page_size,
                               uint64_t size_bytes, enum pool_state state);

/* Move an unusable state.json aside to state.json.corrupt-<unix time>. */
int journal_quarantine(const char *dir);

