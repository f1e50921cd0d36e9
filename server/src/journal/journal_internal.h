/* journal_internal: what the journal's three files share, and nothing
 * outside journal/ may use (journal.h is the module's face).
 *
 * The files stack in one direction:
 *   journal_log.c     the change log: replay, append, compaction, load;
 *                     calls both below
 *   journal_codec.c   the documents as JSON (snapshot, arrays of records,
 *                     uniqueness); record.c writes each record
 *   journal_files.c   the state directory: reading a file whole, the
 *                     temp-file-fsync-rename step, directory fsync, the
 *                     test faults, quarantine
 * journal_codec.c and journal_files.c call neither each other nor the log. */
#pragma once
#ifndef HPW_IN_JOURNAL
#error "journal_internal.h is private to server/src/journal/"
#endif
#include <stdbool.h>
#include <stddef.h>

#include "journal.h"
#include "json.h"
#include "record.h"
#include "util.h"

#define JOURNAL_VERSION 2
#define STATE_FILE "state.json"
#define STATE_TMP "state.json.tmp"
#define LOG_FILE "state.log"
#define LOG_TMP "state.log.tmp"
/* Our journal holds at most a few thousand small records; anything much
 * larger is not ours. */
#define JOURNAL_MAX_BYTES (16 * MIB)

static inline void json_freep(struct json **v)
{
        json_free(*v);
}

static inline void journal_freep(struct journal **j)
{
        journal_free(*j);
}

/* ---- journal_codec.c ---- */

/* Copy string member KEY of O into BUF[SIZE]; absent, not a string or too
 * long is -EINVAL. */
int journal_get_strbuf(const struct json *o, const char *key, char *buf, size_t size);
/* Pool names, (node, page size) reservations and (node, page size, size)
 * stock targets unique in J: 0, -EINVAL or -ENOMEM. */
int journal_check_unique(const struct journal *j);
/* 16 lower-case hex digits. */
bool journal_snapshot_id_valid(const char *s);
/* A deep copy of J (NULL: out of memory); without what a load reported. */
struct journal *journal_dup(const struct journal *j);
/* J's lists compared as written, field by field. */
bool journal_reservations_equal(const struct journal *a, const struct journal *b);
bool journal_targets_equal(const struct journal *a, const struct journal *b);
bool journal_policies_equal(const struct journal *a, const struct journal *b);
/* The arrays of a snapshot or a log record, each item by record.c's
 * decoder; *RET the caller's (NULL when empty).  0, -EINVAL or -ENOMEM. */
int journal_parse_reservations(const struct json *arr, struct reservation_record **ret, size_t *ret_n);
int journal_parse_pools(const struct json *arr, struct pool_record **ret, size_t *ret_n);
int journal_parse_stock_targets(const struct json *arr, struct stock_target_record **ret, size_t *ret_n);
int journal_parse_elastic_policies(const struct json *arr, struct elastic_policy_record **ret, size_t *ret_n);
/* Add the array member ("reservations", ...) to DOC, even when empty; a
 * pool row is appended to the array ARR. */
void journal_add_reservations(struct json *doc, const struct reservation_record *res, size_t n);
void journal_add_pool_row(struct json *arr, const struct pool_record *p);
void journal_add_stock_targets(struct json *doc, const struct stock_target_record *t, size_t n);
void journal_add_elastic_policies(struct json *doc, const struct elastic_policy_record *e, size_t n);

/* ---- journal_files.c ---- */

/* DIR "/" NAME into BUF[SIZE], or -ENAMETOOLONG. */
int journal_path_in(char *buf, size_t size, const char *dir, const char *name);
int journal_fsync_dir(const char *dir);
/* All of BUF[LEN] to FD, through EINTR and short writes. */
int journal_write_all(int fd, const char *buf, size_t len);
/* Read all of PATH (a regular file within JOURNAL_MAX_BYTES); caller frees.
 * -EISDIR (not a regular file), -EFBIG, or open/read's -errno. */
int journal_read_small_file(const char *path, char **ret, size_t *ret_len);
/* Write TEXT[LEN] to TMP, fsync it and rename it to FINAL; on failure TMP
 * is gone and FINAL as it was.  *RET_FD: the file, still open for
 * appending (RET_FD NULL: closed; it is the snapshot, else the log, for
 * the crash points). */
int journal_write_replace(const char *tmp, const char *final, const char *text, size_t len, int *ret_fd);
/* A fresh snapshot id (journal_snapshot_id_valid). */
void journal_new_snapshot_id(char id[JOURNAL_SNAPSHOT_ID_LEN + 1]);
/* Tests only: the -errno journal_inject_save_error asked for (0 = none). */
int journal_injected_error(void);
/* Tests only: whether journal_inject_crash asked for AT; journal_crash_if
 * kills the process (SIGKILL) there. */
bool journal_crash_armed(enum journal_crash_point at);
void journal_crash_if(enum journal_crash_point at);
