/* Unit tests for log.c: log_errno logs "<level>what: strerror" on stderr and
 * returns the error as a negative errno, also when its level is filtered. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

/* Run FN with stderr sent to a temporary file; its text into BUF. */
static void capture(void (*fn)(void), char *buf, size_t len)
{
        FILE *tmp = tmpfile();
        int saved = dup(STDERR_FILENO);
        size_t n;

        CHECK(tmp != NULL);
        CHECK(saved >= 0);
        fflush(stderr);
        CHECK(dup2(fileno(tmp), STDERR_FILENO) >= 0);
        fn();
        fflush(stderr);
        CHECK(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        rewind(tmp);
        n = fread(buf, 1, len - 1, tmp);
        buf[n] = '\0';
        fclose(tmp);
}

static int returned;

static void log_enoent(void) { returned = log_errno(LOG_ERR, -ENOENT, "cannot open %s", "/x"); }
static void log_positive(void) { returned = log_errno(LOG_WARN, EACCES, "tokens"); }
static void log_zero(void) { returned = log_errno(LOG_ERR, 0, "odd"); }
static void log_filtered(void) { returned = log_errno(LOG_DEBUG, -EIO, "quiet"); }

TEST(log_errno_logs_and_returns_negative)
{
        char out[512];

        capture(log_enoent, out, sizeof(out));
        CHECK_INT(returned, ==, -ENOENT);
        CHECK_STR(out, "<3>cannot open /x: No such file or directory\n");
}

TEST(log_errno_takes_positive_errno)
{
        char out[512];

        capture(log_positive, out, sizeof(out));
        CHECK_INT(returned, ==, -EACCES);
        CHECK_STR(out, "<4>tokens: Permission denied\n");
}

TEST(log_errno_zero_becomes_eio)
{
        char out[512];

        capture(log_zero, out, sizeof(out));
        CHECK_INT(returned, ==, -EIO);
        CHECK_STR(out, "<3>odd: Input/output error\n");
}

TEST(log_errno_filtered_still_returns)
{
        char out[512];

        log_set_max_level(LOG_INFO);
        capture(log_filtered, out, sizeof(out));
        CHECK_INT(returned, ==, -EIO);
        CHECK_STR(out, "");
}

TEST_MAIN()
