/* Unit tests for the registry (pools_registry.c): its index by name (the
 * open-addressing table of pools_internal.h, driven directly: collisions,
 * tombstones, growth and rehash, names at the length limit, rows being
 * removed), the rows it keeps through real creates, deletes and
 * re-creates, and its change observer: who is told what, never under a
 * registry lock, and nothing for refusals.
 *
 * In pools_env.h's environment: a copy of the two-node sysfs fixture stands
 * in for /sys, a directory in /dev/shm (tmpfs) for the hugetlbfs mount, and
 * the real engine runs with fake_engine.h's gated ops: mmap/munmap/madvise
 * are the real calls on the tmpfs file (so st_blocks tells the truth at
 * restart) behind a gate the test opens and closes, with injectable populate
 * errors; mbind and move_pages are fakes (the fixture's node 1 does not exist
 * on this machine). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "check.h"
#include "child.h"
#include "engine.h"
#include "fake_engine.h"
#include "fixture.h"
#include "journal.h"
#include "pools.h"
#include "pools_env.h"
#include "pools_internal.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

/* A page of the list: the first LIMIT names after AFTER in name order,
 * whether more follow, the filters applied before the cut; the pages
 * together are every pool once. */
TEST(list_page_in_name_order)
{
        enum { N = 12 };
        struct env e;
        struct pool_view v, *page;
        struct problem err;
        char name[32], last[POOL_NAME_MAX + 1] = "";
        size_t n, seen = 0;
        bool more = true;
        struct pools *p = env_start(&e);

        for (int i = N - 1; i >= 0; i--) {          /* made out of order */
                snprintf(name, sizeof(name), "p-%02d", i);
                struct pool_req r = req(name, 0, 1);
                CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
                wait_state(p, name, POOL_READY);
        }
        for (int pages = 0; more; pages++) {
                struct pools_page_filter f = { .after = last[0] ? last : NULL };
                CHECK_INT(pools_list_page(p, &f, 5, &page, &n, &more), ==, 0);
                CHECK_U64(n, ==, pages < 2 ? 5 : 2);
                CHECK_INT(more, ==, pages < 2);
                for (size_t i = 0; i < n; i++) {
                        snprintf(name, sizeof(name), "p-%02zu", seen++);
                        CHECK_STR(page[i].name, name);
                        CHECK_STR(pool_state_name(page[i].state), "ready");
                }
                snprintf(last, sizeof(last), "%s", page[n - 1].name);
                free(page);
        }
        CHECK_U64(seen, ==, N);
        struct pools_page_filter none = { .has_state = true, .state = POOL_WARMING };
        CHECK_INT(pools_list_page(p, &none, 5, &page, &n, &more), ==, 0);
        CHECK_U64(n, ==, 0);
        CHECK_INT(more, ==, false);
        free(page);
        struct pools_page_filter node1 = { .has_node = true, .node = 1 };
        CHECK_INT(pools_list_page(p, &node1, 5, &page, &n, &more), ==, 0);
        CHECK_U64(n, ==, 0);
        free(page);
        struct pools_page_filter tail = { .after = "p-10" };
        CHECK_INT(pools_list_page(p, &tail, 1000, &page, &n, &more), ==, 0);
        CHECK_U64(n, ==, 1);
        CHECK_STR(page[0].name, "p-11");
        CHECK_INT(more, ==, false);
        free(page);
        pools_free(p);
        env_fini(&e);
}

/* ---- saves: only what changed ---- */

/* The last line of the state dir's log (its record text after the CRC). */
static void last_log_record(const struct env *e, char *buf, size_t size)
{
        char path[PATH_MAX], line[8192] = "", prev[8192] = "";
        FILE *f;

        snprintf(path, sizeof(path), "%s/state.log", e->state);
        f = fopen(path, "re");
        CHECK(f);
        while (fgets(line, sizeof(line), f))
                snprintf(prev, sizeof(prev), "%s", line);
        fclose(f);
        CHECK(strlen(prev) > 9);
        snprintf(buf, size, "%s", prev + 9);
}

/* Wait (bounded) until the journal holds NAME as ready: warming -> ready
 * is shown first and saved after (pools_internal.h). */
static void wait_saved_ready(const struct env *e, const char *name)
{
        for (int i = 0; i < POLL_BOUND_S * 1000; i++) {
                struct journal *j = load(e);
                const struct pool_record *r = jpool(j, name);
                bool ready = r && r->state == POOL_READY;
                journal_free(j);
                if (ready)
                        return;
                usleep(1000);
        }
        CHECK(!"the journal never held the pool as ready");
}

static int count_of(const char *hay, const char *needle)
{
        int n = 0;

        for (const char *s = strstr(hay, needle); s; s = strstr(s + 1, needle))
                n++;
        return n;
}

/* The journal on disk holds exactly the registry's pools, each in its
 * state. */
static void check_journal_matches(const struct env *e, struct pools *p)
{
        struct pool_view *v;
        size_t n, pools_in_journal = 0;
        struct journal *j = load(e);

        CHECK_INT(pools_list(p, &v, &n), ==, 0);
        for (size_t i = 0; i < j->n_pools; i++)
                pools_in_journal += !pool_state_is_stock(j->pools[i].state);
        CHECK_U64(pools_in_journal, ==, n);
        for (size_t i = 0; i < n; i++) {
                const struct pool_record *r = jpool(j, v[i].name);
                CHECK(r);
                CHECK_STR(pool_state_name(r->state), pool_state_name(v[i].state));
        }
        free(v);
        journal_free(j);
}

/* A save appends only the rows that changed: with eleven pools, a create
 * writes its one row, a delete one name to drop, a re-create under that
 * name its row again; the journal replays to the registry after each, and
 * a restart finds the same pools. */
TEST(save_appends_only_the_changed_rows)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        char name[32], rec[8192];
        struct pools *p = env_start(&e);

        for (int i = 0; i < 10; i++) {
                snprintf(name, sizeof(name), "s-%d", i);
                struct pool_req r = req(name, 0, 1);
                CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
                wait_state(p, name, POOL_READY);
                wait_saved_ready(&e, name);
        }
        fake_gate_set(true);
        struct pool_req r = req("new", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        last_log_record(&e, rec, sizeof(rec));
        CHECK_INT(count_of(rec, "\"name\":"), ==, 1);
        CHECK_INT(count_of(rec, "\"name\":\"new\""), ==, 1);
        CHECK_INT(count_of(rec, "\"state\":\"warming\""), ==, 1);
        check_journal_matches(&e, p);
        fake_gate_set(false);
        wait_state(p, "new", POOL_READY);
        wait_saved_ready(&e, "new");

        CHECK_INT(pools_delete(p, "s-4", NULL), ==, 0);
        last_log_record(&e, rec, sizeof(rec));
        CHECK_INT(count_of(rec, "\"name\":"), ==, 1);
        CHECK(strstr(rec, "\"drop\":[{\"name\":\"s-4\"}]"));
        check_journal_matches(&e, p);

        r = req("s-4", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "s-4", POOL_READY);
        wait_saved_ready(&e, "s-4");
        check_journal_matches(&e, p);
        struct pools_stats st;
        pools_get_stats(p, &st);
        CHECK_U64(st.journal_saves_full, ==, 1);      /* the first save only */

        pools_free(p);
        p = start(&e);
        struct pool_view *all;
        size_t n;
        CHECK_INT(pools_list(p, &all, &n), ==, 0);
        CHECK_U64(n, ==, 11);
        free(all);
        for (int i = 0; i < 10; i++) {
                snprintf(name, sizeof(name), "s-%d", i);
                CHECK_INT(pools_get(p, name, &v, NULL), ==, 0);
                CHECK_STR(pool_state_name(v.state), "ready");
        }
        check_journal_matches(&e, p);
        pools_free(p);
        env_fini(&e);
}

/* A save that fails leaves the rows' idea of the journal unsure: the next
 * save writes the whole state (a compaction), and the journal matches the
 * registry again. */
TEST(save_after_a_failed_save_writes_everything)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pools_stats a, b;
        struct pools *p = env_start(&e);

        struct pool_req r = req("a", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "a", POOL_READY);
        wait_saved_ready(&e, "a");
        journal_inject_save_error(ENOSPC);
        r = req("b", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), <, 0);
        journal_inject_save_error(0);
        CHECK_INT(pools_get(p, "b", &v, NULL), ==, -ENOENT);
        check_journal_matches(&e, p);
        pools_get_stats(p, &a);
        r = req("c", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        pools_get_stats(p, &b);
        CHECK_U64(b.journal_saves_full, >, a.journal_saves_full);
        wait_state(p, "c", POOL_READY);
        wait_saved_ready(&e, "c");
        check_journal_matches(&e, p);
        pools_free(p);
        env_fini(&e);
}

/* ---- the change observer ---- */

/* What an observer saw: each call's name and what pools_get returned for it
 * from inside the call (which also proves no registry lock is held then). */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct pools *p;
        int calls;
        char last_name[POOL_NAME_MAX + 1];
        char seen[64][32];       /* "name:state", "name:claimed", "name:gone" */
        int n_seen;
} ob = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void observer(void *arg, const char *name)
{
        struct pool_view v;
        int r = name ? pools_get(ob.p, name, &v, NULL) : -ENOENT;

        CHECK(arg == &ob);
        if (!name)
                name = "*";     /* the generation moved */
        pthread_mutex_lock(&ob.lock);
        ob.calls++;
        snprintf(ob.last_name, sizeof(ob.last_name), "%s", name);
        if (ob.n_seen < (int)ARRAY_SIZE(ob.seen))
                snprintf(ob.seen[ob.n_seen++], sizeof(ob.seen[0]), "%s:%s", name,
                         r < 0 ? "gone" : v.claimed ? "claimed" : pool_state_name(v.state));
        pthread_cond_broadcast(&ob.cond);
        pthread_mutex_unlock(&ob.lock);
}

static void ob_reset(struct pools *p)
{
        pthread_mutex_lock(&ob.lock);
        ob.p = p;
        ob.calls = 0;
        ob.n_seen = 0;
        ob.last_name[0] = '\0';
        pthread_mutex_unlock(&ob.lock);
}

static int ob_calls(void)
{
        pthread_mutex_lock(&ob.lock);
        int n = ob.calls;
        pthread_mutex_unlock(&ob.lock);
        return n;
}

/* Wait up to 10 s until the observer saw WHAT ("name:state"). */
static void ob_wait_seen(const char *what)
{
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 10;
        pthread_mutex_lock(&ob.lock);
        for (;;) {
                for (int i = 0; i < ob.n_seen; i++)
                        if (strcmp(ob.seen[i], what) == 0) {
                                pthread_mutex_unlock(&ob.lock);
                                return;
                        }
                if (pthread_cond_timedwait(&ob.cond, &ob.lock, &until) != 0) {
                        fprintf(stderr, "observer never saw %s (%d calls, last %s)\n", what, ob.calls,
                                ob.last_name);
                        CHECK(false);
                }
        }
}

/* Told of creation, of warming -> ready, of claim and of removal, each
 * time after the change is visible. */
TEST(observer_lifecycle)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("obs", 0, 2);
        struct pools *p = env_start(&e);

        ob_reset(p);
        pools_set_observer(p, observer, &ob);

        fake_gate_set(true);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        ob_wait_seen("obs:warming");
        fake_gate_set(false);
        wait_state(p, "obs", POOL_READY);
        ob_wait_seen("obs:ready");
        CHECK_INT(pools_claim(p, "obs", &v, NULL), ==, 0);
        ob_wait_seen("obs:claimed");
        CHECK_INT(pools_delete(p, "obs", NULL), ==, 0);
        ob_wait_seen("obs:gone");
        pools_free(p);
        env_fini(&e);
}

/* Changes that do not happen are not told: refused creates, a claim of a
 * pool that is not ready, a delete of a pool that does not exist. */
TEST(observer_quiet_on_refusals)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("q", 0, 2);
        struct pools *p = env_start(&e);

        create_gated(p, &r, &v, &err);
        ob_reset(p);
        pools_set_observer(p, observer, &ob);

        struct pool_req bad = req("-bad", 0, 1);
        CHECK_INT(create(p, &bad, &v, &err), ==, -EINVAL);
        bad = req("q", 0, 4);
        CHECK_INT(create(p, &bad, &v, &err), ==, -EEXIST);
        bad = req("huge", 0, 1000);
        CHECK_INT(create(p, &bad, &v, &err), ==, -ENOMEM);
        CHECK_INT(pools_claim(p, "q", &v, NULL), ==, -EBUSY);
        CHECK_INT(pools_delete(p, "nope", NULL), ==, -ENOENT);
        CHECK_INT(create(p, &r, &v, &err), ==, EXISTED);
        CHECK_INT(ob_calls(), ==, 0);

        fake_gate_set(false);
        ob_wait_seen("q:ready");
        pools_free(p);
        env_fini(&e);
}

/* The upkeep thread tells of failures and TTL expiry; a removed observer
 * hears nothing more. */
TEST(observer_upkeep_and_removal)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        struct pools *p = env_start(&e);

        ob_reset(p);
        pools_set_observer(p, observer, &ob);

        fake_gate_fail_with(EFAULT);
        r = req("f", 0, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        ob_wait_seen("f:failed");
        fake_gate_fail_with(0);

        r = req("t", 0, 1);
        r.ttl_seconds = 1;
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        ob_wait_seen("t:ready");
        ob_wait_seen("t:gone");         /* expired within about a second */

        pools_set_observer(p, NULL, NULL);
        int before = ob_calls();
        CHECK_INT(pools_delete(p, "f", NULL), ==, 0);
        r = req("after", 0, 1);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "after", POOL_READY);
        CHECK_INT(ob_calls(), ==, before);
        pools_free(p);
        env_fini(&e);
}

/* ---- the index by name ---- */

/* Rows for the index alone: a name and a hold are all it reads. */
static struct pool *row(const char *name)
{
        struct pool *o = calloc(1, sizeof(*o));

        CHECK(o);
        snprintf(o->rec.name, sizeof(o->rec.name), "%s", name);
        o->hold = POOL_FREE;
        return o;
}

/* N distinct names whose hashes share their low BITS bits (one slot of a
 * table of 2^BITS), written to NAMES[i] ("c<k>"). */
static void colliding_names(char names[][POOL_NAME_MAX + 1], int n, unsigned bits)
{
        uint64_t mask = (UINT64_C(1) << bits) - 1, want = 0;
        int found = 0;

        for (unsigned k = 0; found < n && k < 10000000; k++) {
                char name[POOL_NAME_MAX + 1];
                snprintf(name, sizeof(name), "c%u", k);
                uint64_t h = pool_index_hash(name) & mask;
                if (found == 0)
                        want = h;
                if (h == want)
                        snprintf(names[found++], POOL_NAME_MAX + 1, "%s", name);
        }
        CHECK_INT(found, ==, n);
}

/* The table's own invariant: a power of two, at most half used, and its
 * count of used slots (rows and tombstones) what its slots hold. */
static void check_shape(const struct pool_index *ix)
{
        size_t used = 0;

        CHECK(ix->cap == 0 || (ix->cap & (ix->cap - 1)) == 0);
        CHECK_U64(ix->used * 2, <=, ix->cap);
        CHECK_U64(ix->live, <=, ix->used);
        for (size_t i = 0; i < ix->cap; i++)
                used += ix->slots[i] != NULL;
        CHECK_U64(used, ==, ix->used);
}

/* Adds, finds by name (not by pointer), misses, removes. */
TEST(index_add_find_remove)
{
        struct pool_index ix = {0};
        struct pool *a = row("alpha"), *b = row("beta"), *c = row("gamma");

        CHECK(pool_index_find(&ix, "alpha") == NULL);      /* empty, no table yet */
        CHECK_INT(pool_index_add(&ix, a), ==, 0);
        CHECK_INT(pool_index_add(&ix, b), ==, 0);
        CHECK_INT(pool_index_add(&ix, c), ==, 0);
        char key[] = "beta";
        CHECK(pool_index_find(&ix, key) == b);
        CHECK(pool_index_find(&ix, "alpha") == a);
        CHECK(pool_index_find(&ix, "gamma") == c);
        CHECK(pool_index_find(&ix, "delta") == NULL);
        CHECK(pool_index_find(&ix, "") == NULL);
        pool_index_remove(&ix, b);
        CHECK(pool_index_find(&ix, "beta") == NULL);
        CHECK(pool_index_find(&ix, "alpha") == a);
        CHECK(pool_index_find(&ix, "gamma") == c);
        CHECK_U64(ix.live, ==, 2);
        pool_index_remove(&ix, b);                          /* absent: nothing */
        CHECK_U64(ix.live, ==, 2);
        check_shape(&ix);
        pool_index_free(&ix);
        free(a), free(b), free(c);
}

/* Names that land on one slot make one run of probes: each is found past
 * the others, a removal in the middle of the run leaves a tombstone that
 * later probes walk past, and a name added again is found again. */
TEST(index_collisions_and_tombstones)
{
        enum { N = 6 };
        char names[N][POOL_NAME_MAX + 1];
        struct pool *rows[N];
        struct pool_index ix = {0};

        colliding_names(names, N, 4);        /* 16 slots: the first table */
        for (int i = 0; i < N; i++) {
                rows[i] = row(names[i]);
                CHECK_INT(pool_index_add(&ix, rows[i]), ==, 0);
        }
        CHECK_U64(ix.cap, ==, 16);            /* still the first table: they did collide */
        for (int i = 0; i < N; i++)
                CHECK(pool_index_find(&ix, names[i]) == rows[i]);
        pool_index_remove(&ix, rows[1]);      /* mid-run: a tombstone */
        CHECK_U64(ix.used, ==, N);
        CHECK(pool_index_find(&ix, names[1]) == NULL);
        for (int i = 2; i < N; i++)
                CHECK(pool_index_find(&ix, names[i]) == rows[i]);
        pool_index_remove(&ix, rows[N - 1]);  /* the run's end: emptied, not a tombstone */
        CHECK_U64(ix.used, ==, N - 1);
        CHECK(pool_index_find(&ix, names[N - 2]) == rows[N - 2]);
        CHECK_INT(pool_index_add(&ix, rows[1]), ==, 0);   /* reuses the tombstone */
        CHECK_U64(ix.used, ==, N - 1);
        CHECK(pool_index_find(&ix, names[1]) == rows[1]);
        check_shape(&ix);
        pool_index_free(&ix);
        for (int i = 0; i < N; i++)
                free(rows[i]);
}

/* 5000 rows: the table grows in powers of two and stays at most half
 * used, every row found after each growth; with most of them removed,
 * 100,000 names passing through are rehashed away at the table's size
 * instead of growing it without end. */
TEST(index_grows_and_rehashes)
{
        enum { N = 5000 };
        struct pool **rows = calloc(N, sizeof(*rows));
        struct pool_index ix = {0};
        char name[POOL_NAME_MAX + 1];
        size_t last_cap = 0;

        CHECK(rows);
        for (int i = 0; i < N; i++) {
                snprintf(name, sizeof(name), "vm-%d", i);
                rows[i] = row(name);
                CHECK_INT(pool_index_add(&ix, rows[i]), ==, 0);
                if (ix.cap != last_cap) {
                        CHECK_U64(ix.cap, >, last_cap);
                        for (int k = 0; k <= i; k++)
                                CHECK(pool_index_find(&ix, rows[k]->rec.name) == rows[k]);
                        last_cap = ix.cap;
                }
        }
        CHECK_U64(ix.live, ==, N);
        CHECK_U64(ix.cap, <=, 4 * 8192);
        check_shape(&ix);
        for (int i = 0; i < N; i++)
                if (i % 100 != 0)
                        pool_index_remove(&ix, rows[i]);
        CHECK_U64(ix.live, ==, N / 100);
        /* 100,000 names come and go, two at a time, the second removed
         * first: removals in the middle of runs leave tombstones, and the
         * table is rehashed at its size, not grown. */
        struct pool *churn = row("churn"), *churn2 = row("churn2");
        size_t cap = ix.cap;
        for (int i = 0; i < 100000; i++) {
                snprintf(churn->rec.name, sizeof(churn->rec.name), "churn-%d", i);
                snprintf(churn2->rec.name, sizeof(churn2->rec.name), "churn-%d-b", i);
                CHECK_INT(pool_index_add(&ix, churn), ==, 0);
                CHECK_INT(pool_index_add(&ix, churn2), ==, 0);
                CHECK(pool_index_find(&ix, churn->rec.name) == churn);
                pool_index_remove(&ix, churn);
                pool_index_remove(&ix, churn2);
                CHECK_U64(ix.used * 2, <=, ix.cap);
        }
        CHECK(pool_index_find(&ix, "churn-99999") == NULL);
        CHECK_U64(ix.cap, <=, cap);
        check_shape(&ix);
        for (int i = 0; i < N; i++)
                CHECK(pool_index_find(&ix, rows[i]->rec.name) == (i % 100 == 0 ? rows[i] : NULL));
        pool_index_free(&ix);
        for (int i = 0; i < N; i++)
                free(rows[i]);
        free(churn);
        free(churn2);
        free(rows);
}

/* On a small table the same passing names collide often: tombstones pile
 * up, and the table is rehashed in place (its used slots fall back to its
 * rows) at its size, never grown, every row still found. */
TEST(index_tombstones_rehash_in_place)
{
        struct pool_index ix = {0};
        struct pool *keep[5], *a = row("a"), *b = row("b");
        int rehashes = 0;

        for (int i = 0; i < 5; i++) {
                char name[16];
                snprintf(name, sizeof(name), "keep-%d", i);
                keep[i] = row(name);
                CHECK_INT(pool_index_add(&ix, keep[i]), ==, 0);
        }
        CHECK_U64(ix.cap, ==, 16);
        for (int i = 0; i < 100000; i++) {
                size_t before = ix.used;
                snprintf(a->rec.name, sizeof(a->rec.name), "pass-%d", i);
                snprintf(b->rec.name, sizeof(b->rec.name), "pass-%d-b", i);
                CHECK_INT(pool_index_add(&ix, a), ==, 0);
                CHECK_INT(pool_index_add(&ix, b), ==, 0);
                rehashes += ix.used < before;
                pool_index_remove(&ix, a);
                pool_index_remove(&ix, b);
                CHECK_U64(ix.cap, <=, 32);
                CHECK_U64(ix.used * 2, <=, ix.cap);
        }
        CHECK_INT(rehashes, >, 0);
        for (int i = 0; i < 5; i++)
                CHECK(pool_index_find(&ix, keep[i]->rec.name) == keep[i]);
        CHECK_U64(ix.live, ==, 5);
        check_shape(&ix);
        pool_index_free(&ix);
        for (int i = 0; i < 5; i++)
                free(keep[i]);
        free(a), free(b);
}

/* Names of POOL_NAME_MAX characters are keys like any other: the whole
 * name counts (two that differ only in the last character are two rows),
 * and neither prefix nor extension of one finds it. */
TEST(index_names_at_the_length_limit)
{
        char a[POOL_NAME_MAX + 1], b[POOL_NAME_MAX + 1], shorter[POOL_NAME_MAX + 1];
        struct pool_index ix = {0};

        memset(a, 'x', POOL_NAME_MAX);
        a[POOL_NAME_MAX] = '\0';
        memcpy(b, a, sizeof(b));
        b[POOL_NAME_MAX - 1] = 'y';
        memcpy(shorter, a, sizeof(shorter));
        shorter[POOL_NAME_MAX - 1] = '\0';
        CHECK_INT(pool_name_valid(a), ==, true);
        struct pool *ra = row(a), *rb = row(b);
        CHECK_STR(ra->rec.name, a);          /* not cut */
        CHECK_INT(pool_index_add(&ix, ra), ==, 0);
        CHECK_INT(pool_index_add(&ix, rb), ==, 0);
        CHECK(pool_index_find(&ix, a) == ra);
        CHECK(pool_index_find(&ix, b) == rb);
        CHECK(pool_index_find(&ix, shorter) == NULL);
        pool_index_remove(&ix, ra);
        CHECK(pool_index_find(&ix, a) == NULL);
        CHECK(pool_index_find(&ix, b) == rb);
        pool_index_free(&ix);
        free(ra), free(rb);
}

/* A row being removed keeps its entry until it is dropped, and the new
 * row of the same name is the one a lookup finds. */
TEST(index_skips_rows_being_removed)
{
        struct pool_index ix = {0};
        struct pool *old = row("vm-1"), *new = row("vm-1");

        CHECK_INT(pool_index_add(&ix, old), ==, 0);
        old->hold = POOL_REMOVING;
        CHECK(pool_index_find(&ix, "vm-1") == NULL);
        CHECK_INT(pool_index_add(&ix, new), ==, 0);
        CHECK(pool_index_find(&ix, "vm-1") == new);
        pool_index_remove(&ix, old);          /* by pointer: the new row stays */
        CHECK(pool_index_find(&ix, "vm-1") == new);
        CHECK_U64(ix.live, ==, 1);
        pool_index_free(&ix);
        free(old), free(new);
}

/* Through the real registry: pools created, some deleted (each drop moves
 * the last row into its place), created again under their names, all
 * found by pools_get as they are and the deleted ones not. */
TEST(registry_rows_after_deletes)
{
        enum { N = 12 };
        struct env e;
        struct pool_view v;
        struct problem err;
        char name[32];
        struct pools *p = env_start(&e);

        for (int i = 0; i < N; i++) {
                snprintf(name, sizeof(name), "r-%d", i);
                struct pool_req r = req(name, 0, 1);
                CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        }
        for (int i = 0; i < N; i++) {
                snprintf(name, sizeof(name), "r-%d", i);
                wait_state(p, name, POOL_READY);
        }
        for (int i = 0; i < N; i += 3) {
                snprintf(name, sizeof(name), "r-%d", i);
                CHECK_INT(pools_delete(p, name, NULL), ==, 0);
        }
        for (int i = 0; i < N; i++) {
                snprintf(name, sizeof(name), "r-%d", i);
                int r = pools_get(p, name, &v, NULL);
                CHECK_INT(r, ==, i % 3 == 0 ? -ENOENT : 0);
                if (r == 0)
                        CHECK_STR(v.name, name);
        }
        for (int i = 0; i < N; i += 3) {
                snprintf(name, sizeof(name), "r-%d", i);
                struct pool_req r = req(name, 0, 1);
                CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
                wait_state(p, name, POOL_READY);
        }
        for (int i = 0; i < N; i++) {
                snprintf(name, sizeof(name), "r-%d", i);
                CHECK_INT(pools_get(p, name, &v, NULL), ==, 0);
                CHECK_STR(v.name, name);
        }
        struct pool_view *all;
        size_t n;
        CHECK_INT(pools_list(p, &all, &n), ==, 0);
        CHECK_U64(n, ==, N);
        free(all);
        pools_free(p);
        env_fini(&e);
}

TEST_MAIN()
