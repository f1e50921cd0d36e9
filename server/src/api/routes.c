/* routes: the route table, the one list of what the daemon answers and which
 * handler answers it.  It is data: main.c hands it to the transport
 * (http_config.routes), which matches requests against it and never names a
 * handler itself.  Each row reads by itself: method, pattern, handler and
 * what body the route takes.  The OpenAPI test (tests/api) reads the rows
 * from this file and compares them with api/openapi.yaml both ways, so keep
 * one route per line in the form {"METHOD", "/pattern", ...}. */
#include "api.h"
#include "util.h"

/* clang-format off */
static const struct route api_route_rows[] = {
        {"GET",    "/v1/health",                        api_health,        ROUTE_BODY_NONE},
        {"GET",    "/v1/nodes",                         api_nodes_list,    ROUTE_BODY_NONE},
        {"GET",    "/v1/nodes/{id}",                    api_node_get,      ROUTE_BODY_NONE},
        {"PUT",    "/v1/nodes/{id}/hugepages/{size}",   api_node_reserve,  ROUTE_BODY_JSON},
        {"GET",    "/v1/nodes/{id}/hugepages/{size}/policy", api_policy_get, ROUTE_BODY_NONE},
        {"PUT",    "/v1/nodes/{id}/hugepages/{size}/policy", api_policy_put, ROUTE_BODY_JSON},
        {"DELETE", "/v1/nodes/{id}/hugepages/{size}/policy", api_policy_delete, ROUTE_BODY_NONE},
        {"GET",    "/v1/pools",                         api_pools_list,    ROUTE_BODY_NONE},
        {"GET",    "/v1/pools/{name}",                  api_pool_get,      ROUTE_BODY_NONE},
        {"PUT",    "/v1/pools/{name}",                  api_pool_put,      ROUTE_BODY_JSON},
        {"DELETE", "/v1/pools/{name}",                  api_pool_delete,   ROUTE_BODY_NONE},
        {"POST",   "/v1/pools/{name}/claim",            api_pool_claim,    ROUTE_BODY_OPTIONAL},
        {"GET",    "/v1/stock",                         api_stock_get,     ROUTE_BODY_NONE},
        {"PUT",    "/v1/stock",                         api_stock_put,     ROUTE_BODY_JSON},
        {"GET",    "/v1/handoff",                       api_handoff,       ROUTE_BODY_NONE},
        {"GET",    "/metrics",                          api_metrics,       ROUTE_BODY_NONE},
};
/* clang-format on */

const struct route_table api_routes = {
        .rows = api_route_rows,
        .n_rows = ARRAY_SIZE(api_route_rows),
};
