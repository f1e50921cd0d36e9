/* Unit tests for elastic pools in the pool core (pools_elastic.c,
 * pools_policy.c, admission's hook) on the fixture sysfs, with a fake
 * kernel whose nr_hugepages writes move free_hugepages as the real one does
 * (only free pages go).  Give-backs are awaited by polling with a generous
 * bound, never timed. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_engine.h"
#include "fixture.h"
#include "pools.h"
#include "pools_env.h"
#include "sysfs.h"

#define NR0 HP_DIR(0) "nr_hugepages"
#define FREE0 HP_DIR(0) "free_hugepages"
#define GIG (UINT64_C(1) << 30)

/* The most pages the fake kernel's pool can grow to: a write beyond it
 * gets this many, with no error, as the real kernel answers when it finds
 * no more contiguous memory (1 GiB pages run out first). */
static uint64_t fk_cap = UINT64_MAX;

/* The kernel's rule for a write to nr_hugepages: pages in use stay. */
static int fk_write(const struct sysfs *fs, const char *path, uint64_t v, void *userdata)
{
        size_t n = strlen(path), t = strlen("/nr_hugepages");
        uint64_t prev, free_;
        char p_free[256];

        if (n < t || strcmp(path + n - t, "/nr_hugepages") != 0)
                return sysfs_default_ops.write_u64(fs, path, v, userdata);
        snprintf(p_free, sizeof(p_free), "%.*sfree_hugepages", (int)(n - t + 1), path);
        CHECK_INT(sysfs_default_ops.read_u64(fs, path, &prev, NULL), ==, 0);
        CHECK_INT(sysfs_default_ops.read_u64(fs, p_free, &free_, NULL), ==, 0);
        uint64_t in_use = prev - free_, now = v < in_use ? in_use : v;
        if (now > prev && now > fk_cap)
                now = fk_cap > prev ? fk_cap : prev;
        CHECK_INT(sysfs_default_ops.write_u64(fs, path, now, NULL), ==, 0);
        CHECK_INT(sysfs_default_ops.write_u64(fs, p_free, now - in_use, NULL), ==, 0);
        return 0;
}

static const struct sysfs_ops fk_ops = { .read_u64 = NULL, .write_u64 = fk_write };

static int fk_read(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        return sysfs_default_ops.read_u64(fs, path, ret, userdata);
}

static struct sysfs_ops ops;

/* Node 0 with TOTAL pages of which FREE are free, the fake kernel on. */
static void elastic_env(struct env *e, uint64_t total, uint64_t free_)
{
        char buf[32];

        env_init(e);
        snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)total);
        fixture_write(e->sys, NR0, buf);
        snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)free_);
        fixture_write(e->sys, FREE0, buf);
        ops = fk_ops;
        ops.read_u64 = fk_read;
        sysfs_set_ops(e->fs, &ops, NULL);
}

static uint64_t count(const struct env *e, const char *rel)
{
        char buf[32];

        fixture_read(e->sys, rel, buf, sizeof(buf));
        return strtoull(buf, NULL, 10);
}

static struct elastic_policy_record pol(uint64_t min, uint64_t max, uint64_t headroom, uint64_t idle)
{
        return (struct elastic_policy_record){ .node = 0, .page_size = PAGE, .min = min, .max = max,
                                                .headroom = headroom, .idle_seconds = idle };
}

static int set(struct pools *p, struct elastic_policy_record x, struct problem *err)
{
        struct elastic_view v;

        memset(err, 0, sizeof(*err));
        return pools_set_elastic(p, &x, &v, err);
}

/* Poll until node 0's pool gave pages back and nr_hugepages is WANT: the
 * give-back is noted after its write and read-back, so the counters are
 * settled then (a 60 s bound only against a hang: the verdict is the
 * count, not the time). */
static void wait_total(struct pools *p, const struct env *e, uint64_t want)
{
        struct elastic_view ev = {0};

        for (int i = 0; i < 6000; i++) {
                CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
                if (ev.last == ELASTIC_RETURN && count(e, NR0) == want)
                        break;
                usleep(10 * 1000);
        }
        CHECK_STR(elastic_action_name(ev.last), "returned");
        CHECK_U64(count(e, NR0), ==, want);
}

TEST(pool_beyond_free_grows_the_pool)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        struct elastic_view ev;
        elastic_env(&e, 4, 4);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(0, 64, 0, 3600), &err), ==, 0);
        struct pool_req r = req("a", 0, 10);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_U64(count(&e, NR0), ==, 10);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
        CHECK_STR(elastic_action_name(ev.last), "grown");
        CHECK_U64(ev.last_pages, ==, 6);
        CHECK_U64(ev.grown_total, ==, 6);
        CHECK(strstr(ev.last_why, "on demand"));
        env_fini_hooked(&e, p);
}

TEST(static_pool_does_not_grow)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        elastic_env(&e, 4, 4);
        struct pools *p = start(&e);

        struct pool_req r = req("a", 0, 10);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK_U64(count(&e, NR0), ==, 4);
        env_fini_hooked(&e, p);
}

TEST(growth_beyond_max_is_refused_and_writes_nothing)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        elastic_env(&e, 4, 4);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(0, 8, 0, 3600), &err), ==, 0);
        struct pool_req r = req("a", 0, 10);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK_STR(err.slug, "insufficient-hugepages");
        CHECK_INT(err.status, ==, 409);
        CHECK(strstr(err.detail, "max of 8 pages"));
        CHECK_U64(count(&e, NR0), ==, 4);
        env_fini_hooked(&e, p);
}

/* What a best-effort 1 GiB policy meets when the node has no free gigabyte
 * left: the kernel gives fewer pages than the growth asks.  The pool is
 * refused with the counts, the node's count is back where it was, and the
 * policy's `last` says the growth failed (not the move before it). */
TEST(growth_the_kernel_cuts_short_is_refused_undone_and_shown)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        struct elastic_view ev;
        elastic_env(&e, 4, 4);
        struct pools *p = start(&e);

        fk_cap = 7;
        CHECK_INT(set(p, pol(0, 64, 0, 3600), &err), ==, 0);
        struct pool_req r = req("a", 0, 10);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK_STR(err.slug, "insufficient-hugepages");
        CHECK(err.has_counts);
        CHECK_U64(err.requested, ==, 10);
        CHECK_U64(err.achieved, ==, 7);
        CHECK(strstr(err.detail, "the kernel gave fewer pages (count restored)"));
        CHECK_U64(count(&e, NR0), ==, 4);
        CHECK_U64(count(&e, FREE0), ==, 4);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
        CHECK_STR(elastic_action_name(ev.last), "refused");
        CHECK_U64(ev.last_pages, ==, 6);
        CHECK_STR(ev.last_why, "a growth on demand failed: the kernel gave 3 of 6 pages (count restored)");
        CHECK_U64(ev.grown_total, ==, 0);
        CHECK_U64(ev.returned_total, ==, 0);
        /* A pool the kernel can hold still grows as before. */
        struct pool_req small = req("b", 0, 7);
        CHECK_INT(create(p, &small, &v, &err), ==, CREATED);
        CHECK_U64(count(&e, NR0), ==, 7);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
        CHECK_STR(elastic_action_name(ev.last), "grown");
        CHECK_U64(ev.grown_total, ==, 3);
        env_fini_hooked(&e, p);
}

TEST(min_is_grown_at_once)
{
        struct env e;
        struct problem err;
        elastic_env(&e, 0, 0);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(6, 16, 0, 3600), &err), ==, 0);
        CHECK_U64(count(&e, NR0), ==, 6);
        env_fini_hooked(&e, p);
}

TEST(idle_free_pages_go_back_down_to_headroom)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 20, 20);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(0, 64, 4, 1), &err), ==, 0);
        wait_total(p, &e, 4);
        CHECK_U64(count(&e, FREE0), ==, 4);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
        CHECK_STR(elastic_action_name(ev.last), "returned");
        CHECK_U64(ev.returned_total, ==, 16);
        env_fini_hooked(&e, p);
}

/* A large give-back goes in steps (admission free between them) and is
 * told once, whole. */
TEST(a_large_give_back_goes_in_steps)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 200, 200);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(0, 256, 4, 1), &err), ==, 0);
        wait_total(p, &e, 4);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
        CHECK_U64(ev.returned_total, ==, 196);
        CHECK_U64(ev.last_pages, ==, 196);
        env_fini_hooked(&e, p);
}

TEST(pages_in_use_stay)
{
        struct env e;
        struct problem err;
        elastic_env(&e, 20, 8); /* 12 in use by someone */
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(0, 64, 2, 1), &err), ==, 0);
        wait_total(p, &e, 14);
        CHECK_U64(count(&e, FREE0), ==, 2);
        env_fini_hooked(&e, p);
}

TEST(never_below_min)
{
        struct env e;
        struct problem err;
        elastic_env(&e, 20, 20);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(9, 64, 0, 1), &err), ==, 0);
        wait_total(p, &e, 9);
        env_fini_hooked(&e, p);
}

/* A warm admitted and not yet faulted holds the node: its pages still
 * count as free.  The upkeep says so, and the pool stays. */
TEST(no_give_back_while_a_warm_is_not_faulted)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        struct elastic_view ev;
        elastic_env(&e, 20, 20);
        struct pools *p = start(&e);

        struct pool_req r = req("a", 0, 8);
        create_gated(p, &r, &v, &err);
        CHECK_INT(set(p, pol(0, 64, 0, 1), &err), ==, 0);
        for (int i = 0; i < 6000; i++) {
                CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
                if (ev.decision && strstr(ev.decision, "not yet faulted"))
                        break;
                usleep(10 * 1000);
        }
        CHECK(ev.decision && strstr(ev.decision, "not yet faulted"));
        CHECK_U64(count(&e, NR0), ==, 20);
        fake_gate_set(false);
        wait_state(p, "a", POOL_READY);
        env_fini_hooked(&e, p);
}

TEST(hostile_policies_change_nothing)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 4, 4);
        struct pools *p = start(&e);
        const struct {
                const char *rule;
                struct elastic_policy_record x;
                int want;
                const char *slug;
        } t[] = {
                { "min above max", pol(9, 8, 0, 1), -EINVAL, "invalid-field" },
                { "headroom above max", pol(0, 8, 9, 1), -EINVAL, "invalid-field" },
                { "max zero", pol(0, 0, 0, 1), -EINVAL, "invalid-field" },
                { "idle zero", pol(0, 8, 0, 0), -EINVAL, "invalid-field" },
                { "overflowing max", pol(0, UINT64_MAX, 0, 1), -EINVAL, "invalid-field" },
                { "max beyond the memory floor", pol(0, 1 << 20, 0, 1), -ENOMEM, "insufficient-memory" },
                { "min beyond free memory", pol(3000, 3800, 0, 1), -ENOMEM, "insufficient-memory" },
                { "unknown node", { .node = 7, .page_size = PAGE, .max = 8, .idle_seconds = 1 }, -ENOENT,
                  "unknown-node" },
                { "negative node", { .node = -1, .page_size = PAGE, .max = 8, .idle_seconds = 1 }, -ENOENT,
                  "unknown-node" },
                { "unknown page size", { .node = 0, .page_size = 4096, .max = 8, .idle_seconds = 1 }, -ENOENT,
                  "unknown-page-size" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                printf("  %s\n", t[i].rule);
                CHECK_INT(set(p, t[i].x, &err), ==, t[i].want);
                CHECK_STR(err.slug, t[i].slug);
                CHECK_INT(pools_get_elastic(p, t[i].x.node, t[i].x.page_size, &ev), ==, -ENOENT);
                CHECK_U64(count(&e, NR0), ==, 4);
        }
        env_fini_hooked(&e, p);
}

static void write_proc(const struct env *e, const char *name, const char *text)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", e->proc, name);
        write_file(path, text);
}

TEST(gigantic_without_cma_is_refused_unless_best_effort)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 4, 4);
        write_proc(&e, "meminfo", "MemTotal: 16000000 kB\nCmaTotal: 0 kB\nCmaFree: 0 kB\n");
        write_proc(&e, "cmdline", "root=/dev/vda1\n");
        struct pools *p = start(&e);
        struct elastic_policy_record g = { .node = 0, .page_size = GIG, .min = 0, .max = 2, .idle_seconds = 60 };

        CHECK_INT(pools_runtime_growth(p, 0, GIG), ==, ELASTIC_GROWTH_BEST_EFFORT);
        CHECK_INT(pools_runtime_growth(p, 0, PAGE), ==, ELASTIC_GROWTH_RELIABLE);
        CHECK_INT(pools_set_elastic(p, &g, &ev, &err), ==, -EPERM);
        CHECK_STR(err.slug, "growth-not-reliable");
        CHECK(strstr(err.detail, "hugetlb_cma"));
        CHECK_INT(pools_get_elastic(p, 0, GIG, &ev), ==, -ENOENT);
        g.allow_best_effort = true;
        memset(&err, 0, sizeof(err));
        CHECK_INT(pools_set_elastic(p, &g, &ev, &err), ==, 0);
        CHECK_STR(elastic_growth_name(ev.runtime_growth), "best-effort");
        env_fini_hooked(&e, p);
}

TEST(gigantic_with_cma_is_reliable)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 4, 4);
        write_proc(&e, "meminfo", "MemTotal: 16000000 kB\nCmaTotal: 4194304 kB\nCmaFree: 3145728 kB\n");
        write_proc(&e, "cmdline", "root=/dev/vda1 hugetlb_cma=0:4G\n");
        struct pools *p = start(&e);
        struct elastic_policy_record g = { .node = 0, .page_size = GIG, .min = 0, .max = 2, .idle_seconds = 60 };

        CHECK_INT(pools_set_elastic(p, &g, &ev, &err), ==, 0);
        CHECK_STR(elastic_growth_name(ev.runtime_growth), "reliable");
        CHECK_U64(ev.cma_total_bytes, ==, UINT64_C(4) << 30);
        CHECK_U64(ev.cma_free_bytes, ==, UINT64_C(3) << 30);
        CHECK_INT(pools_runtime_growth(p, 1, GIG), ==, ELASTIC_GROWTH_BEST_EFFORT);
        env_fini_hooked(&e, p);
}

TEST(restart_keeps_the_policy)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 4, 4);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(1, 40, 3, 77), &err), ==, 0);
        pools_free(p);
        p = start(&e);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
        CHECK_U64(ev.policy.min, ==, 1);
        CHECK_U64(ev.policy.max, ==, 40);
        CHECK_U64(ev.policy.headroom, ==, 3);
        CHECK_U64(ev.policy.idle_seconds, ==, 77);
        env_fini_hooked(&e, p);
}

TEST(config_policy_replaces_the_saved_one)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 4, 4);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(1, 40, 3, 77), &err), ==, 0);
        pools_free(p);
        struct elastic_policy_record c = pol(0, 20, 2, 9);
        e.cfg.elastic = &c;
        e.cfg.n_elastic = 1;
        p = start(&e);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
        CHECK_U64(ev.policy.max, ==, 20);
        env_fini_hooked(&e, p);
}

TEST(delete_makes_the_pool_static)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 20, 20);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(0, 64, 4, 3600), &err), ==, 0);
        CHECK_INT(pools_delete_elastic(p, 0, PAGE, &err), ==, 0);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, -ENOENT);
        memset(&err, 0, sizeof(err));
        CHECK_INT(pools_delete_elastic(p, 0, PAGE, &err), ==, -ENOENT);
        CHECK_STR(err.slug, "policy-not-found");
        /* Its size is the node's reservation now: a reboot (a new boot
         * id, the kernel's count gone) gets it back. */
        pools_free(p);
        write_file(e.boot, "99999999-2222-3333-4444-555555555555\n");
        fixture_write(e.sys, NR0, "3\n");
        fixture_write(e.sys, FREE0, "3\n");
        p = start(&e);
        CHECK_U64(count(&e, NR0), ==, 20);
        env_fini_hooked(&e, p);
}

/* Policy changes and creations at once: every create either fits or gets
 * its 409, the pool never passes the max of the policy in force, and the
 * registry ends consistent. */
struct race {
        struct pools *p;
        int id;
};

static void *race_policies(void *arg)
{
        struct race *r = arg;
        for (int i = 0; i < 200; i++) {
                struct problem err;
                if (i % 3 == 2)
                        (void)pools_delete_elastic(r->p, 0, PAGE, &err);
                else
                        (void)set(r->p, pol(0, 16 + (uint64_t)(i % 2) * 8, 1, 3600), &err);
        }
        return NULL;
}

static void *race_creates(void *arg)
{
        struct race *r = arg;
        for (int i = 0; i < 50; i++) {
                char name[32];
                struct pool_view v;
                struct problem err;
                snprintf(name, sizeof(name), "r%d-%d", r->id, i);
                struct pool_req q = req(name, 0, 2);
                int rc = create(r->p, &q, &v, &err);
                CHECK(rc == CREATED || rc == -ENOMEM);
                if (rc == CREATED) {
                        wait_state(r->p, name, POOL_READY);
                        CHECK_INT(pools_delete(r->p, name, NULL), ==, 0);
                }
        }
        return NULL;
}

TEST(concurrent_policy_changes_and_creations)
{
        struct env e;
        elastic_env(&e, 0, 0);
        struct pools *p = start(&e);
        struct race a = { p, 0 }, b = { p, 1 }, c = { p, 2 };
        pthread_t t[3];

        CHECK_INT(pthread_create(&t[0], NULL, race_policies, &a), ==, 0);
        CHECK_INT(pthread_create(&t[1], NULL, race_creates, &b), ==, 0);
        CHECK_INT(pthread_create(&t[2], NULL, race_creates, &c), ==, 0);
        for (int i = 0; i < 3; i++)
                pthread_join(t[i], NULL);
        CHECK_U64(count(&e, NR0), <=, 24);
        struct pool_view *list = NULL;
        size_t n = 0;
        CHECK_INT(pools_list(p, &list, &n), ==, 0);
        CHECK_U64(n, ==, 0);
        free(list);
        env_fini_hooked(&e, p);
}

/* --fixed-hugepages: a policy cannot be set (hugepages-fixed, nothing
 * changed, min not grown to). */
TEST(fixed_policy_refused)
{
        struct env e;
        struct problem err;
        struct elastic_view ev;
        elastic_env(&e, 4, 4);
        e.cfg.fixed_hugepages = true;
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(8, 64, 0, 3600), &err), ==, -EROFS);
        CHECK_STR(err.slug, "hugepages-fixed");
        CHECK_INT(err.status, ==, 409);
        CHECK_U64(count(&e, NR0), ==, 4);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, -ENOENT);
        env_fini_hooked(&e, p);
}

/* A policy saved before the flag is kept but dormant: a pool beyond the
 * free pages is refused, not grown for; idle free pages are not given
 * back; deleting the policy still works and writes nothing. */
TEST(fixed_saved_policy_neither_grows_nor_gives_back)
{
        struct env e;
        struct problem err;
        struct pool_view v;
        struct elastic_view ev;
        elastic_env(&e, 20, 20);
        struct pools *p = start(&e);

        CHECK_INT(set(p, pol(0, 64, 4, 1), &err), ==, 0);
        pools_free(p);
        e.cfg.fixed_hugepages = true;
        p = start(&e);
        CHECK_INT(pools_get_elastic(p, 0, PAGE, &ev), ==, 0);
        struct pool_req r = req("a", 0, 24);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK(strstr(err.detail, "hugepages are fixed on this host"));
        CHECK_U64(count(&e, NR0), ==, 20);
        /* Past idle_seconds (1 s) and several upkeep looks: nothing back. */
        usleep(1500 * 1000);
        CHECK_U64(count(&e, NR0), ==, 20);
        CHECK_INT(pools_delete_elastic(p, 0, PAGE, &err), ==, 0);
        CHECK_U64(count(&e, NR0), ==, 20);
        env_fini_hooked(&e, p);
}

TEST_MAIN()
