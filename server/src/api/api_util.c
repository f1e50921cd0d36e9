/* api_util: capture resolution and common problems (see api_util.h). */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "api_util.h"
#include "app.h"
#include "topo.h"
#include "units.h"
#include "size.h"

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

void api_page_sizes_text(const struct topo *t, char *buf, size_t len)
{
        size_t off = 0;

        if (len == 0)
                return;
        buf[0] = '\0';
        for (size_t i = 0; t && i < t->n_page_sizes && off < len; i++) {
                char one[32];
                int n;

                format_size(t->page_sizes[i], one, sizeof(one));
                n = snprintf(buf + off, len - off, "%s%s", i == 0 ? "" : i + 1 == t->n_page_sizes ? " and " : ", ",
                             one);
                if (n < 0)
                        break;
                off += (size_t)n;
        }
        if (!buf[0])
                snprintf(buf, len, "no hugepage sizes");
}

bool api_find_page_size(const struct req *req, const char *s, uint64_t *ret, struct resp *resp)
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
        if (!topo_has_page_size(req->app->topo, ps)) {
                struct problem p = {0};
                char have[128];

                /* Suggest only sizes this host has (no 1G hint without 1G pages). */
                api_page_sizes_text(req->app->topo, have, sizeof(have));
                problem_raise(&p, PROBLEM_UNKNOWN_PAGE_SIZE,
                              "the kernel offers no hugepage size \"%.32s\" (this host has %s)", s, have);
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

