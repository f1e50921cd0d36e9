/* client_pools: the public calls about one pool.
 *
 * Listing (paged), reading, warming, waiting, claiming and releasing pools,
 * and the handoff of pools to a VMM.  Waiting is a loop of server
 * long-polls (GET ?wait=ready&timeout=S): the server holds each request
 * until the pool changes or S passes, so neither side spins; the loop ends
 * at the caller's deadline.  Every write here is safe to retry after a lost
 * answer, which is why each is sent as idempotent to hpw_request(). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handle.h"
#include "precond.h"

/* Pages of at most this many pools (the server's largest page): a host of a
 * thousand pools is one request, a denser one a few, each answer bounded. */
#define POOLS_PAGE 1000

/* Page through the list: each request asks for the names after the last
 * page's "next"; a server without paging answers everything at once and no
 * "next", which ends the loop too.  One deadline covers all pages. */
enum hpw_error hpw_pools(struct hpw *h, struct hpw_pool_list **ret)
{
        struct hpw_pool_list *acc = NULL;
        char path[128], *next = NULL;
        uint64_t deadline;
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        deadline = hpw_call_deadline(h);
        snprintf(path, sizeof(path), "/v1/pools?limit=%d", POOLS_PAGE);
        for (;;) {
                err = hpw_request(h, "GET", path, NULL, true, deadline, 0);
                if (err == HPW_OK)
                        err = hpw_parsed(h, hpw_json_pool_list_page(h->last.body, h->last.len, &acc, &next));
                if (err != HPW_OK || !next)
                        break;
                /* Pool names need no escaping in a query (hpw_name_valid). */
                snprintf(path, sizeof(path), "/v1/pools?limit=%d&after=%s", POOLS_PAGE, next);
                free(next);
                next = NULL;
        }
        if (err != HPW_OK) {
                hpw_pool_list_free(acc);
                return err;
        }
        *ret = acc;
        return HPW_OK;
}

enum hpw_error hpw_pool(struct hpw *h, const char *name, struct hpw_pool **ret)
{
        char path[128];
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_name(h, name);
        snprintf(path, sizeof(path), "/v1/pools/%s", name);
        err = hpw_request(h, "GET", path, NULL, true, hpw_call_deadline(h), 0);
        return err ? err : hpw_parsed(h, hpw_json_pool(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_warm(struct hpw *h, const char *name, const struct hpw_warm_request *req,
                        struct hpw_pool **ret, bool *ret_created)
{
        char path[128];
        char *body;
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_name(h, name);
        hpw_assert_return_h(h, req, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, req->size >= HPW_WARM_REQUEST_V1_SIZE, HPW_E_STRUCT_SIZE);
        hpw_assert_return_h(h, req->node >= 0, HPW_E_INVALID);
        hpw_assert_return_h(h, req->size_bytes > 0, HPW_E_INVALID);
        snprintf(path, sizeof(path), "/v1/pools/%s", name);
        body = hpw_json_warm_body(req);
        if (!body)
                return HPW_E_NOMEM;
        /* PUT of an identical pool answers 200 with the existing one, so a
         * retry after a lost answer is safe. */
        err = hpw_request(h, "PUT", path, body, true, hpw_call_deadline(h), 0);
        free(body);
        if (err == HPW_OK)
                err = hpw_parsed(h, hpw_json_pool(h->last.body, h->last.len, ret));
        if (err == HPW_OK && ret_created)
                *ret_created = h->last.status == 201;
        return err;
}

/* The preconditions hpw_handoff() and hpw_handoff_as() share, in the
 * caller's own body (so the message names it). */
#define HANDOFF_PRECONDITIONS(h, vmm, pools, n, ret)                                    \
        do {                                                                            \
                hpw_assert_handle(h);                                                   \
                hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);                       \
                hpw_assert_return_h(h, vmm, HPW_E_NULL_ARGUMENT);                       \
                hpw_assert_return_h(h, hpw_vmm_find(vmm, false), HPW_E_INVALID);        \
                hpw_assert_return_h(h, pools, HPW_E_NULL_ARGUMENT);                     \
                hpw_assert_return_h(h, n > 0 && n <= HPW_HANDOFF_MAX_POOLS, HPW_E_INVALID); \
                for (size_t i_ = 0; i_ < (n); i_++)                                     \
                        hpw_assert_name(h, pools[i_]);                                  \
        } while (0)

/* GET /v1/handoff for POOLS, with as= when AS is given (the arguments
 * checked by HANDOFF_PRECONDITIONS). */
static enum hpw_error handoff_get(struct hpw *h, const char *vmm, const char *const *pools, const char *const *as,
                                  size_t n, struct hpw_handoff **ret)
{
        /* "/v1/handoff?vmm=cloud-hypervisor&pools=" and N names of at most 64
         * characters with a comma each, "&as=" and as many again. */
        char path[64 + 2 * HPW_HANDOFF_MAX_POOLS * 65];
        size_t len;
        enum hpw_error err;

        len = (size_t)snprintf(path, sizeof(path), "/v1/handoff?vmm=%s&pools=", vmm);
        for (size_t i = 0; i < n; i++)
                len += (size_t)snprintf(path + len, sizeof(path) - len, "%s%s", i ? "," : "", pools[i]);
        for (size_t i = 0; as && i < n; i++)
                len += (size_t)snprintf(path + len, sizeof(path) - len, "%s%s", i ? "," : "&as=", as[i]);
        err = hpw_request(h, "GET", path, NULL, true, hpw_call_deadline(h), 0);
        return err ? err : hpw_parsed(h, hpw_json_handoff(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_handoff(struct hpw *h, const char *vmm, const char *const *pools, size_t n,
                           struct hpw_handoff **ret)
{
        hpw_begin_call(h);
        HANDOFF_PRECONDITIONS(h, vmm, pools, n, ret);
        return handoff_get(h, vmm, pools, NULL, n, ret);
}

enum hpw_error hpw_handoff_as(struct hpw *h, const char *vmm, const char *const *pools, const char *const *as,
                              size_t n, struct hpw_handoff **ret)
{
        hpw_begin_call(h);
        HANDOFF_PRECONDITIONS(h, vmm, pools, n, ret);
        hpw_assert_return_h(h, as, HPW_E_NULL_ARGUMENT);
        for (size_t i = 0; i < n; i++)
                hpw_assert_name(h, as[i]);
        return handoff_get(h, vmm, pools, as, n, ret);
}

enum hpw_error hpw_wait(struct hpw *h, const char *name, uint64_t timeout_ms, hpw_progress_fn progress,
                        void *userdata, struct hpw_pool **ret)
{
        uint64_t deadline, started;
        struct hpw_pool *pool = NULL;
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_name(h, name);
        started = hpw_now_ms();
        deadline = timeout_ms ? started + timeout_ms : 0;
        for (;;) {
                char path[160];
                uint64_t poll_s = progress ? 1 : HPW_LONGPOLL_MAX_S, t0 = hpw_now_ms();
                struct hpw_pool *p = NULL;

                if (deadline) {
                        uint64_t left = t0 < deadline ? deadline - t0 : 0;
                        /* Ask the server to answer before our deadline. */
                        if (left / 1000 < poll_s)
                                poll_s = left / 1000;
                }
                snprintf(path, sizeof(path), "/v1/pools/%s?wait=ready&timeout=%llu", name,
                         (unsigned long long)poll_s);
                err = hpw_request(h, "GET", path, NULL, true, deadline, poll_s * 1000 + HPW_LONGPOLL_SLACK_MS);
                if (err == HPW_OK)
                        err = hpw_parsed(h, hpw_json_pool(h->last.body, h->last.len, &p));
                if (err != HPW_OK) {
                        if ((err == HPW_E_TIMEOUT || err == HPW_E_CANCELLED) && pool) {
                                *ret = pool;
                                return err;
                        }
                        hpw_pool_free(pool);
                        return err;
                }
                hpw_pool_free(pool);
                pool = p;
                if ((progress && progress(pool, userdata) != 0) || atomic_load(&h->cancel)) {
                        hpw_cancelled(h, name);
                        *ret = pool;
                        return HPW_E_CANCELLED;
                }
                if (pool->state == HPW_POOL_UNKNOWN) {
                        /* Not a state we could wait out: without knowing
                         * whether it ends, waiting would only run to the
                         * deadline (or forever without one). */
                        snprintf(h->message, sizeof(h->message), "pool %s is in unknown state '%s'",
                                 name, pool->state_name);
                        hpw_pool_free(pool);
                        return HPW_E_PROTOCOL;
                }
                if (pool->state != HPW_POOL_WARMING)
                        break;
                if (deadline && hpw_now_ms() >= deadline) {
                        snprintf(h->message, sizeof(h->message), "pool %s still %s at the deadline",
                                 name, pool->state_name);
                        *ret = pool;
                        return HPW_E_TIMEOUT;
                }
                if (hpw_now_ms() - t0 < HPW_POLL_MIN_INTERVAL_MS &&
                    !hpw_sleep_unless_cancelled(h, HPW_POLL_MIN_INTERVAL_MS)) {
                        hpw_cancelled(h, name);
                        *ret = pool;
                        return HPW_E_CANCELLED;
                }
        }
        if (pool->state == HPW_POOL_READY) {
                *ret = pool;
                return HPW_OK;
        }
        /* Failed or cancelled: surface the pool's own problem. */
        hpw_problem_free(h->problem);
        h->problem = NULL;
        if (pool->error) {
                h->problem = calloc(1, sizeof(*h->problem));
                if (h->problem) {
                        h->problem->type = strdup(pool->error->type);
                        h->problem->slug = strdup(pool->error->slug);
                        h->problem->title = strdup(pool->error->title);
                        h->problem->detail = strdup(pool->error->detail);
                        h->problem->status = pool->error->status;
                        h->problem->code = pool->error->code;
                        if (!h->problem->type || !h->problem->slug || !h->problem->title ||
                            !h->problem->detail) {
                                hpw_problem_free(h->problem);
                                h->problem = NULL;
                        }
                }
        }
        snprintf(h->message, sizeof(h->message), "pool %s %s%s%s", name, pool->state_name,
                 pool->error ? ": " : "",
                 pool->error ? (pool->error->detail[0] ? pool->error->detail : pool->error->title) : "");
        *ret = pool;
        return HPW_E_POOL_FAILED;
}

/* BODY NULL: a claim as before pids existed (no body at all, which every
 * server version takes). */
static enum hpw_error claim(struct hpw *h, const char *name, const char *body, struct hpw_pool **ret)
{
        char path[160];
        enum hpw_error err;

        snprintf(path, sizeof(path), "/v1/pools/%s/claim", name);
        /* Claiming a claimed pool again (with the same pid, if any) answers
         * it unchanged, so a retry after a lost answer is safe. */
        err = hpw_request(h, "POST", path, body, true, hpw_call_deadline(h), 0);
        return err ? err : hpw_parsed(h, hpw_json_pool(h->last.body, h->last.len, ret));
}

enum hpw_error hpw_claim(struct hpw *h, const char *name, struct hpw_pool **ret)
{
        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_name(h, name);
        return claim(h, name, NULL, ret);
}

enum hpw_error hpw_claim_pid(struct hpw *h, const char *name, int pid, struct hpw_pool **ret)
{
        char body[32];

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_return_h(h, ret, HPW_E_NULL_ARGUMENT);
        hpw_assert_name(h, name);
        hpw_assert_return_h(h, pid > 0, HPW_E_INVALID);
        snprintf(body, sizeof(body), "{\"pid\":%d}", pid);
        return claim(h, name, body, ret);
}

/* A DELETE retried after a lost answer may find its own work done: 404 on
 * any attempt after the first is success.  When the first attempt really
 * never arrived (the pool did not exist at all) this still ends where the
 * caller wanted, with no such pool. */
enum hpw_error hpw_release(struct hpw *h, const char *name)
{
        char path[128];
        enum hpw_error err;

        hpw_begin_call(h);
        hpw_assert_handle(h);
        hpw_assert_name(h, name);
        snprintf(path, sizeof(path), "/v1/pools/%s", name);
        err = hpw_request(h, "DELETE", path, NULL, true, hpw_call_deadline(h), 0);
        if (err == HPW_E_NOT_FOUND && h->attempts > 1) {
                hpw_problem_free(h->problem);
                h->problem = NULL;
                h->message[0] = '\0';
                return HPW_OK;
        }
        return err;
}
