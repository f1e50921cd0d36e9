/* deadline: a time limit on each request's arrival, enforced by one thread.
 *
 * libmicrohttpd's own timeout only notices silence, so a client that sends
 * its headers one byte a second (slowloris) would hold a connection forever.
 * Every connection is tracked here from its start to its close notification
 * and given a deadline; the deadline thread shuts down the socket of a
 * connection past it, and libmicrohttpd then closes it as if the peer had.
 * The thread and the close notification share one lock, so the thread never
 * touches a descriptor that was already closed (and perhaps reused).  No
 * libmicrohttpd here: the glue passes descriptors in. */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* One per open connection; in deadlines.conns under deadlines.lock. */
struct conn_track {
        int fd;
        uint64_t deadline_ns;   /* lock; 0: no request being received */
        struct conn_track *prev, *next;
};

struct deadlines {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct conn_track *conns;   /* lock */
        bool stop;                  /* lock */
        bool running;
        pthread_t thread;
        uint64_t request_ns;        /* a request must arrive within this */
};

/* Start the thread ("http-deadline").  REQUEST_NS: the per-request limit. */
int deadlines_start(struct deadlines *d, uint64_t request_ns);
/* Stop and join the thread.  Safe on a zeroed struct. */
void deadlines_stop(struct deadlines *d);
/* Track FD with its deadline armed; NULL on allocation failure (then only
 * libmicrohttpd's idle timeout applies to it). */
struct conn_track *deadlines_add(struct deadlines *d, int fd);
/* Forget T (at the connection's close notification) and free it.  Accepts NULL. */
void deadlines_remove(struct deadlines *d, struct conn_track *t);
/* Arm (now + the request limit) or disarm T's deadline.  Accepts NULL. */
void deadlines_arm(struct deadlines *d, struct conn_track *t, bool arm);
