/* api_util: capture resolution and common problems (see api_util.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "pools.h"
#include "units.h"
#include "size.h"

bool api_node_id(const char *s, int *ret, struct resp *resp)
{
        /* Only canonical decimal: "1", not "01", "+1" or "1x"; and an int,
         * as the core's node is. */
        if (s[0] >= '0' && s[0] <= '9' && !(s[0] == '0' && s[1]) && strlen(s) <= 10 &&
            strspn(s, "0123456789") == strlen(s)) {
                long long v = strtoll(s, NULL, 10);
                if (v <= INT_MAX) {
                        *ret = (int)v;
                        return true;
                }
        }
        struct problem p = {0};
        pools_refuse_node(&p, s);
        resp_problem(resp, &p);
        return false;
}

bool api_page_size(const char *s, uint64_t *ret, struct resp *resp)
{
        uint64_t ps;
        if (parse_page_size(s, &ps) < 0) {
                struct problem p = {0};
                char why[200];

                /* Not a page size at all ("2MB", "2m", "1.5G"): the shared
                 * grammar says what was wrong and what to write. */
                hpw_size_explain(s, true, why, sizeof(why));
                problem_raise(&p, PROBLEM_INVALID_FIELD, "page size: %s", why);
                resp_problem(resp, &p);
                return false;
        }
        *ret = ps;
        return true;
}

bool api_path_target(const struct req *req, struct resp *resp, int *ret_node, uint64_t *ret_page_size)
{
        struct problem p = {0};

        if (!api_node_id(req->params[0], ret_node, resp))
                return false;
        if (pools_check_node(req->app->pools, *ret_node, &p) < 0) {
                resp_problem(resp, &p);
                return false;
        }
        if (!ret_page_size)
                return true;
        if (!api_page_size(req->params[1], ret_page_size, resp))
                return false;
        if (pools_check_page_size(req->app->pools, *ret_page_size, &p) < 0) {
                resp_problem(resp, &p);
                return false;
        }
        return true;
}

bool api_parse_whole(const char *s, uint64_t max, uint64_t *ret)
{
        if (!*s || strlen(s) > 20)
                return false;
        for (const char *c = s; *c; c++)
                if (*c < '0' || *c > '9')
                        return false;
        errno = 0;
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end || v > max)
                return false;
        *ret = v;
        return true;
}

bool api_wait_timeout(const char *s, uint64_t *ret, struct resp *resp)
{
        *ret = WAIT_TIMEOUT_DEFAULT_S;
        if (s && !api_parse_whole(s, WAIT_TIMEOUT_MAX_S, ret)) {
                api_invalid(resp, "timeout must be whole seconds from 0 to 300");
                return false;
        }
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

