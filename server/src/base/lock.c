/* lock: the out-of-line half of lock.h's holder tracking.  Always built with
 * the tracking's view of struct hpw_mutex: only modules built with
 * HPW_LOCK_ASSERTS call these, and they see the same layout. */
#ifndef HPW_LOCK_ASSERTS
#define HPW_LOCK_ASSERTS
#endif
#include <stdlib.h>

#include "lock.h"
#include "log.h"

uintptr_t hpw_lock_self(void)
{
        static _Thread_local char self;

        return (uintptr_t)&self;
}

void hpw_assert_lock_at(const struct hpw_mutex *m, int held, const char *module, const char *what,
                        const char *func)
{
        if ((atomic_load_explicit(&m->owner, memory_order_relaxed) == hpw_lock_self()) == (held != 0))
                return;
        /* Going on would race on what the lock guards, or deadlock on it. */
        if (held)
                log_err("%s: %s() needs %s held, and this thread does not hold it", module, func, what);
        else
                log_err("%s: %s() must not be called with %s held, and this thread holds it", module, func, what);
        abort();
}
