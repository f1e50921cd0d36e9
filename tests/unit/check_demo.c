/* Tests of the harness itself (check.h), run by check_selftest.sh, which
 * knows which of these fail on purpose and what each must print. */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "check.h"

TEST(passes)
{
        CHECK_INT(1 + 1, ==, 2);
        CHECK_U64(UINT64_MAX, >, 0);
        CHECK_STR("same", "same");
}

TEST(fails_int)
{
        int two = 2;
        CHECK_INT(two, ==, 3);
        fprintf(stderr, "NOT REACHED after a failed check\n");
}

TEST(fails_str)
{
        CHECK_STR("left", "right");
        fprintf(stderr, "NOT REACHED after a failed check\n");
}

static void helper_that_fails(void) { CHECK_U64(5, <, 4); }

TEST(fails_in_helper)
{
        helper_that_fails();
        fprintf(stderr, "NOT REACHED after a failed check\n");
}

TEST(after_failures) { CHECK(1); }

TEST(skips)
{
        SKIP("the demo lacks a feature");
        fprintf(stderr, "NOT REACHED after a skip\n");
}

/* A forked child's failed check ends the child (abort), never runs the
 * parent's other tests in the child. */
TEST(child_check_aborts_child)
{
        pid_t pid = fork();
        int status;

        CHECK(pid >= 0);
        if (pid == 0) {
                CHECK_INT(0, ==, 1);
                _exit(0);
        }
        CHECK_INT(waitpid(pid, &status, 0), ==, pid);
        CHECK(WIFSIGNALED(status));
        CHECK_INT(WTERMSIG(status), ==, SIGABRT);
}

/* ---- isolation: each test in a process of its own ---- */

static int dirty;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void *sleeper(void *arg)
{
        for (;;)
                pause();
        return arg;
}

/* Fails leaving a thread running, a lock held and a global changed. */
TEST(fails_leaving_a_mess)
{
        pthread_t t;

        dirty = 1;
        pthread_mutex_lock(&held);
        CHECK_INT(pthread_create(&t, NULL, sleeper, NULL), ==, 0);
        CHECK_INT(dirty, ==, 0);
}

TEST(next_test_starts_clean)
{
        CHECK_INT(dirty, ==, 0);
        CHECK_INT(pthread_mutex_trylock(&held), ==, 0);
        pthread_mutex_unlock(&held);
}

/* ---- deferred cleanups run in the runner, however the test ends ---- */

static pid_t runner;

static void deferred(const void *data, size_t len)
{
        fprintf(stderr, "deferred: %.*s (in the runner: %s)\n", (int)len, (const char *)data,
                getpid() == runner ? "yes" : "no");
}

TEST(defers_then_fails)
{
        test_defer(deferred, "first", 5);
        test_defer(deferred, "second", 6);
        CHECK_INT(1, ==, 2);
}

TEST(defers_then_dies)
{
        test_defer(deferred, "after a kill", 12);
        raise(SIGKILL);
        fprintf(stderr, "NOT REACHED after a kill\n");
}

/* What TSan does at exit after a report. */
TEST(exits_like_a_sanitizer) { _exit(66); }

/* Under a sanitizer build: a real report in the test's process fails it. */
#if defined(__SANITIZE_THREAD__)
static int racy;

static void *racer(void *arg)
{
        racy++;
        return arg;
}

TEST(sanitizer_report)
{
        pthread_t t;

        CHECK_INT(pthread_create(&t, NULL, racer, NULL), ==, 0);
        racy++;
        CHECK_INT(pthread_join(t, NULL), ==, 0);
}
#define DEMO_SANITIZED 1
#elif defined(__SANITIZE_ADDRESS__)
TEST(sanitizer_report)
{
        char *volatile p = malloc(4);
        CHECK(p);
        p[4] = 1;
        free(p);
}
#define DEMO_SANITIZED 1
#else
#define DEMO_SANITIZED 0
#endif

/* ---- the fixture: setup before each body, teardown after a pass ---- */

static int setups;

static void setup(void) { setups++; }

static void teardown(void) { fprintf(stderr, "teardown %s\n", test_current_); }

TEST(fixture_set_up_once_per_process) { CHECK_INT(setups, ==, 1); }

int main(void)
{
        runner = getpid();
        fprintf(stderr, "check_demo: sanitized %d\n", DEMO_SANITIZED);
        test_set_fixture(setup, teardown);
        return test_run_all();
}
