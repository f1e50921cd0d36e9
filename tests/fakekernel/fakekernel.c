/* fakekernel: an LD_PRELOAD shim that makes a fixture tree answer writes to
 * nr_hugepages the way the kernel does, so integration tests can drive the
 * real daemon (--sysfs-root <copy of a fixture>) through full, partial and
 * refused reservations without touching real memory.  See README.md.
 *
 * What the kernel does that a plain file does not:
 *  - it may give fewer pages than written (fragmentation) and still report
 *    success: a sibling "nr_hugepages.cap" file holds the most pages this
 *    pool can reach;
 *  - shrinking frees only free pages: pages in use (nr - free, measured
 *    before the write) stay, the excess over the target shows as surplus;
 *  - free_hugepages follows nr_hugepages, and the global counters under
 *    kernel/mm/hugepages are the sums over the nodes;
 *  - growing a pool of 1 GiB pages can compact memory for seconds: a sibling
 *    "nr_hugepages.delay_ms" file makes each write take that long;
 *  - a test can hold a write for as long as it needs: while a sibling
 *    "nr_hugepages.hold" exists the write waits, and "nr_hugepages.held"
 *    exists while it does, so the test knows a write is in progress.
 *
 * Only write(2) on an fd whose /proc/self/fd link ends in "/nr_hugepages" is
 * simulated, and never on a real sysfs file (checked with fstatfs).  Because
 * writers open with O_TRUNC, the value before the write is gone by the time
 * write() runs, so the open family is wrapped too, only to remember that
 * value per fd.  Everything else passes straight to libc via
 * dlsym(RTLD_NEXT).  This is test code: failures inside the simulation are
 * reported as EIO to the writer.
 *
 * With HPW_FAKE_HUGETLBFS_2M set to a directory (on tmpfs), statfs(2) of a
 * path inside it says hugetlbfs with 2 MiB pages, so the daemon takes a
 * tmpfs directory as its pool directory and warms pools there (tmpfs pages
 * populate and map like hugetlbfs files, only smaller): the API's pool
 * paths answer end to end on a fixture, without real hugepages. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef SYSFS_MAGIC
#define SYSFS_MAGIC 0x62656572
#endif
#define FAKE_HUGETLBFS_MAGIC 0x958458f6 /* <linux/magic.h> HUGETLBFS_MAGIC */
#define FAKE_HUGETLBFS_PAGE (2UL << 20)

/* Remembered values are kept for fds below this; others read the file. */
#define MAX_TRACKED_FD 4096

static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);

struct prev {
        bool valid;
        dev_t dev;
        ino_t ino;
        uint64_t value;
};

static struct prev prevs[MAX_TRACKED_FD];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void resolve(void)
{
        if (!real_write)
                real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
        if (!real_open)
                real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
        if (!real_openat)
                real_openat = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
}

static bool ends_with_nr(const char *path)
{
        size_t n = strlen(path);

        return (n >= 13 && strcmp(path + n - 13, "/nr_hugepages") == 0) || strcmp(path, "nr_hugepages") == 0;
}

/* A decimal as nr_hugepages takes it: digits, at most one trailing newline,
 * no overflow; -1 otherwise.  Runs inside the caller's write(): errno is
 * left as it was. */
static int parse_u64(const char *s, size_t n, uint64_t *ret)
{
        char digits[24];
        int saved = errno;
        unsigned long long v;

        if (n > 0 && s[n - 1] == '\n')
                n--;
        if (n == 0 || n >= sizeof(digits))
                return -1;
        memcpy(digits, s, n);
        digits[n] = '\0';
        if (strspn(digits, "0123456789") != n)
                return -1;
        errno = 0;
        v = strtoull(digits, NULL, 10);
        if (errno == ERANGE) {
                errno = saved;
                return -1;
        }
        errno = saved;
        *ret = (uint64_t)v;
        return 0;
}

/* Read a decimal file by absolute path; -1 if absent or not a number. */
static int read_u64_path(const char *path, uint64_t *ret)
{
        char buf[64];
        ssize_t n;
        int fd;

        fd = real_open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        n = read(fd, buf, sizeof(buf));
        close(fd);
        if (n <= 0)
                return -1;
        return parse_u64(buf, (size_t)n, ret);
}

static int write_u64_path(const char *path, uint64_t v)
{
        char buf[32];
        int fd, len;
        ssize_t n;

        fd = real_open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0)
                return -1;
        len = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
        n = real_write(fd, buf, (size_t)len);
        close(fd);
        return n == len ? 0 : -1;
}

/* Called before an open that may truncate: remember the current value. */
static bool peek_before_open(int dirfd, const char *path, int flags, uint64_t *ret)
{
        int fd;
        char buf[64];
        ssize_t n;

        if ((flags & O_ACCMODE) == O_RDONLY || !ends_with_nr(path))
                return false;
        fd = real_openat(dirfd, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        n = read(fd, buf, sizeof(buf));
        close(fd);
        return n > 0 && parse_u64(buf, (size_t)n, ret) == 0;
}

static void remember(int fd, bool have, uint64_t v)
{
        struct stat st;

        if (fd < 0 || fd >= MAX_TRACKED_FD)
                return;
        pthread_mutex_lock(&lock);
        prevs[fd].valid = have && fstat(fd, &st) == 0;
        if (prevs[fd].valid) {
                prevs[fd].dev = st.st_dev;
                prevs[fd].ino = st.st_ino;
                prevs[fd].value = v;
        }
        pthread_mutex_unlock(&lock);
}

static int do_openat(int dirfd, const char *path, int flags, mode_t mode)
{
        uint64_t v = 0;
        bool have;
        int fd;

        resolve();
        have = peek_before_open(dirfd, path, flags, &v);
        fd = real_openat(dirfd, path, flags, mode);
        remember(fd, have, v);
        return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
        if (flags & (O_CREAT | O_TMPFILE))
                return (mode_t)va_arg(ap, int);
        return 0;
}

/* The variadic open family, each passing its mode (there only with O_CREAT
 * or O_TMPFILE) and O_LARGEFILE for the *64 names on to do_openat. */
#define FK_OPEN_ENTRY(name, params, dirfd_arg, extra_flags)                          \
        int name params                                                              \
        {                                                                            \
                va_list ap;                                                          \
                mode_t mode;                                                         \
                                                                                     \
                va_start(ap, flags);                                                 \
                mode = mode_arg(flags, ap);                                          \
                va_end(ap);                                                          \
                return do_openat(dirfd_arg, path, flags | (extra_flags), mode);      \
        }

FK_OPEN_ENTRY(open, (const char *path, int flags, ...), AT_FDCWD, 0)
FK_OPEN_ENTRY(open64, (const char *path, int flags, ...), AT_FDCWD, O_LARGEFILE)
FK_OPEN_ENTRY(openat, (int dirfd, const char *path, int flags, ...), dirfd, 0)
FK_OPEN_ENTRY(openat64, (int dirfd, const char *path, int flags, ...), dirfd, O_LARGEFILE)

/* _FORTIFY_SOURCE entry points. */
int __open_2(const char *path, int flags);
int __open_2(const char *path, int flags) { return do_openat(AT_FDCWD, path, flags, 0); }
int __openat_2(int dirfd, const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags) { return do_openat(dirfd, path, flags, 0); }
int __open64_2(const char *path, int flags);
int __open64_2(const char *path, int flags) { return do_openat(AT_FDCWD, path, flags | O_LARGEFILE, 0); }
int __openat64_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags) { return do_openat(dirfd, path, flags | O_LARGEFILE, 0); }

/* The fd's path if it is a nr_hugepages file outside sysfs, else false. */
static bool simulated_target(int fd, char *path, size_t len)
{
        char link[64];
        struct statfs sfs;
        ssize_t n;

        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, path, len - 1);
        if (n <= 0)
                return false;
        path[n] = '\0';
        if (!ends_with_nr(path))
                return false;
        if (fstatfs(fd, &sfs) == 0 && sfs.f_type == SYSFS_MAGIC)
                return false;
        return true;
}

static void sibling(const char *path, const char *name, char *buf, size_t len)
{
        const char *slash = strrchr(path, '/');

        snprintf(buf, len, "%.*s/%s", (int)(slash - path), path, name);
}

/* For ROOT/devices/system/node/nodeN/hugepages/hugepages-XkB/nr_hugepages,
 * set ROOT/kernel/mm/hugepages/hugepages-XkB/{nr,free}_hugepages to the sums
 * over ROOT/devices/system/node/node*. */
static void update_globals(const char *path)
{
        const char *marker = strstr(path, "/devices/system/node/node");
        const char *hp, *size_end;
        char root[PATH_MAX], size_dir[64], p[PATH_MAX + 128];
        uint64_t sum_nr = 0, sum_free = 0;
        int node;

        if (!marker)
                return;
        hp = strstr(marker, "/hugepages/hugepages-");
        if (!hp)
                return;
        hp += strlen("/hugepages/");
        size_end = strchr(hp, '/');
        if (!size_end || (size_t)(size_end - hp) >= sizeof(size_dir))
                return;
        snprintf(size_dir, sizeof(size_dir), "%.*s", (int)(size_end - hp), hp);
        snprintf(root, sizeof(root), "%.*s", (int)(marker - path), path);

        /* Node ids are small in fixtures; scanning a fixed range is enough. */
        for (node = 0; node < 256; node++) {
                uint64_t nr, fr;

                snprintf(p, sizeof(p), "%s/devices/system/node/node%d/hugepages/%s/nr_hugepages", root, node, size_dir);
                if (read_u64_path(p, &nr) < 0)
                        continue;
                snprintf(p, sizeof(p), "%s/devices/system/node/node%d/hugepages/%s/free_hugepages", root, node, size_dir);
                if (read_u64_path(p, &fr) < 0)
                        fr = 0;
                sum_nr += nr;
                sum_free += fr;
        }
        snprintf(p, sizeof(p), "%s/kernel/mm/hugepages/%s/nr_hugepages", root, size_dir);
        if (access(p, F_OK) == 0)
                write_u64_path(p, sum_nr);
        snprintf(p, sizeof(p), "%s/kernel/mm/hugepages/%s/free_hugepages", root, size_dir);
        if (access(p, F_OK) == 0)
                write_u64_path(p, sum_free);
}

/* While a sibling "nr_hugepages.hold" exists, wait; "nr_hugepages.held"
 * marks a write waiting here (created before, removed after). */
static void hold_while_asked(const char *path)
{
        char p_hold[PATH_MAX + 32], p_held[PATH_MAX + 32];
        int fd;

        sibling(path, "nr_hugepages.hold", p_hold, sizeof(p_hold));
        if (access(p_hold, F_OK) != 0)
                return;
        sibling(path, "nr_hugepages.held", p_held, sizeof(p_held));
        fd = real_open(p_held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0)
                close(fd);
        while (access(p_hold, F_OK) == 0)
                usleep(10 * 1000);
        unlink(p_held);
}

static ssize_t simulate(int fd, const char *path, const void *buf, size_t count)
{
        char p_free[PATH_MAX + 32], p_surp[PATH_MAX + 32], p_cap[PATH_MAX + 32], out[32];
        uint64_t want, prev, free_ = 0, cap, in_use, now;
        bool have_prev = false;
        struct stat st;
        int len;

        if (parse_u64(buf, count, &want) < 0) {
                errno = EINVAL; /* as kstrtoul() in the kernel */
                return -1;
        }
        if (fd < MAX_TRACKED_FD && fstat(fd, &st) == 0) {
                pthread_mutex_lock(&lock);
                if (prevs[fd].valid && prevs[fd].dev == st.st_dev && prevs[fd].ino == st.st_ino) {
                        prev = prevs[fd].value;
                        have_prev = true;
                }
                pthread_mutex_unlock(&lock);
        }
        if (!have_prev && read_u64_path(path, &prev) < 0)
                prev = 0;

        sibling(path, "free_hugepages", p_free, sizeof(p_free));
        sibling(path, "surplus_hugepages", p_surp, sizeof(p_surp));
        sibling(path, "nr_hugepages.cap", p_cap, sizeof(p_cap));
        char p_delay[PATH_MAX + 32];
        uint64_t delay_ms;
        sibling(path, "nr_hugepages.delay_ms", p_delay, sizeof(p_delay));
        if (read_u64_path(p_delay, &delay_ms) == 0 && delay_ms > 0)
                usleep((useconds_t)(delay_ms * 1000));
        hold_while_asked(path);
        if (read_u64_path(p_free, &free_) < 0)
                free_ = prev;
        in_use = prev > free_ ? prev - free_ : 0;
        now = want;
        if (read_u64_path(p_cap, &cap) == 0 && now > cap)
                now = cap;
        if (now < in_use)
                now = in_use;

        len = snprintf(out, sizeof(out), "%" PRIu64 "\n", now);
        if (ftruncate(fd, 0) < 0 || pwrite(fd, out, (size_t)len, 0) != len) {
                errno = EIO;
                return -1;
        }
        if (access(p_free, F_OK) == 0 && write_u64_path(p_free, now - in_use) < 0) {
                errno = EIO;
                return -1;
        }
        if (access(p_surp, F_OK) == 0)
                write_u64_path(p_surp, now > want ? now - want : 0);
        remember(fd, true, now);
        update_globals(path);
        return (ssize_t)count; /* the kernel reports the whole write as taken */
}

ssize_t write(int fd, const void *buf, size_t count)
{
        char path[PATH_MAX];

        resolve();
        if (fd > 2 && simulated_target(fd, path, sizeof(path)))
                return simulate(fd, path, buf, count);
        return real_write(fd, buf, count);
}

/* ---- statfs: a tmpfs directory posing as a 2 MiB hugetlbfs ---- */

static bool under_fake_hugetlbfs(const char *path)
{
        const char *dir = getenv("HPW_FAKE_HUGETLBFS_2M");
        char real[PATH_MAX];
        size_t n;

        if (!dir || !*dir || !realpath(path, real))
                return false;
        n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/')
                n--;
        return strncmp(real, dir, n) == 0 && (real[n] == '\0' || real[n] == '/');
}

int statfs(const char *path, struct statfs *buf)
{
        static int (*real_statfs)(const char *, struct statfs *);
        int r;

        if (!real_statfs)
                real_statfs = (int (*)(const char *, struct statfs *))dlsym(RTLD_NEXT, "statfs");
        r = real_statfs(path, buf);
        if (r == 0 && under_fake_hugetlbfs(path)) {
                buf->f_type = FAKE_HUGETLBFS_MAGIC;
                buf->f_bsize = FAKE_HUGETLBFS_PAGE;
        }
        return r;
}

int statfs64(const char *path, struct statfs64 *buf);
int statfs64(const char *path, struct statfs64 *buf)
{
        return statfs(path, (struct statfs *)buf);
}
