/* Unit tests for the registry's change observer (pools_registry.c): who is
 * told what, never under a registry lock, and nothing for refusals.
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

/* ---- the change observer ---- */

/* What an observer saw: each call's name and what pools_get returned for it
 * from inside the call (which also proves no registry lock is held then). */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct pools *p;
        int calls;
        char last_name[POOL_NAME_MAX + 1];
        char seen[64][32];       /* "name:state", "name:claimed", "name:gone" */
        int n_seen;
} ob = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void observer(void *arg, const char *name)
{
        struct pool_view v;
        int r = pools_get(ob.p, name, &v);

        CHECK(arg == &ob);
        pthread_mutex_lock(&ob.lock);
        ob.calls++;
        snprintf(ob.last_name, sizeof(ob.last_name), "%s", name);
        if (ob.n_seen < (int)ARRAY_SIZE(ob.seen))
                snprintf(ob.seen[ob.n_seen++], sizeof(ob.seen[0]), "%s:%s", name,
                         r < 0 ? "gone" : v.claimed ? "claimed" : pool_state_name(v.state));
        pthread_cond_broadcast(&ob.cond);
        pthread_mutex_unlock(&ob.lock);
}

static void ob_reset(struct pools *p)
{
        pthread_mutex_lock(&ob.lock);
        ob.p = p;
        ob.calls = 0;
        ob.n_seen = 0;
        ob.last_name[0] = '\0';
        pthread_mutex_unlock(&ob.lock);
}

static int ob_calls(void)
{
        pthread_mutex_lock(&ob.lock);
        int n = ob.calls;
        pthread_mutex_unlock(&ob.lock);
        return n;
}

/* Wait up to 10 s until the observer saw WHAT ("name:state"). */
static void ob_wait_seen(const char *what)
{
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&ob.lock);
        for (;;) {
                for (int i = 0; i < ob.n_seen; i++)
                        if (strcmp(ob.seen[i], what) == 0) {
                                pthread_mutex_unlock(&ob.lock);
                                return;
                        }
                if (pthread_cond_timedwait(&ob.cond, &ob.lock, &until) != 0) {
                        fprintf(stderr, "observer never saw %s (%d calls, last %s)\n", what, ob.calls,
                                ob.last_name);
                        CHECK(false);
                }
        }
}

/* Told of creation, of warming -> ready, of claim and of removal, each
 * time after the change is visible. */
TEST(observer_lifecycle)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("obs", 0, 2);
        struct pools *p = env_start(&e);

        ob_reset(p);
        pools_set_observer(p, observer, &ob);

        fake_gate_set(true);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        ob_wait_seen("obs:warming");
        fake_gate_set(false);
        wait_state(p, "obs", POOL_READY);
        ob_wait_seen("obs:ready");
        CHECK_INT(pools_claim(p, "obs", &v), ==, 0);
        ob_wait_seen("obs:claimed");
        CHECK_INT(pools_delete(p, "obs"), ==, 0);
        ob_wait_seen("obs:gone");
        pools_free(p);
        env_fini(&e);
}

/* Changes that do not happen are not told: refused creates, a claim of a
 * pool that is not ready, a delete of a pool that does not exist. */
TEST(observer_quiet_on_refusals)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("q", 0, 2);
        struct pools *p = env_start(&e);

        create_gated(p, &r, &v, &err);
        ob_reset(p);
        pools_set_observer(p, observer, &ob);

        struct pool_req bad = req("-bad", 0, 1);
        CHECK_INT(create(p, &bad, &v, &err), ==, -EINVAL);
        bad = req("q", 0, 4);
        CHECK_INT(create(p, &bad, &v, &err), ==, -EEXIST);
        bad = req("huge", 0, 1000);
        CHECK_INT(create(p, &bad, &v, &err), ==, -ENOMEM);
        CHECK_INT(pools_claim(p, "q", &v), ==, -EBUSY);
        CHECK_INT(pools_delete(p, "nope"), ==, -ENOENT);
        CHECK_INT(create(p, &r, &v, &err), ==, EXISTED);
        CHECK_INT(ob_calls(), ==, 0);

        fake_gate_set(false);
        ob_wait_seen("q:ready");
        pools_free(p);
        env_fini(&e);
}

/* The upkeep thread tells of failures and TTL expiry; a removed observer
 * hears nothing more. */
TEST(observer_upkeep_and_removal)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        struct pools *p = env_start(&e);

        ob_reset(p);
        pools_set_observer(p, observer, &ob);

        fake_gate_fail_with(EFAULT);
        r = req("f", 0, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        ob_wait_seen("f:failed");
        fake_gate_fail_with(0);

        r = req("t", 0, 1);
        r.ttl_seconds = 1;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        ob_wait_seen("t:ready");
        ob_wait_seen("t:gone");         /* expired within about a second */

        pools_set_observer(p, NULL, NULL);
        int before = ob_calls();
        CHECK_INT(pools_delete(p, "f"), ==, 0);
        r = req("after", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "after", POOL_READY);
        CHECK_INT(ob_calls(), ==, before);
        pools_free(p);
        env_fini(&e);
}

TEST_MAIN()
