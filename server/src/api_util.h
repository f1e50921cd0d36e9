/* api_util: small pieces every handler needs — resolving {id} and {size}
 * path captures, and the common problems. */
#pragma once
#include <inttypes.h>
#include <stdbool.h>

#include "router.h"
#include "util.h"

struct topo;
struct topo_node;

/* Retry-After (seconds) of a 503 state-write-failed: nothing changed, and a
 * full or failing disk is not fixed at once. */
#define API_SAVE_RETRY_AFTER 5
/* Retry-After (seconds) of a 429 over a pool count or node limit: ready
 * pools are claimed, deleted or expire, on the scale of a minute. */
#define API_LIMIT_RETRY_AFTER 60

/* Strict decimal node id present in the topology; else 404 unknown-node in RESP. */
bool api_find_node(const struct req *req, const char *s, const struct topo_node **ret, struct resp *resp);
/* A page size the kernel offers; else 404 unknown-page-size in RESP. */
bool api_find_page_size(const struct req *req, const char *s, uint64_t *ret, struct resp *resp);
/* "2M and 1G": the page sizes this host has, for hints ("no hugepage
 * sizes" when it has none).  Writes at most LEN bytes. */
void api_page_sizes_text(const struct topo *t, char *buf, size_t len);
/* 422 invalid-field with DETAIL. */
void api_invalid(struct resp *resp, const char *detail);
void api_oom(struct resp *resp);
