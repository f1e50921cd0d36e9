/* Unit tests for claims and owner processes (pools_claim.c): a pool bound
 * to its VMM's pid is released when that process exits, also across a
 * restart and from an older journal.
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
#include <sched.h>
#include <stdbool.h>
#include <string.h>
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

/* Claimed with a pid: shown and saved with it; released (file removed,
 * counted) within a second of that process exiting, and not before. */
TEST(owner_exit_releases)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct pools_stats s;
        pid_t vmm = child_spawn();

        env_init(&e);
        p = start(&e);
        ready_pool(p, "vm");
        CHECK_INT(pools_claim_pid(p, "vm", vmm, &v, NULL), ==, 0);
        CHECK(v.claimed);
        CHECK_INT(v.owner_pid, ==, vmm);
        struct journal *j = load(&e);
        CHECK_INT(jpool(j, "vm")->owner_pid, ==, vmm);
        CHECK(jpool(j, "vm")->owner_start > 0);
        journal_free(j);

        CHECK(!gone_within(p, "vm", 0.3));      /* alive: kept */
        child_kill(vmm);
        CHECK(gone_within(p, "vm", 1.0));
        CHECK(!file_exists(&e, "vm"));
        pools_get_stats(p, &s);
        CHECK_U64(s.released_owner_exited, ==, 1);
        CHECK_U64(s.released_delete, ==, 0);
        CHECK_U64(s.pools_expired, ==, 0);
        j = load(&e);
        CHECK(!jpool(j, "vm"));
        journal_free(j);
        pools_free(p);
        env_fini(&e);
}

/* Rounds of owner_exit_during_free: each a start, a warm, a claim, an
 * exit and a stop; enough that one of them meets the upkeep thread inside
 * the release under TSan (owner_exit_releases, which found the race in CI,
 * passed 30 runs in a row here). */
#define EXIT_DURING_FREE_ROUNDS 24

/* The owner exits as pools_free runs: the upkeep thread is releasing the
 * pool (pools_remove, which tells the owner watch to forget it) while the
 * stop frees the parts.  Even rounds stop the moment the pool is gone from
 * the registry, before the upkeep thread has finished its release; odd
 * rounds stop at once after the exit, so it may be seen by the watch after
 * the upkeep thread stopped.  Neither may touch a freed part (TSan), and
 * either way the pool is gone after a restart (an owner that died while the
 * daemon was down releases its pool at start) with its file removed. */
TEST(owner_exit_during_free)
{
        struct env e;
        struct pools *p;
        struct pool_view v;

        env_init(&e);
        p = start(&e);
        for (int round = 0; round < EXIT_DURING_FREE_ROUNDS; round++) {
                pid_t vmm = child_spawn();

                ready_pool(p, "vm");
                CHECK_INT(pools_claim_pid(p, "vm", vmm, &v, NULL), ==, 0);
                child_kill(vmm);
                if (round % 2 == 0)
                        while (pools_get(p, "vm", &v, NULL) != -ENOENT)
                                sched_yield();
                pools_free(p);

                p = start(&e);
                CHECK(gone_within(p, "vm", 1.0));
                CHECK(!file_exists(&e, "vm"));
        }
        pools_free(p);
        env_fini(&e);
}

/* An owner that has already exited when the claim would bind it (a
 * zombie: its pid still answers pidfd_open and signal 0) is no live
 * process: the claim is refused (-ESRCH, 422) and the pool stays ready and
 * unclaimed, not bound and released at once.  (One that exits after the
 * check is reported as soon as it is watched: unit.owner's
 * watch_reports_earlier_exit.) */
TEST(zombie_owner_refused)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        pid_t vmm = child_spawn();

        env_init(&e);
        p = start(&e);
        ready_pool(p, "vm");
        CHECK_INT(kill(vmm, SIGKILL), ==, 0);
        siginfo_t si = {0};
        CHECK_INT(waitid(P_PID, (id_t)vmm, &si, WEXITED | WNOWAIT), ==, 0); /* dead, not reaped */
        CHECK_INT(pools_claim_pid(p, "vm", vmm, &v, NULL), ==, -ESRCH);
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, 0);
        CHECK_INT(v.state, ==, POOL_READY);
        CHECK(!v.claimed);
        CHECK(file_exists(&e, "vm"));
        CHECK_INT(waitpid(vmm, NULL, 0), ==, vmm);
        pools_free(p);
        env_fini(&e);
}

/* Bad pids change nothing; a pool bound to one process cannot be taken by
 * another; claiming again as it is, or without a pid, is fine; a pool
 * claimed without a pid can be bound later. */
TEST(owner_claim_rules)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        pid_t a = child_spawn(), b = child_spawn();

        env_init(&e);
        p = start(&e);
        ready_pool(p, "vm");
        CHECK_INT(pools_claim_pid(p, "vm", child_dead_pid(), &v, NULL), ==, -ESRCH);
        CHECK_INT(pools_claim_pid(p, "vm", -1, &v, NULL), ==, -EINVAL);
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, 0);
        CHECK(!v.claimed);
        CHECK_INT(v.owner_pid, ==, 0);
        CHECK_INT(pools_claim_pid(p, "nope", a, &v, NULL), ==, -ENOENT);

        CHECK_INT(pools_claim(p, "vm", &v, NULL), ==, 0);
        CHECK_INT(v.owner_pid, ==, 0);
        CHECK_INT(pools_claim_pid(p, "vm", a, &v, NULL), ==, 0);      /* bound now */
        CHECK_INT(v.owner_pid, ==, a);
        CHECK_INT(pools_claim_pid(p, "vm", a, &v, NULL), ==, 0);
        CHECK_INT(pools_claim(p, "vm", &v, NULL), ==, 0);
        CHECK_INT(v.owner_pid, ==, a);
        CHECK_INT(pools_claim_pid(p, "vm", b, &v, NULL), ==, -EEXIST);
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, 0);
        CHECK_INT(v.owner_pid, ==, a);

        /* b exiting does nothing to a's pool. */
        child_kill(b);
        CHECK(!gone_within(p, "vm", 0.3));

        /* A warming pool cannot be claimed, with a pid or without. */
        struct pool_req r = req("warm", 0, 2);
        struct problem err;
        fake_gate_set(true);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_INT(pools_claim_pid(p, "warm", a, &v, NULL), ==, -EBUSY);
        fake_gate_set(false);
        wait_state(p, "warm", POOL_READY);
        CHECK_INT(pools_get(p, "warm", &v, NULL), ==, 0);
        CHECK(!v.claimed);

        /* Each refusal names its problem: the handler sends ERR as it is. */
        struct problem pe = {0};
        pid_t c = child_spawn();
        CHECK_INT(pools_claim_pid(p, "vm", c, &v, &pe), ==, -EEXIST);
        child_kill(c);
        CHECK_STR(pe.slug, "pool-owned");
        CHECK(strstr(pe.detail, "claimed by process") != NULL);
        pe = (struct problem){0};
        CHECK_INT(pools_claim_pid(p, "nope", 0, &v, &pe), ==, -ENOENT);
        CHECK_STR(pe.slug, "pool-not-found");
        CHECK_STR(pe.detail, "there is no pool \"nope\"");
        pe = (struct problem){0};
        CHECK_INT(pools_claim_pid(p, "vm", child_dead_pid(), &v, &pe), ==, -ESRCH);
        CHECK_STR(pe.slug, "invalid-field");
        CHECK(strstr(pe.detail, "\"pid\": there is no process") != NULL);
        pe = (struct problem){0};
        CHECK_INT(pools_delete(p, "nope", &pe), ==, -ENOENT);
        CHECK_STR(pe.slug, "pool-not-found");
        pe = (struct problem){0};
        CHECK_INT(pools_get(p, "nope", &v, &pe), ==, -ENOENT);
        CHECK_STR(pe.slug, "pool-not-found");
        fake_gate_set(true);
        r = req("warm2", 0, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        pe = (struct problem){0};
        CHECK_INT(pools_claim(p, "warm2", &v, &pe), ==, -EBUSY);
        CHECK_STR(pe.slug, "pool-not-ready");
        CHECK_STR(pe.detail, "pool \"warm2\" is warming; only a ready pool can be claimed");
        fake_gate_set(false);
        wait_state(p, "warm2", POOL_READY);
        CHECK_INT(pools_delete(p, "warm2", NULL), ==, 0);

        /* DELETE of a bound pool stops watching it: a's exit then releases
         * nothing else. */
        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
        CHECK_INT(pools_claim_pid(p, "warm", a, &v, NULL), ==, 0);
        CHECK_INT(pools_delete(p, "warm", NULL), ==, 0);
        child_kill(a);
        struct pools_stats s;
        usleep(200 * 1000);
        pools_get_stats(p, &s);
        CHECK_U64(s.released_owner_exited, ==, 0);
        CHECK_U64(s.released_delete, ==, 3);   /* vm, warm, and warm2 above */
        pools_free(p);
        env_fini(&e);
}

/* Across a restart: the same live process is watched again (and its exit
 * releases the pool); a process that died while the daemon was down, or a
 * pid that now names another process, releases it at start. */
TEST(owner_restart)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct pools_stats s;
        pid_t live = child_spawn(), dies = child_spawn(), reused = child_spawn();

        env_init(&e);
        p = start(&e);
        ready_pool(p, "live");
        ready_pool(p, "dies");
        ready_pool(p, "reused");
        CHECK_INT(pools_claim_pid(p, "live", live, &v, NULL), ==, 0);
        CHECK_INT(pools_claim_pid(p, "dies", dies, &v, NULL), ==, 0);
        CHECK_INT(pools_claim_pid(p, "reused", reused, &v, NULL), ==, 0);
        pools_free(p);

        child_kill(dies);
        /* Make the journal say "reused" was started at another time: its pid
         * now names another process, as after pid reuse.  Folded into the
         * snapshot first, so the edit is in state.json. */
        compact_on_disk(&e);
        char path[PATH_MAX], buf[1 << 16], key[64];
        snprintf(path, sizeof(path), "%s/state.json", e.state);
        FILE *f = fopen(path, "re");
        CHECK(f);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        snprintf(key, sizeof(key), "\"owner_pid\":%d,\"owner_start_time\":", (int)reused);
        char *at = strstr(buf, key);
        CHECK(at);
        at += strlen(key);
        *at = *at == '9' ? '1' : (char)(*at + 1);  /* another start time, same length */
        f = fopen(path, "we");
        CHECK(f);
        CHECK(fwrite(buf, 1, n, f) == n);
        CHECK_INT(fclose(f), ==, 0);

        p = start(&e);
        CHECK(gone_within(p, "dies", 1.0));
        CHECK(gone_within(p, "reused", 1.0));
        CHECK(!file_exists(&e, "dies"));
        CHECK(!file_exists(&e, "reused"));
        CHECK_INT(pools_get(p, "live", &v, NULL), ==, 0);
        CHECK(v.claimed);
        CHECK_INT(v.owner_pid, ==, live);
        CHECK(!gone_within(p, "live", 0.3));
        child_kill(live);
        CHECK(gone_within(p, "live", 1.0));
        pools_get_stats(p, &s);
        CHECK_U64(s.released_owner_exited, ==, 3);
        /* The reused pid's process was left alone. */
        CHECK_INT(kill(reused, 0), ==, 0);
        child_kill(reused);
        pools_free(p);
        env_fini(&e);
}

/* A journal written before owners existed loads: no owner, claimed as it
 * was. */
TEST(owner_old_journal)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        char path[PATH_MAX];

        env_init(&e);
        snprintf(path, sizeof(path), "%s/state.json", e.state);
        write_file(path, "{\"version\":1,\"boot_id\":\"11111111-2222-3333-4444-555555555555\","
                         "\"reservations\":[],\"pools\":[{\"name\":\"old\",\"node\":0,"
                         "\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"ready\","
                         "\"threads\":0,\"ttl_seconds\":0,\"claimed\":true,\"created_at\":1,"
                         "\"started_at\":1,\"finished_at\":2,\"bytes_done\":2097152,"
                         "\"error_slug\":\"\",\"error_detail\":\"\"}]}");
        CHECK_INT(mkdir(e.mount, 0750), ==, 0);
        snprintf(path, sizeof(path), "%s/%s", e.mount, POOLS_DIR_MARKER);
        write_file(path, "");
        make_pool_file(&e, "old", PAGE, PAGE);
        p = start(&e);
        CHECK_INT(pools_get(p, "old", &v, NULL), ==, 0);
        CHECK(v.claimed);
        CHECK_INT(v.owner_pid, ==, 0);
        CHECK_STR(pool_state_name(v.state), "ready");
        pools_free(p);
        env_fini(&e);
}

TEST_MAIN()
