/* engine_kernel.c: where the engine meets the kernel.  Every call the engine
 * makes on a pool file or its mapping goes through struct engine_ops, whose
 * defaults (the real mmap, munmap, madvise, mbind, move_pages and fstat, and
 * the best zeroing routine) are set here, so the tests can inject EFAULT,
 * EINTR, a short file or pages on the wrong node without a kernel (as
 * SQLite's test VFS does for I/O errors).  Beside the defaults live the two
 * things a worker does to a chunk with no lock held, the chunk itself and
 * its placement check, and what their errnos mean to an operator.
 *
 * A chunk is one MADV_POPULATE_WRITE, done with no lock held and no memory
 * allocated; in a zero job (recycle) it is followed by non-temporal zeroing
 * of the chunk (zero.c).  The populate is there on purpose: on pages that are
 * present it only maps them (no allocation, no clearing: one page-table
 * entry per hugepage, the fault the first store would take anyway), the
 * stores then never fault, and a page that has gone missing before the
 * chunk (the file was truncated behind our back) comes back as EFAULT
 * instead of a SIGBUS that would kill the daemon (a guard, not a lock: the
 * daemon owns its files).  A zero job must never take a page from the
 * kernel, so engine_submit refuses a file with a hole (st_blocks short of
 * st_size) before mapping it.
 *
 * After populating a chunk the worker checks where its pages are (move_pages
 * in query mode, in batches), so the placement check runs beside other
 * chunks' populates rather than as a serial tail.
 *
 * The engine is the program's only user of libnuma, so this file owns
 * libnuma's error hooks (numa_error/numa_warn), which would otherwise print. */
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "engine_types.h"
#include "util.h"
#include "zero.h"

/* EINTR from populate means a signal arrived mid-call; the pages done so far
 * stay done, so a retry only redoes the rest.  Workers block signals, so this
 * is rare; the bound only stops a pathological signal storm from spinning. */
#define EINTR_RETRIES 64
/* move_pages query batch: 512 pages of addresses and statuses (6 KiB of
 * stack) per syscall; big enough that the syscall cost is noise. */
#define VERIFY_BATCH 512

/* libnuma calls these on errors and prints by default; library code here
 * does not log, and every call we make reports its failure by return value. */
void numa_error(char *where) { (void)where; }
void numa_warn(int number, char *where, ...) { (void)number, (void)where; }

void nodemask_set(unsigned long mask[static NODEMASK_LONGS], int node)
{
        memset(mask, 0, NODEMASK_LONGS * sizeof(unsigned long));
        mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
}

/* The real calls, each replaced by OVERRIDE's member where that is set
 * (OVERRIDE may be NULL). */
void engine_ops_init(struct engine *e, const struct engine_ops *override)
{
        e->ops = (struct engine_ops){
                .mmap = mmap,
                .munmap = munmap,
                .madvise = madvise,
                .mbind = mbind,
                .move_pages = move_pages,
                .fstat = fstat,
                .zero = zero_best()->fn,
        };
        e->zero_name = zero_best()->name;
        if (override) {
                if (override->mmap)
                        e->ops.mmap = override->mmap;
                if (override->munmap)
                        e->ops.munmap = override->munmap;
                if (override->madvise)
                        e->ops.madvise = override->madvise;
                if (override->mbind)
                        e->ops.mbind = override->mbind;
                if (override->move_pages)
                        e->ops.move_pages = override->move_pages;
                if (override->fstat)
                        e->ops.fstat = override->fstat;
                if (override->zero) {
                        e->ops.zero = override->zero;
                        e->zero_name = "injected";
                }
        }
}

/* One chunk: MADV_POPULATE_WRITE, retried on EINTR. */
static int populate(const struct engine *e, void *addr, size_t len)
{
        for (unsigned tries = 0;; tries++) {
                if (e->ops.madvise(addr, len, MADV_POPULATE_WRITE) == 0)
                        return 0;
                int r = errno > 0 ? -errno : -EIO;
                if (r != -EINTR || tries >= EINTR_RETRIES)
                        return r;
        }
}

/* Ask the kernel where every page of [OFF, OFF+LEN) of the mapping is.
 * Pages not present (status -ENOENT) count as off the node: the pool is
 * short of them.  Each worker checks the chunk it just populated, so the
 * check runs in parallel with other chunks' populates instead of as a serial
 * tail after the last one. */
int job_check_placement(const struct engine *e, const struct job *j, uint64_t off, uint64_t len,
                        uint64_t *ret_off_node)
{
        void *pages[VERIFY_BATCH];
        int status[VERIFY_BATCH];
        uint64_t first = off / j->spec.page_size, n_pages = len / j->spec.page_size, bad = 0;

        engine_assert_unheld(&j->n->lock);

        for (uint64_t i = 0; i < n_pages;) {
                unsigned long k = n_pages - i < VERIFY_BATCH ? (unsigned long)(n_pages - i) : VERIFY_BATCH;

                for (unsigned long m = 0; m < k; m++) {
                        pages[m] = j->map + (first + i + m) * j->spec.page_size;
                        status[m] = -ENOENT;
                }
                if (e->ops.move_pages(0, k, pages, NULL, status, 0) < 0)
                        return errno > 0 ? -errno : -EIO;
                for (unsigned long m = 0; m < k; m++)
                        if (status[m] != j->spec.node)
                                bad++;
                i += k;
        }
        *ret_off_node = bad;
        return 0;
}

/* One chunk of J at OFF (within the mapping).  Zero jobs populate first:
 * see the top of this file. */
int job_do_chunk(const struct engine *e, const struct job *j, uint64_t off, uint64_t len)
{
        engine_assert_unheld(&j->n->lock);
        int r = populate(e, j->map + off, len);

        if (r == 0 && j->spec.kind == JOB_ZERO)
                e->ops.zero(j->map + off, len);
        return r;
}

static const struct {
        int err;
        const char *slug, *cause;
} causes[] = {
        { EFAULT, "hugepages-exhausted",
          "the node ran out of free hugepages, or a hugetlb cgroup limit was reached" },
        { ENOMEM, "out-of-memory",
          "not enough memory: too few free hugepages to reserve the pool, or the kernel could not allocate" },
        { EINTR, "interrupted", "populating was interrupted by signals over and over" },
        { EHWPOISON, "hardware-poison", "a hugepage of the pool is hardware-poisoned (memory error)" },
        { EINVAL, "populate-unsupported",
          "the kernel does not support MADV_POPULATE_WRITE on this mapping (needs Linux 5.14 or later)" },
        { ENODATA, "file-not-populated",
          "the file to zero in place is missing pages (a hole, or shorter than the job): zeroing it would take new pages from the kernel" },
};

const char *engine_error_cause(int err)
{
        if (err < 0)
                err = -err;
        for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
                if (causes[i].err == err)
                        return causes[i].cause;
        return "populating the pool file failed";
}

const char *engine_error_slug(int err)
{
        if (err < 0)
                err = -err;
        for (size_t i = 0; i < ARRAY_SIZE(causes); i++)
                if (causes[i].err == err)
                        return causes[i].slug;
        return "populate-failed";
}
