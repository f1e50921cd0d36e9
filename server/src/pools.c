/* pools: the registry of warm pools, their state machine, and the daemon's
 * durable state (pools and reservations, through journal.c).
 *
 * Locks, outermost first, and why there are four:
 *   admit_lock  serialises admission (free pages minus what warming jobs will
 *               still take), reservations and file creation, so two creates
 *               never count the same free pages.  May be held for seconds
 *               (a reservation write), so nothing else ever waits on it but
 *               other creates and reservations.
 *   save_lock   serialises journal writes.  A save snapshots the registry
 *               after taking it, so the last write always holds the newest
 *               state; fsync happens under it, never under `lock`.
 *   lock        the registry itself.  Held only for memory work and
 *               job_get_status(); never across job_cancel, engine_submit,
 *               reservation writes, unlink or fsync.
 *   done_lock   a leaf taken by the engine's on_done callback (which must not
 *               block) and by the reaper to sleep; nothing is called under it.
 *
 * A change is saved before it is shown: the thread that changes a pool marks
 * it busy, puts the new record in `pending` (which the journal snapshot
 * uses), saves, and only then copies it into `rec`, the record every reader
 * sees, and wakes waiters.  Busy pools are left alone by everybody else.
 * The one exception is warming -> ready (see finish_job): redoing a finished
 * populate after a crash is free, so it is shown first and saved after.
 *
 * One reaper thread does the slow follow-up work of finished jobs (close,
 * unlink on failure, job_free, save) and releases ready pools whose TTL ran
 * out; it sleeps on a condition variable until the next expiry or until
 * on_done kicks it, never polling. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include "engine.h"
#include "log.h"
#include "pools.h"
#include "util.h"
#include "units.h"

#define BOOT_ID_PATH "/proc/sys/kernel/random/boot_id"
/* A registry bigger than this is a runaway scheduler, not a workload. */
#define POOLS_DEFAULT_MAX 1024
/* Pool files and our directory: the VMM's group may open them, nobody else. */
#define POOL_FILE_MODE 0660
#define POOL_DIR_MODE 0750
#define NS_PER_SEC UINT64_C(1000000000)
/* A TTL release whose unlink failed waits this long before it is tried
 * again, so it neither spins nor starves other work. */
#define POOLS_RELEASE_RETRY_SECONDS 5

struct pool {
        struct pools *owner;
        struct journal_pool rec;      /* committed: saved and visible */
        struct journal_pool pending;  /* being saved: the journal snapshot uses it */
        bool has_pending;
        bool creating;                /* pools_create has not returned yet: invisible */
        bool busy;                    /* a thread works on it outside `lock` */
        bool removing;                /* file gone; the record leaves after the next save */
        bool job_done;                /* on_done ran (done_lock) */
        struct job *job;              /* running, or finished and not yet freed */
        int fd;                       /* open while job is set (the engine borrows it) */
        struct job_status last;       /* status of the last job, once freed */
        uint64_t present_at_start;    /* bytes already in the file when its job (re)started */
        bool have_last;
        int64_t retry_at;             /* unix s: a failed TTL release is not retried before */
        char path[PATH_MAX];
};

struct pools {
        struct pools_config cfg;      /* strings below are our copies */
        char *state_dir;
        char *boot_id_path;
        char *mount_dirs[TOPO_MAX_PAGE_SIZES];
        char boot_id[40];
        unsigned max_pools;

        pthread_mutex_t admit_lock;
        pthread_mutex_t save_lock;
        pthread_mutex_t lock;
        pthread_cond_t changed;       /* with lock: broadcast on every committed change */
        pthread_mutex_t observer_lock; /* taken alone, never with the others */
        void (*observer)(void *arg, const char *name); /* observer_lock */
        void *observer_arg;           /* observer_lock */
        pthread_mutex_t done_lock;
        pthread_cond_t kick;          /* with done_lock: wakes the reaper */
        bool kicked, stopping;        /* done_lock */
        pthread_t reaper;
        bool reaper_started;

        struct pool **pools;          /* lock */
        size_t n_pools, cap_pools;
        struct journal_reservation *resv; /* lock */
        size_t n_resv;
        struct pools_stats stats;     /* lock */
};

static int64_t now_unix(void) { return (int64_t)(now_real_ns() / NS_PER_SEC); }

static const char *mount_dir(const struct pools *p, uint64_t page_size)
{
        for (size_t i = 0; i < p->cfg.n_mounts; i++)
                if (p->cfg.mounts[i].page_size == page_size)
                        return p->mount_dirs[i];
        return NULL;
}

/* Unix-seconds expiry of a ready, unclaimed pool with a TTL; 0 = none. */
static int64_t rec_expires_at(const struct journal_pool *r)
{
        if (r->state != POOL_READY || r->claimed || r->ttl_seconds == 0 || r->finished_at == 0)
                return 0;
        return r->finished_at + (int64_t)r->ttl_seconds;
}

/* ---- mounts ---- */

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
static int prepare_dir(const char *dir, uint64_t page_size, gid_t gid, bool check_fs)
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
        return prepare_dir(dir, page_size, gid, true);
}

/* ---- registry helpers (lock held) ---- */

static struct pool *find_pool(struct pools *p, const char *name)
{
        for (size_t i = 0; i < p->n_pools; i++)
                if (!p->pools[i]->removing && strcmp(p->pools[i]->rec.name, name) == 0)
                        return p->pools[i];
        return NULL;
}

static int add_pool(struct pools *p, struct pool *pool)
{
        if (p->n_pools == p->cap_pools) {
                size_t cap = p->cap_pools ? p->cap_pools * 2 : 16;
                struct pool **n = realloc(p->pools, cap * sizeof(*n));
                if (!n)
                        return -ENOMEM;
                p->pools = n;
                p->cap_pools = cap;
        }
        p->pools[p->n_pools++] = pool;
        return 0;
}

static void drop_pool(struct pools *p, struct pool *pool)
{
        for (size_t i = 0; i < p->n_pools; i++)
                if (p->pools[i] == pool) {
                        p->pools[i] = p->pools[--p->n_pools];
                        return;
                }
}

static bool pool_job_done(struct pools *p, struct pool *pool)
{
        bool done;

        pthread_mutex_lock(&p->done_lock);
        done = pool->job_done;
        pthread_mutex_unlock(&p->done_lock);
        return done;
}

static void kick_reaper(struct pools *p)
{
        pthread_mutex_lock(&p->done_lock);
        p->kicked = true;
        pthread_cond_signal(&p->kick);
        pthread_mutex_unlock(&p->done_lock);
}

static void fill_view(struct pool *pool, struct pool_view *v)
{
        struct job_status st;
        bool have = false;

        memset(v, 0, sizeof(*v));
        v->rec = pool->rec;
        snprintf(v->path, sizeof(v->path), "%s", pool->path);
        if (pool->job) {
                job_get_status(pool->job, &st);
                have = true;
        } else if (pool->have_last) {
                st = pool->last;
                have = true;
        }
        if (pool->rec.state == POOL_READY)
                v->rec.bytes_done = pool->rec.size_bytes;
        else if (pool->rec.state == POOL_WARMING && have)
                v->rec.bytes_done = st.bytes_done;
        v->rec.bytes_done = v->rec.bytes_done < v->rec.size_bytes ? v->rec.bytes_done : v->rec.size_bytes;
        v->bytes_done = v->rec.bytes_done;
        if (have) {
                uint64_t end = st.finished_ns ? st.finished_ns : now_mono_ns();
                v->elapsed_seconds = end > st.started_ns ? (double)(end - st.started_ns) / 1e9 : 0;
                v->threads = st.threads;
                v->placement_verified = st.verified;
                v->pages_off_node = st.pages_off_node;
        } else if (pool->rec.started_at) {
                /* Restored from the journal: whole seconds are all we know. */
                int64_t end = pool->rec.finished_at ? pool->rec.finished_at : now_unix();
                v->elapsed_seconds = end > pool->rec.started_at ? (double)(end - pool->rec.started_at) : 0;
        }
        if (v->elapsed_seconds > 0 && pool->rec.state != POOL_FAILED)
                v->rate_bytes_per_second = (double)v->bytes_done / v->elapsed_seconds;
        v->expires_at = rec_expires_at(&pool->rec);
}

/* Pages that warming pools on (NODE, PAGE_SIZE) have yet to take. */
static uint64_t pages_still_needed(struct pools *p, int node, uint64_t page_size)
{
        uint64_t pages = 0;

        for (size_t i = 0; i < p->n_pools; i++) {
                struct pool *o = p->pools[i];
                const struct journal_pool *r = o->has_pending ? &o->pending : &o->rec;
                uint64_t done = 0;

                if (o->removing || r->node != node || r->page_size != page_size ||
                    r->state != POOL_WARMING)
                        continue;
                if (o->job) {
                        struct job_status st;
                        job_get_status(o->job, &st);
                        /* Finished, not yet reaped (the reaper is busy, or
                         * not started yet at start-up): it takes nothing
                         * more; its pages are already out of `free`. */
                        if (st.state != JOB_RUNNING)
                                continue;
                        done = st.bytes_done;
                } else if (o->creating) {
                        done = 0;
                } else {
                        continue; /* not running: takes nothing now */
                }
                /* A resumed job re-walks pages its file already holds (they
                 * are not free any more); the job's own count starts at 0. */
                if (done < o->present_at_start)
                        done = o->present_at_start;
                if (done < r->size_bytes)
                        pages += (r->size_bytes - done) / page_size;
        }
        return pages;
}

/* ---- journal ---- */

/* Snapshot the registry and write it.  Returns journal_save's result. */
static int save(struct pools *p)
{
        struct journal j = {0};
        int r;

        pthread_mutex_lock(&p->save_lock);
        pthread_mutex_lock(&p->lock);
        snprintf(j.boot_id, sizeof(j.boot_id), "%s", p->boot_id);
        j.reservations = calloc(p->n_resv ? p->n_resv : 1, sizeof(*j.reservations));
        j.pools = calloc(p->n_pools ? p->n_pools : 1, sizeof(*j.pools));
        if (!j.reservations || !j.pools) {
                pthread_mutex_unlock(&p->lock);
                r = -ENOMEM;
                goto out;
        }
        if (p->n_resv)
                memcpy(j.reservations, p->resv, p->n_resv * sizeof(*p->resv));
        j.n_reservations = p->n_resv;
        for (size_t i = 0; i < p->n_pools; i++) {
                struct pool *o = p->pools[i];
                struct journal_pool *d = &j.pools[j.n_pools];

                if (o->removing)
                        continue;
                *d = o->has_pending ? o->pending : o->rec;
                if (d->state == POOL_WARMING && o->job) {
                        struct job_status st;
                        job_get_status(o->job, &st);
                        d->bytes_done = st.bytes_done;
                }
                j.n_pools++;
        }
        pthread_mutex_unlock(&p->lock);
        r = journal_save(p->state_dir, &j);
out:
        pthread_mutex_unlock(&p->save_lock);
        free(j.reservations);
        free(j.pools);
        return r;
}

/* Save NEXT as POOL's record, then show it.  The caller holds POOL busy and
 * not `lock`.  On a failed save the record is still applied (it describes
 * what happened to the file) and the error is returned for the caller to
 * report or log. */
/* Tell the observer NAME changed; no registry lock may be held. */
static void tell(struct pools *p, const char *name)
{
        pthread_mutex_lock(&p->observer_lock);
        if (p->observer)
                p->observer(p->observer_arg, name);
        pthread_mutex_unlock(&p->observer_lock);
}

void pools_set_observer(struct pools *p, void (*fn)(void *arg, const char *name), void *arg)
{
        pthread_mutex_lock(&p->observer_lock);
        p->observer = fn;
        p->observer_arg = fn ? arg : NULL;
        pthread_mutex_unlock(&p->observer_lock);
}

static int commit(struct pools *p, struct pool *pool, const struct journal_pool *next)
{
        int r;

        pthread_mutex_lock(&p->lock);
        pool->pending = *next;
        pool->has_pending = true;
        pthread_mutex_unlock(&p->lock);
        r = save(p);
        pthread_mutex_lock(&p->lock);
        pool->rec = *next;
        pool->has_pending = false;
        pthread_mutex_unlock(&p->lock);
        tell(p, next->name);
        return r;
}

/* Wait (lock held) until NAME's pool is not busy; returns it marked busy, or
 * NULL if it does not exist (or is still being created). */
static struct pool *grab_pool(struct pools *p, const char *name)
{
        for (;;) {
                struct pool *pool = find_pool(p, name);
                if (!pool || pool->creating)
                        return NULL;
                if (!pool->busy) {
                        pool->busy = true;
                        return pool;
                }
                pthread_cond_wait(&p->changed, &p->lock);
        }
}

static void release_pool(struct pools *p, struct pool *pool)
{
        pthread_mutex_lock(&p->lock);
        pool->busy = false;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
}

/* Stop POOL's job if any, remove its file and its record; POOL is busy and
 * freed on success.  Only fails when the file cannot be removed (then the
 * record stays so the pages remain accounted for; a warming one whose job
 * was stopped becomes failed, "pool-file-error"). */
static int remove_pool(struct pools *p, struct pool *pool)
{
        struct job *job;
        int r;

        pthread_mutex_lock(&p->lock);
        job = pool->job;
        pthread_mutex_unlock(&p->lock);
        if (job) {
                struct job_status st;

                job_cancel(job); /* on_done has run when it returns */
                job_get_status(job, &st);
                pthread_mutex_lock(&p->lock);
                pool->job = NULL;
                pool->last = st;
                pool->have_last = true;
                if (st.state == JOB_CANCELLED)
                        p->stats.jobs_cancelled++;
                pthread_mutex_unlock(&p->lock);
                job_free(job);
        }
        if (pool->fd >= 0) {
                close(pool->fd);
                pool->fd = -1;
        }
        if (pool->path[0] && unlink(pool->path) < 0 && errno != ENOENT) {
                r = -errno;
                log_err("pools: cannot remove %s: %s", pool->path, strerror(-r));
                if (job && pool->rec.state == POOL_WARMING) {
                        /* Its job is gone and will never finish: say so,
                         * rather than "warming" forever.  DELETE retries. */
                        struct journal_pool next = pool->rec;
                        next.state = POOL_FAILED;
                        next.finished_at = now_unix();
                        snprintf(next.error_slug, sizeof(next.error_slug), "pool-file-error");
                        snprintf(next.error_detail, sizeof(next.error_detail),
                                 "its warm job was stopped, but removing its file failed: %s", strerror(-r));
                        int q = commit(p, pool, &next);
                        if (q < 0)
                                log_err("pools: saving state for pool %s: %s", pool->rec.name, strerror(-q));
                }
                return r;
        }
        pthread_mutex_lock(&p->lock);
        pool->removing = true;
        pthread_mutex_unlock(&p->lock);
        r = save(p);
        if (r < 0)
                log_err("pools: saving state after removing pool %s: %s", pool->rec.name, strerror(-r));
        pthread_mutex_lock(&p->lock);
        drop_pool(p, pool);
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        tell(p, pool->rec.name);
        free(pool);
        return 0;
}

/* ---- jobs ---- */

static void on_job_done(struct job *job, void *arg)
{
        struct pool *pool = arg;
        struct pools *p = pool->owner;

        pthread_mutex_lock(&p->done_lock);
        pool->job_done = true;
        p->kicked = true;
        pthread_cond_signal(&p->kick);
        pthread_mutex_unlock(&p->done_lock);
}

/* Start warming POOL (its fd is open).  -errno from engine_submit. */
static int start_job(struct pools *p, struct pool *pool)
{
        struct job_spec spec = {
                .node = pool->rec.node,
                .fd = pool->fd,
                .size_bytes = pool->rec.size_bytes,
                .page_size = pool->rec.page_size,
                .threads = pool->rec.threads,
                .on_done = on_job_done,
                .arg = pool,
        };
        struct job *job;
        int r;

        pthread_mutex_lock(&p->done_lock);
        pool->job_done = false;
        pthread_mutex_unlock(&p->done_lock);
        r = engine_submit(p->cfg.engine, &spec, &job);
        if (r < 0)
                return r;
        pthread_mutex_lock(&p->lock);
        pool->job = job;
        pool->have_last = false;
        p->stats.jobs_started++;
        pthread_mutex_unlock(&p->lock);
        return 0;
}

/* The record POOL should get for a job that ended as ST (lock held); updates
 * the counters.  *ret_unlink says whether the file must go.  At shutdown a
 * cancelled job stays warming, to resume at the next start. */
static void job_outcome(struct pools *p, struct pool *pool, const struct job_status *st, bool shutdown,
                        struct journal_pool *next, bool *ret_unlink)
{
        *next = pool->rec;
        *ret_unlink = false;
        next->bytes_done = st->bytes_done;
        switch (st->state) {
        case JOB_DONE:
                next->state = POOL_READY;
                next->finished_at = now_unix();
                next->bytes_done = next->size_bytes;
                p->stats.jobs_ready++;
                p->stats.bytes_warmed_total += next->size_bytes;
                if (st->finished_ns > st->started_ns) {
                        double secs = (double)(st->finished_ns - st->started_ns) / 1e9;
                        p->stats.job_seconds_sum += secs;
                        p->stats.job_seconds_count++;
                        p->stats.job_seconds_buckets[histogram_bucket(METRICS_DURATION_BOUNDS,
                                                                      METRICS_DURATION_BUCKETS, secs)]++;
                }
                break;
        case JOB_FAILED:
                next->state = POOL_FAILED;
                next->finished_at = now_unix();
                snprintf(next->error_slug, sizeof(next->error_slug), "%s", engine_error_slug(-st->error));
                snprintf(next->error_detail, sizeof(next->error_detail),
                         "populating byte offset %" PRIu64 " failed: %s (%s)", st->error_offset,
                         engine_error_cause(-st->error), strerror(-st->error));
                *ret_unlink = true;
                p->stats.jobs_failed++;
                break;
        case JOB_CANCELLED:
                p->stats.jobs_cancelled++;
                if (shutdown)
                        break;
                next->state = POOL_CANCELLED;
                next->finished_at = now_unix();
                snprintf(next->error_slug, sizeof(next->error_slug), "cancelled");
                snprintf(next->error_detail, sizeof(next->error_detail),
                         "the warm job was cancelled by the engine");
                *ret_unlink = true;
                break;
        case JOB_RUNNING:
                break;
        }
}

/* Turn POOL's finished job into its new state.  POOL is busy, `lock` not held. */
static void finish_job(struct pools *p, struct pool *pool, bool shutdown)
{
        struct journal_pool next;
        struct job_status st;
        struct job *job;
        bool unlink_file;
        int r;

        pthread_mutex_lock(&p->lock);
        job = pool->job;
        if (!job) {
                pthread_mutex_unlock(&p->lock);
                return;
        }
        job_get_status(job, &st);
        pool->last = st;
        pool->have_last = true;
        pool->job = NULL;
        job_outcome(p, pool, &st, shutdown, &next, &unlink_file);
        pthread_mutex_unlock(&p->lock);

        job_free(job);
        if (pool->fd >= 0) {
                close(pool->fd);
                pool->fd = -1;
        }
        if (unlink_file && unlink(pool->path) < 0 && errno != ENOENT)
                log_err("pools: cannot remove %s of failed pool: %m", pool->path);
        if (st.state == JOB_FAILED)
                log_warn("pools: pool %s failed: %s", pool->rec.name, next.error_detail);
        if (next.state == POOL_READY) {
                /* The one change shown before it is saved: a crash in between
                 * leaves "warming" in the journal, and the restart resumes the
                 * job, which finds every page present and finishes at once.
                 * Nothing is lost, and the scheduler waiting for "ready" does
                 * not pay for two fsyncs (0.7 ms on an idle ext4, far more on
                 * a busy disk). */
                pthread_mutex_lock(&p->lock);
                pool->rec = next;
                pthread_cond_broadcast(&p->changed);
                pthread_mutex_unlock(&p->lock);
                tell(p, next.name);
        }
        r = commit(p, pool, &next);
        if (r < 0)
                log_err("pools: saving state for pool %s: %s", pool->rec.name, strerror(-r));
}

/* ---- reaper ---- */

/* Handle one finished job or one expired pool; false when there is none.
 * Finished jobs come first, and a pool whose release failed waits for its
 * retry_at, so one stuck pool cannot starve the others.  *next_expiry gets
 * the earliest expiry (or retry) still ahead (0 = none). */
static bool reap_one(struct pools *p, int64_t *next_expiry)
{
        int64_t now = now_unix();
        struct pool *pool = NULL;
        bool expire = false;

        *next_expiry = 0;
        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; i < p->n_pools; i++) {
                struct pool *o = p->pools[i];
                if (!o->busy && !o->creating && !o->removing && o->job && pool_job_done(p, o)) {
                        pool = o;
                        break;
                }
        }
        for (size_t i = 0; i < p->n_pools && !pool; i++) {
                struct pool *o = p->pools[i];
                int64_t exp;

                if (o->busy || o->creating || o->removing)
                        continue;
                exp = rec_expires_at(&o->rec);
                if (exp && o->retry_at > exp)
                        exp = o->retry_at;
                if (exp && exp <= now) {
                        pool = o;
                        expire = true;
                } else if (exp && (!*next_expiry || exp < *next_expiry)) {
                        *next_expiry = exp;
                }
        }
        if (pool)
                pool->busy = true;
        pthread_mutex_unlock(&p->lock);
        if (!pool)
                return false;

        if (expire) {
                log_info("pools: pool %s was not claimed within %" PRIu64 " s, releasing it",
                         pool->rec.name, pool->rec.ttl_seconds);
                if (remove_pool(p, pool) == 0) {
                        pthread_mutex_lock(&p->lock);
                        p->stats.pools_expired++;
                        pthread_mutex_unlock(&p->lock);
                        return true;
                }
                /* Could not unlink: others first, this one again later. */
                pthread_mutex_lock(&p->lock);
                pool->retry_at = now + POOLS_RELEASE_RETRY_SECONDS;
                pthread_mutex_unlock(&p->lock);
                release_pool(p, pool);
                return true;
        }
        finish_job(p, pool, false);
        release_pool(p, pool);
        return true;
}

static void *reaper_main(void *arg)
{
        struct pools *p = arg;

        for (;;) {
                int64_t next_expiry;

                while (reap_one(p, &next_expiry))
                        ;
                pthread_mutex_lock(&p->done_lock);
                if (!p->kicked && !p->stopping) {
                        if (next_expiry) {
                                /* The condvar runs on CLOCK_MONOTONIC; convert the
                                 * wall-clock expiry to a monotonic deadline. */
                                uint64_t exp_ns = (uint64_t)next_expiry * NS_PER_SEC, real = now_real_ns();
                                uint64_t at = now_mono_ns() + (exp_ns > real ? exp_ns - real : 0);
                                struct timespec ts = { .tv_sec = (time_t)(at / NS_PER_SEC),
                                                       .tv_nsec = (long)(at % NS_PER_SEC) };
                                pthread_cond_timedwait(&p->kick, &p->done_lock, &ts);
                        } else {
                                pthread_cond_wait(&p->kick, &p->done_lock);
                        }
                }
                p->kicked = false;
                bool stop = p->stopping;
                pthread_mutex_unlock(&p->done_lock);
                if (stop)
                        return NULL;
        }
}

/* ---- reservations ---- */

static void count_reservation(struct pools *p, int r, const struct reserve_result *res)
{
        pthread_mutex_lock(&p->lock);
        if (r == 0 && res->complete)
                p->stats.reservations_ok++;
        else if (r == 0)
                p->stats.reservations_partial++;
        else if (r == -EAGAIN)
                p->stats.reservations_shortfall++;
        else if (r == -ENOMEM)
                p->stats.reservations_refused++;
        else
                p->stats.reservations_error++;
        pthread_mutex_unlock(&p->lock);
}

/* Record that (node, page size) should have COUNT pages (lock held). */
static int record_reservation(struct pools *p, int node, uint64_t page_size, uint64_t count)
{
        for (size_t i = 0; i < p->n_resv; i++)
                if (p->resv[i].node == node && p->resv[i].page_size == page_size) {
                        p->resv[i].count = count;
                        return 0;
                }
        struct journal_reservation *n = realloc(p->resv, (p->n_resv + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        p->resv = n;
        p->resv[p->n_resv++] = (struct journal_reservation){ node, page_size, count };
        return 0;
}

/* reserve_apply + record + save; admit_lock held.  ASKED is the count the
 * caller asked for when REQ->count is a clamped one (the result then says
 * what was asked and that it is incomplete). */
static int reserve_locked(struct pools *p, const struct reserve_req *req, uint64_t asked,
                          struct reserve_result *ret)
{
        struct reserve_result res;
        int r, q;

        r = reserve_apply(p->cfg.fs, req, &res);
        if (r == 0 && asked != req->count) {
                res.requested = asked;
                res.complete = false;
        }
        count_reservation(p, r, &res);
        if (r < 0) {
                if (r == -EAGAIN || r == -ENOMEM)
                        *ret = res;
                return r;
        }
        pthread_mutex_lock(&p->lock);
        q = record_reservation(p, req->node, req->page_size, res.complete ? req->count : res.total);
        pthread_mutex_unlock(&p->lock);
        if (q == 0)
                q = save(p);
        if (q < 0)
                /* The kernel did it; only our memory of it failed.  Say so
                 * and report what happened. */
                log_err("pools: recording reservation node %d page size %" PRIu64 ": %s", req->node,
                        req->page_size, strerror(-q));
        *ret = res;
        return 0;
}

/* Shrinking frees only free pages, but pages that warming jobs on the node
 * have yet to fault still count as free there (hugetlb reservations are
 * global, so the kernel may free this node's pages and the job's node-bound
 * faults then fail with EFAULT).  So a shrink stops at the pages in use plus
 * those still needed, and says it is incomplete. */
int pools_reserve(struct pools *p, const struct reserve_req *req, struct reserve_result *ret)
{
        struct reserve_req rq = *req;
        struct hp_counts hp;
        uint64_t needed, keep;
        int r;

        pthread_mutex_lock(&p->admit_lock);
        /* Progress before counts, as in admit(). */
        pthread_mutex_lock(&p->lock);
        needed = pages_still_needed(p, req->node, req->page_size);
        pthread_mutex_unlock(&p->lock);
        r = needed > 0 ? topo_read_hugepages(p->cfg.fs, req->node, req->page_size, &hp) : 0;
        if (r < 0) {
                pthread_mutex_unlock(&p->admit_lock);
                return r;
        }
        if (needed > 0 && req->count < hp.total) {
                keep = (hp.total > hp.free ? hp.total - hp.free : 0) + needed;
                if (keep > hp.total)
                        keep = hp.total;
                if (req->count < keep)
                        rq.count = keep;
        }
        r = reserve_locked(p, &rq, req->count, ret);
        pthread_mutex_unlock(&p->admit_lock);
        return r;
}

/* ---- create ---- */

static bool same_spec(const struct journal_pool *r, const struct pool_req *req)
{
        return r->node == req->node && r->size_bytes == req->size_bytes && r->page_size == req->page_size;
}

/* Node NODE must have PAGES free pages of PAGE_SIZE beyond what warming jobs
 * still need; grow its pool when RESERVE.  admit_lock held.  0 or -ENOMEM
 * with ERR set (409 insufficient-hugepages), or a sysfs -errno (500). */
static int admit(struct pools *p, int node, uint64_t page_size, uint64_t pages, bool reserve,
                 struct problem *err)
{
        struct hp_counts hp;
        uint64_t others, avail;
        int r;

        for (int attempt = 0;; attempt++) {
                /* Progress first, then free: a page faulted in between is
                 * at worst counted twice (still needed, and gone from free),
                 * never missed.  The other order would count a page that a
                 * job took in between as free and as no longer needed. */
                pthread_mutex_lock(&p->lock);
                others = pages_still_needed(p, node, page_size);
                pthread_mutex_unlock(&p->lock);
                r = topo_read_hugepages(p->cfg.fs, node, page_size, &hp);
                if (r < 0) {
                        problem_set(err, 500, "sysfs-error", "Cannot read hugepage counters",
                                    "reading node %d hugepage counters: %s", node, strerror(-r));
                        return r;
                }
                avail = hp.free > others ? hp.free - others : 0;
                if (avail >= pages)
                        return 0;
                if (!reserve || attempt > 0) {
                        problem_set(err, 409, "insufficient-hugepages", "Not enough free hugepages",
                                    "node %d needs %" PRIu64 " free pages of %" PRIu64
                                    " bytes; it has %" PRIu64 " free, of which %" PRIu64
                                    " are still to be taken by other warming pools%s",
                                    node, pages, page_size, hp.free, others,
                                    reserve ? " (even after growing the pool)" : "; retry with \"reserve\": true to grow the pool");
                        return -ENOMEM;
                }

                struct reserve_req rq = {
                        .node = node,
                        .page_size = page_size,
                        .count = hp.total + (pages - avail),
                        .floor_bytes = p->cfg.memory_floor,
                };
                struct reserve_result res = {0};
                r = reserve_locked(p, &rq, rq.count, &res);
                if (r < 0) {
                        char why[160];

                        if (r == -ENOMEM) {
                                char fl[32];

                                format_size(res.floor_bytes, fl, sizeof(fl));
                                snprintf(why, sizeof(why), "it would go below the memory floor of %s (nothing "
                                         "written; at most %" PRIu64 " pages fit)", fl, res.max_count);
                                err->has_floor = true;
                                err->floor_bytes = res.floor_bytes;
                                err->mem_free_bytes = res.mem_free_bytes;
                                err->max_count = res.max_count;
                        } else {
                                snprintf(why, sizeof(why), "%s", r == -EAGAIN ?
                                         "the kernel gave fewer pages (count restored)" : strerror(-r));
                        }
                        problem_set(err, 409, "insufficient-hugepages", "Not enough free hugepages",
                                    "node %d needs %" PRIu64 " free pages; it has %" PRIu64
                                    " free, %" PRIu64 " still to be taken by other warming pools; "
                                    "growing its pool from %" PRIu64 " to %" PRIu64 " pages failed: %s",
                                    node, pages, hp.free, others, hp.total, rq.count, why);
                        if (r == -EAGAIN) {
                                err->has_counts = true;
                                err->requested = rq.count;
                                err->achieved = res.achieved;
                        }
                        return -ENOMEM;
                }
        }
}

static int create_file(struct pools *p, const char *path, uint64_t size, struct problem *err)
{
        _cleanup_close_ int fd = -1;
        int r;

        fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, POOL_FILE_MODE);
        if (fd < 0) {
                r = -errno;
                if (r == -EEXIST)
                        problem_set(err, 409, "pool-conflict", "A different pool has that name",
                                    "a file %s exists that no pool record owns", path);
                else
                        problem_set(err, 500, "pool-file-error", "Cannot create the pool file",
                                    "creating %s: %s", path, strerror(-r));
                return r;
        }
        if (p->cfg.pool_gid != (gid_t)-1 && fchown(fd, (uid_t)-1, p->cfg.pool_gid) < 0)
                goto fail;
        /* The umask may have narrowed the mode. */
        if (fchmod(fd, POOL_FILE_MODE) < 0)
                goto fail;
        if (ftruncate(fd, (off_t)size) < 0)
                goto fail;
        return TAKE_FD(fd);
fail:
        r = -errno;
        problem_set(err, 500, "pool-file-error", "Cannot set up the pool file", "setting up %s: %s", path,
                    strerror(-r));
        unlink(path);
        return r;
}

static int validate(struct pools *p, const struct pool_req *req, struct problem *err)
{
        if (!pool_name_valid(req->name)) {
                problem_set(err, 422, "invalid-field", "Invalid field",
                            "pool name must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}");
                return -EINVAL;
        }
        if (!topo_node(p->cfg.topo, req->node)) {
                problem_set(err, 404, "unknown-node", "No such NUMA node", "there is no node %d", req->node);
                return -ENOENT;
        }
        if (!topo_has_page_size(p->cfg.topo, req->page_size)) {
                problem_set(err, 404, "unknown-page-size", "No such hugepage size",
                            "the kernel offers no %" PRIu64 "-byte hugepages", req->page_size);
                return -ENOENT;
        }
        if (req->size_bytes == 0 || req->size_bytes % req->page_size != 0) {
                problem_set(err, 422, "invalid-field", "Invalid field",
                            "size must be a positive multiple of the page size (%" PRIu64 " bytes)",
                            req->page_size);
                return -EINVAL;
        }
        if (req->ttl_seconds > POOLS_TTL_MAX) {
                problem_set(err, 422, "invalid-field", "Invalid field",
                            "ttl_seconds must be at most %" PRIu64, POOLS_TTL_MAX);
                return -EINVAL;
        }
        if (!mount_dir(p, req->page_size)) {
                problem_set(err, 503, "no-hugetlbfs", "No hugetlbfs for that page size",
                            "no --hugetlbfs directory is configured for %" PRIu64 "-byte pages",
                            req->page_size);
                return -ENODEV;
        }
        if (p->cfg.max_pool_bytes && req->size_bytes > p->cfg.max_pool_bytes) {
                problem_set(err, 413, "pool-too-large", "Pool too large",
                            "%" PRIu64 " bytes is over the limit of %" PRIu64, req->size_bytes,
                            p->cfg.max_pool_bytes);
                return -EFBIG;
        }
        return 0;
}

/* Under lock: the idempotency/conflict check and the count limits.  Returns
 * 1 with *ret filled for an identical existing pool, 0 to go on, or -errno. */
static int check_registry(struct pools *p, const struct pool_req *req, struct pool_view *ret,
                          struct problem *err)
{
        uint64_t node_bytes = 0;
        struct pool *o;

        /* A busy pool may be on its way out (DELETE or TTL: the file is
         * unlinked before the record goes): wait, as grab_pool does, and
         * look again.  Its holder never takes admit_lock, which we hold. */
        while ((o = find_pool(p, req->name)) && o->busy && !o->creating)
                pthread_cond_wait(&p->changed, &p->lock);

        if (o) {
                const struct journal_pool *r = o->has_pending ? &o->pending : &o->rec;
                if (!same_spec(r, req)) {
                        problem_set(err, 409, "pool-conflict", "A different pool has that name",
                                    "pool %s exists on node %d with %" PRIu64 " bytes of %" PRIu64
                                    "-byte pages",
                                    r->name, r->node, r->size_bytes, r->page_size);
                        return -EEXIST;
                }
                fill_view(o, ret);
                return 1;
        }
        if (p->n_pools >= p->max_pools) {
                problem_set(err, 429, "too-many-pools", "Too many pools",
                            "the daemon holds %zu pools, its limit; delete some first", p->n_pools);
                err->retry_after = 60;
                return -ENOSPC;
        }
        if (p->cfg.max_node_warm_bytes) {
                for (size_t i = 0; i < p->n_pools; i++) {
                        const struct journal_pool *r = &p->pools[i]->rec;
                        if (!p->pools[i]->removing && r->node == req->node &&
                            (r->state == POOL_WARMING || r->state == POOL_READY))
                                node_bytes += r->size_bytes;
                }
                if (node_bytes + req->size_bytes > p->cfg.max_node_warm_bytes) {
                        problem_set(err, 429, "node-warm-limit", "Too much warm memory on the node",
                                    "node %d holds %" PRIu64 " bytes in warming and ready pools; "
                                    "%" PRIu64 " more would pass its limit of %" PRIu64
                                    " (claim, delete or let pools expire first)",
                                    req->node, node_bytes, req->size_bytes, p->cfg.max_node_warm_bytes);
                        err->retry_after = 60;
                        return -EDQUOT;
                }
        }
        return 0;
}

int pools_create(struct pools *p, const struct pool_req *req, struct pool_view *ret, struct problem *err)
{
        struct pool *pool = NULL;
        int r;

        r = validate(p, req, err);
        if (r < 0)
                return r;

        pthread_mutex_lock(&p->admit_lock);
        pthread_mutex_lock(&p->lock);
        r = check_registry(p, req, ret, err);
        pthread_mutex_unlock(&p->lock);
        if (r != 0) {
                pthread_mutex_unlock(&p->admit_lock);
                return r > 0 ? 200 : r;
        }

        r = admit(p, req->node, req->page_size, req->size_bytes / req->page_size, req->reserve, err);
        if (r < 0)
                goto out_unlock;

        pool = calloc(1, sizeof(*pool));
        if (!pool) {
                r = -ENOMEM;
                problem_set(err, 500, "internal-error", "Internal error", "out of memory");
                goto out_unlock;
        }
        pool->owner = p;
        pool->fd = -1;
        snprintf(pool->rec.name, sizeof(pool->rec.name), "%s", req->name);
        pool->rec.node = req->node;
        pool->rec.page_size = req->page_size;
        pool->rec.size_bytes = req->size_bytes;
        pool->rec.state = POOL_WARMING;
        pool->rec.threads = req->threads;
        pool->rec.ttl_seconds = req->ttl_seconds;
        pool->rec.created_at = pool->rec.started_at = now_unix();
        if ((size_t)snprintf(pool->path, sizeof(pool->path), "%s/%s", mount_dir(p, req->page_size),
                             req->name) >= sizeof(pool->path)) {
                r = -ENAMETOOLONG;
                problem_set(err, 500, "pool-file-error", "Cannot create the pool file", "path too long");
                goto out_free;
        }

        r = create_file(p, pool->path, req->size_bytes, err);
        if (r < 0)
                goto out_free;
        pool->fd = r;

        pool->creating = pool->busy = true;
        pthread_mutex_lock(&p->lock);
        r = add_pool(p, pool);
        pthread_mutex_unlock(&p->lock);
        if (r < 0) {
                problem_set(err, 500, "internal-error", "Internal error", "out of memory");
                goto out_unlink;
        }

        r = start_job(p, pool);
        if (r < 0) {
                if (r == -ENOMEM)
                        /* mmap of a hugetlbfs file reserves its pages globally. */
                        problem_set(err, 409, "insufficient-hugepages", "Not enough free hugepages",
                                    "the kernel refused to reserve %" PRIu64 " hugepages for the pool",
                                    req->size_bytes / req->page_size);
                else
                        problem_set(err, r == -EINVAL ? 422 : 500, "warm-start-failed",
                                    "Cannot start warming", "starting the warm job: %s", strerror(-r));
                goto out_drop;
        }

        r = save(p);
        if (r < 0) {
                problem_set(err, 500, "state-write-failed", "Cannot save state",
                            "saving %s/state.json: %s (the pool was not created)", p->state_dir,
                            strerror(-r));
                /* A save in another thread reads pool->job under `lock`:
                 * take the job out there first, then stop and free it. */
                pthread_mutex_lock(&p->lock);
                struct job *job = pool->job;
                pool->job = NULL;
                pthread_mutex_unlock(&p->lock);
                job_cancel(job);
                job_free(job);
                goto out_drop;
        }

        pthread_mutex_lock(&p->lock);
        pool->creating = pool->busy = false;
        fill_view(pool, ret);
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        pthread_mutex_unlock(&p->admit_lock);
        tell(p, ret->rec.name);
        /* The job may have finished already; the reaper skipped it while busy. */
        kick_reaper(p);
        return 201;

out_drop:
        pthread_mutex_lock(&p->lock);
        drop_pool(p, pool);
        pthread_mutex_unlock(&p->lock);
        /* A save that raced with us may hold the record; forget it again.
         * Failing that, the next start finds the file gone and says so. */
        (void)save(p);
out_unlink:
        close(pool->fd);
        unlink(pool->path);
out_free:
        free(pool);
out_unlock:
        pthread_mutex_unlock(&p->admit_lock);
        return r;
}

/* ---- queries and other changes ---- */

int pools_get(struct pools *p, const char *name, struct pool_view *ret)
{
        struct pool *pool;
        int r = -ENOENT;

        pthread_mutex_lock(&p->lock);
        pool = find_pool(p, name);
        if (pool && !pool->creating) {
                fill_view(pool, ret);
                r = 0;
        }
        pthread_mutex_unlock(&p->lock);
        return r;
}

int pools_list(struct pools *p, struct pool_view **ret, size_t *ret_n)
{
        struct pool_view *v;
        size_t n = 0;

        pthread_mutex_lock(&p->lock);
        v = calloc(p->n_pools ? p->n_pools : 1, sizeof(*v));
        if (!v) {
                pthread_mutex_unlock(&p->lock);
                return -ENOMEM;
        }
        for (size_t i = 0; i < p->n_pools; i++)
                if (!p->pools[i]->creating && !p->pools[i]->removing)
                        fill_view(p->pools[i], &v[n++]);
        pthread_mutex_unlock(&p->lock);
        *ret = v;
        *ret_n = n;
        return 0;
}

int pools_wait(struct pools *p, const char *name, uint64_t deadline_ns, struct pool_view *ret)
{
        struct timespec ts = { .tv_sec = (time_t)(deadline_ns / NS_PER_SEC),
                               .tv_nsec = (long)(deadline_ns % NS_PER_SEC) };
        int r = 0;

        pthread_mutex_lock(&p->lock);
        for (;;) {
                struct pool *pool = find_pool(p, name);
                if (!pool || pool->creating) {
                        r = -ENOENT;
                        break;
                }
                if (pool->rec.state != POOL_WARMING || now_mono_ns() >= deadline_ns) {
                        fill_view(pool, ret);
                        break;
                }
                pthread_cond_timedwait(&p->changed, &p->lock, &ts);
        }
        pthread_mutex_unlock(&p->lock);
        return r;
}

int pools_delete(struct pools *p, const char *name)
{
        struct pool *pool;
        int r;

        pthread_mutex_lock(&p->lock);
        pool = grab_pool(p, name);
        pthread_mutex_unlock(&p->lock);
        if (!pool)
                return -ENOENT;
        r = remove_pool(p, pool);
        if (r < 0)
                release_pool(p, pool);
        return r;
}

int pools_claim(struct pools *p, const char *name, struct pool_view *ret)
{
        struct journal_pool next;
        struct pool *pool;
        int r;

        pthread_mutex_lock(&p->lock);
        pool = grab_pool(p, name);
        if (pool && (pool->rec.state != POOL_READY || pool->rec.claimed)) {
                r = pool->rec.state != POOL_READY ? -EBUSY : 0;
                if (r == 0)
                        fill_view(pool, ret);
                pool->busy = false;
                pthread_cond_broadcast(&p->changed);
                pthread_mutex_unlock(&p->lock);
                return r;
        }
        pthread_mutex_unlock(&p->lock);
        if (!pool)
                return -ENOENT;

        next = pool->rec;
        next.claimed = true;
        r = commit(p, pool, &next);
        if (r < 0) {
                /* Not durable: undo, so a restart cannot contradict us. */
                next.claimed = false;
                (void)commit(p, pool, &next);
                release_pool(p, pool);
                return r;
        }
        pthread_mutex_lock(&p->lock);
        fill_view(pool, ret);
        pool->busy = false;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        return 0;
}

void pools_node_usage(struct pools *p, int node, uint64_t page_size, uint64_t *ret_warm,
                      uint64_t *ret_warming)
{
        uint64_t warm = 0, warming = 0;

        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; i < p->n_pools; i++) {
                struct pool *o = p->pools[i];
                struct pool_view v;

                if (o->creating || o->removing || o->rec.node != node || o->rec.page_size != page_size)
                        continue;
                if (o->rec.state == POOL_READY) {
                        warm += o->rec.size_bytes / page_size;
                } else if (o->rec.state == POOL_WARMING) {
                        fill_view(o, &v);
                        warming += v.bytes_done / page_size;
                }
        }
        pthread_mutex_unlock(&p->lock);
        *ret_warm = warm;
        *ret_warming = warming;
}

void pools_get_stats(struct pools *p, struct pools_stats *ret)
{
        pthread_mutex_lock(&p->lock);
        *ret = p->stats;
        pthread_mutex_unlock(&p->lock);
}

/* ---- start and stop ---- */

static int read_boot_id(const char *path, char *buf, size_t len)
{
        FILE *f = fopen(path, "re");
        size_t n;

        if (!f)
                return -errno;
        n = fread(buf, 1, len - 1, f);
        fclose(f);
        buf[n] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return n > 0 ? 0 : -EINVAL;
}

static bool has_record(struct pools *p, const char *dir, const char *name)
{
        for (size_t i = 0; i < p->n_pools; i++) {
                const struct journal_pool *r = &p->pools[i]->rec;
                const char *d = mount_dir(p, r->page_size);
                if (d && strcmp(d, dir) == 0 && strcmp(r->name, name) == 0)
                        return true;
        }
        return false;
}

/* Remove files in our directories that no record owns (a crash between
 * creating a file and saving, or a journal we could not use). */
static void remove_orphans(struct pools *p)
{
        for (size_t m = 0; m < p->cfg.n_mounts; m++) {
                const char *dir = p->mount_dirs[m];
                DIR *d = opendir(dir);
                struct dirent *de;
                struct stat st;

                if (!d) {
                        log_warn("pools: cannot list %s: %m", dir);
                        continue;
                }
                /* pools_new checked the marker; never sweep a directory
                 * that lost it since. */
                if (fstatat(dirfd(d), POOLS_DIR_MARKER, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        log_warn("pools: %s has no %s; not removing unrecorded files", dir, POOLS_DIR_MARKER);
                        closedir(d);
                        continue;
                }
                while ((de = readdir(d))) {
                        /* Only names a pool can have: never the marker, nor
                         * anything else we could not have created. */
                        if (!pool_name_valid(de->d_name))
                                continue;
                        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                            !S_ISREG(st.st_mode) || has_record(p, dir, de->d_name))
                                continue;
                        if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                                log_warn("pools: cannot remove orphan %s/%s: %m", dir, de->d_name);
                                continue;
                        }
                        log_notice("pools: removed %s/%s (%" PRIu64 " bytes held), which no pool record owns",
                                   dir, de->d_name, (uint64_t)st.st_blocks * 512);
                        p->stats.orphan_files_removed++;
                }
                closedir(d);
        }
}

static void reapply_reservations(struct pools *p)
{
        for (size_t i = 0; i < p->n_resv; i++) {
                struct reserve_req rq = {
                        .node = p->resv[i].node,
                        .page_size = p->resv[i].page_size,
                        .count = p->resv[i].count,
                        .allow_partial = true,
                        .floor_bytes = p->cfg.memory_floor,
                };
                struct reserve_result res = {0};
                int r = reserve_apply(p->cfg.fs, &rq, &res);

                count_reservation(p, r, &res);
                if (r == 0 && res.complete)
                        log_info("pools: re-applied reservation: node %d, %" PRIu64 "-byte pages: %" PRIu64,
                                 rq.node, rq.page_size, rq.count);
                else if (r == 0)
                        log_warn("pools: re-applied reservation: node %d, %" PRIu64
                                 "-byte pages: asked %" PRIu64 ", got %" PRIu64,
                                 rq.node, rq.page_size, rq.count, res.achieved);
                else
                        log_warn("pools: re-applying reservation node %d, %" PRIu64
                                 "-byte pages, %" PRIu64 " pages failed: %s",
                                 rq.node, rq.page_size, rq.count, strerror(-r));
        }
}

static void mark_failed(struct pool *pool, const char *slug, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void mark_failed(struct pool *pool, const char *slug, const char *fmt, ...)
{
        va_list ap;

        pool->rec.state = POOL_FAILED;
        if (!pool->rec.finished_at)
                pool->rec.finished_at = now_unix();
        snprintf(pool->rec.error_slug, sizeof(pool->rec.error_slug), "%s", slug);
        va_start(ap, fmt);
        vsnprintf(pool->rec.error_detail, sizeof(pool->rec.error_detail), fmt, ap);
        va_end(ap);
        log_warn("pools: pool %s is failed: %s", pool->rec.name, pool->rec.error_detail);
}

/* Bring one journal record in line with its file (pools_new, single-threaded
 * apart from engine callbacks). */
static void reconcile(struct pools *p, struct pool *pool)
{
        struct journal_pool *r = &pool->rec;
        struct stat st;
        int fd;

        if (!pool->path[0]) {
                if (r->state == POOL_WARMING || r->state == POOL_READY)
                        mark_failed(pool, "no-hugetlbfs", "%s",
                                    "no --hugetlbfs directory is configured for its page size any more");
                return;
        }
        if (r->state == POOL_FAILED || r->state == POOL_CANCELLED) {
                if (unlink(pool->path) == 0)
                        log_notice("pools: removed leftover file of %s pool %s", pool_state_name(r->state),
                                   r->name);
                return;
        }
        fd = open(pool->path, O_RDWR | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                if (fd >= 0)
                        close(fd);
                mark_failed(pool, "file-missing", "its file %s was gone at start", pool->path);
                return;
        }
        uint64_t present = (uint64_t)st.st_blocks * 512;
        if (r->state == POOL_READY && present == r->size_bytes && (uint64_t)st.st_size == r->size_bytes) {
                close(fd);
                return;
        }
        if (r->state == POOL_READY && r->claimed) {
                /* A VM took it and may still map it; fewer pages mean the
                 * guest gave some back (balloon, discard).  Never re-warm,
                 * resize or unlink a file under a running VM. */
                close(fd);
                log_notice("pools: claimed pool %s holds %" PRIu64 " of %" PRIu64
                           " bytes (its VM released some); left as it is",
                           r->name, present, r->size_bytes);
                return;
        }
        if (r->state == POOL_READY)
                log_warn("pools: ready pool %s holds %" PRIu64 " of %" PRIu64 " bytes; warming it again",
                         r->name, present, r->size_bytes);
        if ((uint64_t)st.st_size != r->size_bytes && ftruncate(fd, (off_t)r->size_bytes) < 0) {
                close(fd);
                unlink(pool->path);
                mark_failed(pool, "pool-file-error", "%s", "its file could not be resized at start");
                return;
        }
        r->state = POOL_WARMING;
        r->finished_at = 0;
        pool->fd = fd;
        pool->present_at_start = present < r->size_bytes ? present : r->size_bytes;

        /* Pages already in the file are ours; only the rest must be free. */
        struct problem err = {0};
        uint64_t need = present < r->size_bytes ? (r->size_bytes - present) / r->page_size : 0;
        if (admit(p, r->node, r->page_size, need, false, &err) < 0) {
                close(fd);
                pool->fd = -1;
                unlink(pool->path);
                mark_failed(pool, err.slug ? err.slug : "insufficient-hugepages", "%s", err.detail);
                return;
        }
        int q = start_job(p, pool);
        if (q < 0) {
                close(fd);
                pool->fd = -1;
                unlink(pool->path);
                mark_failed(pool, "warm-start-failed", "resuming the warm job at start failed: %s",
                            strerror(-q));
                return;
        }
        log_info("pools: resuming warm of pool %s (%" PRIu64 " of %" PRIu64 " bytes present)", r->name,
                 present, r->size_bytes);
}

static int load_journal(struct pools *p)
{
        struct journal *j = NULL;
        int r;

        r = journal_load(p->state_dir, &j);
        if (r == -ENOENT) {
                log_info("pools: no state in %s, starting empty", p->state_dir);
                return 0;
        }
        if (r == -EINVAL) {
                int q = journal_quarantine(p->state_dir);
                log_err("pools: %s/state.json is corrupt; %s, starting empty", p->state_dir,
                        q < 0 ? "could not move it aside" : "moved it aside");
                return 0;
        }
        if (r < 0)
                return r;

        /* Reservations hold across reboots: the kernel forgot them, we did not. */
        if (j->n_reservations) {
                p->resv = calloc(j->n_reservations, sizeof(*p->resv));
                if (!p->resv) {
                        journal_free(j);
                        return -ENOMEM;
                }
                memcpy(p->resv, j->reservations, j->n_reservations * sizeof(*p->resv));
                p->n_resv = j->n_reservations;
        }
        if (strcmp(j->boot_id, p->boot_id) != 0) {
                if (j->n_pools)
                        log_notice("pools: state is from another boot; dropping its %zu pools", j->n_pools);
                journal_free(j);
                return 0;
        }
        for (size_t i = 0; i < j->n_pools; i++) {
                struct pool *pool = calloc(1, sizeof(*pool));
                const char *dir = mount_dir(p, j->pools[i].page_size);

                if (!pool || add_pool(p, pool) < 0) {
                        free(pool);
                        journal_free(j);
                        return -ENOMEM;
                }
                pool->owner = p;
                pool->fd = -1;
                pool->rec = j->pools[i];
                if (dir)
                        snprintf(pool->path, sizeof(pool->path), "%s/%s", dir, pool->rec.name);
        }
        journal_free(j);
        return 0;
}

static char *strdup_or_null(const char *s, bool *fail)
{
        char *d;

        if (!s)
                return NULL;
        d = strdup(s);
        if (!d)
                *fail = true;
        return d;
}

int pools_new(const struct pools_config *cfg, struct pools **ret)
{
        pthread_condattr_t ca;
        struct pools *p;
        bool oom = false;
        int r;

        if (!cfg || !cfg->fs || !cfg->topo || !cfg->engine || !cfg->state_dir ||
            cfg->n_mounts > TOPO_MAX_PAGE_SIZES)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->cfg = *cfg;
        p->state_dir = strdup_or_null(cfg->state_dir, &oom);
        p->boot_id_path = strdup_or_null(cfg->boot_id_path ? cfg->boot_id_path : BOOT_ID_PATH, &oom);
        for (size_t i = 0; i < cfg->n_mounts; i++) {
                p->mount_dirs[i] = strdup_or_null(cfg->mounts[i].dir, &oom);
                p->cfg.mounts[i].dir = p->mount_dirs[i];
        }
        p->cfg.state_dir = p->state_dir;
        p->cfg.boot_id_path = p->boot_id_path;
        p->max_pools = cfg->max_pools ? cfg->max_pools : POOLS_DEFAULT_MAX;
        pthread_mutex_init(&p->admit_lock, NULL);
        pthread_mutex_init(&p->save_lock, NULL);
        pthread_mutex_init(&p->lock, NULL);
        pthread_mutex_init(&p->done_lock, NULL);
        pthread_mutex_init(&p->observer_lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->changed, &ca);
        pthread_cond_init(&p->kick, &ca);
        pthread_condattr_destroy(&ca);
        if (oom) {
                r = -ENOMEM;
                goto fail;
        }

        for (size_t i = 0; i < p->cfg.n_mounts; i++) {
                if (!p->mount_dirs[i]) {
                        r = -EINVAL;
                        goto fail;
                }
                r = prepare_dir(p->mount_dirs[i], cfg->mounts[i].page_size, cfg->pool_gid,
                                !cfg->skip_mount_check);
                if (r < 0)
                        goto fail;
        }
        r = read_boot_id(p->boot_id_path, p->boot_id, sizeof(p->boot_id));
        if (r < 0)
                goto fail;

        r = load_journal(p);
        if (r < 0)
                goto fail;
        /* Pages first, then the jobs that need them. */
        reapply_reservations(p);
        for (size_t i = 0; i < p->n_pools; i++)
                reconcile(p, p->pools[i]);
        remove_orphans(p);
        r = save(p);
        if (r < 0)
                goto fail_jobs;

        r = -pthread_create(&p->reaper, NULL, reaper_main, p);
        if (r < 0)
                goto fail_jobs;
        p->reaper_started = true;
        *ret = p;
        return 0;

fail_jobs:
        /* Stop what reconcile started; pools_free keeps them warming on disk. */
        pools_free(p);
        return r;
fail:
        pools_free(p);
        return r;
}

void pools_free(struct pools *p)
{
        if (!p)
                return;
        /* The observer's owner (the HTTP layer) may be gone already. */
        pools_set_observer(p, NULL, NULL);

        if (p->reaper_started) {
                pthread_mutex_lock(&p->done_lock);
                p->stopping = true;
                pthread_cond_signal(&p->kick);
                pthread_mutex_unlock(&p->done_lock);
                pthread_join(p->reaper, NULL);
        }

        /* No other thread touches the registry now (the caller stopped the
         * HTTP layer first): stop each job at a chunk boundary and record
         * where it stands; cancelled jobs stay warming for the next start. */
        bool any = false;
        for (size_t i = 0; i < p->n_pools; i++) {
                struct pool *pool = p->pools[i];
                if (!pool->job)
                        continue;
                job_cancel(pool->job);
                pool->busy = true;
                finish_job(p, pool, true);
                pool->busy = false;
                any = true;
        }
        if (any) {
                int r = save(p);
                if (r < 0)
                        log_err("pools: saving state at exit: %s", strerror(-r));
        }

        for (size_t i = 0; i < p->n_pools; i++) {
                if (p->pools[i]->fd >= 0)
                        close(p->pools[i]->fd);
                free(p->pools[i]);
        }
        free(p->pools);
        free(p->resv);
        pthread_cond_destroy(&p->changed);
        pthread_cond_destroy(&p->kick);
        pthread_mutex_destroy(&p->admit_lock);
        pthread_mutex_destroy(&p->save_lock);
        pthread_mutex_destroy(&p->lock);
        pthread_mutex_destroy(&p->done_lock);
        pthread_mutex_destroy(&p->observer_lock);
        for (size_t i = 0; i < TOPO_MAX_PAGE_SIZES; i++)
                free(p->mount_dirs[i]);
        free(p->state_dir);
        free(p->boot_id_path);
        free(p);
}
