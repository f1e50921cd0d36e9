/* pools_file: is a pool's file still the one we made?
 *
 * Someone with access to the pool directory may remove, replace or resize
 * a pool file behind our back.  These checks compare the file at a pool's
 * path with the device, inode and size we recorded: a job's follow-up
 * (pools_jobs.c), a GET of a ready pool (shown at once, recorded by the
 * upkeep thread) and a recycle (pools_recycle.c: a changed file is never
 * zeroed into the stock) all ask here.  One stat each, no lock. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "pools_internal.h"

int pools_file_changed(const char *path, dev_t dev, ino_t ino, const struct journal_pool *r, char *detail,
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

/* A ready pool's file as a GET sees it (one stat, outside `lock`).  A
 * change is shown at once (failed, file-changed) and the upkeep thread
 * records it, so the reader never waits on a save, nor commits from inside
 * an observer. */
void pools_check_on_get(struct pools *p, const struct journal_pool *r, dev_t dev, ino_t ino,
                        struct pool_view *v)
{
        char detail[POOL_ERROR_DETAIL_MAX];
        struct pool *pool;
        bool ours;

        if (r->state != POOL_READY)
                return;
        if (!pools_file_changed(v->path, dev, ino, r, detail, sizeof(detail), &ours))
                return;
        pthread_mutex_lock(&p->lock);
        pool = pools_find(p, r->name);
        if (pool && pool->file_ino == ino && pool->file_dev == dev)
                pool->file_check_due = true;
        pthread_mutex_unlock(&p->lock);
        pools_kick(p);
        v->state = POOL_FAILED;
        v->expires_at = 0;
        snprintf(v->error_slug, sizeof(v->error_slug), "file-changed");
        snprintf(v->error_detail, sizeof(v->error_detail), "%s", detail);
}
