/* json_build: the response and journal builder, the other file that includes
 * cJSON (json.c, the strict reader, is the first).
 *
 * Integers are stored as raw number text printed with PRIu64 / PRId64, so they
 * are exact at any size (cJSON would keep a double).  If an allocation fails
 * while adding a member, the parent is turned into a cJSON_Invalid node, which
 * makes cJSON's printer fail: a build sequence needs one check, at json_print.
 * Adders on a NULL parent are no-ops for the same reason.  json_free, which
 * frees a parsed value as well as a built one, lives here too: the error
 * catalog (problem.c) builds and frees its answers with this file alone, and
 * json.c, the reader that raises problems, stays above both. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "json.h"

/* struct json is cJSON under another name, for the rest of the daemon. */
static cJSON *C(struct json *v) { return (cJSON *)v; }
static const cJSON *CC(const struct json *v) { return (const cJSON *)v; }
static struct json *J(cJSON *v) { return (struct json *)v; }

/* Make PARENT unprintable after a failed allocation (see the top). */
static void poison(cJSON *parent)
{
        if (parent)
                parent->type = cJSON_Invalid;
}

static void add_item(struct json *obj, const char *key, cJSON *item)
{
        if (!obj) {
                cJSON_Delete(item);
                return;
        }
        if (!item || !key || !cJSON_AddItemToObject(C(obj), key, item)) {
                cJSON_Delete(item);
                poison(C(obj));
        }
}

static void append_item(struct json *arr, cJSON *item)
{
        if (!arr) {
                cJSON_Delete(item);
                return;
        }
        if (!item || !cJSON_AddItemToArray(C(arr), item)) {
                cJSON_Delete(item);
                poison(C(arr));
        }
}

struct json *json_new_object(void)
{
        return J(cJSON_CreateObject());
}

struct json *json_new_array(void)
{
        return J(cJSON_CreateArray());
}

struct json *json_add_object(struct json *obj, const char *key)
{
        cJSON *o;
        if (!obj)
                return NULL;
        o = cJSON_CreateObject();
        add_item(obj, key, o);
        return o && C(obj)->type != cJSON_Invalid ? J(o) : NULL;
}

struct json *json_add_array(struct json *obj, const char *key)
{
        cJSON *a;
        if (!obj)
                return NULL;
        a = cJSON_CreateArray();
        add_item(obj, key, a);
        return a && C(obj)->type != cJSON_Invalid ? J(a) : NULL;
}

struct json *json_append_object(struct json *arr)
{
        cJSON *o;
        if (!arr)
                return NULL;
        o = cJSON_CreateObject();
        append_item(arr, o);
        return o && C(arr)->type != cJSON_Invalid ? J(o) : NULL;
}

void json_append_str(struct json *arr, const char *s)
{
        if (!arr)
                return;
        append_item(arr, s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

/* An integer as raw number text (see the top of the file). */
static void add_integer(struct json *obj, const char *key, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void add_integer(struct json *obj, const char *key, const char *fmt, ...)
{
        char buf[24];
        va_list ap;

        if (!obj)
                return;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        add_item(obj, key, cJSON_CreateRaw(buf));
}

void json_add_u64(struct json *obj, const char *key, uint64_t v) { add_integer(obj, key, "%" PRIu64, v); }

void json_add_i64(struct json *obj, const char *key, int64_t v) { add_integer(obj, key, "%" PRId64, v); }

void json_add_double(struct json *obj, const char *key, double v)
{
        if (!obj)
                return;
        /* cJSON prints NaN and infinities as null. */
        add_item(obj, key, cJSON_CreateNumber(v));
}

void json_add_str(struct json *obj, const char *key, const char *s)
{
        if (!obj)
                return;
        add_item(obj, key, s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

void json_add_bool(struct json *obj, const char *key, bool b)
{
        if (!obj)
                return;
        add_item(obj, key, cJSON_CreateBool(b));
}

void json_add_null(struct json *obj, const char *key)
{
        if (!obj)
                return;
        add_item(obj, key, cJSON_CreateNull());
}

void json_add_value(struct json *obj, const char *key, struct json *child)
{
        if (!obj) {
                cJSON_Delete(C(child));
                return;
        }
        add_item(obj, key, C(child));
}

void json_append_value(struct json *arr, struct json *child)
{
        append_item(arr, C(child));
}

char *json_print(const struct json *v)
{
        if (!v)
                return NULL;
        return cJSON_PrintUnformatted(CC(v));
}

void json_free(struct json *v)
{
        cJSON_Delete(C(v));
}
