/* api_util: small pieces every handler needs — resolving {id} and {size}
 * path captures, and the common problems. */
#pragma once
#include <inttypes.h>
#include <stdbool.h>

#include "router.h"
#include "util.h"

/* Syntax only; the rules are the core's (pools_check_node and
 * pools_check_page_size).  A node id: canonical decimal that fits an int,
 * else the core's unknown-node refusal (404) for the text in RESP. */
bool api_node_id(const char *s, int *ret, struct resp *resp);
/* A page size such as "2M" or "1G", else 400 invalid-field in RESP saying
 * what to write. */
bool api_page_size(const char *s, uint64_t *ret, struct resp *resp);
/* The {id} (and, unless RET_PAGE_SIZE is NULL, {size}) captures of a
 * /v1/nodes/... path: their syntax, then the core's rules, in that order;
 * false with RESP set. */
bool api_path_target(const struct req *req, struct resp *resp, int *ret_node, uint64_t *ret_page_size);
/* The longest ?timeout= of a long-poll (GET /v1/pools/{name}?wait=ready,
 * GET /v1/stock?wait=change) we hold a connection for, and the default:
 * clients loop for more. */
#define WAIT_TIMEOUT_MAX_S 300
#define WAIT_TIMEOUT_DEFAULT_S 30
/* A whole number of at most MAX from query value S: decimal digits only (no
 * sign, no blank), as the schema's integer says. */
bool api_parse_whole(const char *s, uint64_t max, uint64_t *ret);
/* A wait's ?timeout= value S (NULL: the default) in seconds, else 422
 * invalid-field in RESP. */
bool api_wait_timeout(const char *s, uint64_t *ret, struct resp *resp);
/* 422 invalid-field with DETAIL. */
struct elastic_view;
struct json;
/* An elastic policy and what it did, as GET .../policy answers (api_elastic.c). */
void api_elastic_encode(const struct elastic_view *v, struct json *o);
void api_invalid(struct resp *resp, const char *detail);
void api_oom(struct resp *resp);
