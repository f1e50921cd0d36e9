/* Unit tests for start-up (pools_recover.c) and the pool directory
 * (pools_dir.c): restarts with warming, ready and claimed pools, re-applied
 * and adopted reservations, the directory's marker and orphans, bad
 * configuration, and a bad journal that must never delete a mapped file.
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
#include "sysfs.h"
#include "topo.h"
#include "util.h"

TEST(restart)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        struct pools_stats s;
        char path[256];
        struct pools *p = env_start(&e);

        r = req("ready", 0, 4);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "ready", POOL_READY);
        r = req("gone", 0, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "gone", POOL_READY);
        r = req("half", 0, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "half", POOL_READY);
        r = req("warm", 0, 6);
        create_gated(p, &r, &v, &err);
        /* Stopping cancels "warm" at a chunk boundary; it stays warming. */
        pthread_t t = open_gate_soon();
        pools_free(p);
        pthread_join(t, NULL);
        struct journal *j = load(&e);
        CHECK_STR(pool_state_name(jpool(j, "warm")->state), "warming");
        CHECK_STR(pool_state_name(jpool(j, "ready")->state), "ready");
        journal_free(j);

        /* Between runs: a file vanishes, one loses its pages, a stranger appears. */
        snprintf(path, sizeof(path), "%s/gone", e.mount);
        CHECK_INT(unlink(path), ==, 0);
        snprintf(path, sizeof(path), "%s/half", e.mount);
        CHECK_INT(truncate(path, 0), ==, 0);
        snprintf(path, sizeof(path), "%s/stranger", e.mount);
        write_file(path, "x");

        p = start(&e);
        CHECK_INT(pools_get(p, "ready", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK_INT(pools_get(p, "gone", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "failed");
        CHECK_STR(v.error_slug, "file-missing");
        wait_state(p, "warm", POOL_READY);
        wait_state(p, "half", POOL_READY);
        snprintf(path, sizeof(path), "%s/half", e.mount);
        struct stat st;
        CHECK_INT(stat(path, &st), ==, 0);
        CHECK_U64(st.st_size, ==, 2 * PAGE);
        CHECK_U64((uint64_t)st.st_blocks * 512, ==, 2 * PAGE);
        CHECK(!file_exists(&e, "stranger"));
        pools_get_stats(p, &s);
        CHECK_U64(s.orphan_files_removed, ==, 1);
        CHECK_U64(s.jobs_started, ==, 2);
        pools_free(p);

        /* A corrupt journal stops the start and changes nothing; with
         * reset_state it is moved aside and the files it described (nobody
         * maps them) become orphans. */
        char sj[256];
        snprintf(sj, sizeof(sj), "%s/state.json", e.state);
        write_file(sj, "{\"version\": 1, \"boot_id\": tru");
        CHECK(pools_new(&e.cfg, &p) < 0);
        CHECK(file_exists(&e, "ready"));
        e.cfg.reset_state = true;
        p = start(&e);
        CHECK_INT(pools_get(p, "ready", &v, NULL), ==, -ENOENT);
        CHECK(!file_exists(&e, "ready"));
        pools_get_stats(p, &s);
        CHECK_U64(s.orphan_files_removed, ==, 3);
        glob_t g;
        snprintf(path, sizeof(path), "%s/state.json.corrupt-*", e.state);
        CHECK_INT(glob(path, 0, NULL, &g), ==, 0);
        CHECK_U64(g.gl_pathc, ==, 1);
        globfree(&g);
        pools_free(p);
        env_fini(&e);
}

/* A claimed pool's VM may have given pages back (balloon, discard) and may
 * still map the file: a restart keeps it ready and never re-warms or
 * unlinks it, even when re-warming could not be admitted. */
TEST(restart_claimed)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r = req("vm", 0, 4);
        struct pools_stats s;
        char path[256];
        struct stat st;
        int fd;
        struct pools *p = env_start(&e);

        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "vm", POOL_READY);
        CHECK_INT(pools_claim(p, "vm", &v, NULL), ==, 0);
        pools_free(p);

        snprintf(path, sizeof(path), "%s/vm", e.mount);
        fd = open(path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        CHECK_INT(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, PAGE, 2 * PAGE), ==, 0);
        close(fd);
        /* No free pages: a re-warm would be refused and the file removed. */
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "0\n");

        p = start(&e);
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, 0);
        CHECK_STR(pool_state_name(v.state), "ready");
        CHECK(v.claimed);
        CHECK_INT(stat(path, &st), ==, 0);
        CHECK_U64((uint64_t)st.st_blocks * 512, ==, 2 * PAGE);
        CHECK_U64(st.st_size, ==, 4 * PAGE);
        pools_get_stats(p, &s);
        CHECK_U64(s.jobs_started, ==, 0);
        CHECK_INT(pools_delete(p, "vm", NULL), ==, 0);
        pools_free(p);
        env_fini(&e);
}

/* Sysfs read hook: at the Nth read of node 0's free counter, wait until the
 * file WAIT_PATH holds WAIT_BYTES (a job populated it) and its job is done. */
static struct {
        int reads, at;
        const char *wait_path;
        uint64_t wait_bytes;
} hk;

static int hook_read(const struct sysfs *fs, const char *path, uint64_t *ret, void *userdata)
{
        if (strcmp(path, HP_DIR(0) "free_hugepages") == 0 && ++hk.reads == hk.at) {
                struct stat st;
                for (int i = 0; i < 10000; i++) {
                        CHECK_INT(stat(hk.wait_path, &st), ==, 0);
                        if ((uint64_t)st.st_blocks * 512 >= hk.wait_bytes)
                                break;
                        usleep(1000);
                }
                CHECK_U64((uint64_t)st.st_blocks * 512, >=, hk.wait_bytes);
                usleep(200 * 1000); /* placement check, munmap, on_done */
        }
        return sysfs_default_ops.read_u64(fs, path, ret, userdata);
}

static const struct sysfs_ops hook_ops = { .read_u64 = hook_read };

/* At start the upkeep thread is not running yet: a resumed pool whose job already
 * finished takes no more pages, so it must not make the next one fail. */
TEST(resume_after_finished)
{
        struct env e;
        struct pools *p;
        char a_path[256];

        env_init(&e);
        /* 8 free: either 6-page pool fits, not both at once. */
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", "8\n");
        fixture_write(e.sys, HP_DIR(0) "nr_hugepages", "8\n");
        p = start(&e);
        pools_free(p);

        /* Journal: A and B warming with empty files, X between them warming
         * with every page present (it needs none; its admission is where the
         * hook lets A finish). */
        struct pool_record recs[3] = {0};
        const char *names[3] = { "A", "X", "B" };
        const uint64_t pages[3] = { 6, 1, 6 };
        for (int i = 0; i < 3; i++) {
                snprintf(recs[i].name, sizeof(recs[i].name), "%s", names[i]);
                recs[i].page_size = PAGE;
                recs[i].size_bytes = pages[i] * PAGE;
                recs[i].state = POOL_WARMING;
                recs[i].created_at = recs[i].started_at = 1;
                make_pool_file(&e, names[i], pages[i] * PAGE, i == 1 ? PAGE : 0);
        }
        struct journal j = { .n_pools = 3, .pools = recs };
        snprintf(j.boot_id, sizeof(j.boot_id), "11111111-2222-3333-4444-555555555555");
        CHECK_INT(journal_save(e.state, &j), ==, 0);

        snprintf(a_path, sizeof(a_path), "%s/A", e.mount);
        hk = (typeof(hk)){ .at = 2, .wait_path = a_path, .wait_bytes = 6 * PAGE };
        sysfs_set_ops(e.fs, &hook_ops, NULL);
        p = start(&e);
        wait_state(p, "A", POOL_READY);
        wait_state(p, "X", POOL_READY);
        wait_state(p, "B", POOL_READY);
        CHECK_INT(hk.reads, >=, 3);
        CHECK_INT(pools_delete(p, "A", NULL), ==, 0);
        CHECK_INT(pools_delete(p, "X", NULL), ==, 0);
        CHECK_INT(pools_delete(p, "B", NULL), ==, 0);
        env_fini_hooked(&e, p);
}

/* The journal records one reservation, of COUNT pages. */
static void check_one_reservation(const struct env *e, uint64_t count)
{
        struct journal *j = load(e);

        CHECK_U64(j->n_reservations, ==, 1);
        CHECK_U64(j->reservations[0].count, ==, count);
        journal_free(j);
}

/* "Reboot": another boot id, the kernel forgot node 1's reservation; the
 * pools start again and node 1 is back at WANT pages. */
static struct pools *reboot_node1(struct env *e, const char *want)
{
        struct pools *p;
        char buf[64];

        write_file(e->boot, "99999999-2222-3333-4444-555555555555\n");
        fixture_write(e->sys, HP_DIR(1) "nr_hugepages", "0\n");
        p = start(e);
        fixture_read(e->sys, HP_DIR(1) "nr_hugepages", buf, sizeof(buf));
        CHECK_STR(buf, want);
        return p;
}

TEST(reboot_and_reservations)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        struct reserve_result res;
        struct pools_stats s;
        struct pools *p = env_start(&e);

        struct reserve_req rq = { .node = 1, .page_size = PAGE, .count = 12 };
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        CHECK(res.complete);
        CHECK_U64(res.total, ==, 12);
        rq.count = 10; /* replaces the entry */
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        /* Unknown node: not recorded. */
        rq.node = 7;
        CHECK(pools_reserve(p, &rq, &res, NULL) < 0);
        pools_get_stats(p, &s);
        CHECK_U64(s.reservations_ok, ==, 2);
        CHECK_U64(s.reservations_error, ==, 1);
        r = req("old", 0, 2);
        CHECK_INT(create(p, &r, &v, &err), ==, CREATED);
        wait_state(p, "old", POOL_READY);
        pools_free(p);
        check_one_reservation(&e, 10);

        p = reboot_node1(&e, "10\n");
        CHECK_INT(pools_get(p, "old", &v, NULL), ==, -ENOENT);
        CHECK(!file_exists(&e, "old"));
        pools_get_stats(p, &s);
        CHECK_U64(s.orphan_files_removed, ==, 1);
        CHECK_U64(s.reservations_ok, ==, 1);
        pools_free(p);
        struct journal *j = load(&e);
        CHECK_STR(j->boot_id, "99999999-2222-3333-4444-555555555555");
        CHECK_U64(j->n_pools, ==, 0);
        CHECK_U64(j->n_reservations, ==, 1);
        journal_free(j);
        env_fini(&e);
}

/* Start-up removes files no record owns, so the pool directory must be ours:
 * never a mount's root, never a directory with someone else's files. */
TEST(pool_dir)
{
        struct env e;
        struct pools *p = NULL;
        struct pools_stats s;
        struct stat st, root;
        char path[256], marker[256];

        env_init(&e);
        snprintf(marker, sizeof(marker), "%s/" POOLS_DIR_MARKER, e.mount);

        /* A mount's root is refused before anything is looked at (/proc: its
         * files cannot be unlinked, so a broken check harms nothing). */
        if (stat("/proc", &st) == 0 && stat("/", &root) == 0 && st.st_dev != root.st_dev) {
                struct pools_config c = e.cfg;
                c.mounts[0].dir = "/proc";
                CHECK_INT(pools_new(&c, &p), ==, -EBUSY);
                CHECK(p == NULL);
        }

        /* A pool directory too long for a pool's path (POOL_DIR_MAX) is
         * refused, not truncated into another directory's name. */
        {
                struct pools_config c = e.cfg;
                char longdir[POOL_DIR_MAX + 2];
                memset(longdir, 'd', sizeof(longdir) - 1);
                longdir[0] = '/';
                longdir[sizeof(longdir) - 1] = '\0';
                c.mounts[0].dir = longdir;
                CHECK_INT(pools_new(&c, &p), ==, -ENAMETOOLONG);
                CHECK(p == NULL);
        }

        /* An existing non-empty directory without our marker is not ours:
         * refused, and its files stay. */
        CHECK_INT(mkdir(e.mount, 0750), ==, 0);
        snprintf(path, sizeof(path), "%s/qemu_back_mem.pc.ram", e.mount);
        write_file(path, "guest");
        CHECK_INT(pools_new(&e.cfg, &p), ==, -ENOTEMPTY);
        CHECK(p == NULL);
        CHECK(access(path, F_OK) == 0);
        CHECK(access(marker, F_OK) < 0);
        CHECK_INT(unlink(path), ==, 0);

        /* An empty one is adopted: it gets the marker. */
        p = start(&e);
        CHECK_INT(stat(marker, &st), ==, 0);
        CHECK(S_ISREG(st.st_mode));
        pools_free(p);

        /* In ours, files with pool names and no record go; the marker and
         * names a pool cannot have stay. */
        snprintf(path, sizeof(path), "%s/stranger", e.mount);
        write_file(path, "x");
        char dot[256];
        snprintf(dot, sizeof(dot), "%s/.keep", e.mount);
        write_file(dot, "x");
        p = start(&e);
        CHECK(!file_exists(&e, "stranger"));
        CHECK(access(dot, F_OK) == 0);
        CHECK(access(marker, F_OK) == 0);
        pools_get_stats(p, &s);
        CHECK_U64(s.orphan_files_removed, ==, 1);
        /* pools_check_mount agrees (apart from the filesystem type). */
        CHECK_INT(pools_check_mount(e.mount, PAGE, (gid_t)-1), ==, -EMEDIUMTYPE);
        pools_free(p);

        /* The marker gone and files present: no longer ours, nothing removed. */
        CHECK_INT(unlink(marker), ==, 0);
        write_file(path, "x");
        CHECK_INT(pools_new(&e.cfg, &p), ==, -ENOTEMPTY);
        CHECK(file_exists(&e, "stranger"));
        env_fini(&e);
}

TEST(bad_config)
{
        struct env e;
        struct pools *p = NULL;

        env_init(&e);
        struct pools_config c = e.cfg;
        c.engine = NULL;
        CHECK_INT(pools_new(&c, &p), ==, -EINVAL);
        c = e.cfg;
        c.boot_id_path = "/nonexistent/boot_id";
        CHECK_INT(pools_new(&c, &p), ==, -ENOENT);
        CHECK(p == NULL);
        /* Without the escape hatch a tmpfs dir is not hugetlbfs. */
        c = e.cfg;
        c.skip_mount_check = false;
        CHECK_INT(pools_new(&c, &p), ==, -EMEDIUMTYPE);
        CHECK_INT(pools_check_mount(e.mount, PAGE, (gid_t)-1), ==, -EMEDIUMTYPE);
        char sub[256];
        snprintf(sub, sizeof(sub), "%s/not-made", e.root);
        CHECK_INT(pools_check_mount(sub, PAGE, (gid_t)-1), ==, -EMEDIUMTYPE);
        CHECK(access(sub, F_OK) < 0); /* not created on the wrong fs */
        CHECK_INT(pools_check_mount(e.boot, PAGE, (gid_t)-1), ==, -ENOTDIR);
        env_fini(&e);
}

/* ---- a bad journal never deletes a mapped file ---- */

static char *slurp(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "re");
        char *buf = malloc(1 << 16);
        size_t n;

        CHECK(f && buf);
        n = fread(buf, 1, (1 << 16) - 1, f);
        fclose(f);
        buf[n] = '\0';
        *ret_len = n;
        return buf;
}

static void put_state(const struct env *e, const char *text, size_t len)
{
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/state.json", e->state);
        FILE *f = fopen(path, "we");
        CHECK(f);
        CHECK_U64(fwrite(text, 1, len, f), ==, len);
        CHECK_INT(fclose(f), ==, 0);
}

/* Remove state.json (file or directory), the log and what --reset-state moved aside;

 * returns how many state.json.corrupt-* there were. */
static int clear_state(const struct env *e)
{
        char cmd[512];
        int n = 0;
        DIR *d = opendir(e->state);
        struct dirent *de;

        CHECK(d);
        while ((de = readdir(d)))
                if (strncmp(de->d_name, "state.json.corrupt-", 19) == 0)
                        n++;
        closedir(d);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/state.json' '%s'/state.json.corrupt-* '%s'/state.log*", e->state,
                 e->state, e->state);
        CHECK_INT(system(cmd), ==, 0);
        return n;
}

enum bad_kind { BAD_GARBAGE, BAD_TRUNCATED, BAD_OVERSIZED, BAD_FUTURE, BAD_NOT_A_FILE, _BAD_MAX };

static const char *const bad_names[_BAD_MAX] = { "garbage", "truncated", "oversized", "future version",
                                                 "not a regular file" };

static void write_bad(const struct env *e, enum bad_kind k, const char *good, size_t len)
{
        char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/state.json", e->state);
        switch (k) {
        case BAD_GARBAGE:
                put_state(e, "\x8f\x01garbage{{[\"", 12);
                break;
        case BAD_TRUNCATED:
                put_state(e, good, len / 2);
                break;
        case BAD_OVERSIZED: {
                put_state(e, good, len);
                CHECK_INT(truncate(path, 17 * 1024 * 1024), ==, 0);
                break;
        }
        case BAD_FUTURE: {
                char *copy = strdup(good);
                char *at = strstr(copy, "\"version\":2");
                CHECK(at);
                at[10] = '3';
                put_state(e, copy, len);
                free(copy);
                break;
        }
        case BAD_NOT_A_FILE:
                CHECK_INT(mkdir(path, 0700), ==, 0);
                break;
        case _BAD_MAX:
                break;
        }
}

/* A claimed pool whose file this process maps, and a stray file nobody maps.
 * For every kind of unreadable journal: no start without --reset-state, and
 * nothing touched (journal, pool file, stray); with it, the journal is moved
 * aside, the start is empty, the stray goes, the mapped file stays.  A
 * journal from another boot starts without the flag, drops its pools, and
 * still keeps the mapped file. */
TEST(bad_journal_keeps_mapped_files)
{
        struct env e;
        struct pool_view v;
        struct pools_stats s;
        char path[PATH_MAX], stray[PATH_MAX];
        size_t len;
        struct pools *p = env_start(&e);

        ready_pool(p, "vm");
        CHECK_INT(pools_claim(p, "vm", &v, NULL), ==, 0);
        pools_free(p);
        compact_on_disk(&e);    /* every row in state.json, for the edits below */
        snprintf(path, sizeof(path), "%s/state.json", e.state);
        char *good = slurp(path, &len);

        snprintf(path, sizeof(path), "%s/vm", e.mount);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        CHECK(fd >= 0);
        void *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        CHECK(m != MAP_FAILED);
        close(fd);
        snprintf(stray, sizeof(stray), "%s/stray", e.mount);

        for (int k = 0; k < _BAD_MAX; k++) {
                struct pools *q = NULL;
                size_t n;

                write_file(stray, "x");
                write_bad(&e, (enum bad_kind)k, good, len);
                bool small = k != BAD_NOT_A_FILE && k != BAD_OVERSIZED;
                snprintf(path, sizeof(path), "%s/state.json", e.state);
                char *before = small ? slurp(path, &n) : NULL;
                e.cfg.reset_state = false;
                if (pools_new(&e.cfg, &q) == 0)
                        CHECK_FAIL_("%s journal: started without --reset-state", bad_names[k]);
                CHECK(q == NULL);
                CHECK(file_exists(&e, "vm"));
                CHECK(file_exists(&e, "stray"));
                if (small) {
                        size_t n2;
                        char *after = slurp(path, &n2);
                        if (n2 != n || memcmp(before, after, n) != 0)
                                CHECK_FAIL_("%s journal: changed by a refused start", bad_names[k]);
                        free(after);
                        free(before);
                }

                e.cfg.reset_state = true;
                CHECK_INT(pools_new(&e.cfg, &q), ==, 0);
                if (!file_exists(&e, "vm"))
                        CHECK_FAIL_("%s journal, --reset-state: the mapped pool file was removed", bad_names[k]);
                if (file_exists(&e, "stray"))
                        CHECK_FAIL_("%s journal, --reset-state: the unmapped stray file was kept", bad_names[k]);
                CHECK_INT(pools_get(q, "vm", &v, NULL), ==, -ENOENT);
                pools_get_stats(q, &s);
                CHECK_U64(s.orphan_files_removed, ==, 1);
                pools_free(q);
                CHECK_INT(clear_state(&e), ==, 1);
        }

        /* Another boot: pools dropped, without any flag; mapped file kept. */
        char *other = strdup(good);
        char *at = strstr(other, "11111111-");
        CHECK(at);
        at[0] = '9';
        put_state(&e, other, len);
        write_file(stray, "x");
        e.cfg.reset_state = false;
        p = start(&e);
        CHECK_INT(pools_get(p, "vm", &v, NULL), ==, -ENOENT);
        CHECK(file_exists(&e, "vm"));
        CHECK(!file_exists(&e, "stray"));
        pools_free(p);

        /* Mapped by a process the maps scan cannot see (here: hidden from
         * its proc root, as another user's process is without
         * CAP_SYS_PTRACE): the write lease still finds it in use. */
        char self[PATH_MAX];
        snprintf(self, sizeof(self), "%s/%d", e.proc, (int)getpid());
        CHECK_INT(unlink(self), ==, 0);
        p = start(&e);
        CHECK(file_exists(&e, "vm"));
        pools_free(p);
        {
                char target[64];
                snprintf(target, sizeof(target), "/proc/%d", (int)getpid());
                if (access(self, F_OK) != 0)
                        CHECK_INT(symlink(target, self), ==, 0);
        }
        CHECK_INT(munmap(m, 2 * PAGE), ==, 0);

        /* Nobody maps it: it goes like any orphan. */
        p = start(&e);
        CHECK(!file_exists(&e, "vm"));
        pools_free(p);
        free(other);
        free(good);
        env_fini(&e);
}

/* Within one boot, a count another tool changed while we were down is
 * adopted and recorded, not overridden; after a reboot the record is
 * re-applied. */
TEST(reservations_same_boot_adopted)
{
        struct env e;
        struct reserve_result res;
        char buf[64];
        struct pools *p = env_start(&e);

        struct reserve_req rq = { .node = 1, .page_size = PAGE, .count = 10 };
        CHECK_INT(pools_reserve(p, &rq, &res, NULL), ==, 0);
        pools_free(p);
        fixture_write(e.sys, HP_DIR(1) "nr_hugepages", "7\n");
        p = start(&e);
        fixture_read(e.sys, HP_DIR(1) "nr_hugepages", buf, sizeof(buf));
        CHECK_STR(buf, "7\n");
        pools_free(p);
        check_one_reservation(&e, 7);

        p = reboot_node1(&e, "7\n");
        pools_free(p);
        env_fini(&e);
}

/* A warm cut off half way holds a hugetlbfs reservation for the pages its
 * file still lacks (kept with the inode after the job's mapping is gone):
 * at start those pages are in resv_hugepages, set aside for this file.
 * Resuming it must not count them as another's: node 0 has one free page
 * beyond that reservation, fewer than the file lacks, and it still
 * resumes and becomes ready. */
TEST(resume_counts_its_own_reservation)
{
        struct env e;
        struct pool_view v;
        struct problem err;
        struct pool_req r;
        struct stat st;
        char path[256], num[32];
        struct pools *p = env_start(&e);

        r = req("warm", 0, 6);
        create_gated(p, &r, &v, &err);
        pthread_t t = open_gate_soon();
        pools_free(p);
        pthread_join(t, NULL);
        snprintf(path, sizeof(path), "%s/warm", e.mount);
        CHECK_INT(stat(path, &st), ==, 0);
        uint64_t present = (uint64_t)st.st_blocks * 512 / PAGE;
        CHECK_U64(present, >, 0);
        CHECK_U64(present, <, 6);
        uint64_t missing = 6 - present;
        snprintf(num, sizeof(num), "%" PRIu64 "\n", missing + 1);
        fixture_write(e.sys, HP_DIR(0) "free_hugepages", num);
        snprintf(num, sizeof(num), "%" PRIu64 "\n", missing);
        fixture_write(e.sys, RESV_2M, num);

        p = start(&e);
        wait_state(p, "warm", POOL_READY);
        pools_free(p);
        env_fini(&e);
}

TEST_MAIN()
