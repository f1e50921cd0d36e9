/* Unit tests for the elastic planner (elastic.c; the policy rule is
 * record.c's, unit.record): pure
 * functions, driven by tables; and the journal's elastic_policies rows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "elastic.h"
#include "journal.h"

#define S UINT64_C(1000000000)

static const struct elastic_policy_record P = { .node = 0, .page_size = 2 << 20, .min = 2, .max = 32,
                                                 .headroom = 4, .idle_seconds = 10 };
static const struct elastic_policy_record MIN10 = { .node = 0, .page_size = 2 << 20, .min = 10, .max = 32,
                                                     .headroom = 0, .idle_seconds = 10 };

struct plan_case {
        const char *rule;
        const struct elastic_policy_record *pol;
        struct elastic_counts c;
        uint64_t demand;
        struct elastic_idle idle;
        uint64_t now;
        enum elastic_action action;
        uint64_t pages, target;
        bool idle_tracking_after;
};

static const struct plan_case cases[] = {
        { "a demand that fits keeps the pool", &P, { 16, 10, 0, 0 }, 8, {0}, 0, ELASTIC_KEEP, 0, 16, false },
        { "a demand beyond free grows by what is missing", &P, { 16, 4, 0, 0 }, 8, {0}, 0, ELASTIC_GROW, 4, 20, false },
        { "a demand beyond max is refused with the room left", &P, { 30, 0, 0, 0 }, 8, {0}, 0, ELASTIC_REFUSE, 2, 30,
          false },
        { "pages warms still need are not free", &P, { 16, 10, 4, 0 }, 8, {0}, 0, ELASTIC_GROW, 2, 18, false },
        { "other mappings' reservations are not free", &P, { 16, 10, 0, 5 }, 8, {0}, 0, ELASTIC_GROW, 3, 19, false },
        { "a growth forgets the idle history", &P, { 16, 0, 0, 0 }, 1, { true, 0, 9 }, 20 * S, ELASTIC_GROW, 1, 17,
          false },
        { "below min grows to min", &P, { 0, 0, 0, 0 }, 0, {0}, 0, ELASTIC_GROW, 2, 2, false },
        { "no give-back while a warm is admitted and not faulted", &P, { 20, 20, 1, 0 }, 0, { true, 0, 16 }, 99 * S,
          ELASTIC_KEEP, 0, 20, false },
        { "surplus first seen starts the idle period", &P, { 20, 20, 0, 0 }, 0, {0}, 0, ELASTIC_KEEP, 0, 20, true },
        { "surplus not idle long enough stays", &P, { 20, 20, 0, 0 }, 0, { true, 0, 16 }, 9 * S, ELASTIC_KEEP, 0, 20,
          true },
        { "surplus idle for idle_seconds goes, down to the headroom", &P, { 20, 20, 0, 0 }, 0, { true, 0, 16 },
          10 * S, ELASTIC_RETURN, 16, 4, false },
        { "only the fewest surplus pages seen in the period go", &P, { 20, 20, 0, 0 }, 0, { true, 0, 6 }, 10 * S,
          ELASTIC_RETURN, 6, 14, false },
        { "pages in use stay, with the headroom beyond them", &P, { 20, 8, 0, 0 }, 0, { true, 0, 99 }, 10 * S,
          ELASTIC_RETURN, 4, 16, false },
        { "other mappings' reservations stay", &P, { 20, 20, 0, 6 }, 0, { true, 0, 99 }, 10 * S, ELASTIC_RETURN, 10,
          10, false },
        { "never below min", &MIN10, { 20, 20, 0, 0 }, 0, { true, 0, 99 }, 10 * S, ELASTIC_RETURN, 10, 10, false },
        { "no surplus beyond the headroom keeps the pool", &P, { 6, 2, 0, 0 }, 0, { true, 0, 3 }, 99 * S,
          ELASTIC_KEEP, 0, 6, false },
        { "free pages above max go at once", &P, { 40, 40, 0, 0 }, 0, {0}, 0, ELASTIC_RETURN, 8, 32, false },
        { "above max, pages in use stay", &P, { 40, 4, 0, 0 }, 0, {0}, 0, ELASTIC_RETURN, 4, 36, false },
        { "a clock that went back gives nothing back", &P, { 20, 20, 0, 0 }, 0, { true, 100 * S, 16 }, 50 * S,
          ELASTIC_KEEP, 0, 20, true },
        { "huge counters do not overflow", &P, { UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX }, 0, {0}, 0,
          ELASTIC_KEEP, 0, UINT64_MAX, false },
        { "a huge demand is refused", &P, { 10, 10, 0, 0 }, UINT64_MAX, {0}, 0, ELASTIC_REFUSE, 22, 10, false },
};

TEST(plan_table)
{
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const struct plan_case *t = &cases[i];
                struct elastic_idle idle = t->idle;
                struct elastic_decision d;

                elastic_plan(t->pol, &t->c, t->demand, &idle, t->now, &d);
                printf("  %s\n", t->rule);
                CHECK_STR(elastic_action_name(d.action), elastic_action_name(t->action));
                CHECK_U64(d.pages, ==, t->pages);
                CHECK_U64(d.target, ==, t->target);
                CHECK_INT(idle.tracking, ==, t->idle_tracking_after);
                CHECK(d.why && *d.why);
        }
}

/* Demand moving within the headroom never moves the pool, however long. */
TEST(plan_no_oscillation_within_headroom)
{
        struct elastic_idle idle = {0};
        struct elastic_decision d;

        for (uint64_t t = 0; t < 1000; t++) {
                uint64_t used = 10 + t % 4; /* 10..13 in use of 14: headroom 4 covers it */
                struct elastic_counts c = { 14, 14 - used, 0, 0 };
                elastic_plan(&P, &c, 0, &idle, t * S, &d);
                CHECK_STR(elastic_action_name(d.action), "kept");
        }
}

/* After a give-back the next one needs a whole idle period again. */
TEST(plan_give_back_starts_a_new_period)
{
        struct elastic_idle idle = {0};
        struct elastic_decision d;
        struct elastic_counts c = { 20, 20, 0, 0 };

        elastic_plan(&P, &c, 0, &idle, 0, &d);
        elastic_plan(&P, &c, 0, &idle, 10 * S, &d);
        CHECK_STR(elastic_action_name(d.action), "returned");
        c = (struct elastic_counts){ 4, 4, 0, 0 };
        elastic_plan(&P, &c, 0, &idle, 11 * S, &d);
        CHECK_STR(elastic_action_name(d.action), "kept");
        /* Demand grows and falls again: the surplus must idle anew. */
        c = (struct elastic_counts){ 12, 12, 0, 0 };
        elastic_plan(&P, &c, 0, &idle, 12 * S, &d);
        elastic_plan(&P, &c, 0, &idle, 21 * S, &d);
        CHECK_STR(elastic_action_name(d.action), "kept");
        elastic_plan(&P, &c, 0, &idle, 22 * S, &d);
        CHECK_STR(elastic_action_name(d.action), "returned");
        CHECK_U64(d.pages, ==, 8);
}

TEST(cma_command_line)
{
        const struct {
                const char *cmdline;
                int node;
                bool on;
        } t[] = {
                { "BOOT_IMAGE=/vmlinuz root=/dev/sda1", 0, false },
                { "root=/dev/sda1 hugetlb_cma=4G quiet", 1, true },
                { "hugetlb_cma=0:2G,1:2G", 1, true },
                { "hugetlb_cma=0:2G,1:2G", 2, false },
                { "hugetlb_cma=0:2G,1:0", 1, false },
                { "hugetlb_cma=0", 0, false },
                { "xhugetlb_cma=4G", 0, false },
                { "hugetlb_cma=4G hugetlb_cma=1:1G", 0, false }, /* the last one wins */
                { "hugetlb_cma=garbage", 0, false },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                printf("  \"%s\" node %d\n", t[i].cmdline, t[i].node);
                CHECK_INT(elastic_cma_on_node(t[i].cmdline, t[i].node), ==, t[i].on);
        }
        CHECK(!elastic_cma_on_node(NULL, 0));
}

TEST(runtime_growth)
{
        const uint64_t G = UINT64_C(1) << 30;
        CHECK_STR(elastic_growth_name(elastic_runtime_growth(2 << 20, false, 0)), "reliable");
        CHECK_STR(elastic_growth_name(elastic_runtime_growth(G, true, 4 * G)), "reliable");
        CHECK_STR(elastic_growth_name(elastic_runtime_growth(G, true, 0)), "best-effort");
        CHECK_STR(elastic_growth_name(elastic_runtime_growth(G, false, 4 * G)), "best-effort");
}

static const char *JOURNAL_HEAD = "{\"version\":1,\"boot_id\":\"b\",\"reservations\":[],\"pools\":[]";

static int parse_with(const char *policies, struct journal **ret)
{
        char buf[1024];
        snprintf(buf, sizeof(buf), "%s,\"elastic_policies\":%s}", JOURNAL_HEAD, policies);
        return journal_parse(buf, strlen(buf), ret);
}

TEST(journal_round_trip)
{
        struct elastic_policy_record e[2] = {
                { 0, 2 << 20, 1, 64, 4, 30, false },
                { 1, UINT64_C(1) << 30, 0, 4, 0, 600, true },
        };
        struct journal j = { .boot_id = "b", .n_elastic = 2, .elastic = e }, *back = NULL;
        char *text = journal_format(&j);

        CHECK(text);
        CHECK_INT(journal_parse(text, strlen(text), &back), ==, 0);
        CHECK_U64(back->n_elastic, ==, 2);
        for (size_t i = 0; i < 2; i++) {
                const struct elastic_policy_record *b = &back->elastic[i];
                CHECK_INT(b->node, ==, e[i].node);
                CHECK_U64(b->page_size, ==, e[i].page_size);
                CHECK_U64(b->min, ==, e[i].min);
                CHECK_U64(b->max, ==, e[i].max);
                CHECK_U64(b->headroom, ==, e[i].headroom);
                CHECK_U64(b->idle_seconds, ==, e[i].idle_seconds);
                CHECK_INT(b->allow_best_effort, ==, e[i].allow_best_effort);
        }
        journal_free(back);
        free(text);
}

TEST(journal_without_policies_loads)
{
        char buf[256];
        struct journal *j = NULL;

        snprintf(buf, sizeof(buf), "%s}", JOURNAL_HEAD);
        CHECK_INT(journal_parse(buf, strlen(buf), &j), ==, 0);
        CHECK_U64(j->n_elastic, ==, 0);
        journal_free(j);
}

TEST(journal_refuses_bad_policies)
{
        const char *bad[] = {
                "{}",
                "[{\"node\":0,\"page_size_bytes\":2097152,\"min\":9,\"max\":8,\"headroom\":0,\"idle_seconds\":1,"
                "\"allow_best_effort\":false}]",
                "[{\"node\":0,\"page_size_bytes\":2097152,\"min\":0,\"max\":8,\"headroom\":0,\"idle_seconds\":0,"
                "\"allow_best_effort\":false}]",
                "[{\"node\":0,\"page_size_bytes\":3,\"min\":0,\"max\":8,\"headroom\":0,\"idle_seconds\":1,"
                "\"allow_best_effort\":false}]",
                "[{\"node\":0,\"page_size_bytes\":2097152,\"min\":0,\"max\":8,\"headroom\":0,\"idle_seconds\":1}]",
                "[{\"node\":0,\"page_size_bytes\":2097152,\"min\":0,\"max\":8,\"headroom\":0,\"idle_seconds\":1,"
                "\"allow_best_effort\":false},{\"node\":0,\"page_size_bytes\":2097152,\"min\":0,\"max\":9,"
                "\"headroom\":0,\"idle_seconds\":1,\"allow_best_effort\":false}]",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct journal *j = NULL;
                printf("  %s\n", bad[i]);
                CHECK_INT(parse_with(bad[i], &j), ==, -EINVAL);
        }
}

TEST_MAIN()
