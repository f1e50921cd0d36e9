/* Unit tests for record.c: each record's one JSON form, exactly as the
 * journal writes it (the text below is the journal's bytes: a change to a
 * record's members or their order fails here first), read back unchanged,
 * and refused by its strict decoder when a member is missing, of the wrong
 * type or out of range, or when a rule across members breaks; and the
 * entries' preconditions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json.h"
#include "record.h"
#include "util.h"

static void json_freep(struct json **v)
{
        json_free(*v);
}

static struct pool_record sample_pool(void)
{
        struct pool_record p = {
                .name = "vm-1", .node = 0, .page_size = 2097152, .size_bytes = 4194304, .state = POOL_READY,
                .threads = 2, .ttl_seconds = 60, .claimed = true, .created_at = 10, .started_at = 11,
                .finished_at = 12, .ready_boot_ns = 99, .bytes_done = 4194304, .owner_pid = 7, .owner_start = 8,
                .error_slug = "", .error_detail = "", .from_stock = POOL_FROM_STOCK_PARTIAL,
                .label = "libvirt:abc", .file_owned = true, .file_uid = 1000, .file_gid = 1001,
        };
        return p;
}

/* O as text; the caller frees. */
static char *text_of(void (*add)(struct json *, const void *), const void *rec)
{
        _cleanup_(json_freep) struct json *o = json_new_object();

        add(o, rec);
        return json_print(o);
}

static void add_pool(struct json *o, const void *p) { record_add_pool(o, p); }
static void add_policy(struct json *o, const void *e) { record_add_elastic_policy(o, e); }
static void add_target(struct json *o, const void *t) { record_add_stock_target(o, t); }
static void add_reservation(struct json *o, const void *r) { record_add_reservation(o, r); }

/* TEXT parsed as one object; the caller frees. */
static struct json *doc(const char *text)
{
        struct json *o = NULL;

        CHECK_INT(json_parse(text, strlen(text), &o), ==, 0);
        return o;
}

TEST(pool_row_written_member_by_member_in_order)
{
        struct pool_record p = sample_pool();
        _cleanup_free_ char *t = text_of(add_pool, &p);

        CHECK_STR(t, "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":4194304,"
                     "\"state\":\"ready\",\"threads\":2,\"ttl_seconds\":60,\"claimed\":true,\"created_at\":10,"
                     "\"started_at\":11,\"finished_at\":12,\"bytes_done\":4194304,\"error_slug\":\"\","
                     "\"error_detail\":\"\",\"ready_boot_ns\":99,\"owner_pid\":7,\"owner_start_time\":8,"
                     "\"from_stock\":\"partial\",\"label\":\"libvirt:abc\",\"file_uid\":1000,\"file_gid\":1001}");
}

TEST(pool_row_leaves_unset_optional_members_out)
{
        struct pool_record p = sample_pool();
        _cleanup_free_ char *t = NULL;

        p.ready_boot_ns = 0;
        p.owner_pid = 0;
        p.from_stock = POOL_FROM_STOCK_NONE;
        p.label[0] = '\0';
        p.file_owned = false;
        t = text_of(add_pool, &p);
        CHECK(!strstr(t, "ready_boot_ns") && !strstr(t, "owner_") && !strstr(t, "from_stock") &&
              !strstr(t, "label") && !strstr(t, "file_"));
}

TEST(pool_row_reads_back_unchanged)
{
        struct pool_record p = sample_pool(), back;
        _cleanup_free_ char *t = text_of(add_pool, &p);
        _cleanup_(json_freep) struct json *o = doc(t);

        memset(&back, 0xa5, sizeof(back));
        CHECK_INT(record_parse_pool(o, &back), ==, 0);
        CHECK(record_pool_equal(&p, &back));
        CHECK_STR(back.label, "libvirt:abc");
        CHECK_INT(back.from_stock, ==, POOL_FROM_STOCK_PARTIAL);
}

TEST(pool_identity_is_the_rows_first_members)
{
        struct pool_record p = sample_pool();
        _cleanup_(json_freep) struct json *o = json_new_object();
        _cleanup_free_ char *t = NULL, *row = text_of(add_pool, &p);

        record_add_pool_identity(o, p.name, p.node, p.page_size, p.size_bytes, p.state);
        t = json_print(o);
        t[strlen(t) - 1] = '\0';        /* the closing brace */
        CHECK(strncmp(row, t, strlen(t)) == 0);
}

/* Each REFUSED text is a row with one thing wrong. */
TEST(pool_row_decoder_is_strict)
{
        static const char *const refused[] = {
                "[]",
                "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"ready\"}",
                "{\"name\":\"vm-1\",\"node\":-1,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"ready\","
                "\"threads\":0,\"ttl_seconds\":0,\"claimed\":false,\"created_at\":1,\"started_at\":1,\"finished_at\":0,"
                "\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\"}",
                "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":3000000,\"size_bytes\":6000000,\"state\":\"ready\","
                "\"threads\":0,\"ttl_seconds\":0,\"claimed\":false,\"created_at\":1,\"started_at\":1,\"finished_at\":0,"
                "\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\"}",
                "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"stock\","
                "\"threads\":0,\"ttl_seconds\":0,\"claimed\":false,\"created_at\":1,\"started_at\":1,\"finished_at\":0,"
                "\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\"}",
                "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"ready\","
                "\"threads\":4294967296,\"ttl_seconds\":0,\"claimed\":false,\"created_at\":1,\"started_at\":1,"
                "\"finished_at\":0,\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\"}",
                "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"ready\","
                "\"threads\":0,\"ttl_seconds\":0,\"claimed\":\"no\",\"created_at\":1,\"started_at\":1,"
                "\"finished_at\":0,\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\"}",
                "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"ready\","
                "\"threads\":0,\"ttl_seconds\":0,\"claimed\":false,\"created_at\":1,\"started_at\":1,"
                "\"finished_at\":0,\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\",\"owner_pid\":5,"
                "\"owner_start_time\":1}",
                "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"ready\","
                "\"threads\":0,\"ttl_seconds\":0,\"claimed\":false,\"created_at\":1,\"started_at\":1,"
                "\"finished_at\":0,\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\",\"label\":\"-x\"}",
                "{\"name\":\"vm-1\",\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":2097152,\"state\":\"ready\","
                "\"threads\":0,\"ttl_seconds\":0,\"claimed\":false,\"created_at\":1,\"started_at\":1,"
                "\"finished_at\":0,\"bytes_done\":0,\"error_slug\":\"\",\"error_detail\":\"\",\"file_uid\":1}",
        };
        struct pool_record p = sample_pool(), before = p;

        for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
                _cleanup_(json_freep) struct json *o = doc(refused[i]);
                CHECK_INT(record_parse_pool(o, &p), ==, -EINVAL);
                CHECK(record_pool_equal(&p, &before));
        }
}

TEST(policy_written_and_read_back)
{
        struct elastic_policy_record e = { .node = 1, .page_size = 2097152, .min = 1, .max = 8, .headroom = 2,
                                            .idle_seconds = 30, .allow_best_effort = true }, back = {};
        _cleanup_free_ char *t = text_of(add_policy, &e);
        _cleanup_(json_freep) struct json *o = doc(t);

        CHECK_STR(t, "{\"node\":1,\"page_size_bytes\":2097152,\"min\":1,\"max\":8,\"headroom\":2,"
                     "\"idle_seconds\":30,\"allow_best_effort\":true}");
        CHECK_INT(record_parse_elastic_policy(o, &back), ==, 0);
        CHECK(back.node == 1 && back.max == 8 && back.headroom == 2 && back.allow_best_effort);
}

TEST(policy_rules_refused)
{
        static const char *const refused[] = {
                "{\"node\":0,\"page_size_bytes\":2097152,\"min\":9,\"max\":8,\"headroom\":2,\"idle_seconds\":30,"
                "\"allow_best_effort\":false}",
                "{\"node\":0,\"page_size_bytes\":2097152,\"min\":1,\"max\":8,\"headroom\":9,\"idle_seconds\":30,"
                "\"allow_best_effort\":false}",
                "{\"node\":0,\"page_size_bytes\":2097152,\"min\":1,\"max\":8,\"headroom\":2,\"idle_seconds\":0,"
                "\"allow_best_effort\":false}",
                "{\"node\":0,\"page_size_bytes\":2097152,\"min\":1,\"max\":8,\"headroom\":2,\"idle_seconds\":30}",
        };
        struct elastic_policy_record e = { .max = 5 };

        for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
                _cleanup_(json_freep) struct json *o = doc(refused[i]);
                CHECK_INT(record_parse_elastic_policy(o, &e), ==, -EINVAL);
                CHECK_U64(e.max, ==, 5);
        }
}

/* record_check_elastic_policy: each refusal says which number is wrong. */
TEST(policy_check_hostile)
{
        const struct {
                const char *rule;
                struct elastic_policy_record p;
                int want;
                const char *says;
        } t[] = {
                { "a sound policy", { 0, 2 << 20, 0, 8, 2, 1, false }, 0, "" },
                { "min equal to max", { 0, 2 << 20, 8, 8, 8, 1, false }, 0, "" },
                { "min above max", { 0, 2 << 20, 9, 8, 0, 1, false }, -EINVAL, "\"min\" (9) is above \"max\" (8)" },
                { "headroom above max", { 0, 2 << 20, 0, 8, 9, 1, false }, -EINVAL, "\"headroom\" (9)" },
                { "max zero", { 0, 2 << 20, 0, 0, 0, 1, false }, -EINVAL, "\"max\" must be at least 1" },
                { "max beyond any node", { 0, 2 << 20, 0, UINT64_MAX, 0, 1, false }, -EINVAL, "over the limit" },
                { "idle zero", { 0, 2 << 20, 0, 8, 0, 0, false }, -EINVAL, "\"idle_seconds\" must be" },
                { "idle beyond a year", { 0, 2 << 20, 0, 8, 0, ELASTIC_IDLE_MAX + 1, false }, -EINVAL,
                  "\"idle_seconds\" must be" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char why[200] = "";
                printf("  %s\n", t[i].rule);
                CHECK_INT(record_check_elastic_policy(&t[i].p, why, sizeof(why)), ==, t[i].want);
                CHECK(strstr(why, t[i].says));
        }
}

/* The journal's replay refuses a policy exactly when PUT .../policy and
 * --elastic do: record_parse_elastic_policy applies the same rule,
 * record_check_elastic_policy, not a weaker one of its own. */
TEST(policy_journal_refuses_what_the_api_refuses)
{
        static const struct elastic_policy_record t[] = {
                { 0, 2097152, 0, 8, 2, 1, false },
                { 0, 2097152, 8, 8, 8, 1, false },
                { 0, 2097152, 9, 8, 0, 1, false },
                { 0, 2097152, 0, 8, 9, 1, false },
                { 0, 2097152, 0, 0, 0, 1, false },
                { 0, 2097152, 0, ELASTIC_PAGES_MAX, 0, 1, false },
                { 0, 2097152, 0, ELASTIC_PAGES_MAX + 1, 0, 1, false },
                { 0, 2097152, 0, 8, 0, 0, false },
                { 0, 2097152, 0, 8, 0, ELASTIC_IDLE_MAX, false },
                { 0, 2097152, 0, 8, 0, ELASTIC_IDLE_MAX + 1, false },
        };

        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                struct elastic_policy_record back = {};
                char why[200] = "";
                _cleanup_free_ char *text = text_of(add_policy, &t[i]);
                _cleanup_(json_freep) struct json *o = doc(text);

                printf("  %s\n", text);
                CHECK_INT(record_parse_elastic_policy(o, &back), ==,
                          record_check_elastic_policy(&t[i], why, sizeof(why)));
        }
}

TEST(stock_target_and_reservation_round_trip)
{
        struct stock_target_record t = { .node = 0, .page_size = 2097152, .size_bytes = 4194304, .count = 3 }, tb;
        struct reservation_record r = { .node = 0, .page_size = 1073741824, .count = 2 }, rb;
        _cleanup_free_ char *tt = text_of(add_target, &t), *rt = text_of(add_reservation, &r);
        _cleanup_(json_freep) struct json *to = doc(tt), *ro = doc(rt), *bad = NULL;

        CHECK_STR(tt, "{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":4194304,\"count\":3}");
        CHECK_STR(rt, "{\"node\":0,\"page_size_bytes\":1073741824,\"count\":2}");
        CHECK_INT(record_parse_stock_target(to, &tb), ==, 0);
        CHECK(tb.size_bytes == t.size_bytes && tb.count == 3);
        CHECK_INT(record_parse_reservation(ro, &rb), ==, 0);
        CHECK(rb.page_size == r.page_size && rb.count == 2);
        bad = doc("{\"node\":0,\"page_size_bytes\":2097152,\"size_bytes\":3000000,\"count\":3}");
        CHECK_INT(record_parse_stock_target(bad, &tb), ==, -EINVAL);
}

TEST(broken_preconditions_refused)
{
        _cleanup_(json_freep) struct json *o = doc("{}");

        CHECK_INT(record_parse_pool(o, NULL), ==, -EINVAL);
        CHECK_INT(record_parse_reservation(o, NULL), ==, -EINVAL);
        CHECK_INT(record_parse_stock_target(o, NULL), ==, -EINVAL);
        CHECK_INT(record_parse_elastic_policy(o, NULL), ==, -EINVAL);
        CHECK_INT(pool_transition(NULL, POOL_READY, NULL, NULL), ==, -EINVAL);
        CHECK_INT(pool_state_parse("ready", NULL), ==, -EINVAL);
        CHECK_INT(pool_from_stock_parse("full", NULL), ==, -EINVAL);
        /* Encoders take a builder's NULL (an allocation that failed). */
        record_add_pool(NULL, NULL);
        record_add_elastic_policy(NULL, NULL);
}

/* The one sentence of each rule, as every refusal quotes it. */
TEST(name_rules_said_once)
{
        CHECK_STR(POOL_NAME_RULE, "pool names are 1 to 64 characters of [A-Za-z0-9._-], starting with a letter or "
                                  "digit");
        CHECK(strstr(POOL_LABEL_RULE, "1 to 128 characters of [A-Za-z0-9:._-]") != NULL);
}

TEST_MAIN()
