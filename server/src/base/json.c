/* json: strict reading of JSON, one of the two files that include cJSON
 * (json_build.c, the builder, is the other); both are wrapped so that cJSON's
 * traps (in 1.7.15) never reach the rest of the daemon.  Reading and building
 * share nothing but the header, so they live apart.
 *
 * Reading.  Before cJSON sees a document we run one cheap pass over the raw
 * bytes, outside and inside strings, that cJSON itself does not do:
 *   - nesting deeper than JSON_MAX_DEPTH is refused (cJSON recurses up to
 *     1000 levels);
 *   - control bytes outside JSON whitespace, raw control bytes inside strings
 *     and the escape \u0000 are refused (cJSON would accept them and truncate
 *     strings at the NUL), and so is text that is not valid UTF-8 (it would
 *     otherwise be echoed into error details and responses);
 *   - every number literal is classified, because cJSON keeps only a double:
 *     "exact" means it is written as an integer, -?(0|[1-9][0-9]*), whose
 *     magnitude is at most 2^53.  So "1.0", "1e3", "01" and
 *     "9007199254740993" (which rounds to 2^53) are all not exact integers.
 * After cJSON parsed the document we walk its tree in document order, which is
 * also the order of the number literals, and store each literal's class in
 * the node's valueint (cJSON's saturated int copy is useless to us, and only
 * this file reads cJSON nodes).  Then duplicate keys are refused.  Keys are
 * always looked up case-sensitively.  json_decode() turns a request body into
 * caller-owned fields through a table (struct jfield) and answers every
 * refusal as a problem; the json_get_*() getters serve documents we read
 * back ourselves (the journal).  json_free is the builder's (json_build.c),
 * so problem.c, which this file raises, needs nothing from this one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "json.h"
#include "problem.h"
#include "util.h"

/* Request bodies and our own journal are shallow (the journal is 3 levels);
 * 32 is generous and keeps cJSON's recursion short. */
#define JSON_MAX_DEPTH 32

/* Classes of number literals, stored in valueint of parsed number nodes. */
#define NUM_EXACT 1 /* integer literal, |v| <= 2^53 */
#define NUM_NEG 2   /* written with a leading minus */

#define MAX_EXACT "9007199254740992" /* 2^53 */
#define MAX_EXACT_U64 (UINT64_C(1) << 53)

static const cJSON *CC(const struct json *v) { return (const cJSON *)v; }
static struct json *J(cJSON *v) { return (struct json *)v; }

struct scan {
        unsigned char *nums; /* class of each number literal, in order */
        size_t n_nums, cap_nums;
        const char *why;     /* first problem found */
        size_t at;           /* its byte offset */
};

static int scan_push_num(struct scan *s, unsigned char cls)
{
        if (s->n_nums == s->cap_nums) {
                size_t cap = s->cap_nums ? s->cap_nums * 2 : 16;
                unsigned char *n = realloc(s->nums, cap);
                if (!n)
                        return -ENOMEM;
                s->nums = n;
                s->cap_nums = cap;
        }
        s->nums[s->n_nums++] = cls;
        return 0;
}

/* Length of the valid UTF-8 sequence at P (at most N bytes), 0 if invalid:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
        unsigned char c = p[0];
        size_t len;
        unsigned char lo = 0x80, hi = 0xbf;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                len = 2;
        else if (c >= 0xe0 && c <= 0xef) {
                len = 3;
                if (c == 0xe0)
                        lo = 0xa0;
                else if (c == 0xed)
                        hi = 0x9f;
        } else if (c >= 0xf0 && c <= 0xf4) {
                len = 4;
                if (c == 0xf0)
                        lo = 0x90;
                else if (c == 0xf4)
                        hi = 0x8f;
        } else
                return 0;
        if (n < len || p[1] < lo || p[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if (p[i] < 0x80 || p[i] > 0xbf)
                        return 0;
        return len;
}

static bool is_num_char(char c)
{
        return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == 'e' ||
               c == 'E';
}

/* Classify the literal TOK[0..n) exactly as described at the top. */
static unsigned char classify_number(const char *tok, size_t n)
{
        unsigned char cls = 0;
        size_t digits;

        if (n > 0 && tok[0] == '-') {
                cls |= NUM_NEG;
                tok++;
                n--;
        }
        if (n == 0)
                return cls;
        for (size_t i = 0; i < n; i++)
                if (tok[i] < '0' || tok[i] > '9')
                        return cls;
        if (tok[0] == '0' && n > 1)
                return cls;
        digits = n;
        if (digits > strlen(MAX_EXACT))
                return cls;
        if (digits == strlen(MAX_EXACT) && memcmp(tok, MAX_EXACT, digits) > 0)
                return cls;
        return cls | NUM_EXACT;
}

/* The pre-pass described at the top.  Syntax errors it does not care about
 * are left for cJSON.  Returns 0 (s->why set on a finding) or -ENOMEM. */
static int scan_document(const char *buf, size_t len, struct scan *s)
{
        unsigned depth = 0;
        size_t i = 0;

        while (i < len) {
                unsigned char c = (unsigned char)buf[i];

                if (c == '"') {
                        for (i++; i < len && buf[i] != '"'; i++) {
                                c = (unsigned char)buf[i];
                                if (c < 0x20) {
                                        s->why = "control character in string";
                                        s->at = i;
                                        return 0;
                                }
                                if (c >= 0x80) {
                                        size_t n = utf8_len((const unsigned char *)buf + i,
                                                            len - i);
                                        if (n == 0) {
                                                s->why = "invalid UTF-8";
                                                s->at = i;
                                                return 0;
                                        }
                                        i += n - 1;
                                        continue;
                                }
                                if (c != '\\')
                                        continue;
                                i++;
                                if (i + 4 < len && buf[i] == 'u' &&
                                    memcmp(buf + i + 1, "0000", 4) == 0) {
                                        s->why = "string contains \\u0000";
                                        s->at = i - 1;
                                        return 0;
                                }
                        }
                        i++;
                } else if (c == '{' || c == '[') {
                        if (++depth > JSON_MAX_DEPTH) {
                                s->why = "nesting too deep";
                                s->at = i;
                                return 0;
                        }
                        i++;
                } else if (c == '}' || c == ']') {
                        if (depth > 0)
                                depth--;
                        i++;
                } else if (c == '-' || (c >= '0' && c <= '9')) {
                        size_t start = i;
                        while (i < len && is_num_char(buf[i]))
                                i++;
                        if (scan_push_num(s, classify_number(buf + start, i - start)) < 0)
                                return -ENOMEM;
                } else if (c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                        s->why = "control character";
                        s->at = i;
                        return 0;
                } else {
                        i++;
                }
        }
        return 0;
}

/* Store number classes in document order; false if the counts disagree. */
static bool annotate(cJSON *v, const struct scan *s, size_t *k)
{
        if (cJSON_IsNumber(v)) {
                if (*k >= s->n_nums)
                        return false;
                v->valueint = s->nums[(*k)++];
        }
        for (cJSON *c = v->child; c; c = c->next)
                if (!annotate(c, s, k))
                        return false;
        return true;
}

static int cmp_keys(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorting keeps a hostile object with many members from going quadratic. */
static int check_duplicates(const cJSON *v)
{
        if (cJSON_IsObject(v)) {
                size_t n = 0, i = 0;
                _cleanup_free_ const char **keys = NULL;

                for (const cJSON *c = v->child; c; c = c->next)
                        n++;
                if (n > 1) {
                        keys = malloc(n * sizeof(*keys));
                        if (!keys)
                                return -ENOMEM;
                        for (const cJSON *c = v->child; c; c = c->next)
                                keys[i++] = c->string ? c->string : "";
                        qsort(keys, n, sizeof(*keys), cmp_keys);
                        for (i = 1; i < n; i++)
                                if (strcmp(keys[i - 1], keys[i]) == 0)
                                        return -EINVAL;
                }
        }
        for (const cJSON *c = v->child; c; c = c->next) {
                int r = check_duplicates(c);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool only_whitespace(const char *p, const char *end)
{
        for (; p < end; p++)
                if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
                        return false;
        return true;
}

/* Parse and annotate, without the duplicate check.  On syntax trouble returns
 * -EINVAL and, if WHY is given, a short reason and its byte offset. */
static int parse_annotated(const char *buf, size_t len, cJSON **ret, const char **why,
                           size_t *at)
{
        struct scan s = {};
        const char *end = NULL;
        cJSON *root;
        size_t k = 0;
        int r;

        if (!buf || len == 0) {
                *why = "empty document";
                *at = 0;
                return -EINVAL;
        }
        r = scan_document(buf, len, &s);
        if (r < 0)
                goto out;
        if (s.why) {
                *why = s.why;
                *at = s.at;
                r = -EINVAL;
                goto out;
        }
        root = cJSON_ParseWithLengthOpts(buf, len, &end, false);
        if (!root) {
                *why = "syntax error";
                *at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
                r = -EINVAL;
                goto out;
        }
        if (!end || !only_whitespace(end, buf + len)) {
                cJSON_Delete(root);
                *why = "trailing data after the value";
                *at = end ? (size_t)(end - buf) : 0;
                r = -EINVAL;
                goto out;
        }
        if (!annotate(root, &s, &k) || k != s.n_nums) {
                cJSON_Delete(root);
                *why = "unsupported number syntax";
                *at = 0;
                r = -EINVAL;
                goto out;
        }
        *ret = root;
        r = 0;
out:
        free(s.nums);
        return r;
}

int json_parse(const char *buf, size_t len, struct json **ret)
{
        const char *why;
        size_t at;
        cJSON *root;
        int r;

        r = parse_annotated(buf, len, &root, &why, &at);
        if (r < 0)
                return r;
        r = check_duplicates(root);
        if (r < 0) {
                cJSON_Delete(root);
                return r;
        }
        *ret = J(root);
        return 0;
}

/* ---- typed access shared by the getters and the decoder ---- */

static int number_u64(const cJSON *v, uint64_t *ret)
{
        if (!cJSON_IsNumber(v))
                return -EINVAL;
        if (!(v->valueint & NUM_EXACT) || (v->valueint & NUM_NEG))
                return -EINVAL;
        /* Exact literals of at most 2^53 convert without loss. */
        if (!(v->valuedouble >= 0 && v->valuedouble <= (double)MAX_EXACT_U64))
                return -EINVAL;
        *ret = (uint64_t)v->valuedouble;
        return 0;
}

static int number_i64(const cJSON *v, int64_t *ret)
{
        if (!cJSON_IsNumber(v) || !(v->valueint & NUM_EXACT))
                return -EINVAL;
        if (!(v->valuedouble >= -(double)MAX_EXACT_U64 &&
              v->valuedouble <= (double)MAX_EXACT_U64))
                return -EINVAL;
        *ret = (int64_t)v->valuedouble;
        return 0;
}

const struct json *json_get(const struct json *obj, const char *key)
{
        if (!cJSON_IsObject(CC(obj)) || !key)
                return NULL;
        return (const struct json *)cJSON_GetObjectItemCaseSensitive(CC(obj), key);
}

int json_get_u64(const struct json *obj, const char *key, uint64_t *ret)
{
        const cJSON *v = CC(json_get(obj, key));
        if (!v)
                return -ENOENT;
        return number_u64(v, ret);
}

int json_get_i64(const struct json *obj, const char *key, int64_t *ret)
{
        const cJSON *v = CC(json_get(obj, key));
        if (!v)
                return -ENOENT;
        return number_i64(v, ret);
}

int json_get_bool(const struct json *obj, const char *key, bool *ret)
{
        const cJSON *v = CC(json_get(obj, key));
        if (!v)
                return -ENOENT;
        if (!cJSON_IsBool(v))
                return -EINVAL;
        *ret = cJSON_IsTrue(v);
        return 0;
}

int json_get_str(const struct json *obj, const char *key, const char **ret)
{
        const cJSON *v = CC(json_get(obj, key));
        if (!v)
                return -ENOENT;
        if (!cJSON_IsString(v) || !v->valuestring)
                return -EINVAL;
        *ret = v->valuestring;
        return 0;
}

bool json_is_array(const struct json *v)
{
        return cJSON_IsArray(CC(v));
}

bool json_is_object(const struct json *v)
{
        return cJSON_IsObject(CC(v));
}

size_t json_array_len(const struct json *arr)
{
        size_t n = 0;
        if (!cJSON_IsArray(CC(arr)))
                return 0;
        for (const cJSON *c = CC(arr)->child; c; c = c->next)
                n++;
        return n;
}

const struct json *json_array_at(const struct json *arr, size_t i)
{
        if (!cJSON_IsArray(CC(arr)))
                return NULL;
        for (const cJSON *c = CC(arr)->child; c; c = c->next)
                if (i-- == 0)
                        return (const struct json *)c;
        return NULL;
}

/* ---- strict decoding of request bodies ---- */

/* Field names from the wire are cut short in details. */
#define DETAIL_NAME_MAX 64

/* Length of the longest prefix of S of at most MAX bytes that does not end
 * inside a UTF-8 sequence (S is valid UTF-8: the pre-pass checked it). */
static size_t utf8_prefix(const char *s, size_t max)
{
        size_t n = strnlen(s, max + 1);

        if (n <= max)
                return n;
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
                n--;
        return n;
}

static const char *type_word(enum jfield_type t)
{
        switch (t) {
        case JF_U64:
                return "a non-negative integer";
        case JF_BOOL:
                return "a boolean";
        case JF_STRING:
                return "a string";
        }
        return "?";
}

static int check_member(const cJSON *v, const struct jfield *f, struct problem *err)
{
        uint64_t u;

        switch (f->type) {
        case JF_U64:
                if (!cJSON_IsNumber(v))
                        break;
                if (number_u64(v, &u) < 0) {
                        problem_raise(err, PROBLEM_INVALID_FIELD,
                                      "field \"%s\" must be a whole number from 0 to 2^53 "
                                      "written without fraction or exponent",
                                      f->name);
                        return -EINVAL;
                }
                return 0;
        case JF_BOOL:
                if (!cJSON_IsBool(v))
                        break;
                return 0;
        case JF_STRING:
                if (!cJSON_IsString(v) || !v->valuestring)
                        break;
                if (strlen(v->valuestring) + 1 > f->out_len) {
                        problem_raise(err, PROBLEM_INVALID_FIELD,
                                      "field \"%s\" is too long (at most %zu bytes)", f->name,
                                      f->out_len ? f->out_len - 1 : 0);
                        return -EINVAL;
                }
                return 0;
        }
        problem_raise(err, PROBLEM_INVALID_FIELD, "field \"%s\" must be %s",
                      f->name, type_word(f->type));
        return -EINVAL;
}

static void store_member(const cJSON *v, const struct jfield *f)
{
        uint64_t u;

        switch (f->type) {
        case JF_U64:
                if (number_u64(v, &u) == 0)
                        *(uint64_t *)f->out = u;
                break;
        case JF_BOOL:
                *(bool *)f->out = cJSON_IsTrue(v);
                break;
        case JF_STRING:
                memcpy(f->out, v->valuestring, strlen(v->valuestring) + 1);
                break;
        }
        if (f->present)
                *f->present = true;
}

int json_check_keys(const struct json *obj, const char *const *allowed, size_t n, const char *where,
                    struct problem *err)
{
        if (!cJSON_IsObject(CC(obj)))
                return 0;
        for (const cJSON *m = CC(obj)->child; m; m = m->next) {
                const char *key = m->string ? m->string : "";
                size_t i, cut;

                for (i = 0; i < n; i++)
                        if (strcmp(allowed[i], key) == 0)
                                break;
                if (i < n)
                        continue;
                cut = utf8_prefix(key, DETAIL_NAME_MAX);
                problem_raise(err, PROBLEM_INVALID_FIELD, "unknown field \"%.*s\"%s%s%s", (int)cut, key,
                              key[cut] ? "..." : "", where ? " in " : "", where ? where : "");
                return -EINVAL;
        }
        return 0;
}

/* Validate everything first and store afterwards, so a rejected body leaves
 * every output as it was. */
int json_decode(const char *body, size_t len, const struct jfield *fields, size_t n_fields,
                struct problem *err)
{
        _cleanup_free_ const cJSON **match = NULL; /* member per field */
        const char *why = NULL;
        cJSON *root = NULL;
        size_t at = 0;
        int r;

        r = parse_annotated(body, len, &root, &why, &at);
        if (r == -ENOMEM) {
                problem_raise(err, PROBLEM_INTERNAL_ERROR, "out of memory");
                return r;
        }
        if (r < 0) {
                problem_raise(err, PROBLEM_MALFORMED_JSON,
                              "request body is not valid JSON: %s at byte %zu", why, at);
                return -EINVAL;
        }
        if (!cJSON_IsObject(root)) {
                problem_raise(err, PROBLEM_INVALID_FIELD,
                              "request body must be a JSON object");
                r = -EINVAL;
                goto out;
        }
        match = calloc(n_fields ? n_fields : 1, sizeof(*match));
        if (!match) {
                problem_raise(err, PROBLEM_INTERNAL_ERROR, "out of memory");
                r = -ENOMEM;
                goto out;
        }
        for (const cJSON *m = root->child; m; m = m->next) {
                const char *key = m->string ? m->string : "";
                size_t i;

                for (i = 0; i < n_fields; i++)
                        if (strcmp(fields[i].name, key) == 0)
                                break;
                if (i == n_fields) {
                        size_t cut = utf8_prefix(key, DETAIL_NAME_MAX);
                        problem_raise(err, PROBLEM_INVALID_FIELD,
                                      "unknown field \"%.*s\"%s", (int)cut, key,
                                      key[cut] ? "..." : "");
                        r = -EINVAL;
                        goto out;
                }
                if (match[i]) {
                        problem_raise(err, PROBLEM_INVALID_FIELD,
                                      "duplicate field \"%s\"", fields[i].name);
                        r = -EINVAL;
                        goto out;
                }
                r = check_member(m, &fields[i], err);
                if (r < 0)
                        goto out;
                match[i] = m;
        }
        for (size_t i = 0; i < n_fields; i++)
                if (match[i])
                        store_member(match[i], &fields[i]);
        r = 0;
out:
        cJSON_Delete(root);
        return r;
}
