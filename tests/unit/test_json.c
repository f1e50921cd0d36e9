/* Unit tests for json.c: the strict decoder against hostile bodies, the
 * generic getters, and the builder's exact integers. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "json.h"
#include "problem.h"

struct req {
        uint64_t count;
        bool allow_partial;
        char name[8];
        bool has_count, has_allow, has_name;
};

static int decode(const char *body, struct req *r, struct problem *p)
{
        const struct jfield fields[] = {
                { "count", JF_U64, &r->count, 0, &r->has_count },
                { "allow_partial", JF_BOOL, &r->allow_partial, 0, &r->has_allow },
                { "name", JF_STRING, r->name, sizeof(r->name), &r->has_name },
        };
        memset(p, 0, sizeof(*p));
        return json_decode(body, strlen(body), fields, 3, p);
}

/* A body the decoder must refuse with STATUS (400 malformed-json, 422
 * invalid-field), the detail naming DETAIL_PART (NULL: any detail). */
struct refusal {
        const char *body;
        int status;
        const char *detail_part;
};

#define N_(a) (sizeof(a) / sizeof((a)[0]))

/* CASE refused as it says, the outputs untouched; false with a message
 * naming the body where not. */
static bool refused(const struct refusal *c)
{
        struct req r = { .count = 7, .name = "keep" };
        struct problem p;
        const char *slug = c->status == 400 ? "malformed-json" : "invalid-field";

        if (decode(c->body, &r, &p) != -EINVAL) {
                fprintf(stderr, "FAIL accepted: %s\n", c->body);
                return false;
        }
        if (p.status != c->status || strcmp(p.slug, slug) != 0) {
                fprintf(stderr, "FAIL body %s: %d %s, want %d %s\n", c->body, p.status, p.slug, c->status, slug);
                return false;
        }
        if (c->detail_part && !strstr(p.detail, c->detail_part)) {
                fprintf(stderr, "FAIL detail \"%s\" lacks \"%s\" (body %s)\n", p.detail, c->detail_part, c->body);
                return false;
        }
        if (r.count != 7 || strcmp(r.name, "keep") != 0 || r.has_count || r.has_allow || r.has_name) {
                fprintf(stderr, "FAIL body %s: stored count %" PRIu64 ", name \"%s\", has %d%d%d\n", c->body,
                        r.count, r.name, r.has_count, r.has_allow, r.has_name);
                return false;
        }
        return true;
}

/* Every case of a table runs; each failing one is named, and the test fails
 * at the end if any did. */
static void refused_all(const struct refusal *cases, size_t n)
{
        int failed = 0;

        for (size_t i = 0; i < n; i++)
                failed += !refused(&cases[i]);
        CHECK_INT(failed, ==, 0);
}

TEST(decode_ok)
{
        struct req r = {};
        struct problem p;

        CHECK_INT(decode(" {\"count\": 64, \"allow_partial\": true, \"name\":\"ab\"}\n", &r, &p),
                  ==, 0);
        CHECK_U64(r.count, ==, 64);
        CHECK(r.allow_partial);
        CHECK_STR(r.name, "ab");
        CHECK(r.has_count && r.has_allow && r.has_name);

        memset(&r, 0, sizeof(r));
        r.count = 5;
        CHECK_INT(decode("{}", &r, &p), ==, 0);
        CHECK_U64(r.count, ==, 5);
        CHECK(!r.has_count);

        CHECK_INT(decode("{\"count\": 9007199254740992}", &r, &p), ==, 0);
        CHECK_U64(r.count, ==, UINT64_C(9007199254740992));
        CHECK_INT(decode("{\"count\": 0}", &r, &p), ==, 0);
        CHECK_U64(r.count, ==, 0);
        /* 7 bytes fit an 8-byte buffer. */
        CHECK_INT(decode("{\"name\": \"abcdefg\"}", &r, &p), ==, 0);
        CHECK_STR(r.name, "abcdefg");
        /* Escapes and UTF-8 pass through. */
        CHECK_INT(decode("{\"name\": \"a\\\"\\u00e9\"}", &r, &p), ==, 0);
        CHECK_STR(r.name, "a\"\xc3\xa9");
        CHECK_INT(decode("{\"name\": \"\xe2\x82\xac\xf0\x9f\x98\x80\"}", &r, &p), ==, 0);
        CHECK_STR(r.name, "\xe2\x82\xac\xf0\x9f\x98\x80");
}

/* Syntax: 400 malformed-json. */
TEST(decode_refuses_bad_syntax)
{
        static const struct refusal cases[] = {
                { "", 400, "empty" },
                { "{", 400, NULL },
                { "{\"count\": 1,}", 400, NULL },
                { "{\"count\": 1} x", 400, "trailing" },
                { "{\"count\": 1}{}", 400, "trailing" },
                { "{'count': 1}", 400, NULL },
                { "\x01{\"count\": 1}", 400, "control" },
                { "{\"name\": \"a\tb\"}", 400, "control" },
                { "{\"name\": \"a\\u0000b\"}", 400, "u0000" },
                { "{\"name\": \"\xff\"}", 400, "UTF-8" },
                { "{\"name\": \"\xc0\x80\"}", 400, "UTF-8" },     /* overlong NUL */
                { "{\"name\": \"\xed\xa0\x80\"}", 400, "UTF-8" }, /* surrogate */
                { "{\"name\": \"\xe2\x82\"}", 400, "UTF-8" },     /* truncated */
                { "{\"name\": \"\xf4\x90\x80\x80\"}", 400, "UTF-8" }, /* > U+10FFFF */
                { "{\"\xfe\": 1}", 400, "UTF-8" },
                { "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", 400,
                  "deep" },
        };

        refused_all(cases, N_(cases));
}

/* Shape: not an object, unknown, wrongly-cased or duplicate keys. */
TEST(decode_refuses_bad_shape)
{
        static const struct refusal cases[] = {
                { "[]", 422, "object" },
                { "3", 422, "object" },
                { "null", 422, "object" },
                { "{\"cOunt\": 1}", 422, "unknown field \"cOunt\"" },
                { "{\"Count\": 1}", 422, "unknown" },
                { "{\"count\": 1, \"count\": 2}", 422, "duplicate field \"count\"" },
                { "{\"count\": 1, \"bogus\": 2}", 422, "bogus" },
                /* Long unknown keys are cut short, never inside a UTF-8 sequence. */
                { "{\"KKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKK\xf0\x9f\x98\x80\": 1}", 422,
                  "KKK\"..." },
        };

        refused_all(cases, N_(cases));
}

TEST(decode_refuses_wrong_types)
{
        static const struct refusal cases[] = {
                { "{\"count\": \"1\"}", 422, "\"count\" must be a non-negative integer" },
                { "{\"count\": true}", 422, "count" },
                { "{\"count\": null}", 422, "count" },
                { "{\"count\": [1]}", 422, "count" },
                { "{\"allow_partial\": 1}", 422, "allow_partial" },
                { "{\"name\": 1}", 422, "name" },
                { "{\"name\": \"abcdefgh\"}", 422, "too long" },
        };

        refused_all(cases, N_(cases));
}

/* Numbers that are not exact non-negative integers <= 2^53. */
TEST(decode_refuses_inexact_numbers)
{
        static const struct refusal cases[] = {
                { "{\"count\": -1}", 422, "count" },
                { "{\"count\": -0}", 422, "count" },
                { "{\"count\": 1.5}", 422, "count" },
                { "{\"count\": 1.0}", 422, "count" },
                { "{\"count\": 1e3}", 422, "count" },
                { "{\"count\": 01}", 422, "count" },
                { "{\"count\": 9007199254740993}", 422, "count" },
                { "{\"count\": 18446744073709551616}", 422, "count" },
                { "{\"count\": 1e400}", 422, "count" },
        };

        refused_all(cases, N_(cases));
}

/* Earlier valid fields are not stored when a later one fails. */
TEST(decode_refusal_stores_nothing)
{
        static const struct refusal cases[] = {
                { "{\"name\": \"ok\", \"count\": 1, \"allow_partial\": 3}", 422, "allow_partial" },
        };

        refused_all(cases, N_(cases));
}

TEST(depth_limit_edge)
{
        char buf[200] = "";
        struct json *v = NULL;

        /* 32 levels parse, 33 do not. */
        for (int i = 0; i < 32; i++)
                strcat(buf, "[");
        for (int i = 0; i < 32; i++)
                strcat(buf, "]");
        CHECK_INT(json_parse(buf, strlen(buf), &v), ==, 0);
        json_free(v);
        memmove(buf + 1, buf, strlen(buf) + 1);
        buf[0] = '[';
        strcat(buf, "]");
        CHECK_INT(json_parse(buf, strlen(buf), &v), ==, -EINVAL);
}

TEST(getters)
{
        const char *doc = "{\"a\": 1, \"A\": 2, \"neg\": -5, \"big\": 9007199254740993,"
                          " \"f\": 2.5, \"t\": true, \"s\": \"str\", \"arr\": [1, {\"x\": 3}],"
                          " \"o\": {\"k\": null}}";
        struct json *v = NULL;
        uint64_t u = 99;
        int64_t i = 99;
        bool b = false;
        const char *s = NULL;

        CHECK_INT(json_parse(doc, strlen(doc), &v), ==, 0);
        CHECK(json_is_object(v));
        CHECK_INT(json_get_u64(v, "a", &u), ==, 0);
        CHECK_U64(u, ==, 1);
        CHECK_INT(json_get_u64(v, "A", &u), ==, 0);
        CHECK_U64(u, ==, 2);
        CHECK_INT(json_get_u64(v, "missing", &u), ==, -ENOENT);
        CHECK_INT(json_get_u64(v, "neg", &u), ==, -EINVAL);
        CHECK_INT(json_get_u64(v, "big", &u), ==, -EINVAL);
        CHECK_INT(json_get_u64(v, "f", &u), ==, -EINVAL);
        CHECK_INT(json_get_u64(v, "s", &u), ==, -EINVAL);
        CHECK_U64(u, ==, 2);
        CHECK_INT(json_get_i64(v, "neg", &i), ==, 0);
        CHECK_INT(i, ==, -5);
        CHECK_INT(json_get_i64(v, "f", &i), ==, -EINVAL);
        CHECK_INT(json_get_bool(v, "t", &b), ==, 0);
        CHECK(b);
        CHECK_INT(json_get_bool(v, "a", &b), ==, -EINVAL);
        CHECK_INT(json_get_str(v, "s", &s), ==, 0);
        CHECK_STR(s, "str");
        CHECK_INT(json_get_str(v, "t", &s), ==, -EINVAL);
        CHECK(json_get(v, "S") == NULL);

        const struct json *arr = json_get(v, "arr");
        CHECK(json_is_array(arr));
        CHECK(!json_is_object(arr));
        CHECK_U64(json_array_len(arr), ==, 2);
        CHECK_INT(json_get_u64(json_array_at(arr, 1), "x", &u), ==, 0);
        CHECK_U64(u, ==, 3);
        CHECK(json_array_at(arr, 2) == NULL);
        CHECK_U64(json_array_len(json_get(v, "o")), ==, 0);
        CHECK(json_get(json_get(v, "arr"), "x") == NULL);
        json_free(v);
        json_free(NULL);
}

/* Duplicates anywhere, trailing data, bad syntax: refused, the out-parameter
 * untouched. */
TEST(parse_refuses_duplicates_and_bad_syntax)
{
        uint64_t u;
        struct json *w = (struct json *)&u; /* must stay untouched */
        const char *bad[] = { "{\"o\": {\"k\": 1, \"k\": 2}}", "[{\"a\":1,\"b\":2,\"a\":3}]",
                              "{} {}", "{\"a\":", "\"a\\u0000\"", "nul", "" };
        for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
                if (json_parse(bad[k], strlen(bad[k]), &w) != -EINVAL)
                        CHECK_FAIL_("parsed: %s", bad[k]);
                CHECK(w == (struct json *)&u);
        }
}

/* Same keys in different objects are fine; input need not be NUL-terminated. */
TEST(parse_same_keys_in_different_objects)
{
        struct json *v = NULL;
        const char *ok = "{\"a\":{\"a\":1},\"b\":{\"a\":2}}GARBAGE";
        CHECK_INT(json_parse(ok, strlen(ok) - 7, &v), ==, 0);
        json_free(v);
}

/* json_check_keys: every member's key must be one of the allowed names,
 * case-sensitively; the first one that is not is named (cut at 64 bytes, on
 * a UTF-8 boundary), with where it was.  Non-objects have no keys to check. */
TEST(check_keys_table)
{
        static const char *const allowed[] = { "node", "count", "size" };
        static const struct {
                const char *doc;
                const char *where;
                const char *detail; /* NULL: accepted */
        } cases[] = {
                { "{}", NULL, NULL },
                { "{\"node\":0,\"count\":1,\"size\":\"4G\"}", NULL, NULL },
                { "{\"count\":1}", "t[0]", NULL },
                { "[1,2]", NULL, NULL },
                { "7", NULL, NULL },
                { "{\"node\":0,\"cuont\":1}", NULL, "unknown field \"cuont\"" },
                { "{\"cuont\":1}", "targets[3]", "unknown field \"cuont\" in targets[3]" },
                { "{\"Node\":0}", NULL, "unknown field \"Node\"" },
                { "{\"\":0}", "x", "unknown field \"\" in x" },
                { "{\"node \":0}", NULL, "unknown field \"node \"" },
                /* The first unknown one, in document order. */
                { "{\"a\":1,\"node\":0,\"b\":2}", NULL, "unknown field \"a\"" },
                /* Nested objects are the caller's to check. */
                { "{\"node\":{\"zzz\":1}}", NULL, NULL },
                { "{\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\":1}",
                  NULL, "unknown field \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"..." },
                { "{\"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
                  "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9a\u00e9\":1}",
                  NULL, "unknown field \"\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                  "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9" "a\"..." },
        };

        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                struct json *v = NULL;
                struct problem p = {0};
                int r;

                CHECK_INT(json_parse(cases[k].doc, strlen(cases[k].doc), &v), ==, 0);
                r = json_check_keys(v, allowed, 3, cases[k].where, &p);
                json_free(v);
                if (!cases[k].detail) {
                        if (r != 0)
                                CHECK_FAIL_("refused %s: %s", cases[k].doc, p.detail);
                        continue;
                }
                if (r != -EINVAL) {
                        CHECK_FAIL_("accepted %s", cases[k].doc);
                        continue;
                }
                CHECK_INT(p.status, ==, 422);
                CHECK_STR(p.slug, "invalid-field");
                CHECK_STR(p.detail, cases[k].detail);
        }
}

TEST(builder)
{
        struct json *o = json_new_object();
        struct json *arr, *inner, *parsed = NULL;
        char *text;

        json_add_u64(o, "max", UINT64_MAX);
        json_add_u64(o, "p53", (UINT64_C(1) << 53) + 1);
        json_add_i64(o, "min", INT64_MIN);
        json_add_double(o, "half", 0.5);
        json_add_double(o, "nan", 0.0 / 0.0);
        json_add_str(o, "s", "a\"b\\c\n");
        json_add_str(o, "nul", NULL);
        json_add_bool(o, "f", false);
        json_add_null(o, "z");
        arr = json_add_array(o, "arr");
        json_append_str(arr, "x");
        inner = json_append_object(arr);
        json_add_u64(inner, "n", 1);
        CHECK_INT(json_parse("[1,2]", 5, &parsed), ==, 0);
        json_add_value(o, "moved", parsed);
        json_append_value(arr, json_new_array());
        json_add_object(o, "empty");

        text = json_print(o);
        CHECK_STR(text, "{\"max\":18446744073709551615,\"p53\":9007199254740993,"
                        "\"min\":-9223372036854775808,\"half\":0.5,\"nan\":null,"
                        "\"s\":\"a\\\"b\\\\c\\n\",\"nul\":null,\"f\":false,\"z\":null,"
                        "\"arr\":[\"x\",{\"n\":1},[]],\"moved\":[1,2],\"empty\":{}}");
        free(text);
        json_free(o);

        /* NULL parents are no-ops; moved children are freed, not leaked. */
        json_add_u64(NULL, "a", 1);
        CHECK(json_add_object(NULL, "a") == NULL);
        CHECK(json_append_object(NULL) == NULL);
        CHECK_INT(json_parse("{}", 2, &parsed), ==, 0);
        json_add_value(NULL, "x", parsed);
        CHECK(json_print(NULL) == NULL);

        /* A failed add (here: NULL key) makes the document unprintable. */
        o = json_new_object();
        json_add_u64(o, "ok", 1);
        json_add_u64(o, NULL, 2);
        CHECK(json_print(o) == NULL);
        json_free(o);
}

TEST_MAIN()
