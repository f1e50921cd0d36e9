/* Unit tests for journal/ (and the records it writes, record.c): format/parse round trip, strict rejection of
 * corrupt documents, atomic save/load in a temp dir (stale temp file,
 * truncation, missing file), quarantine, the log (appends, compaction, torn
 * tails, bit flips, stale and future logs, the version 1 migration), and the
 * name and state helpers. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "journal.h"
#include "util.h"

static struct reservation_record sample_res[] = {
        { .node = 0, .page_size = 2097152, .count = 64 },
        { .node = 2, .page_size = 1073741824, .count = 1 },
};

static struct pool_record sample_pools[] = {
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
                const struct pool_record *x = &a->pools[i], *y = &b->pools[i];
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
        CHECK_STR(text, "{\"version\":2,\"boot_id\":\"\",\"reservations\":[],\"pools\":[]}");
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
        corrupt("\"version\":2", "\"version\":0");
        corrupt("\"version\":2", "\"version\":\"2\"");
        corrupt("\"version\":2,", "");
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

static char dir[64] = "/tmp/test_journal.XXXXXX";

static void write_file(const char *name, const char *text)
{
        fixture_write(dir, name, text);
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
        at = strstr(text, "\"version\":2");
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
        struct pool_record bad = sample_pools[0];
        strcpy(bad.name, "bad name");
        j.pools = &bad;
        j.n_pools = 1;
        CHECK_INT(journal_save(dir, &j), ==, -EINVAL);
        CHECK(!exists("state.json"));
        CHECK(!exists("state.json.tmp"));
}

/* ---- the log ---- */

static char *read_text(const char *name, size_t *ret_len)
{
        char path[256];
        FILE *f;
        char *buf;
        long n;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "r");
        CHECK(f);
        CHECK_INT(fseek(f, 0, SEEK_END), ==, 0);
        n = ftell(f);
        rewind(f);
        buf = calloc(1, (size_t)n + 1);
        CHECK(buf);
        CHECK_U64(fread(buf, 1, (size_t)n, f), ==, (uint64_t)n);
        fclose(f);
        if (ret_len)
                *ret_len = (size_t)n;
        return buf;
}

static void write_raw(const char *name, const char *buf, size_t len)
{
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "w");
        CHECK(f);
        CHECK_U64(fwrite(buf, 1, len, f), ==, len);
        CHECK_INT(fclose(f), ==, 0);
}

static size_t count_lines(const char *name)
{
        _cleanup_free_ char *t = read_text(name, NULL);
        size_t n = 0;

        for (const char *c = t; *c; c++)
                n += *c == '\n';
        return n;
}

static ino_t inode_of(const char *name)
{
        char path[256];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        CHECK_INT(stat(path, &st), ==, 0);
        return st.st_ino;
}

/* A journal of N generated ready pools "p<i>" in ROWS. */
static void many(struct journal *j, struct pool_record *rows, size_t n)
{
        sample(j);
        for (size_t i = 0; i < n; i++) {
                rows[i] = sample_pools[0];
                snprintf(rows[i].name, sizeof(rows[i].name), "p%zu", i);
        }
        j->pools = rows;
        j->n_pools = n;
}

TEST(crc32c_check_value)
{
        /* The catalogued check value of CRC-32C ("123456789"). */
        CHECK_U64(journal_crc32c("123456789", 9), ==, 0xE3069283u);
        CHECK_U64(journal_crc32c("", 0), ==, 0);
}

/* The first save of a process compacts: a snapshot with an id, and a log
 * holding only the header that names it. */
TEST(first_save_compacts)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 1);
        CHECK_U64(s.light_saves, ==, 0);
        CHECK(s.base != NULL);
        CHECK(exists("state.log"));
        CHECK(!exists("state.log.tmp"));
        CHECK_U64(count_lines("state.log"), ==, 1);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        check_equal(&j, back);
        CHECK_U64(strlen(back->snapshot_id), ==, JOURNAL_SNAPSHOT_ID_LEN);
        CHECK_STR(back->snapshot_id, s.base->snapshot_id);
        CHECK_U64(back->log_records, ==, 0);
        journal_free(back);
        journal_sync_reset(&s);
        CHECK(s.base == NULL);
}

/* A change appends one record; the snapshot file is not rewritten; what
 * is loaded is the snapshot with the record replayed. */
TEST(change_appends_one_record)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};
        struct pool_record rows[2];
        ino_t snap;

        fresh_dir();
        sample(&j);
        memcpy(rows, sample_pools, sizeof(rows));
        j.pools = rows;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        snap = inode_of("state.json");
        rows[0].claimed = false;
        rows[0].owner_pid = 0;
        rows[0].owner_start = 0;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        j.n_pools = 1;  /* "B" removed */
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 1);
        CHECK_U64(s.light_saves, ==, 2);
        CHECK_U64(inode_of("state.json"), ==, (uint64_t)snap);
        CHECK_U64(count_lines("state.log"), ==, 3);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->log_records, ==, 2);
        CHECK(!back->log_torn);
        check_equal(&j, back);
        journal_free(back);
        journal_sync_reset(&s);
}

/* A save that changes nothing writes nothing. */
TEST(unchanged_save_writes_nothing)
{
        struct journal j;
        struct journal_sync s = {0};
        size_t before, after;

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        free(read_text("state.log", &before));
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        free(read_text("state.log", &after));
        CHECK_U64(after, ==, before);
        CHECK_U64(s.light_saves, ==, 1);
        journal_sync_reset(&s);
}

/* Reservations and stock targets go into the log whole when they change,
 * including to none. */
TEST(reservations_and_targets_logged)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};
        struct reservation_record res[2];
        struct stock_target_record t = {.node = 0, .page_size = 2u << 20, .size_bytes = 4u << 20, .count = 1};

        fresh_dir();
        sample(&j);
        memcpy(res, sample_res, sizeof(res));
        j.reservations = res;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        res[1].count = 9;
        j.stock_targets = &t;
        j.n_stock_targets = 1;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->reservations[1].count, ==, 9);
        CHECK_U64(back->n_stock_targets, ==, 1);
        CHECK_U64(back->stock_targets[0].size_bytes, ==, 4u << 20);
        journal_free(back);
        j.n_stock_targets = 0;
        j.n_reservations = 0;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 1);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_stock_targets, ==, 0);
        CHECK_U64(back->n_reservations, ==, 0);
        journal_free(back);
        journal_sync_reset(&s);
}

/* Elastic policies go into the log whole when they change, including to
 * none, and come back from it (the snapshot is written only at the first
 * save, before any policy). */
TEST(elastic_policies_logged)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};
        struct elastic_policy_record e = {.node = 0, .page_size = 2u << 20, .min = 2, .max = 12,
                                           .headroom = 4, .idle_seconds = 30};

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        j.elastic = &e;
        j.n_elastic = 1;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_elastic, ==, 1);
        CHECK_U64(back->elastic[0].max, ==, 12);
        CHECK_U64(back->elastic[0].idle_seconds, ==, 30);
        journal_free(back);
        e.max = 20;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->elastic[0].max, ==, 20);
        journal_free(back);
        j.n_elastic = 0;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 1);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_elastic, ==, 0);
        journal_free(back);
        journal_sync_reset(&s);
}

/* A row whose only change is its label or file owner is logged and comes
 * back with it. */
TEST(label_and_file_owner_logged)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        struct pool_record saved = j.pools[0];
        snprintf(j.pools[0].label, sizeof(j.pools[0].label), "%s", "libvirt:1234");
        j.pools[0].file_owned = true;
        j.pools[0].file_uid = 64055;
        j.pools[0].file_gid = 108;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        const struct pool_record *got = NULL;
        for (size_t i = 0; i < back->n_pools; i++)
                if (strcmp(back->pools[i].name, saved.name) == 0)
                        got = &back->pools[i];
        CHECK(got != NULL);
        CHECK_STR(got->label, "libvirt:1234");
        CHECK(got->file_owned);
        CHECK_INT(got->file_uid, ==, 64055);
        CHECK_INT(got->file_gid, ==, 108);
        journal_free(back);
        j.pools[0] = saved;
        journal_sync_reset(&s);
}

/* A row removed and added again under the same name replays as the new row. */
TEST(drop_then_put_same_name)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};
        struct pool_record rows[2];

        fresh_dir();
        sample(&j);
        memcpy(rows, sample_pools, sizeof(rows));
        j.pools = rows;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        j.n_pools = 1;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        j.n_pools = 2;
        rows[1].node = 0;
        rows[1].page_size = 2097152;
        rows[1].size_bytes = 2097152;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->log_records, ==, 2);
        check_equal(&j, back);
        journal_free(back);
        journal_sync_reset(&s);
}

/* The log is folded into a new snapshot once it is as large as the
 * snapshot (or the floor): many changes, a few compactions, nothing lost. */
TEST(log_compacts_at_bound)
{
        enum { N = 600, ROUNDS = 1200 };
        static struct pool_record rows[N];
        struct journal j, *back = NULL;
        struct journal_sync s = {0};
        size_t log_len;

        fresh_dir();
        many(&j, rows, N);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        for (unsigned i = 0; i < ROUNDS; i++) {
                rows[i % N].bytes_done = i;
                CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        }
        CHECK_U64(s.full_saves, >, 1);
        CHECK_U64(s.full_saves + s.light_saves, ==, ROUNDS + 1);
        free(read_text("state.log", &log_len));
        CHECK_U64(log_len, <=, s.snapshot_bytes > 256 * 1024 ? s.snapshot_bytes : 256 * 1024);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        check_equal(&j, back);
        journal_free(back);
        journal_sync_reset(&s);
}

/* Two saved changes after the snapshot; the helper returns the log. */
static char *two_changes(struct journal *j, struct pool_record *rows, size_t *ret_len)
{
        struct journal_sync s = {0};

        fresh_dir();
        sample(j);
        memcpy(rows, sample_pools, 2 * sizeof(*rows));
        j->pools = rows;
        CHECK_INT(journal_save_sync(dir, j, &s), ==, 0);
        rows[0].bytes_done = 1;
        CHECK_INT(journal_save_sync(dir, j, &s), ==, 0);
        rows[0].bytes_done = 2;
        CHECK_INT(journal_save_sync(dir, j, &s), ==, 0);
        journal_sync_reset(&s);
        return read_text("state.log", ret_len);
}

/* A last record cut anywhere (a crash during an append that was never
 * acknowledged) is ignored: the state before it loads. */
TEST(torn_tail_ignored)
{
        struct journal j, *back = NULL;
        struct pool_record rows[2];
        size_t len;
        char *log = two_changes(&j, rows, &len);
        const char *last = log + len - 2;

        while (last > log && last[-1] != '\n')
                last--;
        for (size_t cut = (size_t)(last - log) + 1; cut < len; cut++) {
                write_raw("state.log", log, cut);
                CHECK_INT(journal_load(dir, &back), ==, 0);
                CHECK(back->log_torn);
                CHECK_U64(back->log_records, ==, 1);
                CHECK_U64(back->pools[0].bytes_done, ==, 1);
                journal_free(back);
        }
        free(log);
}

/* A bit flipped in the last record reads as a torn append (SQLite's WAL
 * stops at the first bad frame the same way); in any earlier line it is
 * damage: refused, not guessed around. */
TEST(bit_flip_in_log)
{
        struct journal j, *back = NULL;
        struct pool_record rows[2];
        size_t len;
        char *log = two_changes(&j, rows, &len);
        const char *last = log + len - 2;

        while (last > log && last[-1] != '\n')
                last--;
        for (size_t at = 0; at < len - 1; at += 7) {
                char *copy = malloc(len);
                CHECK(copy);
                memcpy(copy, log, len);
                copy[at] ^= 0x04;
                write_raw("state.log", copy, len);
                int r = journal_load(dir, &back);
                if (at >= (size_t)(last - log)) {
                        CHECK_INT(r, ==, 0);
                        CHECK(back->log_torn);
                        CHECK_U64(back->pools[0].bytes_done, ==, 1);
                        journal_free(back);
                } else if (r != -EINVAL) {
                        CHECK_FAIL_("flip at %zu of %zu: %d, not -EINVAL", at, len, r);
                }
                free(copy);
        }
        free(log);
}

/* A record whose CRC is right but which removes a row that is not there is
 * not ours: -EINVAL. */
TEST(record_for_missing_row_is_einval)
{
        struct journal j, *back = NULL;
        struct pool_record rows[2];
        size_t len;
        char *log = two_changes(&j, rows, &len), line[256];
        const char *rec = "{\"put\":[],\"drop\":[{\"name\":\"nope\"}]}";

        snprintf(line, sizeof(line), "%08x %s\n", journal_crc32c(rec, strlen(rec)), rec);
        log = realloc(log, len + strlen(line) + 1);
        strcpy(log + len, line);
        write_raw("state.log", log, strlen(log));
        CHECK_INT(journal_load(dir, &back), ==, -EINVAL);
        free(log);
}

/* A log whose header names another snapshot (a compaction cut between its
 * two renames) is stale: the snapshot alone is the state. */
TEST(stale_log_ignored)
{
        struct journal j, *back = NULL;
        struct pool_record rows[2];
        size_t len;
        char *log = two_changes(&j, rows, &len);
        char *snap = read_text("state.json", NULL), *at = strstr(snap, "\"snapshot\":\"");

        CHECK(at);
        at += strlen("\"snapshot\":\"");
        at[0] = at[0] == '0' ? '1' : '0';
        write_file("state.json", snap);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK(back->log_stale);
        CHECK_U64(back->log_records, ==, 0);
        CHECK_U64(back->pools[0].bytes_done, ==, sample_pools[0].bytes_done);
        journal_free(back);
        free(snap);
        free(log);
}

/* A log from a newer daemon is refused as such. */
TEST(future_log_is_eprotonosupport)
{
        struct journal j, *back = NULL;
        struct pool_record rows[2];
        size_t len;
        char *log = two_changes(&j, rows, &len), *nl = strchr(log, '\n'), *snap = read_text("state.json", NULL);
        char *id = strstr(snap, "\"snapshot\":\"") + strlen("\"snapshot\":\""), hdr[128], line[160];

        snprintf(hdr, sizeof(hdr), "{\"version\":3,\"snapshot\":\"%.16s\"}", id);
        snprintf(line, sizeof(line), "%08x %s", journal_crc32c(hdr, strlen(hdr)), hdr);
        char *out = malloc(strlen(line) + strlen(nl) + 1);
        strcpy(out, line);
        strcat(out, nl);
        write_raw("state.log", out, strlen(out));
        CHECK_INT(journal_load(dir, &back), ==, -EPROTONOSUPPORT);
        free(out);
        free(snap);
        free(log);
}

/* Today's format read once: a version 1 state.json loads as it is, and the
 * first save turns it into a version 2 snapshot with its log. */
TEST(version_1_migrates_on_first_save)
{
        struct journal *back = NULL;
        struct journal_sync s = {0};
        const char *v1 = "{\"version\":1,\"boot_id\":\"b\",\"reservations\":"
                         "[{\"node\":0,\"page_size_bytes\":2097152,\"count\":4}],\"pools\":["
                         "{\"name\":\"vm\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,"
                         "\"state\":\"ready\",\"threads\":0,\"ttl_seconds\":0,\"claimed\":false,"
                         "\"created_at\":1,\"started_at\":1,\"finished_at\":2,\"bytes_done\":2097152,"
                         "\"error_slug\":\"\",\"error_detail\":\"\"}]}\n";
        char *text;

        fresh_dir();
        write_file("state.json", v1);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_STR(back->snapshot_id, "");
        CHECK_U64(back->n_pools, ==, 1);
        CHECK_U64(back->n_reservations, ==, 1);
        CHECK_INT(journal_save_sync(dir, back, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 1);
        journal_free(back);
        text = read_text("state.json", NULL);
        CHECK(strstr(text, "\"version\":2"));
        CHECK(strstr(text, "\"snapshot\":\""));
        free(text);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_STR(back->pools[0].name, "vm");
        CHECK_STR(back->snapshot_id, s.base->snapshot_id);
        journal_free(back);
        journal_sync_reset(&s);
}

/* A version 1 snapshot next to a log (an older daemon rewrote the snapshot
 * after this one had logged): the log extends no snapshot of that file and
 * is ignored. */
TEST(version_1_snapshot_ignores_log)
{
        struct journal j, *back = NULL;
        struct pool_record rows[2];
        size_t len;
        char *log = two_changes(&j, rows, &len);

        write_file("state.json", "{\"version\":1,\"boot_id\":\"b\",\"reservations\":[],\"pools\":[]}");
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK(back->log_stale);
        CHECK_U64(back->n_pools, ==, 0);
        journal_free(back);
        free(log);
}

/* A failed append changes nothing on disk and the next save compacts. */
TEST(failed_append_changes_nothing)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};
        size_t before, after;

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        free(read_text("state.log", &before));
        j.n_pools = 1;
        journal_inject_save_error(EIO);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, -EIO);
        journal_inject_save_error(0);
        CHECK(s.base == NULL);
        free(read_text("state.log", &after));
        CHECK_U64(after, ==, before);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_pools, ==, 2);
        journal_free(back);
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 2);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK_U64(back->n_pools, ==, 1);
        journal_free(back);
        journal_sync_reset(&s);
}

/* A record this daemon could not replay is refused before it is written. */
TEST(append_refuses_unreadable_record)
{
        struct journal j;
        struct journal_sync s = {0};
        struct pool_record rows[2];
        size_t before, after;

        fresh_dir();
        sample(&j);
        memcpy(rows, sample_pools, sizeof(rows));
        j.pools = rows;
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
        free(read_text("state.log", &before));
        strcpy(rows[1].name, "bad name");
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, -EINVAL);
        strcpy(rows[1].name, "vm-1.mem_0");      /* a duplicate name */
        CHECK_INT(journal_save_sync(dir, &j, &s), ==, -EINVAL);
        free(read_text("state.log", &after));
        CHECK_U64(after, ==, before);
        journal_sync_reset(&s);
}

/* Quarantine takes the log with the snapshot, under the same suffix. */
TEST(quarantine_moves_log_too)
{
        struct journal j;

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save(dir, &j), ==, 0);
        CHECK(exists("state.log"));
        CHECK_INT(journal_quarantine(dir), ==, 0);
        CHECK(!exists("state.json"));
        CHECK(!exists("state.log"));
        CHECK_U64(count_entries("state.json.corrupt-"), ==, 1);
        CHECK_U64(count_entries("state.log.corrupt-"), ==, 1);
}

/* A stale log temp file (a crash during a compaction) is removed. */
TEST(stale_log_temp_removed)
{
        struct journal j, *back = NULL;

        fresh_dir();
        sample(&j);
        CHECK_INT(journal_save(dir, &j), ==, 0);
        write_file("state.log.tmp", "garbage");
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK(!exists("state.log.tmp"));
        journal_free(back);
}

/* ---- kill -9 ---- */

/* Run FN(ARG) in a child and expect it to die of SIGKILL. */
static void in_child_killed(void (*fn)(void *), void *arg)
{
        int status;
        pid_t pid = fork();

        CHECK(pid >= 0);
        if (pid == 0) {
                fn(arg);
                _exit(0);       /* not killed: the parent reports it */
        }
        CHECK_INT(waitpid(pid, &status, 0), ==, pid);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
                CHECK_FAIL_("the child was not killed (status %#x)", status);
}

struct crash_case {
        enum journal_crash_point at;
        struct journal *j;
};

/* A new process: its first save compacts, and is killed at the given step. */
static void compact_and_die(void *arg)
{
        struct crash_case *c = arg;
        struct journal_sync s = {0};

        journal_inject_crash(c->at);
        (void)journal_save_sync(dir, c->j, &s);
}

/* Killed at each step of a compaction: the start that follows finds the
 * state before it (the new snapshot not yet renamed in) or the state it
 * saved, never a mix and never an error, and no temporary file stays. */
TEST(kill_at_each_compaction_step)
{
        static const enum journal_crash_point points[] = {
                JOURNAL_CRASH_SNAPSHOT_WRITTEN, JOURNAL_CRASH_SNAPSHOT_RENAMED,
                JOURNAL_CRASH_LOG_WRITTEN, JOURNAL_CRASH_LOG_RENAMED,
        };
        struct journal j, *back = NULL;
        struct pool_record rows[2];

        for (size_t i = 0; i < ARRAY_SIZE(points); i++) {
                struct journal_sync s = {0};

                fresh_dir();
                sample(&j);
                memcpy(rows, sample_pools, sizeof(rows));
                j.pools = rows;
                CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
                rows[0].bytes_done = 1;         /* B: logged */
                CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
                journal_sync_reset(&s);

                rows[0].bytes_done = 2;         /* C: what the killed compaction saves */
                struct crash_case c = { points[i], &j };
                in_child_killed(compact_and_die, &c);
                CHECK_INT(journal_load(dir, &back), ==, 0);
                uint64_t want = points[i] == JOURNAL_CRASH_SNAPSHOT_WRITTEN ? 1 : 2;
                if (back->pools[0].bytes_done != want)
                        CHECK_FAIL_("killed at step %d: bytes_done %" PRIu64 ", want %" PRIu64, points[i],
                                    back->pools[0].bytes_done, want);
                CHECK_U64(back->n_pools, ==, 2);
                CHECK(!exists("state.json.tmp"));
                CHECK(!exists("state.log.tmp"));
                /* The log of the old snapshot, if it is still there, is stale. */
                if (points[i] == JOURNAL_CRASH_SNAPSHOT_RENAMED || points[i] == JOURNAL_CRASH_LOG_WRITTEN)
                        CHECK(back->log_stale);
                journal_free(back);

                /* And the next process saves over it as usual. */
                rows[0].bytes_done = 3;
                CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
                rows[0].bytes_done = 4;
                CHECK_INT(journal_save_sync(dir, &j, &s), ==, 0);
                CHECK_INT(journal_load(dir, &back), ==, 0);
                CHECK_U64(back->pools[0].bytes_done, ==, 4);
                CHECK(!back->log_stale && !back->log_torn);
                journal_free(back);
                journal_sync_reset(&s);
        }
}

static void append_and_die(void *arg)
{
        struct journal *j = arg;
        struct journal_sync s = {0};

        if (journal_save_sync(dir, j, &s) < 0)
                return;
        j->pools[0].bytes_done = 7;
        journal_inject_crash(JOURNAL_CRASH_APPEND_HALF);
        (void)journal_save_sync(dir, j, &s);
}

/* Killed halfway through an append: the record was never acknowledged; the
 * start finds the state before it and a torn tail, and its first save
 * replaces the log. */
TEST(kill_during_append)
{
        struct journal j, *back = NULL;
        struct journal_sync s = {0};
        struct pool_record rows[2];

        fresh_dir();
        sample(&j);
        memcpy(rows, sample_pools, sizeof(rows));
        j.pools = rows;
        in_child_killed(append_and_die, &j);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK(back->log_torn);
        CHECK_U64(back->pools[0].bytes_done, ==, sample_pools[0].bytes_done);
        CHECK_INT(journal_save_sync(dir, back, &s), ==, 0);
        CHECK_U64(s.full_saves, ==, 1);
        journal_free(back);
        CHECK_INT(journal_load(dir, &back), ==, 0);
        CHECK(!back->log_torn);
        journal_free(back);
        journal_sync_reset(&s);
}

/* kill -9 at a random moment of a stream of saves, many times over, in a
 * directory on tmpfs where saves are quick enough for compactions to come
 * up: every start loads, and finds every save that was acknowledged (the
 * counter row at least at the last one the child reported, at most one
 * further: the save in flight). */
enum { KILL_ROWS = 300, KILL_ROUNDS = 25 };

static void save_stream(void *arg)
{
        int fd = *(int *)arg;
        static struct pool_record rows[KILL_ROWS];
        struct journal j, *back = NULL;
        struct journal_sync s = {0};
        uint64_t seq = 0;

        many(&j, rows, KILL_ROWS);
        for (size_t i = 0; i < KILL_ROWS; i++)
                memset(rows[i].error_detail, 'x', 200);
        if (journal_load(dir, &back) == 0) {
                memcpy(rows, back->pools, KILL_ROWS * sizeof(*rows));
                seq = back->pools[0].bytes_done;
                journal_free(back);
        }
        for (;;) {
                seq++;
                rows[0].bytes_done = seq;
                rows[1 + seq % (KILL_ROWS - 1)].bytes_done = seq;
                if (journal_save_sync(dir, &j, &s) < 0)
                        _exit(3);
                uint64_t msg[2] = { seq, s.full_saves };
                if (write(fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
                        _exit(4);
        }
}

TEST(kill9_random_during_saves)
{
        char saved[sizeof(dir)];
        unsigned long compactions = 0;
        uint64_t acked = 0;

        CHECK_INT(access("/dev/shm", W_OK), ==, 0);
        memcpy(saved, dir, sizeof(dir));
        char shm[] = "/dev/shm/test_journal.XXXXXX";
        CHECK(mkdtemp(shm));
        memcpy(dir, shm, sizeof(shm));
        srand((unsigned)getpid());
        for (int round = 0; round < KILL_ROUNDS; round++) {
                int p[2], status;
                uint64_t msg[2], full = 1;
                struct journal *back = NULL;

                CHECK_INT(pipe(p), ==, 0);
                pid_t pid = fork();
                CHECK(pid >= 0);
                if (pid == 0) {
                        close(p[0]);
                        save_stream(&p[1]);
                }
                close(p[1]);
                /* Let it make some saves first, then kill it at a random
                 * moment of the next 0..200 ms. */
                CHECK_U64(read(p[0], msg, sizeof(msg)), ==, sizeof(msg));
                usleep((useconds_t)(rand() % 200000));
                CHECK_INT(kill(pid, SIGKILL), ==, 0);
                CHECK_INT(waitpid(pid, &status, 0), ==, pid);
                if (!WIFSIGNALED(status))
                        CHECK_FAIL_("the saving child exited by itself (status %#x)", status);
                do {
                        acked = msg[0];
                        full = msg[1];
                } while (read(p[0], msg, sizeof(msg)) == (ssize_t)sizeof(msg));
                compactions += full - 1;        /* the first is the start's */
                close(p[0]);
                CHECK_INT(journal_load(dir, &back), ==, 0);
                CHECK_U64(back->n_pools, ==, KILL_ROWS);
                if (back->pools[0].bytes_done < acked || back->pools[0].bytes_done > acked + 1)
                        CHECK_FAIL_("round %d: counter %" PRIu64 " on disk, %" PRIu64 " acknowledged", round,
                                    back->pools[0].bytes_done, acked);
                journal_free(back);
        }
        printf("kill9_random_during_saves: %d kills, %" PRIu64 " saves acknowledged, %lu compactions by bound\n",
               KILL_ROUNDS, acked, compactions);
        empty_dir();
        rmdir(dir);
        memcpy(dir, saved, sizeof(dir));
}

TEST(save_to_missing_directory_fails)
{
        struct journal j;

        sample(&j);
        CHECK_INT(journal_save("/nonexistent/dir", &j), <, 0);
}

TEST(broken_preconditions_refused)
{
        struct journal j, *ret = NULL;

        sample(&j);
        CHECK_INT(journal_parse(NULL, 5, &ret), ==, -EINVAL);
        CHECK_INT(journal_parse("{}", 2, NULL), ==, -EINVAL);
        CHECK_INT(journal_apply_log(NULL, "", 0), ==, -EINVAL);
        CHECK_INT(journal_load(NULL, &ret), ==, -EINVAL);
        CHECK_INT(journal_save(NULL, &j), ==, -EINVAL);
        CHECK_INT(journal_save_sync(NULL, &j, NULL), ==, -EINVAL);
        CHECK_INT(journal_append_rows(NULL, NULL, 0, NULL, 0, NULL), ==, -EINVAL);
        CHECK_INT(journal_append_rows(&j, NULL, 1, NULL, 0, NULL), ==, -EINVAL);
        CHECK_INT(journal_quarantine(NULL), ==, -EINVAL);
        CHECK(ret == NULL);
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
