/* pools_lock: the pool core's mutexes, which know who holds them.
 *
 * The lock rules of pools_internal.h are code, not only prose: a function
 * whose comment says a lock is held calls pools_assert_held() on entry, in
 * the spirit of the kernel's lockdep_assert_held().  With HPW_LOCK_ASSERTS
 * (Debug and RelWithDebInfo builds, server/CMakeLists.txt) each mutex
 * records the thread that holds it, one relaxed store per lock and unlock,
 * and an assertion that fails logs the lock and the function and aborts: a
 * caller without the lock would race on the registry.  Without it the
 * struct is the bare mutex and the assertions compile to nothing.
 *
 * Condition waits go through pools_cond_wait/pools_cond_timedwait, which
 * give the ownership up for the wait and take it back after.
 *
 * POOLS_LOCKED(m) takes M until the end of the enclosing block, on every
 * way out of it (gnu11 cleanup attribute, as systemd's _cleanup_ and
 * libvirt's VIR_LOCK_GUARD): for functions that return early under a lock,
 * so no return path has an unlock to forget.  It goes through pools_lock
 * and pools_unlock, so the owner record and its assertions hold as for a
 * lock taken by hand. */
#pragma once

#ifndef HPW_IN_POOLS
#error "pools_lock.h is private to server/src/pools/"
#endif
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#ifdef HPW_LOCK_ASSERTS
#include <stdatomic.h>
#endif

struct pools_mutex {
        pthread_mutex_t mutex;
#ifdef HPW_LOCK_ASSERTS
        _Atomic uintptr_t owner;      /* pools_lock_self() of the holder, 0 = none */
#endif
};

#ifdef HPW_LOCK_ASSERTS
/* A value unique to the calling thread while it lives: the address of a
 * thread-local byte (no syscall, unlike gettid). */
uintptr_t pools_lock_self(void);
/* Abort with WHAT and FUNC named unless the calling thread holds M. */
void pools_assert_held_at(const struct pools_mutex *m, const char *what, const char *func);
#define pools_assert_held(m) pools_assert_held_at((m), #m, __func__)
static inline void pools_owner_set(struct pools_mutex *m, uintptr_t v)
{
        atomic_store_explicit(&m->owner, v, memory_order_relaxed);
}
#else
#define pools_assert_held(m) ((void)(m))
static inline void pools_owner_set(struct pools_mutex *m, uintptr_t v)
{
        (void)m;
        (void)v;
}
static inline uintptr_t pools_lock_self(void) { return 0; }
#endif

static inline void pools_mutex_init(struct pools_mutex *m)
{
        pthread_mutex_init(&m->mutex, NULL);
        pools_owner_set(m, 0);
}

static inline void pools_mutex_destroy(struct pools_mutex *m) { pthread_mutex_destroy(&m->mutex); }

static inline void pools_lock(struct pools_mutex *m)
{
        pthread_mutex_lock(&m->mutex);
        pools_owner_set(m, pools_lock_self());
}

static inline void pools_unlock(struct pools_mutex *m)
{
        pools_assert_held(m);
        pools_owner_set(m, 0);
        pthread_mutex_unlock(&m->mutex);
}

static inline void pools_unlockp(struct pools_mutex **m)
{
        if (*m)
                pools_unlock(*m);
}

static inline struct pools_mutex *pools_lock_guard(struct pools_mutex *m)
{
        pools_lock(m);
        return m;
}

#define POOLS_GUARD_NAME_(n) pools_guard_##n
#define POOLS_GUARD_NAME(n) POOLS_GUARD_NAME_(n)
#define POOLS_LOCKED(m)                                                                              \
        struct pools_mutex *POOLS_GUARD_NAME(__COUNTER__) __attribute__((cleanup(pools_unlockp))) = \
                pools_lock_guard(m)

static inline void pools_cond_wait(pthread_cond_t *c, struct pools_mutex *m)
{
        pools_assert_held(m);
        pools_owner_set(m, 0);
        pthread_cond_wait(c, &m->mutex);
        pools_owner_set(m, pools_lock_self());
}

static inline int pools_cond_timedwait(pthread_cond_t *c, struct pools_mutex *m, const struct timespec *ts)
{
        int r;

        pools_assert_held(m);
        pools_owner_set(m, 0);
        r = pthread_cond_timedwait(c, &m->mutex, ts);
        pools_owner_set(m, pools_lock_self());
        return r;
}
