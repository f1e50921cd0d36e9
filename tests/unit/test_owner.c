/* Unit tests for owner.c: process identity (pidfd + start time), the exit
 * watch with forked children as the watched processes, the mapping scan
 * against a fake /proc tree and against this process's own maps, the write
 * lease on a tmpfs file, and the index of who could open a file
 * (owner_creds.c) following forked children that change their ids. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <grp.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "child.h"
#include "fixture.h"
#include "owner.h"
#include "util.h"

TEST(open_self)
{
        uint64_t start = 0, again = 0;
        int fd = -1;

        CHECK_INT(owner_open(getpid(), &fd, &start), ==, 0);
        CHECK(fd >= 0);
        CHECK(start > 0);
        CHECK_INT(owner_start_time(getpid(), &again), ==, 0);
        CHECK_U64(start, ==, again);
        close(fd);
}

TEST(open_refuses_bad_pids)
{
        uint64_t start = 7;
        int fd = -1;

        CHECK_INT(owner_open(0, &fd, &start), ==, -EINVAL);
        CHECK_INT(owner_open(-5, &fd, &start), ==, -EINVAL);
        CHECK_INT(owner_open(child_dead_pid(), &fd, &start), ==, -ESRCH);
        CHECK_INT(fd, ==, -1);
        CHECK_U64(start, ==, 7);
        CHECK_INT(owner_start_time(child_dead_pid(), &start), ==, -ESRCH);
}

static void *park(void *arg)
{
        pid_t *tid = arg;

        __atomic_store_n(tid, gettid(), __ATOMIC_SEQ_CST);
        for (;;)
                pause();
        return NULL;
}

/* A thread's id is not a process's: /proc shows it, pidfd_open refuses it
 * (ENOENT), and owner_open says "a thread" (-ECHILD), not "no process". */
TEST(open_refuses_thread_id)
{
        pid_t tid = 0;
        pthread_t t;
        uint64_t start = 7;
        int fd = -1;

        CHECK_INT(pthread_create(&t, NULL, park, &tid), ==, 0);
        while (!__atomic_load_n(&tid, __ATOMIC_SEQ_CST))
                usleep(1000);
        CHECK_INT(tid, !=, getpid());
        CHECK_INT(owner_open(tid, &fd, &start), ==, -ECHILD);
        CHECK_INT(fd, ==, -1);
        CHECK_U64(start, ==, 7);
}

/* A zombie (exited, not reaped) is no live process: -ESRCH, though its pid
 * still names it for pidfd_open and signal 0. */
TEST(open_refuses_zombie)
{
        uint64_t start = 7;
        int fd = -1;
        pid_t pid = fork();

        CHECK(pid >= 0);
        if (pid == 0)
                _exit(0);
        siginfo_t si = {0};
        CHECK_INT(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), ==, 0); /* exited, left a zombie */
        CHECK_INT(kill(pid, 0), ==, 0);
        CHECK_INT(owner_open(pid, &fd, &start), ==, -ESRCH);
        CHECK_INT(fd, ==, -1);
        CHECK_INT(waitpid(pid, NULL, 0), ==, pid);
}

/* Two processes started at different times differ in start time (the
 * second child is started after a pause longer than a clock tick). */
TEST(start_times_differ)
{
        pid_t a = child_spawn(), b;
        uint64_t sa, sb;

        usleep(50 * 1000);
        b = child_spawn();
        CHECK_INT(owner_start_time(a, &sa), ==, 0);
        CHECK_INT(owner_start_time(b, &sb), ==, 0);
        CHECK_U64(sa, <, sb);
        child_kill(a);
        child_kill(b);
}

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int calls;
        char name[80];
        pid_t pid;
        uint64_t start;
} ex = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void on_exit_cb(void *arg, const char *name, pid_t pid, uint64_t start)
{
        CHECK(arg == &ex);
        pthread_mutex_lock(&ex.lock);
        ex.calls++;
        snprintf(ex.name, sizeof(ex.name), "%s", name);
        ex.pid = pid;
        ex.start = start;
        pthread_cond_broadcast(&ex.cond);
        pthread_mutex_unlock(&ex.lock);
}

static void ex_reset(void)
{
        pthread_mutex_lock(&ex.lock);
        ex.calls = 0;
        ex.name[0] = '\0';
        pthread_mutex_unlock(&ex.lock);
}

/* Wait up to SECONDS for the callback count to reach N; returns it. */
static int ex_wait(int n, double seconds)
{
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += (long)((seconds - (long)seconds) * 1e9);
        until.tv_sec += (time_t)seconds + until.tv_nsec / 1000000000;
        until.tv_nsec %= 1000000000;
        pthread_mutex_lock(&ex.lock);
        while (ex.calls < n && pthread_cond_timedwait(&ex.cond, &ex.lock, &until) == 0)
                ;
        int calls = ex.calls;
        pthread_mutex_unlock(&ex.lock);
        return calls;
}

/* How long an exit may take to be reported: it tells "reported" from "never",
 * with room for a loaded machine.  Checks that nothing is reported wait
 * less (NOTHING_S): they cannot fail by the machine being slow. */
#define REPORT_BOUND_S 10.0
#define NOTHING_S 0.2

/* A watch reporting to ex (reset), with CHILD added as NAME; *RET_START is
 * CHILD's start time. */
static struct owner_watch *watch_one(const char *name, pid_t child, uint64_t *ret_start)
{
        struct owner_watch *w;
        int fd;

        ex_reset();
        CHECK_INT(owner_watch_new(on_exit_cb, &ex, &w), ==, 0);
        CHECK_INT(owner_open(child, &fd, ret_start), ==, 0);
        CHECK_INT(owner_watch_add(w, name, child, *ret_start, fd), ==, 0);
        return w;
}

/* An exit is reported, once, with who it was. */
TEST(watch_reports_exit)
{
        pid_t child = child_spawn();
        uint64_t start;
        struct owner_watch *w = watch_one("vm-1", child, &start);

        CHECK_U64(owner_watch_count(w), ==, 1);
        CHECK_INT(ex_wait(1, NOTHING_S), ==, 0);      /* alive: nothing */
        child_kill(child);
        CHECK_INT(ex_wait(1, REPORT_BOUND_S), ==, 1);
        CHECK_STR(ex.name, "vm-1");
        CHECK_INT(ex.pid, ==, child);
        CHECK_U64(ex.start, ==, start);
        CHECK_U64(owner_watch_count(w), ==, 0);
        CHECK_INT(ex_wait(2, NOTHING_S), ==, 1);      /* once */
        owner_watch_free(w);
}

/* A process that exited before it was added (a zombie, not reaped) is
 * reported at once. */
TEST(watch_reports_earlier_exit)
{
        struct owner_watch *w;
        pid_t child = child_spawn();
        uint64_t start;
        int fd;

        ex_reset();
        CHECK_INT(owner_watch_new(on_exit_cb, &ex, &w), ==, 0);
        CHECK_INT(owner_open(child, &fd, &start), ==, 0);
        CHECK_INT(kill(child, SIGKILL), ==, 0);
        /* Until it has exited, without reaping it. */
        siginfo_t si;
        CHECK_INT(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), ==, 0);
        CHECK_INT(owner_watch_add(w, "early", child, start, fd), ==, 0);
        CHECK_INT(ex_wait(1, REPORT_BOUND_S), ==, 1);
        CHECK_STR(ex.name, "early");
        CHECK_INT(waitpid(child, NULL, 0), ==, child);
        owner_watch_free(w);
}

/* Removed before the exit: no callback; others still reported. */
TEST(watch_remove)
{
        struct owner_watch *w;
        pid_t a = child_spawn(), b = child_spawn();
        uint64_t sa, sb;
        int fa, fb;

        ex_reset();
        CHECK_INT(owner_watch_new(on_exit_cb, &ex, &w), ==, 0);
        CHECK_INT(owner_open(a, &fa, &sa), ==, 0);
        CHECK_INT(owner_open(b, &fb, &sb), ==, 0);
        CHECK_INT(owner_watch_add(w, "a", a, sa, fa), ==, 0);
        CHECK_INT(owner_watch_add(w, "b", b, sb, fb), ==, 0);
        owner_watch_remove(w, "a");
        owner_watch_remove(w, "nothing");
        CHECK_U64(owner_watch_count(w), ==, 1);
        child_kill(a);
        CHECK_INT(ex_wait(1, NOTHING_S), ==, 0);
        child_kill(b);
        CHECK_INT(ex_wait(1, REPORT_BOUND_S), ==, 1);
        CHECK_STR(ex.name, "b");
        owner_watch_free(w);
}

/* Freed with processes still watched: their pidfds are closed, no callback
 * after free returns. */
TEST(watch_free_with_entries)
{
        pid_t child = child_spawn();
        uint64_t start;
        struct owner_watch *w = watch_one("left", child, &start);

        owner_watch_free(w);
        owner_watch_free(NULL);
        child_kill(child);
        CHECK_INT(ex_wait(1, NOTHING_S), ==, 0);
}

TEST(watch_refuses_long_name)
{
        struct owner_watch *w;
        char name[100];
        uint64_t start;
        int fd;

        memset(name, 'a', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        CHECK_INT(owner_watch_new(on_exit_cb, &ex, &w), ==, 0);
        CHECK_INT(owner_open(getpid(), &fd, &start), ==, 0);
        CHECK_INT(owner_watch_add(w, name, getpid(), start, fd), ==, -EINVAL);
        CHECK_U64(owner_watch_count(w), ==, 0);
        CHECK_INT(owner_watch_new(NULL, NULL, &w), ==, -EINVAL);
        owner_watch_free(w);
}

/* ---- the mapping scan ---- */

static char proc[] = "/tmp/test_owner_proc.XXXXXX";

static void put(const char *rel, const char *text)
{
        fixture_write(proc, rel, text);
}

static void mk(const char *rel)
{
        char path[256];

        snprintf(path, sizeof(path), "%s/%s", proc, rel);
        CHECK_INT(mkdir(path, 0755), ==, 0);
}

static void rm_proc(void)
{
        char cmd[300];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", proc);
        CHECK_INT(system(cmd), ==, 0);
}

/* Device numbers are matched as major:minor in hex, the inode in decimal;
 * a file mapped by one process is found, others are not; names that are
 * not pids are skipped. */
TEST(scan_fake_proc)
{
        struct owner_file f[3] = {
                { .dev = makedev(0, 0x2d), .ino = 4242 },
                { .dev = makedev(0, 0x2d), .ino = 4243 },
                { .dev = makedev(8, 1), .ino = 4242 },
        };
        unsigned unreadable = 99;

        CHECK(mkdtemp(proc));
        mk("1");
        put("1/maps", "7f00-7f10 rw-s 00000000 00:2d 4242     /dev/hugepages/hpwarm/vm-1\n"
                      "7f10-7f20 r--p 00000000 00:00 0 \n");
        mk("22");
        put("22/maps", "5555-5556 r-xp 00000000 08:02 4242     /usr/bin/x\n");
        mk("self");
        put("self/maps", "7f00-7f10 rw-s 00000000 00:2d 4243     /dev/hugepages/hpwarm/vm-2\n");
        mk("net");
        mk("4444");              /* exited: no maps any more */
        CHECK_INT(owner_scan_mapped(proc, f, 3, &unreadable), ==, 0);
        CHECK(f[0].mapped);
        CHECK(!f[1].mapped);     /* only under "self", which is not a pid */
        CHECK(!f[2].mapped);     /* same inode, other device */
        CHECK_INT(unreadable, ==, 0);

        /* A process whose maps cannot be read is counted, not guessed. */
        mk("333");
        mk("333/maps");          /* a directory: reading it fails */
        CHECK_INT(owner_scan_mapped(proc, f, 3, &unreadable), ==, 0);
        CHECK_INT(unreadable, ==, 1);
        CHECK(f[0].mapped && !f[1].mapped && !f[2].mapped);

        CHECK_INT(owner_scan_mapped("/nonexistent-proc", f, 3, &unreadable), ==, -ENOENT);
        CHECK_INT(owner_scan_mapped(proc, f, 0, &unreadable), ==, 0);
        rm_proc();
}

/* The real /proc: a file this process maps shared is found; once unmapped
 * it is not. */
TEST(scan_real_proc)
{
        char path[] = "/dev/shm/test_owner_map.XXXXXX";
        struct owner_file f;
        unsigned unreadable;
        struct stat st;
        void *m;
        int fd = mkstemp(path);

        CHECK(fd >= 0);
        CHECK_INT(ftruncate(fd, 4096), ==, 0);
        CHECK_INT(fstat(fd, &st), ==, 0);
        f = (struct owner_file){ .dev = st.st_dev, .ino = st.st_ino };
        CHECK_INT(owner_scan_mapped("/proc", &f, 1, &unreadable), ==, 0);
        CHECK(!f.mapped);
        m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        CHECK_INT(owner_scan_mapped("/proc", &f, 1, &unreadable), ==, 0);
        CHECK(f.mapped);
        CHECK_INT(munmap(m, 4096), ==, 0);
        CHECK_INT(owner_scan_mapped("/proc", &f, 1, &unreadable), ==, 0);
        CHECK(!f.mapped);
        close(fd);
        unlink(path);
}

/* A descriptor in another process is a holder, an O_PATH one too (stat
 * through /proc/PID/fd: nothing the maps or a lease would show); the
 * caller's own descriptors are left out, and a holder that exits holds
 * nothing. */
TEST(scan_held_real_proc)
{
        char path[] = "/dev/shm/test_owner_held.XXXXXX";
        struct owner_file f;
        unsigned unreadable;
        struct stat st;
        int fd = mkstemp(path);

        CHECK(fd >= 0);
        CHECK_INT(fstat(fd, &st), ==, 0);
        f = (struct owner_file){ .dev = st.st_dev, .ino = st.st_ino };
        CHECK_INT(owner_scan_held("/proc", getpid(), &f, 1, &unreadable), ==, 0);
        CHECK(!f.mapped && !f.opened);
        CHECK_INT(owner_scan_held("/proc", 0, &f, 1, &unreadable), ==, 0);
        CHECK(f.opened);         /* ours, when not left out */
        CHECK(!f.mapped);
        close(fd);

        int opath = open(path, O_PATH | O_CLOEXEC);
        CHECK(opath >= 0);
        pid_t holder = child_spawn(); /* inherits the O_PATH descriptor */
        close(opath);
        CHECK_INT(owner_scan_held("/proc", getpid(), &f, 1, &unreadable), ==, 0);
        CHECK(f.opened);
        CHECK(!f.mapped);
        /* The maps scan alone cannot see it. */
        CHECK_INT(owner_scan_mapped("/proc", &f, 1, &unreadable), ==, 0);
        CHECK(!f.mapped && !f.opened);
        child_kill(holder);
        CHECK_INT(owner_scan_held("/proc", getpid(), &f, 1, &unreadable), ==, 0);
        CHECK(!f.opened);
        unlink(path);
}

/* A process whose descriptors cannot be listed is counted, not guessed; a
 * descriptor of another file is no holder. */
TEST(scan_held_fake_proc)
{
        char file[] = "/tmp/test_owner_heldf.XXXXXX", link[300];
        struct owner_file f;
        unsigned unreadable = 99;
        struct stat st;
        int fd = mkstemp(file);

        CHECK(fd >= 0);
        CHECK_INT(fstat(fd, &st), ==, 0);
        close(fd);
        f = (struct owner_file){ .dev = st.st_dev, .ino = st.st_ino };
        CHECK(mkdtemp(proc));
        mk("7");
        put("7/maps", "");
        mk("7/fd");
        snprintf(link, sizeof(link), "%s/7/fd/3", proc);
        CHECK_INT(symlink("/dev/null", link), ==, 0);
        CHECK_INT(owner_scan_held(proc, 0, &f, 1, &unreadable), ==, 0);
        CHECK(!f.opened);
        CHECK_INT(unreadable, ==, 0);
        snprintf(link, sizeof(link), "%s/7/fd/4", proc);
        CHECK_INT(symlink(file, link), ==, 0);
        CHECK_INT(owner_scan_held(proc, 0, &f, 1, &unreadable), ==, 0);
        CHECK(f.opened);
        CHECK_INT(owner_scan_held(proc, 7, &f, 1, &unreadable), ==, 0);
        CHECK(!f.opened);        /* pid 7's descriptors left out */
        mk("8");
        put("8/maps", "");
        put("8/fd", "");         /* a file: listing it fails */
        CHECK_INT(owner_scan_held(proc, 0, &f, 1, &unreadable), ==, 0);
        CHECK_INT(unreadable, ==, 1);
        CHECK_INT(owner_scan_mapped(proc, &f, 1, &unreadable), ==, 0);
        CHECK_INT(unreadable, ==, 0); /* the maps alone do not list fds */
        rm_proc();
        unlink(file);
}


/* A file in /dev/shm (tmpfs has leases as hugetlbfs has), FD open
 * read-only; the path is written to PATH. */
static int shm_file(char *path)
{
        int fd = mkstemp(path);

        CHECK(fd >= 0);
        close(fd);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        CHECK(fd >= 0);
        return fd;
}

static bool leases_enabled(void)
{
        char c = '1';
        FILE *f = fopen("/proc/sys/fs/leases-enable", "re");

        if (f) {
                if (fread(&c, 1, 1, f) != 1)
                        c = '1';
                fclose(f);
        }
        return c != '0';
}

/* The lease answers "alone" for our one descriptor, "not alone" for a
 * second open file (ours or another process's), and leaves no lease
 * behind either way. */
TEST(lease_alone_and_not)
{
        char path[] = "/dev/shm/test_owner_lease.XXXXXX";
        int fd, other;

        if (!leases_enabled())
                SKIP("fs.leases-enable is 0");
        fd = shm_file(path);
        CHECK_INT(owner_lease_alone(fd), ==, 0);
        CHECK_INT(fcntl(fd, F_GETLEASE), ==, F_UNLCK);      /* dropped at once */
        other = open(path, O_RDONLY | O_CLOEXEC);
        CHECK(other >= 0);
        CHECK_INT(owner_lease_alone(fd), ==, 1);
        close(other);
        CHECK_INT(owner_lease_alone(fd), ==, 0);
        other = open(path, O_PATH | O_CLOEXEC);            /* no open file: the lease cannot see it */
        CHECK(other >= 0);
        CHECK_INT(owner_lease_alone(fd), ==, 0);
        close(other);
        close(fd);
        unlink(path);
}

/* A lease break signals SIGIO, whose default action would end the daemon:
 * after the first call it is ignored. */
TEST(lease_ignores_sigio)
{
        char path[] = "/dev/shm/test_owner_sigio.XXXXXX";
        struct sigaction sa;
        int fd;

        if (!leases_enabled())
                SKIP("fs.leases-enable is 0");
        signal(SIGIO, SIG_DFL);
        fd = shm_file(path);
        (void)owner_lease_alone(fd);
        CHECK_INT(sigaction(SIGIO, NULL, &sa), ==, 0);
        CHECK(sa.sa_handler == SIG_IGN);
        CHECK_INT(raise(SIGIO), ==, 0);                    /* and we are still here */
        close(fd);
        unlink(path);
}

/* A child that drops to UID/GID (no groups), then opens PATH with O_PATH
 * and holds it: it writes one byte on READY[1] when done. */
static pid_t child_as(uid_t uid, gid_t gid, const char *path, const int ready[2])
{
        pid_t parent = getpid();
        pid_t pid = child_fork();

        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(1);
                /* A change of ids clears the parent-death signal: again. */
                child_die_with(parent);
                if (path && open(path, O_PATH | O_CLOEXEC) < 0)
                        _exit(1);
                if (write(ready[1], "x", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        char c;
        ssize_t n;
        while ((n = read(ready[0], &c, 1)) < 0 && errno == EINTR)
                ;
        if (n != 1)
                fprintf(stderr, "child_as: %zd %s\n", n, strerror(errno));
        CHECK_INT(n, ==, 1);
        return pid;
}

/* The proc-connector index, or a skip where this process cannot have one
 * (not root, or no connector). */
static struct owner_creds *creds_or_skip(void)
{
        struct owner_creds *c = NULL;

        if (geteuid() != 0)
                SKIP("needs root (setresuid, CAP_NET_ADMIN)");
        int r = owner_creds_new("/proc", &c);
        if (r == -EPERM || r == -EPROTONOSUPPORT || r == -EACCES)
                SKIP("no proc connector here");
        CHECK_INT(r, ==, 0);
        return c;
}

/* The index learns of a child that forks from us (root: left out) and drops
 * to another user, finds its O_PATH descriptor when that user could open
 * the file, looks nowhere else, and forgets it when it exits. */
TEST(creds_follow_setuid)
{
        char path[] = "/dev/shm/test_owner_creds.XXXXXX";
        const uid_t nobody = 65534;
        struct owner_creds *c = creds_or_skip();
        struct owner_file f;
        struct stat st;
        unsigned looked = 99;
        int p[2], fd;

        CHECK(!owner_creds_knows(c, getpid()));             /* root's are left out */
        fd = shm_file(path);
        CHECK_INT(fstat(fd, &st), ==, 0);
        CHECK_INT(pipe(p), ==, 0);
        pid_t child = child_as(nobody, nobody, path, p);
        CHECK(owner_creds_knows(c, child));
        f = (struct owner_file){ .dev = st.st_dev, .ino = st.st_ino };
        /* As its owner's file, mode 0600: nobody could reopen it. */
        struct owner_access mine = { nobody, 12345, 0600 };
        CHECK_INT(owner_creds_scan(c, getpid(), &mine, 1, &f, &looked), ==, 0);
        CHECK(f.opened);
        CHECK_INT(looked, >=, 1);
        /* Another user's 0600 file, or a group nobody is not in: not looked into. */
        struct owner_access other[2] = { { 12345, 12345, 0600 }, { 0, 12346, 0660 } };
        CHECK_INT(owner_creds_scan(c, getpid(), other, 2, &f, &looked), ==, 0);
        CHECK(!f.opened);
        /* Its own group, group bits set: looked into. */
        struct owner_access group = { 0, nobody, 0660 };
        CHECK_INT(owner_creds_scan(c, getpid(), &group, 1, &f, NULL), ==, 0);
        CHECK(f.opened);
        /* Group bits clear: its group does not open it. */
        group.mode = 0600;
        CHECK_INT(owner_creds_scan(c, getpid(), &group, 1, &f, NULL), ==, 0);
        CHECK(!f.opened);
        child_kill(child);
        CHECK(!owner_creds_knows(c, child));
        CHECK_INT(owner_creds_scan(c, getpid(), &mine, 1, &f, NULL), ==, 0);
        CHECK(!f.opened);
        close(p[0]);
        close(p[1]);
        close(fd);
        unlink(path);
        owner_creds_free(c);
}

/* A burst of forks: every child is known (by its fork, or the reread after
 * lost events), and every one is forgotten after its exit.  The count holds
 * the host's other non-root processes too, which may exit meanwhile (another
 * checkout's tests: stress.sh saw all 401 of them leave during one run), so it is
 * checked against the children alone. */
TEST(creds_many_children)
{
        enum { N = 64 };
        struct owner_creds *c = creds_or_skip();
        pid_t kids[N];
        int p[2];

        CHECK_INT(pipe(p), ==, 0);
        for (int i = 0; i < N; i++)
                kids[i] = child_as(65534, 65534, NULL, p);
        for (int i = 0; i < N; i++)
                CHECK(owner_creds_knows(c, kids[i]));
        CHECK_INT(owner_creds_count(c), >=, N);
        for (int i = 0; i < N; i++)
                child_kill(kids[i]);
        for (int i = 0; i < N; i++)
                CHECK(!owner_creds_knows(c, kids[i]));
        close(p[0]);
        close(p[1]);
        owner_creds_free(c);
}

/* In a new user namespace (whose root has no CAP_NET_ADMIN over the
 * host's) the index is either refused, or it hears the events: a child
 * forked after it started is known.  Never an index that silently hears
 * nothing (the kernel's refusal of a listen comes as an acknowledgement,
 * which owner_creds_new waits for). */
TEST(creds_in_user_namespace_refused_or_hearing)
{
        int status;
        pid_t pid;

        if (geteuid() != 0)
                SKIP("needs root");
        pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
                struct owner_creds *c = NULL;
                if (unshare(CLONE_NEWUSER) < 0)
                        _exit(77);
                if (owner_creds_new("/proc", &c) < 0)
                        _exit(c ? 1 : 0);
                pid_t kid = fork();
                if (kid == 0) {
                        for (;;)
                                pause();
                }
                bool known = kid > 0 && owner_creds_knows(c, kid);
                if (kid > 0) {
                        kill(kid, SIGKILL);
                        waitpid(kid, NULL, 0);
                }
                owner_creds_free(c);
                _exit(known ? 0 : 2);
        }
        CHECK_INT(waitpid(pid, &status, 0), ==, pid);
        CHECK(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                SKIP("no user namespaces here");
        CHECK_INT(WEXITSTATUS(status), ==, 0);
}

TEST_MAIN()
