/* pools_pending: what warming jobs on a node have yet to take, and a reading
 * of the node's counters consistent with it.  Admission, reservations,
 * stock refills and the undo of a growth all decide on this one reading.
 *
 * hugetlb reservations are global, so a node-bound warm's pages stay in the
 * node's free_hugepages until it faults them in, and what warms still need
 * must be taken off.  Two sources in the daemon say how far a warm got, and
 * both lag the kernel's free count without ever leading it:
 *   - the engine's bytes_done, which counts a chunk when its populate
 *     returns: up to a whole chunk (64 MiB) per worker late;
 *   - the file's st_blocks, which hugetlbfs raises once a page has left the
 *     free list and been zeroed: at most the page each worker is on.
 * The larger of the two, read before free_hugepages, is never more than the
 * warm had taken when free_hugepages was read, so the need it gives is
 * never below the true one: a page is never counted as free and as no
 * longer needed.  But a page being zeroed is gone from free and still
 * needed by both sources, and under load a worker can sit on one for
 * milliseconds while every re-reading finds another: counted twice, it is
 * a spurious insufficient-hugepages or a growth larger than what is missing.
 *
 * So what a new pool can get (pools_node_available) is reasoned from what
 * was granted rather than from the racing counters.  Every warm we admit
 * maps its file without MAP_NORESERVE, so the kernel holds a reservation for
 * each page it has yet to fault, and a fault takes its page off the free
 * list and out of resv_hugepages in one step under the kernel's own lock:
 * free - resv does not move while our warms fault.  On one node that is the
 * answer, less the warms not mapped yet; with other nodes, their mapped
 * warms' share of resv is taken back by their counters.  resv is read
 * before and after free_hugepages and the reading taken again until they
 * agree (a fault in between moved both).  The kernel's resv is believed
 * only while it can hold our mapped warms' need (at least their counters'
 * need less a page per worker): a kernel or fixture whose resv_hugepages
 * leaves our mappings out falls back to the counters, read again while
 * they move, the larger need kept when they never hold still (a refusal
 * at worst, never an over-admission).
 *
 * The same reading leaves out the pages other mappings have reserved but
 * not faulted (`foreign`: resv_hugepages less our mapped warms' part), from
 * every node, since the kernel does not say which node will serve them.
 * The need alone (pools_node_counts: how far a shrink may go) stays the
 * counters' larger one: keeping a page too many is the safe side there. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pools_internal.h"
#include "util.h"

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
        unsigned threads; /* workers its job may have faulting at once */
        bool on_node;   /* counts toward the node asked about */
        bool mapped;    /* its job's mapping holds a hugetlb reservation */
};

/* What warms still need, as one reading: on the node asked about, and on
 * every node the part already mapped (so reserved, in resv_hugepages). */
struct need {
        uint64_t node;        /* pages warms on the node have yet to take */
        uint64_t mapped_node; /* of which mapped (so in resv_hugepages) */
        uint64_t mapped_all;  /* pages mapped warms on any node have yet to take */
        /* Lower bounds on what mapped warms (on any node; on other nodes)
         * have yet to take: by their files' blocks, less a page per worker
         * that may be zeroing one; 0 for a file not read. */
        uint64_t low_all, low_other;
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
                const struct pool_record *r = pools_latest(o);
                uint64_t done = 0, pages;
                unsigned threads = 0;
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
                        threads = st.threads;
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
                if (on_node && mapped)
                        need.mapped_node += pages;
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
                files[n++] = (struct need_file){ path, o->file_dev, o->file_ino, r->size_bytes,
                                                 done, threads,     on_node,     mapped };
        }
        if (ret_files) {
                *ret_files = files;
                *ret_n = n;
        }
        return need;
}

/* The need by counters (under `reg.lock`), then lowered by what each file's
 * blocks show beyond its counters (a stat each, outside `reg.lock`), and the
 * lower bounds from the same blocks.  Both are read now. */
static struct need needed_now(struct pools *p, int node, uint64_t page_size)
{
        struct need_file *files = NULL;
        struct need need;
        size_t n = 0;

        /* By hand: reg.lock is dropped before the files are stat'ed. */
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
                        if (present < f->done)
                                present = f->done;
                        uint64_t less = (f->size - f->done) / page_size - (f->size - present) / page_size;
                        uint64_t left = (f->size - present) / page_size;
                        if (f->on_node)
                                need.node -= less;
                        if (f->on_node && f->mapped)
                                need.mapped_node -= less;
                        if (f->mapped) {
                                /* A page each of its workers may have
                                 * taken off the free list and not added
                                 * to the file yet. */
                                uint64_t low = left > f->threads ? left - f->threads : 0;
                                need.mapped_all -= less;
                                need.low_all += low;
                                if (!f->on_node)
                                        need.low_other += low;
                        }
                }
                free(f->path);
        }
        free(files);
        return need;
}

/* One consistent reading of the node's counters and the need.  With
 * RET_RESV, resv_hugepages too, read just before and just after the node's
 * counters; *RET_TRUSTED then says whether it can hold our mapped warms'
 * need (0 and false when the kernel or fixture lacks it).  A believed resv
 * must be the same on both sides of the free count; otherwise the need
 * must be the same before and after. */
static int read_counts(struct pools *p, int node, uint64_t page_size, struct hp_counts *ret_hp,
                       struct need *ret_need, uint64_t *ret_resv, bool *ret_trusted)
{
        struct need before, after;
        struct hp_counts hp;
        uint64_t resv = 0, resv_after = 0;
        bool have_resv = false, trusted = false;
        int r;

        before = needed_now(p, node, page_size);
        for (unsigned tries = 1;; tries++) {
                have_resv = ret_resv && topo_read_resv(p->cfg.fs, page_size, &resv) == 0;
                r = topo_read_hugepages(p->cfg.fs, node, page_size, &hp);
                if (r < 0)
                        return r;
                if (have_resv && topo_read_resv(p->cfg.fs, page_size, &resv_after) < 0)
                        have_resv = false;
                if (!have_resv)
                        resv = 0;
                after = needed_now(p, node, page_size);
                /* The upper bounds come from BEFORE (read before resv and
                 * free), the lower bounds from AFTER (read after them). */
                before.low_all = after.low_all;
                before.low_other = after.low_other;
                /* Our warms' true need at the first resv read is at least
                 * the lower bound read after it (the need only falls). */
                trusted = have_resv && resv_after >= after.low_all;
                if (trusted ? resv == resv_after
                            : after.node == before.node && after.mapped_all == before.mapped_all)
                        break;
                if (tries == NEED_TRIES) {
                        /* Believed, the first resv is the safe one: a
                         * fault after it leaves free smaller, not larger.
                         * Else: the need only falls while admit.lock is
                         * held (a warm starts only under it); should it
                         * have risen, the larger is still the safe one. */
                        if (after.node > before.node)
                                before.node = after.node;
                        if (after.mapped_node > before.mapped_node)
                                before.mapped_node = after.mapped_node;
                        /* The mapped part is taken off the reservations:
                         * there the smaller is the safe one. */
                        if (after.mapped_all < before.mapped_all)
                                before.mapped_all = after.mapped_all;
                        if (before.mapped_node > before.mapped_all)
                                before.mapped_node = before.mapped_all;
                        break;
                }
                before = after;
        }
        *ret_hp = hp;
        *ret_need = before;
        if (ret_resv)
                *ret_resv = resv;
        if (ret_trusted)
                *ret_trusted = trusted;
        return 0;
}

int pools_node_counts(struct pools *p, int node, uint64_t page_size, struct hp_counts *ret_hp,
                      uint64_t *ret_needed)
{
        pools_assert_held(&p->admit.lock);
        struct need need;
        int r = read_counts(p, node, page_size, ret_hp, &need, NULL, NULL);

        if (r < 0)
                return r;
        *ret_needed = need.node;
        return 0;
}

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* X, what this node's mapped warms and every foreign reservation may still
 * take, from a believed resv: resv less the other nodes' mapped warms.
 * Their counters over-state what they hold (resv - counters is then at
 * most X, as the counters alone gave before), and their lower bound
 * under-states it (resv - low is at least X); our node's counters are at
 * least its own share.  So max(resv - counters_other, min(counters_node,
 * resv - low_other)) is at least X with no foreign reservation and never
 * more than resv - low_other; on one node (no other part) it is resv. */
static uint64_t believed_share(uint64_t resv, const struct need *n)
{
        uint64_t other = n->mapped_all - n->mapped_node;

        return max_u64(sub0(resv, other), min_u64(n->mapped_node, sub0(resv, n->low_other)));
}

/* With a believed resv, this node's warms need what they have not mapped
 * yet plus their share of it, and the rest of it is foreign.  Without one,
 * they need what their counters say, and resv less every mapped warm's
 * counted need is foreign.  A missing resv_hugepages counts as no
 * reservation. */
int pools_node_available(struct pools *p, int node, uint64_t page_size, struct pools_avail *ret)
{
        struct pools_avail a = {0};
        struct hp_counts hp;
        struct need need;
        bool trusted;
        int r;

        assert_return(p, -EINVAL);
        assert_return(ret, -EINVAL);
        r = read_counts(p, node, page_size, &hp, &need, &a.reserved, &trusted);
        if (r < 0)
                return r;
        a.total = hp.total;
        a.free = hp.free;
        if (trusted) {
                uint64_t share = believed_share(a.reserved, &need);
                uint64_t mine = min_u64(need.mapped_node, share);

                a.needed = (need.node - need.mapped_node) + mine;
                a.foreign = share - mine;
        } else {
                a.needed = need.node;
                a.foreign = sub0(a.reserved, need.mapped_all);
        }
        a.available = sub0(sub0(a.free, a.needed), a.foreign);
        *ret = a;
        return 0;
}
