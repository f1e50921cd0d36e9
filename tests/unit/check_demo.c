/* Tests of the harness itself (check.h), run by check_selftest.sh, which
 * knows which of these fail on purpose and what each must print. */
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

TEST_MAIN()
