/* elastic: policy checks and the planner of elastic pools (elastic.h).
 * Pure: every number comes in as an argument. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elastic.h"

#define NS_PER_SEC UINT64_C(1000000000)

const char *elastic_growth_name(enum elastic_growth g)
{
        return g == ELASTIC_GROWTH_RELIABLE ? "reliable" : "best-effort";
}

const char *elastic_action_name(enum elastic_action a)
{
        switch (a) {
        case ELASTIC_GROW: return "grown";
        case ELASTIC_RETURN: return "returned";
        case ELASTIC_REFUSE: return "refused";
        case ELASTIC_KEEP: break;
        }
        return "kept";
}

/* Whether the size at S (up to a ',' or blank) is a nonzero memparse
 * number ("2G", "1024M", "0" is none). */
static bool nonzero_size(const char *s)
{
        char *end;
        unsigned long long v = strtoull(s, &end, 0);
        return end != s && v > 0;
}

bool elastic_cma_on_node(const char *cmdline, int node)
{
        const char *key = "hugetlb_cma=";
        bool on = false;

        if (!cmdline)
                return false;
        /* The last one on the line wins, as the kernel's early_param does. */
        for (const char *s = strstr(cmdline, key); s; s = strstr(s + 1, key)) {
                if (s != cmdline && s[-1] != ' ')
                        continue;
                const char *v = s + strlen(key);
                on = false;
                if (!strpbrk(v, ":") || (strcspn(v, ":") > strcspn(v, " "))) {
                        on = nonzero_size(v);
                        continue;
                }
                /* N:SIZE[,N:SIZE...] */
                while (*v && *v != ' ') {
                        char *end;
                        long n = strtol(v, &end, 10);
                        if (end == v || *end != ':')
                                break;
                        if (n == node && nonzero_size(end + 1))
                                on = true;
                        v = end + 1 + strcspn(end + 1, ", ");
                        if (*v == ',')
                                v++;
                }
        }
        return on;
}

enum elastic_growth elastic_runtime_growth(uint64_t page_size, bool cma_on_node, uint64_t cma_total)
{
        if (page_size < ELASTIC_GIGANTIC_BYTES)
                return ELASTIC_GROWTH_RELIABLE;
        return cma_on_node && cma_total > 0 ? ELASTIC_GROWTH_RELIABLE : ELASTIC_GROWTH_BEST_EFFORT;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void decide(struct elastic_decision *ret, enum elastic_action a, uint64_t pages, uint64_t target,
                   const char *why)
{
        *ret = (struct elastic_decision){ a, pages, target, why };
}

void elastic_plan(const struct elastic_policy_record *p, const struct elastic_counts *c, uint64_t demand,
                  struct elastic_idle *idle, uint64_t now_ns, struct elastic_decision *ret)
{
        uint64_t used = c->total > c->free ? c->total - c->free : 0;
        uint64_t taken = sat_add(c->needed, c->foreign);
        uint64_t avail = c->free > taken ? c->free - taken : 0;
        /* What must stay: pages in use, pages admitted warms will fault,
         * other mappings' reservations. */
        uint64_t held = sat_add(used, taken);

        if (demand > avail) {
                uint64_t grow = demand - avail;
                uint64_t room = p->max > c->total ? p->max - c->total : 0;

                *idle = (struct elastic_idle){0};
                if (grow > room) {
                        decide(ret, ELASTIC_REFUSE, room, c->total, "the demand does not fit under the policy's max");
                        return;
                }
                decide(ret, ELASTIC_GROW, grow, c->total + grow, "a pool or refill needed more pages than were free");
                return;
        }
        if (demand == 0 && c->total < p->min) {
                *idle = (struct elastic_idle){0};
                decide(ret, ELASTIC_GROW, p->min - c->total, p->min, "below the policy's min");
                return;
        }
        if (demand > 0) {
                decide(ret, ELASTIC_KEEP, 0, c->total, "the demand fits in the free pages");
                return;
        }
        if (c->needed > 0) {
                /* Never while a warm or refill is admitted but not faulted:
                 * its pages count as free until then. */
                *idle = (struct elastic_idle){0};
                decide(ret, ELASTIC_KEEP, 0, c->total, "a warm or refill on the node is not yet faulted");
                return;
        }
        if (c->total > p->max && held < c->total) {
                /* A max lowered below the pool: its free pages beyond max go
                 * at once (they are outside the policy, not idle surplus). */
                uint64_t target = held > p->max ? held : p->max;
                *idle = (struct elastic_idle){0};
                decide(ret, ELASTIC_RETURN, c->total - target, target, "above the policy's max");
                return;
        }
        uint64_t keep = sat_add(held, p->headroom);
        if (keep < p->min)
                keep = p->min;
        uint64_t surplus = c->total > keep ? c->total - keep : 0;
        if (surplus == 0) {
                *idle = (struct elastic_idle){0};
                decide(ret, ELASTIC_KEEP, 0, c->total, "no free pages beyond the headroom");
                return;
        }
        if (!idle->tracking) {
                *idle = (struct elastic_idle){ .tracking = true, .since_ns = now_ns, .low = surplus };
                decide(ret, ELASTIC_KEEP, 0, c->total, "free pages beyond the headroom, not idle long enough");
                return;
        }
        if (surplus < idle->low)
                idle->low = surplus;
        uint64_t idle_ns = p->idle_seconds > UINT64_MAX / NS_PER_SEC ? UINT64_MAX : p->idle_seconds * NS_PER_SEC;
        if (now_ns < idle->since_ns || now_ns - idle->since_ns < idle_ns) {
                decide(ret, ELASTIC_KEEP, 0, c->total, "free pages beyond the headroom, not idle long enough");
                return;
        }
        uint64_t give = idle->low;
        *idle = (struct elastic_idle){0};
        decide(ret, ELASTIC_RETURN, give, c->total - give, "free beyond the headroom for idle_seconds");
}
