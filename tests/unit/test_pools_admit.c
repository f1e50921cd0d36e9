/* Unit tests for admission (pools_admit.c) under concurrency, in
 * pools_env.h's environment, with two seams:
 *
 * - the sysfs hook below makes the fixture answer nr_hugepages writes as the
 *   kernel does (free pages follow the count), and, exactly while admission
 *   reads node 0's free counter, can let one chunk of a warm through the
 *   fake engine's gate (fake_gate_step) or fault one page into a warm's
 *   file (fallocate on the tmpfs stand-in raises st_blocks as a hugetlbfs
 *   fault does), the kernel's free count dropping by those pages: a chunk
 *   that ends, or a page faulted in, between admission's reads, reproduced
 *   without a timer; or a page a fault has taken off the free list (and
 *   out of resv_hugepages) and is still zeroing, which neither the file's
 *   blocks nor the job's count show yet;
 * - an mbind that fails on demand, so a create fails after it was admitted
 *   (its warm cannot start).
 * No test here sleeps for an outcome: each step waits for its condition. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fake_engine.h"
#include "fixture.h"
#include "journal.h"
#include "pools.h"
#include "pools_env.h"
#include "sysfs.h"

/* ---- the fake kernel ---- */

#define FREE0 HP_DIR(0) "free_hugepages"

static struct {
        const char *step_path;  /* at the next read of this counter ... */
        uint64_t step_pages;    /* ... one chunk ends and takes this many free pages, */
        const char *fault_file; /* ... or this file gains one page, at ... */
        uint64_t fault_at;      /* ... this offset, and free loses it */
        bool fault_after;       /* the fault comes just after the read returned */
        bool free_too;          /* the step's pages leave node 0's free count as well */
        bool in_flight;         /* ... or the pages only leave the free list (a fault still zeroing
                                 * them: neither the file's blocks nor the job's count show them) */
        bool stepped;
        bool frozen;            /* writes to nr_hugepages bring no free page */
        uint64_t take_on_grow;  /* right after the next growth, this many free pages are taken */
} fk;

static void sibling(const char *path, const char *name, char *buf, size_t len)
{
        const char *slash = strrchr(path, '/');

        snprintf(buf, len, "%.*s/%s", (int)(slash - path), path, name);
}

static bool ends_with(const char *s, const char *tail)
{
        size_t n = strlen(s), t = strlen(tail);

        return n >= t && strcmp(s + n - t, tail) == 0;
}

/* What a fault does to the file: one more page present (st_blocks). */
static void fault_page(const char *path, uint64_t offset)
{
        int fd = open(path, O_RDWR | O_CLOEXEC);

        CHECK(fd >= 0);
        CHECK_INT(fallocate(fd, 0, (off_t)offset, (off_t)PAGE), ==, 0);
        close(fd);
}

static int fk_read(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        if (fk.fault_after && fk.step_path && strcmp(path, fk.step_path) == 0) {
                int r = sysfs_default_ops.read_u64(fs, path, ret, userdata);
                fk.fault_after = false; /* then as below */
                CHECK_INT(fk_read(fs, path, &(uint64_t){0}, userdata), ==, 0);
                return r;
        }
        if (fk.step_path && strcmp(path, fk.step_path) == 0) {
                uint64_t free_;

                fk.step_path = NULL;
                if (fk.in_flight) {
                        /* Nothing to do to the file or the job yet. */
                } else if (fk.fault_file) {
                        fault_page(fk.fault_file, fk.fault_at);
                        fk.step_pages = 1;
                } else {
                        CHECK_INT(fake_gate_step(10), ==, 0);
                }
                CHECK_INT(sysfs_default_ops.read_u64(fs, path, &free_, NULL), ==, 0);
                CHECK_U64(free_, >=, fk.step_pages);
                CHECK_INT(sysfs_default_ops.write_u64(fs, path, free_ - fk.step_pages, NULL), ==, 0);
                if (fk.free_too) {
                        CHECK_INT(sysfs_default_ops.read_u64(fs, FREE0, &free_, NULL), ==, 0);
                        CHECK_INT(sysfs_default_ops.write_u64(fs, FREE0, free_ - fk.step_pages, NULL), ==, 0);
                }
                fk.stepped = true;
        }
        return sysfs_default_ops.read_u64(fs, path, ret, userdata);
}

/* nr_hugepages: the count moves by what is written, never below the pages
 * in use, and free_hugepages moves with it. */
static int fk_write(const struct sysfs *fs, const char *path, uint64_t v, void *userdata)
{
        uint64_t prev, free_, in_use, now;
        char p_free[256];

        if (!ends_with(path, "/nr_hugepages") || fk.frozen)
                return sysfs_default_ops.write_u64(fs, path, v, userdata);
        sibling(path, "free_hugepages", p_free, sizeof(p_free));
        CHECK_INT(sysfs_default_ops.read_u64(fs, path, &prev, NULL), ==, 0);
        CHECK_INT(sysfs_default_ops.read_u64(fs, p_free, &free_, NULL), ==, 0);
        in_use = prev - free_;
        now = v < in_use ? in_use : v;
        CHECK_INT(sysfs_default_ops.write_u64(fs, path, now, NULL), ==, 0);
        free_ = now - in_use;
        if (now > prev && fk.take_on_grow) {
                /* Another warm faults pages in just as the pool grew. */
                free_ -= fk.take_on_grow < free_ ? fk.take_on_grow : free_;
                fk.take_on_grow = 0;
        }
        CHECK_INT(sysfs_default_ops.write_u64(fs, p_free, free_, NULL), ==, 0);
        return 0;
}

static const struct sysfs_ops fk_ops = { .read_u64 = fk_read, .write_u64 = fk_write };

/* ---- an engine whose mbind fails on demand ---- */

static int mbind_errno; /* atomic: the upkeep thread's refills read it too */

static long mbind_or_fail(void *addr, unsigned long len, int mode, const unsigned long *nodemask,
                          unsigned long maxnode, unsigned flags)
{
        int e = __atomic_load_n(&mbind_errno, __ATOMIC_SEQ_CST);

        if (e) {
                errno = e;
                return -1;
        }
        return 0;
}

static const struct engine_ops admit_ops = {
        .madvise = fake_gate_madvise,
        .mbind = mbind_or_fail,
        .move_pages = fake_engine_move_pages_node0,
};

/* pools_env's environment with the fake kernel and the engine above. */
static void admit_env_init(struct env *e)
{
        env_init(e);
        engine_free(e->engine);
        struct engine_config ec = { .topo = e->topo, .threads_per_node = 1, .ops = &admit_ops };
        CHECK_INT(engine_new(&ec, &e->engine), ==, 0);
        e->cfg.engine = e->engine;
        sysfs_set_ops(e->fs, &fk_ops, NULL);
        memset(&fk, 0, sizeof(fk));
        __atomic_store_n(&mbind_errno, 0, __ATOMIC_SEQ_CST);
}

static uint64_t counter(const struct env *e, const char *rel)
{
        char buf[32];

        fixture_read(e->sys, rel, buf, sizeof(buf));
        return strtoull(buf, NULL, 10);
}

static uint64_t bytes_done(struct pools *p, const char *name)
{
        struct pool_view v;

        CHECK_INT(pools_get(p, name, &v, NULL), ==, 0);
        return v.bytes_done;
}

static char a_path[256]; /* "a"'s file, once start_with_a_warming() made it */

/* A test on start_with_a_warming(): its environment and registry, and the
 * view and problem of its last create. */
struct warm_a {
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
};

/* Node 0: 16 pages, 12 free; "a" (8 pages, 4 chunks of 2 with one worker)
 * holds at the gate before its first chunk, so 4 pages are admissible. */
static void start_with_a_warming(struct warm_a *t)
{
        struct pool_req r = req("a", 0, 8);

        admit_env_init(&t->e);
        fixture_write(t->e.sys, FREE0, "12\n");
        fixture_write(t->e.sys, HP_DIR(0) "nr_hugepages", "16\n");
        t->p = start(&t->e);
        create_gated(t->p, &r, &t->v, &t->err);
        CHECK_U64(bytes_done(t->p, "a"), ==, 0);
        snprintf(a_path, sizeof(a_path), "%s/a", t->e.mount);
}

/* Create NAME, PAGES pages on node 0 (RESERVE: grow the node for it). */
static int create0(struct warm_a *t, const char *name, uint64_t pages, bool reserve)
{
        struct pool_req r = req(name, 0, pages);

        r.reserve = reserve;
        return create(t->p, &r, &t->v, &t->err);
}

/* Node 1 (8 pages, 7 free) with a reservation of 8 recorded. */
static struct pools *start_with_node1_reserved(struct env *e)
{
        struct reserve_req rq = { .node = 1, .page_size = PAGE, .count = 8 };
        struct reserve_result res;
        struct pools *p;

        admit_env_init(e);
        p = start(e);
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        return p;
}

/* The journal on disk, checked to record one reservation of COUNT pages
 * (0: none).  The caller frees it. */
static struct journal *load_reserved(const struct env *e, uint64_t count)
{
        struct journal *j = load(e);

        CHECK_U64(j->n_reservations, ==, count ? 1 : 0);
        if (count)
                CHECK_U64(j->reservations[0].count, ==, count);
        return j;
}

/* NAME, 8 pages on node 1 with "reserve": true, admitted (node 1 grown)
 * but its warm cannot start: mbind fails from here to the end of the test.
 * Refused, node 1 back at 8 pages with FREE_ free, no pool, no file. */
static void warm_cannot_start(const struct env *e, struct pools *p, const char *name, uint64_t free_)
{
        struct pool_req r = req(name, 1, 8);
        struct pool_view v;
        struct problem err;

        __atomic_store_n(&mbind_errno, EIO, __ATOMIC_SEQ_CST);
        r.reserve = true;
        CHECK(create(p, &r, &v, &err) < 0);
        CHECK_STR(err.slug, "warm-start-failed");
        CHECK_U64(counter(e, HP_DIR(1) "nr_hugepages"), ==, 8);
        CHECK_U64(counter(e, HP_DIR(1) "free_hugepages"), ==, free_);
        CHECK(!file_exists(e, name));
        CHECK_INT(pools_get(p, name, &v, NULL), ==, -ENOENT);
}

/* The end of a test on start_with_a_warming(): the gate opens, "a" and
 * OTHER warm to ready and are deleted, and the environment goes. */
static void finish(struct warm_a *t, const char *other)
{
        const char *names[] = { "a", other };

        fake_gate_set(false);
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                wait_state(t->p, names[i], POOL_READY);
                CHECK_INT(pools_delete(t->p, names[i], NULL), ==, 0);
        }
        env_fini_hooked(&t->e, t->p);
}

/* At the next read of node 0's free count, one chunk of "a" ends (its 2
 * pages leave free_hugepages) ... */
static void chunk_ends_at_free_read(void)
{
        fk.step_path = FREE0;
        fk.step_pages = 2;
}

/* ... or one page is faulted into "a"'s file, during that read or (AFTER)
 * just after it returned. */
static void page_faults_at_free_read(bool after)
{
        fk.step_path = FREE0;
        fk.fault_file = a_path;
        fk.fault_at = 0;
        fk.fault_after = after;
}

/* ---- tests ---- */

/* A chunk of "a" ends while a create reads node 0's counters: its 2 pages
 * leave `free` and leave what "a" still needs.  4 pages were free for
 * others before and still are; counting the chunk twice (still needed,
 * and gone from free) refused the 4 with a 409. */
TEST(chunk_ending_between_reads_is_counted_once)
{
        struct warm_a t;

        start_with_a_warming(&t);
        chunk_ends_at_free_read();
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        CHECK(fk.stepped);
        CHECK_U64(bytes_done(t.p, "a"), ==, 2 * PAGE);
        CHECK_U64(counter(&t.e, FREE0), ==, 10);
        finish(&t, "b");
}

/* The other side of the same rule: a count read once the chunk is known to
 * have ended is not taken as free either.  "a" needs 6 more, "b" 4, and
 * node 0 has 10 free: nothing is left for a third pool. */
TEST(nothing_counted_free_twice)
{
        struct warm_a t;

        start_with_a_warming(&t);
        chunk_ends_at_free_read();
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        CHECK_INT(create0(&t, "c", 1, false), ==, -ENOMEM);
        CHECK_STR(t.err.slug, "insufficient-hugepages");
        CHECK(strstr(t.err.detail, "10 free"));
        CHECK(strstr(t.err.detail, "10 still to be taken"));
        CHECK(!file_exists(&t.e, "c"));
        finish(&t, "b");
}

/* A chunk in flight: its populate has faulted 1 of its 2 pages (the page
 * left `free`, 11 now, and the file's blocks show it) and has not returned,
 * so the job's count still says 0.  Counting by the job alone, "a" needs 8
 * and 3 are left: the page is counted twice.  By the file, "a" needs 7 and
 * 4 pages are admissible, as before the fault. */
TEST(page_of_chunk_in_flight_is_counted_once)
{
        struct warm_a t;

        start_with_a_warming(&t);
        fault_page(a_path, 0);
        fixture_write(t.e.sys, FREE0, "11\n");
        CHECK_U64(bytes_done(t.p, "a"), ==, 0);
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        /* And nothing more: 7 + 4 still needed, 11 free. */
        CHECK_INT(create0(&t, "c", 1, false), ==, -ENOMEM);
        CHECK(strstr(t.err.detail, "11 still to be taken"));
        finish(&t, "b");
}

/* The same page faulted in while admission reads the counters: the blocks
 * read before say 8 needed, the free count says 11, the blocks after say 7;
 * the reading is taken again (7 and 11), and 4 pages are admitted. */
TEST(page_faulted_between_reads_is_counted_once)
{
        struct warm_a t;

        start_with_a_warming(&t);
        page_faults_at_free_read(false);
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        CHECK(fk.stepped);
        CHECK_U64(counter(&t.e, FREE0), ==, 11);
        finish(&t, "b");
}

/* The other order: the page is faulted just after free_hugepages was read
 * (12).  A need read after that (7) must not be set against that free
 * count: 5 pages would look admissible while only 4 are (12 - 8 before the
 * fault, 11 - 7 after).  The reading is taken again, and 5 are refused. */
TEST(page_faulted_after_free_read_is_not_counted_free)
{
        struct warm_a t;

        start_with_a_warming(&t);
        page_faults_at_free_read(true);
        CHECK_INT(create0(&t, "b", 5, false), ==, -ENOMEM);
        CHECK(fk.stepped);
        CHECK(strstr(t.err.detail, "11 free"));
        CHECK(strstr(t.err.detail, "7 still to be taken"));
        CHECK(!file_exists(&t.e, "b"));
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        finish(&t, "b");
}

/* "reserve": true grows the node by what is missing, measured consistently:
 * 4 admissible pages before the chunk and after it, 6 asked, so 2 more
 * (16 -> 18), not 4 (the chunk counted as needed and as taken). */
TEST(reserve_grows_by_what_is_missing)
{
        struct warm_a t;

        start_with_a_warming(&t);
        chunk_ends_at_free_read();
        CHECK_INT(create0(&t, "r", 6, true), ==, CREATED);
        CHECK(fk.stepped);
        CHECK_U64(counter(&t.e, HP_DIR(0) "nr_hugepages"), ==, 18);
        journal_free(load_reserved(&t.e, 18));
        finish(&t, "r");
}

/* Node 1 (8 pages, 7 free) grown to 9 for an 8-page pool whose file then
 * cannot be made (a file of its name that no record owns): the count goes
 * back to 8, the journal records no reservation, and the stranger's file
 * is left alone. */
TEST(growth_undone_when_file_cannot_be_made)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("d", 1, 8);
        struct pools_stats s;
        char path[256];
        int fd;

        admit_env_init(&e);
        p = start(&e);
        snprintf(path, sizeof(path), "%s/d", e.mount);
        fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        CHECK(fd >= 0);
        close(fd);

        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, -EEXIST);
        CHECK_STR(err.slug, "pool-conflict");
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 8);
        CHECK_U64(counter(&e, HP_DIR(1) "free_hugepages"), ==, 7);
        struct journal *j = load_reserved(&e, 0);
        CHECK_U64(j->n_pools, ==, 0);
        journal_free(j);
        pools_get_stats(p, &s);
        CHECK_U64(s.reservations_ok, ==, 1); /* the growth happened, and was put back */
        CHECK(file_exists(&e, "d"));
        CHECK_INT(pools_get(p, "d", &v, NULL), ==, -ENOENT);
        CHECK_INT(unlink(path), ==, 0);

        /* Without the stranger the same create works, and the growth stays. */
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 9);
        journal_free(load_reserved(&e, 9));
        wait_state(p, "d", POOL_READY);
        CHECK_INT(pools_delete(p, "d", NULL), ==, 0);
        env_fini_hooked(&e, p);
}

/* The warm of a pool grown for cannot start (mbind fails): the pool, its
 * file and the growth are gone, and a reservation recorded before (8) is
 * what the journal holds again, not the 9 of the growth. */
TEST(growth_undone_when_warm_cannot_start)
{
        struct env e;
        struct pools *p = start_with_node1_reserved(&e);

        warm_cannot_start(&e, p, "d", 7);
        struct journal *j = load_reserved(&e, 8);
        CHECK_U64(j->n_pools, ==, 0);
        journal_free(j);
        __atomic_store_n(&mbind_errno, 0, __ATOMIC_SEQ_CST);
        env_fini_hooked(&e, p);
}

/* The same for a partial hand-out from stock: node 1's 2-page stock file
 * (7 free -> 5) is taken for an 8-page pool, the 6 pages it lacks need a
 * growth of 1 (8 -> 9), and the warm of the part it gained cannot start:
 * the file is gone (it was renamed to the pool's name), and so is the
 * growth, in the kernel and in the journal. */
TEST(growth_undone_when_partial_hand_out_fails)
{
        struct env e;
        struct pools *p;
        struct problem err;
        struct stock_target_record t = { .node = 1, .page_size = PAGE, .size_bytes = 2 * PAGE, .count = 1 };

        admit_env_init(&e);
        p = start(&e);
        CHECK_INT(pools_set_stock(p, &t, 1, &err), ==, 0);
        wait_ready(p, 2, 1);
        fixture_write(e.sys, HP_DIR(1) "free_hugepages", "5\n"); /* the stock file's 2 pages */

        warm_cannot_start(&e, p, "g", 5);
        struct journal *j = load_reserved(&e, 0);
        CHECK(!jpool(j, "g"));
        journal_free(j);
        struct pools_stats s;
        pools_get_stats(p, &s);
        CHECK_U64(s.reservations_ok, ==, 1);
        __atomic_store_n(&mbind_errno, 0, __ATOMIC_SEQ_CST);
        env_fini_hooked(&e, p);
}

/* A refused create leaves a recorded reservation as it was too: 9 pages
 * would not be enough after the growth (the kernel gives none), so the 409
 * says the growth was undone, and the journal still says 8. */
TEST(refused_growth_keeps_recorded_count)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("d", 1, 8);

        p = start_with_node1_reserved(&e);
        /* The growth is written but brings no free page. */
        fk.frozen = true;
        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK(strstr(err.detail, "undone"));
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 8);
        journal_free(load_reserved(&e, 8));
        env_fini_hooked(&e, p);
}

/* pools_reserve's refusal of RQ is the rule's own, as pools_check_node_page_size
 * (the words PUT /v1/nodes/{id}/hugepages/{size} answers from its path) gives
 * it: -ENOENT, and the same status, slug and detail. */
static void reserve_refused_as_the_rule(struct pools *p, const struct reserve_req *rq, const char *slug)
{
        struct problem got = {0}, want = {0};
        struct reserve_result res;

        CHECK_INT(pools_check_node_page_size(p, rq->node, rq->page_size, &want), ==, -ENOENT);
        CHECK_INT(pools_reserve(p, rq, &res, &got), ==, -ENOENT);
        CHECK_INT(got.status, ==, 404);
        CHECK_INT(got.status, ==, want.status);
        CHECK_STR(got.slug, slug);
        CHECK_STR(got.slug, want.slug);
        CHECK_STR(got.detail, want.detail);
}

/* A reservation of a node or page size the host lacks is refused by the
 * core with the answer the API gives (pools.h: every entry that takes a
 * node and a page size applies the rule), the node first, before anything
 * is read or written; each counts as a failed reservation. */
TEST(reserve_refuses_unknown_node_and_page_size_as_the_api_does)
{
        struct env e;
        struct pools *p;
        struct pools_stats s;
        struct reserve_req rq = { .node = 7, .page_size = PAGE, .count = 12 };

        admit_env_init(&e);
        p = start(&e);
        uint64_t nr0 = counter(&e, HP_DIR(0) "nr_hugepages"), nr1 = counter(&e, HP_DIR(1) "nr_hugepages");
        reserve_refused_as_the_rule(p, &rq, "unknown-node");
        rq.node = 0;
        rq.page_size = 4 * MIB;
        reserve_refused_as_the_rule(p, &rq, "unknown-page-size");
        rq.node = 7;    /* both: the node's answer, as the path gives it */
        reserve_refused_as_the_rule(p, &rq, "unknown-node");
        CHECK_U64(counter(&e, HP_DIR(0) "nr_hugepages"), ==, nr0);
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, nr1);
        pools_get_stats(p, &s);
        CHECK_U64(s.reservations_error, ==, 3);
        CHECK_U64(s.reservations_ok, ==, 0);
        env_fini_hooked(&e, p);
}

/* A page taken from the free list just as the node grew (another warm's,
 * in flight, counted twice at the next reading): node 1 (8 pages, 7 free)
 * grown to 10 for a 9-page pool shows 8 free, short by one.  The admission
 * grows once more by that page and admits; the journal records the 11 the
 * kernel holds. */
TEST(growth_short_by_a_page_taken_meanwhile_grows_again)
{
        struct env e;
        struct pools *p;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("d", 1, 9);

        admit_env_init(&e);
        p = start(&e);
        fk.take_on_grow = 1;
        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 11);
        journal_free(load_reserved(&e, 11));
        wait_state(p, "d", POOL_READY);
        CHECK_INT(pools_delete(p, "d", NULL), ==, 0);
        env_fini_hooked(&e, p);
}

/* A growth undone that the kernel holds up above the count before: node 1
 * (8 pages recorded, 1 free) grown to 9 for a 2-page pool loses both new
 * free pages to another mapping at once, so the pool is refused and the
 * count can only go back to 9 (all in use).  The journal then records 9,
 * what the kernel holds, not the 8 of before. */
TEST(undone_growth_held_up_records_the_count_left)
{
        struct env e;
        struct pools *p = start_with_node1_reserved(&e);
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("d", 1, 2);

        fixture_write(e.sys, HP_DIR(1) "free_hugepages", "1\n");
        fk.take_on_grow = 2;
        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK(strstr(err.detail, "undone"));
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 9);
        journal_free(load_reserved(&e, 9));
        env_fini_hooked(&e, p);
}

/* ---- available: free, less what warms still need, less foreign reservations ---- */

/* Another process's mapping reserved 3 pages and faulted none (resv 3, no
 * warm of ours): node 0's 12 free pages leave 9 for a new pool; 9 are
 * admitted, 10 refused with the three numbers in the detail. */
TEST(foreign_reservation_is_not_available)
{
        struct pools_avail a;
        struct pool_view v;
        struct problem err;
        struct env e;
        struct pools *p;

        admit_env_init(&e);
        fixture_write(e.sys, FREE0, "12\n");
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "16\n");
        fixture_write(e.sys, RESV_2M, "3\n");
        p = start(&e);
        CHECK_INT(pools_node_available(p, 0, PAGE, &a), ==, 0);
        CHECK_U64(a.free, ==, 12);
        CHECK_U64(a.reserved, ==, 3);
        CHECK_U64(a.foreign, ==, 3);
        CHECK_U64(a.available, ==, 9);
        struct pool_req big = req("big", 0, 10);
        CHECK_INT(create(p, &big, &v, &err), ==, -ENOMEM);
        CHECK_STR(err.slug, "insufficient-hugepages");
        CHECK(strstr(err.detail, "it has 9 (12 free, 0 still to be taken by other warming pools, 3 reserved"));
        CHECK(!file_exists(&e, "big"));
        struct pool_req fit = req("fit", 0, 9);
        CHECK_INT(create(p, &fit, &v, &err), ==, CREATED);
        wait_state(p, "fit", POOL_READY);
        CHECK_INT(pools_delete(p, "fit", NULL), ==, 0);
        env_fini_hooked(&e, p);
}

/* Our own warm's mapping is in resv_hugepages too: "a" (8 pages, none
 * faulted) reserved 8, another process 2, so resv is 10.  What "a" holds
 * is counted once, as still needed: 12 - 8 - 2 = 2 are available (taking
 * all of resv off as well would leave none). */
TEST(own_warm_reservation_counted_once)
{
        struct pools_avail a;
        struct warm_a t;

        start_with_a_warming(&t);
        fixture_write(t.e.sys, RESV_2M, "10\n");
        CHECK_INT(pools_node_available(t.p, 0, PAGE, &a), ==, 0);
        CHECK_U64(a.needed, ==, 8);
        CHECK_U64(a.foreign, ==, 2);
        CHECK_U64(a.available, ==, 2);
        CHECK_INT(create0(&t, "c", 3, false), ==, -ENOMEM);
        CHECK(strstr(t.err.detail, "2 reserved"));
        CHECK_INT(create0(&t, "b", 2, false), ==, CREATED);
        finish(&t, "b");
}

/* A chunk of "a" ends just after admission read resv_hugepages: its 2
 * pages leave resv and free together, and the need.  Read apart from the
 * need, resv would still hold them when the need no longer does, and they
 * would count as a foreign reservation: 2 available instead of 4. */
TEST(chunk_ending_after_resv_read_is_not_foreign)
{
        struct warm_a t;

        start_with_a_warming(&t);
        fixture_write(t.e.sys, RESV_2M, "8\n"); /* "a"'s mapping, nothing foreign */
        fk.step_path = RESV_2M;
        fk.step_pages = 2;
        fk.fault_after = true;
        fk.free_too = true;
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        CHECK(fk.stepped);
        CHECK_U64(counter(&t.e, RESV_2M), ==, 6);
        CHECK_U64(counter(&t.e, FREE0), ==, 10);
        finish(&t, "b");
}

/* Multi-node: resv_hugepages does not say which node will serve a foreign
 * reservation, so each node has all of it taken off (node 1: 7 free, 1
 * foreign), while node 0's warm reserves from node 0 only and is not taken
 * off node 1. */
TEST(foreign_reservation_taken_off_every_node)
{
        struct pools_avail a;
        struct warm_a t;

        start_with_a_warming(&t);
        fixture_write(t.e.sys, RESV_2M, "9\n"); /* "a"'s 8 and 1 foreign */
        CHECK_INT(pools_node_available(t.p, 1, PAGE, &a), ==, 0);
        CHECK_U64(a.free, ==, 7);
        CHECK_U64(a.needed, ==, 0);
        CHECK_U64(a.foreign, ==, 1);
        CHECK_U64(a.available, ==, 6);
        CHECK_INT(pools_node_available(t.p, 0, PAGE, &a), ==, 0);
        CHECK_U64(a.available, ==, 12 - 8 - 1);
        struct pool_req r = req("b", 1, 7);
        CHECK_INT(create(t.p, &r, &t.v, &t.err), ==, -ENOMEM);
        r = req("b", 1, 6);
        CHECK_INT(create(t.p, &r, &t.v, &t.err), ==, CREATED);
        finish(&t, "b");
}

/* "reserve": true grows the node by what the foreign reservation takes as
 * well: 12 free, 3 reserved, a pool of 10 grows node 0 from 16 to 17. */
TEST(reserve_grows_past_foreign_reservation)
{
        struct pool_view v;
        struct problem err;
        struct env e;
        struct pools *p;

        admit_env_init(&e);
        fixture_write(e.sys, FREE0, "12\n");
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "16\n");
        fixture_write(e.sys, RESV_2M, "3\n");
        p = start(&e);
        struct pool_req r = req("big", 0, 10);
        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_U64(counter(&e, HP_DIR(0) "nr_hugepages"), ==, 17);
        wait_state(p, "big", POOL_READY);
        CHECK_INT(pools_delete(p, "big", NULL), ==, 0);
        env_fini_hooked(&e, p);
}

/* A page in flight: a fault of "a" took it off the free list and out of
 * resv_hugepages (one step, under the kernel's hugetlb lock) and is still
 * zeroing it, so neither the file's blocks nor the job's count show it.
 * "a"'s mapping reserved its 8 pages: resv 7, free 11.  What "a" still
 * holds is resv's 7, not the counters' 8: 4 pages are admissible, as
 * before the fault (counting by the counters, the page was counted as
 * still needed and as gone from free: 3, and a 409).  And not 5. */
TEST(page_being_zeroed_is_counted_once)
{
        struct warm_a t;

        start_with_a_warming(&t);
        fixture_write(t.e.sys, RESV_2M, "7\n");
        fixture_write(t.e.sys, FREE0, "11\n");
        CHECK_U64(bytes_done(t.p, "a"), ==, 0);
        CHECK_INT(create0(&t, "c", 5, false), ==, -ENOMEM);
        CHECK(strstr(t.err.detail, "it has 4 (11 free, 7 still to be taken"));
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        finish(&t, "b");
}

/* The same fault landing between admission's read of resv_hugepages and
 * its read of the free count: the page leaves both, but resv was read
 * before (8) and free after (11).  Set against each other they count the
 * page as reserved and as gone: 3.  resv read again after free (7)
 * shows the move, and the reading is taken again: 4 admitted. */
TEST(page_dequeued_between_resv_and_free_reads_is_counted_once)
{
        struct warm_a t;

        start_with_a_warming(&t);
        fixture_write(t.e.sys, RESV_2M, "8\n"); /* "a"'s mapping, nothing foreign */
        fk.step_path = RESV_2M;
        fk.step_pages = 1;
        fk.fault_after = true;
        fk.free_too = true;
        fk.in_flight = true;
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        CHECK(fk.stepped);
        CHECK_U64(counter(&t.e, RESV_2M), ==, 7);
        CHECK_U64(counter(&t.e, FREE0), ==, 11);
        CHECK_U64(bytes_done(t.p, "a"), ==, 0);
        finish(&t, "b");
}

/* "reserve": true with a page in flight grows by what is missing, once:
 * 4 admissible (11 free, 7 reserved by "a"), 6 asked, so 2 more (16 ->
 * 18), and the journal records 18.  Counting the page twice grew by 3. */
TEST(reserve_with_page_being_zeroed_grows_by_what_is_missing)
{
        struct warm_a t;

        start_with_a_warming(&t);
        fixture_write(t.e.sys, RESV_2M, "7\n");
        fixture_write(t.e.sys, FREE0, "11\n");
        CHECK_INT(create0(&t, "r", 6, true), ==, CREATED);
        CHECK_U64(counter(&t.e, HP_DIR(0) "nr_hugepages"), ==, 18);
        journal_free(load_reserved(&t.e, 18));
        finish(&t, "r");
}

/* A kernel (here: a fixture) whose resv_hugepages cannot hold our warm's
 * mapping (0 while "a" has 8 pages to fault, far more than a page per
 * worker behind) is not believed: "a"'s need comes from its counters, and
 * 4 pages are admissible, not 12. */
TEST(resv_below_own_warm_need_is_not_believed)
{
        struct pools_avail a;
        struct warm_a t;

        start_with_a_warming(&t);
        CHECK_INT(pools_node_available(t.p, 0, PAGE, &a), ==, 0);
        CHECK_U64(a.needed, ==, 8);
        CHECK_U64(a.available, ==, 4);
        CHECK_INT(create0(&t, "c", 5, false), ==, -ENOMEM);
        CHECK_INT(create0(&t, "b", 4, false), ==, CREATED);
        finish(&t, "b");
}

/* ---- --fixed-hugepages: no count is ever written ---- */

/* admit_env_init with cfg.fixed_hugepages, sysfs writes still allowed (as
 * the fake kernel answers them): what these tests see is the core's own
 * restraint, not main.c's sysfs_forbid_writes behind it. */
static struct pools *start_fixed(struct env *e)
{
        admit_env_init(e);
        e->cfg.fixed_hugepages = true;
        return start(e);
}

/* "reserve": true grows nothing: node 1 (8 pages, 7 free) refuses an
 * 8-page pool as without reserve, and the detail says why reserve did not
 * help; no count written, none recorded, no reservation counted. */
TEST(fixed_reserve_grows_nothing)
{
        struct env e;
        struct pool_view v;
        struct problem err = {0};
        struct pools_stats s;
        struct pool_req r = req("d", 1, 8);
        struct pools *p = start_fixed(&e);

        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK_STR(err.slug, "insufficient-hugepages");
        CHECK_INT(err.status, ==, 409);
        CHECK(strstr(err.detail, "hugepages are fixed on this host"));
        CHECK(strstr(err.detail, "--fixed-hugepages"));
        CHECK(!strstr(err.detail, "growing"));
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 8);
        CHECK_U64(counter(&e, HP_DIR(1) "free_hugepages"), ==, 7);
        CHECK(!file_exists(&e, "d"));
        journal_free(load_reserved(&e, 0));
        pools_get_stats(p, &s);
        CHECK_U64(s.reservations_ok + s.reservations_partial + s.reservations_shortfall, ==, 0);
        env_fini_hooked(&e, p);
}

/* What fits the free pages is made from them, "reserve" or not. */
TEST(fixed_reserve_uses_free_pages)
{
        struct env e;
        struct pool_view v;
        struct problem err = {0};
        struct pool_req r = req("d", 1, 7);
        struct pools *p = start_fixed(&e);

        r.reserve = true;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 8);
        wait_state(p, "d", POOL_READY);
        journal_free(load_reserved(&e, 0));
        env_fini_hooked(&e, p);
}

/* Without reserve the refusal does not send the caller to "reserve": it
 * names the fixed hugepages instead. */
TEST(fixed_refusal_does_not_suggest_reserve)
{
        struct env e;
        struct pool_view v;
        struct problem err = {0};
        struct pool_req r = req("d", 1, 8);
        struct pools *p = start_fixed(&e);

        CHECK_INT(create(p, &r, &v, &err), ==, -ENOMEM);
        CHECK_STR(err.slug, "insufficient-hugepages");
        CHECK(strstr(err.detail, "hugepages are fixed on this host"));
        CHECK(!strstr(err.detail, "retry with"));
        env_fini_hooked(&e, p);
}

/* PUT /v1/nodes/{id}/hugepages/{size}: hugepages-fixed, 409, for a
 * growth, a shrink and the count the node has alike; nothing written or
 * recorded. */
TEST(fixed_reservation_refused)
{
        struct env e;
        struct reserve_result res = {0};
        struct pools *p = start_fixed(&e);
        static const uint64_t counts[] = { 12, 2, 8 };

        for (size_t i = 0; i < ARRAY_SIZE(counts); i++) {
                struct reserve_req rq = { .node = 1, .page_size = PAGE, .count = counts[i] };
                struct problem err = {0};

                CHECK_INT(pools_reserve(p, &rq, &res, &err), ==, -EROFS);
                CHECK_STR(err.slug, "hugepages-fixed");
                CHECK_INT(err.status, ==, 409);
                CHECK_STR(err.title, "Hugepages are fixed on this host");
                CHECK(strstr(err.detail, "--fixed-hugepages"));
                CHECK(strstr(err.detail, "nothing was changed"));
                CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 8);
        }
        journal_free(load_reserved(&e, 0));
        env_fini_hooked(&e, p);
}

/* A reservation recorded before (without the flag) is not re-applied at
 * the first start after a reboot: the kernel's count is kept. */
TEST(fixed_reservation_not_reapplied_after_reboot)
{
        struct env e;
        struct reserve_req rq = { .node = 1, .page_size = PAGE, .count = 12 };
        struct reserve_result res;
        struct pools *p;

        admit_env_init(&e);
        p = start(&e);
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 12);
        pools_free(p);
        write_file(e.boot, "99999999-2222-3333-4444-555555555555\n");
        fixture_write(e.sys, HP_DIR(1) "nr_hugepages", "8\n");
        fixture_write(e.sys, HP_DIR(1) "free_hugepages", "7\n");
        e.cfg.fixed_hugepages = true;
        p = start(&e);
        CHECK_U64(counter(&e, HP_DIR(1) "nr_hugepages"), ==, 8);
        env_fini_hooked(&e, p);
}

TEST_MAIN()
