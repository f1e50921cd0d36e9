/* deadline: time limits on every connection, and a bound on connections
 * nobody has vouched for, enforced by one thread.
 *
 * libmicrohttpd's own timeout only notices silence, so a client that sends
 * its headers one byte a second (slowloris) would hold a connection for
 * ever.  Every connection is tracked here from its start to its close
 * notification with a deadline: its header must arrive within the header
 * limit (a few seconds), its body within the request limit, and an idle
 * keep-alive connection is closed after the request limit too.  The
 * deadline thread shuts down the socket of a connection past its deadline,
 * and libmicrohttpd then closes it as if the peer had.
 *
 * Connections on a bounded listener (TCP) are unvouched until one of their
 * requests passes access control.  Unvouched connections have their own
 * bound below the listener's: a new connection past either bound evicts the
 * oldest unvouched one (shuts its socket down) instead of being refused, so
 * clients that cannot authenticate (or never finish a header) cannot keep
 * the ones that can out.  The unix socket is not bounded here.
 *
 * The thread, the eviction and the close notification share one lock, so
 * nobody touches a descriptor that was already closed (and perhaps reused).
 * No libmicrohttpd here: the glue passes descriptors in. */
#pragma once
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One per open connection; in deadlines.conns under deadlines.lock, newest
 * first. */
struct conn_track {
        int fd;
        uint64_t deadline_ns;   /* lock; 0: none */
        bool bounded;           /* on a bounded listener */
        bool vouched;           /* lock: a request of it passed access control */
        bool evicted;           /* lock: shut down to make room; no longer counted */
        struct conn_track *prev, *next;
};

struct deadlines {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct conn_track *conns;   /* lock */
        size_t n_bounded;           /* lock: bounded, not evicted */
        size_t n_unvouched;         /* lock: bounded, unvouched, not evicted */
        size_t bound, unvouched_bound;
        bool stop;                  /* lock */
        bool running;
        pthread_t thread;
        uint64_t header_ns;         /* a new connection's header must arrive within this */
};

/* Start the thread ("http-deadline").  HEADER_NS: limit for a header to
 * arrive after the connection or its request line started.  BOUND and
 * UNVOUCHED_BOUND: for connections added with BOUNDED (0: no bound). */
int deadlines_start(struct deadlines *d, uint64_t header_ns, size_t bound, size_t unvouched_bound);
/* Stop and join the thread.  Safe on a zeroed struct. */
void deadlines_stop(struct deadlines *d);
/* Track FD with the header deadline armed.  A BOUNDED connection past a
 * bound evicts the oldest unvouched one, which may be FD itself when every
 * other is vouched.  NULL on allocation failure (then only libmicrohttpd's
 * idle timeout applies to it). */
struct conn_track *deadlines_add(struct deadlines *d, int fd, bool bounded);
/* Forget T (at the connection's close notification) and free it.  Accepts NULL. */
void deadlines_remove(struct deadlines *d, struct conn_track *t);
/* Deadline of T: now + NS, or none when NS is 0.  Accepts NULL. */
void deadlines_arm(struct deadlines *d, struct conn_track *t, uint64_t ns);
/* A request on T passed access control: T is no longer evictable first.
 * Accepts NULL. */
void deadlines_vouch(struct deadlines *d, struct conn_track *t);
