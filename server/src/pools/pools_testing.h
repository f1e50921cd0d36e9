/* pools_testing: entries of the pool core that only the tests call.
 *
 * The daemon answers a list by pages (pools_list_page), a wait on the HTTP
 * layer's waits thread (pools_get from a parked check), a DELETE with its
 * recycle choice (pools_delete_recycle) and a claim with its owner
 * (pools_claim_pid).  The tests want the plain forms, so they are kept
 * here, out of pools.h, which says only what the daemon calls.  Same
 * object library as the rest of the core: the tests run the code that
 * ships. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "pools.h"

/* Every pool (not the stock files), as views.  Caller frees *ret (plain
 * malloc'd array). */
int pools_list(struct pools *p, struct pool_view **ret, size_t *ret_n);
/* Block until the pool is no longer warming or DEADLINE (CLOCK_MONOTONIC ns)
 * passes; fills *ret either way.  -ENOENT if it does not exist (or was deleted
 * while waiting). */
int pools_wait(struct pools *p, const char *name, uint64_t deadline_ns, struct pool_view *ret);
/* pools_delete_recycle with RECYCLE true. */
int pools_delete(struct pools *p, const char *name, struct problem *err);
/* pools_claim_pid with no owner (PID 0).  0, or -errno with ERR set:
 * -ENOENT pool-not-found; -EBUSY pool-not-ready (it is not ready). */
int pools_claim(struct pools *p, const char *name, struct pool_view *ret, struct problem *err);
