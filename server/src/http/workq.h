/* workq: a bounded queue of deferred work with a fixed set of threads.
 *
 * The threads are created at start and never afterwards: creating a thread
 * maps its stack, which takes the mmap lock as a writer, and that would stall
 * behind prefault workers holding it as readers while pools warm.  A queue
 * has a bound on pending items; past it workq_push() refuses, so the caller
 * answers "busy" instead of queueing without limit.  Items are intrusive
 * (struct workq_item inside the caller's own struct), so pushing never
 * allocates.  No libmicrohttpd here: the item's run() does whatever resuming
 * the caller needs. */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define WORKQ_MAX_THREADS 64

struct workq_item {
        void (*run)(struct workq_item *it);
        struct workq_item *next;   /* queue's */
};

struct workq {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct workq_item *head, *tail;   /* lock */
        size_t pending;                   /* lock */
        size_t idle;                      /* lock: threads waiting for an item */
        size_t max_pending;
        bool only_if_idle;  /* accept an item only when a thread is idle for it */
        bool stopping;      /* lock */
        size_t n_threads;
        pthread_t threads[WORKQ_MAX_THREADS];
        char name[12];      /* thread names are NAME-<index> */
};

/* Start N_THREADS (<= WORKQ_MAX_THREADS) threads named "NAME-<i>" (NAME at
 * most 11 characters).  MAX_PENDING bounds queued items; with ONLY_IF_IDLE
 * an item is taken only when a thread is idle to run it at once.  On failure
 * the threads already started keep running: call workq_stop(). */
int workq_start(struct workq *q, const char *name, size_t n_threads, size_t max_pending, bool only_if_idle);
/* Queue IT; false (nothing queued) when stopping or full. */
bool workq_push(struct workq *q, struct workq_item *it);
/* Drain: threads finish what is queued, then exit.  Safe on a queue never
 * started (zeroed). */
void workq_stop(struct workq *q);
