/* owner: the processes that use pools.
 *
 * The one module that looks at other processes: it opens pidfds, reads a
 * process's start time from /proc/PID/stat, watches owner processes for
 * exit, finds whether any process maps a given file (/proc/PID/maps), asks
 * the kernel whether a file is open anywhere else (a write lease), and
 * knows which processes could open a file by their ids (owner_creds.c).
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
/* Mark the files that some descriptor under FDDIR (one process's
 * /proc/PID/fd) refers to: stat(2) follows each magic link to its inode, an
 * O_PATH descriptor's too, without opening anything.  False when the
 * directory cannot be listed for another reason than the process exiting. */
bool owner_scan_fds(const char *fddir, struct owner_file *files, size_t n);

/* Is FD's file open nowhere else?  A write lease (F_SETLEASE F_WRLCK),
 * dropped at once: the kernel grants it only while no other open file
 * description of the inode exists (every descriptor but O_PATH ones, and
 * every mapping, which keeps its file open after its descriptor is
 * closed), in any process.  FD must be open read-only (a writable one of
 * our own counts), and we must own the file or have CAP_LEASE.  SIGIO (a
 * lease break) is ignored from the first call on.  0 alone, 1 refused
 * (another open file exists), -errno where leases cannot be had
 * (-EINVAL: off, fs.leases-enable=0, or the file system has none;
 * -EACCES/-EPERM: not the file's owner). */
int owner_lease_alone(int fd);

/* ---- who could open a file (owner_creds.c) ---- */

/* A file's owner, group and mode, as the kernel checks an open against. */
struct owner_access {
        uid_t uid;
        gid_t gid;
        mode_t mode;
};
struct owner_creds;
/* Read every process's ids (/proc/PID/status under PROC_ROOT, root's left
 * out) and follow their changes by the kernel's process events (netlink
 * proc connector).  Caller owns *ret (owner_creds_free).  -EPERM without
 * CAP_NET_ADMIN, -EPROTONOSUPPORT (or another socket -errno) without the
 * connector: the caller walks every process instead. */
int owner_creds_new(const char *proc_root, struct owner_creds **ret);
/* Accepts NULL. */
void owner_creds_free(struct owner_creds *c);
/* Look for F in the descriptors (O_PATH included) of every process but SKIP
 * and root's that could open a file of one of WHO[0..N_WHO) (F->opened);
 * nothing else is visited: the index answers from memory which processes
 * those are.  *RET_LOOKED: how many processes were looked into (NULL: not
 * wanted).  0, -EPERM (some such process's descriptors cannot be listed),
 * or -errno. */
int owner_creds_scan(struct owner_creds *c, pid_t skip, const struct owner_access *who, size_t n_who,
                     struct owner_file *f, unsigned *ret_looked);
/* Apply the events queued so far (the socket's buffer is bounded: the
 * daemon drains it now and then between checks). */
void owner_creds_drain(struct owner_creds *c);
/* Processes the index keeps, and whether it keeps PID (for tests). */
size_t owner_creds_count(struct owner_creds *c);
bool owner_creds_knows(struct owner_creds *c, pid_t pid);
