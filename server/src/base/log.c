/* Logging to stderr, and the clock helpers from util.h (they have no better
 * home and are as small).
 *
 * Under journald (stderr is the stream named by $JOURNAL_STREAM) a line is
 * "<N>message": journald reads the syslog priority from the prefix and adds
 * the time itself.  Anywhere else (a terminal, a container runtime's log
 * file, a pipe) a line is "2026-11-30T14:05:09.123Z notice: message", an RFC
 * 3339 UTC timestamp with milliseconds, so logs collected off the host can
 * be ordered and correlated.  The choice is made once, at the first line or
 * by log_init(). */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "util.h"

static enum log_level max_level = LOG_INFO;
/* -1: not decided yet; 0: timestamps; 1: journald prefixes. */
static atomic_int journal_mode = -1;

void log_set_max_level(enum log_level level) { max_level = level; }

bool log_stream_is_journal(const char *journal_stream, int fd)
{
        unsigned long long dev, ino;
        int end = 0;
        struct stat st;

        if (!journal_stream || sscanf(journal_stream, "%llu:%llu%n", &dev, &ino, &end) != 2 ||
            journal_stream[end] != '\0')
                return false;
        if (fstat(fd, &st) < 0)
                return false;
        return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(void)
{
        atomic_store(&journal_mode, log_stream_is_journal(getenv("JOURNAL_STREAM"), 2) ? 1 : 0);
}

static const char *level_name(enum log_level level)
{
        switch (level) {
        case LOG_ERR: return "error";
        case LOG_WARN: return "warning";
        case LOG_NOTICE: return "notice";
        case LOG_INFO: return "info";
        case LOG_DEBUG: return "debug";
        }
        return "log";
}

size_t log_format_prefix(char *buf, size_t len, enum log_level level, bool journal, uint64_t real_ns)
{
        int n;

        if (journal) {
                n = snprintf(buf, len, "<%d>", (int)level);
        } else {
                time_t secs = (time_t)(real_ns / 1000000000u);
                unsigned ms = (unsigned)(real_ns % 1000000000u / 1000000u);
                struct tm tm;
                char date[32];
                gmtime_r(&secs, &tm);
                strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
                n = snprintf(buf, len, "%s.%03uZ %s: ", date, ms, level_name(level));
        }
        return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
        if (level > max_level)
                return;
        if (atomic_load(&journal_mode) < 0)
                log_init();
        char prefix[64];
        char line[1024];
        log_format_prefix(prefix, sizeof(prefix), level, atomic_load(&journal_mode) == 1, now_real_ns());
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        /* One fprintf per line so concurrent threads never interleave. */
        fprintf(stderr, "%s%s\n", prefix, line);
}

int log_errno(enum log_level level, int err, const char *fmt, ...)
{
        int e = err < 0 ? -err : err ? err : EIO;

        if (level <= max_level) {
                char what[768];
                va_list ap;
                va_start(ap, fmt);
                vsnprintf(what, sizeof(what), fmt, ap);
                va_end(ap);
                log_msg(level, "%s: %s", what, strerror(e));
        }
        return -e;
}

/* Signed nanoseconds of clock ID plus OFFSET; a time before the clock's
 * epoch (a wall clock set before 1970) is 0. */
static uint64_t clock_ns(clockid_t id, int64_t offset)
{
        struct timespec ts;
        clock_gettime(id, &ts);
        int64_t v = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + offset;
        return v > 0 ? (uint64_t)v : 0;
}

static _Atomic int64_t real_offset, boot_offset;

void clock_inject_offsets(int64_t real_ns, int64_t boot_ns)
{
        atomic_store(&real_offset, real_ns);
        atomic_store(&boot_offset, boot_ns);
}

uint64_t now_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC, 0); }
uint64_t now_real_ns(void) { return clock_ns(CLOCK_REALTIME, atomic_load(&real_offset)); }
uint64_t now_boot_ns(void) { return clock_ns(CLOCK_BOOTTIME, atomic_load(&boot_offset)); }

void hpw_assert_failed(const char *expr, const char *file, int line, const char *func)
{
        log_err("assertion failed: %s (%s:%d, %s)", expr, file, line, func);
}
