/* Unit tests for base/lock.h's "must not hold" rule: hpw_assert_unheld_in()
 * passes in a thread that does not hold the mutex (nobody does, or another
 * thread does) and aborts in the one that holds it, the check the engine
 * makes before a chunk, its final phase and a cancel (engine_types.h).
 * The "must hold" rule is unit.pools_lock's.  Built with HPW_LOCK_ASSERTS
 * as the engine and the pools are (tests/CMakeLists.txt); the abort it
 * expects runs in a forked child. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "lock.h"

#ifndef HPW_LOCK_ASSERTS
int main(void)
{
        fprintf(stderr, "SKIP: built without HPW_LOCK_ASSERTS (a release build)\n");
        return 77;
}
#else

/* Not held by anybody, or no longer: passes (each test runs in a process
 * of its own, so a wrong abort fails the test). */
TEST(unheld_passes)
{
        struct hpw_mutex m;

        hpw_mutex_init(&m);
        hpw_assert_unheld_in("test", &m);
        hpw_lock(&m);
        hpw_unlock(&m);
        hpw_assert_unheld_in("test", &m);
        hpw_mutex_destroy(&m);
}

/* Held by this thread: aborts (in a child, so the test sees the signal). */
TEST(held_aborts)
{
        struct hpw_mutex m;
        int status;

        hpw_mutex_init(&m);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 }); /* no core from the expected abort */
                hpw_lock(&m);
                hpw_assert_unheld_in("test", &m);
                _exit(0);
        }
        CHECK_INT(waitpid(pid, &status, 0), ==, pid);
        CHECK(WIFSIGNALED(status));
        CHECK_INT(WTERMSIG(status), ==, SIGABRT);
        hpw_mutex_destroy(&m);
}

/* The holder takes M, says so on one pipe and lets go when the other one
 * has something to read. */
struct holder {
        struct hpw_mutex *m;
        int locked[2], release[2];
};

static void *hold(void *arg)
{
        struct holder *h = arg;
        char c = 0;

        hpw_lock(h->m);
        CHECK_INT(write(h->locked[1], &c, 1), ==, 1);
        CHECK_INT(read(h->release[0], &c, 1), ==, 1);
        hpw_unlock(h->m);
        return NULL;
}

/* A lock some other thread holds is not held by this one: passes. */
TEST(held_by_another_thread_passes)
{
        struct hpw_mutex m;
        struct holder h = { .m = &m };
        pthread_t t;
        char c = 0;

        hpw_mutex_init(&m);
        CHECK_INT(pipe(h.locked), ==, 0);
        CHECK_INT(pipe(h.release), ==, 0);
        CHECK_INT(pthread_create(&t, NULL, hold, &h), ==, 0);
        CHECK_INT(read(h.locked[0], &c, 1), ==, 1);
        hpw_assert_unheld_in("test", &m);
        CHECK_INT(write(h.release[1], &c, 1), ==, 1);
        CHECK_INT(pthread_join(t, NULL), ==, 0);
        for (int i = 0; i < 2; i++) {
                close(h.locked[i]);
                close(h.release[i]);
        }
        hpw_mutex_destroy(&m);
}

TEST_MAIN()
#endif
