/* Engine ops for tests that run the real engine (engine*.c) without the
 * machine's NUMA layout or without touching memory.  One copy, shared by the
 * pools unit tests and the HTTP fuzz target.
 *
 * - fake_engine_mbind / fake_engine_move_pages_node0: placement fakes.  The
 *   fixtures' nodes other than 0 do not exist on the machine running the
 *   tests, so mbind does nothing and move_pages reports every page on node 0.
 * - fake_engine_stub_ops(): populate does nothing either, so a job is done as
 *   soon as its chunks are handed out (the fuzz target: a hang is a bug).
 * - fake_engine_gated_ops(): populate is the real madvise (so st_blocks tells
 *   the truth) behind a gate the test closes and opens, with an errno the
 *   test can inject; the test can wait until a worker sits at the gate.
 *
 * No check.h here (the fuzz target has none): the gate's waits return an
 * errno and the caller checks it. */
#pragma once
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

static inline long fake_engine_mbind(void *addr, unsigned long len, int mode, const unsigned long *nodemask,
                                     unsigned long maxnode, unsigned flags)
{
        return 0;
}

static inline long fake_engine_move_pages_node0(int pid, unsigned long count, void **pages, const int *nodes,
                                                int *status, int flags)
{
        for (unsigned long i = 0; i < count; i++)
                status[i] = 0;
        return 0;
}

static inline int fake_engine_madvise_nothing(void *addr, size_t len, int advice) { return 0; }

static inline const struct engine_ops *fake_engine_stub_ops(void)
{
        static const struct engine_ops ops = {
                .madvise = fake_engine_madvise_nothing,
                .mbind = fake_engine_mbind,
                .move_pages = fake_engine_move_pages_node0,
        };
        return &ops;
}

/* ---- the gate ---- */

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool closed;
        int inside;     /* workers in madvise (at the gate or past it) */
        int fail_errno; /* next madvise calls fail with this */
        int passes;     /* calls let through the closed gate (fake_gate_step) */
        unsigned long entered; /* calls that reached the gate, ever */
} fake_gate_ = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static inline int fake_gate_madvise(void *addr, size_t len, int advice)
{
        int err;

        pthread_mutex_lock(&fake_gate_.lock);
        fake_gate_.inside++;
        fake_gate_.entered++;
        pthread_cond_broadcast(&fake_gate_.cond);
        while (fake_gate_.closed && fake_gate_.passes == 0)
                pthread_cond_wait(&fake_gate_.cond, &fake_gate_.lock);
        if (fake_gate_.closed)
                fake_gate_.passes--;
        fake_gate_.inside--;
        err = fake_gate_.fail_errno;
        pthread_mutex_unlock(&fake_gate_.lock);
        if (err) {
                errno = err;
                return -1;
        }
        return madvise(addr, len, advice);
}

static inline const struct engine_ops *fake_engine_gated_ops(void)
{
        static const struct engine_ops ops = {
                .madvise = fake_gate_madvise,
                .mbind = fake_engine_mbind,
                .move_pages = fake_engine_move_pages_node0,
        };
        return &ops;
}

static inline void fake_gate_set(bool closed)
{
        pthread_mutex_lock(&fake_gate_.lock);
        fake_gate_.closed = closed;
        pthread_cond_broadcast(&fake_gate_.cond);
        pthread_mutex_unlock(&fake_gate_.lock);
}

/* Make the next madvise calls fail with ERR (0: succeed again). */
static inline void fake_gate_fail_with(int err)
{
        pthread_mutex_lock(&fake_gate_.lock);
        fake_gate_.fail_errno = err;
        pthread_cond_broadcast(&fake_gate_.cond);
        pthread_mutex_unlock(&fake_gate_.lock);
}

/* Wait until a worker is inside madvise (at a closed gate): 0, or an errno
 * such as ETIMEDOUT after SECONDS. */
static inline int fake_gate_wait_inside(int seconds)
{
        struct timespec until;
        int r = 0;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += seconds;
        pthread_mutex_lock(&fake_gate_.lock);
        while (fake_gate_.inside < 1 && r == 0)
                r = pthread_cond_timedwait(&fake_gate_.cond, &fake_gate_.lock, &until);
        pthread_mutex_unlock(&fake_gate_.lock);
        return r;
}

/* Let one call through the closed gate and wait until the next call
 * reaches it: with one worker on the node, the chunk that passed is done and
 * counted in its job's bytes_done (the engine counts a chunk before it takes
 * the next).  0, or an errno such as ETIMEDOUT after SECONDS. */
static inline int fake_gate_step(int seconds)
{
        struct timespec until;
        unsigned long before;
        int r = 0;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += seconds;
        pthread_mutex_lock(&fake_gate_.lock);
        before = fake_gate_.entered;
        fake_gate_.passes++;
        pthread_cond_broadcast(&fake_gate_.cond);
        while ((fake_gate_.passes > 0 || fake_gate_.entered == before) && r == 0)
                r = pthread_cond_timedwait(&fake_gate_.cond, &fake_gate_.lock, &until);
        pthread_mutex_unlock(&fake_gate_.lock);
        return r;
}

static inline void *fake_gate_open_thread_(void *arg)
{
        usleep(100 * 1000);
        fake_gate_set(false);
        return NULL;
}

/* Open the gate about 100 ms from now, from another thread (so a cancel is
 * requested while the chunk is in flight); join *RET.  0 or an errno. */
static inline int fake_gate_open_soon(pthread_t *ret)
{
        return pthread_create(ret, NULL, fake_gate_open_thread_, NULL);
}
