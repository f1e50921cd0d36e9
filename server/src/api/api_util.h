/* api_util: small pieces every handler needs — resolving {id} and {size}
 * path captures, and the common problems. */
#pragma once
#include <inttypes.h>
#include <stdbool.h>

#include "router.h"
#include "util.h"

struct topo;
struct topo_node;

/* Strict decimal node id present in the topology; else 404 unknown-node in RESP. */
bool api_find_node(const struct req *req, const char *s, const struct topo_node **ret, struct resp *resp);
/* A page size the kernel offers; else 404 unknown-page-size in RESP. */
bool api_find_page_size(const struct req *req, const char *s, uint64_t *ret, struct resp *resp);
/* "2M and 1G": the page sizes this host has, for hints ("no hugepage
 * sizes" when it has none).  Writes at most LEN bytes. */
void api_page_sizes_text(const struct topo *t, char *buf, size_t len);
/* 422 invalid-field with DETAIL. */
struct elastic_view;
struct json;
/* An elastic policy and what it did, as GET .../policy answers (api_elastic.c). */
void api_elastic_encode(const struct elastic_view *v, struct json *o);
void api_invalid(struct resp *resp, const char *detail);
void api_oom(struct resp *resp);
