/* elastic: the pure half of elastic hugepage pools — what a policy may say,
 * and what a node's pool should do next, given its policy, its counters,
 * the demand of the moment and how long its surplus has stayed free.
 * No I/O and no clock of its own: pools_elastic.c and pools_policy.c read
 * the kernel, pass the numbers and the time in, and do what it says; the
 * table tests (tests/unit/test_elastic.c) drive it alone.
 *
 * The policy (record.h's struct elastic_policy_record, in pages; its rule is
 * record_check_elastic_policy, record.h):
 *   min           never give back below it (the pool grows to it when set)
 *   max           never grow beyond it (nor beyond the memory floor, which
 *                 reserve.c checks at each growth)
 *   headroom      free pages kept beyond what is in use and still needed
 *   idle_seconds  how long surplus pages must stay free before they go
 *
 * Hysteresis: growth happens only for a demand (a pool, a refill, the min)
 * and forgets the idle history; a give-back returns only the fewest surplus
 * pages seen during a whole idle period, and starts a new period.  So a
 * pool that grew for a burst keeps its pages at least idle_seconds, and one
 * whose demand moves within the headroom never moves at all. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "journal.h"

/* Pages from 1 GiB up are gigantic: the buddy allocator cannot hand them
 * out, so growing them at runtime needs contiguous memory that may no
 * longer exist once given back, unless hugetlb_cma reserved a CMA area. */
#define ELASTIC_GIGANTIC_BYTES (UINT64_C(1) << 30)

enum elastic_growth {
        ELASTIC_GROWTH_RELIABLE,
        ELASTIC_GROWTH_BEST_EFFORT,
};
const char *elastic_growth_name(enum elastic_growth g); /* "reliable", "best-effort" */

/* Whether the kernel command line CMDLINE reserves a hugetlb CMA area on
 * NODE: "hugetlb_cma=SIZE" (spread over all nodes) or
 * "hugetlb_cma=N:SIZE,M:SIZE" (those nodes); a zero size reserves none. */
bool elastic_cma_on_node(const char *cmdline, int node);
/* Growing PAGE_SIZE pages at runtime: reliable below gigantic sizes, and
 * for gigantic ones when the command line puts a CMA area on the node and
 * the kernel shows one (CMA_TOTAL, bytes, /proc/meminfo's CmaTotal). */
enum elastic_growth elastic_runtime_growth(uint64_t page_size, bool cma_on_node, uint64_t cma_total);

/* One node's pool, as admission reads it (pools_pending.c). */
struct elastic_counts {
        uint64_t total;    /* nr_hugepages */
        uint64_t free;     /* free_hugepages */
        uint64_t needed;   /* pages warms and refills admitted on the node have yet to fault */
        uint64_t foreign;  /* reserved by other mappings, not yet faulted */
};

/* The idle history the planner keeps between calls (zeroed to start). */
struct elastic_idle {
        bool tracking;     /* surplus has been free since since_ns */
        uint64_t since_ns;
        uint64_t low;      /* the fewest surplus pages seen since then */
};

enum elastic_action {
        ELASTIC_KEEP,      /* nothing to do */
        ELASTIC_GROW,      /* grow by `pages` to `target` */
        ELASTIC_RETURN,    /* give `pages` back, to `target` */
        ELASTIC_REFUSE,    /* the demand does not fit under max: `pages` is what would fit */
};
const char *elastic_action_name(enum elastic_action a);

struct elastic_decision {
        enum elastic_action action;
        uint64_t pages;
        uint64_t target;   /* the count after it (KEEP, REFUSE: the count now) */
        const char *why;   /* a static sentence */
};

/* What the pool of policy P should do now.  DEMAND is the pages a caller
 * needs available (a pool or a refill being admitted); 0 for the upkeep's
 * look.  IDLE is updated; NOW_NS is any monotonic clock, the same every
 * call. */
void elastic_plan(const struct elastic_policy_record *p, const struct elastic_counts *c, uint64_t demand,
                  struct elastic_idle *idle, uint64_t now_ns, struct elastic_decision *ret);
