/* Unit tests for the upkeep thread (pools_upkeep.c): TTL expiry on the
 * boot clock, releases whose unlink or save fails, and the unmapped sweep.
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

TEST(ttl)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        struct pools_stats s;
        struct pools *p = env_start(&e);

        r = req("short", 0, 2);
        r.ttl_seconds = 1;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        r = req("kept", 0, 2);
        r.ttl_seconds = 1;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "short", POOL_READY);
        wait_state(p, "kept", POOL_READY);
        CHECK_INT(pools_get(p, "short", &v, NULL), ==, 0);
        /* Shown as now plus what is left: within a second of finished + ttl. */
        CHECK_INT(v.expires_at, >=, v.finished_at);
        CHECK_INT(v.expires_at, <=, v.finished_at + 2);
        CHECK_INT(pools_claim(p, "kept", &v, NULL), ==, 0);
        CHECK_INT(v.expires_at, ==, 0);

        /* Released within about a second; no polling in pools, so a bounded
         * poll here is fine. */
        for (int i = 0; i < 60 && pools_get(p, "short", &v, NULL) == 0; i++)
                usleep(50 * 1000);
        CHECK_INT(pools_get(p, "short", &v, NULL), ==, -ENOENT);
        CHECK(!file_exists(&e, "short"));
        pools_get_stats(p, &s);
        CHECK_U64(s.pools_expired, ==, 1);
        CHECK_INT(pools_get(p, "kept", &v, NULL), ==, 0);
        CHECK(file_exists(&e, "kept"));
        CHECK_INT(pools_delete(p, "kept", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* A pool whose TTL release keeps failing (its path became a directory, so
 * unlink fails) must not starve the upkeep thread: other pools still finish, and
 * the release is retried a few seconds later. */
TEST(ttl_release_fails)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        char path[256];
        struct pools *p = env_start(&e);

        r = req("stuck", 0, 2);
        r.ttl_seconds = 1;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "stuck", POOL_READY);
        snprintf(path, sizeof(path), "%s/stuck", e.mount);
        CHECK_INT(unlink(path), ==, 0);
        CHECK_INT(mkdir(path, 0700), ==, 0);
        usleep(2200 * 1000); /* expired, and its release failed */
        CHECK_INT(present(p, "stuck"), ==, 0);

        r = req("later", 0, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        struct pool_view w;
        CHECK_INT(pools_wait(p, "later", deadline_in(3), &w), ==, 0);
        CHECK_STR(pool_state_name(w.state), "ready");

        /* Unstuck: released on the retry, within its delay. */
        CHECK_INT(rmdir(path), ==, 0);
        for (int i = 0; i < 160 && present(p, "stuck") == 0; i++)
                usleep(50 * 1000);
        CHECK_INT(present(p, "stuck"), ==, -ENOENT);
        struct pools_stats s;
        pools_get_stats(p, &s);
        CHECK_U64(s.pools_expired, ==, 1);
        CHECK_INT(pools_delete(p, "later", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* Wait up to SECONDS until NAME's unmapped_since is set (WANT) or not. */
static bool unmapped_within(struct pools *p, const char *name, bool want, double seconds)
{
        struct pool_view v;
        uint64_t until = deadline_in(seconds);

        do {
                CHECK_INT(pools_get(p, name, &v, NULL), ==, 0);
                if ((v.unmapped_since != 0) == want)
                        return true;
                usleep(10 * 1000);
        } while (now_mono_ns() < until);
        return false;
}

/* The sweep: a claimed pool without a pid that no process maps gets
 * unmapped_since (and counts in the gauge); mapped again, it is cleared;
 * pools with an owner or not claimed are never swept. */
TEST(unmapped_sweep)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct pools_stats s;
        char path[256];
        pid_t vmm = child_spawn();

        env_init(&e);
        e.cfg.unmapped_sweep_ms = 50;
        p = start(&e);
        ready_pool(p, "loose");
        ready_pool(p, "bound");
        ready_pool(p, "free");
        CHECK_INT(pools_claim_pid(p, "bound", vmm, &v, NULL), ==, 0);

        snprintf(path, sizeof(path), "%s/loose", e.mount);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        void *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        close(fd);
        CHECK_INT(pools_claim(p, "loose", &v, NULL), ==, 0);
        CHECK(!unmapped_within(p, "loose", true, 0.3));      /* mapped by us */

        CHECK_INT(munmap(m, 2 * PAGE), ==, 0);
        CHECK(unmapped_within(p, "loose", true, 2.0));
        CHECK_INT(pools_get(p, "loose", &v, NULL), ==, 0);
        CHECK_INT(v.unmapped_since, >=, (int64_t)time(NULL) - 3);
        pools_get_stats(p, &s);
        CHECK_U64(s.pools_unmapped, ==, 1);
        CHECK_INT(pools_get(p, "bound", &v, NULL), ==, 0);
        CHECK_INT(v.unmapped_since, ==, 0);
        CHECK_INT(pools_get(p, "free", &v, NULL), ==, 0);
        CHECK_INT(v.unmapped_since, ==, 0);

        /* Mapped again: cleared.  Without --release-unmapped-after it is
         * only reported, never released. */
        fd = open(path, O_RDWR | O_CLOEXEC);
        m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        close(fd);
        CHECK(unmapped_within(p, "loose", false, 2.0));
        CHECK_INT(munmap(m, 2 * PAGE), ==, 0);
        CHECK(unmapped_within(p, "loose", true, 2.0));
        CHECK(!gone_within(p, "loose", 1.5));

        /* Binding it to a process ends the sweep's interest. */
        CHECK_INT(pools_claim_pid(p, "loose", vmm, &v, NULL), ==, 0);
        CHECK_INT(v.unmapped_since, ==, 0);
        CHECK(!unmapped_within(p, "loose", true, 0.3));
        child_kill(vmm);
        CHECK(gone_within(p, "loose", 1.0));
        CHECK(gone_within(p, "bound", 1.0));
        pools_free(p);
        env_fini(&e);
}

/* --release-unmapped-after: released once unmapped that long, counted. */
TEST(release_unmapped)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct pools_stats s;

        env_init(&e);
        e.cfg.unmapped_sweep_ms = 50;
        e.cfg.release_unmapped_after = 1;
        p = start(&e);
        ready_pool(p, "loose");
        ready_pool(p, "unclaimed");
        CHECK_INT(pools_claim(p, "loose", &v, NULL), ==, 0);
        CHECK(gone_within(p, "loose", 4.0));
        CHECK(!file_exists(&e, "loose"));
        CHECK_INT(pools_get(p, "unclaimed", &v, NULL), ==, 0);      /* not claimed: not swept */
        pools_get_stats(p, &s);
        CHECK_U64(s.released_unmapped, ==, 1);
        CHECK_U64(s.pools_unmapped, ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* ---- a release or reservation that was not saved did not happen ---- */

/* DELETE while saves fail (ENOSPC): -EAGAIN, the pool, its file and its
 * record on disk stay, also across a restart; once saves work it goes. */
TEST(delete_save_fails_changes_nothing)
{
        struct env e;
        struct pool_view v;
        struct journal *j;
        struct pools *p = env_start(&e);

        ready_pool(p, "keep");
        journal_inject_save_error(ENOSPC);
        CHECK_INT(pools_delete(p, "keep", NULL), ==, -EAGAIN);
        CHECK_INT(pools_get(p, "keep", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK(file_exists(&e, "keep"));
        j = load(&e);
        CHECK(jpool(j, "keep"));
        journal_free(j);
        journal_inject_save_error(0);
        pools_free(p);          /* a restart: it is still there */
        p = start(&e);
        CHECK_INT(pools_get(p, "keep", &v, NULL), ==, 0);
        CHECK_INT(pools_delete(p, "keep", NULL), ==, 0);
        CHECK(!file_exists(&e, "keep"));
        j = load(&e);
        CHECK(!jpool(j, "keep"));
        journal_free(j);
        pools_free(p);
        env_fini(&e);
}

/* A warming pool's DELETE that cannot be saved (EIO) leaves its job
 * running: it still turns ready. */
TEST(delete_save_fails_while_warming)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("busy", 0, 4);
        struct pools *p = env_start(&e);

        create_gated(p, &r, &v, &err);
        journal_inject_save_error(EIO);
        CHECK_INT(pools_delete(p, "busy", NULL), ==, -EAGAIN);
        journal_inject_save_error(0);
        fake_gate_set(false);
        wait_state(p, "busy", POOL_READY);
        CHECK(file_exists(&e, "busy"));
        CHECK_INT(pools_delete(p, "busy", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* TTL expiry while the journal is read-only (EROFS): not released (not
 * counted, file kept, still in the journal) until a save works. */
TEST(ttl_save_fails_keeps_pool)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pools_stats s;
        struct pool_req r = req("brief", 0, 2);
        struct journal *j;
        struct pools *p = env_start(&e);

        r.ttl_seconds = 1;
        journal_inject_save_error(0);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "brief", POOL_READY);
        journal_inject_save_error(EROFS);
        usleep(1600 * 1000);    /* expired, its release not saved */
        CHECK_INT(pools_get(p, "brief", &v, NULL), ==, 0);
        CHECK(file_exists(&e, "brief"));
        pools_get_stats(p, &s);
        CHECK_U64(s.pools_expired, ==, 0);
        j = load(&e);
        CHECK(jpool(j, "brief"));
        journal_free(j);
        journal_inject_save_error(0);
        for (int i = 0; i < 160 && pools_get(p, "brief", &v, NULL) == 0; i++)
                usleep(50 * 1000);
        CHECK_INT(pools_get(p, "brief", &v, NULL), ==, -ENOENT);
        CHECK(!file_exists(&e, "brief"));
        pools_get_stats(p, &s);
        CHECK_U64(s.pools_expired, ==, 1);
        pools_free(p);
        env_fini(&e);
}

/* A reservation that cannot be saved is undone in the kernel and in memory
 * and reported as -ECANCELED, never as done. */
TEST(reserve_save_fails_is_undone)
{
        struct env e;
        struct pools *p;
        struct reserve_result res;
        struct journal *j;
        char buf[64];

        env_init(&e);
        fixture_write(e.sys, HP_DIR(1) "nr_hugepages", "3\n");
        p = start(&e);
        struct reserve_req rq = { .node = 1, .page_size = PAGE, .count = 12 };
        struct problem err = {0};
        journal_inject_save_error(ENOSPC);
        CHECK_INT(pools_reserve(p, &rq, &res, &err), ==, -ECANCELED);
        journal_inject_save_error(0);
        /* The refusal says so itself, with the counts it was put back to. */
        CHECK_STR(err.slug, "state-write-failed");
        CHECK(strstr(err.detail, "so it was undone: 3 pages now (were 3)") != NULL);
        fixture_read(e.sys, HP_DIR(1) "nr_hugepages", buf, sizeof(buf));
        CHECK_STR(buf, "3\n");
        CHECK_U64(res.total, ==, 3);
        pools_free(p);          /* saves: memory must not hold it either */
        j = load(&e);
        CHECK_U64(j->n_reservations, ==, 0);
        journal_free(j);
        env_fini(&e);
}

/* ---- TTLs run on the boot clock ---- */

#define DAY_NS (INT64_C(86400) * 1000000000)
#define SEC_NS INT64_C(1000000000)

static bool still_there_after(struct pools *p, const char *name, double seconds)
{
        struct pool_view v;
        uint64_t until = deadline_in(seconds);

        while (now_mono_ns() < until) {
                if (pools_get(p, name, &v, NULL) != 0)
                        return false;
                usleep(20 * 1000);
        }
        return pools_get(p, name, &v, NULL) == 0;
}

/* A wall clock set a day ahead does not release an unclaimed pool early;

 * set a day back it does not keep it: the TTL runs on CLOCK_BOOTTIME (the
 * seam moves both clocks), and expires_at is shown on the wall clock. */
TEST(ttl_ignores_wall_clock_jumps)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("timed", 0, 2);

        env_init(&e);
        e.cfg.unmapped_sweep_ms = 50;   /* upkeep looks every 50 ms */
        p = start(&e);
        r.ttl_seconds = 100;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "timed", POOL_READY);

        clock_inject_offsets(DAY_NS, 0);
        CHECK(still_there_after(p, "timed", 0.3));
        CHECK_INT(pools_get(p, "timed", &v, NULL), ==, 0);
        int64_t shown = v.expires_at - (int64_t)(now_real_ns() / SEC_NS);
        CHECK_INT(shown, >=, 98);
        CHECK_INT(shown, <=, 101);

        clock_inject_offsets(-DAY_NS, 0);
        CHECK(still_there_after(p, "timed", 0.3));
        clock_inject_offsets(-DAY_NS, 99 * SEC_NS);
        CHECK(still_there_after(p, "timed", 0.3));
        clock_inject_offsets(-DAY_NS, 101 * SEC_NS);
        CHECK(!still_there_after(p, "timed", 2));
        CHECK(!file_exists(&e, "timed"));
        clock_inject_offsets(0, 0);
        pools_free(p);
        env_fini(&e);
}

/* Within one boot a restart keeps the time already run: the journal holds
 * the boot-clock stamp. */
TEST(ttl_survives_restart)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("kept", 0, 2);
        struct journal *j;

        env_init(&e);
        e.cfg.unmapped_sweep_ms = 50;
        p = start(&e);
        r.ttl_seconds = 100;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "kept", POOL_READY);
        pools_free(p);
        j = load(&e);
        CHECK(jpool(j, "kept"));
        CHECK_U64(jpool(j, "kept")->ready_boot_ns, >, 0);
        journal_free(j);

        clock_inject_offsets(0, 60 * SEC_NS);
        p = start(&e);
        CHECK(still_there_after(p, "kept", 0.3));
        clock_inject_offsets(0, 101 * SEC_NS);
        CHECK(!still_there_after(p, "kept", 2));
        clock_inject_offsets(0, 0);
        pools_free(p);
        env_fini(&e);
}

/* A wall clock before 1970 reads as unknown (0, shown as null), never as a
 * wrapped time centuries ahead; expiry still works. */
TEST(pre_1970_wall_clock)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("old", 0, 2);

        env_init(&e);
        e.cfg.unmapped_sweep_ms = 50;
        p = start(&e);
        clock_inject_offsets(-(int64_t)now_real_ns() - 3650 * DAY_NS, 0);
        CHECK_U64(now_real_ns(), ==, 0);
        r.ttl_seconds = 1;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(v.created_at, ==, 0);
        wait_state(p, "old", POOL_READY);
        CHECK_INT(pools_get(p, "old", &v, NULL), ==, 0);
        CHECK_INT(v.finished_at, ==, 0);
        CHECK_INT(v.expires_at, ==, 0);
        CHECK(!still_there_after(p, "old", 3));
        clock_inject_offsets(0, 0);
        pools_free(p);
        env_fini(&e);
}

TEST_MAIN()
