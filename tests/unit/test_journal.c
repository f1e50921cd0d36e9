/* Unit tests for journal.c: format/parse round trip, strict rejection of
 * corrupt documents, atomic save/load in a temp dir (stale temp file,
 * truncation, missing file), quarantine, and the name and state helpers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "journal.h"

static struct journal_reservation sample_res[] = {
        { .node = 0, .page_size = 2097152, .count = 64 },
        { .node = 2, .page_size = 1073741824, .count = 1 },
};

static struct journal_pool sample_pools[] = {
        {
                .name = "vm-1.mem_0",
                .node = 0,
                .page_size = 2097152,
                .size_bytes = 64 * 2097152ULL,
                .state = POOL_READY,
                .threads = 2,
                .ttl_seconds = 600,
                .claimed = true,
                .created_at = 1700000000,
                .started_at = 1700000001,
                .finished_at = 1700000003,
                .bytes_done = 64 * 2097152ULL,
                .owner_pid = 4321,
                .owner_start = 987654321,
        },
        {
                .name = "B",
                .node = 2,
                .page_size = 1073741824,
                .size_bytes = 1073741824ULL * 3,
                .state = POOL_FAILED,
                .created_at = -1,
                .started_at = 0,
                .error_slug = "insufficient-hugepages",
                .error_detail = "node 2 ran out \"quoted\"\n",
        },
};

static void sample(struct journal *j)
{
        memset(j, 0, sizeof(*j));
        strcpy(j->boot_id, "3f1b2c4d-0000-4000-8000-123456789abc");
        j->reservations = sample_res;
        j->n_reservations = 2;
        j->pools = sample_pools;
        j->n_pools = 2;
}

static void check_equal(const struct journal *a, const struct journal *b)
{
        CHECK_STR(a->boot_id, b->boot_id);
        CHECK_U64(a->n_reservations, ==, b->n_reservations);
        CHECK_U64(a->n_pools, ==, b->n_pools);
        for (size_t i = 0; i < a->n_reservations; i++) {
                CHECK_INT(a->reservations[i].node, ==, b->reservations[i].node);
                CHECK_U64(a->reservations[i].page_size, ==, b->reservations[i].page_size);
                CHECK_U64(a->reservations[i].count, ==, b->reservations[i].count);
        }
        for (size_t i = 0; i < a->n_pools; i++) {
                const struct journal_pool *x = &a->pools[i], *y = &b->pools[i];
                CHECK_STR(x->name, y->name);
                CHECK_INT(x->node, ==, y->node);
                CHECK_U64(x->page_size, ==, y->page_size);
                CHECK_U64(x->size_bytes, ==, y->size_bytes);
                CHECK_INT(x->state, ==, y->state);
                CHECK_INT(x->threads, ==, y->threads);
                CHECK_U64(x->ttl_seconds, ==, y->ttl_seconds);
                CHECK_INT(x->claimed, ==, y->claimed);
                CHECK_INT(x->created_at, ==, y->created_at);
                CHECK_INT(x->started_at, ==, y->started_at);
                CHECK_INT(x->finished_at, ==, y->finished_at);
                CHECK_U64(x->bytes_done, ==, y->bytes_done);
                CHECK_STR(x->error_slug, y->error_slug);
                CHECK_STR(x->error_detail, y->error_detail);
                CHECK_INT(x->owner_pid, ==, y->owner_pid);
                CHECK_U64(x->owner_start, ==, y->owner_start);
        }
}

TEST(round_trip)
{
        struct journal j, *back = NULL;
        char *text;

        sample(&j);
        text = journal_format(&j);
        CHECK(text);
        CHECK_INT(journal_parse(text, strlen(text), &back), ==, 0);
        check_equal(&j, back);
        journal_free(back);
        free(text);

        /* Empty journal. */
        memset(&j, 0, sizeof(j));
        text = journal_format(&j);
        CHECK_STR(text, "{\"version\":1,\"boot_id\":\"\",\"reservations\":[],\"pools\":[]}");
        CHECK_INT(journal_parse(text, strlen(text), &back), ==, 0);
        CHECK_U64(back->n_pools, ==, 0);
        CHECK(back->pools == NULL);
        journal_free(back);
        free(text);
        journal_free(NULL);
}

/* Replace the first occurrence of FROM in the formatted sample by TO and
 * expect the parse to fail. */
static void corrupt(const char *from, const char *to)
{
        struct journal j, *back = (struct journal *)&j;
        char *text, *at, buf[8192];

        sample(&j);
        text = journal_format(&j);
        at = strstr(text, from);
        if (!at)
                CHECK_FAIL_("\"%s\" not in %s", from, text);
        snprintf(buf, sizeof(buf), "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
        if (journal_parse(buf, strlen(buf), &back) != -EINVAL)
                CHECK_FAIL_("accepted: %s", buf);
        CHECK(back == (struct journal *)&j);
        free(text);
}

/* Pools without an owner are written without the owner members, as
 * before they existed, and journals without them load with no owner. */
TEST(owner_optional)
{
        struct journal j, *back = NULL;
        char *text;

        sample(&j);
        text = journal_format(&j);
        CHECK(strstr(text, "\"owner_pid\":4321,\"owner_start_time\":987654321"));
        /* Only the first pool has an owner. */
        CHECK(!strstr(strstr(text, "\"name\":\"B\""), "owner"));
        CHECK_INT(journal_parse(text, strlen(text), &back), ==, 0);
        CHECK_INT(back->pools[1].owner_pid, ==, 0);
        CHECK_U64(back->pools[1].owner_start, ==, 0);
        journal_free(back);
        free(text);
}

TEST(corrupt)
{
        corrupt("\"version\":1", "\"version\":0");
        corrupt("\"version\":1", "\"version\":\"1\"");
        corrupt("\"version\":1,", "");
        corrupt("\"boot_id\":\"", "\"boot_id\":1,\"x\":\"");
        corrupt("\"boot_id\":\"3f", "\"boot_id\":\"0123456789012345678901234567890123456789");
        corrupt("\"reservations\":[", "\"reservations\":{},\"x\":[");
        corrupt("\"count\":64", "\"count\":-64");
        corrupt("\"count\":64", "\"count\":64.5");
        corrupt("\"page_size_bytes\":2097152,\"count\"", "\"page_size_bytes\":3,\"count\"");
        corrupt("\"node\":2,\"page_size_bytes\":1073741824,\"count\":1",
                "\"node\":0,\"page_size_bytes\":2097152,\"count\":1");
        corrupt("\"node\":0", "\"node\":2147483648");
        corrupt("\"name\":\"B\"", "\"name\":\"vm-1.mem_0\"");
        corrupt("\"name\":\"B\"", "\"name\":\".hidden\"");
        corrupt("\"name\":\"B\"", "\"name\":\"a/b\"");
        corrupt("\"name\":\"B\"", "\"name\":\"\"");
        corrupt("\"state\":\"ready\"", "\"state\":\"READY\"");
        corrupt("\"state\":\"ready\"", "\"state\":\"gone\"");
        corrupt("\"claimed\":true", "\"claimed\":1");
        corrupt("\"claimed\":true,", "");
        corrupt("\"size_bytes\":134217728", "\"size_bytes\":134217729");
        corrupt("\"size_bytes\":134217728", "\"size_bytes\":0");
        corrupt("\"threads\":2", "\"threads\":4294967296");
        corrupt("\"created_at\":-1", "\"created_at\":-1.5");
        corrupt("\"error_slug\":\"\"", "\"error_slug\":null");
        corrupt("\"error_detail\":\"\"", "\"error_detail\":\"\",\"error_detail\":\"\"");
        corrupt("}]}", "}]} x");
        corrupt("}]}", "}]");
        corrupt("{\"version\"", "[{\"version\"");
        /* The owner: both members or none, a positive pid, a claimed pool. */
        corrupt("\"owner_pid\":4321,", "");
        corrupt(",\"owner_start_time\":987654321", "");
        corrupt("\"owner_pid\":4321", "\"owner_pid\":0");
        corrupt("\"owner_pid\":4321", "\"owner_pid\":-4321");
        corrupt("\"owner_pid\":4321", "\"owner_pid\":\"4321\"");
        corrupt("\"owner_pid\":4321", "\"owner_pid\":2147483648");
        corrupt("\"owner_start_time\":987654321", "\"owner_start_time\":-1");
        corrupt("\"claimed\":true", "\"claimed\":false");

        struct journal *back = NULL;
        CHECK_INT(journal_parse("", 0, &back), ==, -EINVAL);
        CHECK_INT(journal_parse("[]", 2, &back), ==, -EINVAL);
        CHECK(back == NULL);
}

/* ---- files ---- */

static char dir[] = "/tmp/test_journal.XXXXXX";

static void write_file(const char *name, const char *text)
{
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "w");
        CHECK(f);
        fputs(text, f);
        CHECK_INT(fclose(f), ==, 0);
}

static bool exists(const char *name)
{
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        return access(path, F_OK) == 0;
}

static size_t count_entries(const char *prefix)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        size_t n = 0;

        CHECK(d);
        while ((e = readdir(d)))
                if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
                        n++;
        closedir(d);
        return n;
}

/* Remove what the directory holds (files, and the one directory a test
 * puts in state.json's place). */
static void empty_dir(void)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        char path[512];

        if (!d)
                return;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.') {
                        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                        if (unlink(path) < 0)
                                rmdir(path);
                }
        closedir(d);
}

static void cleanup_dir(void)
{
        empty_dir();
        rmdir(dir);
}

/* The state directory, empty: made by the first test that asks, emptied for
 * each later one, removed at exit. */
static void fresh_dir(void)
{
        static bool made;

        if (!made) {
                CHECK(mkdtemp(dir));
                atexit(cleanup_dir);
                made = true;
        }
        empty_dir();
}

/* First start: nothing there. */
TEST(load_missing_is_enoent)
{
        struct journal *back = NULL;

        fresh_dir();
        CHECK_INT(journal_load(dir, &back), ==, -ENOENT);
        CHECK_INT(journal_load("/nonexistent/dir", &back), ==, -ENOENT);
        CHECK(back == NULL);
}

TEST(save_then_load)
{
        struct journal j, *back = NULL;

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save(dir, &j), ==, 0);
        CHECK(exists("state.json"));
        CHECK(!exists("state.json.tmp"));
        CHECK_INT(journal_load(dir, &back), ==, 0);
        check_equal(&j, back);
        journal_free(back);
}

/* A stale temp file from a crash is removed; state.json wins. */
TEST(stale_temp_file_removed)
{
        struct journal j, *back = NULL;

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save(dir, &j), ==, 0);
        write_file("state.json.tmp", "{\"version\":1,\"trunc");
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK(!exists("state.json.tmp"));
        check_equal(&j, back);
        journal_free(back);
}

/* Save replaces atomically. */
TEST(save_replaces)
{
        struct journal j, *back = NULL;

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save(dir, &j), ==, 0);
        j.n_pools = 1;
        CHECK_INT(journal_save(dir, &j), ==, 0);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_pools, ==, 1);
        journal_free(back);
}

/* Truncated file -> -EINVAL; quarantine moves it aside; twice within a
 * second keeps both. */
TEST(corrupt_file_quarantined)
{
        struct journal j, *back = NULL;
        char *text;

        fresh_dir();
        sample(&j);
        text = journal_format(&j);
        text[strlen(text) / 2] = '\0';
        write_file("state.json", text);
        free(text);
        CHECK_INT(journal_load(dir, &back), ==, -EINVAL);
        CHECK_INT(journal_quarantine(dir), ==, 0);
        CHECK(!exists("state.json"));
        CHECK_U64(count_entries("state.json.corrupt-"), ==, 1);
        CHECK_INT(journal_load(dir, &back), ==, -ENOENT);
        write_file("state.json", "garbage");
        CHECK_INT(journal_load(dir, &back), ==, -EINVAL);
        CHECK_INT(journal_quarantine(dir), ==, 0);
        CHECK_U64(count_entries("state.json.corrupt-"), ==, 2);
        CHECK_INT(journal_quarantine(dir), ==, -ENOENT);
}

/* Empty file, a directory in its place. */
TEST(empty_file_einval_directory_eisdir)
{
        struct journal *back = NULL;
        char path[256];

        fresh_dir();
        write_file("state.json", "");
        CHECK_INT(journal_load(dir, &back), ==, -EINVAL);
        CHECK_INT(journal_quarantine(dir), ==, 0);
        snprintf(path, sizeof(path), "%s/state.json", dir);
        CHECK_INT(mkdir(path, 0700), ==, 0);
        CHECK_INT(journal_load(dir, &back), ==, -EISDIR);
        CHECK_INT(rmdir(path), ==, 0);
}

/* A journal from a newer daemon is refused as such, not as corrupt: the
 * caller must not treat it as garbage it may discard. */
TEST(future_version_is_eprotonosupport)
{
        struct journal j, *back = NULL;
        char *text, *at;

        sample(&j);
        text = journal_format(&j);
        at = strstr(text, "\"version\":1");
        CHECK(at);
        at[10] = '7';
        CHECK_INT(journal_parse(text, strlen(text), &back), ==, -EPROTONOSUPPORT);
        CHECK(back == NULL);
        CHECK(strstr(journal_load_error(-EPROTONOSUPPORT), "newer hpwarmd"));
        free(text);
}

/* Over the size limit: -EFBIG, whatever it holds. */
TEST(oversized_is_efbig)
{
        struct journal *back = NULL;
        char path[256];

        fresh_dir();
        snprintf(path, sizeof(path), "%s/state.json", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        CHECK(fd >= 0);
        CHECK_INT(ftruncate(fd, 16 * 1024 * 1024 + 1), ==, 0);
        close(fd);
        CHECK_INT(journal_load(dir, &back), ==, -EFBIG);
        CHECK(strstr(journal_load_error(-EFBIG), "16 MiB"));
}

/* The save fault seam: each injected errno comes back, the old journal
 * stays whole and no temporary file is left. */
TEST(injected_save_errors)
{
        static const int errs[] = { ENOSPC, EIO, EROFS };
        struct journal j, empty = {0}, *back = NULL;

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save(dir, &j), ==, 0);
        for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
                journal_inject_save_error(errs[i]);
                CHECK_INT(journal_save(dir, &empty), ==, -errs[i]);
                CHECK(!exists("state.json.tmp"));
        }
        journal_inject_save_error(0);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_pools, ==, j.n_pools);
        journal_free(back);
}

/* Save refuses a journal it could not read back, and writes nothing. */
TEST(save_refuses_unreadable_journal)
{
        struct journal j;

        fresh_dir();
        sample(&j);
        struct journal_pool bad = sample_pools[0];
        strcpy(bad.name, "bad name");
        j.pools = &bad;
        j.n_pools = 1;
        CHECK_INT(journal_save(dir, &j), ==, -EINVAL);
        CHECK(!exists("state.json"));
        CHECK(!exists("state.json.tmp"));
}

/* journal_save_sync: the directory fsync is skipped only while the
 * reservations and stock targets are those the last full save made durable
 * (a reboot drops pool rows, so only those need the rename to outlive it). */
TEST(save_sync_first_save_is_full)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 1);
        CHECK_U64(s.light_saves, ==, 0);
        CHECK(s.durable != NULL);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        check_equal(&j, back);
        journal_free(back);
        journal_sync_reset(&s);
        CHECK(s.durable == NULL);
}

/* Only pool rows changed: light, and the file holds the change all the
 * same (a daemon crash, which keeps the page cache, loses nothing). */
TEST(save_sync_pool_rows_only_skip_dir_fsync)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        j.n_pools = 1;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        j.n_pools = 0;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 1);
        CHECK_U64(s.light_saves, ==, 2);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_pools, ==, 0);
        CHECK_U64(back->n_reservations, ==, 2);
        CHECK(!exists("state.json.tmp"));
        journal_free(back);
        journal_sync_reset(&s);
}

/* A reservation or a stock target changed: what outlives a reboot changed,
 * so the rename must too. */
TEST(save_sync_durable_change_is_full)
{
        struct journal j;
        struct journal_sync s = {0};
        struct journal_reservation res[2];
        struct journal_stock_target t = {.node = 0, .page_size = 2u << 20, .size_bytes = 4u << 20, .count = 1};

        fresh_dir();
        sample(&j);
        memcpy(res, sample_res, sizeof(res));
        j.reservations = res;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        res[1].count++;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 2);
        j.stock_targets = &t;
        j.n_stock_targets = 1;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 3);
        t.count = 2;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 4);
        j.n_reservations = 1;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 5);
        CHECK_U64(s.light_saves, ==, 0);
        /* The same again: light. */
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.light_saves, ==, 1);
        journal_sync_reset(&s);
}

/* A failed save makes nothing durable and forgets nothing that was: the
 * old file stays, and what the last full save made durable still is. */
TEST(save_sync_failed_save_changes_nothing)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        j.n_reservations = 1;
        journal_inject_save_error(EIO);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, -EIO);
        journal_inject_save_error(0);
        CHECK_U64(s.full_saves, ==, 1);
        CHECK_U64(s.light_saves, ==, 0);
        CHECK(!exists("state.json.tmp"));
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_reservations, ==, 2);
        journal_free(back);
        /* The change, retried, is a full save. */
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 2);
        journal_sync_reset(&s);
}

/* Forgetting (a new daemon, or after a directory fsync that failed) makes
 * the next save full again. */
TEST(save_sync_reset_makes_next_full)
{
        struct journal j;
        struct journal_sync s = {0};

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        journal_sync_reset(&s);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 2);
        CHECK_U64(s.light_saves, ==, 0);
        journal_sync_reset(&s);
        journal_sync_reset(NULL);
}

TEST(save_to_missing_directory_fails)
{
        struct journal j;

        sample(&j);
        CHECK_INT(journal_save("/nonexistent/dir", &j), <, 0);
}

TEST(helpers)
{
        enum pool_state s;
        char longest[JOURNAL_NAME_MAX + 2];

        CHECK(pool_name_valid("a"));
        CHECK(pool_name_valid("vm-1.mem_0"));
        CHECK(pool_name_valid("9"));
        CHECK(!pool_name_valid(""));
        CHECK(!pool_name_valid(NULL));
        CHECK(!pool_name_valid("-a"));
        CHECK(!pool_name_valid(".."));
        CHECK(!pool_name_valid("a/b"));
        CHECK(!pool_name_valid("a b"));
        CHECK(!pool_name_valid("caf\xc3\xa9"));
        memset(longest, 'a', JOURNAL_NAME_MAX);
        longest[JOURNAL_NAME_MAX] = '\0';
        CHECK(pool_name_valid(longest));
        longest[JOURNAL_NAME_MAX] = 'a';
        longest[JOURNAL_NAME_MAX + 1] = '\0';
        CHECK(!pool_name_valid(longest));

        for (enum pool_state t = POOL_WARMING; t <= POOL_CANCELLED; t++) {
                CHECK_INT(pool_state_parse(pool_state_name(t), &s), ==, 0);
                CHECK_INT(s, ==, t);
        }
        CHECK_STR(pool_state_name(POOL_WARMING), "warming");
        CHECK_STR(pool_state_name(POOL_CANCELLED), "cancelled");
        CHECK(pool_state_name((enum pool_state)42) == NULL);
        s = POOL_READY;
        CHECK_INT(pool_state_parse("Warming", &s), ==, -EINVAL);
        CHECK_INT(pool_state_parse(NULL, &s), ==, -EINVAL);
        CHECK_INT(s, ==, POOL_READY);
}

TEST_MAIN()
