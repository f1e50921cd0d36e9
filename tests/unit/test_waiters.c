/* waiters.c alone: parked waits and the thread that answers them, without
 * libmicrohttpd or a socket (waiters have no client fd here).
 *
 * Rules, each checked with both values printed:
 *   notified      a notified waiter is checked and done soon after
 *   expired       a waiter nobody notifies is done at its deadline, expired
 *   wakeup_lost   a notification whose wake-up write fails (the eventfd
 *                 swapped for a descriptor no write succeeds on) is still
 *                 seen within the thread's poll bound, not at the deadline
 *                 an hour away
 *
 * The thread's wake-up is an eventfd write that the fault sweep
 * (tests/real/fault_sweep.py) fails on purpose; wakeup_lost pins that
 * finding without strace. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "util.h"
#include "waiters.h"

/* Far above the thread's poll bound (waiters.c WAKE_BOUND_MS, 1 s) and any
 * scheduling delay; a lost wake-up waits for the deadline, an hour. */
#define ANSWER_NS (10 * UINT64_C(1000000000))
#define HOUR_NS (3600 * UINT64_C(1000000000))

struct probe {
        struct waiter w;
        atomic_bool ready;      /* what check() looks at: the "pool" turned ready */
        atomic_bool done;
        atomic_uint done_calls; /* done() must come exactly once */
        atomic_bool expired;    /* check() was called with expired */
};

static bool probe_check(struct waiter *w, bool expired)
{
        struct probe *p = (struct probe *)w;
        if (expired)
                atomic_store(&p->expired, true);
        return expired || atomic_load(&p->ready);
}

static void probe_done(struct waiter *w, bool gone)
{
        (void)gone;
        atomic_fetch_add(&((struct probe *)w)->done_calls, 1);
        atomic_store(&((struct probe *)w)->done, true);
}

static void probe_init(struct probe *p, const char *topic, uint64_t deadline_ns)
{
        memset(p, 0, sizeof(*p));
        snprintf(p->w.topic, sizeof(p->w.topic), "%s", topic);
        snprintf(p->w.caller, sizeof(p->w.caller), "test");
        p->w.fd = -1;
        p->w.deadline_ns = deadline_ns;
        p->w.check = probe_check;
        p->w.done = probe_done;
}

/* Nanoseconds until P is done, at most LIMIT_NS (then LIMIT_NS). */
static uint64_t wait_done(struct probe *p, uint64_t limit_ns)
{
        uint64_t t0 = now_mono_ns();
        while (!atomic_load(&p->done) && now_mono_ns() - t0 < limit_ns)
                usleep(1000);
        return now_mono_ns() - t0;
}

TEST(notified)
{
        struct waiters ws = {0};
        struct probe p;
        CHECK_INT(waiters_start(&ws, 0, 0), ==, 0);
        probe_init(&p, "pool-a", now_mono_ns() + HOUR_NS);
        CHECK_INT(waiters_add(&ws, &p.w), ==, 0);
        atomic_store(&p.ready, true);
        waiters_notify(&ws, "pool-a");
        CHECK_U64(wait_done(&p, ANSWER_NS), <, ANSWER_NS);
        CHECK(!atomic_load(&p.expired));
        waiters_stop(&ws);
        waiters_destroy(&ws);
}

TEST(expired)
{
        struct waiters ws = {0};
        struct probe p;
        CHECK_INT(waiters_start(&ws, 0, 0), ==, 0);
        probe_init(&p, "pool-a", now_mono_ns() + 50 * UINT64_C(1000000));
        CHECK_INT(waiters_add(&ws, &p.w), ==, 0);
        CHECK_U64(wait_done(&p, ANSWER_NS), <, ANSWER_NS);
        CHECK(atomic_load(&p.expired));
        waiters_stop(&ws);
        waiters_destroy(&ws);
}

TEST(wakeup_lost)
{
        struct waiters ws = {0};
        struct probe p;
        int pipefd[2];
        CHECK_INT(waiters_start(&ws, 0, 0), ==, 0);
        probe_init(&p, "pool-a", now_mono_ns() + HOUR_NS);
        CHECK_INT(waiters_add(&ws, &p.w), ==, 0);
        /* Let the thread take the new waiter in and go back to sleep. */
        usleep(100 * 1000);
        CHECK(!atomic_load(&p.done));
        /* From now on every wake-up write fails (EBADF on a pipe's read end)
         * and the thread's poll on it never fires. */
        CHECK_INT(pipe2(pipefd, O_CLOEXEC), ==, 0);
        int saved = dup(ws.efd);
        CHECK_INT(saved, >=, 0);
        CHECK_INT(dup2(pipefd[0], ws.efd), ==, ws.efd);
        atomic_store(&p.ready, true);
        waiters_notify(&ws, "pool-a");
        CHECK_U64(wait_done(&p, ANSWER_NS), <, ANSWER_NS);
        CHECK(!atomic_load(&p.expired));
        CHECK_INT(dup2(saved, ws.efd), ==, ws.efd);
        close(saved);
        close(pipefd[0]);
        close(pipefd[1]);
        waiters_stop(&ws);
        waiters_destroy(&ws);
}

/* The HTTP layer's listener threads park requests until http_stop stops
 * them, which is after waiters_stop: a stand-in for one adds waiters while
 * the waits are stopped and after.  Each add answers 0 (its done() called
 * exactly once, by the thread or by waiters_stop) or -ESHUTDOWN, and no
 * add touches a lock or eventfd that is gone (TSan: the lock was destroyed
 * and the eventfd closed in waiters_stop while such adds could still come).
 * The stand-in yields between adds, so they go on while the stop runs; a
 * refused probe is used again (it was never parked), and the last one is
 * kept for the adds after the stop, however fast the first ones went. */
#define STOPPING_PROBES 4096
/* Adds the stand-in makes once it saw the stop, all refused. */
#define ADDS_AFTER_STOP 64

struct adder {
        struct waiters *ws;
        struct probe *probes;
        atomic_uint added;   /* answered 0 */
        atomic_bool stopped; /* waiters_stop has returned */
        unsigned refused_before, refused_after, other;
};

static void *add_until_stopped(void *arg)
{
        struct adder *a = arg;
        unsigned i = 0, after = 0;

        while (after < ADDS_AFTER_STOP) {
                bool stopped = atomic_load(&a->stopped);
                struct probe *p = &a->probes[i];

                if (i == STOPPING_PROBES - 1 && !stopped) {
                        sched_yield();
                        continue;
                }
                probe_init(p, "pool-a", now_mono_ns() + HOUR_NS);
                int r = waiters_add(a->ws, &p->w);
                if (r == 0 && !stopped) {
                        atomic_fetch_add(&a->added, 1);
                        i++;
                } else if (r == -ESHUTDOWN && stopped) {
                        a->refused_after++;
                } else if (r == -ESHUTDOWN) {
                        a->refused_before++;
                } else {
                        a->other++; /* a failure, or parked after the stop */
                        break;
                }
                if (stopped)
                        after++;
                sched_yield();
        }
        return NULL;
}

TEST(add_while_stopping)
{
        struct waiters ws = { 0 };
        struct adder a = { .ws = &ws };
        pthread_t t;

        a.probes = calloc(STOPPING_PROBES, sizeof(*a.probes));
        CHECK(a.probes);
        CHECK_INT(waiters_start(&ws, STOPPING_PROBES, STOPPING_PROBES), ==, 0);
        CHECK_INT(pthread_create(&t, NULL, add_until_stopped, &a), ==, 0);
        while (atomic_load(&a.added) < 16)
                usleep(100);
        waiters_stop(&ws);
        atomic_store(&a.stopped, true);
        CHECK_INT(pthread_join(t, NULL), ==, 0);
        waiters_destroy(&ws);
        fprintf(stderr, "add_while_stopping: %u parked, %u refused while stopping, %u after\n", atomic_load(&a.added),
                a.refused_before, a.refused_after);

        CHECK_INT(a.other, ==, 0);
        CHECK_INT(a.refused_after, ==, ADDS_AFTER_STOP);
        unsigned added = atomic_load(&a.added), done = 0;
        for (unsigned i = 0; i < STOPPING_PROBES; i++) {
                CHECK_INT(atomic_load(&a.probes[i].done_calls), <=, 1);
                done += atomic_load(&a.probes[i].done_calls);
        }
        CHECK_INT(done, ==, added);
        free(a.probes);
}

TEST_MAIN()
