/* Unit tests for the create path (pools_create.c) and what a create leaves
 * behind: validation, the lifecycle a PUT starts, admission on the node's
 * free pages, a failed or cancelled warm, a PUT racing a DELETE, and a save
 * that fails.
 *
 * In pools_env.h's environment: a copy of the two-node sysfs fixture stands
 * in for /sys, a directory in /dev/shm (tmpfs) for the hugetlbfs mount, and
 * the real engine runs with fake_engine.h's gated ops: mmap/munmap/madvise
 * are the real calls on the tmpfs file (so st_blocks tells the truth at
 * restart) behind a gate the test opens and closes, with injectable populate
 * errors; mbind and move_pages are fakes (the fixture's node 1 does not exist
 * on this machine). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "child.h"
#include "engine.h"
#include "fake_engine.h"
#include "fixture.h"
#include "journal.h"
#include "pools.h"
#include "pools_env.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

TEST(validation)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r;

        env_init(&e);
        e.cfg.max_pool_bytes = 32 * PAGE;
        p = start(&e);

        const char *bad_names[] = { "", ".hidden", "-x", "a/b", "a b", "\xc3\xa9", "a:b", "..", "a\nb" };
        for (size_t i = 0; i < ARRAY_SIZE(bad_names); i++) {
                r = req("x", 0, 1);
                snprintf(r.name, sizeof(r.name), "%s", bad_names[i]);
                CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
                CHECK_INT(err.status, ==, 422);
                CHECK_STR(err.slug, "invalid-field");
        }
        r = req("a.b_c-9", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "a.b_c-9", POOL_READY);

        r = req("n5", 5, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOENT);
        CHECK_INT(err.status, ==, 404);
        CHECK_STR(err.slug, "unknown-node");

        r = req("ps", 0, 1);
        r.page_size = 4096;
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOENT);
        CHECK_STR(err.slug, "unknown-page-size");

        r = req("odd", 0, 1);
        r.size_bytes = PAGE + 4096;
        CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
        CHECK_INT(err.status, ==, 422);
        r.size_bytes = 0;
        CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);

        /* The fixture offers 1 GiB pages, but no mount is configured for
         * them.  Input over a limit is refused first (bad input is 4xx
         * whatever the host's setup), then the missing directory. */
        r = req("gig", 0, 1);
        r.page_size = r.size_bytes = GIB;
        CHECK_INT(create(p, &r, &v, &err), ==, -EFBIG);
        CHECK_STR(err.slug, "pool-too-large");
        pools_free(p);
        e.cfg.max_pool_bytes = 0;
        p = start(&e);
        err = (struct problem){0};
        CHECK_INT(create(p, &r, &v, &err), ==, -ENODEV);
        CHECK_INT(err.status, ==, 503);
        CHECK_STR(err.slug, "no-hugetlbfs");
        pools_free(p);
        e.cfg.max_pool_bytes = 32 * PAGE;
        p = start(&e);

        r = req("big", 0, 33);
        CHECK_INT(create(p, &r, &v, &err), ==, -EFBIG);
        CHECK_INT(err.status, ==, 413);
        CHECK_STR(err.slug, "pool-too-large");

        r = req("ttl", 0, 1);
        r.ttl_seconds = UINT64_MAX;
        CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
        CHECK_INT(err.status, ==, 422);
        CHECK_STR(err.slug, "invalid-field");
        CHECK(strstr(err.detail, "ttl_seconds"));
        r.ttl_seconds = POOLS_TTL_MAX + 1;
        CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
        CHECK_INT(err.status, ==, 422);
        CHECK_STR(err.slug, "invalid-field");
        CHECK(!file_exists(&e, "ttl"));
        r.ttl_seconds = POOLS_TTL_MAX;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "ttl", POOL_READY);
        CHECK_INT(pools_get(p, "ttl", &v, NULL), ==, 0);
        CHECK_INT(v.expires_at, ==, v.finished_at + (int64_t)POOLS_TTL_MAX);
        CHECK_INT(pools_delete(p, "ttl", NULL), ==, 0);

        /* Nothing of the refused ones exists. */
        CHECK(!file_exists(&e, "n5") && !file_exists(&e, "big") && !file_exists(&e, "odd"));
        CHECK_INT(pools_get(p, "big", &v, NULL), ==, -ENOENT);
        pools_free(p);
        env_fini(&e);
}

/* The node and page-size rules are the core's, in one wording each, the
 * same for create, stock targets and policies: the node as a number, and
 * the page sizes this host has named in the page-size refusal. */
TEST(node_and_page_size_rules_have_one_wording)
{
        struct env e;
        struct pool_view v;
        struct problem err = {0};

        env_init(&e);
        struct pools *p = start(&e);
        struct pool_req r = req("n", 5, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOENT);
        CHECK_STR(err.detail, "there is no NUMA node 5");
        r = req("n", -1, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOENT);
        CHECK_STR(err.detail, "there is no NUMA node -1");
        r = req("ps", 0, 1);
        r.page_size = 4 << 20;
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOENT);
        CHECK_STR(err.detail, "the kernel offers no hugepage size 4M (this host has 2M and 1G)");

        /* The entries the handlers call where no pools_* entry answers. */
        CHECK_INT(pools_check_node(p, 0, &err), ==, 0);
        CHECK_INT(pools_check_page_size(p, PAGE, &err), ==, 0);
        CHECK_INT(pools_check_node(p, 7, &err), ==, -ENOENT);
        CHECK_STR(err.slug, "unknown-node");
        CHECK_STR(err.detail, "there is no NUMA node 7");
        CHECK_INT(pools_check_page_size(p, 4096, &err), ==, -ENOENT);
        CHECK_STR(err.slug, "unknown-page-size");
        CHECK_STR(err.detail, "the kernel offers no hugepage size 4K (this host has 2M and 1G)");
        pools_refuse_node(&err, "4294967296");
        CHECK_INT(err.status, ==, 404);
        CHECK_STR(err.detail, "there is no NUMA node 4294967296");
        CHECK(!file_exists(&e, "n") && !file_exists(&e, "ps"));
        pools_free(p);
        env_fini(&e);
}

/* threads and label: the core's rules, one wording each, which
 * pools_create applies and PUT /v1/pools calls with the body's numbers
 * (api.responses: a PUT with threads 0 is refused 422). */
TEST(threads_and_label_rules_are_the_cores)
{
        struct env e;
        struct pool_view v;
        struct problem err = {0};

        env_init(&e);
        struct pools *p = start(&e);
        struct pool_req r = req("t", 0, 1);
        r.threads = POOLS_THREADS_MAX + 1;
        CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
        CHECK_STR(err.slug, "invalid-field");
        CHECK_STR(err.detail, "\"threads\" must be 1 to 4096 (leave it out for all of the node's workers)");
        CHECK_INT(pools_check_threads(0, &err), ==, -EINVAL);
        CHECK_STR(err.detail, "\"threads\" must be 1 to 4096 (leave it out for all of the node's workers)");
        CHECK_INT(pools_check_threads(UINT64_C(1) << 32, &err), ==, -EINVAL);
        CHECK_INT(pools_check_threads(POOLS_THREADS_MAX, &err), ==, 0);
        r = req("l", 0, 1);
        snprintf(r.label, sizeof(r.label), "-bad");
        CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
        CHECK_STR(err.detail, POOL_LABEL_RULE " (leave it out for none)");
        CHECK_INT(pools_check_label("", &err), ==, -EINVAL);
        CHECK_INT(pools_check_label("libvirt:abc", &err), ==, 0);
        CHECK(!file_exists(&e, "t") && !file_exists(&e, "l"));
        pools_free(p);
        env_fini(&e);
}

/* A size no file can have (2^63 bytes and more, a multiple of the page
 * size) is refused as such, before admission: not a 409 for want of pages
 * nor a file error. */
TEST(size_past_a_file_refused)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        uint64_t sizes[] = { UINT64_C(1) << 63, UINT64_MAX - (UINT64_MAX % PAGE) };

        env_init(&e);
        struct pools *p = start(&e);
        for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
                struct pool_req r = req("huge", 0, 1);
                r.size_bytes = sizes[i];
                CHECK_INT(create(p, &r, &v, &err), ==, -EINVAL);
                CHECK_STR(err.slug, "invalid-field");
                CHECK(strstr(err.detail, "larger than a file can be"));
                CHECK(!file_exists(&e, "huge"));
        }
        pools_free(p);
        env_fini(&e);
}

TEST(lifecycle)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("vm1", 0, 8);
        struct stat st;
        char path[256];
        struct pools *p = env_start(&e);

        fake_gate_set(true);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_STR(pool_state_name(v.state), "warming");
        CHECK_U64(v.size_bytes, ==, 8 * PAGE);
        snprintf(path, sizeof(path), "%s/vm1", e.mount);
        CHECK_STR(v.path, path);
        CHECK_INT(stat(path, &st), ==, 0);
        CHECK_INT(st.st_mode & 0777, ==, 0660);
        CHECK_U64(st.st_size, ==, 8 * PAGE);

        /* Saved before reported. */
        struct journal *j = load(&e);
        CHECK(jpool(j, "vm1"));
        CHECK_STR(pool_state_name(jpool(j, "vm1")->state), "warming");
        CHECK_STR(j->boot_id, "11111111-2222-3333-4444-555555555555");
        journal_free(j);

        /* A wait that times out still fills the view. */
        wait_inside();
        uint64_t t0 = now_mono_ns();
        CHECK_INT(pools_wait(p, "vm1", deadline_in(0.2), &v), ==, 0);
        CHECK_U64(now_mono_ns() - t0, >=, 150 * 1000 * 1000);
        CHECK_STR(pool_state_name(v.state), "warming");

        uint64_t warm, warming;
        pools_node_usage(p, 0, PAGE, &warm, &warming);
        CHECK_U64(warm, ==, 0);

        /* Claim is refused while warming. */
        CHECK_INT(pools_claim(p, "vm1", &v, NULL), ==, -EBUSY);

        fake_gate_set(false);
        wait_state(p, "vm1", POOL_READY);
        CHECK_INT(pools_get(p, "vm1", &v, NULL), ==, 0);
        CHECK_U64(v.bytes_done, ==, 8 * PAGE);
        CHECK(v.placement_verified);
        CHECK_U64(v.pages_off_node, ==, 0);
        CHECK_INT(v.expires_at, ==, 0);
        CHECK(v.finished_at > 0);
        pools_node_usage(p, 0, PAGE, &warm, &warming);
        CHECK_U64(warm, ==, 8);
        CHECK_U64(warming, ==, 0);

        /* "ready" is shown before it is saved (a crash in between only
         * resumes a finished populate); the save follows at once. */
        for (int tries = 0;; tries++) {
                j = load(&e);
                if (jpool(j, "vm1")->state == POOL_READY)
                        break;
                journal_free(j);
                CHECK(tries < 5000);
                usleep(1000);
        }
        journal_free(j);

        /* Idempotent: the same pool again -> 200 and the view; "reserve"
         * is how to admit a new pool and does not count. */
        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, EXISTED);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK_INT(v.ttl_seconds, ==, 0);
        r.reserve = false;
        /* Every field the pool keeps counts: another TTL
         * or thread count is another pool, 409 naming the field. */
        r.ttl_seconds = 77;
        CHECK_INT(create(p, &r, &v, &err), ==, -EEXIST);
        CHECK_STR(err.slug, "pool-conflict");
        CHECK(strstr(err.detail, "\"ttl_seconds\": 77 asked"));
        r.ttl_seconds = 0;
        r.threads = 1;
        CHECK_INT(create(p, &r, &v, &err), ==, -EEXIST);
        CHECK(strstr(err.detail, "\"threads\": 1 asked"));
        r.threads = 0;
        CHECK_INT(pools_get(p, "vm1", &v, NULL), ==, 0);
        CHECK_INT(v.ttl_seconds, ==, 0);

        /* Same name, different pool. */
        struct pool_req other = req("vm1", 0, 4);
        CHECK_INT(create(p, &other, &v, &err), ==, -EEXIST);
        CHECK_INT(err.status, ==, 409);
        CHECK_STR(err.slug, "pool-conflict");
        other = req("vm1", 1, 8);
        CHECK_INT(create(p, &other, &v, &err), ==, -EEXIST);

        CHECK_INT(pools_claim(p, "vm1", &v, NULL), ==, 0);
        CHECK(v.claimed);
        CHECK_INT(pools_claim(p, "vm1", &v, NULL), ==, 0);
        j = load(&e);
        CHECK(jpool(j, "vm1")->claimed);
        journal_free(j);

        struct pool_view *list;
        size_t n;
        CHECK_INT(pools_list(p, &list, &n), ==, 0);
        CHECK_U64(n, ==, 1);
        CHECK_STR(list[0].name, "vm1");
        free(list);

        CHECK_INT(pools_delete(p, "vm1", NULL), ==, 0);
        CHECK(!file_exists(&e, "vm1"));
        CHECK_INT(pools_get(p, "vm1", &v, NULL), ==, -ENOENT);
        CHECK_INT(pools_delete(p, "vm1", NULL), ==, -ENOENT);
        CHECK_INT(pools_claim(p, "vm1", &v, NULL), ==, -ENOENT);
        CHECK_INT(pools_wait(p, "vm1", deadline_in(1), &v), ==, -ENOENT);
        j = load(&e);
        CHECK(!jpool(j, "vm1"));
        journal_free(j);

        struct pools_stats s;
        pools_get_stats(p, &s);
        CHECK_U64(s.jobs_started, ==, 1);
        CHECK_U64(s.jobs_ready, ==, 1);
        CHECK_U64(s.bytes_warmed_total, ==, 8 * PAGE);
        CHECK_U64(s.job_seconds_count, ==, 1);
        pools_free(p);
        env_fini(&e);
}

TEST(admission)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        char buf[64];

        env_init(&e);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "12\n");
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "16\n");
        e.cfg.max_pools = 3;
        e.cfg.max_node_warm_bytes = 40 * PAGE;
        p = start(&e);

        /* 8 of 12 free pages go to a warming pool ... */
        r = req("a", 0, 8);
        create_gated(p, &r, &v, &err);
        /* ... so another 8 do not fit, though the counter still says 12 free. */
        r = req("b", 0, 8);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK_INT(err.status, ==, 409);
        CHECK_STR(err.slug, "insufficient-hugepages");
        CHECK(strstr(err.detail, "needs 8"));
        CHECK(strstr(err.detail, "12 free"));
        CHECK(strstr(err.detail, "8 still to be taken"));
        CHECK(!file_exists(&e, "b"));
        CHECK_INT(pools_get(p, "b", &v, NULL), ==, -ENOENT);
        /* 4 do. */
        r = req("c", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);

        /* Other node, own counters: node 1 has 7 free. */
        r = req("d", 1, 8);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);

        /* reserve: grows node 1 to 8 + 1 pages; the fixture's free counter does
         * not move, so admission still fails, and the growth (counted) is
         * undone: the kernel back at 8, nothing recorded (no grown pool left behind and saved when the create fails). */
        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK(strstr(err.detail, "even after growing"));
        CHECK(strstr(err.detail, "undone"));
        fixture_read(e.sys, HP_DIR(1) "nr_hugepages", buf, sizeof(buf));
        CHECK_STR(buf, "8\n");
        struct journal *j = load(&e);
        CHECK_U64(j->n_reservations, ==, 0);
        journal_free(j);
        struct pools_stats s;
        pools_get_stats(p, &s);
        CHECK_U64(s.reservations_ok, ==, 1);

        fake_gate_set(false);
        wait_state(p, "a", POOL_READY);
        wait_state(p, "c", POOL_READY);

        /* Growing past the memory floor is refused and nothing is written
         * (the restart is within the same boot: nothing is re-applied). */
        pools_free(p);
        e.cfg.memory_floor = UINT64_C(1) << 50;
        p = start(&e);
        r = req("d", 1, 16);
        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK(strstr(err.detail, "memory floor"));
        fixture_read(e.sys, HP_DIR(1) "nr_hugepages", buf, sizeof(buf));
        CHECK_STR(buf, "8\n");
        pools_get_stats(p, &s);
        CHECK_U64(s.reservations_refused, ==, 1);
        CHECK_U64(s.reservations_ok, ==, 0);

        /* Per node cap: a and c hold 12 pages; 40 is the cap. */
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "64\n");
        r = req("e", 0, 29);
        CHECK_INT(create(p, &r, &v, &err), ==, -EDQUOT);
        CHECK_INT(err.status, ==, 429);
        CHECK_STR(err.slug, "node-warm-limit");
        r = req("e", 0, 28);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "e", POOL_READY);

        /* Pool count cap. */
        r = req("f", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOSPC);
        CHECK_INT(err.status, ==, 429);
        CHECK_STR(err.slug, "too-many-pools");
        /* An identical retry is still answered at the cap. */
        r = req("e", 0, 28);
        CHECK_INT(create(p, &r, &v, &err), ==, EXISTED);

        CHECK_INT(pools_delete(p, "a", NULL), ==, 0);
        CHECK_INT(pools_delete(p, "c", NULL), ==, 0);
        CHECK_INT(pools_delete(p, "e", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* Shrinking a node's pool keeps the pages a warming pool there still needs. */
TEST(shrink_keeps_warming)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("w", 0, 8);
        struct reserve_result res;
        struct pools_stats s;
        char buf[64];

        env_init(&e);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "12\n");
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "16\n");
        p = start(&e);
        create_gated(p, &r, &v, &err);

        /* 4 in use + 8 still to be taken by "w": 12 stay, not 4. */
        struct reserve_req rq = { .node = 0, .page_size = PAGE, .count = 4 };
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        CHECK(!res.complete);
        CHECK_U64(res.requested, ==, 4);
        CHECK_U64(res.total, ==, 12);
        fixture_read(e.sys, HP_DIR(0) "nr_hugepages", buf, sizeof(buf));
        CHECK_STR(buf, "12\n");
        pools_get_stats(p, &s);
        CHECK_U64(s.reservations_partial, ==, 1);
        /* What was asked is recorded, not the 12 the kernel holds. */
        struct journal *j = load(&e);
        CHECK_U64(j->n_reservations, ==, 1);
        CHECK_U64(j->reservations[0].count, ==, 4);
        journal_free(j);
        /* Other nodes are not held back by it. */
        rq = (struct reserve_req){ .node = 1, .page_size = PAGE, .count = 2 };
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        CHECK(res.complete);

        /* Once it is ready, it needs nothing more: the shrink goes through. */
        fake_gate_set(false);
        wait_state(p, "w", POOL_READY);
        rq = (struct reserve_req){ .node = 0, .page_size = PAGE, .count = 4 };
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        CHECK(res.complete);
        fixture_read(e.sys, HP_DIR(0) "nr_hugepages", buf, sizeof(buf));
        CHECK_STR(buf, "4\n");
        CHECK_INT(pools_delete(p, "w", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

TEST(failure_and_cancel)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        struct pools_stats s;
        struct pools *p = env_start(&e);

        /* A populate error: failed, file gone at once, cause named. */
        fake_gate_fail_with(EFAULT);
        r = req("bad", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "bad", POOL_FAILED);
        fake_gate_fail_with(0);
        CHECK(!file_exists(&e, "bad"));
        CHECK_INT(pools_get(p, "bad", &v, NULL), ==, 0);
        CHECK_STR(v.error_slug, "hugepages-exhausted");
        CHECK(strstr(v.error_detail, "ran out of free hugepages"));
        struct journal *j = load(&e);
        CHECK_STR(pool_state_name(jpool(j, "bad")->state), "failed");
        CHECK_STR(jpool(j, "bad")->error_slug, "hugepages-exhausted");
        journal_free(j);
        /* The same spec again shows the failure as it is (200), so a
         * retrying scheduler learns why; DELETE clears it. */
        CHECK_INT(create(p, &r, &v, &err), ==, EXISTED);
        CHECK_STR(pool_state_name(v.state), "failed");
        CHECK_INT(pools_claim(p, "bad", &v, NULL), ==, -EBUSY);
        CHECK_INT(pools_delete(p, "bad", NULL), ==, 0);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "bad", POOL_READY);
        CHECK_INT(pools_delete(p, "bad", NULL), ==, 0);

        /* Delete while warming: cancelled, file and record gone. */
        r = req("mid", 0, 8);
        create_gated(p, &r, &v, &err);
        pthread_t t = open_gate_soon();
        CHECK_INT(pools_delete(p, "mid", NULL), ==, 0);
        pthread_join(t, NULL);
        CHECK(!file_exists(&e, "mid"));
        CHECK_INT(pools_get(p, "mid", &v, NULL), ==, -ENOENT);
        pools_get_stats(p, &s);
        CHECK_U64(s.jobs_failed, ==, 1);
        CHECK_U64(s.jobs_cancelled, ==, 1);
        CHECK_U64(s.jobs_ready, ==, 1);
        CHECK_U64(s.jobs_started, ==, 3);

        /* Delete while warming, and the file cannot be removed (its path
         * became a directory): the job is stopped and the record says so
         * (failed, not "warming" with no job); a later DELETE works. */
        r = req("nounlink", 0, 4);
        create_gated(p, &r, &v, &err);
        char path[256];
        snprintf(path, sizeof(path), "%s/nounlink", e.mount);
        CHECK_INT(unlink(path), ==, 0);
        CHECK_INT(mkdir(path, 0700), ==, 0);
        t = open_gate_soon();
        CHECK_INT(pools_delete(p, "nounlink", NULL), ==, -EISDIR);
        pthread_join(t, NULL);
        CHECK_INT(pools_get(p, "nounlink", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "failed");
        CHECK_STR(v.error_slug, "pool-file-error");
        j = load(&e);
        CHECK_STR(pool_state_name(jpool(j, "nounlink")->state), "failed");
        journal_free(j);
        CHECK_INT(rmdir(path), ==, 0);
        CHECK_INT(pools_delete(p, "nounlink", NULL), ==, 0);
        CHECK_INT(pools_get(p, "nounlink", &v, NULL), ==, -ENOENT);
        r = req("mid", 0, 8);

        /* A waiter sees the delete as -ENOENT. */
        create_gated(p, &r, &v, &err);
        t = open_gate_soon();
        CHECK_INT(pools_delete(p, "mid", NULL), ==, 0);
        pthread_join(t, NULL);
        CHECK_INT(pools_wait(p, "mid", deadline_in(1), &v), ==, -ENOENT);

        pools_free(p);
        env_fini(&e);
}

struct call {
        struct pools *p;
        struct pool_req r;
        struct pool_view v;
        struct problem err;
        int rc;
};

static void *delete_thread(void *arg)
{
        struct call *c = arg;

        c->rc = pools_delete(c->p, c->r.name, NULL);
        return NULL;
}

static void *create_thread(void *arg)
{
        struct call *c = arg;

        c->rc = create(c->p, &c->r, &c->v, &c->err);
        return NULL;
}

/* An identical PUT while a DELETE removes the pool must not answer 200 for
 * the pool whose file is going away: it waits, then creates anew (201). */
TEST(put_during_delete)
{
        struct env e;
        struct call del = {0}, put = {0};
        pthread_t td, tp;

        env_init(&e);
        del.p = put.p = start(&e);
        del.r = put.r = req("again", 0, 4);
        create_gated(put.p, &put.r, &put.v, &put.err);
        /* The DELETE holds the pool busy while its cancel waits at the gate. */
        CHECK_INT(pthread_create(&td, NULL, delete_thread, &del), ==, 0);
        usleep(100 * 1000);
        CHECK_INT(pthread_create(&tp, NULL, create_thread, &put), ==, 0);
        usleep(100 * 1000);
        fake_gate_set(false);
        pthread_join(td, NULL);
        pthread_join(tp, NULL);
        CHECK_INT(del.rc, ==, 0);
        CHECK_INT(put.rc, ==, CREATED);
        CHECK(file_exists(&e, "again"));
        wait_state(put.p, "again", POOL_READY);
        CHECK_INT(pools_delete(put.p, "again", NULL), ==, 0);
        pools_free(put.p);
        env_fini(&e);
}

/* The journal cannot be written: the create is refused, and its job, file
 * and record are gone (the job is taken out of the registry under its lock
 * before it is freed, so a concurrent save never reads a freed job). */
TEST(save_failure)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("nosave", 0, 4);
        char tmp[256];
        struct pools *p = env_start(&e);

        /* Root ignores file modes; a directory where the temp file goes
         * makes journal_save fail. */
        snprintf(tmp, sizeof(tmp), "%s/state.json.tmp", e.state);
        CHECK_INT(mkdir(tmp, 0700), ==, 0);
        /* That only stops a compaction; an append to the log fails here as a
         * full disk would make it. */
        journal_inject_save_error(ENOSPC);
        /* The job is held mid-chunk; the cancel waits for it. */
        fake_gate_set(true);
        pthread_t t = open_gate_soon();
        CHECK(create(p, &r, &v, &err) < 0);
        journal_inject_save_error(0);
        pthread_join(t, NULL);
        CHECK_INT(err.status, ==, 503);
        CHECK_STR(err.slug, "state-write-failed");
        CHECK_INT(err.retry_after, ==, 0); /* the handler sets Retry-After */
        CHECK(!file_exists(&e, "nosave"));
        CHECK_INT(pools_get(p, "nosave", &v, NULL), ==, -ENOENT);

        CHECK_INT(rmdir(tmp), ==, 0);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "nosave", POOL_READY);
        CHECK_INT(pools_delete(p, "nosave", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* The case: a pool made with a TTL, then PUT again asking for none,
 * must not answer 200 with a pool that will expire. */
TEST(put_without_ttl_after_ttl_conflicts)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("ttl1", 0, 2);
        struct pools *p = env_start(&e);

        r.ttl_seconds = 30;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(create(p, &r, &v, &err), ==, EXISTED);
        r.ttl_seconds = 0;
        CHECK_INT(create(p, &r, &v, &err), ==, -EEXIST);
        CHECK_INT(err.status, ==, 409);
        CHECK(strstr(err.detail, "ttl_seconds"));
        CHECK_INT(pools_delete(p, "ttl1", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* Count 0 asked while pages are in use: 0 is recorded, so re-applying the
 * reservation (after a reboot) does not grow the pool back to what the
 * kernel held when it was asked. */
TEST(shrink_to_zero_remembered)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("busy", 0, 8);
        struct reserve_result res;
        char buf[64];

        env_init(&e);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "12\n");
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "16\n");
        p = start(&e);
        create_gated(p, &r, &v, &err);
        struct reserve_req rq = { .node = 0, .page_size = PAGE, .count = 0 };
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        CHECK(!res.complete);
        CHECK_U64(res.total, ==, 12);
        fake_gate_set(false);
        wait_state(p, "busy", POOL_READY);
        CHECK_INT(pools_delete(p, "busy", NULL), ==, 0);
        pools_free(p);
        struct journal *j = load(&e);
        CHECK_U64(j->n_reservations, ==, 1);
        CHECK_U64(j->reservations[0].count, ==, 0);
        journal_free(j);

        /* A reboot: the kernel starts with what the firmware gave (16). */
        write_file(e.boot, "99999999-2222-3333-4444-555555555555\n");
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "16\n");
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "16\n");
        p = start(&e);
        fixture_read(e.sys, HP_DIR(0) "nr_hugepages", buf, sizeof(buf));
        CHECK_STR(buf, "0\n");
        pools_free(p);
        env_fini(&e);
}

/* A label is recorded, journalled, shown, kept over a restart, and every
 * later PUT of the pool must carry the same one (none is a label too):
 * 409, and the pool stays as it was. */
TEST(label_binds_the_pool)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("vm-a", 0, 2);
        struct pools *p = env_start(&e);

        snprintf(r.label, sizeof(r.label), "libvirt:11111111-2222-3333-4444-555555555555");
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_STR(v.label, r.label);
        wait_state(p, "vm-a", POOL_READY);
        struct journal *j = load(&e);
        CHECK_STR(jpool(j, "vm-a")->label, r.label);
        journal_free(j);
        CHECK_INT(create(p, &r, &v, &err), ==, EXISTED);

        struct pool_req other = r;
        snprintf(other.label, sizeof(other.label), "libvirt:99999999-2222-3333-4444-555555555555");
        CHECK_INT(create(p, &other, &v, &err), ==, -EEXIST);
        CHECK_INT(err.status, ==, 409);
        CHECK(strstr(err.detail, "label"));
        CHECK(strstr(err.detail, "libvirt:1111"));
        struct pool_req none = r;
        none.label[0] = '\0';
        CHECK_INT(create(p, &none, &v, &err), ==, -EEXIST);

        pools_free(p);
        p = start(&e);
        CHECK_INT(pools_get(p, "vm-a", &v, NULL), ==, 0);
        CHECK_STR(v.label, r.label);
        CHECK_INT(create(p, &other, &v, &err), ==, -EEXIST);
        CHECK_INT(pools_delete(p, "vm-a", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

TEST_MAIN()
