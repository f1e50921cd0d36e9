/* Logging.  One line per event to stderr: under journald with a level prefix
 * systemd understands (<3> err ... <7> debug; journald adds time and unit),
 * elsewhere after an RFC 3339 UTC timestamp and the level's name.  Library-like
 * modules (sysfs, json, plan, engine) do not log: they return -errno and the
 * caller that handles the error logs it once. */
#pragma once
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum log_level { LOG_ERR = 3, LOG_WARN = 4, LOG_NOTICE = 5, LOG_INFO = 6, LOG_DEBUG = 7 };

void log_set_max_level(enum log_level level);
/* Decide the line format from $JOURNAL_STREAM and stderr (done by the first
 * line logged if not called; call it again after redirecting stderr). */
void log_init(void);
/* True when JOURNAL_STREAM ("DEV:INO", as systemd sets it) names the file
 * open at FD: that stream goes to journald. */
bool log_stream_is_journal(const char *journal_stream, int fd);
/* Write the prefix of a line logged at LEVEL at REAL_NS (CLOCK_REALTIME) to
 * BUF: "<N>" for journald, else "YYYY-MM-DDTHH:MM:SS.mmmZ level: ".  Returns
 * its length (truncated to LEN - 1). */
size_t log_format_prefix(char *buf, size_t len, enum log_level level, bool journal, uint64_t real_ns);
void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Log FMT at LEVEL followed by ": " and the text of ERR, and return ERR as a
 * negative errno (-EIO when ERR is 0), so a caller that handles an error logs
 * it and passes it on in one statement:
 *     if (r < 0)
 *             return log_errno(LOG_ERR, r, "cannot open %s", path);
 * ERR may be given as -errno or errno. */
int log_errno(enum log_level level, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
