/* deadline: connection time limits and the unvouched bound (see deadline.h). */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "deadline.h"
#include "util.h"

/* How often the thread looks; a late client may get up to this much extra. */
#define DEADLINE_PERIOD_NS (250 * 1000 * 1000)

static void *deadline_thread(void *arg)
{
        struct deadlines *d = arg;
        pthread_mutex_lock(&d->lock);
        while (!d->stop) {
                uint64_t now = now_mono_ns();
                for (struct conn_track *t = d->conns; t; t = t->next)
                        if (t->deadline_ns && now > t->deadline_ns) {
                                shutdown(t->fd, SHUT_RDWR);
                                t->deadline_ns = 0;
                        }
                uint64_t until = now_mono_ns() + DEADLINE_PERIOD_NS;
                struct timespec ts = {.tv_sec = (time_t)(until / 1000000000u),
                                      .tv_nsec = (long)(until % 1000000000u)};
                pthread_cond_timedwait(&d->cond, &d->lock, &ts);
        }
        pthread_mutex_unlock(&d->lock);
        return NULL;
}

int deadlines_start(struct deadlines *d, uint64_t header_ns, size_t bound, size_t unvouched_bound)
{
        d->header_ns = header_ns;
        d->bound = bound;
        d->unvouched_bound = unvouched_bound;
        pthread_mutex_init(&d->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&d->cond, &ca);
        pthread_condattr_destroy(&ca);
        int r = pthread_create(&d->thread, NULL, deadline_thread, d);
        if (r != 0)
                return -r;
        pthread_setname_np(d->thread, "http-deadline");
        d->running = true;
        return 0;
}

void deadlines_stop(struct deadlines *d)
{
        if (!d->running)
                return;
        pthread_mutex_lock(&d->lock);
        d->stop = true;
        pthread_cond_broadcast(&d->cond);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
        d->running = false;
        pthread_mutex_destroy(&d->lock);
        pthread_cond_destroy(&d->cond);
}

/* Lock held.  Stop counting T and shut its socket down. */
static void evict(struct deadlines *d, struct conn_track *t)
{
        t->evicted = true;
        t->deadline_ns = 0;
        d->n_bounded--;
        if (!t->vouched)
                d->n_unvouched--;
        shutdown(t->fd, SHUT_RDWR);
}

/* Lock held.  The oldest bounded, unvouched, live connection, or NULL. */
static struct conn_track *oldest_unvouched(struct deadlines *d)
{
        struct conn_track *found = NULL;
        for (struct conn_track *t = d->conns; t; t = t->next)
                if (t->bounded && !t->vouched && !t->evicted)
                        found = t;
        return found;
}

struct conn_track *deadlines_add(struct deadlines *d, int fd, bool bounded)
{
        struct conn_track *t = calloc(1, sizeof(*t));
        if (!t)
                return NULL;
        t->fd = fd;
        t->bounded = bounded;
        pthread_mutex_lock(&d->lock);
        t->deadline_ns = now_mono_ns() + d->header_ns;
        t->next = d->conns;
        if (d->conns)
                d->conns->prev = t;
        d->conns = t;
        if (bounded) {
                d->n_bounded++;
                d->n_unvouched++;
                if ((d->bound && d->n_bounded > d->bound) ||
                    (d->unvouched_bound && d->n_unvouched > d->unvouched_bound)) {
                        /* T is the newest, so it is chosen only when it is the
                         * only unvouched one. */
                        struct conn_track *victim = oldest_unvouched(d);
                        if (victim)
                                evict(d, victim);
                }
        }
        pthread_mutex_unlock(&d->lock);
        return t;
}

void deadlines_remove(struct deadlines *d, struct conn_track *t)
{
        if (!t)
                return;
        pthread_mutex_lock(&d->lock);
        if (t->prev)
                t->prev->next = t->next;
        else
                d->conns = t->next;
        if (t->next)
                t->next->prev = t->prev;
        if (t->bounded && !t->evicted) {
                d->n_bounded--;
                if (!t->vouched)
                        d->n_unvouched--;
        }
        pthread_mutex_unlock(&d->lock);
        free(t);
}

void deadlines_arm(struct deadlines *d, struct conn_track *t, uint64_t ns)
{
        if (!t)
                return;
        pthread_mutex_lock(&d->lock);
        if (!t->evicted)
                t->deadline_ns = ns ? now_mono_ns() + ns : 0;
        pthread_mutex_unlock(&d->lock);
}

void deadlines_vouch(struct deadlines *d, struct conn_track *t)
{
        if (!t)
                return;
        pthread_mutex_lock(&d->lock);
        if (!t->vouched) {
                t->vouched = true;
                if (t->bounded && !t->evicted)
                        d->n_unvouched--;
        }
        pthread_mutex_unlock(&d->lock);
}
