/* engine_types.h: the engine's private structs, shared by the engine's
 * files and by nothing else (as sd-event shares its own through
 * event-source.h).  Callers see only engine.h.
 *
 *   engine.c         the engine and its nodes: workers created once, pinned
 *                    and bound to their node; the per-node run queues; the
 *                    worker loop that hands out chunks and accounts for them
 *   engine_job.c     a job's life: submit (check, plan, map, bind), status,
 *                    leaving the run queue, the final phase, cancel, free
 *   engine_kernel.c  the kernel touch points: engine_ops and its defaults,
 *                    one chunk, the placement check, libnuma's error hooks,
 *                    what an errno means
 *
 * Only these files call madvise, mbind, move_pages or set_mempolicy, and
 * the calls on a pool mapping all go through engine_ops.
 *
 * Locking.  Each node has one mutex, node_ctx.lock, and it is the only lock
 * in the engine: nodes share nothing, so jobs on different nodes never
 * contend.  It guards what is marked so below, in the node and in each of
 * its jobs.  Two condition variables go with it: `work` wakes idle workers
 * when a chunk can be taken (or they must stop), `changed` wakes whoever
 * waits for a job to go quiet (active == 0) or complete, or for a worker to
 * start.  The lock is held only to pick a chunk and to account for it: never
 * across a syscall on a mapping, munmap or on_done, and no other lock is
 * taken under it, so there is no lock order to keep.  job_cancel and
 * job_free sleep on `changed`: never call them with the lock held.  These
 * rules are asserted (base/lock.h, in Debug and RelWithDebInfo builds): a
 * function that needs the lock calls engine_assert_held() on entry, one
 * that must run without it (a chunk, the final phase, a cancel)
 * engine_assert_unheld().
 *
 * Ownership.  The caller of engine_new owns the engine; the engine owns its
 * nodes, and each node its workers and CPU set.  A job belongs to the caller
 * of engine_submit until job_free; the node holds it on `jobs` (and on a run
 * queue while it has chunks to hand out) but never frees it.  The fields of
 * a job above the lock line are written before the job is published on the
 * node's lists and are then read without the lock; `map` goes back to NULL,
 * under the lock, only once no worker can be inside a chunk.  The final
 * phase of a job (sum the placement checks, munmap, on_done) is run by
 * exactly one thread, the one that set `finishing`: the worker that accounts
 * for the job's last chunk, or the thread in job_cancel.  It sets `complete`
 * after on_done has returned and the mapping is gone; from then on no engine thread touches the job, and
 * job_free may free it.  engine_free cuts loose the jobs the caller has not
 * freed yet (n = NULL), so that job_free only frees them. */
#pragma once

/* Private to server/src/engine/: its object library defines HPW_IN_ENGINE
 * (server/CMakeLists.txt); everything else goes through engine.h. */
#ifndef HPW_IN_ENGINE
#error "engine_types.h is private to server/src/engine/"
#endif
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine.h"
#include "lock.h"
#include "plan.h"

/* Node masks for mbind/set_mempolicy: the kernel allows at most 1 << 10
 * nodes (CONFIG_NODES_SHIFT). */
#define NODEMASK_BITS 1024
#define NODEMASK_LONGS (NODEMASK_BITS / (8 * sizeof(unsigned long)))

/* A circular doubly linked list; an unlinked entry points at itself. */
struct link {
        struct link *prev, *next;
};

static inline void link_init(struct link *l) { l->prev = l->next = l; }
static inline bool link_empty(const struct link *head) { return head->next == head; }
static inline void link_del(struct link *l)
{
        l->prev->next = l->next;
        l->next->prev = l->prev;
        link_init(l);
}
static inline void link_add_tail(struct link *head, struct link *l)
{
        l->prev = head->prev;
        l->next = head;
        head->prev->next = l;
        head->prev = l;
}

struct node_ctx;

struct job {
        struct node_ctx *n;       /* NULL once engine_free cut the job loose */
        struct job_spec spec;
        struct plan plan;
        uint8_t *map;             /* the range [spec.offset, spec.size_bytes) of the file */
        uint64_t len;             /* its length */

        /* Everything below is guarded by n->lock. */
        struct link run;          /* in n->run[spec.prio] while chunks are left to hand out */
        struct link all;          /* in n->jobs until job_free or engine_free */
        bool queued;              /* in n->run[spec.prio] */
        uint64_t next_off;        /* start of the next chunk to hand out (plan_chunk_len) */
        unsigned active;          /* workers inside a chunk of this job */
        bool cancel;              /* job_cancel asked to stop */
        bool finishing;           /* one thread owns the final phase */
        bool complete;            /* on_done returned; the engine is done with the job */
        enum job_state state;
        uint64_t bytes_done;
        int error;
        uint64_t error_offset;
        bool verified;
        uint64_t pages_off_node;
        uint64_t off_node_seen;   /* summed over checked chunks */
        bool check_failed;        /* a chunk's placement query failed */
        uint64_t started_ns, finished_ns;
};

/* tid, pinned and mem_bound are written by the worker itself before it
 * counts as started, the rest by engine_new: all constant (and read without
 * the lock) once engine_new has returned. */
struct worker {
        struct node_ctx *n;
        pthread_t thread;
        pid_t tid;
        bool pinned, mem_bound;
};

struct node_ctx {
        /* Written by engine_new and engine_free only. */
        struct engine *e;
        int id;
        cpu_set_t *cpus;          /* the node's CPUs we may run on; NULL if none */
        size_t cpus_size;
        unsigned n_workers;
        unsigned n_created;       /* threads to join */
        struct worker *workers;

        /* The node's only lock, and the conditions waited on with it.
         * run, jobs, started and stop are guarded by it; locks_ready is
         * written by engine_new and engine_free only. */
        struct hpw_mutex lock;
        pthread_cond_t work;      /* a chunk may be available, or stop */
        pthread_cond_t changed;   /* a job went quiet or complete; a worker started */
        struct link run[2];       /* jobs with chunks left to hand out, by job_priority */
        struct link jobs;         /* every job not yet freed */
        unsigned started;         /* workers set up (pinned, bound) so far */
        bool stop;                /* workers must exit */
        bool locks_ready;         /* lock and conditions initialised */
};

/* Constant once engine_new has returned. */
struct engine {
        struct engine_ops ops;
        const char *zero_name;    /* of ops.zero */
        bool numa;                /* libnuma says the kernel has NUMA calls */
        size_t n_nodes;
        struct node_ctx *nodes;
};

#define engine_assert_held(m) hpw_assert_held_in("engine", m)
#define engine_assert_unheld(m) hpw_assert_unheld_in("engine", m)

/* NODE's context, or NULL if E has no such node. */
static inline struct node_ctx *node_find(const struct engine *e, int id)
{
        for (size_t i = 0; i < e->n_nodes; i++)
                if (e->nodes[i].id == id)
                        return &e->nodes[i];
        return NULL;
}

/* engine_job.c (engine.c calls these; engine_job.c calls nothing in
 * engine.c, so the two files are not a circle) */

/* Take J out of its run queue (lock held); wakes idle workers when that
 * lets low-priority jobs run. */
void job_unqueue(struct node_ctx *n, struct job *j);
/* The final phase of a job whose chunks are all accounted for: unlocked, by
 * the one thread that set `finishing`.  Runs on_done. */
void job_finish(struct job *j);

/* engine_kernel.c */

/* Set E's ops to the real calls, each replaced by OVERRIDE's member where
 * that is set (OVERRIDE may be NULL), and name the zeroing routine. */
void engine_ops_init(struct engine *e, const struct engine_ops *override);
/* MASK = { NODE }, for mbind and set_mempolicy. */
void nodemask_set(unsigned long mask[static NODEMASK_LONGS], int node);
/* One chunk of J at OFF (within the mapping), LEN bytes: populate, and for a
 * zero job zero.  No lock held.  0 or -errno. */
int job_do_chunk(const struct engine *e, const struct job *j, uint64_t off, uint64_t len);
/* How many pages of that chunk are not on J's node (not present counts as
 * off the node).  No lock held.  0 or the move_pages -errno. */
int job_check_placement(const struct engine *e, const struct job *j, uint64_t off, uint64_t len,
                        uint64_t *ret_off_node);
