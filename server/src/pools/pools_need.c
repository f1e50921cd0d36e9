/* pools_need: what warming jobs on a node have yet to take, and a reading
 * of the node's counters consistent with it.  Admission, reservations,
 * stock refills and the undo of a growth all decide on this one reading.
 *
 * hugetlb reservations are global, so a node-bound warm's pages stay in the
 * node's free_hugepages until it faults them in, and what warms still need
 * must be taken off.  Two sources say how far a warm got, and both lag the
 * kernel's free count without ever leading it:
 *   - the engine's bytes_done, which counts a chunk when its populate
 *     returns: up to a whole chunk (64 MiB) per worker late;
 *   - the file's st_blocks, which hugetlbfs raises once a page has left the
 *     free list and been zeroed: at most the page each worker is on.
 * The larger of the two, read before free_hugepages, is never more than the
 * warm had taken when free_hugepages was read, so the need it gives is
 * never below the true one: a page is never counted as free and as no
 * longer needed.  Counting a page twice (still needed, and gone from free)
 * is the other mistake, a spurious 409 or a growth larger than what is
 * missing (issue 11 item 5).  Reading the need again after the counters,
 * and again while it moved, leaves only the pages being zeroed at that
 * moment counted twice.  When it never holds still the larger need is
 * kept: a refusal at worst, never an over-admission. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pools_internal.h"

/* How often pools_node_counts reads again when a warm moved between its
 * reads.  A file gains a page every ~0.1 ms per worker at most while the
 * counters take microseconds to read, so a few tries nearly always settle;
 * the bound only keeps a busy node from holding admission, and running out
 * of tries costs a conservative count, never a wrong one. */
#define NEED_TRIES 16

/* A warming file whose st_blocks may say more than its job's counters. */
struct need_file {
        char *path;
        dev_t dev;
        ino_t ino;
        uint64_t size;  /* bytes the file will hold */
        uint64_t done;  /* bytes the counters say it holds */
};

/* Pages that warming pools and stock refills on (NODE, PAGE_SIZE) have yet
 * to take by their jobs' counters; with RET_FILES, the files whose blocks
 * may say better (caller frees; a row that cannot be allocated is left out,
 * which only keeps the count conservative).  `reg.lock` held. */
static uint64_t count_needed(struct pools *p, int node, uint64_t page_size, struct need_file **ret_files,
                             size_t *ret_n)
{
        pools_assert_held(&p->reg.lock);
        struct need_file *files = NULL;
        size_t n = 0, cap = 0;
        uint64_t pages = 0;

        for (size_t i = 0; i < p->reg.n_pools; i++) {
                struct pool *o = p->reg.pools[i];
                const struct journal_pool *r = pools_latest(o);
                uint64_t done = 0;

                if (o->hold == POOL_REMOVING || r->node != node || r->page_size != page_size ||
                    (r->state != POOL_WARMING && r->state != POOL_STOCK_WARMING))
                        continue;
                if (o->job) {
                        struct job_status st;
                        job_get_status(o->job, &st);
                        /* Finished, not yet collected (upkeep is busy, or
                         * not started yet at start-up): it takes nothing
                         * more; its pages are already out of `free`. */
                        if (st.state != JOB_RUNNING)
                                continue;
                        /* A grown stock file's job covers only the part it gained. */
                        done = o->job_offset + st.bytes_done;
                } else if (o->hold == POOL_CREATING) {
                        done = 0;
                } else {
                        continue; /* not running: takes nothing now */
                }
                /* A resumed job re-walks pages its file already holds (they
                 * are not free any more); the job's own count starts at 0. */
                if (done < o->present_at_start)
                        done = o->present_at_start;
                if (done >= r->size_bytes)
                        continue;
                pages += (r->size_bytes - done) / page_size;
                if (!ret_files || o->file_ino == 0)
                        continue;
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 8;
                        struct need_file *nf = realloc(files, ncap * sizeof(*nf));
                        if (!nf)
                                continue;
                        files = nf;
                        cap = ncap;
                }
                char *path = strdup(o->path);
                if (!path)
                        continue;
                files[n++] = (struct need_file){ path, o->file_dev, o->file_ino, r->size_bytes, done };
        }
        if (ret_files) {
                *ret_files = files;
                *ret_n = n;
        }
        return pages;
}

uint64_t pools_pages_still_needed(struct pools *p, int node, uint64_t page_size)
{
        pools_assert_held(&p->reg.lock);
        return count_needed(p, node, page_size, NULL, NULL);
}

/* The need by counters (under `reg.lock`), then lowered by what each file's
 * blocks show beyond its counters (a stat each, outside `reg.lock`).  Both are
 * read now, before the caller reads free_hugepages. */
static uint64_t needed_now(struct pools *p, int node, uint64_t page_size)
{
        struct need_file *files = NULL;
        uint64_t pages;
        size_t n = 0;

        pools_lock(&p->reg.lock);
        pages = count_needed(p, node, page_size, &files, &n);
        pools_unlock(&p->reg.lock);
        for (size_t i = 0; i < n; i++) {
                const struct need_file *f = &files[i];
                struct stat st;

                /* Only the file we made: a path now naming another file
                 * (or none) says nothing about this warm. */
                if (stat(f->path, &st) == 0 && st.st_dev == f->dev && st.st_ino == f->ino) {
                        uint64_t present = (uint64_t)st.st_blocks * 512;
                        if (present > f->size)
                                present = f->size;
                        if (present > f->done)
                                pages -= (f->size - f->done) / page_size - (f->size - present) / page_size;
                }
                free(f->path);
        }
        free(files);
        return pages;
}

int pools_node_counts(struct pools *p, int node, uint64_t page_size, struct hp_counts *ret_hp,
                      uint64_t *ret_needed)
{
        pools_assert_held(&p->admit.lock);
        uint64_t before, after;
        struct hp_counts hp;
        int r;

        before = needed_now(p, node, page_size);
        for (unsigned tries = 1;; tries++) {
                r = topo_read_hugepages(p->cfg.fs, node, page_size, &hp);
                if (r < 0)
                        return r;
                after = needed_now(p, node, page_size);
                if (after == before)
                        break;
                if (tries == NEED_TRIES) {
                        /* The need only falls while admit.lock is held (a
                         * warm starts only under it); should it have risen,
                         * the larger is still the safe one. */
                        if (after > before)
                                before = after;
                        break;
                }
                before = after;
        }
        *ret_hp = hp;
        *ret_needed = before;
        return 0;
}
