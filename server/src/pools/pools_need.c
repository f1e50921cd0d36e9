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
 * missing.  Reading the need again after the counters,
 * and again while it moved, leaves only the pages being zeroed at that
 * moment counted twice.  When it never holds still the larger need is
 * kept: a refusal at worst, never an over-admission.
 *
 * What a new pool can get (pools_node_available) also leaves out the pages
 * other mappings have reserved but not faulted: resv_hugepages, which is
 * global and holds our own mapped warms' unfaulted pages too.  Those are
 * already in the need, so only the rest (`foreign`) is taken off, from
 * every node, since the kernel does not say which node will serve it. */
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
        bool on_node;   /* counts toward the node asked about */
        bool mapped;    /* its job's mapping holds a hugetlb reservation */
};

/* What warms still need, as one reading: on the node asked about, and on
 * every node the part already mapped (so reserved, in resv_hugepages). */
struct need {
        uint64_t node;       /* pages warms on the node have yet to take */
        uint64_t mapped_all; /* pages mapped warms on any node have yet to take */
};

/* Pages that warming pools and stock refills of PAGE_SIZE have yet to take
 * by their jobs' counters: on NODE, and mapped on any node; with RET_FILES,
 * the files whose blocks may say better (caller frees; a row that cannot be
 * allocated is left out, which only keeps the count conservative).
 * `reg.lock` held. */
static struct need count_needed(struct pools *p, int node, uint64_t page_size, struct need_file **ret_files,
                                size_t *ret_n)
{
        pools_assert_held(&p->reg.lock);
        struct need_file *files = NULL;
        size_t n = 0, cap = 0;
        struct need need = {0};

        for (size_t i = 0; i < p->reg.n_pools; i++) {
                struct pool *o = p->reg.pools[i];
                const struct journal_pool *r = pools_latest(o);
                uint64_t done = 0, pages;
                bool on_node = r->node == node, mapped = o->job != NULL;

                if (o->hold == POOL_REMOVING || r->page_size != page_size ||
                    (r->state != POOL_WARMING && r->state != POOL_STOCK_WARMING))
                        continue;
                /* Another node's warm matters only for its reservation. */
                if (!on_node && !mapped)
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
                pages = (r->size_bytes - done) / page_size;
                if (on_node)
                        need.node += pages;
                if (mapped)
                        need.mapped_all += pages;
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
                files[n++] = (struct need_file){ path,    o->file_dev, o->file_ino, r->size_bytes,
                                                 done,    on_node,     mapped };
        }
        if (ret_files) {
                *ret_files = files;
                *ret_n = n;
        }
        return need;
}

uint64_t pools_pages_still_needed(struct pools *p, int node, uint64_t page_size)
{
        pools_assert_held(&p->reg.lock);
        return count_needed(p, node, page_size, NULL, NULL).node;
}

/* The need by counters (under `reg.lock`), then lowered by what each file's
 * blocks show beyond its counters (a stat each, outside `reg.lock`).  Both are
 * read now, before the caller reads free_hugepages. */
static struct need needed_now(struct pools *p, int node, uint64_t page_size)
{
        struct need_file *files = NULL;
        struct need need;
        size_t n = 0;

        pools_lock(&p->reg.lock);
        need = count_needed(p, node, page_size, &files, &n);
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
                        if (present > f->done) {
                                uint64_t less = (f->size - f->done) / page_size - (f->size - present) / page_size;
                                if (f->on_node)
                                        need.node -= less;
                                if (f->mapped)
                                        need.mapped_all -= less;
                        }
                }
                free(f->path);
        }
        free(files);
        return need;
}

/* One consistent reading of the node's counters and the need; with
 * RET_RESV, resv_hugepages too, read just before the node's counters and
 * within the same still need (0 when the kernel or fixture lacks it). */
static int read_counts(struct pools *p, int node, uint64_t page_size, struct hp_counts *ret_hp,
                       struct need *ret_need, uint64_t *ret_resv)
{
        struct need before, after;
        struct hp_counts hp;
        uint64_t resv = 0;
        int r;

        before = needed_now(p, node, page_size);
        for (unsigned tries = 1;; tries++) {
                if (ret_resv && topo_read_resv(p->cfg.fs, page_size, &resv) < 0)
                        resv = 0;
                r = topo_read_hugepages(p->cfg.fs, node, page_size, &hp);
                if (r < 0)
                        return r;
                after = needed_now(p, node, page_size);
                if (after.node == before.node && after.mapped_all == before.mapped_all)
                        break;
                if (tries == NEED_TRIES) {
                        /* The need only falls while admit.lock is held (a
                         * warm starts only under it); should it have risen,
                         * the larger is still the safe one. */
                        if (after.node > before.node)
                                before.node = after.node;
                        /* The mapped part is taken off the reservations:
                         * there the smaller is the safe one. */
                        if (after.mapped_all < before.mapped_all)
                                before.mapped_all = after.mapped_all;
                        break;
                }
                before = after;
        }
        *ret_hp = hp;
        *ret_need = before;
        if (ret_resv)
                *ret_resv = resv;
        return 0;
}

int pools_node_counts(struct pools *p, int node, uint64_t page_size, struct hp_counts *ret_hp,
                      uint64_t *ret_needed)
{
        pools_assert_held(&p->admit.lock);
        struct need need;
        int r = read_counts(p, node, page_size, ret_hp, &need, NULL);

        if (r < 0)
                return r;
        *ret_needed = need.node;
        return 0;
}

/* resv_hugepages is read inside the reading that holds the need still:
 * read apart from it, the pages our warms fault in meanwhile would leave
 * resv but not the need, and count as foreign.  It is read just before
 * free_hugepages: a page faulted in between leaves both, so free - resv
 * can only come out smaller, never larger.  On a one-node host the mapped
 * need cancels out (it is in `needed` and in resv alike): available is the
 * kernel's free - resv less the warms not yet mapped, whatever the jobs'
 * counters lag.  A missing resv_hugepages (a kernel or fixture without it)
 * counts as no reservation. */
int pools_node_available(struct pools *p, int node, uint64_t page_size, struct pools_avail *ret)
{
        struct pools_avail a = {0};
        struct hp_counts hp;
        struct need need;
        int r;

        r = read_counts(p, node, page_size, &hp, &need, &a.reserved);
        if (r < 0)
                return r;
        a.total = hp.total;
        a.free = hp.free;
        a.needed = need.node;
        a.foreign = a.reserved > need.mapped_all ? a.reserved - need.mapped_all : 0;
        a.available = a.free > a.needed ? a.free - a.needed : 0;
        a.available = a.available > a.foreign ? a.available - a.foreign : 0;
        *ret = a;
        return 0;
}
