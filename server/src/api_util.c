/* api_util: capture resolution and common problems (see api_util.h). */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "topo.h"
#include "units.h"

bool api_find_node(const struct req *req, const char *s, const struct topo_node **ret, struct resp *resp)
{
        const struct topo_node *n = NULL;
        /* Only canonical decimal: "1", not "01", "+1" or "1x". */
        if (s[0] >= '0' && s[0] <= '9' && !(s[0] == '0' && s[1]) && strlen(s) <= 9 &&
            strspn(s, "0123456789") == strlen(s))
                n = topo_node(req->app->topo, atoi(s));
        if (!n) {
                struct problem p = {0};
                problem_raise(&p, PROBLEM_UNKNOWN_NODE, "there is no NUMA node \"%.64s\"", s);
                resp_problem(resp, &p);
                return false;
        }
        *ret = n;
        return true;
}

bool api_find_page_size(const struct req *req, const char *s, uint64_t *ret, struct resp *resp)
{
        uint64_t ps;
        if (parse_page_size(s, &ps) < 0 || !topo_has_page_size(req->app->topo, ps)) {
                struct problem p = {0};
                problem_raise(&p, PROBLEM_UNKNOWN_PAGE_SIZE,
                              "the kernel offers no hugepage size \"%.32s\" (try 2M or 1G)", s);
                resp_problem(resp, &p);
                return false;
        }
        *ret = ps;
        return true;
}

void api_invalid(struct resp *resp, const char *detail)
{
        struct problem p = {0};
        problem_raise(&p, PROBLEM_INVALID_FIELD, "%s", detail);
        resp_problem(resp, &p);
}

void api_oom(struct resp *resp)
{
        struct problem p = {0};
        problem_raise(&p, PROBLEM_INTERNAL_ERROR, "out of memory");
        resp_problem(resp, &p);
}

void api_refuse_stopping(struct resp *resp)
{
        struct problem p = {0};
        problem_raise(&p, PROBLEM_STOPPING, "the daemon is stopping; retry against its successor");
        p.retry_after = 1;
        resp_problem(resp, &p);
}
