/* pools_policy: elastic policies set, removed and applied.
 *
 * Setting a policy and giving pages back both run under admit.lock, as
 * every admission and reservation does: no warm can be admitted between
 * the reading a give-back decides on and its write to nr_hugepages, and a
 * warm or refill admitted earlier and not yet faulted keeps the node from
 * shrinking at all (its pages still count as free; elastic.c).  What the
 * kernel frees is free pages only: a count below the pages in use is
 * never asked, and the kernel would keep them anyway.  Each move goes
 * through pools_reserve_locked, so the node's recorded reservation follows
 * the pool and a restart re-applies the size it had, and the policy (saved
 * with the journal) resumes from there.
 *
 * A give-back moves in steps (ELASTIC_RETURN_STEP_BYTES), each under
 * admit.lock alone, re-reading the node between them: a warm waits for one
 * step at most, and stops the rest until it is faulted.
 *
 * The upkeep thread looks every ELASTIC_CHECK_NS while a policy exists:
 * often enough that a give-back comes within a fraction of a second of
 * idle_seconds (at least one), rarely enough to cost nothing (a few sysfs
 * reads per policy). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pools_internal.h"
#include "units.h"
#include "util.h"

#define ELASTIC_CHECK_NS (NS_PER_SEC / 4)

static void fill_view(struct pools *p, const struct pools_elastic_row *row, struct elastic_view *v)
{
        pools_assert_held(&p->reg.lock);
        *v = row->shown;
}

/* The CMA part of a view, read outside reg.lock. */
static void fill_growth(struct pools *p, struct elastic_view *v)
{
        v->runtime_growth = pools_elastic_growth(p, v->policy.node, v->policy.page_size, &v->cma_total_bytes,
                                                 &v->cma_free_bytes);
}

enum elastic_growth pools_runtime_growth(struct pools *p, int node, uint64_t page_size)
{
        return pools_elastic_growth(p, node, page_size, NULL, NULL);
}

/* Checks that need no lock: the numbers, the node and page size, max
 * against the memory floor, gigantic pages without CMA. */
static int check_policy(struct pools *p, const struct elastic_policy_record *pol, struct problem *err)
{
        char why[200], fl[32], ps[32];
        uint64_t mem_total, mem_free;
        int r;

        if (pools_check_node_page_size(p, pol->node, pol->page_size, err) < 0)
                return -ENOENT;
        if (record_check_elastic_policy(pol, why, sizeof(why)) < 0) {
                problem_raise(err, PROBLEM_INVALID_FIELD, "%s", why);
                return -EINVAL;
        }
        r = topo_read_meminfo(p->cfg.fs, pol->node, &mem_total, &mem_free);
        if (r < 0) {
                problem_raise(err, PROBLEM_SYSFS_ERROR, "node %d meminfo: %s", pol->node, strerror(-r));
                return r;
        }
        /* max is bounded by the floor as a reservation is: the most the
         * node could ever hold with the floor left to everything else. */
        uint64_t floor = reserve_floor(p->cfg.memory_floor, mem_total);
        uint64_t fit = mem_total > floor ? (mem_total - floor) / pol->page_size : 0;
        format_size(floor, fl, sizeof(fl));
        format_size(pol->page_size, ps, sizeof(ps));
        if (pol->max > fit) {
                problem_raise(err, PROBLEM_INSUFFICIENT_MEMORY,
                              "a max of %" PRIu64 " pages of %s on node %d would leave less than the memory floor "
                              "of %s of its %" PRIu64 " MiB; at most %" PRIu64 " pages fit; nothing was changed",
                              pol->max, ps, pol->node, fl, mem_total / MIB, fit);
                err->has_floor = true;
                err->floor_bytes = floor;
                err->mem_free_bytes = mem_free;
                err->max_count = fit;
                return -ENOMEM;
        }
        if (pools_runtime_growth(p, pol->node, pol->page_size) == ELASTIC_GROWTH_BEST_EFFORT &&
            !pol->allow_best_effort) {
                problem_raise(err, PROBLEM_GROWTH_NOT_RELIABLE,
                              "node %d has no hugetlb_cma area (CmaTotal in /proc/meminfo, hugetlb_cma= on the "
                              "kernel command line): a %s page given back may not come back, as the node's memory "
                              "fragments; boot with hugetlb_cma=%d:SIZE, or set \"allow_best_effort\": true to "
                              "accept that; nothing was changed", pol->node, ps, pol->node);
                return -EPERM;
        }
        return 0;
}

/* The problem for a failed growth to min (pools_reserve_locked's R). */
static void growth_failed(const struct elastic_policy_record *pol, int r, const struct reserve_result *res,
                          struct problem *err)
{
        char fl[32];

        switch (r) {
        case -ENOMEM:
                format_size(res->floor_bytes, fl, sizeof(fl));
                problem_raise(err, PROBLEM_INSUFFICIENT_MEMORY,
                              "growing node %d to the policy's min of %" PRIu64 " pages would leave less free "
                              "memory than the floor of %s (%" PRIu64 " MiB free); at most %" PRIu64 " pages fit; "
                              "nothing was changed", pol->node, pol->min, fl, res->mem_free_bytes / MIB,
                              res->max_count);
                pools_reserve_counts(err, r, res, pol->min);
                break;
        case -EAGAIN:
                problem_raise(err, PROBLEM_RESERVE_SHORTFALL,
                              "node %d: growing to the policy's min of %" PRIu64 " pages, the kernel gave %" PRIu64
                              "; restored %" PRIu64 "; nothing was changed", pol->node, pol->min, res->achieved,
                              res->previous);
                pools_reserve_counts(err, r, res, pol->min);
                break;
        case -ECANCELED:
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED, "node %d: the growth to min could not be saved, "
                              "so it was undone", pol->node);
                break;
        default:
                problem_raise(err, PROBLEM_SYSFS_ERROR, "node %d: %s", pol->node, strerror(-r));
                break;
        }
}

/* Put (NODE, PAGE_SIZE)'s row as OLD (or none when !HAD); reg.lock held. */
static int put_row(struct pools *p, const struct elastic_policy_record *pol, bool had,
                   const struct pools_elastic_row *old)
{
        pools_assert_held(&p->reg.lock);
        struct pools_elastic_row *row = pools_elastic_find(p, pol->node, pol->page_size);

        if (!had) {
                if (row)
                        *row = p->elastic.rows[--p->elastic.n_rows];
                return 0;
        }
        if (row) {
                *row = *old;
                return 0;
        }
        struct pools_elastic_row *n = realloc(p->elastic.rows, (p->elastic.n_rows + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        p->elastic.rows = n;
        p->elastic.rows[p->elastic.n_rows++] = *old;
        return 0;
}

/* admit.lock held. */
static int set_locked(struct pools *p, const struct elastic_policy_record *pol, struct elastic_view *ret,
                      struct problem *err)
{
        pools_assert_held(&p->admit.lock);
        struct pools_elastic_row old = {0}, *row;
        struct reserve_result res = {0};
        struct pools_avail a;
        bool had, grew = false;
        int r;

        r = pools_node_available(p, pol->node, pol->page_size, &a);
        if (r < 0) {
                problem_raise(err, r == -ENOENT ? PROBLEM_UNKNOWN_PAGE_SIZE : PROBLEM_SYSFS_ERROR,
                              "node %d hugepage counters: %s", pol->node, strerror(-r));
                return r;
        }
        if (a.total < pol->min) {
                struct reserve_req rq = { .node = pol->node, .page_size = pol->page_size, .count = pol->min,
                                          .floor_bytes = p->cfg.memory_floor };
                r = pools_reserve_locked(p, &rq, pol->min, &res);
                if (r < 0) {
                        growth_failed(pol, r, &res, err);
                        return r == -ECANCELED ? -EIO : r;
                }
                grew = true;
        }

        /* By hand: reg.lock is dropped before the save (save.lock is outside it). */
        pools_lock(&p->reg.lock);
        row = pools_elastic_find(p, pol->node, pol->page_size);
        had = row != NULL;
        if (row)
                old = *row;
        struct pools_elastic_row next = old;
        next.shown.policy = *pol;
        next.idle = (struct elastic_idle){0};
        r = put_row(p, pol, true, &next);
        pools_unlock(&p->reg.lock);
        if (r == 0)
                r = pools_save(p);
        if (r < 0) {
                /* By hand: reg.lock is dropped before the growth is undone. */
                pools_lock(&p->reg.lock);
                (void)put_row(p, pol, had, &old);
                pools_unlock(&p->reg.lock);
                if (grew) {
                        struct reserve_req back = { .node = pol->node, .page_size = pol->page_size,
                                                    .count = res.previous, .allow_partial = true };
                        struct reserve_result bres;
                        (void)pools_reserve_locked(p, &back, res.previous, &bres);
                }
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED, "saving the journal in %s: %s (the policy was not set)",
                              p->state_dir, strerror(-r));
                return -EIO;
        }
        if (grew)
                pools_elastic_note(p, pol->node, pol->page_size, ELASTIC_GROW, res.total - res.previous,
                                   "grown to the policy's min");
        POOLS_LOCKED(&p->reg.lock);
        row = pools_elastic_find(p, pol->node, pol->page_size);
        if (row)
                fill_view(p, row, ret);
        return 0;
}

int pools_set_elastic(struct pools *p, const struct elastic_policy_record *pol, struct elastic_view *ret,
                      struct problem *err)
{
        assert_return(p, -EINVAL);
        assert_return(pol, -EINVAL);
        assert_return(ret, -EINVAL);
        if (p->cfg.fixed_hugepages) {
                problem_raise(err, PROBLEM_HUGEPAGES_FIXED,
                              "node %d: %s: an elastic pool would grow and shrink the hugepage count, which the "
                              "daemon never changes here; nothing was changed", pol->node, POOLS_FIXED_WHY);
                return -EROFS;
        }
        int r = check_policy(p, pol, err);
        if (r < 0)
                return r;
        /* By hand: admit.lock is dropped before the CMA counters are read and upkeep kicked. */
        pools_lock(&p->admit.lock);
        r = set_locked(p, pol, ret, err);
        pools_unlock(&p->admit.lock);
        if (r == 0) {
                fill_growth(p, ret);
                pools_kick(p);
        }
        return r;
}

int pools_get_elastic(struct pools *p, int node, uint64_t page_size, struct elastic_view *ret)
{
        struct pools_elastic_row *row;

        assert_return(p, -EINVAL);
        assert_return(ret, -EINVAL);
        /* By hand: reg.lock is dropped before the CMA counters are read. */
        pools_lock(&p->reg.lock);
        row = pools_elastic_find(p, node, page_size);
        if (row)
                fill_view(p, row, ret);
        pools_unlock(&p->reg.lock);
        if (!row)
                return -ENOENT;
        fill_growth(p, ret);
        return 0;
}

int pools_list_elastic(struct pools *p, struct elastic_view **ret, size_t *ret_n)
{
        struct elastic_view *v;
        size_t n;

        assert_return(p, -EINVAL);
        assert_return(ret, -EINVAL);
        assert_return(ret_n, -EINVAL);
        {
                POOLS_LOCKED(&p->reg.lock);
                n = p->elastic.n_rows;
                v = calloc(n ? n : 1, sizeof(*v));
                if (!v)
                        return -ENOMEM;
                for (size_t i = 0; i < n; i++)
                        fill_view(p, &p->elastic.rows[i], &v[i]);
        }
        /* The CMA counters are read outside reg.lock. */
        for (size_t i = 0; i < n; i++)
                fill_growth(p, &v[i]);
        *ret = v;
        *ret_n = n;
        return 0;
}

int pools_delete_elastic(struct pools *p, int node, uint64_t page_size, struct problem *err)
{
        struct pools_elastic_row old, *row;
        struct reserve_result res;
        struct pools_avail a;
        int r;

        assert_return(p, -EINVAL);
        POOLS_LOCKED(&p->admit.lock);
        /* By hand: reg.lock is dropped before the reservation is recorded (it takes it). */
        pools_lock(&p->reg.lock);
        row = pools_elastic_find(p, node, page_size);
        if (!row) {
                pools_unlock(&p->reg.lock);
                problem_raise(err, PROBLEM_POLICY_NOT_FOUND, "node %d has no elastic policy for %" PRIu64
                              "-byte pages", node, page_size);
                return -ENOENT;
        }
        old = *row;
        *row = p->elastic.rows[--p->elastic.n_rows];
        pools_unlock(&p->reg.lock);
        /* Static at its current size: that size becomes the node's
         * reservation (no write: the count is what the kernel has), saved
         * with the policy gone. */
        r = pools_node_available(p, node, page_size, &a);
        if (r == 0) {
                struct reserve_req rq = { .node = node, .page_size = page_size, .count = a.total };
                r = pools_reserve_locked(p, &rq, a.total, &res);
        }
        if (r < 0) {
                /* By hand: reg.lock is dropped before the refusal is written. */
                pools_lock(&p->reg.lock);
                (void)put_row(p, &old.shown.policy, true, &old);
                pools_unlock(&p->reg.lock);
                problem_raise(err, PROBLEM_STATE_WRITE_FAILED, "node %d: removing the policy could not be saved "
                              "to the journal in %s (%s); it stays", node, p->state_dir, strerror(-r));
                return -EIO;
        }
        log_info("pools: node %d %" PRIu64 "-byte pool is static again at %" PRIu64 " pages", node, page_size,
                 a.total);
        return 0;
}

/* A give-back writes nr_hugepages in steps of at most this much, taking
 * admission's lock for each step alone: a warm that arrives meanwhile waits
 * for one step (a write and a journal save, about 1 ms for 128 MiB here),
 * not for the whole give-back (about 4 ms for 1 GiB), and after it the
 * give-back stops while the warm is not yet faulted. */
#define ELASTIC_RETURN_STEP_BYTES (UINT64_C(128) << 20)

/* One policy's look: plan under admit.lock, then move in steps. */
static void upkeep_one_policy(struct pools *p, int node, uint64_t page_size, uint64_t now)
{
        struct pools_elastic_row *row;
        struct elastic_decision d;
        struct reserve_result res;
        struct pools_avail a;
        uint64_t step = ELASTIC_RETURN_STEP_BYTES / page_size ? ELASTIC_RETURN_STEP_BYTES / page_size : 1;
        uint64_t start = 0, moved_to = 0;
        bool moved = false;
        int r;

        /* By hand: admit.lock is let go between steps, so a create can come in. */
        pools_lock(&p->admit.lock);
        if (pools_node_available(p, node, page_size, &a) < 0) {
                pools_unlock(&p->admit.lock);
                return;
        }
        struct elastic_counts c = { a.total, a.free, a.needed, a.foreign };
        /* By hand: reg.lock is dropped before the reservation writes. */
        pools_lock(&p->reg.lock);
        row = pools_elastic_find(p, node, page_size);
        if (row) {
                elastic_plan(&row->shown.policy, &c, 0, &row->idle, now, &d);
                row->shown.decision = d.why;
                /* A growth to min the kernel or the floor cut short is
                 * retried once per idle period, not at every look. */
                if (d.action == ELASTIC_GROW && row->grow_retry_ns && now < row->grow_retry_ns)
                        d.action = ELASTIC_KEEP;
        }
        uint64_t idle_ns = row ? row->shown.policy.idle_seconds * NS_PER_SEC : 0;
        pools_unlock(&p->reg.lock);
        if (!row || (d.action != ELASTIC_RETURN && d.action != ELASTIC_GROW)) {
                pools_unlock(&p->admit.lock);
                return;
        }
        start = a.total;
        for (;;) {
                pools_assert_held(&p->admit.lock);
                uint64_t to = d.target;
                if (d.action == ELASTIC_RETURN) {
                        /* Never below what is held now: pages in use, what
                         * admitted warms still need, other reservations. */
                        uint64_t held = (a.total > a.free ? a.total - a.free : 0) + a.needed + a.foreign;
                        if (a.needed > 0 || a.total <= d.target || a.total <= held)
                                break;
                        if (to < held)
                                to = held;
                        if (a.total - to > step)
                                to = a.total - step;
                }
                struct reserve_req rq = { .node = node, .page_size = page_size, .count = to,
                                          .allow_partial = true, .floor_bytes = p->cfg.memory_floor };
                r = pools_reserve_locked(p, &rq, to, &res);
                if (d.action == ELASTIC_GROW && (r < 0 || res.total < to)) {
                        POOLS_LOCKED(&p->reg.lock);
                        row = pools_elastic_find(p, node, page_size);
                        if (row)
                                row->grow_retry_ns = now + idle_ns;
                }
                if (r < 0) {
                        log_warn("pools: node %d elastic pool: setting %" PRIu64 " pages (%s) failed: %s; "
                                 "retried after idle_seconds", node, to, d.why, strerror(-r));
                        break;
                }
                moved = true;
                moved_to = res.total;
                if (d.action == ELASTIC_GROW || res.total <= d.target || res.total >= a.total)
                        break;
                /* By hand: let a create in; the next step reads the node again. */
                pools_unlock(&p->admit.lock);
                pools_lock(&p->admit.lock);
                if (pools_node_available(p, node, page_size, &a) < 0)
                        break;
                /* By hand: reg.lock only for the look-up; admit.lock stays. */
                pools_lock(&p->reg.lock);
                row = pools_elastic_find(p, node, page_size);
                pools_unlock(&p->reg.lock);
                if (!row)
                        break; /* the policy was deleted meanwhile */
        }
        pools_unlock(&p->admit.lock);
        if (moved && start > moved_to)
                pools_elastic_note(p, node, page_size, ELASTIC_RETURN, start - moved_to, d.why);
        else if (moved && moved_to > start)
                pools_elastic_note(p, node, page_size, ELASTIC_GROW, moved_to - start, d.why);
}

void pools_elastic_upkeep(struct pools *p)
{
        uint64_t now = now_mono_ns();
        struct { int node; uint64_t page_size; } keys[TOPO_MAX_PAGE_SIZES * 64];
        size_t n = 0;

        if (p->cfg.fixed_hugepages || (p->elastic.next_ns && now < p->elastic.next_ns))
                return;
        /* By hand: reg.lock is dropped before each policy's upkeep, which takes admit.lock. */
        pools_lock(&p->reg.lock);
        for (size_t i = 0; i < p->elastic.n_rows && n < ARRAY_SIZE(keys); i++) {
                keys[n].node = p->elastic.rows[i].shown.policy.node;
                keys[n].page_size = p->elastic.rows[i].shown.policy.page_size;
                n++;
        }
        pools_unlock(&p->reg.lock);
        if (n == 0) {
                p->elastic.next_ns = 0;
                return;
        }
        for (size_t i = 0; i < n; i++)
                upkeep_one_policy(p, keys[i].node, keys[i].page_size, now_mono_ns());
        p->elastic.next_ns = now_mono_ns() + ELASTIC_CHECK_NS;
}

int pools_elastic_start(struct pools *p)
{
        if (p->cfg.fixed_hugepages && p->elastic.n_rows > 0)
                log_notice("pools: %s: the %zu elastic policies in the journal are kept but neither grow nor give "
                           "back (DELETE .../policy removes one)", POOLS_FIXED_WHY, p->elastic.n_rows);
        for (size_t i = 0; i < p->cfg.n_elastic; i++) {
                struct problem err = {0};
                struct elastic_view v;
                int r = pools_set_elastic(p, &p->cfg.elastic[i], &v, &err);
                if (r < 0) {
                        log_err("pools: --elastic %d:%" PRIu64 ": %s", p->cfg.elastic[i].node,
                                p->cfg.elastic[i].page_size, err.detail);
                        return -EINVAL;
                }
        }
        return 0;
}
