/* waiters: long-polls parked without a thread each.
 *
 * A request that waits for something (a pool leaving "warming") is
 * suspended by the HTTP glue and parked here under a topic (the pool's
 * name).  One thread ("http-waits") serves every parked request: it sleeps
 * in poll() on an eventfd and on the parked connections' sockets, and wakes
 * when a topic is told to have changed (waiters_notify, which never blocks
 * and may be called from any thread), when the earliest deadline passes, or
 * when a client hangs up (POLLRDHUP), which drops its wait at once instead
 * of at its deadline: suspended connections are invisible to
 * libmicrohttpd's own loop, so it would not notice.
 *
 * Each caller (a token, a unix peer uid, an address) may park at most
 * per_caller_max requests and everyone together total_max; past either,
 * waiters_add refuses and the glue answers 429.
 *
 * A parked waiter belongs to this module from waiters_add until its done()
 * is called (on the waits thread, or in waiters_stop), exactly once; only
 * then may its owner free it.  No libmicrohttpd here. */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WAITERS_TOPIC_MAX 256
#define WAITERS_CALLER_MAX 80
#define WAITERS_BUCKETS 256

struct waiter;
/* Re-evaluate W: fill the answer and return true when it is complete.  With
 * EXPIRED (deadline passed or stopping) it must fill an answer and return
 * true.  Runs on the waits thread; must not block. */
typedef bool (*waiter_check_fn)(struct waiter *w, bool expired);
/* W leaves the module: GONE when its client hung up (no answer wanted). */
typedef void (*waiter_done_fn)(struct waiter *w, bool gone);

struct waiter {
        char topic[WAITERS_TOPIC_MAX];
        char caller[WAITERS_CALLER_MAX];
        int fd;                    /* the client's socket, watched for hang-up; -1: none */
        uint64_t deadline_ns;      /* CLOCK_MONOTONIC */
        waiter_check_fn check;
        waiter_done_fn done;
        /* The module's, under waiters.lock. */
        bool dirty;
        struct waiter *prev, *next;
        struct waiter *tprev, *tnext;  /* in its topic's bucket */
        struct waiter_caller *caller_entry;
};

struct waiter_caller;

struct waiters {
        pthread_mutex_t lock;
        struct waiter *head;                          /* lock */
        size_t n;                                     /* lock */
        struct waiter_caller *callers[WAITERS_BUCKETS]; /* lock */
        /* By topic, so a notification looks at the waiters of that topic
         * (and its bucket) only, not at every parked request. */
        struct waiter *topics[WAITERS_BUCKETS];       /* lock */
        bool stopping;                                /* lock */
        bool any_dirty;                               /* lock */
        unsigned per_caller_max, total_max;
        int efd;                                      /* eventfd that wakes the thread */
        pthread_t thread;
        bool running;
        /* The lock and efd are made (by waiters_start, until waiters_destroy). */
        bool inited;
};

/* Start the thread.  PER_CALLER_MAX and TOTAL_MAX: 0 means the defaults
 * (WAITERS_PER_CALLER_DEFAULT, WAITERS_TOTAL_DEFAULT). */
#define WAITERS_PER_CALLER_DEFAULT 256
#define WAITERS_TOTAL_DEFAULT 16384
int waiters_start(struct waiters *ws, unsigned per_caller_max, unsigned total_max);
/* Park W (topic, caller, fd, deadline, check, done filled in).  It is
 * checked once soon after, so a change between the caller's own look and
 * this call is not missed.  -EUSERS: its caller is at per_caller_max;
 * -ENOSPC: total_max reached; -ESHUTDOWN: stopping.  On error W is not
 * parked and done() is not called. */
int waiters_add(struct waiters *ws, struct waiter *w);
/* TOPIC may have changed: its waiters are re-checked on the waits thread. */
void waiters_notify(struct waiters *ws, const char *topic);
/* Re-check every waiter (e.g. the daemon started stopping). */
void waiters_notify_all(struct waiters *ws);
/* Number parked now. */
size_t waiters_count(struct waiters *ws);
/* Answer every waiter (EXPIRED), stop and join the thread.  Safe on a
 * zeroed struct.  waiters_add may still be called after it (and answers
 * -ESHUTDOWN): the lock and the eventfd stay until waiters_destroy. */
void waiters_stop(struct waiters *ws);
/* Release the lock and the eventfd, once nothing can call waiters_add or
 * waiters_notify any more (the HTTP layer's listener threads are stopped):
 * an add in flight takes the lock and writes the eventfd.  After
 * waiters_stop; safe on a zeroed struct and after a failed start. */
void waiters_destroy(struct waiters *ws);
