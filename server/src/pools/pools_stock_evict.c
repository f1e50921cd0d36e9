/* pools_stock_evict: the stock gives way.
 *
 * Stock never causes a refusal that would not happen without it: when a
 * create or a reservation needs pages that stock files hold, files of that
 * node and page size are removed until enough pages are back, least ready
 * first (files on their way back, refills, ready files), and each removal
 * is logged.  Admission stays exact: a dirty file (a released pool waiting
 * to be recycled) that some process still maps gives no page back when
 * removed, so it is not counted as room and not removed for it.  Runs under
 * admit.lock; the locks are described in pools_internal.h. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "owner.h"
#include "pools_internal.h"
#include "util.h"

/* Dirty files of (NODE, PAGE_SIZE) some process still maps: removing one
 * gives no page back (the mapping keeps them), so it is no room.  One maps
 * scan, only when there are dirty files; *RET is malloc'd (NULL: none, or
 * the scan failed and every dirty file counts as mapped). */
static size_t mapped_dirty(struct pools *p, int node, uint64_t page_size, struct owner_file **ret)
{
        struct owner_file *f = NULL;
        size_t n = 0;
        unsigned unreadable;

        *ret = NULL;
        /* By hand: reg.lock is dropped before the maps scan. */
        pools_lock(&p->reg.lock);
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                const struct pool *o = p->reg.pools[i];
                if (o->rec.state != POOL_DIRTY || (node >= 0 && o->rec.node != node) || o->rec.page_size != page_size)
                        continue;
                if (!f)
                        f = calloc(p->reg.n_pools, sizeof(*f));
                if (!f)
                        break;
                f[n].dev = o->file_dev;
                f[n].ino = o->file_ino;
                n++;
        }
        pools_unlock(&p->reg.lock);
        if (n && owner_scan_mapped(p->proc_root, f, n, &unreadable) < 0)
                for (size_t i = 0; i < n; i++)
                        f[i].mapped = true;
        *ret = f;
        return n;
}

static bool gives_nothing(const struct pool *o, const struct owner_file *f, size_t n, bool no_scan)
{
        if (o->rec.state != POOL_DIRTY)
                return false;
        if (no_scan)
                return true;    /* appeared after the scan: cannot tell */
        for (size_t i = 0; i < n; i++)
                if (f[i].dev == o->file_dev && f[i].ino == o->file_ino)
                        return f[i].mapped;
        return true;
}

uint64_t pools_stock_make_room(struct pools *p, int node, uint64_t page_size, uint64_t pages)
{
        pools_assert_held(&p->admit.lock);
        /* Least ready first: files on their way back, refills, ready files. */
        static const enum pool_state order[] = { POOL_DIRTY, POOL_RECYCLING, POOL_STOCK_WARMING, POOL_STOCK };
        _cleanup_free_ struct owner_file *dirty = NULL;
        size_t n_dirty = mapped_dirty(p, node, page_size, &dirty);
        bool no_scan = n_dirty > 0 && !dirty;
        uint64_t got = 0, held = 0;

        /* Only when the stock makes the difference: removing files for a
         * request that fails anyway would only lose them. */
        /* By hand: reg.lock is dropped before the victims are removed. */
        pools_lock(&p->reg.lock);
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                const struct pool *o = p->reg.pools[i];
                if (!pool_state_is_stock(o->rec.state) || (node >= 0 && o->rec.node != node) || o->rec.page_size != page_size)
                        continue;
                if (o->hold == POOL_BUSY) {
                        /* The upkeep thread finishing its refill or saving
                         * a recycle step: wait, or a create could be
                         * refused for a moment the stock would have
                         * covered.  Nobody holding a stock row waits for
                         * admit.lock (which we hold), and refills are only
                         * created under it. */
                        pools_cond_wait(&p->reg.changed, &p->reg.lock);
                        held = 0;
                        i = (size_t)-1;
                        continue;
                }
                if (o->hold == POOL_FREE && !gives_nothing(o, dirty, n_dirty, no_scan))
                        held += o->rec.size_bytes / page_size;
        }
        pools_unlock(&p->reg.lock);
        if (held < pages)
                return 0;

        while (got < pages) {
                struct pool *victim = NULL;

                /* By hand: reg.lock is dropped before the victim is removed. */
                pools_lock(&p->reg.lock);
                for (size_t pass = 0; pass < ARRAY_SIZE(order) && !victim; pass++)
                        for (size_t i = 0; i < p->reg.n_pools && !victim; i++) {
                                struct pool *o = p->reg.pools[i];
                                if (o->hold == POOL_FREE && (node < 0 || o->rec.node == node) && o->rec.page_size == page_size &&
                                    o->rec.state == order[pass] && !gives_nothing(o, dirty, n_dirty, no_scan))
                                        victim = o;
                        }
                if (victim)
                        pools_set_hold(victim, POOL_BUSY);
                pools_unlock(&p->reg.lock);
                if (!victim)
                        break;
                uint64_t gain = victim->rec.size_bytes / page_size;
                log_notice("pools: removing stock file %s (%s, %" PRIu64 " bytes on node %d) to make room",
                           victim->rec.name, pool_state_name(victim->rec.state), victim->rec.size_bytes,
                           victim->rec.node);
                /* A recycling file's zero job is cancelled first. */
                if (pools_remove(p, victim, RELEASE_NONE) < 0) {
                        pools_release(p, victim);
                        break;
                }
                POOLS_LOCKED(&p->reg.lock);
                p->reg.stats.stock_given_way++;
                got += gain;
        }
        return got;
}
