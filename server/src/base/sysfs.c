/* sysfs: the only place that opens files under the sysfs root.
 *
 * The root is held open as a directory fd and every access is an openat()
 * relative to it, so the daemon can be pointed at a fixture tree with
 * --sysfs-root and nothing else in the program needs to know.  Files are read
 * with read(2) in one go (sysfs attributes are generated whole on the first
 * read) and written with a single write(2) of decimal text: sysfs parses each
 * write() call on its own, so the value must never be split across calls and
 * stdio buffering is not wanted.  Writes open with O_TRUNC, which sysfs
 * ignores and which keeps plain fixture files holding exactly one value.
 *
 * Counter reads and writes go through a small ops table whose defaults are
 * the real calls; unit tests swap in hooks to play a lying kernel. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysfs.h"
#include "util.h"

/* A u64 in decimal is at most 20 digits; anything longer than this buffer is
 * not a counter. */
#define U64_FILE_MAX 32

struct sysfs {
        int dirfd;
        const struct sysfs_ops *ops;
        void *userdata;
        bool read_only;         /* sysfs_forbid_writes: every write is -EROFS */
};

/* Paths are always relative: an absolute one would make openat() ignore the
 * root and escape the fixture tree. */
static int check_path(const char *path)
{
        if (!path || !*path || path[0] == '/')
                return -EINVAL;
        return 0;
}

int sysfs_open(const char *root, struct sysfs **ret)
{
        _cleanup_close_ int fd = -1;
        struct sysfs *fs;

        if (!root || !*root)
                return -EINVAL;
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        fs = calloc(1, sizeof(*fs));
        if (!fs)
                return -ENOMEM;
        fs->dirfd = TAKE_FD(fd);
        fs->ops = &sysfs_default_ops;
        *ret = fs;
        return 0;
}

void sysfs_close(struct sysfs *fs)
{
        if (!fs)
                return;
        if (fs->dirfd >= 0)
                close(fs->dirfd);
        free(fs);
}

void sysfs_set_ops(struct sysfs *fs, const struct sysfs_ops *ops, void *userdata)
{
        fs->ops = ops ? ops : &sysfs_default_ops;
        fs->userdata = ops ? userdata : NULL;
}

/* Read at most LEN bytes of PATH into BUF; *ret_n is the byte count.  -EFBIG
 * if the file holds more than LEN bytes. */
static int read_file(const struct sysfs *fs, const char *path, char *buf, size_t len, size_t *ret_n)
{
        _cleanup_close_ int fd = -1;
        size_t n = 0;
        int r;

        r = check_path(path);
        if (r < 0)
                return r;
        fd = openat(fs->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        for (;;) {
                char extra;
                ssize_t k;

                if (n == len) {
                        /* Full: one more byte tells "exactly LEN" from "more". */
                        k = read(fd, &extra, 1);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return -errno;
                        if (k > 0)
                                return -EFBIG;
                        break;
                }
                k = read(fd, buf + n, len - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        *ret_n = n;
        return 0;
}

/* Strict decimal: digits only, at most one trailing newline, no overflow. */
static int parse_u64_strict(const char *s, size_t n, uint64_t *ret)
{
        uint64_t v = 0;
        size_t i;

        if (n > 0 && s[n - 1] == '\n')
                n--;
        if (n == 0)
                return -EINVAL;
        for (i = 0; i < n; i++) {
                unsigned d;

                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                d = (unsigned)(s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

static int real_read_u64(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        char buf[U64_FILE_MAX];
        size_t n;
        int r;

        r = read_file(fs, path, buf, sizeof(buf), &n);
        if (r == -EFBIG)
                return -EINVAL;
        if (r < 0)
                return r;
        return parse_u64_strict(buf, n, ret);
}

static int real_write_u64(const struct sysfs *fs, const char *path, uint64_t v, void *userdata)
{
        _cleanup_close_ int fd = -1;
        char buf[U64_FILE_MAX];
        ssize_t k;
        int len, r;

        r = check_path(path);
        if (r < 0)
                return r;
        len = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
        fd = openat(fs->dirfd, path, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        do
                k = write(fd, buf, (size_t)len);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        /* sysfs consumes a write whole; a short byte count means the value
         * was not taken as written, and resending the tail would be parsed
         * as a separate number. */
        if (k != len)
                return -EIO;
        return 0;
}

const struct sysfs_ops sysfs_default_ops = {
        .read_u64 = real_read_u64,
        .write_u64 = real_write_u64,
};

int sysfs_read_u64(const struct sysfs *fs, const char *path, uint64_t *ret)
{
        return fs->ops->read_u64(fs, path, ret, fs->userdata);
}

int sysfs_write_u64(const struct sysfs *fs, const char *path, uint64_t v)
{
        if (fs->read_only)
                return -EROFS;
        return fs->ops->write_u64(fs, path, v, fs->userdata);
}

void sysfs_forbid_writes(struct sysfs *fs)
{
        fs->read_only = true;
}

int sysfs_read_str(const struct sysfs *fs, const char *path, char *buf, size_t len)
{
        size_t n;
        int r;

        if (len == 0)
                return -EINVAL;
        r = read_file(fs, path, buf, len - 1, &n);
        if (r < 0)
                return r;
        if (memchr(buf, '\0', n))
                return -EINVAL;
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
                n--;
        buf[n] = '\0';
        return 0;
}

int sysfs_exists(const struct sysfs *fs, const char *path)
{
        struct stat st;
        int r;

        r = check_path(path);
        if (r < 0)
                return r;
        if (fstatat(fs->dirfd, path, &st, 0) < 0)
                return -errno;
        return 0;
}

int sysfs_for_each(const struct sysfs *fs, const char *path, const char *prefix,
                   int (*fn)(const char *name, void *arg), void *arg)
{
        size_t plen = prefix ? strlen(prefix) : 0;
        struct dirent *de;
        DIR *d;
        int fd, r = 0;

        r = check_path(path);
        if (r < 0)
                return r;
        fd = openat(fs->dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }
        for (;;) {
                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                r = -errno;
                        break;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (plen && strncmp(de->d_name, prefix, plen) != 0)
                        continue;
                r = fn(de->d_name, arg);
                if (r < 0)
                        break;
                r = 0;
        }
        closedir(d);
        return r;
}
