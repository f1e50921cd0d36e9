/* placement.h: placement.c's pure parts, for its table test
 * (tests/client/test_placement.c) and the CLI; nothing here talks to a
 * server.  The counting is offer.h's. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* Placement's integers are 32-bit signed: no count is written past this. */
#define PL_INT32_MAX 2147483647u

/* The resource class of PAGE_SIZE pages: CUSTOM_HPWARM_<SIZE>, SIZE in
 * the largest of K, M, G, T, P, E that is a whole number of them (2M, 1G,
 * 64K, 16G, 512M); NULL for a size that is no power of two of at least
 * 1 KiB (no hugepage size is).  A static string.  The one place a class is
 * named: any page size the host has becomes a class. */
const char *pl_class_name(uint64_t page_size);
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
