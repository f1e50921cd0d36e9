/* Unit-test harness: registered tests that name their rule, and typed checks
 * that print both sides (libuv's ASSERT_EQ, systemd's TEST()).
 *
 *   TEST(rule_name) { CHECK_INT(f(1), ==, 2); }
 *   int main(void) { return test_run_all(); }      (or TEST_MAIN())
 *
 * Every registered test runs, in source order, even after one fails.  A
 * failed check prints file:line, the test's name and both values, and ends
 * that test (longjmp back to the runner; what the test allocated leaks).
 * test_run_all() returns 1 when a test failed, 77 when every test that ran
 * was skipped, 0 otherwise.  SKIP(why) in a test skips that test; outside
 * one it exits 77 at once, as it always did.
 *
 * HPW_TEST=name1,name2 (or systemd's TESTFUNCS) runs only those tests; a name
 * no test has is an error, so a typo cannot pass by running nothing.
 *
 * Checks outside a registered test (old-style tests called from main, other
 * threads, forked children) print the same message and abort(), as before.
 * Header-only: each test binary is one translation unit. */
#pragma once
#include <inttypes.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_MAX_ 256

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
        if (check_in_test_())
                longjmp(check_jmp_, outcome);
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

/* Run T; how it ended.  Alone in its function so that nothing of the
 * caller's lives across setjmp. */
static inline int test_run_one_(const struct test_entry_ *t)
{
        volatile int outcome = TEST_PASSED_;

        test_current_ = t->name;
        fflush(NULL);
        switch (setjmp(check_jmp_)) {
        case 0: t->fn(); break;
        case TEST_FAILED_: outcome = TEST_FAILED_; break;
        default: outcome = TEST_SKIPPED_; break;
        }
        test_current_ = NULL;
        fflush(NULL);
        return outcome;
}

/* Run the registered tests (those HPW_TEST or TESTFUNCS names, or all). */
static inline int test_run_all(void)
{
        const char *filter = getenv("HPW_TEST");
        size_t passed = 0, failed = 0, skipped = 0;

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

        check_runner_ = true;
        check_pid_ = getpid();
        for (size_t i = 0; i < test_count_; i++) {
                const struct test_entry_ *t = &test_table_[i];

                if (filter && !test_listed_(filter, t->name))
                        continue;
                int outcome = test_run_one_(t);
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
        fprintf(stderr, "%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
        if (failed)
                return 1;
        if (passed == 0 && skipped > 0)
                return 77;
        return 0;
}

#define TEST_MAIN() \
        int main(void) { return test_run_all(); }
