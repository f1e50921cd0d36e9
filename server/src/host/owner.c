/* owner: process identity, the exit watch and the mapping scan (owner.h).
 *
 * The watch keeps its entries in a small array under `lock`; each has an id
 * that is the epoll cookie, so an event for an entry removed meanwhile (its
 * pidfd closed, maybe its number reused) finds nothing and is dropped.  The
 * callback runs with no lock held, so it may take the registry's locks. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "owner.h"
#include "util.h"

#define WATCH_THREAD_NAME "hpw-owner-watch"
#define NAME_MAX_LEN 64
/* epoll cookie of the stop eventfd; entries count from 1. */
#define STOP_COOKIE 0
/* /proc/PID/stat is one line; its fixed fields fit well within this. */
#define STAT_MAX 4096

/* State (field 3) and start time (field 22) of /proc/PID/stat. */
static int read_stat(pid_t pid, char *ret_state, uint64_t *ret_start)
{
        char path[64], buf[STAT_MAX];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        buf[n] = '\0';
        /* Field 2 (comm) is in parentheses and may hold spaces and ')':
         * the fields after it start after the last ')'. */
        char *p = strrchr(buf, ')');
        if (!p)
                return -EIO;
        p++;
        while (*p == ' ')
                p++;
        char state = *p;
        /* Field 3 is the state; 22 is the start time: 20 more fields. */
        for (int field = 3; field < 22; field++) {
                while (*p == ' ')
                        p++;
                while (*p && *p != ' ')
                        p++;
                if (!*p)
                        return -EIO;
        }
        while (*p == ' ')
                p++;
        if (!isdigit((unsigned char)*p))
                return -EIO;
        errno = 0;
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
                return -EIO;
        *ret_state = state;
        *ret_start = v;
        return 0;
}

int owner_start_time(pid_t pid, uint64_t *ret)
{
        char state;

        return read_stat(pid, &state, ret);
}

int owner_open(pid_t pid, int *ret_pidfd, uint64_t *ret_start)
{
        _cleanup_close_ int fd = -1;
        uint64_t start;
        char state;
        int r;

        if (pid <= 0)
                return -EINVAL;
        fd = pidfd_open(pid, 0);
        if (fd < 0) {
                r = -errno;
                /* The kernel answers ENOENT (EINVAL before 6.9) for a
                 * thread that leads no thread group: /proc still shows it. */
                if ((r == -ENOENT || r == -EINVAL) && read_stat(pid, &state, &start) == 0)
                        return -ECHILD;
                return r == -ENOENT ? -ESRCH : r;
        }
        r = read_stat(pid, &state, &start);
        if (r < 0)
                return r;
        /* A zombie (or a process being reaped) has exited: its pidfd is
         * already readable, and it maps nothing any more. */
        if (state == 'Z' || state == 'X' || state == 'x')
                return -ESRCH;
        /* If the process died and its pid was reused between pidfd_open and
         * the read, the start time is the new process's: the pidfd, which
         * still names the old one, says it is gone. */
        if (pidfd_send_signal(fd, 0, NULL, 0) < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        *ret_pidfd = TAKE_FD(fd);
        *ret_start = start;
        return 0;
}

/* ---- the watch ---- */

struct entry {
        uint64_t id;
        char name[NAME_MAX_LEN + 1];
        pid_t pid;
        uint64_t start;
        int pidfd;
};

struct owner_watch {
        owner_exit_fn fn;
        void *arg;
        int epfd, stopfd;
        pthread_t thread;
        bool started;

        pthread_mutex_t lock;
        struct entry *entries;  /* lock */
        size_t n, cap;          /* lock */
        uint64_t next_id;       /* lock */
};

/* Remove entry I (lock held): out of the epoll set, pidfd closed. */
static void drop_entry(struct owner_watch *w, size_t i)
{
        epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->entries[i].pidfd, NULL);
        close(w->entries[i].pidfd);
        w->entries[i] = w->entries[--w->n];
}

/* Waits for exits until owner_watch_free; one callback per exit. */
static void *owner_watch_thread(void *arg)
{
        struct owner_watch *w = arg;
        struct epoll_event ev[16];

        pthread_setname_np(pthread_self(), WATCH_THREAD_NAME);
        for (;;) {
                int n = epoll_wait(w->epfd, ev, ARRAY_SIZE(ev), -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return NULL;    /* EBADF/EINVAL: a bug; stop watching */
                }
                for (int k = 0; k < n; k++) {
                        struct entry e = { 0 };
                        bool found = false;

                        if (ev[k].data.u64 == STOP_COOKIE)
                                return NULL;
                        pthread_mutex_lock(&w->lock);
                        for (size_t i = 0; i < w->n; i++)
                                if (w->entries[i].id == ev[k].data.u64) {
                                        e = w->entries[i];
                                        drop_entry(w, i);
                                        found = true;
                                        break;
                                }
                        pthread_mutex_unlock(&w->lock);
                        if (found)
                                w->fn(w->arg, e.name, e.pid, e.start);
                }
        }
}

int owner_watch_new(owner_exit_fn fn, void *arg, struct owner_watch **ret)
{
        struct owner_watch *w;
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = STOP_COOKIE };
        int r;

        if (!fn)
                return -EINVAL;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->fn = fn;
        w->arg = arg;
        w->next_id = 1;
        w->stopfd = -1;
        pthread_mutex_init(&w->lock, NULL);
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (w->epfd < 0) {
                r = -errno;
                goto fail;
        }
        w->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->stopfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->stopfd, &ev) < 0) {
                r = -errno;
                goto fail;
        }
        r = -pthread_create(&w->thread, NULL, owner_watch_thread, w);
        if (r < 0)
                goto fail;
        w->started = true;
        *ret = w;
        return 0;
fail:
        owner_watch_free(w);
        return r;
}

void owner_watch_free(struct owner_watch *w)
{
        if (!w)
                return;
        if (w->started) {
                uint64_t one = 1;
                if (write(w->stopfd, &one, sizeof(one)) != sizeof(one))
                        abort(); /* an eventfd write of 1 cannot fail short of a bug */
                pthread_join(w->thread, NULL);
        }
        for (size_t i = 0; i < w->n; i++)
                close(w->entries[i].pidfd);
        free(w->entries);
        if (w->stopfd >= 0)
                close(w->stopfd);
        if (w->epfd >= 0)
                close(w->epfd);
        pthread_mutex_destroy(&w->lock);
        free(w);
}

int owner_watch_add(struct owner_watch *w, const char *name, pid_t pid, uint64_t start, int pidfd)
{
        struct epoll_event ev = { .events = EPOLLIN };
        struct entry *e;
        int r = 0;

        if (strlen(name) > NAME_MAX_LEN) {
                close(pidfd);
                return -EINVAL;
        }
        pthread_mutex_lock(&w->lock);
        if (w->n == w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 16;
                struct entry *n = realloc(w->entries, cap * sizeof(*n));
                if (!n) {
                        r = -ENOMEM;
                        goto out;
                }
                w->entries = n;
                w->cap = cap;
        }
        e = &w->entries[w->n];
        memset(e, 0, sizeof(*e));
        e->id = w->next_id++;
        snprintf(e->name, sizeof(e->name), "%s", name);
        e->pid = pid;
        e->start = start;
        e->pidfd = pidfd;
        ev.data.u64 = e->id;
        /* Level-triggered: a process that exited before this is reported at
         * once. */
        if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, pidfd, &ev) < 0) {
                r = -errno;
                goto out;
        }
        w->n++;
        pidfd = -1;
out:
        pthread_mutex_unlock(&w->lock);
        if (pidfd >= 0)
                close(pidfd);
        return r;
}

void owner_watch_remove(struct owner_watch *w, const char *name)
{
        if (!w)
                return;
        pthread_mutex_lock(&w->lock);
        for (size_t i = 0; i < w->n;)
                if (strcmp(w->entries[i].name, name) == 0)
                        drop_entry(w, i);
                else
                        i++;
        pthread_mutex_unlock(&w->lock);
}

size_t owner_watch_count(struct owner_watch *w)
{
        pthread_mutex_lock(&w->lock);
        size_t n = w->n;
        pthread_mutex_unlock(&w->lock);
        return n;
}

/* ---- who maps a file ---- */

/* Mark the files that FILE (one process's maps) maps.  A line is
 * "start-end perms offset major:minor inode path", numbers in hex except
 * the inode. */
static void scan_maps(FILE *f, struct owner_file *files, size_t n)
{
        char line[4096 + 256];

        while (fgets(line, sizeof(line), f)) {
                unsigned maj, min;
                unsigned long long ino;

                if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &ino) != 3 || ino == 0)
                        continue;
                for (size_t i = 0; i < n; i++)
                        if (files[i].ino == (ino_t)ino && major(files[i].dev) == maj &&
                            minor(files[i].dev) == min)
                                files[i].mapped = true;
                /* A line longer than the buffer: skip its rest. */
                while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
                        ;
        }
}

bool owner_scan_fds(const char *fddir, struct owner_file *files, size_t n)
{
        struct dirent *de;
        DIR *d = opendir(fddir);

        if (!d)
                return errno == ENOENT || errno == ESRCH;
        while ((de = readdir(d))) {
                struct stat st;

                if (de->d_name[0] == '.')
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, 0) < 0)
                        continue;       /* closed meanwhile, or a socket's peer gone */
                for (size_t i = 0; i < n; i++)
                        if (files[i].ino == st.st_ino && files[i].dev == st.st_dev)
                                files[i].opened = true;
        }
        closedir(d);
        return true;
}

/* The one pass behind both scans: every process's maps, and with FDS its
 * descriptors too, except those of SKIP (a pid, or 0: the caller's own
 * descriptor of the file is how it asks, its mappings are not). */
static int scan(const char *proc_root, pid_t skip, bool fds, struct owner_file *files, size_t n,
                unsigned *ret_unreadable)
{
        unsigned unreadable = 0;
        struct dirent *de;
        DIR *d;

        *ret_unreadable = 0;
        for (size_t i = 0; i < n; i++)
                files[i].mapped = files[i].opened = false;
        if (n == 0)
                return 0;
        d = opendir(proc_root);
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                char path[PATH_MAX];
                const char *c = de->d_name;
                FILE *f;

                while (*c >= '0' && *c <= '9')
                        c++;
                if (*c || c == de->d_name)
                        continue;       /* not a process */
                snprintf(path, sizeof(path), "%s/%s/maps", proc_root, de->d_name);
                f = fopen(path, "re");
                if (!f) {
                        if (errno != ENOENT && errno != ESRCH)
                                unreadable++;   /* else it exited meanwhile */
                        continue;
                }
                errno = 0;
                scan_maps(f, files, n);
                /* A read that fails at once (EACCES on some kernels) is the
                 * same "cannot tell"; one that fails later (ESRCH) is an
                 * exit. */
                if (ferror(f) && errno != ESRCH)
                        unreadable++;
                fclose(f);
                if (fds && !(skip > 0 && atol(de->d_name) == (long)skip)) {
                        snprintf(path, sizeof(path), "%s/%s/fd", proc_root, de->d_name);
                        if (!owner_scan_fds(path, files, n))
                                unreadable++;
                }
        }
        closedir(d);
        *ret_unreadable = unreadable;
        return 0;
}

int owner_scan_mapped(const char *proc_root, struct owner_file *files, size_t n, unsigned *ret_unreadable)
{
        return scan(proc_root, 0, false, files, n, ret_unreadable);
}

int owner_scan_held(const char *proc_root, pid_t skip, struct owner_file *files, size_t n,
                    unsigned *ret_unreadable)
{
        return scan(proc_root, skip, true, files, n, ret_unreadable);
}

/* ---- the write lease ---- */

static pthread_once_t sigio_once = PTHREAD_ONCE_INIT;

/* A lease break is signalled to the lease holder with SIGIO, whose default
 * action ends the process: the daemon holds a lease for a few
 * microseconds, and an open in that window must not kill it.  Nothing else
 * here uses SIGIO (no O_ASYNC), so it is ignored process-wide. */
static void ignore_sigio(void)
{
        struct sigaction old, sa = { .sa_handler = SIG_IGN };

        if (sigaction(SIGIO, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
                (void)sigaction(SIGIO, &sa, NULL);
}

int owner_lease_alone(int fd)
{
        pthread_once(&sigio_once, ignore_sigio);
        if (fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
                return errno == EAGAIN ? 1 : -errno;
        /* At once: an opener that came meanwhile waits for this, not for
         * the lease-break-time. */
        (void)fcntl(fd, F_SETLEASE, F_UNLCK);
        return 0;
}
