/* pools: the registry of warm pools and the daemon's durable state.
 *
 * A pool is a named hugetlbfs file on one node, populated by the engine.
 * Its states and the moves between them are in pool_state.h:
 * (create) -> warming -> ready | failed | cancelled;
 * ready -(claim)-> ready+claimed; ready unclaimed past its TTL -> released.
 * DELETE removes the file in every state (a ready pool whose stock target
 * is short is recycled instead: pools_delete_recycle).  A pool that fails or is cancelled
 * has its file removed at once (no hugepages leak); the record stays so a
 * scheduler can read why, until DELETE.
 *
 * pools owns the journal (journal.h): every change is saved before it is
 * reported.  It also serialises reservations (reserve.h) so that a warm with
 * "reserve": true and PUT /v1/nodes/{id}/hugepages/{size} never interleave,
 * and re-applies recorded reservations at start.
 *
 * On start it reconciles the journal with the files really present: pools
 * that were warming resume (populate skips present pages), ready pools whose
 * file holds all its pages (st_blocks) stay ready (claimed ones stay ready
 * whatever their file holds: a VM may map it), records whose file is gone
 * become failed, files in our directories with no record are removed and
 * counted.  A journal from another boot (boot_id) is dropped, except its
 * reservations, which are re-applied. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "elastic.h"
#include "journal.h"
#include "metrics.h"
#include "pool_state.h"
#include "problem.h"
#include "reserve.h"
#include "topo.h"

struct sysfs;
struct engine;

struct pools_mount {
        uint64_t page_size;
        const char *dir;           /* our directory inside a hugetlbfs mount of that page size */
};

struct pools_config {
        struct sysfs *fs;
        const struct topo *topo;
        struct engine *engine;
        const char *state_dir;
        const char *boot_id_path;  /* NULL = /proc/sys/kernel/random/boot_id */
        struct pools_mount mounts[TOPO_MAX_PAGE_SIZES];
        size_t n_mounts;
        gid_t pool_gid;            /* group of pool files (mode 0660); (gid_t)-1 = keep */
        uint64_t memory_floor;     /* bytes, for reservations */
        uint64_t max_pool_bytes;   /* 0 = no limit */
        uint64_t max_node_warm_bytes; /* per node cap on warming+ready bytes; 0 = none */
        unsigned max_pools;        /* 0 = default 1024 */
        /* Claimed pools without an owner pid: how often to look whether any
         * process still maps their file (0 = default, 60 s), and after how
         * long unmapped to release them (0 = never: only reported). */
        uint64_t unmapped_sweep_ms;
        uint64_t release_unmapped_after; /* seconds */
        /* Dirty stock files (released pools kept for recycling): how often
         * to look whether a process still maps them (0 = default, 1 s). */
        uint64_t recycle_check_ms;
        const char *proc_root;     /* NULL = /proc; tests point it elsewhere */
        /* The pages a size-limited hugetlbfs mount (size=) still has room
         * for, into *RET (UINT64_MAX: no limit); NULL = statfs(2) on the
         * pool directory.  Unit tests stand in such a mount. */
        int (*mount_room)(const char *dir, uint64_t page_size, uint64_t *ret);
        /* --stock: when N_STOCK_TARGETS > 0, replace the journal's stock
         * targets at start (validated as pools_set_stock does). */
        const struct stock_target_record *stock_targets;
        size_t n_stock_targets;
        /* --elastic: policies set at start (as PUT .../policy would),
         * replacing the journal's of the same node and page size. */
        const struct elastic_policy_record *elastic;
        size_t n_elastic;
        /* --reset-state: a journal that cannot be read is moved aside and
         * the daemon starts empty (files a process maps are still kept).
         * Without it such a journal stops pools_new (-errno, logged). */
        bool reset_state;
        /* --fixed-hugepages: the host's hugepage counts are fixed (a
         * scheduler such as nova-compute read them once at its start and
         * would not see a change).  No count is ever written: "reserve"
         * grows nothing, pools_reserve and pools_set_elastic are refused
         * (hugepages-fixed), elastic policies in the journal are kept but
         * neither grow nor give back, and recorded reservations are not
         * re-applied after a reboot.  main.c also forbids sysfs writes. */
        bool fixed_hugepages;
        /* Unit tests only: accept mount dirs that are not hugetlbfs (a temp
         * dir stands in), creating them if missing.  The mount-root and
         * marker checks still apply.  Never set in the daemon. */
        bool skip_mount_check;
};

/* The file that marks a pool directory as ours.  Start-up removes files no
 * pool record owns, so it only ever does that in a directory holding this
 * marker (and never removes the marker itself). */
#define POOLS_DIR_MARKER ".hpwarm-pool-dir"

/* The directory inside each pool directory where stock files live (ready,
 * refilling, released and being zeroed): mode 0700 and the daemon's, so no
 * other process can reach a name in it, not even for an O_PATH descriptor.
 * On the same mount as the pools, so a hand-out is one rename(2) out of it.
 * A name no pool or stock file can have (they start with a letter, a digit
 * or POOL_STOCK_PREFIX). */
#define POOLS_STOCK_DIR ".stock"
_Static_assert(sizeof("/" POOLS_STOCK_DIR) <= POOL_STOCK_DIR_ROOM, "pool_state.h leaves room for it");

/* Check that DIR is (or, when missing, can be created as) a directory on a
 * hugetlbfs mount whose page size is PAGE_SIZE, and that it is ours; creates
 * it (mode 0750, group GID unless (gid_t)-1) inside the mount when missing.
 * DIR is ours when it holds POOLS_DIR_MARKER; a missing or empty DIR gets
 * the marker now.  main.c calls it at start for a clear error; pools_new()
 * calls it again.  Returns 0,
 *   -EMEDIUMTYPE  DIR (or its parent, if DIR is missing) is not on hugetlbfs;
 *   -EXDEV        it is hugetlbfs of another page size;
 *   -ENOTDIR      DIR is not a directory;
 *   -EBUSY        DIR is the root of a mount (or a bind mount): the mount is
 *                 shared with other software (QEMU, libvirt, DPDK), use a
 *                 directory of ours inside it, e.g. /dev/hugepages/hpwarm;
 *   -ENOTEMPTY    DIR exists, is not empty and has no marker: it is not
 *                 ours (its files could be another program's), use a new
 *                 or empty directory;
 *   or the -errno of stat/statfs/mkdir/open. */
int pools_check_mount(const char *dir, uint64_t page_size, gid_t gid);

struct pools;

/* The node and page-size rules, each in one wording (pools_rules.c): 0 when
 * NODE is a NUMA node of this host / the kernel offers PAGE_SIZE, else
 * -ENOENT with ERR filled (404 unknown-node; 404 unknown-page-size, naming
 * the sizes this host has).  pools_check_node_page_size applies both, the
 * node first.  Every pools_* entry that takes a node and a page size
 * applies it itself (pools_create, pools_set_stock, pools_set_elastic,
 * pools_reserve).  The handlers of /v1/nodes/{id}/... call the two rules
 * too, through api_path_target, on the path before the body is read, so
 * that a request with a bad path and a bad body gets the path's answer;
 * for the node views and a policy's GET and DELETE that is the only
 * check. */
int pools_check_node(const struct pools *p, int node, struct problem *err);
int pools_check_page_size(const struct pools *p, uint64_t page_size, struct problem *err);
int pools_check_node_page_size(const struct pools *p, int node, uint64_t page_size, struct problem *err);
/* Most workers one pool may ask for (the schema's maximum). */
#define POOLS_THREADS_MAX 4096
/* A pool's threads and label rules, each in one wording: 0, or -EINVAL
 * with ERR filled (invalid-field).  THREADS as asked: 1 to
 * POOLS_THREADS_MAX (an absent one is the node's default, never an explicit
 * 0); LABEL by pool_state.h's rule.  pools_create applies them to a request
 * that has them; PUT /v1/pools applies them to what the body says, so an
 * explicit 0 or a number past an unsigned is refused before it is lost. */
int pools_check_threads(uint64_t threads, struct problem *err);
int pools_check_label(const char *label, struct problem *err);
/* The unknown-node refusal for a node as the client wrote it, for a handler
 * whose text cannot be a node id at all (not canonical decimal, past INT_MAX):
 * the same answer the rule gives an id the host lacks. */
void pools_refuse_node(struct problem *err, const char *node);

/* Loads and reconciles the journal, re-applies reservations, resumes warming
 * pools, starts the upkeep thread (finished jobs, TTL expiry).  Caller owns
 * *ret.  -EDOM: CFG's stock targets are refused (the reason logged). */
int pools_new(const struct pools_config *cfg, struct pools **ret);
/* Stops jobs at a chunk boundary (they stay "warming" in the journal and
 * resume at next start), saves, frees.  Accepts NULL.  Call it after the HTTP
 * layer stopped (no pools_* call may be in flight) and before engine_free. */
void pools_free(struct pools *p);

/* The largest ttl_seconds pools_create accepts (invalid-field above):
 * longer TTLs are a mistake, and the cap keeps finished_at + ttl far from
 * int64 overflow.  Ten years; PUT /v1/pools checks it first, pools_create again. */
#define POOLS_TTL_MAX (UINT64_C(10) * 366 * 24 * 3600)

struct pool_req {
        char name[POOL_NAME_MAX + 1];
        int node;
        uint64_t size_bytes;
        uint64_t page_size;
        unsigned threads;          /* 0 = node default */
        uint64_t ttl_seconds;      /* 0 = none; at most POOLS_TTL_MAX */
        bool reserve;              /* grow the node's pool first if short */
        char label[POOL_LABEL_MAX + 1]; /* "" = none; a PUT of an existing pool must match it */
        /* The file's owner as handed out, mode 0600 (one VMM's user); else
         * --pool-group and 0660.  A PUT of an existing pool must match. */
        bool file_owned;
        uint32_t file_uid, file_gid;
};

/* A snapshot of one pool, plain data. */
struct pool_view {
        char name[POOL_NAME_MAX + 1];
        int node;
        uint64_t page_size;
        uint64_t size_bytes;
        enum pool_state state;
        bool claimed;
        uint64_t ttl_seconds;      /* 0 = none */
        int64_t created_at;        /* unix seconds */
        int64_t started_at;        /* unix seconds */
        int64_t finished_at;       /* unix seconds, 0 = not finished */
        char error_slug[POOL_ERROR_SLUG_MAX];     /* "" = none */
        char error_detail[POOL_ERROR_DETAIL_MAX];
        char path[POOL_PATH_MAX];
        uint64_t bytes_done;
        double rate_bytes_per_second;
        unsigned threads;          /* workers taking part */
        double elapsed_seconds;
        bool placement_verified;
        uint64_t pages_off_node;
        int64_t expires_at;        /* unix seconds; 0 = none (claimed or no TTL) */
        int owner_pid;             /* claimed with this VMM pid; 0 = none */
        int64_t unmapped_since;    /* unix s: claimed, no owner pid, no process maps it; 0 = no */
        enum pool_from_stock from_stock;
        char label[POOL_LABEL_MAX + 1];  /* "" = none */
        bool file_owned;                 /* file_uid, file_gid valid */
        uint32_t file_uid, file_gid;
};

/* Create and start warming.  0 with *RET_CREATED true (created, or handed
 * out from stock) or false (an identical pool exists: same node, sizes; its
 * view is returned), and *RET filled; or -errno with *ERR set:
 * -EEXIST pool-conflict (same name, different pool); -ENOMEM
 * insufficient-hugepages (node's free pages minus pages other running jobs
 * will take < needed, and reserve not asked or not enough); -ENOENT
 * unknown-node or unknown-page-size; -EINVAL invalid-field (size not a
 * positive multiple of page size, bad name, ttl_seconds over POOLS_TTL_MAX);
 * -ENODEV no-hugetlbfs (no mount for that page size); -EFBIG
 * pool-too-large; -ENOSPC too-many-pools; -EDQUOT node-warm-limit
 * (max_node_warm_bytes: ready pools are claimed or expire, so a retry can
 * pass); others pool-file-error, warm-start-failed, state-write-failed (the
 * pool was not created).  The handler picks the status and Retry-After.
 * May block (reserve): call off the HTTP thread.
 *
 * An identical pool is returned in every state: a failed pool with the same
 * spec comes back as it is, so a retrying scheduler sees why (DELETE, then
 * retry); threads, ttl_seconds and reserve are not part of the identity. */
int pools_create(struct pools *p, const struct pool_req *req, struct pool_view *ret, bool *ret_created,
                 struct problem *err);
/* 0 with *RET filled, or -ENOENT with ERR set (pool-not-found). */
int pools_get(struct pools *p, const char *name, struct pool_view *ret, struct problem *err);
/* Which pools a page of the list shows: names after AFTER (NULL: from the
 * first), and the state, node and page size when set. */
struct pools_page_filter {
        const char *after;
        bool has_state, has_node;
        enum pool_state state;
        int node;
        uint64_t page_size;        /* 0 = any */
};
/* One page of the list in name order: the first LIMIT (>= 1) pools that
 * pass F, as views in *RET (caller frees), *RET_MORE whether more follow.
 * The rows are looked at by their names and a few fields, sorted as
 * pointers; views are made for the page alone.  0 or -ENOMEM. */
int pools_list_page(struct pools *p, const struct pools_page_filter *f, size_t limit, struct pool_view **ret,
                    size_t *ret_n, bool *ret_more);
/* The pools GET /v1/pools shows, summed into the N groups of SUMS that match
 * their node, page size and state (bytes and count added to; zero them
 * first).  For /metrics: no views, no job status, one walk of the registry
 * under its lock, nothing allocated. */
struct pools_size_sum {
        int node;
        uint64_t page_size;
        enum pool_state state;
        uint64_t bytes, count;
};
void pools_sum_sizes(struct pools *p, struct pools_size_sum *sums, size_t n);
/* Cancel (returns once no worker touches the file), remove the file, forget
 * the record.  0, or -errno with ERR set: -ENOENT pool-not-found; -EAGAIN
 * state-write-failed, the journal could not be saved (nothing changed: the
 * pool is as it was, also after a restart); or unlink's -errno,
 * pool-file-error (the record is kept so the release can be retried).
 * RECYCLE says whether a ready pool whose stock target is short may be
 * recycled into the stock (DELETE: yes; DELETE ?recycle=false: no, its
 * file is removed).  Recycled, the pool is gone at once as for a
 * removal (its name is free), and its file waits as a "dirty" stock row
 * until no process maps it, then is zeroed in place (pools_recycle.c). */
int pools_delete_recycle(struct pools *p, const char *name, bool recycle, struct problem *err);
/* Mark claimed (clears the TTL), binding the pool to the life of process
 * PID (the VMM that maps it; 0 = no owner): the pool is released (file removed,
 * pages back) when that process exits, also when it exits while the daemon
 * is down; a process is told from a later one with the same pid by its
 * start time.  A pool with a live owner is never released by anything but
 * DELETE.  Claiming a pool claimed without owner binds it; claiming again
 * with the same process, or without a pid, is 0 as it is.  Returns 0, or
 * -errno with ERR set and nothing changed: -ENOENT pool-not-found, -EBUSY
 * pool-not-ready, -EINVAL invalid-field (PID < 0), -ESRCH or -ECHILD
 * invalid-field (no process PID, or PID is a thread's), -EEXIST pool-owned
 * (claimed by another live process), -ENOSYS internal-error (no pidfds),
 * or another -errno: state-write-failed (a failed save). */
int pools_claim_pid(struct pools *p, const char *name, pid_t pid, struct pool_view *ret, struct problem *err);

/* Set a node's persistent pool through reserve.c, serialised with pool
 * creation, and record it in the journal on success.  An unknown node or
 * page size is refused first, with pools_check_node_page_size's -ENOENT and
 * words (nothing read or written; counted as a failed reservation).  Else
 * the returns of reserve_apply(), with ERR set on a refusal: -ENOMEM
 * insufficient-memory (the floor; its counts in ERR), -EAGAIN
 * reserve-shortfall (the counts in ERR), -ENOENT unknown-page-size (the
 * node has no counters of that size), another -errno sysfs-error.  A shrink never goes below the node's pages in use plus
 * the pages its warming pools have yet to take (they count as free until
 * faulted, and the kernel would free them under the jobs): the count is
 * clamped there and *ret says complete=false, requested = REQ->count.
 * -ECANCELED when the journal could not be saved: the count was put back
 * to ret->previous as far as the kernel allowed (ret->total) and nothing is
 * recorded (state-write-failed).  -EROFS hugepages-fixed under
 * cfg.fixed_hugepages, nothing read or written. */
int pools_reserve(struct pools *p, const struct reserve_req *req, struct reserve_result *ret,
                  struct problem *err);

/* Pages of (NODE, PAGE_SIZE) held by ready pools and by warming pools (for
 * warming pools: the pages populated so far, not their target). */
void pools_node_usage(struct pools *p, int node, uint64_t page_size, uint64_t *ret_warm,
                      uint64_t *ret_warming);

/* What a new pool of (NODE, PAGE_SIZE) can get now, in pages: the node's
 * free pages, less what warms on the node have yet to take, less the
 * reservations of mappings not yet faulted that are not our own warms'
 * (`foreign`: resv_hugepages, global, less the part our mapped warms hold).
 * The kernel does not say which node will serve a foreign reservation, so
 * each node has all of it taken off: exact on a one-node host, a lower
 * bound on a multi-node one (docs/API-CONTRACT.md).  Admission, stock
 * refills, GET /v1/nodes and the metrics all use this one reading. */
struct pools_avail {
        uint64_t total;     /* nr_hugepages of the node */
        uint64_t free;      /* free_hugepages of the node */
        uint64_t needed;    /* pages warms on the node have yet to take */
        uint64_t reserved;  /* resv_hugepages (global) */
        uint64_t foreign;   /* reserved, less what our mapped warms hold */
        uint64_t available; /* free - needed - foreign, at least 0 */
};
/* 0, or topo_read_hugepages' -errno.  Takes `lock` itself; no lock held. */
int pools_node_available(struct pools *p, int node, uint64_t page_size, struct pools_avail *ret);

struct pools_stats {
        uint64_t jobs_started, jobs_ready, jobs_failed, jobs_cancelled;
        /* Pools released (file removed), by why: DELETE, TTL passed
         * unclaimed, owner process exited, unmapped past
         * release_unmapped_after. */
        uint64_t pools_expired, released_delete, released_owner_exited, released_unmapped;
        uint64_t pools_unmapped;           /* gauge: claimed, no owner, mapped by no process */
        uint64_t orphan_files_removed;
        uint64_t bytes_warmed_total;       /* counter: bytes populated by finished jobs */
        double job_seconds_sum;            /* over finished (ready) jobs */
        uint64_t job_seconds_count;
        /* The same jobs per METRICS_DURATION_BOUNDS bucket (last: +Inf). */
        uint64_t job_seconds_buckets[METRICS_DURATION_BUCKETS + 1];
        uint64_t reservations_ok, reservations_partial, reservations_shortfall,
                reservations_refused, reservations_error;
        /* Stock: creates served by a full stock file, a smaller one grown,
         * none (of a stocked node and page size); stock files removed to
         * make room for pools; refills that reached "stock" and their
         * durations. */
        uint64_t stock_hits, stock_partial_hits, stock_misses, stock_given_way;
        uint64_t stock_refills, stock_refill_bytes;
        double stock_refill_seconds_sum;
        uint64_t stock_refill_seconds_buckets[METRICS_DURATION_BUCKETS + 1];
        /* Recycling: released pools kept as dirty stock files; recycles
         * that reached "stock" (saved), their bytes and zeroing durations;
         * kept files removed instead (changed, holes, zero job failed or
         * cancelled, a save that failed). */
        uint64_t stock_recycle_kept, stock_recycled, stock_recycled_bytes, stock_recycle_discarded;
        double stock_recycle_seconds_sum;
        uint64_t stock_recycle_seconds_buckets[METRICS_DURATION_BUCKETS + 1];
        /* The recycle thread's holder scans of released files (every
         * process's descriptors, looking for the file's), and the time
         * they took: off every request's path, shown so an operator sees
         * what a crowded host costs there. */
        uint64_t stock_holder_scans;
        double stock_holder_scan_seconds_sum;
        /* Journal saves that succeeded: with the directory fsync (what must
         * outlive a reboot changed), and without it (pool rows only). */
        uint64_t journal_saves_full, journal_saves_light;
};
void pools_get_stats(struct pools *p, struct pools_stats *ret);

/* ---- stock ----
 * A stock target asks for COUNT ready files of one (node, page size, size),
 * kept in the pool directory under stock names (pool_state.h), refilled by
 * low-priority engine jobs, and handed out to a create of that exact spec
 * by rename(2).  Stock files are not pools: pools_get/list never show them. */

/* At most this many files per target, and targets per daemon. */
#define POOLS_STOCK_COUNT_MAX 1024
#define POOLS_STOCK_TARGETS_MAX 64

/* recycling counts the target's released files on their way back: dirty
 * (waiting until no process maps them) and being zeroed; dirty says how
 * many of them are still dirty. */
struct stock_view {
        struct stock_target_record target;
        unsigned ready, warming, recycling, dirty;
        uint64_t deficit;          /* count - (ready + warming + recycling), or 0 */
};

/* Replace all targets with T[0..N) and save.  Returns 0, or -errno with ERR
 * set and nothing changed: -ENOENT unknown-node / unknown-page-size,
 * -EINVAL invalid-field (zero size or count, size not a multiple of the
 * page size, count over POOLS_STOCK_COUNT_MAX, too many targets, the same
 * (node, page size, size) twice), -ENODEV no-hugetlbfs, -E2BIG
 * stock-too-large (the targets of one node and page size need more pages than
 * the node has; the detail says how many files fit), or a failed save
 * (state-write-failed).
 * Files of targets that went away are removed; new deficits are refilled
 * by the upkeep thread. */
int pools_set_stock(struct pools *p, const struct stock_target_record *t, size_t n, struct problem *err);
/* The targets with their counts.  Caller frees *ret. */
int pools_get_stock(struct pools *p, struct stock_view **ret, size_t *ret_n);

/* ---- elastic pools ----
 * A policy makes the pool of one (node, page size) follow demand: admission
 * grows it up to max when a pool or a refill needs more than is free (as
 * "reserve": true does), and the upkeep thread gives back free pages beyond
 * headroom that stayed free idle_seconds, never below min (elastic.h). */
struct elastic_view {
        struct elastic_policy_record policy;
        enum elastic_growth runtime_growth;
        uint64_t cma_total_bytes, cma_free_bytes; /* /proc/meminfo CmaTotal, CmaFree */
        uint64_t grown_total, returned_total; /* pages, since the daemon started */
        enum elastic_action last;  /* ELASTIC_KEEP: nothing done yet */
        uint64_t last_pages;
        int64_t last_at;           /* unix s */
        char last_why[160];
        const char *decision;      /* the last look's decision (a static sentence), NULL = none yet */
};
/* Set (or replace) the policy of POL's node and page size, growing the
 * pool to min now, and save.  0 with *RET filled, or -errno with ERR set
 * and nothing changed: -ENOENT unknown-node / unknown-page-size,
 * -EINVAL invalid-field (record_check_elastic_policy), -ENOMEM
 * insufficient-memory (max beyond the memory floor, or growing to min
 * would go below it), -EAGAIN reserve-shortfall (the kernel gave fewer
 * pages than min), -EPERM growth-not-reliable (gigantic pages without
 * CMA and no allow_best_effort), -EROFS hugepages-fixed (cfg.fixed_hugepages),
 * or a failed save (state-write-failed). */
int pools_set_elastic(struct pools *p, const struct elastic_policy_record *pol, struct elastic_view *ret,
                      struct problem *err);
/* -ENOENT if (NODE, PAGE_SIZE) has no policy. */
int pools_get_elastic(struct pools *p, int node, uint64_t page_size, struct elastic_view *ret);
/* Every policy.  Caller frees *RET. */
int pools_list_elastic(struct pools *p, struct elastic_view **ret, size_t *ret_n);
/* Drop the policy: the pool stays static at its current size (recorded as
 * the node's reservation).  -ENOENT policy-not-found, or a failed save
 * (state-write-failed, the policy stays); ERR set. */
int pools_delete_elastic(struct pools *p, int node, uint64_t page_size, struct problem *err);
/* Whether growing PAGE_SIZE pages on NODE at runtime is reliable. */
enum elastic_growth pools_runtime_growth(struct pools *p, int node, uint64_t page_size);

/* Change notification, for callers that wait for a pool without a thread
 * each (long-polls suspended in the HTTP layer).  FN(ARG, name) is called
 * after every committed change of a pool's state or existence: created,
 * warming -> ready/failed/cancelled, claimed, removed (DELETE, TTL expiry,
 * owner exit, unmapped release).
 * It may be called more than once for one change (warming -> ready is shown
 * before it is saved, and told both times) and for changes a waiter does not
 * care about: it says "look again", and the caller re-reads with pools_get.
 *
 * FN runs in whichever thread made the change (an HTTP work thread, the
 * upkeep thread), with none of the registry's locks held, so it may call
 * pools_get and pools_list_page; it must not block, nor call
 * pools_set_observer or any pools_* function that changes a pool.  Calls are
 * serialised.  One observer at a time: a new call replaces the old one, and
 * FN = NULL removes it; when pools_set_observer returns, the old FN is not
 * running and will not be called again.  NAME is valid only during the
 * call.  Changes made by pools_new (start-up) happen before any observer
 * can be set and are not told.
 * NAME is NULL when the change generation (pools_generation) moved in a
 * save that may name no pool (a stock target set, a stock file gone): the
 * caller's "look again" is then about the whole stock, not one pool.  Such
 * a call may come from a thread that holds admit.lock (a stock target set),
 * which the lock order allows (admit.lock before reg.lock). */
void pools_set_observer(struct pools *p, void (*fn)(void *arg, const char *name), void *arg);

/* The change generation: a counter that moves (never back, never in a read)
 * whenever anything GET /v1/stock or GET /v1/pools shows can have changed: a
 * pool or stock file added, changing state, held or let go, claimed or
 * released, dropped, a stock target set.  It may move for a change no
 * reader cares about (a warming job's progress); it never misses one.
 * Taken before a view (pools_get_stock, pools_list_page), the view shows at least
 * what that generation counts.  Starts at 0 with each daemon (not saved):
 * a reader compares generations of one daemon's life only. */
uint64_t pools_generation(struct pools *p);
