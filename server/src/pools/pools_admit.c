/* pools_admit: admission and reservations.
 *
 * hugetlb reservations are global, not per node, so the kernel cannot say
 * whether a node-bound warm will find its pages: admission counts them
 * itself, as the node's free pages minus what warming jobs there have yet
 * to fault in (one consistent reading of both: pools_pending.c), under
 * admit.lock so two creates never count the same pages.
 * Reservations (PUT /v1/nodes/{id}/hugepages/{size} and "reserve": true)
 * go through the same lock, so a growth and a warm never interleave, and
 * are recorded in the journal to be re-applied at start (pools_recover.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "pools_internal.h"
#include "units.h"
#include "util.h"

/* ---- reservations ---- */

void pools_count_reservation(struct pools *p, int r, const struct reserve_result *res)
{
        POOLS_LOCKED(&p->reg.lock);
        if (r == 0 && res->complete)
                p->reg.stats.reservations_ok++;
        else if (r == 0)
                p->reg.stats.reservations_partial++;
        else if (r == -EAGAIN)
                p->reg.stats.reservations_shortfall++;
        else if (r == -ENOMEM)
                p->reg.stats.reservations_refused++;
        else
                p->reg.stats.reservations_error++;
}

/* The recorded count of (node, page size) into *RET; false if none (lock held). */
static bool find_reservation(struct pools *p, int node, uint64_t page_size, uint64_t *ret)
{
        pools_assert_held(&p->reg.lock);
        for (size_t i = 0; i < p->admit.n_resv; i++)
                if (p->admit.resv[i].node == node && p->admit.resv[i].page_size == page_size) {
                        *ret = p->admit.resv[i].count;
                        return true;
                }
        return false;
}

/* Drop the record of (node, page size), if any (lock held). */
static void forget_reservation(struct pools *p, int node, uint64_t page_size)
{
        pools_assert_held(&p->reg.lock);
        for (size_t i = 0; i < p->admit.n_resv; i++)
                if (p->admit.resv[i].node == node && p->admit.resv[i].page_size == page_size) {
                        p->admit.resv[i] = p->admit.resv[--p->admit.n_resv];
                        return;
                }
}

/* Record that (node, page size) should have COUNT pages (lock held). */
static int record_reservation(struct pools *p, int node, uint64_t page_size, uint64_t count)
{
        pools_assert_held(&p->reg.lock);
        for (size_t i = 0; i < p->admit.n_resv; i++)
                if (p->admit.resv[i].node == node && p->admit.resv[i].page_size == page_size) {
                        p->admit.resv[i].count = count;
                        return 0;
                }
        struct reservation_record *n = realloc(p->admit.resv, (p->admit.n_resv + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        p->admit.resv = n;
        p->admit.resv[p->admit.n_resv++] = (struct reservation_record){ node, page_size, count };
        return 0;
}

/* reserve_apply + record + save; admit.lock held.  ASKED is the count the
 * caller asked for when REQ->count is a clamped one (the result then says
 * what was asked and that it is incomplete); it is what is recorded. */
int pools_reserve_locked(struct pools *p, const struct reserve_req *req, uint64_t asked,
                         struct reserve_result *ret)
{
        pools_assert_held(&p->admit.lock);
        struct reserve_result res;
        int r, q;

        r = reserve_apply(p->cfg.fs, req, &res);
        if (r == 0 && asked != req->count) {
                res.requested = asked;
                res.complete = false;
        }
        pools_count_reservation(p, r, &res);
        if (r < 0) {
                if (r == -EAGAIN || r == -ENOMEM)
                        *ret = res;
                return r;
        }
        /* By hand: reg.lock is dropped before the save (save.lock is outside it). */
        pools_lock(&p->reg.lock);
        struct reservation_record before = { req->node, req->page_size, 0 };
        bool had = find_reservation(p, req->node, req->page_size, &before.count);
        /* What was asked, not what the kernel holds now: a shrink held up
         * by pages in use (or a partial growth) is still the count wanted,
         * and recording the kernel's total would grow the pool back to it
         * when the reservation is re-applied. */
        q = record_reservation(p, req->node, req->page_size, asked);
        pools_unlock(&p->reg.lock);
        if (q == 0)
                q = pools_save(p);
        if (q < 0) {
                /* Not recorded: a restart would not know of it.  Undo it,
                 * in memory and (as far as the kernel lets us) in the
                 * kernel, and say it failed. */
                struct reserve_req back = *req;
                struct reserve_result bres;
                /* By hand: reg.lock is dropped before the sysfs write. */
                pools_lock(&p->reg.lock);
                if (had)
                        (void)record_reservation(p, before.node, before.page_size, before.count);
                else
                        forget_reservation(p, req->node, req->page_size);
                pools_unlock(&p->reg.lock);
                back.count = res.previous;
                back.allow_partial = true;
                int b = reserve_apply(p->cfg.fs, &back, &bres);
                if (b == 0)
                        res.total = bres.total;
                log_err("pools: cannot save reservation node %d page size %" PRIu64 " (%s); put the "
                        "count back from %" PRIu64 " to %" PRIu64 "%s", req->node, req->page_size,
                        strerror(-q), res.achieved, res.total,
                        b == 0 && bres.complete ? "" : " (not all of it: pages in use)");
                *ret = res;
                return -ECANCELED;
        }
        *ret = res;
        return 0;
}

void pools_reserve_counts(struct problem *err, int r, const struct reserve_result *res, uint64_t requested)
{
        if (!err)
                return;
        if (r == -ENOMEM) {
                err->has_floor = true;
                err->floor_bytes = res->floor_bytes;
                err->mem_free_bytes = res->mem_free_bytes;
                err->max_count = res->max_count;
        } else if (r == -EAGAIN) {
                err->has_counts = true;
                err->requested = requested;
                err->achieved = res->achieved;
        }
}

/* Why a reservation (REQ) was refused with R, into ERR (NULL: not
 * wanted); RES is what reserve_apply said.  Returns R. */
static int reserve_refused(const struct pools *p, const struct reserve_req *req, int r,
                           const struct reserve_result *res, struct problem *err)
{
        if (!err)
                return r;
        switch (r) {
        case -ENOMEM: {
                char fl[32], ps[32];

                format_size(res->floor_bytes, fl, sizeof(fl));
                format_size(req->page_size, ps, sizeof(ps));
                problem_raise(err, PROBLEM_INSUFFICIENT_MEMORY,
                              "growing node %d from %" PRIu64 " to %" PRIu64 " pages of %s would leave less "
                              "free memory than the floor of %s (%" PRIu64 " MiB free now); at most %" PRIu64
                              " pages fit; nothing was changed",
                              req->node, res->previous, req->count, ps, fl, res->mem_free_bytes / MIB,
                              res->max_count);
                pools_reserve_counts(err, r, res, req->count);
                break;
        }
        case -EAGAIN:
                problem_raise(err, PROBLEM_RESERVE_SHORTFALL,
                              "node %d: asked for %" PRIu64 " pages, the kernel gave %" PRIu64
                              "; restored the previous %" PRIu64 " (set allow_partial to keep them)",
                              req->node, req->count, res->achieved, res->previous);
                pools_reserve_counts(err, r, res, req->count);
                break;
        case -ECANCELED:
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED,
                              "node %d: the new count could not be saved to the journal in %s, so it was "
                              "undone: %" PRIu64 " pages now (were %" PRIu64 ")",
                              req->node, p->state_dir, res->total, res->previous);
                break;
        case -ENOENT:
                problem_raise(err, PROBLEM_UNKNOWN_PAGE_SIZE, "node %d has no pool of that page size", req->node);
                break;
        default:
                problem_raise(err, PROBLEM_SYSFS_ERROR, "node %d: %s", req->node, strerror(-r));
                break;
        }
        return r;
}

/* Shrinking frees only free pages, but pages that warming jobs on the node
 * have yet to fault still count as free there (hugetlb reservations are
 * global, so the kernel may free this node's pages and the job's node-bound
 * faults then fail with EFAULT).  So a shrink stops at the pages in use plus
 * those still needed, and says it is incomplete. */
int pools_reserve(struct pools *p, const struct reserve_req *req, struct reserve_result *ret,
                  struct problem *err)
{
        assert_return(p, -EINVAL);
        assert_return(req, -EINVAL);
        assert_return(ret, -EINVAL);
        struct reserve_req rq = *req;
        struct hp_counts hp;
        uint64_t needed, keep;
        int r;

        r = pools_check_node_page_size(p, req->node, req->page_size, err);
        if (r < 0) {
                pools_count_reservation(p, r, &(struct reserve_result){0});
                return r;
        }
        if (p->cfg.fixed_hugepages) {
                problem_raise(err, PROBLEM_HUGEPAGES_FIXED,
                              "node %d: %s: the daemon never changes a hugepage count, since a scheduler that "
                              "read the counts once (nova-compute) would not see it; nothing was changed",
                              req->node, POOLS_FIXED_WHY);
                return -EROFS;
        }

        /* By hand: admit.lock is dropped before the refusal is written and the upkeep thread kicked. */
        pools_lock(&p->admit.lock);
        /* A shrink below the pages in use: stock files of the node give
         * their pages back first (refills, then ready files), when that
         * lets the shrink complete; the stock never makes it fall short. */
        if (pools_node_counts(p, req->node, req->page_size, &hp, &needed) == 0 && req->count < hp.total) {
                uint64_t held = (hp.total > hp.free ? hp.total - hp.free : 0) + needed;
                if (req->count < held)
                        (void)pools_stock_make_room(p, req->node, req->page_size, held - req->count);
        }
        r = pools_node_counts(p, req->node, req->page_size, &hp, &needed);
        if (r < 0) {
                /* An unknown node or unreadable counters: nothing written. */
                pools_count_reservation(p, r, &(struct reserve_result){0});
                pools_unlock(&p->admit.lock);
                return reserve_refused(p, req, r, &(struct reserve_result){0}, err);
        }
        if (needed > 0 && req->count < hp.total) {
                keep = (hp.total > hp.free ? hp.total - hp.free : 0) + needed;
                if (keep > hp.total)
                        keep = hp.total;
                if (req->count < keep)
                        rq.count = keep;
        }
        r = pools_reserve_locked(p, &rq, req->count, ret);
        pools_unlock(&p->admit.lock);
        if (r < 0)
                return reserve_refused(p, req, r, ret, err);
        /* Stock files that gave way to a shrink that then kept pages (or
         * a growth) leave room a target may refill into now. */
        if (r == 0)
                pools_kick(p);
        return r;
}

/* ---- create ---- */

/* How many growths one admission may make: the first asks for what is
 * missing; a page counted twice at the next reading (one another warm was
 * zeroing) can leave it a page or so short, and each try after asks for
 * that rest.  A few suffice; the bound stops a node whose pages keep being
 * taken from being grown without end. */
#define GROW_TRIES 4

/* The node's count back to G->previous (never below its pages in use plus
 * what warming jobs still need, which count as free until faulted), and the
 * journal's record as it was.  admit.lock held. */
void pools_undo_growth(struct pools *p, const struct pools_growth *g)
{
        pools_assert_held(&p->admit.lock);
        struct reserve_req back = { .node = g->node, .page_size = g->page_size, .count = g->previous,
                                    .allow_partial = true };
        struct reserve_result res;
        struct hp_counts hp;
        uint64_t needed;
        int r;

        if (!g->grew)
                return;
        if (pools_node_counts(p, g->node, g->page_size, &hp, &needed) == 0) {
                uint64_t keep = (hp.total > hp.free ? hp.total - hp.free : 0) + needed;
                if (back.count < keep)
                        back.count = keep < hp.total ? keep : hp.total;
        }
        r = reserve_apply(p->cfg.fs, &back, &res);
        if (r == 0 && res.previous > res.total)
                pools_elastic_note(p, g->node, g->page_size, ELASTIC_RETURN, res.previous - res.total,
                                   "a growth rolled back: the pool it was made for was not created");
        /* By hand: reg.lock is dropped before the save (save.lock is outside it). */
        pools_lock(&p->reg.lock);
        if (r == 0 && res.total != g->previous)
                /* Held up above the count before (pages taken meanwhile):
                 * the journal says what the node was left with, so a
                 * restart applies what the kernel holds, not less. */
                (void)record_reservation(p, g->node, g->page_size, res.total);
        else if (g->had_record)
                (void)record_reservation(p, g->node, g->page_size, g->record);
        else
                forget_reservation(p, g->node, g->page_size);
        pools_unlock(&p->reg.lock);
        int q = pools_save(p);
        if (r < 0 || q < 0)
                log_err("pools: putting node %d back to %" PRIu64 " pages after a failed create: %s",
                        g->node, g->previous, strerror(r < 0 ? -r : -q));
        else
                log_info("pools: node %d back to %" PRIu64 " %" PRIu64 "-byte pages: the pool they were "
                         "grown for was not created", g->node, res.total, g->page_size);
}

/* PAGES more pages must fit in the size limit of PAGE_SIZE's mount, if it
 * has one: stock files (of NODE first, whose pages the node check counts
 * too, then of any node) give way when, and only when, that makes them
 * fit; else insufficient-hugepages, nothing removed.  "reserve" cannot help: the limit is the
 * mount's.  admit.lock held. */
static int admit_mount_room(struct pools *p, int node, uint64_t page_size, uint64_t pages, bool give_way,
                            struct problem *err)
{
        uint64_t room = pools_mount_room(p, page_size);

        if (room >= pages)
                return 0;
        if (give_way && (pools_stock_make_room(p, node, page_size, pages - room) > 0 ||
                         pools_stock_make_room(p, -1, page_size, pages - room) > 0)) {
                room = pools_mount_room(p, page_size);
                if (room >= pages)
                        return 0;
        }
        problem_raise(err, PROBLEM_INSUFFICIENT_HUGEPAGES,
                      "the hugetlbfs mount of %s has room for %" PRIu64 " more pages of %" PRIu64
                      " bytes (its size= limit), %" PRIu64 " asked; growing the node's pool cannot raise it",
                      pools_mount_dir(p, page_size), room, page_size, pages);
        return -ENOMEM;
}

/* Node NODE must have PAGES free pages of PAGE_SIZE beyond what warming jobs
 * still need; grow its pool by what is missing when RESERVE.  admit.lock
 * held.  0 or -ENOMEM with ERR set (insufficient-hugepages), or a sysfs
 * -errno (ERR set: sysfs-error).  A growth for a pool that is then not admitted is undone
 * here; one for a pool admitted is described in *RET_GROWTH (NULL only
 * without RESERVE) for the caller to undo if the create fails later. */
int pools_admit(struct pools *p, int node, uint64_t page_size, uint64_t pages, bool reserve, bool give_way,
                struct pools_growth *ret_growth, struct problem *err)
{
        pools_assert_held(&p->admit.lock);
        struct pools_growth g = { .node = node, .page_size = page_size };
        struct pools_avail a;
        uint64_t avail, before_growth = 0;
        int r;

        if (ret_growth)
                *ret_growth = g;
        if (p->cfg.fixed_hugepages)
                reserve = false;
        /* The mount first: a pool it has no room for is refused before
         * any stock file gives way by node pages, or the node grows. */
        r = admit_mount_room(p, node, page_size, pages, give_way, err);
        if (r < 0)
                return r;
        for (int attempt = 0;; attempt++) {
                /* One consistent reading: a chunk that ends while the
                 * counters are read is not counted as still needed and as
                 * taken (pools_node_counts). */
                r = pools_node_available(p, node, page_size, &a);
                if (r < 0) {
                        problem_raise(err, PROBLEM_SYSFS_ERROR, "reading node %d hugepage counters: %s", node,
                                      strerror(-r));
                        return r;
                }
                avail = a.available;
                if (avail >= pages) {
                        if (ret_growth)
                                *ret_growth = g;
                        return 0;
                }
                /* Stock pages count as available: stock files of the node
                 * go before anything is refused or reserved. */
                if (give_way) {
                        give_way = false;
                        if (pools_stock_make_room(p, node, page_size, pages - avail) > 0) {
                                attempt--;
                                continue;
                        }
                }
                /* Elastic pools grow on demand up to their policy's max,
                 * as "reserve": true does, without the caller asking
                 * (pools_elastic.c; not at start-up: no RET_GROWTH).  Asked
                 * again before every growth, so one grown again stays
                 * within max too. */
                bool elastic = false;
                if (ret_growth && !p->cfg.fixed_hugepages) {
                        r = pools_elastic_admit_check(p, node, page_size, &a, pages, &elastic, err);
                        if (r < 0)
                                return r;
                        reserve = reserve || elastic;
                }
                /* A growth that raised what is available but not to
                 * PAGES (a page of another warm left the free list while
                 * its file did not show it yet, and was counted twice)
                 * grows again by what is still missing, a few times; one
                 * that raised nothing is refused. */
                if (!reserve || attempt >= GROW_TRIES || (attempt > 0 && avail <= before_growth)) {
                        pools_undo_growth(p, &g);
                        problem_raise(err, PROBLEM_INSUFFICIENT_HUGEPAGES,
                                      "node %d needs %" PRIu64 " available pages of %" PRIu64 " bytes; it has %" PRIu64
                                      " (%" PRIu64 " free, %" PRIu64 " still to be taken by other warming pools, %"
                                      PRIu64 " reserved by mappings not yet faulted)%s",
                                      node, pages, page_size, avail, a.free, a.needed, a.foreign,
                                      reserve ? " (even after growing the pool; the growth was undone)"
                                      : p->cfg.fixed_hugepages ? "; " POOLS_FIXED_WHY ": \"reserve\" grows nothing"
                                                               : "; retry with \"reserve\": true to grow the pool");
                        return -ENOMEM;
                }

                struct reserve_req rq = {
                        .node = node,
                        .page_size = page_size,
                        .count = a.total + (pages - avail),
                        .floor_bytes = p->cfg.memory_floor,
                };
                struct reserve_result res = {0};
                if (!g.grew) {
                        POOLS_LOCKED(&p->reg.lock);
                        g.had_record = find_reservation(p, node, page_size, &g.record);
                }
                before_growth = avail;
                r = pools_reserve_locked(p, &rq, rq.count, &res);
                if (r == 0)
                        pools_elastic_note(p, node, page_size, ELASTIC_GROW, res.total - res.previous,
                                           "grown on demand: a pool or refill needed more pages than were free");
                if (r == 0 && !g.grew) {
                        /* The first growth's count and record are what an
                         * undo goes back to, whatever grew after it. */
                        g.grew = true;
                        g.previous = res.previous;
                }
                if (r < 0) {
                        char why[160];

                        pools_undo_growth(p, &g); /* an earlier try's, if any */

                        if (r == -ENOMEM) {
                                /* Say what would work: the floor and the most that fits. */
                                char fl[32];

                                format_size(res.floor_bytes, fl, sizeof(fl));
                                snprintf(why, sizeof(why), "it would go below the memory floor of %s (nothing "
                                         "written; at most %" PRIu64 " pages fit)", fl, res.max_count);
                                err->has_floor = true;
                                err->floor_bytes = res.floor_bytes;
                                err->mem_free_bytes = res.mem_free_bytes;
                                err->max_count = res.max_count;
                        } else {
                                snprintf(why, sizeof(why), "%s", r == -EAGAIN ?
                                         "the kernel gave fewer pages (count restored)" : strerror(-r));
                        }
                        problem_raise(err, PROBLEM_INSUFFICIENT_HUGEPAGES,
                                      "node %d needs %" PRIu64 " available pages; it has %" PRIu64 " (%" PRIu64
                                      " free, %" PRIu64 " still to be taken by other warming pools, %" PRIu64
                                      " reserved by mappings not yet faulted); "
                                      "growing its pool from %" PRIu64 " to %" PRIu64 " pages failed: %s",
                                      node, pages, avail, a.free, a.needed, a.foreign, a.total, rq.count, why);
                        if (r == -EAGAIN) {
                                err->has_counts = true;
                                err->requested = rq.count;
                                err->achieved = res.achieved;
                        }
                        /* The policy's `last` and the log say so too: an
                         * operator reading GET .../policy would otherwise
                         * see the move before it (best-effort 1 GiB pages
                         * fail here when no free gigabyte is left). */
                        if (elastic) {
                                char pwhy[sizeof(why)];

                                if (r == -EAGAIN && res.achieved >= a.total)
                                        snprintf(pwhy, sizeof(pwhy), "a growth on demand failed: the kernel gave %"
                                                 PRIu64 " of %" PRIu64 " pages (count restored)",
                                                 res.achieved - a.total, rq.count - a.total);
                                else
                                        snprintf(pwhy, sizeof(pwhy), "a growth on demand failed: %.120s", why);
                                pools_elastic_note(p, node, page_size, ELASTIC_REFUSE, rq.count - a.total, pwhy);
                        }
                        return -ENOMEM;
                }
        }
}

