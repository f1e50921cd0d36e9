/* json: the strict reader every answer goes through, problem+json, and the
 * request bodies.
 *
 * cJSON stays behind this file and its siblings (json_answers.c,
 * prom_json.c, placement_json.c, which share the getters here through
 * json_read.h, and the loop that reads a table of members through them,
 * hpw_jfields()).  Reading is forgiving where the API may grow (a missing
 * optional member reads as zero or "") and strict where a wrong shape means
 * the peer is not hpwarmd (the top level must be one object with nothing
 * after it, numbers must be exact whole numbers).  Lookups are
 * case-sensitive: cJSON's default lookup is not.  Times arrive as unix
 * seconds or RFC 3339 strings; both are accepted. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json_read.h"

struct cJSON *hpw_json_parse_object(const char *body, size_t len)
{
        const char *end = NULL;
        cJSON *root;

        if (!body || len == 0)
                return NULL;
        root = cJSON_ParseWithLengthOpts(body, len, &end, false);
        if (!root)
                return NULL;
        /* One value and nothing after it but whitespace: a body with bytes
         * after its object is not an answer, and pasting it into a larger
         * document (fleet --json) would let it forge siblings. */
        for (; end && end < body + len; end++)
                if (!strchr(" \t\r\n", *end) || *end == '\0')
                        break;
        if (!end || end != body + len || !cJSON_IsObject(root)) {
                cJSON_Delete(root);
                return NULL;
        }
        return root;
}

char *hpw_json_reprint(const char *body, size_t len)
{
        cJSON *root = hpw_json_parse_object(body, len);
        char *s;

        if (!root)
                return NULL;
        s = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        return s;
}
const cJSON *hpw_jget(const cJSON *o, const char *key)
{
        return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

bool hpw_jget_u64(const cJSON *o, const char *key, uint64_t *ret)
{
        const cJSON *v = hpw_jget(o, key);
        double d;

        if (!cJSON_IsNumber(v))
                return false;
        d = v->valuedouble;
        if (!(d >= 0) || d > HPW_JSON_MAX_EXACT || floor(d) != d)
                return false;
        *ret = (uint64_t)d;
        return true;
}

uint64_t hpw_jopt_u64(const cJSON *o, const char *key)
{
        uint64_t v = 0;
        hpw_jget_u64(o, key, &v);
        return v;
}

bool hpw_jget_int(const cJSON *o, const char *key, int *ret)
{
        const cJSON *v = hpw_jget(o, key);

        if (!cJSON_IsNumber(v) || v->valuedouble < -2147483648.0 || v->valuedouble > 2147483647.0 ||
            floor(v->valuedouble) != v->valuedouble)
                return false;
        *ret = (int)v->valuedouble;
        return true;
}

double hpw_jopt_double(const cJSON *o, const char *key)
{
        const cJSON *v = hpw_jget(o, key);
        return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

bool hpw_jopt_bool(const cJSON *o, const char *key)
{
        return cJSON_IsTrue(hpw_jget(o, key));
}

/* strdup of a string member, "" when absent or not a string.  NULL only on
 * allocation failure. */
char *hpw_jopt_str(const cJSON *o, const char *key)
{
        const cJSON *v = hpw_jget(o, key);
        return strdup(cJSON_IsString(v) && v->valuestring ? v->valuestring : "");
}

/* Unix seconds from a number or an RFC 3339 UTC/offset string; 0 if absent
 * or not a time (out of range, malformed offset, trailing junk). */
int64_t hpw_jopt_time(const cJSON *o, const char *key)
{
        const cJSON *v = hpw_jget(o, key);
        struct tm tm = { 0 };
        const char *p;
        int64_t t;

        if (cJSON_IsNumber(v)) {
                /* Converting a double outside int64_t is undefined: a number
                 * that no double carries exactly is not a time of ours. */
                double d = v->valuedouble;
                if (!isfinite(d) || d > HPW_JSON_MAX_EXACT || d < -HPW_JSON_MAX_EXACT)
                        return 0;
                return (int64_t)d;
        }
        if (!cJSON_IsString(v) || !v->valuestring)
                return 0;
        p = strptime(v->valuestring, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return 0;
        t = (int64_t)timegm(&tm);
        if (*p == '.')
                while (*++p >= '0' && *p <= '9')
                        ;
        if (*p == 'Z' || *p == 'z')
                return p[1] ? 0 : t;
        if (*p == '+' || *p == '-') {
                /* Exactly "+HH:MM", nothing after. */
                if (!isdigit((unsigned char)p[1]) || !isdigit((unsigned char)p[2]) || p[3] != ':' ||
                    !isdigit((unsigned char)p[4]) || !isdigit((unsigned char)p[5]) || p[6])
                        return 0;
                int hh = (p[1] - '0') * 10 + (p[2] - '0'), mm = (p[4] - '0') * 10 + (p[5] - '0');
                if (hh > 23 || mm > 59)
                        return 0;
                int64_t off = (int64_t)hh * 3600 + mm * 60;
                return *p == '+' ? t - off : t + off;
        }
        return *p ? 0 : t;
}

char *hpw_jdup_body(const char *body, size_t len)
{
        char *s = malloc(len + 1);
        if (s) {
                memcpy(s, body, len);
                s[len] = '\0';
        }
        return s;
}

/* ---- member tables ---- */

/* Whether row F's member of O is there with its type, by the "get" getter
 * the row's "opt" read calls. */
static bool jfield_present(const cJSON *o, const struct hpw_jfield *f)
{
        const cJSON *v;
        uint64_t u;
        int i;

        switch (f->kind) {
        case HPW_J_U64:
        case HPW_J_UNSIGNED:
                return hpw_jget_u64(o, f->key, &u);
        case HPW_J_INT:
                return hpw_jget_int(o, f->key, &i);
        case HPW_J_STR:
        case HPW_J_CHARS:
                v = hpw_jget(o, f->key);
                return cJSON_IsString(v) && v->valuestring;
        default:
                /* No strict getter to ask: a table cannot require it. */
                return false;
        }
}

/* Row F's member of O into its field AT: the getter's value, or the
 * default the getter answers when the member is absent or of another type. */
static enum hpw_error jfield_read(const cJSON *o, char *at, const struct hpw_jfield *f)
{
        const cJSON *v;

        switch (f->kind) {
        case HPW_J_U64:
                *(uint64_t *)(void *)at = hpw_jopt_u64(o, f->key);
                break;
        case HPW_J_UNSIGNED:
                /* Cast down, not refused: what the decoders did before the
                 * tables, and what a caller of 0.x sees. */
                *(unsigned *)(void *)at = (unsigned)hpw_jopt_u64(o, f->key);
                break;
        case HPW_J_INT:
                if (!hpw_jget_int(o, f->key, (int *)(void *)at))
                        *(int *)(void *)at = 0;
                break;
        case HPW_J_BOOL:
                *(bool *)(void *)at = hpw_jopt_bool(o, f->key);
                break;
        case HPW_J_DOUBLE:
                *(double *)(void *)at = hpw_jopt_double(o, f->key);
                break;
        case HPW_J_TIME:
                *(int64_t *)(void *)at = hpw_jopt_time(o, f->key);
                break;
        case HPW_J_STR:
                if (!(*(char **)(void *)at = hpw_jopt_str(o, f->key)))
                        return HPW_E_NOMEM;
                break;
        case HPW_J_CHARS:
                v = hpw_jget(o, f->key);
                snprintf(at, f->size, "%s", cJSON_IsString(v) && v->valuestring ? v->valuestring : "");
                break;
        }
        return HPW_OK;
}

/* Two passes over one table: the checks first, so that which error a
 * malformed answer gives does not depend on an allocation, then the reads. */
enum hpw_error hpw_jfields(const cJSON *o, void *item, const struct hpw_jfield *f, size_t n)
{
        enum hpw_error err;

        for (size_t i = 0; i < n; i++)
                if (f[i].required && !jfield_present(o, &f[i]))
                        return HPW_E_PROTOCOL;
        for (size_t i = 0; i < n; i++)
                if ((err = jfield_read(o, (char *)item + f[i].off, &f[i])) != HPW_OK)
                        return err;
        return HPW_OK;
}

/* The one parse -> allocate -> fill -> keep-the-body path behind every
 * answer that has a ->json member.  With LIST_KEY NULL the top-level object is
 * one item; otherwise the array member LIST_KEY holds one object per item.
 * On success the caller owns *ret_items (a calloc'd array of *ret_n items,
 * NULL when the list is empty) and *ret_json (the body, NUL-terminated).  On
 * failure nothing stays allocated and nothing is written. */
enum hpw_error hpw_jparse_items(const char *body, size_t len, const char *list_key,
                                  const struct hpw_item_kind *k, void **ret_items, size_t *ret_n,
                                  char **ret_json)
{
        cJSON *root = hpw_json_parse_object(body, len);
        const cJSON *arr = NULL, *e;
        char *items = NULL, *json = NULL;
        enum hpw_error err = HPW_OK;
        size_t n = 1, i = 0;

        if (!root)
                return HPW_E_PROTOCOL;
        if (list_key) {
                arr = hpw_jget(root, list_key);
                if (!cJSON_IsArray(arr)) {
                        cJSON_Delete(root);
                        return HPW_E_PROTOCOL;
                }
                n = (size_t)cJSON_GetArraySize(arr);
                if (n > HPW_MAX_ITEMS) {
                        cJSON_Delete(root);
                        return HPW_E_PROTOCOL;
                }
        }
        if (n && !(items = calloc(n, k->size))) {
                cJSON_Delete(root);
                return HPW_E_NOMEM;
        }
        if (!list_key) {
                err = k->from(root, items);
        } else {
                cJSON_ArrayForEach(e, arr) {
                        err = k->from(e, items + i++ * k->size);
                        if (err != HPW_OK)
                                break;
                }
        }
        cJSON_Delete(root);
        if (err == HPW_OK && !(json = hpw_jdup_body(body, len)))
                err = HPW_E_NOMEM;
        if (err != HPW_OK) {
                /* calloc'd items that were never reached clear as no-ops. */
                for (i = 0; i < n; i++)
                        k->clear(items + i * k->size);
                free(items);
                return err;
        }
        *ret_items = items;
        *ret_n = n;
        *ret_json = json;
        return HPW_OK;
}

/* Lists reach their items through pointers (the ABI rule in hpwarm.h: a
 * caller never depends on an item's size).  The items themselves stay one
 * calloc'd block, ITEMS; the pointer array points into it, and its first
 * pointer is the block, which is how the list frees it.  NULL when N is 0;
 * on allocation failure NULL with ITEMS untouched. */
void **hpw_jptr_array(void *items, size_t n, size_t size)
{
        void **v;

        if (n == 0)
                return NULL;
        v = calloc(n, sizeof(*v));
        if (!v)
                return NULL;
        for (size_t i = 0; i < n; i++)
                v[i] = (char *)items + i * size;
        return v;
}

/* ---- problem ---- */

/* Every member of a problem is optional: a problem from another server
 * still reads, with "" and 0 where it says nothing. */
static const struct hpw_jfield problem_fields[] = {
        HPW_JOPT(struct hpw_problem, "type", type, HPW_J_STR),
        HPW_JOPT(struct hpw_problem, "title", title, HPW_J_STR),
        HPW_JOPT(struct hpw_problem, "detail", detail, HPW_J_STR),
        HPW_JOPT(struct hpw_problem, "status", status, HPW_J_INT),
        HPW_JOPT(struct hpw_problem, "requested", requested, HPW_J_U64),
        HPW_JOPT(struct hpw_problem, "achieved", achieved, HPW_J_U64),
        HPW_JOPT(struct hpw_problem, "memory_floor_bytes", memory_floor_bytes, HPW_J_U64),
        HPW_JOPT(struct hpw_problem, "max_count", max_count, HPW_J_U64),
};

struct hpw_problem *hpw_jproblem_from(const cJSON *o)
{
        struct hpw_problem *p = calloc(1, sizeof(*p));
        const char *colon, *slash;

        if (!p)
                return NULL;
        if (HPW_JFIELDS(o, p, problem_fields) != HPW_OK)
                goto nomem;
        /* The slug is what follows the type's last ':' or '/'. */
        colon = strrchr(p->type, ':');
        slash = strrchr(p->type, '/');
        if (slash && (!colon || slash > colon))
                colon = slash;
        p->slug = strdup(colon ? colon + 1 : p->type);
        if (!p->slug)
                goto nomem;
        /* Only our own namespace names a slug of the catalog. */
        if (strncmp(p->type, "urn:hpwarm:problem:", 19) == 0)
                p->code = hpw_slug_from_name(p->slug);
        return p;
nomem:
        hpw_problem_free(p);
        return NULL;
}

enum hpw_error hpw_json_problem(const char *body, size_t len, struct hpw_problem **ret)
{
        cJSON *root = hpw_json_parse_object(body, len);
        struct hpw_problem *p;

        if (!root)
                return HPW_E_PROTOCOL;
        p = hpw_jproblem_from(root);
        cJSON_Delete(root);
        if (!p)
                return HPW_E_NOMEM;
        *ret = p;
        return HPW_OK;
}

/* ---- request bodies ---- */

/* Integers are printed by us, not by cJSON's %g-ish double printer, so a
 * byte count above 2^31 goes out exactly. */
char *hpw_json_reserve_body(uint64_t count, bool allow_partial)
{
        char *s = NULL;

        if (asprintf(&s, "{\"count\":%llu,\"allow_partial\":%s}", (unsigned long long)count,
                     allow_partial ? "true" : "false") < 0)
                return NULL;
        return s;
}

char *hpw_json_elastic_body(const struct hpw_elastic_policy *p)
{
        char *s = NULL;

        if (asprintf(&s, "{\"min\":%llu,\"max\":%llu,\"headroom\":%llu,\"idle_seconds\":%llu,"
                     "\"allow_best_effort\":%s}", (unsigned long long)p->min, (unsigned long long)p->max,
                     (unsigned long long)p->headroom, (unsigned long long)p->idle_seconds,
                     p->allow_best_effort ? "true" : "false") < 0)
                return NULL;
        return s;
}

char *hpw_json_warm_body(const struct hpw_warm_request *req)
{
        char ps[32] = "", *s = NULL;
        char *pp = NULL, *pt = NULL, *pl = NULL, *lb = NULL;
        const char *label = req->size >= HPW_END_OF(struct hpw_warm_request, label) ? req->label : NULL;
        bool owned = req->size >= HPW_END_OF(struct hpw_warm_request, file_gid) && req->file_owned;
        int rc;

        if (req->page_size) {
                hpw_format_page_size(req->page_size, ps, sizeof(ps));
                if (asprintf(&pp, ",\"page_size\":\"%s\"", ps) < 0)
                        pp = NULL;
        } else {
                pp = strdup("");
        }
        if (req->threads)
                rc = asprintf(&pt, ",\"threads\":%u", req->threads);
        else
                rc = (pt = strdup("")) ? 0 : -1;
        if (rc < 0)
                pt = NULL;
        if (req->ttl_seconds)
                rc = asprintf(&pl, ",\"ttl_seconds\":%llu", (unsigned long long)req->ttl_seconds);
        else
                rc = (pl = strdup("")) ? 0 : -1;
        if (rc < 0)
                pl = NULL;
        if (label && label[0]) {
                /* Escaped by the builder: the server judges the text. */
                cJSON *v = cJSON_CreateString(label);
                char *q = v ? cJSON_PrintUnformatted(v) : NULL;
                if (!q || asprintf(&lb, ",\"label\":%s", q) < 0)
                        lb = NULL;
                free(q);
                cJSON_Delete(v);
        } else {
                lb = strdup("");
        }
        char own[64] = "";
        if (owned)
                snprintf(own, sizeof(own), ",\"file_uid\":%u,\"file_gid\":%u", req->file_uid, req->file_gid);
        if (pp && pt && pl && lb &&
            asprintf(&s, "{\"node\":%d,\"size_bytes\":%llu%s%s%s%s%s,\"reserve\":%s}", req->node,
                     (unsigned long long)req->size_bytes, pp, pt, pl, lb, own, req->reserve ? "true" : "false") < 0)
                s = NULL;
        free(pp);
        free(pt);
        free(pl);
        free(lb);
        return s;
}

char *hpw_json_stock_body(const struct hpw_stock_target *const *t, size_t n)
{
        char *s = strdup("{\"targets\":["), *next;

        for (size_t i = 0; s && i < n; i++) {
                char ps[32];

                hpw_format_page_size(t[i]->page_size_bytes, ps, sizeof(ps));
                if (asprintf(&next, "%s%s{\"node\":%d,\"page_size\":\"%s\",\"size_bytes\":%llu,\"count\":%llu}", s,
                             i ? "," : "", t[i]->node, ps, (unsigned long long)t[i]->size_bytes,
                             (unsigned long long)t[i]->count) < 0)
                        next = NULL;
                free(s);
                s = next;
        }
        if (s) {
                next = NULL;
                if (asprintf(&next, "%s]}", s) < 0)
                        next = NULL;
                free(s);
                s = next;
        }
        return s;
}
