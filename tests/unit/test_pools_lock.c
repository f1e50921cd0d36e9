/* Unit tests for pools_lock.h: the pool core's mutexes know their holder,
 * so pools_assert_held() on entry to a "lock held" function aborts when the
 * calling thread does not hold the lock (lockdep_assert_held's rule).  The
 * header is private to server/src/pools/; this test defines HPW_IN_POOLS
 * to look inside it, and the aborts it expects run in forked children. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "pools_lock.h"

#ifndef HPW_LOCK_ASSERTS
int main(void)
{
        fprintf(stderr, "SKIP: built without HPW_LOCK_ASSERTS (a release build)\n");
        return 77;
}
#else

/* How the child running FN(ARG) ended: its signal, or 0 for a clean exit. */
static int child_signal(void (*fn)(void *), void *arg)
{
        int status;
        pid_t pid = fork();

        CHECK(pid >= 0);
        if (pid == 0) {
                /* No core file from the expected abort. */
                setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
                fn(arg);
                _exit(0);
        }
        CHECK_INT(waitpid(pid, &status, 0), ==, pid);
        return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void assert_unlocked(void *arg) { pools_assert_held((struct pools_mutex *)arg); }

static void assert_locked(void *arg)
{
        struct pools_mutex *m = arg;

        pools_lock(m);
        pools_assert_held(m);
        pools_unlock(m);
}

/* The holder passes; a thread that holds nothing aborts. */
TEST(held_passes_unheld_aborts)
{
        struct pools_mutex m;

        pools_mutex_init(&m);
        CHECK_INT(child_signal(assert_locked, &m), ==, 0);
        CHECK_INT(child_signal(assert_unlocked, &m), ==, SIGABRT);
        pools_mutex_destroy(&m);
}

/* POOLS_LOCKED holds M for its block and lets it go on every way out:
 * an early return as well as the end of the block. */
static int guarded(struct pools_mutex *m, bool early, bool *ret_held)
{
        POOLS_LOCKED(m);
        *ret_held = pthread_mutex_trylock(&m->mutex) == EBUSY;
        if (early)
                return 1;
        pools_assert_held(m);
        return 0;
}

TEST(guard_unlocks_on_every_return)
{
        struct pools_mutex m;
        bool held = false;

        pools_mutex_init(&m);
        for (int early = 0; early <= 1; early++) {
                held = false;
                CHECK_INT(guarded(&m, early, &held), ==, early);
                CHECK(held);
                /* Let go: free to take, and its owner record cleared (a
                 * thread that does not hold it is refused by the assert). */
                CHECK_INT(pthread_mutex_trylock(&m.mutex), ==, 0);
                pthread_mutex_unlock(&m.mutex);
                CHECK_INT(child_signal(assert_unlocked, &m), ==, SIGABRT);
        }
        pools_mutex_destroy(&m);
}

/* A guard in a loop's body holds M for one turn: a `continue`, a `break`
 * and the end of the body each let it go (the pool core's threads hold
 * their lock to the end of each turn this way). */
TEST(guard_in_a_loop_lets_go_each_turn)
{
        struct pools_mutex m;
        int turns = 0;

        pools_mutex_init(&m);
        for (int i = 0;; i++) {
                /* Whatever ended the turn before let M go. */
                CHECK_INT(pthread_mutex_trylock(&m.mutex), ==, 0);
                pthread_mutex_unlock(&m.mutex);
                if (i == 3)
                        break;
                POOLS_LOCKED(&m);
                pools_assert_held(&m);
                turns++;
                if (i == 0)
                        continue;
                if (i == 2)
                        break;
        }
        CHECK_INT(turns, ==, 3);
        CHECK_INT(pthread_mutex_trylock(&m.mutex), ==, 0);
        pthread_mutex_unlock(&m.mutex);
        pools_mutex_destroy(&m);
}

struct signaller {
        struct pools_mutex *m;
        pthread_cond_t cond;
        bool set;
};

/* Takes M (only possible while the waiter gives it up), sets the flag. */
static void *set_under_lock(void *arg)
{
        struct signaller *s = arg;

        pools_lock(s->m);
        s->set = true;
        pthread_cond_signal(&s->cond);
        pools_unlock(s->m);
        return NULL;
}

static bool wait_under_guard(struct signaller *s)
{
        pthread_t t;

        POOLS_LOCKED(s->m);
        if (pthread_create(&t, NULL, set_under_lock, s) != 0)
                return false;
        while (!s->set)
                pools_cond_wait(&s->cond, s->m);
        pools_assert_held(s->m); /* the wait took it back */
        pthread_join(t, NULL);
        return true;
}

/* A condition wait under a guard gives the lock up for the wait (the other
 * thread could not set the flag otherwise), takes it back, and the guard
 * lets it go once, at the end of its block. */
TEST(guard_holds_across_a_cond_wait)
{
        struct pools_mutex m;
        struct signaller s = { .m = &m, .cond = PTHREAD_COND_INITIALIZER };

        pools_mutex_init(&m);
        CHECK(wait_under_guard(&s));
        CHECK(s.set);
        CHECK_INT(pthread_mutex_trylock(&m.mutex), ==, 0);
        pthread_mutex_unlock(&m.mutex);
        pthread_cond_destroy(&s.cond);
        pools_mutex_destroy(&m);
}

struct other {
        struct pools_mutex *m;
        pthread_mutex_t gate;
        pthread_cond_t cond;
        bool locked, done;
};

static void *hold_until_done(void *arg)
{
        struct other *o = arg;

        pools_lock(o->m);
        pthread_mutex_lock(&o->gate);
        o->locked = true;
        pthread_cond_broadcast(&o->cond);
        while (!o->done)
                pthread_cond_wait(&o->cond, &o->gate);
        pthread_mutex_unlock(&o->gate);
        pools_unlock(o->m);
        return NULL;
}

/* In the child: another thread takes the lock, this one asserts it. */
static void assert_while_other_holds(void *arg)
{
        struct other o = { .m = arg, .gate = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        pthread_t t;

        pthread_create(&t, NULL, hold_until_done, &o);
        pthread_mutex_lock(&o.gate);
        while (!o.locked)
                pthread_cond_wait(&o.cond, &o.gate);
        pthread_mutex_unlock(&o.gate);
        pools_assert_held(o.m); /* aborts: the lock is held, but not by us */
}

/* A lock held by some other thread is not held by this one. */
TEST(held_by_another_thread_aborts)
{
        struct pools_mutex m;

        pools_mutex_init(&m);
        CHECK_INT(child_signal(assert_while_other_holds, &m), ==, SIGABRT);
        pools_mutex_destroy(&m);
}

static void wait_then_assert(void *arg)
{
        struct pools_mutex *m = arg;
        pthread_cond_t c = PTHREAD_COND_INITIALIZER;
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts); /* already past: returns at once */
        pools_lock(m);
        if (pools_cond_timedwait(&c, m, &ts) != ETIMEDOUT)
                _exit(3);
        pools_assert_held(m); /* the wait took the ownership back */
        pools_unlock(m);
        pools_assert_held(m); /* and the unlock gave it up: aborts */
}

/* A condition wait gives the lock up and takes it back. */
TEST(cond_wait_keeps_the_owner)
{
        struct pools_mutex m;

        pools_mutex_init(&m);
        CHECK_INT(child_signal(wait_then_assert, &m), ==, SIGABRT);
        pools_mutex_destroy(&m);
}

TEST_MAIN()
#endif
