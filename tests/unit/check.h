/* Minimal typed asserts for unit tests, in the manner of libuv's ASSERT_EQ:
 * on failure print both sides with file:line and abort the test binary. */
#pragma once
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_FAIL_(fmt, ...)                                                  \
        do {                                                                   \
                fprintf(stderr, "%s:%d: " fmt "\n", __FILE__, __LINE__,        \
                        __VA_ARGS__);                                          \
                abort();                                                       \
        } while (0)

#define CHECK(expr)                                                            \
        do {                                                                   \
                if (!(expr))                                                   \
                        CHECK_FAIL_("CHECK(%s) failed", #expr);                \
        } while (0)

#define CHECK_INT(a, op, b)                                                    \
        do {                                                                   \
                long long a_ = (long long)(a), b_ = (long long)(b);            \
                if (!(a_ op b_))                                               \
                        CHECK_FAIL_("%s %s %s: %lld vs %lld", #a, #op, #b,     \
                                    a_, b_);                                   \
        } while (0)

#define CHECK_U64(a, op, b)                                                    \
        do {                                                                   \
                uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);               \
                if (!(a_ op b_))                                               \
                        CHECK_FAIL_("%s %s %s: %" PRIu64 " vs %" PRIu64, #a,   \
                                    #op, #b, a_, b_);                          \
        } while (0)

#define CHECK_STR(a, b)                                                        \
        do {                                                                   \
                const char *a_ = (a), *b_ = (b);                               \
                if (!a_ || !b_ || strcmp(a_, b_) != 0)                         \
                        CHECK_FAIL_("%s == %s: \"%s\" vs \"%s\"", #a, #b,      \
                                    a_ ? a_ : "(null)", b_ ? b_ : "(null)");   \
        } while (0)

#define SKIP(why)                                                              \
        do {                                                                   \
                fprintf(stderr, "SKIP: %s\n", why);                            \
                exit(77);                                                      \
        } while (0)
