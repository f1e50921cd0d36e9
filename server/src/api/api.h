/* api: the request handlers named in the route table (router.c).  Each one
 * parses the request, calls the core (topo, reserve, pools), encodes the
 * answer.  No syscalls here beyond what the core does for them. */
#pragma once
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

/* Shared problem for "the daemon is shutting down". */
void api_refuse_stopping(struct resp *resp);
