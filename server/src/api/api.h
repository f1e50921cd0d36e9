/* api: the request handlers and the route table that names them
 * (routes.c), which main.c hands to the transport.  Each handler parses the
 * request, calls the core (topo, reserve, pools), encodes the answer.  No
 * syscalls here beyond what the core does for them. */
#pragma once

/* The transport never names a handler: it answers from the table main.c
 * hands it.  http/'s object library defines HPW_IN_HTTP (the fuzzer's one
 * library of every folder defines every folder's macro, HPW_IN_API too). */
#if defined(HPW_IN_HTTP) && !defined(HPW_IN_API)
#error "api.h is not for server/src/http/: take the route table from http_config.routes"
#endif
#include "router.h"

void api_health(const struct req *req, struct resp *resp);
void api_nodes_list(const struct req *req, struct resp *resp);
void api_node_get(const struct req *req, struct resp *resp);
void api_node_reserve(const struct req *req, struct resp *resp);
void api_policy_get(const struct req *req, struct resp *resp);
void api_policy_put(const struct req *req, struct resp *resp);
void api_policy_delete(const struct req *req, struct resp *resp);
void api_pools_list(const struct req *req, struct resp *resp);
void api_pool_get(const struct req *req, struct resp *resp);
void api_pool_put(const struct req *req, struct resp *resp);
void api_pool_delete(const struct req *req, struct resp *resp);
void api_pool_claim(const struct req *req, struct resp *resp);
void api_stock_get(const struct req *req, struct resp *resp);
void api_stock_put(const struct req *req, struct resp *resp);
void api_handoff(const struct req *req, struct resp *resp);
void api_metrics(const struct req *req, struct resp *resp);

/* Every route the daemon answers (routes.c). */
extern const struct route_table api_routes;
