/* pool_state: what a warm pool is, apart from where it is kept.
 *
 * The name rules (and the one sentence that states each to a client), the
 * lifecycle states and the one function that moves a pool from one state to
 * another.  Part of the records (record.h): handlers, the registry (pools.h)
 * and the journal (journal.h) all use these; none of them owns them.
 *
 * The lifecycle is a table of allowed moves (pool_state.c), not code spread over
 * the registry: every change of state goes through pool_transition(), which
 * refuses a move the table does not list, records the cause and time of a
 * failure, and logs the move at debug level (as curl's multi.c changes a
 * transfer's state only through mstate()).  A new state is a new enum value,
 * a name and rows in the table, never a flag beside `state`, as the stock
 * states (stock, recycling, dirty) were added.
 *
 *   new ──create──> warming ──populated──> ready
 *                    │  ↺ resumed at start    │ └─(start: file lost pages)─> warming
 *                    ├──populate failed──> failed <──(start: file or mount gone)─┘
 *                    └──job cancelled───> cancelled
 *
 * Stock files are rows of the same table, not flags:
 *
 *   new ──refill──> stock-warming ──populated──> stock ──handed out (rename)──> ready
 *                    ↺ resumed at start      │ └─(start: file lost pages)─> stock-warming
 *                                            └─handed out grown (rename, ftruncate)─> warming
 *
 * A released pool (DELETE, TTL, owner exit, unmapped sweep) whose target is
 * short is recycled rather than removed (pools_recycle.c):
 *
 *   ready ──released, target short (renamed to a stock name)──> dirty
 *   dirty ──no process maps it, file whole (saved first)──> recycling
 *   recycling ──every byte zeroed (saved before it can be handed out)──> stock
 *           ↺ zeroed again from the start (at start, or after a failed save)
 *
 * A stock refill or a recycle that fails or is cancelled is simply removed
 * (removal is not a state), so stock has no final states of its own; so is
 * a dirty file someone changed or punched holes in.
 *
 * failed and cancelled are final: the file is gone, the record stays so a
 * scheduler can read why, until DELETE forgets it.  Removal (DELETE, TTL
 * expiry) ends a pool's existence in any state; it is not a state.
 *
 * What *holds* a pool — which thread may change it — is a separate, single
 * field (enum pool_hold), not a set of booleans. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

/* Longest pool name; names are [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
#define POOL_NAME_MAX 64
/* Room for a failure's problem slug and its detail in a pool record. */
#define POOL_ERROR_SLUG_MAX 48
#define POOL_ERROR_DETAIL_MAX 256
/* A pool file's path: its pool directory (at most POOL_DIR_MAX bytes, which
 * the daemon checks at start), "/", its name; a stock file's has its stock
 * directory between them ("/.stock", POOL_STOCK_DIR_ROOM bytes).  Not
 * PATH_MAX: every pool and every view of one carries it, and 4 KiB each was
 * most of a pool's memory. */
#define POOL_PATH_MAX 512
#define POOL_STOCK_DIR_ROOM 8
#define POOL_DIR_MAX (POOL_PATH_MAX - POOL_NAME_MAX - 2 - POOL_STOCK_DIR_ROOM)

/* Valid pool name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}.  NULL is not.
 * POOL_NAME_RULE says it to a client, wherever a name is refused. */
bool pool_name_valid(const char *name);
#define POOL_NAME_RULE "pool names are 1 to 64 characters of [A-Za-z0-9._-], starting with a letter or digit"

/* A pool's label: who it is for, set at PUT and compared by every later
 * PUT of the pool (the libvirt hook writes "libvirt:<domain uuid>").  1 to
 * POOL_LABEL_MAX characters of [A-Za-z0-9:._-], starting with a letter or
 * digit; NULL and "" are not valid (no label is the empty string). */
#define POOL_LABEL_MAX 128
bool pool_label_valid(const char *label);
#define POOL_LABEL_RULE "\"label\" is 1 to 128 characters of [A-Za-z0-9:._-], starting with a letter or digit"

/* Stock files live in the pool directory's stock directory (pools.h
 * POOLS_STOCK_DIR), named POOL_STOCK_PREFIX then [A-Za-z0-9._-]{1,62}: a
 * first character no pool name can have, so the two never collide, in the
 * journal's rows as on disk.  NULL is not valid. */
#define POOL_STOCK_PREFIX '~'
bool pool_stock_name_valid(const char *name);
/* Whether S is a stock state (stock-warming, stock, dirty, recycling): the
 * row is a stock file, not a pool. */
bool pool_state_is_stock(int s);

enum pool_state {
        POOL_NEW,        /* being created; never saved, never shown */
        POOL_WARMING,
        POOL_READY,
        POOL_FAILED,
        POOL_CANCELLED,
        /* Stock files: not pools, never shown as pools, named by
         * the stock name rule below. */
        POOL_STOCK_WARMING, /* "stock-warming": a refill job runs (low priority) */
        POOL_STOCK,         /* "stock": every page populated, ready to hand out */
        POOL_DIRTY,         /* "dirty": a released pool's file kept for recycling; waits
                             * until no process maps it, never handed out */
        POOL_RECYCLING,     /* "recycling": being zeroed in place (low priority); never
                             * handed out before the journal says "stock" */
        _POOL_STATE_MAX,
};

/* "warming", ...; NULL for a value out of range. */
const char *pool_state_name(enum pool_state s);
/* Parse a state a pool can be saved in (not "new").  0 or -EINVAL. */
int pool_state_parse(const char *s, enum pool_state *ret);
/* Whether the table allows FROM -> TO. */
bool pool_transition_allowed(enum pool_state from, enum pool_state to);

/* Where a pool's pages came from (pool objects' "from_stock"). */
enum pool_from_stock {
        POOL_FROM_STOCK_NONE = 0,  /* warmed for it */
        POOL_FROM_STOCK_FULL,      /* a ready stock file of its size, renamed into place */
        POOL_FROM_STOCK_PARTIAL,   /* a smaller stock file, grown and the new part warmed */
        _POOL_FROM_STOCK_MAX,
};
/* "none", "full", "partial"; NULL out of range. */
const char *pool_from_stock_name(enum pool_from_stock f);
int pool_from_stock_parse(const char *s, enum pool_from_stock *ret);

struct pool_record;

/* Move REC to state TO, the only code that writes a pool's state.
 * Refuses a move the table does not allow with -EPERM, leaving REC as it was
 * (and logging it: a refused move is a bug in the caller).  On success:
 *   - entering a final state (failed, cancelled) records CAUSE (a problem
 *     slug, required) and the printf-style detail, and the time: finished_at
 *     is set to now unless REC already has one (a ready pool that fails at
 *     start keeps the time its warm finished);
 *   - entering ready sets finished_at to now (wall clock, display) and
 *     ready_boot_ns (CLOCK_BOOTTIME, what a TTL counts from);
 *   - entering warming clears finished_at (a resumed or re-warmed pool is not
 *     finished);
 * and logs the move at debug level.  For other targets CAUSE must be NULL. */
int pool_transition(struct pool_record *rec, enum pool_state to, const char *cause, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* What holds a pool: who may change it right now.  One field of the
 * registry's pool (pools_internal.h), changed under its `reg.lock`.
 *   free      nobody; any thread may take it (it becomes busy);
 *   creating  pools_create has not returned: invisible to everyone else;
 *   busy      one thread works on it outside the lock (job follow-up,
 *             claim, delete, expiry); others wait for it to be free;
 *   releasing busy, and its release is being saved: journal snapshots
 *             leave it out, its file and job are still there; back to busy
 *             when the save (or then the unlink) fails, so a release that
 *             was not saved never happened;
 *   removing  saved without it and its file is gone; the record leaves
 *             memory now. */
enum pool_hold {
        POOL_FREE,
        POOL_CREATING,
        POOL_BUSY,
        POOL_REMOVING,
        POOL_RELEASING,
        _POOL_HOLD_MAX,
};

const char *pool_hold_name(enum pool_hold h);
/* Whether the hold may go FROM -> TO (creating -> free when created, free ->
 * busy and back, busy -> removing, ...). */
bool pool_hold_allowed(enum pool_hold from, enum pool_hold to);
