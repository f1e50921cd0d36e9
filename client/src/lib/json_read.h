/* json_read.h: the strict getters, the member tables and the answer path
 * the JSON files share.
 *
 * json.c defines them; json_answers.c and prom_json.c decode with them.
 * Every getter takes a possibly NULL object (a missing parent reads as a
 * missing member) and looks keys up case-sensitively.  "get" getters say
 * whether the member was there with the right type; "opt" getters answer a
 * default (0, false, "") when it was not.  A decoder names its plain
 * members in a table of struct hpw_jfield, read by hpw_jfields() through
 * the same getters. */
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* Largest integer a double carries exactly. */
#define HPW_JSON_MAX_EXACT 9007199254740992.0

const cJSON *hpw_jget(const cJSON *o, const char *key);
/* A whole number in [0, 2^53]. */
bool hpw_jget_u64(const cJSON *o, const char *key, uint64_t *ret);
uint64_t hpw_jopt_u64(const cJSON *o, const char *key);
/* A whole number in int's range. */
bool hpw_jget_int(const cJSON *o, const char *key, int *ret);
double hpw_jopt_double(const cJSON *o, const char *key);
bool hpw_jopt_bool(const cJSON *o, const char *key);
/* strdup of a string member, "" when absent or not a string.  NULL only on
 * allocation failure. */
char *hpw_jopt_str(const cJSON *o, const char *key);
/* Unix seconds from a number or an RFC 3339 UTC/offset string; 0 if absent
 * or not a time. */
int64_t hpw_jopt_time(const cJSON *o, const char *key);
/* BODY's LEN bytes, NUL-terminated, malloc'd; NULL on allocation failure. */
char *hpw_jdup_body(const char *body, size_t len);

/* What one plain member is in its struct, and the getter that reads it. */
enum hpw_jkind {
        HPW_J_U64,      /* uint64_t: hpw_jget_u64 / hpw_jopt_u64, [0, 2^53] */
        HPW_J_UNSIGNED, /* unsigned: the uint64_t of HPW_J_U64 cast down, as
                           the decoders always cast it */
        HPW_J_INT,      /* int: hpw_jget_int, 0 when absent or out of range */
        HPW_J_BOOL,     /* bool: hpw_jopt_bool */
        HPW_J_DOUBLE,   /* double: hpw_jopt_double */
        HPW_J_TIME,     /* int64_t unix seconds: hpw_jopt_time */
        HPW_J_STR,      /* char *: hpw_jopt_str's copy, "" when absent */
        HPW_J_CHARS,    /* char[size]: the string cut to fit, "" when absent */
};

/* One member of a table: KEY in the JSON object, its kind, and where it is
 * in the struct (OFF, SIZE).  REQUIRED: absent or of the wrong type, the
 * answer is not one of hpwarmd's (HPW_E_PROTOCOL).  Only the kinds with a
 * strict getter can be required (U64, UNSIGNED, INT, STR, CHARS); a
 * required row of another kind is never satisfied, so a table that asks
 * for one fails its first test. */
struct hpw_jfield {
        const char *key;
        enum hpw_jkind kind;
        size_t off, size;
        bool required;
};

/* The size each kind writes: a row whose field is not that size does not
 * compile, so a table cannot write past its field.  An initializer cannot
 * hold a _Static_assert, a struct can: the check is one in a struct whose
 * size is added times 0. */
#define HPW_JKIND_FITS(kind, size)                                      \
        ((kind) == HPW_J_U64 ? (size) == sizeof(uint64_t) :             \
         (kind) == HPW_J_UNSIGNED ? (size) == sizeof(unsigned) :        \
         (kind) == HPW_J_INT ? (size) == sizeof(int) :                  \
         (kind) == HPW_J_BOOL ? (size) == sizeof(bool) :                \
         (kind) == HPW_J_DOUBLE ? (size) == sizeof(double) :            \
         (kind) == HPW_J_TIME ? (size) == sizeof(int64_t) :             \
         (kind) == HPW_J_STR ? (size) == sizeof(char *) :               \
         (size) > 1)    /* HPW_J_CHARS: a character and the NUL */
#define HPW_JFIELD_(type, key, field, kind, required)                                           \
        { key, kind, offsetof(type, field),                                                     \
          sizeof(((type *)0)->field) + 0 * sizeof(struct {                                      \
                  _Static_assert(HPW_JKIND_FITS(kind, sizeof(((type *)0)->field)),              \
                                 "the field " #field " is not the size of " #kind);             \
                  int fits;                                                                     \
          }),                                                                                   \
          required }
/* A member that must be there (the "get" getters), and one that reads as
 * its default when it is not (the "opt" getters). */
#define HPW_JGET(type, key, field, kind) HPW_JFIELD_(type, key, field, kind, true)
#define HPW_JOPT(type, key, field, kind) HPW_JFIELD_(type, key, field, kind, false)

/* Fill the members of ITEM that the N rows of F name from object O (NULL:
 * every member absent).  Every required member is checked before any is
 * written, so a malformed answer is HPW_E_PROTOCOL however little memory
 * is left; then each row is read in order.  HPW_E_NOMEM when a string
 * cannot be copied: the strings copied so far stay in ITEM for its clear
 * function.  ITEM starts zeroed: a string row overwrites its pointer. */
enum hpw_error hpw_jfields(const cJSON *o, void *item, const struct hpw_jfield *f, size_t n);
/* The same over a whole static table. */
#define HPW_JFIELDS(o, item, table) hpw_jfields(o, item, table, sizeof(table) / sizeof((table)[0]))

/* What hpw_jparse_items() needs to know about one kind of result: the size
 * of one item, how to fill a zeroed item from a JSON object, and how to
 * release what a fill (finished or not) left in an item without freeing the
 * item itself. */
struct hpw_item_kind {
        size_t size;
        enum hpw_error (*from)(const cJSON *o, void *item);
        void (*clear)(void *item);
};
enum hpw_error hpw_jparse_items(const char *body, size_t len, const char *list_key,
                                const struct hpw_item_kind *k, void **ret_items, size_t *ret_n,
                                char **ret_json);
/* The pointer array of a list over one block of N items of SIZE bytes. */
void **hpw_jptr_array(void *items, size_t n, size_t size);
/* A problem object (a problem+json body or a pool's "error") as a new
 * struct; NULL on allocation failure. */
struct hpw_problem *hpw_jproblem_from(const cJSON *o);
