/* notify: the service manager protocol, the only module that includes
 * <systemd/sd-daemon.h>.  Readiness, status, stopping, the watchdog and
 * socket activation.  Everything is a no-op when not run under systemd
 * (NOTIFY_SOCKET, WATCHDOG_USEC, LISTEN_FDS unset), so the daemon behaves the
 * same by hand, in tests and in containers. */
#pragma once
#include <stddef.h>

/* READY=1 with STATUS=<status>. */
void notify_ready(const char *status);
/* STOPPING=1 with STATUS=<status>. */
void notify_stopping(const char *status);

/* When the manager asked for a watchdog (WATCHDOG_USEC for this pid), start
 * a thread that sends WATCHDOG=1 every half period.  0 also when not asked;
 * *RET_USEC is the period (0 when off). */
int notify_watchdog_start(unsigned long long *ret_usec);
/* Stop the watchdog thread (no-op when none). */
void notify_watchdog_stop(void);

/* Sockets passed by the manager (LISTEN_FDS), marked close-on-exec and
 * unset from the environment.  Writes up to MAX fds into FDS; returns how
 * many were passed (0 without socket activation) or -errno; -E2BIG when more
 * than MAX. */
int notify_listen_fds(int *fds, size_t max);
