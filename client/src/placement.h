/* placement.h: placement.c's pure parts, for its table test
 * (tests/client/test_placement.c) and the CLI; nothing here talks to a
 * server. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* Placement's integers are 32-bit signed: no count is written past this. */
#define PL_INT32_MAX 2147483647u

/* One class's pages on one NUMA node, as hpwarmd reports them. */
struct pl_count {
        uint64_t ready;     /* in ready stock files */
        uint64_t in_use;    /* in pools handed out from stock (full or partial), warming or ready */
        uint64_t warming;   /* in stock files warming or recycling */
};

/* NODE's counts per class (index as hpw_pl_class_name) from the stock and
 * the pool list (either may be NULL).  Page sizes other than 2 MiB and
 * 1 GiB are not counted. */
void pl_counts(const struct hpw_stock *st, const struct hpw_pool_list *pl, int node,
               struct pl_count c[HPW_PL_CLASSES]);
/* The inventory C makes true when allocations hold USED pages: capacity
 * ready + the part of in_use allocations hold, min(in_use, USED) (but never
 * below USED), reserved warming, total the two added (clamped to
 * PL_INT32_MAX); present false when total is 0.  Returns true when the
 * capacity was held at USED. */
bool pl_want(const struct pl_count *c, uint32_t used, struct hpw_pl_inv *ret);
/* Renew a Keystone token this long before it expires (or at half its
 * lifetime when that is shorter), so no request goes out with a token
 * about to lapse. */
#define PL_RENEW_BEFORE_S 300
/* When a token issued at NOW that expires at EXPIRES is asked for again
 * (unix seconds); 0 = never (no expiry in the answer, or one already
 * past: the token is used until Placement answers 401). */
int64_t pl_renew_at(int64_t now, int64_t expires);
/* An http:// or https:// URL without spaces, query or fragment. */
bool pl_url_ok(const char *u);
