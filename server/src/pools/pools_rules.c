/* pools_rules: the node and page-size rules, at the bottom of the pool core
 * (it calls no other pools file), so create, stock targets and policies all
 * take them from below.
 *
 * Every path that takes a node or a page size (create, stock targets,
 * policies, reservations, the node views) refuses an unknown one with these
 * words and no others: the handlers check only that the text is a number or
 * a page size (syntax), the rule is the core's, which knows the topology. */
#include <errno.h>
#include <stdio.h>

#include "pools_internal.h"
#include "units.h"
#include "util.h"

int pools_check_threads(uint64_t threads, struct problem *err)
{
        if (threads >= 1 && threads <= POOLS_THREADS_MAX)
                return 0;
        problem_raise(err, PROBLEM_INVALID_FIELD,
                      "\"threads\" must be 1 to %d (leave it out for all of the node's workers)", POOLS_THREADS_MAX);
        return -EINVAL;
}

int pools_check_label(const char *label, struct problem *err)
{
        assert_return(label, -EINVAL);
        if (pool_label_valid(label))
                return 0;
        problem_raise(err, PROBLEM_INVALID_FIELD, POOL_LABEL_RULE " (leave it out for none)");
        return -EINVAL;
}

void pools_refuse_node(struct problem *err, const char *node)
{
        problem_raise(err, PROBLEM_UNKNOWN_NODE, "there is no NUMA node %.64s", node);
}

int pools_check_node(const struct pools *p, int node, struct problem *err)
{
        assert_return(p, -EINVAL);
        char text[16];

        if (topo_node(p->cfg.topo, node))
                return 0;
        snprintf(text, sizeof(text), "%d", node);
        pools_refuse_node(err, text);
        return -ENOENT;
}

/* "2M and 1G": the sizes the host has, so the refusal hints only at those. */
static void page_sizes_text(const struct topo *t, char *buf, size_t len)
{
        size_t off = 0;

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

int pools_check_page_size(const struct pools *p, uint64_t page_size, struct problem *err)
{
        assert_return(p, -EINVAL);
        char have[128], asked[32];

        if (topo_has_page_size(p->cfg.topo, page_size))
                return 0;
        format_size(page_size, asked, sizeof(asked));
        page_sizes_text(p->cfg.topo, have, sizeof(have));
        problem_raise(err, PROBLEM_UNKNOWN_PAGE_SIZE, "the kernel offers no hugepage size %s (this host has %s)",
                      asked, have);
        return -ENOENT;
}

int pools_check_node_page_size(const struct pools *p, int node, uint64_t page_size, struct problem *err)
{
        int r = pools_check_node(p, node, err);

        return r < 0 ? r : pools_check_page_size(p, page_size, err);
}

