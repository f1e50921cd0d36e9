/* pools_internal: the pool core's private structs, shared by the files
 * that make it up (as sd-event shares its own through event-source.h).
 * Nothing outside server/src/pools/ includes this.
 *
 * The files and their layers, each calling only the layers below it (and,
 * within a layer, one way only), are listed once, in docs/ARCHITECTURE.md
 * ("Modules and the way dependencies point").
 *
 * struct pools is one part per owner (below), each with the lock that
 * guards it beside it or named on each field.  Locks, outermost first, and
 * why there are five:
 *   admit.lock     serialises admission (free pages minus what warming jobs
 *                  will still take), reservations and file creation, so two
 *                  creates never count the same free pages.  May be held for
 *                  seconds (a reservation write), so nothing else ever waits
 *                  on it but other creates and reservations.
 *   save.lock      serialises journal writes.  A save snapshots the registry
 *                  after taking it, so the last write always holds the newest
 *                  state; fsync happens under it, never under reg.lock.  A
 *                  save that changes only pool rows skips the directory fsync
 *                  (journal_log.c, jsync).
 *   obs.lock       held while the observer runs, so pools_set_observer can
 *                  wait for a call in flight.  Taken with no other lock of
 *                  ours held; the observer may take reg.lock under it (it
 *                  may call pools_get).
 *   reg.lock       the registry itself.  Held only for memory work and
 *                  job_get_status(); never across job_cancel, engine_submit,
 *                  reservation writes, unlink or fsync.
 *   (owner.c's)    the owner watch's own leaf lock; pools calls
 *                  owner_watch_add/remove with none of ours held, and the
 *                  watch calls pools_on_owner_exit with none of its held.
 *   wake.lock      a leaf taken by the engine's on_done callback (which must
 *                  not block) and by the upkeep thread to sleep; nothing is
 *                  called under it.
 * A function whose comment says a lock is held asserts it on entry with
 * pools_assert_held() (pools_lock.h; Debug and RelWithDebInfo builds), so
 * the rules hold at start-up and shutdown too, where nothing else runs.
 *
 * A change is saved before it is shown: the thread that changes a pool holds
 * it (hold = busy), points `pending` at the new record (which the journal
 * snapshot uses), saves, and only then copies it into `rec`, the record
 * every reader sees, and wakes waiters.  Pools not free are left alone by
 * everybody else.  The one exception is warming -> ready (see finish_job):
 * redoing a finished populate after a crash is free, so it is shown first
 * and saved after.
 *
 * Flags that are not pool states, on purpose:
 *   pending   not a state but the half-way point of a commit: non-NULL only
 *             inside commit(), while its caller holds the pool busy.
 *   job_done  an event from the engine, not a state of the pool: on_done runs
 *             in an engine thread that may not take `reg.lock` (the registry calls
 *             job_get_status under `reg.lock`, which takes the engine's lock), so
 *             it lives under wake.lock and only tells the upkeep thread
 *             that `job` has an outcome to collect. */
#pragma once

/* Private to server/src/pools/: its object library defines HPW_IN_POOLS
 * (server/CMakeLists.txt); everything else goes through pools.h. */
#ifndef HPW_IN_POOLS
#error "pools_internal.h is private to server/src/pools/"
#endif
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "elastic.h"
#include "engine.h"
#include "journal.h"
#include "owner.h"
#include "pool_state.h"
#include "pools.h"
#include "pools_lock.h"

#define NS_PER_SEC UINT64_C(1000000000)

/* Why a pool is released (its file removed, its record forgotten).  Not a
 * state: the pool is what it was until it is gone.  A pool's release_due
 * holds the last two, set by the owner watch or the sweep for the upkeep
 * thread; TTL expiry is worked out from the record. */
enum pool_release {
        RELEASE_NONE,
        RELEASE_DELETE,         /* DELETE /v1/pools/{name} */
        RELEASE_TTL,            /* ready, unclaimed past its TTL */
        RELEASE_OWNER_EXITED,   /* its owner process exited (or was gone at start) */
        RELEASE_UNMAPPED,       /* no process mapped it for release_unmapped_after */
};

struct pool {
        struct pools *owner;
        struct pool_record rec;      /* lock: committed, saved and visible */
        const struct pool_record *pending; /* lock: being saved; the journal snapshot uses it */
        enum pool_hold hold;          /* lock: who may change it (pool_state.h) */
        size_t reg_at;                /* lock: where it sits in reg.pools (an O(1) pools_drop) */
        bool job_done;                /* wake.lock: on_done ran for `job` */
        struct job *job;              /* lock: running, or finished and not yet freed */
        int fd;                       /* holder: open while job is set (the engine borrows it) */
        struct job_status last;       /* lock: status of the last job, once freed */
        bool have_last;               /* lock */
        uint64_t present_at_start;    /* bytes already in the file when its job (re)started */
        uint64_t job_offset;          /* holder: where the next job starts (a grown stock file) */
        uint64_t retry_at;            /* lock: CLOCK_BOOTTIME ns, a failed release is not retried before */
        enum pool_release release_due; /* lock: set by the owner watch or the sweep */
        int64_t unmapped_since;       /* lock: unix s, 0 = mapped, not swept, or has an owner */
        char path[POOL_PATH_MAX];     /* set before the pool is added, then constant */
        dev_t file_dev;               /* holder: the file at `path` we made or found at start; */
        ino_t file_ino;               /*   0 = not known (no file) */
        bool file_check_due;          /* lock: a GET saw the file changed; upkeep re-checks it */
        bool recycle_wait_logged;     /* recycle thread: "still held, waits" said for this row */
        /* lock: a dirty or recycling row's file, as (file_dev, file_ino),
         * was looked for in every process's descriptors after it entered
         * the stock directory, and none held it (pools_recycle.c): from
         * then on no other process can take one, so it is never asked
         * again. */
        bool holder_scan_clear;
        /* The row as the journal holds it, so a save writes only the rows
         * that differ (pools_save).  Written under save.lock and lock both,
         * read under either. */
        bool in_journal;
        struct pool_record durable;
        bool save_due;                /* lock: in reg.changed_rows (pools_mark_changed) */
};

/* The registry's index by name (pools_registry.c): an open-addressing
 * table of the rows, keyed by rec.name, so a lookup costs the same at 10
 * pools and at 10,000.  Linear probing over a power-of-two array, kept at
 * most half full (tombstones included; a rehash at the same size clears
 * them), hashed with FNV-1a from a per-process random seed, so names a
 * client picks cannot be made to pile up in one run of slots.  A row
 * being removed (POOL_REMOVING) may share its name with the new row that
 * replaces it: both are in the table and a lookup skips the first.  A
 * row's name changes only through pools_apply_rec, which moves its entry.
 * Written by hand: glibc's hsearch_r neither deletes nor grows, and the
 * table is small enough to test whole (tests/unit/test_pools_registry.c). */
struct pool_index {
        struct pool **slots;          /* NULL = empty, POOL_INDEX_GONE = tombstone */
        size_t cap;                   /* 0 or a power of two */
        size_t live, used;            /* entries; entries plus tombstones */
};
/* Hash of NAME as the index uses it (seeded once per process). */
uint64_t pool_index_hash(const char *name);
/* The first row named NAME that is not being removed, or NULL. */
struct pool *pool_index_find(const struct pool_index *ix, const char *name);
/* Add POOL under POOL->rec.name: 0 or -ENOMEM (nothing changed). */
int pool_index_add(struct pool_index *ix, struct pool *pool);
/* Take POOL (this very row, under POOL->rec.name) out; a no-op if absent. */
void pool_index_remove(struct pool_index *ix, struct pool *pool);
void pool_index_free(struct pool_index *ix);

/* The registry (pools_registry.c): every pool row, and the counters every
 * layer adds to, under one lock.  Held only for memory work and
 * job_get_status(); never across job_cancel, engine_submit, reservation
 * writes, unlink or fsync. */
struct pools_registry {
        struct pools_mutex lock;
        pthread_cond_t changed;       /* with lock: broadcast on every committed change */
        struct pool **pools;          /* lock; each row's reg_at is its place here */
        size_t n_pools, cap_pools;    /* lock */
        struct pool_index by_name;    /* lock: the same rows, by name */
        /* lock: rows whose rec.name is a stock name (pool_state.h).  Never
         * fewer than the rows whose latest record is stock, less the
         * hand-outs in flight (admit.lock): a recycle's pending record is
         * stock before its name is, and a hand-out's is a pool before. */
        size_t n_stock_named;
        /* lock: names of rows the journal holds that left the registry
         * (pools_drop) since the last save, which drops them. */
        char (*gone)[POOL_NAME_MAX + 1];
        size_t n_gone, cap_gone;
        bool resync;                  /* lock: the next save writes the whole state (a save failed) */
        /* lock: the rows the next save looks at: every row whose record,
         * pending record or hold (on its way out or back) changed, and
         * every row with a job (its progress is saved); a save looks at
         * no other. */
        struct pool **changed_rows;
        size_t n_changed, cap_changed;
        struct pools_stats stats;     /* lock */
        /* lock: the change generation (pools_generation): moves with every
         * row marked changed, row dropped and stock target set, in the same
         * critical section as the change, so a reader that takes it before
         * a view sees that change or a later one. */
        uint64_t generation;
        uint64_t generation_told;     /* lock: the generation last told the observer */
};

/* The journal writes (pools_registry.c, pools_save). */
struct pools_saves {
        struct pools_mutex lock;         /* serialises saves; fsync happens under it */
        struct journal_sync jsync;    /* lock: what the saves made durable */
};

/* The change observer (pools_registry.c). */
struct pools_observer {
        struct pools_mutex lock;         /* held while fn runs, so a reset waits for a call in flight */
        void (*fn)(void *arg, const char *name); /* lock */
        void *arg;                    /* lock */
};

/* The upkeep thread's wake-up (pools_registry.c kicks it, pools_jobs.c's
 * on_done marks a pool's job_done under it, pools_upkeep.c sleeps on it). */
struct pools_wake {
        struct pools_mutex lock;         /* a leaf: nothing is called under it */
        pthread_cond_t kick;          /* with lock: wakes the upkeep thread */
        bool kicked, stopping;        /* lock */
};

/* The upkeep thread itself (pools_upkeep.c); only it touches these, but
 * for the thread handle (pools_start_upkeep, pools_stop_upkeep). */
struct pools_upkeep {
        pthread_t thread;
        bool started;
        uint64_t next_sweep_ns;       /* CLOCK_MONOTONIC of the next unmapped sweep */
        uint64_t next_creds_ns;       /* upkeep thread: next drain of the process events (owner_creds) */
        uint64_t sweep_interval_ns;   /* set at pools_new */
        bool warned_unreadable;
};

/* Admission and reservations (pools_admit.c). */
struct pools_admission {
        /* Serialises admission (free pages minus what warming jobs will
         * still take), reservations and file creation, so two creates never
         * count the same free pages.  Held for seconds at most (a
         * reservation write); only creates, reservations and refills wait. */
        struct pools_mutex lock;
        struct reservation_record *resv; /* reg.lock (the saves read it) */
        size_t n_resv;                /* reg.lock */
};

/* The stock (pools_stock.c). */
struct pools_stock {
        struct stock_target_record *targets; /* reg.lock */
        size_t n_targets;             /* reg.lock */
        unsigned seq;                 /* admit.lock: numbers new stock file names */
        bool short_logged;            /* upkeep thread: "no room to refill" said */
        /* reg.lock: the target a refill is adding a file to, from when it
         * found room until its row is in the registry (or it gave up),
         * so a release deciding meanwhile whether to recycle counts that
         * file too. */
        struct stock_target_record refilling;
        bool refilling_set;
        uint64_t handed_out_ns;       /* reg.lock: CLOCK_MONOTONIC of the last hand-out from stock */
        uint64_t next_refill_ns;      /* upkeep thread: a refill deferred until then, 0 = none */
};

/* Recycling released pools into the stock (pools_recycle.c), on a thread
 * of its own ("hpw-recycle"): its holder scan reads the descriptors of
 * every process, which costs tens of milliseconds on a crowded host and
 * must delay neither a request nor the upkeep thread's job completions. */
struct pools_recycle {
        pthread_t thread;
        pthread_cond_t kick;          /* with reg.lock: wakes the recycle thread */
        bool started, stopping;       /* reg.lock */
        unsigned seq;                 /* reg.lock: numbers the stock names of recycled files */
        bool due;                     /* reg.lock: a dirty row appeared; look at once */
        uint64_t next_ns;             /* recycle thread: CLOCK_MONOTONIC of the next holder check, 0 = none */
        uint64_t interval_ns;         /* set at pools_new */
};

/* Elastic policies (pools_elastic.c, pools_policy.c): one row per (node,
 * page size) with a policy, what it did last and its idle history.  The
 * rows are changed under admit.lock and reg.lock both (so admission, which
 * holds admit.lock, reads them with reg.lock alone as everyone else does). */
struct pools_elastic_row {
        /* reg.lock: the policy and what it did, as a view shows them (a
         * view is a copy; runtime_growth and the CMA counters stay 0 here,
         * they are read outside the lock).  shown.decision: the upkeep's
         * last decision, a static sentence. */
        struct elastic_view shown;
        struct elastic_idle idle;           /* reg.lock */
        uint64_t grow_retry_ns;             /* reg.lock: CLOCK_MONOTONIC before which a short growth to
                                             * min is not retried (0 = any time) */
};
struct pools_elastic {
        struct pools_elastic_row *rows;     /* reg.lock */
        size_t n_rows;                      /* reg.lock */
        uint64_t next_ns;                   /* upkeep thread: CLOCK_MONOTONIC of the next look, 0 = none */
};

/* One part per owner; the lock order is admit.lock -> save.lock ->
 * reg.lock -> (engine node lock, wake.lock); obs.lock is taken with none
 * of ours held and may take reg.lock under it. */
struct pools {
        /* Set by pools_new (pools_public.c) and constant after; the strings
         * are our copies.  boot_id is read by pools_recover at start. */
        struct pools_config cfg;
        char *state_dir;
        char *boot_id_path;
        char *proc_root;
        char *mount_dirs[TOPO_MAX_PAGE_SIZES];
        char *stock_dirs[TOPO_MAX_PAGE_SIZES]; /* mount_dirs[i]/POOLS_STOCK_DIR */
        char boot_id[40];
        unsigned max_pools;
        struct owner_watch *owners;   /* pidfds of owner processes (owner.h) */
        /* Who could open a file, by the kernel's process events (owner.h);
         * NULL where the proc connector cannot be had (the holder check
         * then walks every process, as it must without it). */
        struct owner_creds *creds;

        struct pools_admission admit;
        struct pools_saves save;
        struct pools_observer obs;
        struct pools_registry reg;
        struct pools_wake wake;
        struct pools_upkeep upkeep;
        struct pools_stock stock;
        struct pools_recycle recycle;
        struct pools_elastic elastic;
};

/* ---- 0: the registry (pools_registry.c), reg.lock held unless said otherwise ---- */
int64_t pools_now_unix(void);
/* The pool directory of PAGE_SIZE (constant after pools_new; no lock). */
const char *pools_mount_dir(const struct pools *p, uint64_t page_size);
/* Its stock directory (POOLS_STOCK_DIR inside it), likewise. */
const char *pools_stock_dir(const struct pools *p, uint64_t page_size);
/* Where the file of a row named NAME of PAGE_SIZE lives, into BUF: the
 * stock directory for a stock name, the pool directory for a pool's.  0, or
 * -ENOENT (no directory of that page size) or -ENAMETOOLONG. */
int pools_path_of(const struct pools *p, uint64_t page_size, const char *name, char *buf, size_t size);
/* CLOCK_BOOTTIME expiry (ns) of a ready, unclaimed pool with a TTL; 0 = none. */
uint64_t pools_rec_expires_boot_ns(const struct pool_record *r);
/* NAME's row (not one being removed), or NULL: one index probe. */
struct pool *pools_find(struct pools *p, const char *name);
/* POOL (its rec.name set) into the registry and its index: 0 or -ENOMEM. */
int pools_add(struct pools *p, struct pool *pool);
/* POOL out of both, in O(1); the last row takes its place in reg.pools. */
void pools_drop(struct pools *p, struct pool *pool);
/* POOL's record becomes NEXT, its index entry following a new name (a
 * stock file handed out, a pool recycled into the stock). */
void pools_apply_rec(struct pools *p, struct pool *pool, const struct pool_record *next);
/* POOL's saved fields (record, pending record, hold, job) changed: the
 * next save looks at it.  Every change of them calls it; in Debug builds a
 * save checks no other row differs from what the journal holds. */
void pools_mark_changed(struct pool *pool);
/* Change POOL's hold; aborts on a move pool_hold_allowed refuses (a bug). */
void pools_set_hold(struct pool *pool, enum pool_hold to);
/* Wait (reg.lock held) until NAME's pool is free; returns it busy, or NULL
 * if it does not exist, is still being created or is a stock row. */
struct pool *pools_grab(struct pools *p, const char *name);
/* NAME names no pool: pool-not-found into ERR, the one wording of it.
 * Returns -ENOENT. */
int pools_not_found(const char *name, struct problem *err);
/* Whether POOL is a stock file, not a pool (reg.lock held). */
bool pools_is_stock(const struct pool *pool);
/* The record a snapshot or a check should use: the one being saved, if any. */
const struct pool_record *pools_latest(const struct pool *pool);
void pools_fill_view(struct pool *pool, struct pool_view *v);
/* REC becomes REQ's pool: its name, node, page size, size, label, file
 * owner, threads and TTL, created and started now.  The one copy of a
 * request into a record: a new pool's (pools_create.c) and a stock file's
 * handed out whole or grown (pools_stock.c). */
void pools_record_from_req(struct pool_record *rec, const struct pool_req *req);
/* Make the registry durable (takes save.lock, then reg.lock): the rows
 * that differ from what the journal holds, appended as one record; the
 * whole state when the journal compacts (the first save, another boot,
 * the log at its bound, a save that failed). */
int pools_save(struct pools *p);
/* Save NEXT as POOL's record, then show it and tell the observer; POOL is
 * busy and reg.lock not held.  On a failed save the record is still applied
 * (it describes what happened to the file) and the error is returned. */
int pools_commit(struct pools *p, struct pool *pool, const struct pool_record *next);
/* The save pools_commit does, without telling the observer: NEXT is marked
 * pending while the journal is written, then applied (on a failed save
 * too if APPLY_ON_FAILURE, else the record stays as it was) and the waiters
 * woken.  POOL busy, reg.lock not held. */
int pools_save_record(struct pools *p, struct pool *pool, const struct pool_record *next, bool apply_on_failure);
/* Make POOL free again and wake waiters (takes reg.lock). */
void pools_release(struct pools *p, struct pool *pool);
/* Count a release of reason WHY in the stats (RELEASE_NONE: none);
 * reg.lock held. */
void pools_count_release(struct pools *p, enum pool_release why);
/* Tell the observer NAME changed (NULL: the generation moved); no lock of
 * ours held but admit.lock. */
void pools_notify(struct pools *p, const char *name);
/* Wake the upkeep thread (takes wake.lock). */
void pools_kick(struct pools *p);

/* ---- 1: jobs (pools_jobs.c), no lock held ---- */
/* Start POOL's warm (or, recycling, zero) job; its fd is open.  -errno from
 * engine_submit. */
int pools_start_job(struct pools *p, struct pool *pool);

/* ---- 1: files (pools_file.c) ---- */
/* Whether the file at PATH is still the one (DEV, INO) of R at its size: 0
 * if so (or it cannot be told), 1 with DETAIL set if someone removed,
 * replaced, truncated or resized it.  Pages missing from it are not
 * checked: a claimed pool's VM may give pages back, and start-up re-warms
 * an unclaimed ready pool that lost some.  *RET_OURS says whether PATH
 * still names our file (only then may it be unlinked).  One stat, no lock. */
int pools_file_changed(const char *path, dev_t dev, ino_t ino, const struct pool_record *r, char *detail,
                       size_t size, bool *ret_ours);
/* A ready pool's file as a GET sees it (R, DEV, INO copied under reg.lock):
 * a change is shown in V at once (failed, file-changed) and the upkeep
 * thread is asked to record it. */
void pools_check_on_get(struct pools *p, const struct pool_record *r, dev_t dev, ino_t ino,
                        struct pool_view *v);
/* Rename FROM to TO unless TO exists, in one step (renameat2
 * RENAME_NOREPLACE): 0, -EEXIST, or rename's other -errno. */
int pools_rename_noreplace(const char *from, const char *to);
/* Create POOL's file at POOL->path (O_EXCL, mode, group) with SIZE bytes:
 * a STOCK file mode 0600 in the daemon's group, a pool's in --pool-group
 * mode 0660;
 * on success POOL->fd is open and file_dev/file_ino name the file (what the
 * file-changed checks compare).  0, or -errno with ERR set and no file left. */
int pools_create_file(struct pools *p, struct pool *pool, uint64_t size, bool stock, struct problem *err);
/* Whether another open file or name reaches the file FD (ours, not yet or
 * no longer a VM's): 0 none; 1 another open file of it exists (its write
 * lease is refused: any descriptor but O_PATH, any mapping, in any
 * process); -EMLINK it has another hard link; other -errno cannot tell.
 * DETAIL says which.  Two syscalls, whatever the host runs: asked at each
 * hand-out and before a released file is zeroed. */
int pools_file_held(int fd, char *detail, size_t size);
/* Whether a process other than the daemon holds a descriptor of the file
 * FD (O_PATH included, which no lease sees): 0 none, 1 one does, -errno
 * cannot tell (DETAIL says which).  Looks into every process but root's
 * (p->creds, by the kernel's process events; where those cannot be had,
 * every process's maps and descriptors are walked), so its cost grows with
 * the host's descriptors: asked once per released file, on the recycle
 * thread, never on a request's path.  *RET_LOOKED: processes looked into. */
int pools_file_scan_holders(struct pools *p, int fd, char *detail, size_t size, unsigned *ret_looked);
/* A file outside a VM's hands (stock, dirty, recycling, a pool on its way
 * out): the daemon's alone. */
#define POOL_FILE_PRIVATE_MODE 0600
/* Mode 0600 and the daemon's own user and group, by path, first thing in a
 * release: no new unprivileged open. */
void pools_file_make_private(const char *path);
/* The same through a descriptor: 0 or -errno. */
int pools_file_private_fd(int fd);
/* Owner and mode as handed out again (R: the pool's record), for a release
 * that did not happen. */
void pools_file_make_public(struct pools *p, const char *path, const struct pool_record *r);
/* FD's file given to the VM (before the rename that shows it under the
 * pool's name): OWNED, to UID:GID mode 0600 (that one VMM's user alone);
 * else --pool-group and mode 0660.  0 or -errno. */
int pools_file_hand_to_vm(struct pools *p, int fd, bool owned, uint32_t uid, uint32_t gid);
/* Undo a create that failed after pools_create_file: when REGISTERED
 * (pools_add succeeded) stop and free its job if it has one, take POOL out
 * of the registry and save again; close and unlink its file, free it. */
void pools_abandon(struct pools *p, struct pool *pool, bool registered);
/* Save the journal without POOL, then stop its job if any, remove its file
 * and its record; POOL is busy and freed on success (takes reg.lock itself),
 * and the release is counted under WHY in the same step that makes it
 * invisible.  -EAGAIN when the save failed (nothing changed), or unlink's
 * -errno (the record is saved again). */
int pools_remove(struct pools *p, struct pool *pool, enum pool_release why);

/* ---- 1: what warms still need (pools_pending.c) ---- */
/* The node's counters and the pages warming jobs there still need (by
 * their counters and their files' blocks), read so that a page faulted in
 * meanwhile is not counted both as needed and as taken, and never as free
 * and as no longer needed: what every admission, reservation and refill
 * decides on.  admit.lock held, no other lock (takes reg.lock itself; stats
 * pool files outside it).  0 or topo_read_hugepages' -errno. */
int pools_node_counts(struct pools *p, int node, uint64_t page_size, struct hp_counts *ret_hp,
                      uint64_t *ret_needed);

/* ---- 1: the stock gives way (pools_stock_evict.c) ---- */
/* Remove stock files of (NODE, PAGE_SIZE) until PAGES pages are back; none
 * when all of them would not be enough.  NODE -1: of any node (a mount's
 * size limit is shared by them all).  Returns the pages given back
 * (admit.lock held, no other lock). */
uint64_t pools_stock_make_room(struct pools *p, int node, uint64_t page_size, uint64_t pages);

/* ---- 1: pool directories (pools_dir.c) ---- */
/* How many more pages of PAGE_SIZE its mount's size limit lets files take
 * (UINT64_MAX: no limit, or none this daemon can read).  No lock. */
uint64_t pools_mount_room(struct pools *p, uint64_t page_size);
int pools_prepare_dir(const char *dir, uint64_t page_size, gid_t gid, bool check_fs);
/* The stock directory in the pool directory DIR (pools.h POOLS_STOCK_DIR),
 * made or made ours: a directory (no link), the daemon's user and group,
 * mode 0700.  Its path into *RET (caller frees).  0 or -errno. */
int pools_prepare_stock_dir(const char *dir, char **ret);
void pools_remove_orphans(struct pools *p);

/* ---- 1: owners (pools_claim.c) ---- */
/* The owner watch's callback: marks NAME's pool for release if it is still
 * bound to (PID, START), and kicks the upkeep thread. */
void pools_on_owner_exit(void *arg, const char *name, pid_t pid, uint64_t start);

/* ---- 1: elastic policies (pools_elastic.c) ---- */
/* The row of (NODE, PAGE_SIZE), or NULL (reg.lock held). */
struct pools_elastic_row *pools_elastic_find(struct pools *p, int node, uint64_t page_size);
/* Admission's hook: whether (NODE, PAGE_SIZE) is elastic, and if so
 * whether growing by what PAGES lacks in A stays under its max.  0 with
 * *RET_ELASTIC set; -ENOMEM with ERR set (insufficient-hugepages) when
 * the demand does not fit under max.  No lock but admit.lock held. */
int pools_elastic_admit_check(struct pools *p, int node, uint64_t page_size, const struct pools_avail *a,
                              uint64_t pages, bool *ret_elastic, struct problem *err);
/* Record that the pool of (NODE, PAGE_SIZE) grew or gave back PAGES
 * (ACTION ELASTIC_GROW or ELASTIC_RETURN) for WHY, or that a growth of
 * PAGES on demand failed (ELASTIC_REFUSE: the kernel gave fewer, or the
 * memory floor); nothing without a policy (takes reg.lock). */
void pools_elastic_note(struct pools *p, int node, uint64_t page_size, enum elastic_action action, uint64_t pages,
                        const char *why);
/* Whether growing PAGE_SIZE pages on NODE at runtime is reliable, with the
 * CMA counters of PROC_ROOT/meminfo (bytes; 0 when absent).  No lock. */
enum elastic_growth pools_elastic_growth(struct pools *p, int node, uint64_t page_size, uint64_t *ret_cma_total,
                                         uint64_t *ret_cma_free);

/* ---- 2: admission (pools_admit.c) ---- */
/* A growth of a node's pool that "reserve": true made for a create, kept
 * until the create is done so a create that fails after admission can put
 * it back. */
struct pools_growth {
        bool grew;
        int node;
        uint64_t page_size;
        uint64_t previous;    /* the node's count before the growth */
        bool had_record;      /* the journal's reservation before: RECORD, or none */
        uint64_t record;
};
/* admit.lock held.  GIVE_WAY: remove stock files of the node and page size
 * before refusing or reserving (never at start-up, which walks the
 * registry).  A growth that still did not admit is undone here; one that
 * did is returned in *RET_GROWTH (NULL only without RESERVE).  Under
 * cfg.fixed_hugepages nothing grows (neither RESERVE nor an elastic
 * policy) and a refusal's detail says POOLS_FIXED_WHY. */
#define POOLS_FIXED_WHY "the hugepages are fixed on this host (hpwarmd --fixed-hugepages)"
int pools_admit(struct pools *p, int node, uint64_t page_size, uint64_t pages, bool reserve, bool give_way,
                struct pools_growth *ret_growth, struct problem *err);
/* Put back G's growth if there was one: the count (never below the pages
 * in use plus what warms still need) and the journal's record (admit.lock
 * held; call it after the failed create's file is gone). */
void pools_undo_growth(struct pools *p, const struct pools_growth *g);
void pools_count_reservation(struct pools *p, int r, const struct reserve_result *res);
/* The counts a refused reservation's problem carries, ERR raised already
 * (NULL: none): the floor's for -ENOMEM, REQUESTED and what the kernel
 * gave for -EAGAIN (RES: reserve_apply's result); nothing for other R. */
void pools_reserve_counts(struct problem *err, int r, const struct reserve_result *res, uint64_t requested);
/* reserve_apply, recorded as the node's reservation and saved (undone when
 * the save fails: -ECANCELED); ASKED is what is recorded.  admit.lock held. */
int pools_reserve_locked(struct pools *p, const struct reserve_req *req, uint64_t asked,
                         struct reserve_result *ret);

/* ---- 2: stock (pools_stock.c) ---- */
/* The deficit of the target of (NODE, PAGE_SIZE, SIZE): count minus its
 * ready, warming and recycling rows (pending records count), 0 when there
 * is no such target (reg.lock held). */
uint64_t pools_stock_deficit(struct pools *p, int node, uint64_t page_size, uint64_t size);
/* Create stock files for every target with a deficit while the nodes have
 * free pages no warm needs (upkeep thread, no lock held). */
void pools_stock_refill(struct pools *p);
/* Hand a ready stock file out as REQ's pool (admit.lock held, REQ
 * validated, no pool of its name): 0 with *RET_TAKEN true and *RET filled,
 * 0 with *RET_TAKEN false when no stock file fits, or -errno with ERR set. */
int pools_stock_take(struct pools *p, const struct pool_req *req, struct pool_view *ret, bool *ret_taken,
                     struct problem *err);

/* ---- 2: recycling (pools_recycle.c) ---- */
/* Release POOL (busy) for WHY.  With RECYCLE, a ready pool whose stock
 * target is short becomes a dirty stock row in one saved step (renamed to a
 * stock name; its pool name is free at once); otherwise, or with WHY none,
 * pools_remove.  Same returns as pools_remove; on 0, POOL is no longer the
 * caller's (removed, or a free dirty row). */
int pools_release_pool(struct pools *p, struct pool *pool, enum pool_release why, bool recycle);
/* The recycle thread ("hpw-recycle"): it starts the zeroing of dirty rows
 * nobody holds (and of recycling rows without a job: interrupted), and
 * removes those whose file changed, has holes or another link.  Started
 * and stopped with the upkeep thread (pools_start_upkeep,
 * pools_stop_upkeep); pools_recycle_kick (takes reg.lock) wakes it. */
int pools_recycle_start(struct pools *p);
void pools_recycle_stop(struct pools *p);
void pools_recycle_kick(struct pools *p);
/* A recycle's zero job ended as JOB_DONE: save NEXT ("stock") before the
 * row can be handed out; a save that fails removes the file instead (not
 * at SHUTDOWN: it stays recycling, redone at the next start).  POOL busy;
 * true when it is gone. */
bool pools_recycle_done(struct pools *p, struct pool *pool, const struct pool_record *next, bool shutdown);

/* ---- 2: start-up (pools_recover.c), single-threaded apart from engine callbacks ---- */
int pools_recover(struct pools *p);

/* ---- 2: elastic policies applied (pools_policy.c) ---- */
/* Upkeep thread, no lock held: give back what each elastic pool's policy
 * says has stayed free long enough, grow one below its min.  Sets
 * p->elastic.next_ns. */
void pools_elastic_upkeep(struct pools *p);
/* Start-up: the --elastic policies (cfg), applied as PUT would. */
int pools_elastic_start(struct pools *p);

/* ---- 3: the upkeep thread (pools_upkeep.c), no lock held ---- */
/* Collect POOL's ended job.  Returns true when POOL is gone (a stock refill
 * that failed: its file and row are removed, POOL freed); never at
 * SHUTDOWN. */
bool pools_finish_job(struct pools *p, struct pool *pool, bool shutdown);
int pools_start_upkeep(struct pools *p);
void pools_stop_upkeep(struct pools *p);
