/* pools_lock: the pool core's mutexes, which know who holds them.
 *
 * The lock rules of pools_internal.h are code, not only prose: a function
 * whose comment says a lock is held calls pools_assert_held() on entry, in
 * the spirit of the kernel's lockdep_assert_held().  The mechanism is
 * base/lock.h's (shared with the engine): with HPW_LOCK_ASSERTS (Debug and
 * RelWithDebInfo builds, server/CMakeLists.txt) each mutex records the
 * thread that holds it, and an assertion that fails logs the lock and the
 * function and aborts: a caller without the lock would race on the
 * registry.  Without it the struct is the bare mutex and the assertions
 * compile to nothing.  This header gives the pool core its own names for
 * it, so its code reads as it did.
 *
 * Condition waits go through pools_cond_wait/pools_cond_timedwait, which
 * give the ownership up for the wait and take it back after.
 *
 * POOLS_LOCKED(m) takes M until the end of the enclosing block, on every
 * way out of it (gnu11 cleanup attribute, as systemd's _cleanup_ and
 * libvirt's VIR_LOCK_GUARD), so no return path has an unlock to forget.
 * It goes through pools_lock and pools_unlock, so the owner record and its
 * assertions hold as for a lock taken by hand, and a condition wait under
 * it gives M up and takes it back as above.  The one lock style of the
 * pool core: a function, or a block (a loop's turn, an if's body), that
 * holds a lock to its end takes it with POOLS_LOCKED; a lock/unlock pair
 * by hand is left only where the lock is dropped before the end (for a
 * save, a syscall, a call that takes it again, a log line), and says so
 * with a "By hand:" comment on the pools_lock line. */
#pragma once

#ifndef HPW_IN_POOLS
#error "pools_lock.h is private to server/src/pools/"
#endif
#include "lock.h"

#define pools_mutex hpw_mutex
#define pools_assert_held(m) hpw_assert_held_in("pools", m)
#define pools_mutex_init hpw_mutex_init
#define pools_mutex_destroy hpw_mutex_destroy
#define pools_lock hpw_lock
#define pools_unlock hpw_unlock
#define pools_cond_wait hpw_cond_wait
#define pools_cond_timedwait hpw_cond_timedwait

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
        struct pools_mutex *POOLS_GUARD_NAME(__COUNTER__) __attribute__((cleanup(pools_unlockp), unused)) = \
                pools_lock_guard(m)
