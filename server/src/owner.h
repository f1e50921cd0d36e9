/* owner: the processes that use pools.
 *
 * The one module that looks at other processes: it opens pidfds, reads a
 * process's start time from /proc/PID/stat, watches owner processes for
 * exit, and finds whether any process maps a given file (/proc/PID/maps).
 *
 * A pid alone does not name a process: after it exits its pid is reused.
 * A process is named here by (pid, start time), the start being field 22 of
 * /proc/PID/stat (clock ticks after boot), which a reused pid does not share;
 * the journal keeps both, so a daemon restarted after a VMM died releases
 * that VMM's pool even if another process now has its pid.
 *
 * The watch is one thread ("hpw-owner-watch") with an epoll set of pidfds
 * (a pidfd turns readable when its process exits, also if it had exited
 * before it was added) and an eventfd to stop it: no polling of /proc. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Open a pidfd for PID and read its start time, checking that the pidfd
 * still names that process after the read (so a pid reused in between is
 * not mistaken for it).  Caller owns *ret_pidfd (close).  Returns 0,
 * -EINVAL (PID <= 0), -ESRCH (no such process, a zombie, or it exited
 * meanwhile), -ECHILD (PID is a thread's id, not a process's), or another
 * -errno (pidfd_open unsupported: -ENOSYS). */
int owner_open(pid_t pid, int *ret_pidfd, uint64_t *ret_start);
/* Start time (field 22 of /proc/PID/stat) of PID.  -ESRCH if none. */
int owner_start_time(pid_t pid, uint64_t *ret);

/* Called in the watch thread when a watched process has exited; NAME is the
 * name it was added under (valid during the call), PID and START who it
 * was.  It must not call owner_watch_free. */
typedef void (*owner_exit_fn)(void *arg, const char *name, pid_t pid, uint64_t start);

struct owner_watch;
/* Start the watch thread.  Caller owns *ret (owner_watch_free). */
int owner_watch_new(owner_exit_fn fn, void *arg, struct owner_watch **ret);
/* Stop the thread, close every pidfd.  No callback runs after it returns.
 * Accepts NULL. */
void owner_watch_free(struct owner_watch *w);
/* Watch PIDFD (taken over, also on failure) for process (PID, START) under
 * NAME.  FN is called once when it exits, unless owner_watch_remove(NAME)
 * comes first.  0 or -ENOMEM / epoll's -errno. */
int owner_watch_add(struct owner_watch *w, const char *name, pid_t pid, uint64_t start, int pidfd);
/* Stop watching everything added under NAME.  A callback for it already
 * under way may still run; callers check the (pid, start) it carries. */
void owner_watch_remove(struct owner_watch *w, const char *name);
/* Number of processes watched (for tests). */
size_t owner_watch_count(struct owner_watch *w);

/* A file to look for in every process's mappings. */
struct owner_file {
        dev_t dev;
        ino_t ino;
        bool mapped;    /* out: some process maps it */
        bool opened;    /* out (owner_scan_held): some process holds a descriptor of it */
};
/* One pass over /proc/PID/maps of every process: sets FILES[i].mapped.
 * Processes whose maps cannot be read (another user's without
 * CAP_SYS_PTRACE, or outside our user namespace) are skipped and counted in
 * *RET_UNREADABLE: the caller decides what an incomplete answer is worth.
 * PROC_ROOT is "/proc" except in tests.  0 or -errno (opendir). */
int owner_scan_mapped(const char *proc_root, struct owner_file *files, size_t n, unsigned *ret_unreadable);
/* Who holds a file: the same pass, and also every descriptor under
 * /proc/PID/fd (stat through the link, so O_PATH descriptors count too),
 * setting FILES[i].opened.  The descriptors of process SKIP (our own pid,
 * or 0) are left out, not its mappings.
 * A process whose fds cannot be listed counts in *RET_UNREADABLE as well. */
int owner_scan_held(const char *proc_root, pid_t skip, struct owner_file *files, size_t n,
                    unsigned *ret_unreadable);
