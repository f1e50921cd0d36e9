/* json: the only module that includes cJSON.  Two halves, one file each:
 *
 * - json.c: a strict, schema-driven decoder for request bodies: keys are
 *   matched case-sensitively, duplicates and unknown keys are rejected,
 *   integers must be whole, >= 0 and <= 2^53 (cJSON keeps numbers as doubles,
 *   and its valueint saturates), strings must not contain NUL;
 * - json_build.c: a small builder for responses that prints integers exactly.
 *
 * Plus generic strict getters for documents we read back ourselves (journal). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct problem;
struct json; /* a JSON value (object, array, ...) */

/* ---- strict decoding of request bodies ---- */
enum jfield_type { JF_U64, JF_BOOL, JF_STRING };

struct jfield {
        const char *name;
        enum jfield_type type;
        void *out;        /* uint64_t *, bool *, or char[out_len] */
        size_t out_len;   /* JF_STRING: buffer size including the NUL */
        bool *present;    /* optional: set to true when the key was given */
};

/* Decode BODY (LEN bytes, need not be NUL-terminated) as one JSON object whose
 * members are exactly a subset of FIELDS.  Returns 0, or -EINVAL with *err set:
 * 400 "malformed-json" for syntax errors, 422 "invalid-field" for a non-object
 * document, unknown or duplicate keys, wrong types, numbers that are not exact
 * non-negative integers <= 2^53, strings too long for their buffer.  Outputs of
 * absent fields are left untouched.  Required-ness is the caller's check. */
int json_decode(const char *body, size_t len, const struct jfield *fields, size_t n_fields,
                struct problem *err);

/* ---- generic strict reading ---- */
/* Parse; caller frees with json_free.  -EINVAL on syntax error or duplicate
 * keys anywhere in the document. */
int json_parse(const char *buf, size_t len, struct json **ret);
void json_free(struct json *v); /* accepts NULL */
/* For documents read with json_parse whose objects the caller walks itself
 * (PUT /v1/stock): refuse a member of object OBJ whose key is not one of
 * ALLOWED (N names, case-sensitive).  0 (also when OBJ is not an object),
 * or -EINVAL with *ERR set to 422 "invalid-field" naming the first unknown
 * key, cut short as json_decode cuts it, and WHERE ("targets[2]"; NULL for
 * the body itself). */
int json_check_keys(const struct json *obj, const char *const *allowed, size_t n, const char *where,
                    struct problem *err);
/* Case-sensitive member lookup; NULL if absent (or V is not an object). */
const struct json *json_get(const struct json *obj, const char *key);
/* Typed member getters: 0, -ENOENT if absent, -EINVAL if of the wrong type or
 * (u64) not an exact non-negative integer <= 2^53. */
int json_get_u64(const struct json *obj, const char *key, uint64_t *ret);
int json_get_i64(const struct json *obj, const char *key, int64_t *ret);
int json_get_bool(const struct json *obj, const char *key, bool *ret);
int json_get_str(const struct json *obj, const char *key, const char **ret); /* borrowed */
bool json_is_array(const struct json *v);
bool json_is_object(const struct json *v);
size_t json_array_len(const struct json *arr);
const struct json *json_array_at(const struct json *arr, size_t i);

/* ---- building ---- */
/* Constructors return NULL only on allocation failure; adders on a NULL
 * parent are no-ops, so a build sequence needs one check at the end (print). */
struct json *json_new_object(void);
struct json *json_new_array(void);
struct json *json_add_object(struct json *obj, const char *key);
struct json *json_add_array(struct json *obj, const char *key);
struct json *json_append_object(struct json *arr);
void json_append_str(struct json *arr, const char *s);
void json_add_u64(struct json *obj, const char *key, uint64_t v);
void json_add_i64(struct json *obj, const char *key, int64_t v);
void json_add_double(struct json *obj, const char *key, double v);
void json_add_str(struct json *obj, const char *key, const char *s); /* NULL -> null */
void json_add_bool(struct json *obj, const char *key, bool b);
void json_add_null(struct json *obj, const char *key);
/* Move CHILD (a value from json_parse or json_new_*) under OBJ as KEY, or to
 * the end of array ARR.  CHILD is owned by the parent afterwards. */
void json_add_value(struct json *obj, const char *key, struct json *child);
void json_append_value(struct json *arr, struct json *child);
/* Compact text; caller frees.  NULL on allocation failure or NULL V. */
char *json_print(const struct json *v);
