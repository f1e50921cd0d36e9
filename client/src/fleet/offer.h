/* offer.h: what a host offers a fleet scheduler, per NUMA node and page
 * size, and the rule that turns it into what a publisher writes.  Pure:
 * nothing here talks to a server.  Every fleet publisher (Placement today,
 * cli_placement.c; a Kubernetes node agent would be another) counts through
 * these two functions, so the arithmetic is stated once and table-tested
 * once (tests/client/test_offer.c). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "hpwarm.h"

/* Page sizes one node can have: x86 has 2 (2M, 1G), arm64 and ppc64 up to
 * 4 depending on the base page; room to spare.  Sizes past it are left
 * out of the offer. */
#define OFFER_MAX_SIZES 8

/* One page size's warm pages on one node, as hpwarmd reports them. */
struct offer_count {
        uint64_t page_size;  /* bytes */
        uint64_t ready;      /* in ready stock files */
        uint64_t in_use;     /* in pools handed out from stock (full or partial), warming or ready */
        uint64_t warming;    /* in stock files warming or recycling */
};

/* One node's offer: a count for every page size the node has, ascending. */
struct offer {
        int node;
        size_t n;
        struct offer_count size[OFFER_MAX_SIZES];
};

/* N's offer from the stock and the pool list (either may be NULL): its
 * page sizes are N's hugepage sizes; stock and pools of other nodes or
 * page sizes are not counted. */
void offer_of_node(const struct hpw_node *n, const struct hpw_stock *st, const struct hpw_pool_list *pl,
                   struct offer *ret);
/* The count of page size PAGE_SIZE in O; NULL when O has none. */
const struct offer_count *offer_find(const struct offer *o, uint64_t page_size);

/* What a publisher writes for one page size: capacity (total - reserved)
 * and reserved, in pages.  present false: publish nothing for it. */
struct offer_publish {
        bool present;
        uint64_t total, reserved;
};
/* What C makes true when consumers (allocations, pods) hold USED pages:
 * capacity ready + the part of in_use consumers hold, min(in_use, USED),
 * but never below USED; reserved warming; total the two added, clamped
 * to LIMIT (the largest count the target holds: Placement's 32-bit
 * integers); present false when total is 0.  Returns true when the
 * capacity was held at USED (the stock is below what consumers hold). */
bool offer_want(const struct offer_count *c, uint64_t used, uint64_t limit, struct offer_publish *ret);
