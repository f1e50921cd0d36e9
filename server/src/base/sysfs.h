/* sysfs: every read and write of kernel topology and hugepage counters goes
 * through here, relative to one root directory (default "/sys"), so tests run
 * against fixture trees.  Only this module opens paths under the sysfs root.
 *
 * Paths are relative to the root, e.g. "devices/system/node/node0/cpulist".
 * Errors are negative errno values; out-parameters are written only on success. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct sysfs;

/* Open ROOT as a directory; the caller owns *ret (free with sysfs_close). */
int sysfs_open(const char *root, struct sysfs **ret);
void sysfs_close(struct sysfs *fs); /* accepts NULL */

/* Read a file holding one unsigned decimal integer (trailing newline allowed).
 * -EINVAL for anything else (empty, sign, garbage, overflow). */
int sysfs_read_u64(const struct sysfs *fs, const char *path, uint64_t *ret);

/* Write V in decimal.  A write the kernel accepted only partly is not an error
 * here: callers that care (reserve.c) read the value back. */
int sysfs_write_u64(const struct sysfs *fs, const char *path, uint64_t v);

/* From now on every sysfs_write_u64 on FS is -EROFS, before any hook or
 * file is reached; reads are unchanged.  hpwarmd --fixed-hugepages: the
 * counters are the host's (a scheduler read them once) and no path of the
 * daemon may change one, even a path that forgot to ask.  Call it before
 * sharing FS; there is no way back. */
void sysfs_forbid_writes(struct sysfs *fs);

/* Read a whole small file (< LEN) as a NUL-terminated string, trailing
 * whitespace stripped.  -EFBIG when it does not fit. */
int sysfs_read_str(const struct sysfs *fs, const char *path, char *buf, size_t len);

/* 0 if PATH exists (file or directory), -ENOENT otherwise. */
int sysfs_exists(const struct sysfs *fs, const char *path);

/* Call FN for each entry of directory PATH whose name starts with PREFIX
 * (not "." or ".."), in no particular order.  Stops at and returns FN's first
 * negative return. */
int sysfs_for_each(const struct sysfs *fs, const char *path, const char *prefix,
                   int (*fn)(const char *name, void *arg), void *arg);

/* Test seam, in the manner of SQLite's test VFS: the two calls through which
 * every counter is read and written.  The defaults, sysfs_default_ops, are
 * the real file operations; a test installs its own to simulate what fixture
 * files cannot: a kernel that gives fewer pages than written, EIO on write, a
 * read-only file (root ignores file modes).  A hook may call sysfs_default_ops itself
 * to reach the file.  USERDATA is passed through untouched. */
struct sysfs_ops {
        int (*read_u64)(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata);
        int (*write_u64)(const struct sysfs *fs, const char *path, uint64_t v, void *userdata);
};
extern const struct sysfs_ops sysfs_default_ops;

/* Install OPS (NULL: back to the defaults).  OPS must outlive FS.  Not
 * thread-safe against concurrent readers: call it before sharing FS. */
void sysfs_set_ops(struct sysfs *fs, const struct sysfs_ops *ops, void *userdata);
