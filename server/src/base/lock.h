/* lock: mutexes that know who holds them, for the lock rules a module's
 * internal header writes down (pools_internal.h, engine_types.h).
 *
 * A function whose comment says a lock is held calls hpw_assert_held() on
 * entry, one that must not be called with it held hpw_assert_unheld(), in
 * the spirit of the kernel's lockdep_assert_held().  With HPW_LOCK_ASSERTS
 * (Debug and RelWithDebInfo builds of the modules that opt in,
 * server/CMakeLists.txt) each mutex records the thread that holds it, one
 * relaxed store per lock and unlock, and an assertion that fails logs the
 * module, the lock and the function and aborts: going on would race on what
 * the lock guards.  Without it the struct is the bare mutex and the
 * assertions compile to nothing.  A module opts in as a whole (its object
 * library), since the struct's layout depends on it.
 *
 * Condition waits go through hpw_cond_wait/hpw_cond_timedwait, which give
 * the ownership up for the wait and take it back after. */
#pragma once
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#ifdef HPW_LOCK_ASSERTS
#include <stdatomic.h>
#endif

struct hpw_mutex {
        pthread_mutex_t mutex;
#ifdef HPW_LOCK_ASSERTS
        _Atomic uintptr_t owner;      /* hpw_lock_self() of the holder, 0 = none */
#endif
};

#ifdef HPW_LOCK_ASSERTS
/* A value unique to the calling thread while it lives: the address of a
 * thread-local byte (no syscall, unlike gettid). */
uintptr_t hpw_lock_self(void);
/* Abort, naming MODULE, WHAT and FUNC, unless the calling thread holds M
 * (HELD) or does not hold it (!HELD). */
void hpw_assert_lock_at(const struct hpw_mutex *m, int held, const char *module, const char *what,
                        const char *func);
#define hpw_assert_held_in(module, m) hpw_assert_lock_at((m), 1, (module), #m, __func__)
#define hpw_assert_unheld_in(module, m) hpw_assert_lock_at((m), 0, (module), #m, __func__)
static inline void hpw_owner_set(struct hpw_mutex *m, uintptr_t v)
{
        atomic_store_explicit(&m->owner, v, memory_order_relaxed);
}
#else
#define hpw_assert_held_in(module, m) ((void)(m))
#define hpw_assert_unheld_in(module, m) ((void)(m))
static inline void hpw_owner_set(struct hpw_mutex *m, uintptr_t v)
{
        (void)m;
        (void)v;
}
static inline uintptr_t hpw_lock_self(void) { return 0; }
#endif

static inline void hpw_mutex_init(struct hpw_mutex *m)
{
        pthread_mutex_init(&m->mutex, NULL);
        hpw_owner_set(m, 0);
}

static inline void hpw_mutex_destroy(struct hpw_mutex *m) { pthread_mutex_destroy(&m->mutex); }

static inline void hpw_lock(struct hpw_mutex *m)
{
        pthread_mutex_lock(&m->mutex);
        hpw_owner_set(m, hpw_lock_self());
}

static inline void hpw_unlock(struct hpw_mutex *m)
{
        hpw_assert_held_in("lock", m);
        hpw_owner_set(m, 0);
        pthread_mutex_unlock(&m->mutex);
}

static inline void hpw_cond_wait(pthread_cond_t *c, struct hpw_mutex *m)
{
        hpw_assert_held_in("lock", m);
        hpw_owner_set(m, 0);
        pthread_cond_wait(c, &m->mutex);
        hpw_owner_set(m, hpw_lock_self());
}

static inline int hpw_cond_timedwait(pthread_cond_t *c, struct hpw_mutex *m, const struct timespec *ts)
{
        int r;

        hpw_assert_held_in("lock", m);
        hpw_owner_set(m, 0);
        r = pthread_cond_timedwait(c, &m->mutex, ts);
        hpw_owner_set(m, hpw_lock_self());
        return r;
}
