/* json_read.h: the strict getters and the answer path the JSON files share.
 *
 * json.c defines them; json_answers.c and prom_json.c decode with them.
 * Every getter takes a possibly NULL object (a missing parent reads as a
 * missing member) and looks keys up case-sensitively.  "get" getters say
 * whether the member was there with the right type; "opt" getters answer a
 * default (0, false, "") when it was not. */
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
