/* journal_files: the state directory — where the journal's two files live
 * and how a file there is made durable.  A file is replaced, never written
 * in place: temp file, write, fsync, rename over the old one, then the
 * directory fsynced (the caller, journal_log.c, orders those steps for a
 * compaction).  A file is read whole and only when it is a regular file
 * within the size limit (anything larger is not ours).  The tests' faults
 * live here too, beside the writes they break: a save error every write
 * returns, and the crash points where the process kills itself.  Knows
 * nothing of what the files hold (journal_codec.c, journal_log.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "journal_internal.h"
#include "util.h"

int journal_path_in(char *buf, size_t size, const char *dir, const char *name)
{
        int n = snprintf(buf, size, "%s/%s", dir, name);
        if (n < 0 || (size_t)n >= size)
                return -ENAMETOOLONG;
        return 0;
}

int journal_fsync_dir(const char *dir)
{
        _cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fsync(fd) < 0)
                return -errno;
        return 0;
}

int journal_write_all(int fd, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

/* Read all of PATH (a regular file within the size limit); caller frees. */
int journal_read_small_file(const char *path, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len = 0, cap;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EISDIR;
        if (st.st_size > (off_t)JOURNAL_MAX_BYTES)
                return -EFBIG;
        /* Read to EOF rather than trusting st_size, into a buffer sized by it
         * (plus one, to see growth) so a small journal costs little. */
        cap = (size_t)st.st_size + 1;
        buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;
                if (len == cap) {
                        char *nb;
                        if (cap > JOURNAL_MAX_BYTES)
                                return -EFBIG;
                        cap = cap * 2 > JOURNAL_MAX_BYTES + 1 ? JOURNAL_MAX_BYTES + 1 : cap * 2;
                        nb = realloc(buf, cap + 1);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                n = read(fd, buf + len, cap - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > JOURNAL_MAX_BYTES)
                        return -EFBIG;
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}


/* Tests only: the errno every save fails with (0 = none), as a full disk
 * (ENOSPC), an I/O error (EIO) or a read-only remount (EROFS) would, after
 * the file it writes was opened: what was saved before stays as it was. */
static atomic_int save_fault;

void journal_inject_save_error(int err)
{
        atomic_store(&save_fault, err < 0 ? -err : err);
}

/* Tests only: where the process kills itself (journal.h). */
static atomic_int crash_point;

void journal_inject_crash(enum journal_crash_point at)
{
        atomic_store(&crash_point, (int)at);
}

int journal_injected_error(void)
{
        return -atomic_load(&save_fault);
}

bool journal_crash_armed(enum journal_crash_point at)
{
        return atomic_load(&crash_point) == (int)at;
}

void journal_crash_if(enum journal_crash_point at)
{
        if (journal_crash_armed(at))
                raise(SIGKILL);
}

/* Write TEXT[LEN] to TMP, fsync it and rename it to FINAL.  *RET_FD: the
 * file, still open for appending (NULL: closed). */
int journal_write_replace(const char *tmp, const char *final, const char *text, size_t len, int *ret_fd)
{
        int fd, r;

        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        r = journal_injected_error();
        if (r == 0)
                r = journal_write_all(fd, text, len);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        journal_crash_if(ret_fd ? JOURNAL_CRASH_LOG_WRITTEN : JOURNAL_CRASH_SNAPSHOT_WRITTEN);
        if (r == 0 && rename(tmp, final) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                unlink(tmp);
                return r;
        }
        if (ret_fd)
                *ret_fd = fd;
        else if (close(fd) < 0)
                return -errno;
        return 0;
}

void journal_new_snapshot_id(char id[JOURNAL_SNAPSHOT_ID_LEN + 1])
{
        uint64_t v;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
                v = now_mono_ns() ^ ((uint64_t)getpid() << 32);
        snprintf(id, JOURNAL_SNAPSHOT_ID_LEN + 1, "%016" PRIx64, v);
}

/* Several quarantines within one second get a counter suffix. */
#define QUARANTINE_TRIES 100

/* The log goes aside with its snapshot, under the same SUFFIX: apart, it
 * means nothing, and the next start must not replay it. */
static int quarantine_log(const char *dir, const char *suffix)
{
        char from[PATH_MAX], to[PATH_MAX];
        int r, n;

        r = journal_path_in(from, sizeof(from), dir, LOG_FILE);
        if (r < 0)
                return r;
        n = snprintf(to, sizeof(to), "%s%s", from, suffix);
        if (n < 0 || (size_t)n >= sizeof(to))
                return -ENAMETOOLONG;
        if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static bool quarantine_log_free(const char *dir, const char *suffix)
{
        char to[PATH_MAX];
        struct stat st;
        int n = snprintf(to, sizeof(to), "%s/" LOG_FILE "%s", dir, suffix);

        return n > 0 && (size_t)n < sizeof(to) && lstat(to, &st) < 0 && errno == ENOENT;
}

int journal_quarantine(const char *dir)
{
        char from[PATH_MAX], to[PATH_MAX];
        long now = (long)time(NULL);
        int r;

        assert_return(dir, -EINVAL);
        r = journal_path_in(from, sizeof(from), dir, STATE_FILE);
        if (r < 0)
                return r;
        for (int i = 0; i < QUARANTINE_TRIES; i++) {
                int n = i == 0 ? snprintf(to, sizeof(to), "%s.corrupt-%ld", from, now)
                               : snprintf(to, sizeof(to), "%s.corrupt-%ld.%d", from, now, i);
                if (n < 0 || (size_t)n >= sizeof(to))
                        return -ENAMETOOLONG;
                /* A suffix free for both names, so the pair stays a pair. */
                if (!quarantine_log_free(dir, to + strlen(from)))
                        continue;
                if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
                        return quarantine_log(dir, to + strlen(from)) ?: journal_fsync_dir(dir);
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

