/* log: the line prefix is "<N>" when stderr is journald's stream
 * ($JOURNAL_STREAM names it), an RFC 3339 UTC timestamp and the level's name
 * anywhere else. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "log.h"

static void test_prefix_journal(void)
{
        char buf[64];
        CHECK_U64(log_format_prefix(buf, sizeof(buf), LOG_NOTICE, true, 1764511509123000000ull), ==, 3);
        CHECK_STR(buf, "<5>");
        log_format_prefix(buf, sizeof(buf), LOG_ERR, true, 0);
        CHECK_STR(buf, "<3>");
}

static void test_prefix_rfc3339(void)
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
        /* Truncation keeps the string terminated and reports what was kept. */
        CHECK_U64(log_format_prefix(buf, 8, LOG_INFO, false, 0), ==, 7);
        CHECK_STR(buf, "1970-01");
}

static void test_stream_detection(void)
{
        char path[] = "/tmp/hpw-test-log.XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        unlink(path);
        struct stat st;
        CHECK(fstat(fd, &st) == 0);
        char env[64];
        snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        CHECK(log_stream_is_journal(env, fd));
        snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino + 1);
        CHECK(!log_stream_is_journal(env, fd));
        snprintf(env, sizeof(env), "%llu:%llux", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
        CHECK(!log_stream_is_journal(env, fd));
        CHECK(!log_stream_is_journal(NULL, fd));
        CHECK(!log_stream_is_journal("", fd));
        CHECK(!log_stream_is_journal("garbage", fd));
        close(fd);
}

/* Log through stderr redirected to a file, read the line back. */
static void log_line(const char *journal_env, char *out, size_t len)
{
        char path[] = "/tmp/hpw-test-log.XXXXXX";
        int fd = mkstemp(path), saved = dup(2);
        CHECK(fd >= 0 && saved >= 0);
        unlink(path);
        fflush(stderr);
        CHECK(dup2(fd, 2) == 2);
        if (journal_env) {
                struct stat st;
                char env[64];
                CHECK(fstat(2, &st) == 0);
                snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
                         (unsigned long long)st.st_ino);
                setenv("JOURNAL_STREAM", strcmp(journal_env, "match") == 0 ? env : journal_env, 1);
        } else {
                unsetenv("JOURNAL_STREAM");
        }
        log_init();
        log_notice("pool %s ready", "vm-42");
        fflush(stderr);
        CHECK(dup2(saved, 2) == 2);
        close(saved);
        ssize_t n = pread(fd, out, len - 1, 0);
        CHECK(n > 0);
        out[n] = '\0';
        close(fd);
}

static bool rfc3339_line(const char *s, const char *rest)
{
        /* YYYY-MM-DDTHH:MM:SS.mmmZ */
        static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ ";
        for (size_t i = 0; i < sizeof(shape) - 1; i++) {
                if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
                        return false;
        }
        return strcmp(s + sizeof(shape) - 1, rest) == 0;
}

static void test_lines(void)
{
        char line[256];
        log_line(NULL, line, sizeof(line));
        if (!rfc3339_line(line, "notice: pool vm-42 ready\n"))
                CHECK_FAIL_("without JOURNAL_STREAM: want an RFC 3339 line, got \"%s\"", line);
        log_line("match", line, sizeof(line));
        CHECK_STR(line, "<5>pool vm-42 ready\n");
        /* JOURNAL_STREAM inherited from a parent whose stderr was the journal,
         * while ours is a file: timestamps. */
        log_line("1:1", line, sizeof(line));
        if (!rfc3339_line(line, "notice: pool vm-42 ready\n"))
                CHECK_FAIL_("with a JOURNAL_STREAM naming another file: want an RFC 3339 line, got \"%s\"", line);
}

int main(void)
{
        test_prefix_journal();
        test_prefix_rfc3339();
        test_stream_detection();
        test_lines();
        printf("ok: log\n");
        return 0;
}
