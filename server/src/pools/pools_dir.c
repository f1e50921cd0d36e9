/* pools_dir: the directories pool files live in.
 *
 * A pool directory must be inside a hugetlbfs mount of its page size, must
 * not be a mount's root (QEMU, libvirt and DPDK keep their files there), and
 * must be ours: it holds POOLS_DIR_MARKER, or was empty when we first took
 * it.  Only because of that may start-up remove the files in it that no pool
 * record owns (a crash between creating a file and saving its record). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "log.h"
#include "owner.h"
#include "pools_internal.h"
#include "util.h"

/* Our directory: the VMM's group may list it, nobody else. */
#define POOL_DIR_MODE 0750
/* The stock directory in it: the daemon's alone, not even searchable. */
#define STOCK_DIR_MODE 0700

static int check_statfs(const char *path, uint64_t page_size)
{
        struct statfs sf;

        if (statfs(path, &sf) < 0)
                return -errno;
        if ((unsigned long)sf.f_type != (unsigned long)HUGETLBFS_MAGIC)
                return -EMEDIUMTYPE;
        if ((uint64_t)sf.f_bsize != page_size)
                return -EXDEV;
        return 0;
}

/* A hugetlbfs mount with size= counts every page its files hold or have
 * reserved (a mapping's) against the limit, and statfs says how many are
 * left (f_blocks is 0 without a limit).  A page the node has free is of no
 * use to a file the mount has no room for: its mmap fails. */
static int statfs_room(const char *dir, uint64_t page_size, uint64_t *ret)
{
        struct statfs sf;

        if (statfs(dir, &sf) < 0)
                return -errno;
        if ((unsigned long)sf.f_type != (unsigned long)HUGETLBFS_MAGIC || sf.f_blocks == 0 ||
            (uint64_t)sf.f_bsize != page_size)
                *ret = UINT64_MAX;
        else
                *ret = (uint64_t)sf.f_bavail;
        return 0;
}

uint64_t pools_mount_room(struct pools *p, uint64_t page_size)
{
        const char *dir = pools_mount_dir(p, page_size);
        uint64_t room;

        if (!dir || (p->cfg.mount_room ? p->cfg.mount_room : statfs_room)(dir, page_size, &room) < 0)
                return UINT64_MAX; /* the kernel's mmap still decides */
        return room;
}

static int make_dir(const char *dir, gid_t gid)
{
        if (mkdir(dir, POOL_DIR_MODE) < 0)
                return errno == EEXIST ? 0 : -errno;
        if (gid != (gid_t)-1 && chown(dir, (uid_t)-1, gid) < 0)
                return -errno;
        return 0;
}

/* 1 if DIR is the root of a mount (its own, or a bind mount), 0 if not. */
static int is_mount_root(const char *dir)
{
        _cleanup_free_ char *parent = NULL;
        struct statx sx, px;

        if (statx(AT_FDCWD, dir, 0, STATX_BASIC_STATS, &sx) < 0)
                return -errno;
        if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
                return !!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
        /* Kernels before 5.8: another device than its parent's, or "/". */
        if (asprintf(&parent, "%s/..", dir) < 0)
                return -ENOMEM;
        if (statx(AT_FDCWD, parent, 0, STATX_BASIC_STATS, &px) < 0)
                return -errno;
        return sx.stx_dev_major != px.stx_dev_major || sx.stx_dev_minor != px.stx_dev_minor ||
               sx.stx_ino == px.stx_ino;
}

static int dir_is_empty(int dfd)
{
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        struct dirent *de;
        int r = 1;
        DIR *d;

        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
                        r = 0;
                        break;
                }
        closedir(d);
        return r;
}

/* Make sure DIR is ours: it holds our marker, or it is empty and gets one
 * now.  A non-empty directory without it is refused (-ENOTEMPTY): its files
 * may be another program's, and start-up removes files we have no record of. */
static int claim_dir(const char *dir)
{
        _cleanup_close_ int dfd = -1, fd = -1;
        struct stat st;
        int r;

        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        if (fstatat(dfd, POOLS_DIR_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return S_ISREG(st.st_mode) ? 0 : -ENOTEMPTY;
        if (errno != ENOENT)
                return -errno;
        r = dir_is_empty(dfd);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOTEMPTY;
        fd = openat(dfd, POOLS_DIR_MARKER, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0440);
        if (fd < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* pools_check_mount; CHECK_FS false skips only the filesystem type checks
 * (unit tests stand a tmpfs directory in), never the ownership checks. */
int pools_prepare_dir(const char *dir, uint64_t page_size, gid_t gid, bool check_fs)
{
        struct stat st;
        int r;

        if (!dir || !*dir || page_size == 0)
                return -EINVAL;
        if (stat(dir, &st) < 0) {
                if (errno != ENOENT)
                        return -errno;
                /* Missing: only create it if its parent is the right mount. */
                _cleanup_free_ char *parent = strdup(dir);
                if (!parent)
                        return -ENOMEM;
                char *slash = strrchr(parent, '/');
                while (slash && slash != parent && slash[1] == '\0') {
                        *slash = '\0';
                        slash = strrchr(parent, '/');
                }
                if (!slash)
                        strcpy(parent, ".");
                else if (slash == parent)
                        parent[1] = '\0';
                else
                        *slash = '\0';
                r = check_fs ? check_statfs(parent, page_size) : 0;
                if (r < 0)
                        return r;
                r = make_dir(dir, gid);
                if (r < 0)
                        return r;
                if (stat(dir, &st) < 0)
                        return -errno;
        }
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        r = check_fs ? check_statfs(dir, page_size) : 0;
        if (r < 0)
                return r;
        /* Start-up removes files no record owns: never in a mount's root
         * (QEMU, libvirt and DPDK keep their files there). */
        r = is_mount_root(dir);
        if (r < 0)
                return r;
        if (r > 0)
                return -EBUSY;
        return claim_dir(dir);
}

int pools_check_mount(const char *dir, uint64_t page_size, gid_t gid)
{
        assert_return(dir, -EINVAL);
        return pools_prepare_dir(dir, page_size, gid, true);
}

int pools_prepare_stock_dir(const char *dir, char **ret)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (asprintf(&path, "%s/%s", dir, POOLS_STOCK_DIR) < 0)
                return -ENOMEM;
        if (mkdir(path, STOCK_DIR_MODE) < 0 && errno != EEXIST)
                return -errno;
        /* Whatever was there: a directory (no link followed), made ours
         * and closed to everyone else through its own descriptor. */
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ELOOP ? -ENOTDIR : -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((st.st_uid != geteuid() || st.st_gid != getegid()) && fchown(fd, geteuid(), getegid()) < 0)
                return -errno;
        if ((st.st_mode & 07777) != STOCK_DIR_MODE && fchmod(fd, STOCK_DIR_MODE) < 0)
                return -errno;
        *ret = TAKE_PTR(path);
        return 0;
}

/* Whether a row of PAGE_SIZE owns the file NAME in its pool directory
 * (STOCK false) or its stock directory (STOCK true): a stock name in the
 * pool directory (where stock files lived before POOLS_STOCK_DIR) or a
 * pool's name in the stock directory is no row's. */
static bool has_record(struct pools *p, uint64_t page_size, bool stock, const char *name)
{
        if ((name[0] == POOL_STOCK_PREFIX) != stock)
                return false;
        for (size_t i = 0; i < p->reg.n_pools; i++) {
                const struct pool_record *r = &p->reg.pools[i]->rec;
                if (r->page_size == page_size && strcmp(r->name, name) == 0)
                        return true;
        }
        return false;
}

/* A file in one of our directories that no record owns. */
struct orphan {
        size_t mount;
        bool stock;             /* in the mount's stock directory */
        char name[POOL_NAME_MAX + 1];
        uint64_t bytes;
};

/* Whether anyone else has the file at DIRFD/NAME open or mapped: 0 no (it
 * is unlinked then, under the lease), 1 yes, -errno cannot tell.  A write
 * lease is refused (EAGAIN) while any other open file — an fd, or a mapping
 * whose fd was closed — refers to the inode, and taking one needs no access
 * to the other processes (unlike their /proc/PID/maps). */
static int unlink_if_unused(int dirfd, const char *name)
{
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        int r;

        if (fd < 0)
                return -errno;
        if (fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
                return errno == EAGAIN ? 1 : -errno;
        r = unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
        (void)fcntl(fd, F_SETLEASE, F_UNLCK);
        return r;
}

/* Remove files in our directories that no record owns (a crash between
 * creating a file and saving, a journal from another boot, or one discarded
 * with --reset-state) — but never a file some process maps or has open: a
 * VM may run on it whatever the journal says.  Two checks: /proc/PID/maps
 * of every process (dev + inode), and a write lease on the file, which the
 * kernel refuses while anyone else has it open or mapped (so processes
 * whose maps we may not read still count).  When the lease cannot be taken
 * for another reason and not every process's maps could be read, the file
 * is kept. */
void pools_remove_orphans(struct pools *p)
{
        _cleanup_free_ struct orphan *orphans = NULL;
        _cleanup_free_ struct owner_file *files = NULL;
        size_t n = 0, cap = 0;
        unsigned unreadable = 0;
        int r;

        for (size_t k = 0; k < 2 * p->cfg.n_mounts; k++) {
                size_t m = k / 2;
                bool stock = k % 2;
                const char *dir = stock ? p->stock_dirs[m] : p->mount_dirs[m];
                DIR *d = opendir(dir);
                struct dirent *de;
                struct stat st;

                if (!d) {
                        log_warn("pools: cannot list %s: %m", dir);
                        continue;
                }
                /* pools_new checked the marker; never sweep a directory
                 * that lost it since (the stock directory is in it). */
                if (fstatat(dirfd(d), stock ? "../" POOLS_DIR_MARKER : POOLS_DIR_MARKER, &st,
                            AT_SYMLINK_NOFOLLOW) < 0) {
                        log_warn("pools: %s has no %s; not removing unrecorded files", dir, POOLS_DIR_MARKER);
                        closedir(d);
                        continue;
                }
                while ((de = readdir(d))) {
                        /* Only names a pool or a stock file can have: never
                         * the marker, nor anything else we could not have
                         * created. */
                        if (!pool_name_valid(de->d_name) && !pool_stock_name_valid(de->d_name))
                                continue;
                        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                            !S_ISREG(st.st_mode) || has_record(p, p->cfg.mounts[m].page_size, stock, de->d_name))
                                continue;
                        if (n == cap) {
                                size_t c = cap ? 2 * cap : 16;
                                struct orphan *o = realloc(orphans, c * sizeof(*o));
                                struct owner_file *f = realloc(files, c * sizeof(*f));
                                if (o)
                                        orphans = o;
                                if (f)
                                        files = f;
                                if (!o || !f) {
                                        log_err("pools: out of memory listing orphan files; removing none");
                                        closedir(d);
                                        return;
                                }
                                cap = c;
                        }
                        orphans[n] = (struct orphan){ .mount = m, .stock = stock,
                                                      .bytes = (uint64_t)st.st_blocks * 512 };
                        snprintf(orphans[n].name, sizeof(orphans[n].name), "%.*s", POOL_NAME_MAX, de->d_name);
                        files[n] = (struct owner_file){ .dev = st.st_dev, .ino = st.st_ino };
                        n++;
                }
                closedir(d);
        }
        if (n == 0)
                return;
        r = owner_scan_mapped(p->proc_root, files, n, &unreadable);
        bool complete = r == 0 && unreadable == 0;
        if (r < 0)
                for (size_t i = 0; i < n; i++)
                        files[i].mapped = false;        /* the lease alone decides */
        for (size_t i = 0; i < n; i++) {
                const char *dir = orphans[i].stock ? p->stock_dirs[orphans[i].mount]
                                                   : p->mount_dirs[orphans[i].mount];
                char path[PATH_MAX];
                int dfd, q;

                snprintf(path, sizeof(path), "%s/%s", dir, orphans[i].name);
                if (files[i].mapped) {
                        log_warn("pools: %s has no pool record but a process maps it; kept (remove it "
                                 "once no VM uses it)", path);
                        continue;
                }
                dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                q = dfd < 0 ? -errno : unlink_if_unused(dfd, orphans[i].name);
                if (q == -EINVAL || q == -ENOSYS) {
                        /* No leases here: the maps scan decides, if whole. */
                        q = complete ? (unlinkat(dfd, orphans[i].name, 0) < 0 ? -errno : 0) : -EINVAL;
                }
                if (dfd >= 0)
                        close(dfd);
                if (q == 1) {
                        log_warn("pools: %s has no pool record but a process has it open or mapped; kept "
                                 "(remove it once no VM uses it)", path);
                        continue;
                }
                if (q < 0) {
                        log_warn("pools: %s has no pool record; kept: cannot tell whether a process uses "
                                 "it (%s)", path, q == -EINVAL ? "no file leases, and some processes' "
                                 "mappings are unreadable" : strerror(-q));
                        continue;
                }
                log_notice("pools: removed %s (%" PRIu64 " bytes held), which no pool record owns", path,
                           orphans[i].bytes);
                p->reg.stats.orphan_files_removed++;
        }
}
