/* Logging to stderr with syslog-style level prefixes, and the clock helpers
 * from util.h (they have no better home and are as small). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "util.h"

static enum log_level max_level = LOG_INFO;

void log_set_max_level(enum log_level level) { max_level = level; }

void log_msg(enum log_level level, const char *fmt, ...)
{
        if (level > max_level)
                return;
        char line[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        /* One fprintf per line so concurrent threads never interleave. */
        fprintf(stderr, "<%d>%s\n", (int)level, line);
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

static uint64_t clock_ns(clockid_t id)
{
        struct timespec ts;
        clock_gettime(id, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t now_mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
uint64_t now_real_ns(void) { return clock_ns(CLOCK_REALTIME); }
