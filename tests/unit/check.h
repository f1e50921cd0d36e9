/* Unit-test harness: registered tests that name their rule, and typed checks
 * that print both sides (libuv's ASSERT_EQ, systemd's TEST()).
 *
 *   TEST(rule_name) { CHECK_INT(f(1), ==, 2); }
 *   int main(void) { return test_run_all(); }      (or TEST_MAIN())
 *
 * Every registered test runs, in source order, each in a process of its own
 * (a fork of the runner, as the kernel's kselftest harness and libuv's runner
 * do), so nothing a test leaves behind (threads still running, locks held,
 * memory, a crash) reaches the next one.  A failed check prints file:line,
 * the test's name and both values, and ends that test's process; the runner
 * reports "ok NAME" or "FAILED NAME" and goes on.  A sanitizer report in the
 * test's process (ASan, UBSan, TSan: a non-zero exit or a signal) fails that
 * test.  test_run_all() returns 1 when a test failed, 77 when every test that
 * ran was skipped, 0 otherwise.  SKIP(why) in a test skips that test; outside
 * one it exits 77 at once, as it always did.
 *
 * HPW_TEST=name1,name2 (or systemd's TESTFUNCS) runs only those tests; a name
 * no test has is an error, so a typo cannot pass by running nothing.
 * HPW_TEST_NOFORK=1 runs the tests in the runner's own process, one after the
 * other (a failed check longjmps back to the runner; what the test allocated
 * leaks): for gdb, e.g. HPW_TEST=name HPW_TEST_NOFORK=1 gdb ./test_x.
 *
 * What a test changes outside its process (hugepage counts, files, mounts)
 * outlives it: test_defer() registers a cleanup that the runner runs after
 * the test ends, however it ends.  test_set_fixture() names a setup and a
 * teardown run in each test's process around its body; the runner forks
 * before any test, so state that needs threads (an engine, a registry) is
 * made by the setup, never by main().
 *
 * Checks outside a registered test (old-style tests called from main, other
 * threads, forked children) print the same message and abort(), as before.
 * Header-only: each test binary is one translation unit. */
#pragma once
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_MAX_ 256
/* Deferred cleanups a test may register, and the bytes each may carry. */
#define TEST_DEFER_MAX_ 32
#define TEST_DEFER_DATA_MAX_ 4096

struct test_entry_ {
        const char *name;
        void (*fn)(void);
        int line;
};

/* The registry and the running test.  Only the thread and process that run
 * the tests may leave a test through check_jmp_ (check_runner_ says which). */
static struct test_entry_ test_table_[TEST_MAX_];
static size_t test_count_;
static const char *test_current_;
static _Thread_local bool check_runner_;
static pid_t check_pid_;
static jmp_buf check_jmp_;
/* Set in a test's process once a check failed there (see __lsan_is_turned_off). */
static bool check_failed_;

/* How a test ended; the values longjmp carries are not 0. */
enum {
        TEST_PASSED_,
        TEST_FAILED_,
        TEST_SKIPPED_
};

static inline void test_register_(const char *name, void (*fn)(void), int line)
{
        if (test_count_ == TEST_MAX_) {
                fprintf(stderr, "check.h: more than %d tests; raise TEST_MAX_\n", TEST_MAX_);
                abort();
        }
        test_table_[test_count_++] = (struct test_entry_){ name, fn, line };
}

/* Register test_NAME (static) before main runs. */
#define TEST(name)                                                             \
        static void test_##name(void);                                         \
        __attribute__((constructor)) static void test_register_##name##_(void) \
        {                                                                      \
                test_register_(#name, test_##name, __LINE__);                  \
        }                                                                      \
        static void test_##name(void)

static inline bool check_in_test_(void) { return check_runner_ && test_current_ && getpid() == check_pid_; }

/* End the running test with OUTCOME, or the process when not inside one. */
static inline void check_end_(int outcome)
{
        if (check_in_test_()) {
                if (outcome == TEST_FAILED_)
                        check_failed_ = true;
                longjmp(check_jmp_, outcome);
        }
        if (outcome == TEST_SKIPPED_)
                exit(77);
        abort();
}

#define CHECK_FAIL_(fmt, ...)                                                                                     \
        do {                                                                                                      \
                fprintf(stderr, "%s:%d: [%s] " fmt "\n", __FILE__, __LINE__, test_current_ ? test_current_ : "-", \
                        __VA_ARGS__);                                                                             \
                check_end_(TEST_FAILED_);                                                                         \
        } while (0)

#define CHECK(expr)                                             \
        do {                                                    \
                if (!(expr))                                    \
                        CHECK_FAIL_("CHECK(%s) failed", #expr); \
        } while (0)

#define CHECK_INT(a, op, b)                                                         \
        do {                                                                        \
                long long a_ = (long long)(a), b_ = (long long)(b);                 \
                if (!(a_ op b_))                                                    \
                        CHECK_FAIL_("%s %s %s: %lld vs %lld", #a, #op, #b, a_, b_); \
        } while (0)

#define CHECK_U64(a, op, b)                                                                    \
        do {                                                                                   \
                uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                               \
                if (!(a_ op b_))                                                               \
                        CHECK_FAIL_("%s %s %s: %" PRIu64 " vs %" PRIu64, #a, #op, #b, a_, b_); \
        } while (0)

#define CHECK_STR(a, b)                                                                                            \
        do {                                                                                                       \
                const char *a_ = (a), *b_ = (b);                                                                   \
                if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                             \
                        CHECK_FAIL_("%s == %s: \"%s\" vs \"%s\"", #a, #b, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
        } while (0)

#define SKIP(why)                                                                                                     \
        do {                                                                                                          \
                fprintf(stderr, "SKIP%s%s: %s\n", test_current_ ? " " : "", test_current_ ? test_current_ : "", why); \
                check_end_(TEST_SKIPPED_);                                                                            \
        } while (0)

/* Whether NAME is in the comma-separated list LIST. */
static inline bool test_listed_(const char *list, const char *name)
{
        size_t n = strlen(name);
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ",");
                if (len == n && strncmp(p, name, n) == 0)
                        return true;
                p += len;
                if (*p == ',')
                        p++;
        }
        return false;
}

static inline int test_cmp_line_(const void *a, const void *b)
{
        return ((const struct test_entry_ *)a)->line - ((const struct test_entry_ *)b)->line;
}

/* ---- fixtures and deferred cleanups ---- */

typedef void (*test_defer_fn)(const void *data, size_t len);

static void (*test_setup_)(void);
static void (*test_teardown_)(void);

/* SETUP runs before each test's body and TEARDOWN after it, when it passed,
 * both in the test's process; either may be NULL.  A failed check in SETUP
 * fails the test.  After a failure the process ends without TEARDOWN (it
 * might wait for a lock the failed test holds): the cleanups of test_defer()
 * are what restores state outside the process. */
static inline void test_set_fixture(void (*setup)(void), void (*teardown)(void))
{
        test_setup_ = setup;
        test_teardown_ = teardown;
}

/* Cleanups registered in the runner's own process (HPW_TEST_NOFORK). */
static struct {
        test_defer_fn fn;
        size_t len;
        unsigned char data[TEST_DEFER_DATA_MAX_];
} test_defer_local_[TEST_DEFER_MAX_];
static size_t test_defer_n_;
/* In a forked test: where its cleanups go for the runner to read (a memfd
 * the two processes share), else -1. */
static int test_defer_fd_ = -1;

struct test_defer_rec_ {
        test_defer_fn fn;
        size_t len;
};

/* Run FN(DATA, LEN) in the runner after the running test ends, whatever its
 * outcome (a failed check, a crash, a sanitizer report), the last registered
 * first.  DATA is copied: pass paths and numbers, never pointers into the
 * test's memory, which is gone by then.  FN must not use check.h's checks'
 * ability to end a test; a failed check in it aborts the runner. */
static inline void test_defer(test_defer_fn fn, const void *data, size_t len)
{
        if (len > TEST_DEFER_DATA_MAX_ || !check_in_test_()) {
                fprintf(stderr, "check.h: test_defer() outside a test or with %zu bytes\n", len);
                abort();
        }
        if (test_defer_fd_ < 0) {
                if (test_defer_n_ == TEST_DEFER_MAX_) {
                        fprintf(stderr, "check.h: more than %d deferred cleanups\n", TEST_DEFER_MAX_);
                        abort();
                }
                test_defer_local_[test_defer_n_].fn = fn;
                test_defer_local_[test_defer_n_].len = len;
                if (len)
                        memcpy(test_defer_local_[test_defer_n_].data, data, len);
                test_defer_n_++;
                return;
        }
        struct test_defer_rec_ rec = { fn, len };
        /* One write: a record is either whole in the file or cut short by a
         * crash, which the runner sees by its length. */
        unsigned char buf[sizeof(rec) + TEST_DEFER_DATA_MAX_];
        memcpy(buf, &rec, sizeof(rec));
        if (len)
                memcpy(buf + sizeof(rec), data, len);
        if (write(test_defer_fd_, buf, sizeof(rec) + len) != (ssize_t)(sizeof(rec) + len)) {
                fprintf(stderr, "check.h: cannot record a deferred cleanup\n");
                abort();
        }
}

static inline void test_run_deferred_local_(void)
{
        while (test_defer_n_ > 0) {
                test_defer_n_--;
                test_defer_local_[test_defer_n_].fn(test_defer_local_[test_defer_n_].data,
                                                    test_defer_local_[test_defer_n_].len);
        }
}

/* Run the cleanups a forked test wrote to FD, the last first. */
static inline void test_run_deferred_fd_(int fd)
{
        struct {
                test_defer_fn fn;
                size_t len;
                off_t at;
        } recs[TEST_DEFER_MAX_];
        size_t n = 0;
        off_t off = 0;
        struct test_defer_rec_ rec;

        while (n < TEST_DEFER_MAX_ && pread(fd, &rec, sizeof(rec), off) == (ssize_t)sizeof(rec)) {
                off_t end = lseek(fd, 0, SEEK_END);
                if (rec.len > TEST_DEFER_DATA_MAX_ || off + (off_t)(sizeof(rec) + rec.len) > end)
                        break; /* cut short by a crash */
                recs[n].fn = rec.fn;
                recs[n].len = rec.len;
                recs[n].at = off + (off_t)sizeof(rec);
                n++;
                off += (off_t)(sizeof(rec) + rec.len);
        }
        while (n-- > 0) {
                static unsigned char data[TEST_DEFER_DATA_MAX_];
                if (pread(fd, data, recs[n].len, recs[n].at) != (ssize_t)recs[n].len)
                        continue;
                recs[n].fn(data, recs[n].len);
        }
}

/* LeakSanitizer's hook: off in a test's process whose check failed, where
 * the longjmp skipped the test's frees and a leak report would only bury
 * the failed check.  A passing test is still checked for leaks. */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return check_failed_; }

/* Run T (with the fixture) in this process; how it ended.  Alone in its
 * function so that nothing of the caller's lives across setjmp. */
static inline int test_run_one_(const struct test_entry_ *t)
{
        volatile int outcome = TEST_PASSED_;

        test_current_ = t->name;
        fflush(NULL);
        switch (setjmp(check_jmp_)) {
        case 0:
                if (test_setup_)
                        test_setup_();
                t->fn();
                if (test_teardown_)
                        test_teardown_();
                break;
        case TEST_FAILED_: outcome = TEST_FAILED_; break;
        default: outcome = TEST_SKIPPED_; break;
        }
        test_current_ = NULL;
        fflush(NULL);
        return outcome;
}

/* Run T in a child process; how it ended, as the child's exit tells. */
static inline int test_run_forked_(const struct test_entry_ *t, int defer_fd)
{
        int status;
        pid_t pid;

        if (ftruncate(defer_fd, 0) != 0 || lseek(defer_fd, 0, SEEK_SET) != 0) {
                fprintf(stderr, "check.h: cannot reset the cleanup file\n");
                return TEST_FAILED_;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                perror("check.h: fork");
                return TEST_FAILED_;
        }
        if (pid == 0) {
                check_pid_ = getpid();
                test_defer_fd_ = defer_fd;
                switch (test_run_one_(t)) {
                case TEST_PASSED_: exit(0);
                case TEST_SKIPPED_: exit(77);
                default: exit(1);
                }
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        perror("check.h: waitpid");
                        return TEST_FAILED_;
                }
        test_run_deferred_fd_(defer_fd);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return TEST_PASSED_;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                return TEST_SKIPPED_;
        if (WIFSIGNALED(status))
                fprintf(stderr, "check.h: [%s] killed by signal %d (%s)\n", t->name, WTERMSIG(status),
                        strsignal(WTERMSIG(status)));
        else if (WEXITSTATUS(status) != 1)
                fprintf(stderr, "check.h: [%s] exit %d (a sanitizer report?)\n", t->name, WEXITSTATUS(status));
        return TEST_FAILED_;
}

/* Run the registered tests (those HPW_TEST or TESTFUNCS names, or all). */
static inline int test_run_all(void)
{
        const char *filter = getenv("HPW_TEST"), *nofork = getenv("HPW_TEST_NOFORK");
        size_t passed = 0, failed = 0, skipped = 0;
        int defer_fd = -1;

        if (!filter || !*filter)
                filter = getenv("TESTFUNCS");
        if (filter && !*filter)
                filter = NULL;
        if (test_count_ == 0) {
                fprintf(stderr, "check.h: no tests registered\n");
                return 1;
        }
        /* Constructors need not run in source order. */
        qsort(test_table_, test_count_, sizeof(test_table_[0]), test_cmp_line_);

        if (filter) {
                bool bad = false;
                for (const char *p = filter; *p;) {
                        size_t len = strcspn(p, ","), i;
                        for (i = 0; i < test_count_; i++)
                                if (strlen(test_table_[i].name) == len && strncmp(test_table_[i].name, p, len) == 0)
                                        break;
                        if (len && i == test_count_) {
                                fprintf(stderr, "check.h: no test named \"%.*s\"\n", (int)len, p);
                                bad = true;
                        }
                        p += len;
                        if (*p == ',')
                                p++;
                }
                if (bad)
                        return 1;
        }
        if (!(nofork && *nofork && strcmp(nofork, "0") != 0)) {
                defer_fd = memfd_create("check-deferred", MFD_CLOEXEC);
                if (defer_fd < 0) {
                        perror("check.h: memfd_create");
                        return 1;
                }
        }

        check_runner_ = true;
        check_pid_ = getpid();
        for (size_t i = 0; i < test_count_; i++) {
                const struct test_entry_ *t = &test_table_[i];
                int outcome;

                if (filter && !test_listed_(filter, t->name))
                        continue;
                if (defer_fd >= 0) {
                        outcome = test_run_forked_(t, defer_fd);
                } else {
                        outcome = test_run_one_(t);
                        test_run_deferred_local_();
                }
                switch (outcome) {
                case TEST_PASSED_:
                        passed++;
                        fprintf(stderr, "ok %s\n", t->name);
                        break;
                case TEST_FAILED_:
                        failed++;
                        fprintf(stderr, "FAILED %s\n", t->name);
                        break;
                default: skipped++; break;
                }
        }
        check_runner_ = false;
        if (defer_fd >= 0)
                close(defer_fd);
        fprintf(stderr, "%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
        if (failed)
                return 1;
        if (passed == 0 && skipped > 0)
                return 77;
        return 0;
}

#define TEST_MAIN() \
        int main(void) { return test_run_all(); }
