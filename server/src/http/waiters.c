/* waiters: parked long-polls served by one thread (see waiters.h).
 *
 * The thread owns the list's removals: it unlinks a waiter before calling
 * its done(), and nothing else unlinks except waiters_stop after the thread
 * has exited.  So the waiter pointers it collected for poll() stay valid
 * across the unlocked poll() call, although others may add waiters (and
 * mark them dirty) meanwhile.
 *
 * A notification wakes the thread with one write to an eventfd.  That write
 * is not trusted to succeed (tests/real/fault_sweep.py fails it on purpose;
 * a lost wake-up left a ready pool's long-poll waiting to its deadline): no
 * poll() of the thread blocks longer than WAKE_BOUND_MS, so a change it was
 * not woken for is seen that much later at worst, never at the deadline. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util.h"
#include "waiters.h"

/* The longest the thread sleeps without looking at its dirty waiters: what
 * a lost wake-up can cost.  Idle, one poll() a second. */
#define WAKE_BOUND_MS 1000

struct waiter_caller {
        char key[WAITERS_CALLER_MAX];
        unsigned n;
        struct waiter_caller *next;
};

static unsigned bucket_of(const char *key)
{
        uint32_t h = 2166136261u; /* FNV-1a */
        for (const unsigned char *p = (const unsigned char *)key; *p; p++)
                h = (h ^ *p) * 16777619u;
        return h % WAITERS_BUCKETS;
}

static void wake(struct waiters *ws)
{
        uint64_t one = 1;
        /* EAGAIN: the counter is already non-zero, the thread will wake. */
        ssize_t n = write(ws->efd, &one, sizeof(one));
        (void)n;
}

/* Lock held. */
static void unlink_waiter(struct waiters *ws, struct waiter *w)
{
        if (w->prev)
                w->prev->next = w->next;
        else
                ws->head = w->next;
        if (w->next)
                w->next->prev = w->prev;
        w->prev = w->next = NULL;
        if (w->tprev)
                w->tprev->tnext = w->tnext;
        else
                ws->topics[bucket_of(w->topic)] = w->tnext;
        if (w->tnext)
                w->tnext->tprev = w->tprev;
        w->tprev = w->tnext = NULL;
        ws->n--;
        struct waiter_caller *c = w->caller_entry;
        w->caller_entry = NULL;
        if (c && --c->n == 0) {
                struct waiter_caller **pp = &ws->callers[bucket_of(c->key)];
                while (*pp != c)
                        pp = &(*pp)->next;
                *pp = c->next;
                free(c);
        }
}

/* Grow *ARR to hold at least N pointers-or-pollfds of SIZE bytes. */
static bool reserve(void **arr, size_t *cap, size_t n, size_t size)
{
        if (n <= *cap)
                return true;
        size_t c = *cap ? *cap : 64;
        while (c < n)
                c *= 2;
        void *p = realloc(*arr, c * size);
        if (!p)
                return false;
        *arr = p;
        *cap = c;
        return true;
}

/* Milliseconds until DEADLINE_NS, at most WAKE_BOUND_MS. */
static int timeout_ms_until(uint64_t deadline_ns)
{
        uint64_t now = now_mono_ns();
        if (deadline_ns <= now)
                return 0;
        uint64_t ms = (deadline_ns - now + 999999) / 1000000;
        return ms > WAKE_BOUND_MS ? WAKE_BOUND_MS : (int)ms;
}

static void *waits_thread(void *arg)
{
        struct waiters *ws = arg;
        struct pollfd *pfd = NULL;
        struct waiter **watched = NULL, **due = NULL;
        size_t pfd_cap = 0, watched_cap = 0, due_cap = 0;

        for (;;) {
                size_t n_pfd = 1;
                uint64_t next = UINT64_MAX;

                pthread_mutex_lock(&ws->lock);
                if (ws->stopping) {
                        pthread_mutex_unlock(&ws->lock);
                        break;
                }
                /* On allocation failure the sockets are not watched this
                 * round; deadlines and notifications still work. */
                bool watch = reserve((void **)&pfd, &pfd_cap, ws->n + 1, sizeof(*pfd)) &&
                             reserve((void **)&watched, &watched_cap, ws->n + 1, sizeof(*watched));
                if (!pfd_cap) {
                        pthread_mutex_unlock(&ws->lock);
                        usleep(100 * 1000);
                        continue;
                }
                pfd[0] = (struct pollfd){.fd = ws->efd, .events = POLLIN};
                for (struct waiter *w = ws->head; w; w = w->next) {
                        if (watch && w->fd >= 0) {
                                pfd[n_pfd] = (struct pollfd){.fd = w->fd, .events = POLLRDHUP};
                                watched[n_pfd] = w;
                                n_pfd++;
                        }
                        if (w->deadline_ns < next)
                                next = w->deadline_ns;
                }
                bool dirty = ws->any_dirty;
                pthread_mutex_unlock(&ws->lock);

                if (poll(pfd, n_pfd, dirty ? 0 : timeout_ms_until(next)) < 0 && errno != EINTR)
                        usleep(10 * 1000);
                if (pfd[0].revents & POLLIN) {
                        uint64_t v;
                        ssize_t r = read(ws->efd, &v, sizeof(v));
                        (void)r;
                }

                /* Hung-up clients first: their waits end now, unanswered. */
                struct waiter *gone = NULL;
                pthread_mutex_lock(&ws->lock);
                for (size_t i = 1; i < n_pfd; i++)
                        if (pfd[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
                                struct waiter *w = watched[i];
                                unlink_waiter(ws, w);
                                w->next = gone;
                                gone = w;
                        }
                size_t n_due = 0;
                uint64_t now = now_mono_ns();
                if (reserve((void **)&due, &due_cap, ws->n, sizeof(*due))) {
                        for (struct waiter *w = ws->head; w; w = w->next)
                                if (w->dirty || now >= w->deadline_ns) {
                                        w->dirty = false;
                                        due[n_due++] = w;
                                }
                        ws->any_dirty = false;
                }
                pthread_mutex_unlock(&ws->lock);

                while (gone) {
                        struct waiter *w = gone;
                        gone = w->next;
                        w->next = NULL;
                        w->done(w, true);
                }
                for (size_t i = 0; i < n_due; i++) {
                        struct waiter *w = due[i];
                        if (!w->check(w, now >= w->deadline_ns))
                                continue;
                        pthread_mutex_lock(&ws->lock);
                        unlink_waiter(ws, w);
                        pthread_mutex_unlock(&ws->lock);
                        w->done(w, false);
                }
        }
        free(pfd);
        free(watched);
        free(due);
        return NULL;
}

int waiters_start(struct waiters *ws, unsigned per_caller_max, unsigned total_max)
{
        ws->per_caller_max = per_caller_max ? per_caller_max : WAITERS_PER_CALLER_DEFAULT;
        ws->total_max = total_max ? total_max : WAITERS_TOTAL_DEFAULT;
        ws->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (ws->efd < 0)
                return -errno;
        pthread_mutex_init(&ws->lock, NULL);
        ws->inited = true;
        int r = pthread_create(&ws->thread, NULL, waits_thread, ws);
        if (r != 0) {
                waiters_destroy(ws);
                return -r;
        }
        pthread_setname_np(ws->thread, "http-waits");
        ws->running = true;
        return 0;
}

int waiters_add(struct waiters *ws, struct waiter *w)
{
        pthread_mutex_lock(&ws->lock);
        if (ws->stopping) {
                pthread_mutex_unlock(&ws->lock);
                return -ESHUTDOWN;
        }
        if (ws->n >= ws->total_max) {
                pthread_mutex_unlock(&ws->lock);
                return -ENOSPC;
        }
        struct waiter_caller **bucket = &ws->callers[bucket_of(w->caller)], *c;
        for (c = *bucket; c; c = c->next)
                if (strcmp(c->key, w->caller) == 0)
                        break;
        if (c && c->n >= ws->per_caller_max) {
                pthread_mutex_unlock(&ws->lock);
                return -EUSERS;
        }
        if (!c) {
                c = calloc(1, sizeof(*c));
                if (!c) {
                        pthread_mutex_unlock(&ws->lock);
                        return -ENOMEM;
                }
                snprintf(c->key, sizeof(c->key), "%s", w->caller);
                c->next = *bucket;
                *bucket = c;
        }
        c->n++;
        w->caller_entry = c;
        w->prev = NULL;
        w->next = ws->head;
        if (ws->head)
                ws->head->prev = w;
        ws->head = w;
        struct waiter **topic = &ws->topics[bucket_of(w->topic)];
        w->tprev = NULL;
        w->tnext = *topic;
        if (*topic)
                (*topic)->tprev = w;
        *topic = w;
        ws->n++;
        w->dirty = true;
        ws->any_dirty = true;
        pthread_mutex_unlock(&ws->lock);
        wake(ws);
        return 0;
}

void waiters_notify(struct waiters *ws, const char *topic)
{
        bool any = false;
        pthread_mutex_lock(&ws->lock);
        for (struct waiter *w = ws->topics[bucket_of(topic)]; w; w = w->tnext)
                if (strcmp(w->topic, topic) == 0) {
                        w->dirty = true;
                        any = true;
                }
        if (any)
                ws->any_dirty = true;
        pthread_mutex_unlock(&ws->lock);
        if (any)
                wake(ws);
}

void waiters_notify_all(struct waiters *ws)
{
        if (!ws->running)
                return;
        pthread_mutex_lock(&ws->lock);
        for (struct waiter *w = ws->head; w; w = w->next)
                w->dirty = true;
        ws->any_dirty = true;
        pthread_mutex_unlock(&ws->lock);
        wake(ws);
}

size_t waiters_count(struct waiters *ws)
{
        if (!ws->running)
                return 0;
        pthread_mutex_lock(&ws->lock);
        size_t n = ws->n;
        pthread_mutex_unlock(&ws->lock);
        return n;
}

void waiters_stop(struct waiters *ws)
{
        if (!ws->running)
                return;
        pthread_mutex_lock(&ws->lock);
        ws->stopping = true;
        pthread_mutex_unlock(&ws->lock);
        wake(ws);
        pthread_join(ws->thread, NULL);
        ws->running = false;
        /* The thread is gone: what is left is answered here. */
        for (;;) {
                pthread_mutex_lock(&ws->lock);
                struct waiter *w = ws->head;
                if (w)
                        unlink_waiter(ws, w);
                pthread_mutex_unlock(&ws->lock);
                if (!w)
                        break;
                w->check(w, true);
                w->done(w, false);
        }
}

void waiters_destroy(struct waiters *ws)
{
        if (!ws->inited)
                return;
        close(ws->efd);
        ws->efd = -1;
        pthread_mutex_destroy(&ws->lock);
        ws->inited = false;
}
