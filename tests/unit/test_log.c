/* Unit tests for log.c: the line prefix is "<N>" when stderr is journald's
 * stream ($JOURNAL_STREAM names it), an RFC 3339 UTC timestamp and the
 * level's name anywhere else; log_errno logs "what: strerror" and returns
 * the error as a negative errno, also when its level is filtered. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "log.h"
#include "util.h"

/* "DEV:INO" of FD, as systemd puts it in $JOURNAL_STREAM. */
static void stream_id(int fd, char *buf, size_t len)
{
        struct stat st;

        CHECK(fstat(fd, &st) == 0);
        snprintf(buf, len, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

/* Run FN with stderr sent to a temporary file; its text into BUF.
 * JOURNAL: NULL unsets $JOURNAL_STREAM, "match" names that file (as if it
 * were journald's stream), anything else is used as the value. */
static void capture_as(const char *journal, void (*fn)(void), char *buf, size_t len)
{
        FILE *tmp = tmpfile();
        int saved = dup(STDERR_FILENO);
        char id[64];
        size_t n;

        CHECK(tmp != NULL);
        CHECK(saved >= 0);
        fflush(stderr);
        CHECK(dup2(fileno(tmp), STDERR_FILENO) >= 0);
        stream_id(STDERR_FILENO, id, sizeof(id));
        if (journal)
                setenv("JOURNAL_STREAM", strcmp(journal, "match") == 0 ? id : journal, 1);
        else
                unsetenv("JOURNAL_STREAM");
        log_init();
        fn();
        fflush(stderr);
        CHECK(dup2(saved, STDERR_FILENO) >= 0);
        close(saved);
        unsetenv("JOURNAL_STREAM");
        log_init();
        rewind(tmp);
        n = fread(buf, 1, len - 1, tmp);
        buf[n] = '\0';
        fclose(tmp);
}

/* log_errno's lines, read with journald's prefixes. */
static void capture(void (*fn)(void), char *buf, size_t len) { capture_as("match", fn, buf, len); }

static int returned;

static void log_enoent(void) { returned = log_errno(LOG_ERR, -ENOENT, "cannot open %s", "/x"); }
static void log_positive(void) { returned = log_errno(LOG_WARN, EACCES, "tokens"); }
static void log_zero(void) { returned = log_errno(LOG_ERR, 0, "odd"); }
static void log_filtered(void) { returned = log_errno(LOG_DEBUG, -EIO, "quiet"); }
static void log_ready(void) { log_notice("pool %s ready", "vm-42"); }

/* An entry with a precondition, as the public entries of pools, engine and
 * journal have; its line number is the one the failure names. */
static int entry(const char *name)
{
        assert_return(name && *name, -EINVAL);
        return 1;
}
enum { ENTRY_CHECK_LINE = __LINE__ - 3 };
static void call_broken(void) { returned = entry(""); }
static void call_kept(void) { returned = entry("vm-42"); }

/* FN, under capture, made log_errno return WANT and print TEXT. */
static void check_logged(void (*fn)(void), int want, const char *text)
{
        char out[512];

        capture(fn, out, sizeof(out));
        CHECK_INT(returned, ==, want);
        CHECK_STR(out, text);
}

TEST(log_errno_logs_and_returns_negative)
{
        check_logged(log_enoent, -ENOENT, "<3>cannot open /x: No such file or directory\n");
}

TEST(log_errno_takes_positive_errno)
{
        check_logged(log_positive, -EACCES, "<4>tokens: Permission denied\n");
}

TEST(log_errno_zero_becomes_eio)
{
        check_logged(log_zero, -EIO, "<3>odd: Input/output error\n");
}

TEST(log_errno_filtered_still_returns)
{
        char out[512];

        log_set_max_level(LOG_INFO);
        capture(log_filtered, out, sizeof(out));
        CHECK_INT(returned, ==, -EIO);
        CHECK_STR(out, "");
}

TEST(assert_return_logs_where_and_returns)
{
        char want[512];

        snprintf(want, sizeof(want), "<3>assertion failed: name && *name (%s:%d, entry)\n", __FILE__,
                 ENTRY_CHECK_LINE);
        check_logged(call_broken, -EINVAL, want);
        check_logged(call_kept, 1, "");
}

TEST(prefix_journal_is_syslog_priority)
{
        char buf[64];

        CHECK_U64(log_format_prefix(buf, sizeof(buf), LOG_NOTICE, true, 1764511509123000000ull), ==, 3);
        CHECK_STR(buf, "<5>");
        log_format_prefix(buf, sizeof(buf), LOG_ERR, true, 0);
        CHECK_STR(buf, "<3>");
}

TEST(prefix_elsewhere_is_rfc3339_utc_and_level)
{
        char buf[64];

        /* 2025-11-30T14:05:09 UTC plus 123.999 ms: milliseconds truncate. */
        log_format_prefix(buf, sizeof(buf), LOG_NOTICE, false, 1764511509123999999ull);
        CHECK_STR(buf, "2025-11-30T14:05:09.123Z notice: ");
        log_format_prefix(buf, sizeof(buf), LOG_ERR, false, 0);
        CHECK_STR(buf, "1970-01-01T00:00:00.000Z error: ");
        log_format_prefix(buf, sizeof(buf), LOG_WARN, false, 5000000ull);
        CHECK_STR(buf, "1970-01-01T00:00:00.005Z warning: ");
        log_format_prefix(buf, sizeof(buf), LOG_DEBUG, false, 0);
        CHECK_STR(buf, "1970-01-01T00:00:00.000Z debug: ");
}

TEST(prefix_truncates_terminated)
{
        char buf[64];

        CHECK_U64(log_format_prefix(buf, 8, LOG_INFO, false, 0), ==, 7);
        CHECK_STR(buf, "1970-01");
}

TEST(journal_stream_must_name_the_fd)
{
        FILE *tmp = tmpfile();
        char id[64], other[80];

        CHECK(tmp != NULL);
        stream_id(fileno(tmp), id, sizeof(id));
        CHECK(log_stream_is_journal(id, fileno(tmp)));
        snprintf(other, sizeof(other), "%s1", id); /* another inode */
        CHECK(!log_stream_is_journal(other, fileno(tmp)));
        snprintf(other, sizeof(other), "%sx", id);
        CHECK(!log_stream_is_journal(other, fileno(tmp)));
        CHECK(!log_stream_is_journal(NULL, fileno(tmp)));
        CHECK(!log_stream_is_journal("", fileno(tmp)));
        CHECK(!log_stream_is_journal("garbage", fileno(tmp)));
        fclose(tmp);
}

static bool rfc3339_line(const char *s, const char *rest)
{
        static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ ";

        for (size_t i = 0; i < sizeof(shape) - 1; i++)
                if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
                        return false;
        return strcmp(s + sizeof(shape) - 1, rest) == 0;
}

TEST(line_without_journal_stream_has_timestamp)
{
        char out[256];

        capture_as(NULL, log_ready, out, sizeof(out));
        if (!rfc3339_line(out, "notice: pool vm-42 ready\n"))
                CHECK_FAIL_("want an RFC 3339 line, got \"%s\"", out);
}

TEST(line_to_journal_stream_has_priority)
{
        char out[256];

        capture_as("match", log_ready, out, sizeof(out));
        CHECK_STR(out, "<5>pool vm-42 ready\n");
}

/* JOURNAL_STREAM inherited from a parent whose stderr was the journal, while
 * ours is a file: timestamps. */
TEST(line_with_foreign_journal_stream_has_timestamp)
{
        char out[256];

        capture_as("1:1", log_ready, out, sizeof(out));
        if (!rfc3339_line(out, "notice: pool vm-42 ready\n"))
                CHECK_FAIL_("want an RFC 3339 line, got \"%s\"", out);
}

TEST_MAIN()
