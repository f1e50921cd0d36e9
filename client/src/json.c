/* json: the library's only contact with cJSON.
 *
 * Turns server answers into the public structs and builds the two request
 * bodies.  Reading is deliberately forgiving where the API may grow (unknown
 * members are ignored, optional members default to zero or "") and strict
 * where a wrong shape means the peer is not hpwarmd (the top level must be an
 * object, required members must have the right type).  Lookups are
 * case-sensitive: cJSON's default lookup is not.  Times arrive as unix seconds
 * or RFC 3339 strings; both are accepted. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Largest integer a double carries exactly. */
#define JSON_MAX_EXACT 9007199254740992.0

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

static const cJSON *get(const cJSON *o, const char *key)
{
        return o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static bool get_u64(const cJSON *o, const char *key, uint64_t *ret)
{
        const cJSON *v = get(o, key);
        double d;

        if (!cJSON_IsNumber(v))
                return false;
        d = v->valuedouble;
        if (!(d >= 0) || d > JSON_MAX_EXACT || floor(d) != d)
                return false;
        *ret = (uint64_t)d;
        return true;
}

static uint64_t opt_u64(const cJSON *o, const char *key)
{
        uint64_t v = 0;
        get_u64(o, key, &v);
        return v;
}

static bool get_int(const cJSON *o, const char *key, int *ret)
{
        const cJSON *v = get(o, key);

        if (!cJSON_IsNumber(v) || v->valuedouble < -2147483648.0 || v->valuedouble > 2147483647.0 ||
            floor(v->valuedouble) != v->valuedouble)
                return false;
        *ret = (int)v->valuedouble;
        return true;
}

static double opt_double(const cJSON *o, const char *key)
{
        const cJSON *v = get(o, key);
        return cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

static bool opt_bool(const cJSON *o, const char *key)
{
        return cJSON_IsTrue(get(o, key));
}

/* strdup of a string member, "" when absent or not a string.  NULL only on
 * allocation failure. */
static char *opt_str(const cJSON *o, const char *key)
{
        const cJSON *v = get(o, key);
        return strdup(cJSON_IsString(v) && v->valuestring ? v->valuestring : "");
}

/* Unix seconds from a number or an RFC 3339 UTC/offset string; 0 if absent
 * or not a time (out of range, malformed offset, trailing junk). */
static int64_t opt_time(const cJSON *o, const char *key)
{
        const cJSON *v = get(o, key);
        struct tm tm = { 0 };
        const char *p;
        int64_t t;

        if (cJSON_IsNumber(v)) {
                /* Converting a double outside int64_t is undefined: a number
                 * that no double carries exactly is not a time of ours. */
                double d = v->valuedouble;
                if (!isfinite(d) || d > JSON_MAX_EXACT || d < -JSON_MAX_EXACT)
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

static char *dup_body(const char *body, size_t len)
{
        char *s = malloc(len + 1);
        if (s) {
                memcpy(s, body, len);
                s[len] = '\0';
        }
        return s;
}

/* What parse_items() needs to know about one kind of result: the size of one
 * item, how to fill a zeroed item from a JSON object, and how to release what
 * a fill (finished or not) left in an item without freeing the item itself. */
struct item_kind {
        size_t size;
        enum hpw_error (*from)(const cJSON *o, void *item);
        void (*clear)(void *item);
};

/* The one parse -> allocate -> fill -> keep-the-body path behind every
 * answer that has a ->json member.  With LIST_KEY NULL the top-level object is
 * one item; otherwise the array member LIST_KEY holds one object per item.
 * On success the caller owns *ret_items (a calloc'd array of *ret_n items,
 * NULL when the list is empty) and *ret_json (the body, NUL-terminated).  On
 * failure nothing stays allocated and nothing is written. */
static enum hpw_error parse_items(const char *body, size_t len, const char *list_key,
                                  const struct item_kind *k, void **ret_items, size_t *ret_n,
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
                arr = get(root, list_key);
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
        if (err == HPW_OK && !(json = dup_body(body, len)))
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
static void **ptr_array(void *items, size_t n, size_t size)
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

void hpw_problem_free(struct hpw_problem *p)
{
        if (!p)
                return;
        free(p->type);
        free(p->slug);
        free(p->title);
        free(p->detail);
        free(p);
}

static struct hpw_problem *problem_from(const cJSON *o)
{
        struct hpw_problem *p = calloc(1, sizeof(*p));
        const char *colon;

        if (!p)
                return NULL;
        p->type = opt_str(o, "type");
        p->title = opt_str(o, "title");
        p->detail = opt_str(o, "detail");
        get_int(o, "status", &p->status);
        p->requested = opt_u64(o, "requested");
        p->achieved = opt_u64(o, "achieved");
        p->memory_floor_bytes = opt_u64(o, "memory_floor_bytes");
        p->max_count = opt_u64(o, "max_count");
        if (p->type) {
                colon = strrchr(p->type, ':');
                const char *slash = strrchr(p->type, '/');
                if (slash && (!colon || slash > colon))
                        colon = slash;
                p->slug = strdup(colon ? colon + 1 : p->type);
                /* Only our own namespace names a slug of the catalog. */
                if (p->slug && strncmp(p->type, "urn:hpwarm:problem:", 19) == 0)
                        p->code = hpw_slug_from_name(p->slug);
        }
        if (!p->type || !p->title || !p->detail || !p->slug) {
                hpw_problem_free(p);
                return NULL;
        }
        return p;
}

enum hpw_error hpw_json_problem(const char *body, size_t len, struct hpw_problem **ret)
{
        cJSON *root = hpw_json_parse_object(body, len);
        struct hpw_problem *p;

        if (!root)
                return HPW_E_PROTOCOL;
        p = problem_from(root);
        cJSON_Delete(root);
        if (!p)
                return HPW_E_NOMEM;
        *ret = p;
        return HPW_OK;
}

/* ---- health ---- */

static void health_clear(void *item)
{
        struct hpw_health *x = item;

        free(x->status);
        free(x->version);
        free(x->json);
}

void hpw_health_free(struct hpw_health *x)
{
        if (!x)
                return;
        health_clear(x);
        free(x);
}

static enum hpw_error health_from(const cJSON *o, void *item)
{
        struct hpw_health *x = item;

        if (!cJSON_IsString(get(o, "status")))
                return HPW_E_PROTOCOL;
        x->status = opt_str(o, "status");
        x->version = opt_str(o, "version");
        return x->status && x->version ? HPW_OK : HPW_E_NOMEM;
}

static const struct item_kind health_kind = {
        .size = sizeof(struct hpw_health),
        .from = health_from,
        .clear = health_clear,
};

enum hpw_error hpw_json_health(const char *body, size_t len, struct hpw_health **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = parse_items(body, len, NULL, &health_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
}

/* ---- nodes ---- */

void hpw_node_clear(struct hpw_node *n)
{
        free(n->cpus);
        if (n->hugepages)
                free(n->hugepages[0]);
        free(n->hugepages);
        free(n->json);
        memset(n, 0, sizeof(*n));
}

void hpw_node_free(struct hpw_node *x)
{
        if (!x)
                return;
        hpw_node_clear(x);
        free(x);
}

void hpw_node_list_free(struct hpw_node_list *x)
{
        if (!x)
                return;
        for (size_t i = 0; i < x->n; i++)
                hpw_node_clear(x->nodes[i]);
        if (x->nodes)
                free(x->nodes[0]);
        free(x->nodes);
        free(x->json);
        free(x);
}

/* Fill *N from object O.  On failure *N may hold partial allocations that
 * hpw_node_clear() releases. */
static enum hpw_error node_from(const cJSON *o, void *item)
{
        struct hpw_node *n = item;
        const cJSON *hp = get(o, "hugepages"), *e, *mem = get(o, "memory");
        size_t i = 0;
        uint64_t cc = 0;

        if (!cJSON_IsObject(o) || !get_int(o, "id", &n->id))
                return HPW_E_PROTOCOL;
        n->cpus = opt_str(o, "cpus");
        if (!n->cpus)
                return HPW_E_NOMEM;
        get_u64(o, "cpu_count", &cc);
        n->cpu_count = (unsigned)cc;
        n->memory_total_bytes = opt_u64(mem, "total_bytes");
        n->memory_free_bytes = opt_u64(mem, "free_bytes");
        if (hp && !cJSON_IsArray(hp))
                return HPW_E_PROTOCOL;
        n->n_hugepages = (size_t)cJSON_GetArraySize(hp);
        if (n->n_hugepages > HPW_MAX_ITEMS) {
                n->n_hugepages = 0;
                return HPW_E_PROTOCOL;
        }
        if (n->n_hugepages == 0)
                return HPW_OK;
        struct hpw_hugepages *block = calloc(n->n_hugepages, sizeof(*block));
        if (!block)
                return HPW_E_NOMEM;
        n->hugepages = (struct hpw_hugepages **)ptr_array(block, n->n_hugepages, sizeof(*block));
        if (!n->hugepages) {
                free(block);
                return HPW_E_NOMEM;
        }
        cJSON_ArrayForEach(e, hp) {
                struct hpw_hugepages *h = n->hugepages[i++];
                if (!cJSON_IsObject(e) || !get_u64(e, "page_size_bytes", &h->page_size_bytes))
                        return HPW_E_PROTOCOL;
                h->total = opt_u64(e, "total");
                h->free = opt_u64(e, "free");
                /* Older daemons do not report it: what they call free is
                 * the best bound there is. */
                h->available_reported = get_u64(e, "available", &h->available);
                if (!h->available_reported)
                        h->available = h->free;
                h->surplus = opt_u64(e, "surplus");
                h->warm = opt_u64(e, "warm");
                h->warming = opt_u64(e, "warming");
                const cJSON *rg = get(e, "runtime_growth");
                if (cJSON_IsString(rg))
                        snprintf(h->runtime_growth, sizeof(h->runtime_growth), "%s", rg->valuestring);
                const cJSON *el = get(e, "elastic");
                if (cJSON_IsObject(el)) {
                        h->elastic = true;
                        h->elastic_min = opt_u64(el, "min");
                        h->elastic_max = opt_u64(el, "max");
                        h->elastic_headroom = opt_u64(el, "headroom");
                        h->elastic_idle_seconds = opt_u64(el, "idle_seconds");
                }
        }
        return HPW_OK;
}

static void node_clear(void *item)
{
        hpw_node_clear(item);
}

static const struct item_kind node_kind = {
        .size = sizeof(struct hpw_node),
        .from = node_from,
        .clear = node_clear,
};

enum hpw_error hpw_json_node(const char *body, size_t len, struct hpw_node **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = parse_items(body, len, NULL, &node_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
}

enum hpw_error hpw_json_node_list(const char *body, size_t len, struct hpw_node_list **ret)
{
        struct hpw_node_list *x = calloc(1, sizeof(*x));
        void *items;
        enum hpw_error err;

        if (!x)
                return HPW_E_NOMEM;
        err = parse_items(body, len, "nodes", &node_kind, &items, &x->n, &x->json);
        if (err != HPW_OK) {
                free(x);
                return err;
        }
        x->nodes = (struct hpw_node **)ptr_array(items, x->n, sizeof(struct hpw_node));
        if (x->n && !x->nodes) {
                for (size_t i = 0; i < x->n; i++)
                        hpw_node_clear((struct hpw_node *)items + i);
                free(items);
                free(x->json);
                free(x);
                return HPW_E_NOMEM;
        }
        *ret = x;
        return HPW_OK;
}

/* ---- reserve ---- */

void hpw_reserve_result_free(struct hpw_reserve_result *x)
{
        if (!x)
                return;
        free(x->json);
        free(x);
}

static enum hpw_error reserve_from(const cJSON *o, void *item)
{
        struct hpw_reserve_result *x = item;

        if (!get_int(o, "node", &x->node) || !get_u64(o, "total", &x->total))
                return HPW_E_PROTOCOL;
        x->page_size_bytes = opt_u64(o, "page_size_bytes");
        x->requested = opt_u64(o, "requested");
        x->free = opt_u64(o, "free");
        /* Absent "complete" means the server had nothing to report short. */
        x->complete = get(o, "complete") ? opt_bool(o, "complete") : true;
        return HPW_OK;
}

/* A reserve result owns nothing but its ->json, which parse_items() sets only
 * on success. */
static void reserve_clear(void *item)
{
        (void)item;
}

static const struct item_kind reserve_kind = {
        .size = sizeof(struct hpw_reserve_result),
        .from = reserve_from,
        .clear = reserve_clear,
};

enum hpw_error hpw_json_reserve(const char *body, size_t len, struct hpw_reserve_result **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = parse_items(body, len, NULL, &reserve_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
}

/* ---- elastic policies ---- */

void hpw_elastic_free(struct hpw_elastic *x)
{
        if (!x)
                return;
        free(x->json);
        free(x);
}

static enum hpw_error elastic_from(const cJSON *o, void *item)
{
        struct hpw_elastic *x = item;

        if (!get_int(o, "node", &x->node) || !get_u64(o, "max", &x->policy.max))
                return HPW_E_PROTOCOL;
        x->page_size_bytes = opt_u64(o, "page_size_bytes");
        x->policy.min = opt_u64(o, "min");
        x->policy.headroom = opt_u64(o, "headroom");
        x->policy.idle_seconds = opt_u64(o, "idle_seconds");
        x->policy.allow_best_effort = opt_bool(o, "allow_best_effort");
        const cJSON *rg = get(o, "runtime_growth");
        if (cJSON_IsString(rg))
                snprintf(x->runtime_growth, sizeof(x->runtime_growth), "%s", rg->valuestring);
        x->grown_pages = opt_u64(o, "grown_pages");
        x->returned_pages = opt_u64(o, "returned_pages");
        return HPW_OK;
}

/* Owns nothing but its ->json (set by parse_items on success). */
static void elastic_clear(void *item)
{
        (void)item;
}

static const struct item_kind elastic_kind = {
        .size = sizeof(struct hpw_elastic),
        .from = elastic_from,
        .clear = elastic_clear,
};

enum hpw_error hpw_json_elastic(const char *body, size_t len, struct hpw_elastic **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = parse_items(body, len, NULL, &elastic_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
}

/* ---- pools ---- */

static enum hpw_pool_state state_parse(const char *s)
{
        if (strcmp(s, "warming") == 0)
                return HPW_POOL_WARMING;
        if (strcmp(s, "ready") == 0)
                return HPW_POOL_READY;
        if (strcmp(s, "failed") == 0)
                return HPW_POOL_FAILED;
        if (strcmp(s, "cancelled") == 0)
                return HPW_POOL_CANCELLED;
        return HPW_POOL_UNKNOWN;
}

void hpw_pool_clear(struct hpw_pool *p)
{
        free(p->name);
        free(p->state_name);
        hpw_problem_free(p->error);
        free(p->path);
        free(p->handoff_qemu);
        free(p->handoff_cloud_hypervisor);
        free(p->from_stock);
        free(p->label);
        free(p->json);
        memset(p, 0, sizeof(*p));
}

void hpw_pool_free(struct hpw_pool *x)
{
        if (!x)
                return;
        hpw_pool_clear(x);
        free(x);
}

void hpw_pool_list_free(struct hpw_pool_list *x)
{
        if (!x)
                return;
        for (size_t i = 0; i < x->n; i++)
                hpw_pool_clear(x->pools[i]);
        if (x->pools)
                free(x->pools[0]);
        free(x->pools);
        free(x->json);
        free(x);
}

static enum hpw_error pool_from(const cJSON *o, void *item)
{
        struct hpw_pool *p = item;
        const cJSON *err, *pl = get(o, "placement"), *ho = get(o, "handoff");
        uint64_t th = 0;

        if (!cJSON_IsObject(o) || !cJSON_IsString(get(o, "name")) || !cJSON_IsString(get(o, "state")))
                return HPW_E_PROTOCOL;
        p->name = opt_str(o, "name");
        p->state_name = opt_str(o, "state");
        p->path = opt_str(o, "path");
        p->handoff_qemu = opt_str(ho, "qemu");
        p->handoff_cloud_hypervisor = opt_str(ho, "cloud_hypervisor");
        p->from_stock = opt_str(o, "from_stock");
        p->label = opt_str(o, "label");
        if (!p->name || !p->state_name || !p->path || !p->handoff_qemu || !p->handoff_cloud_hypervisor ||
            !p->from_stock || !p->label)
                return HPW_E_NOMEM;
        p->state = state_parse(p->state_name);
        if (!get_int(o, "node", &p->node))
                p->node = -1;
        p->page_size_bytes = opt_u64(o, "page_size_bytes");
        p->size_bytes = opt_u64(o, "size_bytes");
        p->bytes_done = opt_u64(o, "bytes_done");
        p->rate_bytes_per_second = opt_double(o, "rate_bytes_per_second");
        get_u64(o, "threads", &th);
        p->threads = (unsigned)th;
        p->started_at = opt_time(o, "started_at");
        p->finished_at = opt_time(o, "finished_at");
        p->elapsed_seconds = opt_double(o, "elapsed_seconds");
        p->placement_verified = opt_bool(pl, "verified");
        p->pages_off_node = opt_u64(pl, "pages_off_node");
        p->claimed = opt_bool(o, "claimed");
        p->expires_at = opt_time(o, "expires_at");
        p->ttl_seconds = opt_u64(o, "ttl_seconds");
        if (!get_int(o, "owner_pid", &p->owner_pid) || p->owner_pid < 0)
                p->owner_pid = 0;    /* null (no owner) or absent */
        p->unmapped_since = opt_time(o, "unmapped_since");
        {
                uint64_t fu, fg;
                if (get_u64(o, "file_uid", &fu) && get_u64(o, "file_gid", &fg) && fu < UINT32_MAX &&
                    fg < UINT32_MAX) {
                        p->file_owned = true;
                        p->file_uid = (uint32_t)fu;
                        p->file_gid = (uint32_t)fg;
                }
        }
        err = get(o, "error");
        if (cJSON_IsObject(err)) {
                p->error = problem_from(err);
                if (!p->error)
                        return HPW_E_NOMEM;
        }
        return HPW_OK;
}

static void pool_clear(void *item)
{
        hpw_pool_clear(item);
}

static const struct item_kind pool_kind = {
        .size = sizeof(struct hpw_pool),
        .from = pool_from,
        .clear = pool_clear,
};

enum hpw_error hpw_json_pool(const char *body, size_t len, struct hpw_pool **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = parse_items(body, len, NULL, &pool_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
}

enum hpw_error hpw_json_pool_list(const char *body, size_t len, struct hpw_pool_list **ret)
{
        struct hpw_pool_list *x = calloc(1, sizeof(*x));
        void *items;
        enum hpw_error err;

        if (!x)
                return HPW_E_NOMEM;
        err = parse_items(body, len, "pools", &pool_kind, &items, &x->n, &x->json);
        if (err != HPW_OK) {
                free(x);
                return err;
        }
        x->pools = (struct hpw_pool **)ptr_array(items, x->n, sizeof(struct hpw_pool));
        if (x->n && !x->pools) {
                for (size_t i = 0; i < x->n; i++)
                        hpw_pool_clear((struct hpw_pool *)items + i);
                free(items);
                free(x->json);
                free(x);
                return HPW_E_NOMEM;
        }
        *ret = x;
        return HPW_OK;
}

/* Paging (GET /v1/pools?limit=&after=): one page at a time into *ACC.
 * The first page becomes *ACC; each later one has its pools moved onto the
 * end of it, and ACC's text becomes one {"pools":[...]} document of all of
 * them (what an unpaged answer holds).  *RET_NEXT: the page's "next" (the
 * name to ask after; caller frees), NULL on the last page.  Names must grow
 * from page to page, so a server cannot keep a client paging forever. */
enum hpw_error hpw_json_pool_list_page(const char *body, size_t len, struct hpw_pool_list **acc,
                                       char **ret_next)
{
        struct hpw_pool_list *page = NULL;
        cJSON *root = NULL, *all = NULL;
        const cJSON *next;
        char *next_s = NULL, *text;
        enum hpw_error err;

        err = hpw_json_pool_list(body, len, &page);
        if (err != HPW_OK)
                return err;
        root = hpw_json_parse_object(body, len);
        if (!root)
                goto protocol;
        next = get(root, "next");
        if (next) {
                if (!cJSON_IsString(next) || !hpw_name_valid(next->valuestring) || page->n == 0 ||
                    strcmp(next->valuestring, page->pools[page->n - 1]->name) != 0)
                        goto protocol;
                if (!(next_s = strdup(next->valuestring)))
                        goto nomem;
        }
        if (!*acc) {
                /* The document without "next": the caller sees all pools. */
                cJSON_DeleteItemFromObjectCaseSensitive(root, "next");
                if (!(text = cJSON_PrintUnformatted(root)))
                        goto nomem;
                free(page->json);
                page->json = text;
                *acc = page;
                goto done;
        }
        if ((*acc)->n + page->n > HPW_MAX_ITEMS ||
            (page->n && (*acc)->n && strcmp(page->pools[0]->name, (*acc)->pools[(*acc)->n - 1]->name) <= 0))
                goto protocol;
        all = hpw_json_parse_object((*acc)->json, strlen((*acc)->json));
        cJSON *into = all ? cJSON_GetObjectItemCaseSensitive(all, "pools") : NULL;
        cJSON *from = cJSON_GetObjectItemCaseSensitive(root, "pools");
        if (!cJSON_IsArray(into) || !cJSON_IsArray(from))
                goto protocol;
        while (from->child) {
                cJSON *item = cJSON_DetachItemViaPointer(from, from->child);
                if (!cJSON_AddItemToArray(into, item)) {
                        cJSON_Delete(item);
                        goto nomem;
                }
        }
        if (!(text = cJSON_PrintUnformatted(all)))
                goto nomem;
        /* The pools of both into one block, as a list from one answer holds
         * them (hpw_pool_list_free frees the block at pools[0]); the
         * structs move, so their strings are the list's now. */
        size_t total = (*acc)->n + page->n;
        struct hpw_pool *block = calloc(total ? total : 1, sizeof(*block));
        struct hpw_pool **ptrs = calloc(total + 1, sizeof(*ptrs));
        if (!block || !ptrs) {
                free(block);
                free(ptrs);
                free(text);
                goto nomem;
        }
        for (size_t i = 0; i < (*acc)->n; i++)
                block[i] = *(*acc)->pools[i];
        for (size_t i = 0; i < page->n; i++)
                block[(*acc)->n + i] = *page->pools[i];
        for (size_t i = 0; i < total; i++)
                ptrs[i] = &block[i];
        if ((*acc)->pools)
                free((*acc)->pools[0]);
        free((*acc)->pools);
        (*acc)->pools = ptrs;
        (*acc)->n = total;
        free((*acc)->json);
        (*acc)->json = text;
        if (page->pools)
                free(page->pools[0]);
        free(page->pools);
        page->pools = NULL;
        page->n = 0;
        hpw_pool_list_free(page);
        page = NULL;
done:
        cJSON_Delete(root);
        cJSON_Delete(all);
        *ret_next = next_s;
        return HPW_OK;
protocol:
        err = HPW_E_PROTOCOL;
        goto fail;
nomem:
        err = HPW_E_NOMEM;
fail:
        cJSON_Delete(root);
        cJSON_Delete(all);
        free(next_s);
        hpw_pool_list_free(page);
        return err;
}

/* ---- stock ---- */

void hpw_stock_free(struct hpw_stock *x)
{
        if (!x)
                return;
        if (x->targets)
                free(x->targets[0]);
        free(x->targets);
        free(x->json);
        free(x);
}

/* Strict on what a caller acts on (which target, how many ready: fleet
 * place sends VMs by it), lenient on the rest. */
static enum hpw_error stock_target_from(const cJSON *o, void *item)
{
        struct hpw_stock_target *t = item;

        t->size = sizeof(*t);
        if (!cJSON_IsObject(o) || !get_int(o, "node", &t->node) || t->node < 0 ||
            !get_u64(o, "page_size_bytes", &t->page_size_bytes) || t->page_size_bytes == 0 ||
            !get_u64(o, "size_bytes", &t->size_bytes) || !get_u64(o, "count", &t->count) ||
            !get_u64(o, "ready", &t->ready))
                return HPW_E_PROTOCOL;
        t->warming = opt_u64(o, "warming");
        t->recycling = opt_u64(o, "recycling");
        t->deficit = opt_u64(o, "deficit");
        return HPW_OK;
}

/* A target owns no memory. */
static void stock_target_clear(void *item)
{
        (void)item;
}

static const struct item_kind stock_target_kind = {
        .size = sizeof(struct hpw_stock_target),
        .from = stock_target_from,
        .clear = stock_target_clear,
};

enum hpw_error hpw_json_stock(const char *body, size_t len, struct hpw_stock **ret)
{
        struct hpw_stock *x = calloc(1, sizeof(*x));
        void *items;
        enum hpw_error err;

        if (!x)
                return HPW_E_NOMEM;
        err = parse_items(body, len, "targets", &stock_target_kind, &items, &x->n, &x->json);
        if (err != HPW_OK) {
                free(x);
                return err;
        }
        x->targets = (struct hpw_stock_target **)ptr_array(items, x->n, sizeof(struct hpw_stock_target));
        if (x->n && !x->targets) {
                free(items);
                free(x->json);
                free(x);
                return HPW_E_NOMEM;
        }
        /* Parsed again for the one member beside the list: the body is a
         * few hundred bytes. */
        cJSON *root = hpw_json_parse_object(body, len);
        if (root && get(root, "generation")) {
                if (!get_u64(root, "generation", &x->generation)) {
                        cJSON_Delete(root);
                        hpw_stock_free(x);
                        return HPW_E_PROTOCOL;
                }
                x->has_generation = true;
        }
        cJSON_Delete(root);
        *ret = x;
        return HPW_OK;
}

/* ---- handoff ---- */

static void handoff_clear(void *item)
{
        struct hpw_handoff *x = item;

        free(x->vmm);
        free(x->args);
        if (x->argv)
                for (size_t i = 0; i < x->n_argv; i++)
                        free(x->argv[i]);
        free(x->argv);
        free(x->xml);
        free(x->xml_namespace);
        free(x->note);
        free(x->json);
        memset(x, 0, sizeof(*x));
}

void hpw_handoff_free(struct hpw_handoff *x)
{
        if (!x)
                return;
        handoff_clear(x);
        free(x);
}

/* A string member that must be there (HPW_E_PROTOCOL if absent or not a
 * string); *ret is a copy. */
static enum hpw_error req_str(const cJSON *o, const char *key, char **ret)
{
        const cJSON *v = get(o, key);

        if (!cJSON_IsString(v) || !v->valuestring)
                return HPW_E_PROTOCOL;
        *ret = strdup(v->valuestring);
        return *ret ? HPW_OK : HPW_E_NOMEM;
}

/* Strict: the words are what a caller will exec, so every one must be a
 * string and the fields its VMM promises must be there. */
static enum hpw_error handoff_from(const cJSON *o, void *item)
{
        struct hpw_handoff *x = item;
        const cJSON *arr = get(o, "argv"), *e;
        bool libvirt;
        enum hpw_error err;
        size_t n, i = 0;

        if ((err = req_str(o, "vmm", &x->vmm)) != HPW_OK)
                return err;
        libvirt = strcmp(x->vmm, "libvirt") == 0;
        if (!libvirt && strcmp(x->vmm, "qemu") != 0 && strcmp(x->vmm, "cloud-hypervisor") != 0)
                return HPW_E_PROTOCOL;
        if (!get_u64(o, "memory_bytes", &x->memory_bytes) || x->memory_bytes == 0)
                return HPW_E_PROTOCOL;
        if (!cJSON_IsArray(arr))
                return HPW_E_PROTOCOL;
        n = (size_t)cJSON_GetArraySize(arr);
        if (n == 0 || n > HPW_MAX_ITEMS)
                return HPW_E_PROTOCOL;
        x->argv = calloc(n + 1, sizeof(*x->argv));
        if (!x->argv)
                return HPW_E_NOMEM;
        cJSON_ArrayForEach(e, arr) {
                if (!cJSON_IsString(e) || !e->valuestring)
                        return HPW_E_PROTOCOL;
                if (!(x->argv[i] = strdup(e->valuestring)))
                        return HPW_E_NOMEM;
                x->n_argv = ++i;
        }
        if (libvirt) {
                if ((err = req_str(o, "xml", &x->xml)) != HPW_OK ||
                    (err = req_str(o, "namespace", &x->xml_namespace)) != HPW_OK)
                        return err;
                x->args = strdup("");
        } else {
                if ((err = req_str(o, "args", &x->args)) != HPW_OK)
                        return err;
                x->xml = strdup("");
                x->xml_namespace = strdup("");
        }
        x->note = opt_str(o, "note");
        /* as=: the pools whose source the server did not hold to compare. */
        arr = get(o, "pools");
        cJSON_ArrayForEach(e, arr) {
                const cJSON *chk = get(e, "as_checked");
                if (cJSON_IsBool(chk) && !cJSON_IsTrue(chk))
                        x->n_as_unchecked++;
        }
        return x->args && x->xml && x->xml_namespace && x->note ? HPW_OK : HPW_E_NOMEM;
}

static const struct item_kind handoff_kind = {
        .size = sizeof(struct hpw_handoff),
        .from = handoff_from,
        .clear = handoff_clear,
};

enum hpw_error hpw_json_handoff(const char *body, size_t len, struct hpw_handoff **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = parse_items(body, len, NULL, &handoff_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
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

/* ---- Prometheus query answers (prom.c) ---- */

void hpw_prom_samples_free(struct hpw_prom_sample *s, size_t n)
{
        for (size_t i = 0; s && i < n; i++) {
                free(s[i].host);
                free(s[i].kind);
        }
        free(s);
}

/* A label value that is a whole number in [0, MAX]; false otherwise. */
static bool label_u64(const cJSON *metric, const char *key, uint64_t max, uint64_t *ret)
{
        const cJSON *v = get(metric, key);
        char *end;
        unsigned long long x;

        if (!cJSON_IsString(v) || !isdigit((unsigned char)v->valuestring[0]))
                return false;
        errno = 0;
        x = strtoull(v->valuestring, &end, 10);
        if (errno || *end || x > max)
                return false;
        *ret = x;
        return true;
}

enum hpw_error hpw_json_prom_vector(const char *body, size_t len, const char *host_label,
                                    struct hpw_prom_sample **ret, size_t *ret_n, size_t *ret_skipped,
                                    char *errbuf, size_t errlen)
{
        cJSON *root = hpw_json_parse_object(body, len);
        const cJSON *status, *data, *type, *result, *it;
        struct hpw_prom_sample *s = NULL;
        size_t n = 0, skipped = 0, cap;
        enum hpw_error err = HPW_E_PROTOCOL;

        errbuf[0] = '\0';
        if (!root) {
                snprintf(errbuf, errlen, "answer is not a JSON object");
                return HPW_E_PROTOCOL;
        }
        status = get(root, "status");
        if (!cJSON_IsString(status)) {
                snprintf(errbuf, errlen, "answer has no \"status\": not the Prometheus HTTP API");
                goto out;
        }
        if (strcmp(status->valuestring, "success") != 0) {
                const cJSON *e = get(root, "error"), *t = get(root, "errorType");
                snprintf(errbuf, errlen, "Prometheus refused the query: %s%s%s",
                         cJSON_IsString(t) ? t->valuestring : "error", cJSON_IsString(e) ? ": " : "",
                         cJSON_IsString(e) ? e->valuestring : "");
                err = HPW_E_BAD_REQUEST;
                goto out;
        }
        data = get(root, "data");
        type = get(data, "resultType");
        result = get(data, "result");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "vector") != 0 || !cJSON_IsArray(result)) {
                snprintf(errbuf, errlen, "answer is not an instant vector");
                goto out;
        }
        cap = (size_t)cJSON_GetArraySize(result);
        if (cap > HPW_MAX_ITEMS) {
                snprintf(errbuf, errlen, "answer has %zu samples (at most %d taken)", cap, HPW_MAX_ITEMS);
                goto out;
        }
        if (!(s = calloc(cap ? cap : 1, sizeof(*s)))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        cJSON_ArrayForEach(it, result) {
                const cJSON *metric = get(it, "metric"), *value = get(it, "value"), *host, *kind, *v;
                uint64_t node = 0, ps = 0;
                double d;
                char *end;

                host = get(metric, host_label);
                kind = get(metric, "hpw_kind");
                v = cJSON_IsArray(value) && cJSON_GetArraySize(value) == 2 ? cJSON_GetArrayItem(value, 1) : NULL;
                /* A sample without what placement needs is skipped, not an
                 * error: the query may match series of other exporters. */
                if (!cJSON_IsString(host) || !host->valuestring[0] || !cJSON_IsString(kind) ||
                    !label_u64(metric, "numa_node", INT32_MAX, &node) ||
                    !label_u64(metric, "page_size_bytes", UINT64_MAX, &ps) || !cJSON_IsString(v)) {
                        skipped++;
                        continue;
                }
                d = strtod(v->valuestring, &end);
                if (*end || !(d >= 0) || d > JSON_MAX_EXACT) {
                        skipped++;
                        continue;
                }
                s[n].host = strdup(host->valuestring);
                s[n].kind = strdup(kind->valuestring);
                if (!s[n].host || !s[n].kind) {
                        n++;
                        err = HPW_E_NOMEM;
                        goto out;
                }
                s[n].node = (int)node;
                s[n].page_size = ps;
                s[n].value = (uint64_t)d;
                n++;
        }
        err = HPW_OK;
out:
        cJSON_Delete(root);
        if (err != HPW_OK) {
                hpw_prom_samples_free(s, n);
                return err;
        }
        *ret = s;
        *ret_n = n;
        *ret_skipped = skipped;
        return HPW_OK;
}
