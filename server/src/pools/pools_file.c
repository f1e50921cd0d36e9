/* pools_file: a pool's file: made, checked, removed.
 *
 * Creating a pool's file (O_EXCL, mode, group, size), undoing a create that
 * failed after it, removing a pool with its file (the journal forgets the
 * pool first), and renaming a file without replacing another.
 *
 * Someone with access to the pool directory may remove, replace or resize
 * a pool file behind our back.  The checks here compare the file at a pool's
 * path with the device, inode and size we recorded: a job's follow-up
 * (pools_upkeep.c), a GET of a ready pool (shown at once, recorded by the
 * upkeep thread) and a recycle (pools_recycle.c: a changed file is never
 * zeroed into the stock) all ask here.  One stat each, no lock. */
#include <errno.h>
#include <unistd.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "owner.h"
#include "pools_internal.h"
#include "util.h"

int pools_file_changed(const char *path, dev_t dev, ino_t ino, const struct pool_record *r, char *detail,
                       size_t size, bool *ret_ours)
{
        struct stat st;

        *ret_ours = false;
        if (!path[0] || !ino)
                return 0;
        if (stat(path, &st) < 0) {
                if (errno != ENOENT)
                        return 0;       /* cannot tell: not a change */
                snprintf(detail, size, "its file %s was removed by someone else", path);
                return 1;
        }
        if (st.st_dev != dev || st.st_ino != ino) {
                snprintf(detail, size, "its file %s was replaced by another file", path);
                return 1;
        }
        *ret_ours = true;
        if ((uint64_t)st.st_size != r->size_bytes) {
                snprintf(detail, size, "its file %s was truncated or resized to %" PRIu64 " of %" PRIu64 " bytes",
                         path, (uint64_t)st.st_size, r->size_bytes);
                return 1;
        }
        return 0;
}

/* A ready pool's file as a GET sees it (one stat, outside `reg.lock`).  A
 * change is shown at once (failed, file-changed) and the upkeep thread
 * records it, so the reader never waits on a save, nor commits from inside
 * an observer. */
void pools_check_on_get(struct pools *p, const struct pool_record *r, dev_t dev, ino_t ino,
                        struct pool_view *v)
{
        char detail[POOL_ERROR_DETAIL_MAX];
        struct pool *pool;
        bool ours;

        if (r->state != POOL_READY)
                return;
        if (!pools_file_changed(v->path, dev, ino, r, detail, sizeof(detail), &ours))
                return;
        /* By hand: reg.lock is dropped before upkeep is kicked. */
        pools_lock(&p->reg.lock);
        pool = pools_find(p, r->name);
        if (pool && pool->file_ino == ino && pool->file_dev == dev)
                pool->file_check_due = true;
        pools_unlock(&p->reg.lock);
        pools_kick(p);
        v->state = POOL_FAILED;
        v->expires_at = 0;
        snprintf(v->error_slug, sizeof(v->error_slug), "file-changed");
        snprintf(v->error_detail, sizeof(v->error_detail), "%s", detail);
}

/* Set POOL's hold under `reg.lock`. */
static void set_hold_locked(struct pools *p, struct pool *pool, enum pool_hold to)
{
        POOLS_LOCKED(&p->reg.lock);
        pools_set_hold(pool, to);
}

/* The journal forgets the pool first, then the file goes: a release that
 * could not be saved changes nothing (-EAGAIN; its job still runs), so
 * whoever was told it failed sees the pool as it was, now and after a
 * restart.  A file that cannot be removed puts the record back (a warming
 * one whose job was stopped becomes failed, "pool-file-error") so its pages
 * stay accounted for.  A save by another thread while the pool is releasing
 * leaves it out too; the next save after a failure writes it again. */
int pools_remove(struct pools *p, struct pool *pool, enum pool_release why)
{
        char name[POOL_NAME_MAX + 1];
        struct job *job;
        int r;

        set_hold_locked(p, pool, POOL_RELEASING);
        r = pools_save(p);
        if (r < 0) {
                log_err("pools: cannot save the release of pool %s: %s; it stays as it was",
                        pool->rec.name, strerror(-r));
                set_hold_locked(p, pool, POOL_BUSY);
                return -EAGAIN;
        }

        /* By hand: reg.lock is dropped before job_cancel, which waits for on_done. */
        pools_lock(&p->reg.lock);
        job = pool->job;
        pools_unlock(&p->reg.lock);
        if (job) {
                struct job_status st;

                job_cancel(job); /* on_done has run when it returns */
                job_get_status(job, &st);
                /* By hand: reg.lock is dropped before job_free. */
                pools_lock(&p->reg.lock);
                pool->job = NULL;
                pool->last = st;
                pool->have_last = true;
                if (st.state == JOB_CANCELLED)
                        p->reg.stats.jobs_cancelled++;
                pools_unlock(&p->reg.lock);
                job_free(job);
        }
        if (pool->fd >= 0) {
                close(pool->fd);
                pool->fd = -1;
        }
        if (pool->path[0] && unlink(pool->path) < 0 && errno != ENOENT) {
                r = -errno;
                log_err("pools: cannot remove %s: %s", pool->path, strerror(-r));
                set_hold_locked(p, pool, POOL_BUSY);
                struct pool_record next = pool->rec;
                /* Its job is gone and will never finish: say so, rather
                 * than "warming" forever.  DELETE retries. */
                if (job && pool->rec.state == POOL_WARMING &&
                    pool_transition(&next, POOL_FAILED, "pool-file-error",
                                    "its warm job was stopped, but removing its file failed: %s",
                                    strerror(-r)) == 0) {
                        int q = pools_commit(p, pool, &next);
                        if (q < 0)
                                log_err("pools: saving state for pool %s: %s", pool->rec.name, strerror(-q));
                } else {
                        int q = pools_save(p);
                        if (q < 0)
                                log_err("pools: saving state for pool %s: %s", pool->rec.name, strerror(-q));
                }
                return r;
        }
        /* By hand: reg.lock is dropped before the owner watch and the observer are told. */
        pools_lock(&p->reg.lock);
        pools_set_hold(pool, POOL_REMOVING);
        /* Counted as it turns invisible: whoever sees it gone sees it
         * counted. */
        pools_count_release(p, why);
        snprintf(name, sizeof(name), "%s", pool->rec.name);
        pools_drop(p, pool);
        pthread_cond_broadcast(&p->reg.changed);
        pools_unlock(&p->reg.lock);
        free(pool);
        owner_watch_remove(p->owners, name);
        pools_notify(p, name);
        /* Its pages are free: a stock target waiting for room refills now,
         * not at the next sweep. */
        pools_kick(p);
        return 0;
}

/* A pool's file as handed out: the VMM's group may open it, nobody else. */
#define POOL_FILE_MODE 0660

void pools_file_make_private(const char *path)
{
        if (!path[0])
                return;
        /* The mode first (the group's opens end), then the owner (a file
         * handed to one user: its opens end). */
        if ((chmod(path, POOL_FILE_PRIVATE_MODE) < 0 || chown(path, geteuid(), getegid()) < 0) && errno != ENOENT)
                log_warn("pools: cannot make %s the daemon's alone (mode 0600): %m", path);
}

int pools_file_private_fd(int fd)
{
        return fchmod(fd, POOL_FILE_PRIVATE_MODE) < 0 || fchown(fd, geteuid(), getegid()) < 0 ? -errno : 0;
}

void pools_file_make_public(struct pools *p, const char *path, const struct pool_record *r)
{
        _cleanup_close_ int fd = -1;
        int q;

        if (!path[0])
                return;
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        q = fd < 0 ? -errno : pools_file_hand_to_vm(p, fd, r->file_owned, r->file_uid, r->file_gid);
        if (q < 0 && q != -ENOENT)
                log_warn("pools: cannot give %s back its owner and mode: %s", path, strerror(-q));
}

int pools_file_hand_to_vm(struct pools *p, int fd, bool owned, uint32_t uid, uint32_t gid)
{
        if (owned) {
                /* Mode first: the file is never open to the new owner's
                 * group and to the daemon's at once. */
                if (fchmod(fd, POOL_FILE_PRIVATE_MODE) < 0 || fchown(fd, (uid_t)uid, (gid_t)gid) < 0)
                        return -errno;
                return 0;
        }
        if (p->cfg.pool_gid != (gid_t)-1 && fchown(fd, (uid_t)-1, p->cfg.pool_gid) < 0)
                return -errno;
        return fchmod(fd, POOL_FILE_MODE) < 0 ? -errno : 0;
}

int pools_file_held(int fd, char *detail, size_t size)
{
        struct stat st;
        int lease;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_nlink != 1) {
                snprintf(detail, size, "it has %ju hard links (another name reaches its pages)",
                         (uintmax_t)st.st_nlink);
                return -EMLINK;
        }
        lease = owner_lease_alone(fd);
        if (lease == 1) {
                snprintf(detail, size, "another open file of it exists (its write lease was refused)");
                return 1;
        }
        /* lease < 0: none can be had here; the holder scan (which then
         * walks every process's maps too) decides. */
        return 0;
}

/* Every process the daemon could have to fear: whatever the file's owner,
 * group and mode now or at its next hand-out (a mode anyone could open
 * matches every process the index knows, which is every process but
 * root's). */
static const struct owner_access ANYONE = { 0, 0, 0666 };

int pools_file_scan_holders(struct pools *p, int fd, char *detail, size_t size, unsigned *ret_looked)
{
        unsigned looked = 0, unreadable = 0;
        struct owner_file f;
        struct stat st;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        f = (struct owner_file){ .dev = st.st_dev, .ino = st.st_ino };
        if (p->creds && strcmp(p->proc_root, "/proc") == 0) {
                r = owner_creds_scan(p->creds, getpid(), &ANYONE, 1, &f, &looked);
                if (r < 0) {
                        snprintf(detail, size, "cannot look into a process: %s", strerror(-r));
                        return r;
                }
        } else {
                /* Without the index: every process's maps and descriptors
                 * (the maps answer where no lease could be had). */
                r = owner_scan_held(p->proc_root, getpid(), &f, 1, &unreadable);
                if (r < 0) {
                        snprintf(detail, size, "cannot list the processes in %s: %s", p->proc_root,
                                 strerror(-r));
                        return r;
                }
                /* Another open file there is the lease's to see; where no
                 * lease can be had either, an unreadable process could
                 * map it. */
                if (unreadable && !f.mapped && !f.opened && (r = owner_lease_alone(fd)) < 0) {
                        snprintf(detail, size, "no write lease (%s) and %u processes cannot be looked into",
                                 strerror(-r), unreadable);
                        return -EPERM;
                }
        }
        if (ret_looked)
                *ret_looked = looked;
        if (f.mapped || f.opened) {
                snprintf(detail, size, "a process %s it", f.mapped ? "maps" : "holds a descriptor (O_PATH) of");
                return 1;
        }
        return 0;
}

void pools_abandon(struct pools *p, struct pool *pool, bool registered)
{
        if (registered) {
                /* A save in another thread reads pool->job under `reg.lock`:
                 * take the job out there first, then stop and free it. */
                /* By hand: reg.lock is dropped before job_cancel, which waits for on_done. */
                pools_lock(&p->reg.lock);
                struct job *job = pool->job;
                pool->job = NULL;
                pools_unlock(&p->reg.lock);
                if (job) {
                        job_cancel(job);
                        job_free(job);
                }
                /* By hand: reg.lock is dropped before the save (save.lock is outside it). */
                pools_lock(&p->reg.lock);
                pools_drop(p, pool);
                pools_unlock(&p->reg.lock);
                /* A save that raced with us may hold the record; forget it
                 * again.  Failing that, the next start finds the file gone
                 * and says so. */
                (void)pools_save(p);
        }
        close(pool->fd);
        unlink(pool->path);
        free(pool);
}

int pools_create_file(struct pools *p, struct pool *pool, uint64_t size, bool stock, struct problem *err)
{
        const char *path = pool->path;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, POOL_FILE_PRIVATE_MODE);
        if (fd < 0) {
                r = -errno;
                if (r == -EEXIST)
                        problem_raise(err, PROBLEM_POOL_CONFLICT, "a file %s exists that no pool record owns", path);
                else
                        problem_raise(err, PROBLEM_POOL_FILE_ERROR, "creating %s: %s", path, strerror(-r));
                return r;
        }
        /* A stock file stays the daemon's alone until it is handed out.
         * A pool's gets its group and mode here (the umask may have
         * narrowed it). */
        if (stock) {
                if (fchmod(fd, POOL_FILE_PRIVATE_MODE) < 0)
                        goto fail;
        } else if ((r = pools_file_hand_to_vm(p, fd, pool->rec.file_owned, pool->rec.file_uid,
                                              pool->rec.file_gid)) < 0) {
                errno = -r;
                goto fail;
        }
        if (ftruncate(fd, (off_t)size) < 0)
                goto fail;
        /* Which file is ours: the file-changed checks compare it. */
        if (fstat(fd, &st) < 0)
                goto fail;
        pool->file_dev = st.st_dev;
        pool->file_ino = st.st_ino;
        pool->fd = TAKE_FD(fd);
        return 0;
fail:
        r = -errno;
        problem_raise(err, PROBLEM_POOL_FILE_ERROR, "setting up %s: %s", path, strerror(-r));
        unlink(path);
        return r;
}

int pools_rename_noreplace(const char *from, const char *to)
{
        return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0 ? -errno : 0;
}
