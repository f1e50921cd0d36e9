/* json_answers: hpwarmd's answers as the public structs.
 *
 * One decoder per answer (health, nodes, a reserve, an elastic policy,
 * pools and their pages, stock, a handoff), each a "from" function that
 * fills one zeroed item from a JSON object, handed with the item's size and
 * its clear function to hpw_jparse_items() (json.c), the one parse ->
 * allocate -> fill -> keep-the-body path.  The plain members of each answer
 * are a table (struct hpw_jfield: key, kind, where the field is, whether it
 * is required) that hpw_jfields() reads; what a table cannot say is code
 * beside it: nested arrays, rules across members, fallbacks (a pool's node
 * -1, a hugepage size's available = free), and the checks a caller acts on.
 * Forgiving where the API may grow (unknown members ignored, optional ones
 * zero or ""), strict where a wrong shape means the peer is not hpwarmd or
 * where the caller acts on a value (a handoff's argv, a stock target's
 * counts).  Destructors are in json_free.c. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"

/* For items that own nothing but the ->json hpw_jparse_items() sets only on
 * success (a reserve result, an elastic policy, a stock target). */
static void clear_nothing(void *item)
{
        (void)item;
}

/* ---- health ---- */

static void health_clear(void *item)
{
        hpw_health_clear(item);
}

static const struct hpw_jfield health_fields[] = {
        HPW_JGET(struct hpw_health, "status", status, HPW_J_STR),
        HPW_JOPT(struct hpw_health, "version", version, HPW_J_STR),
};

static enum hpw_error health_from(const cJSON *o, void *item)
{
        return HPW_JFIELDS(o, item, health_fields);
}

static const struct hpw_item_kind health_kind = {
        .size = sizeof(struct hpw_health),
        .from = health_from,
        .clear = health_clear,
};

enum hpw_error hpw_json_health(const char *body, size_t len, struct hpw_health **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = hpw_jparse_items(body, len, NULL, &health_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
}

/* ---- nodes ---- */

static const struct hpw_jfield node_fields[] = {
        HPW_JGET(struct hpw_node, "id", id, HPW_J_INT),
        HPW_JOPT(struct hpw_node, "cpus", cpus, HPW_J_STR),
        HPW_JOPT(struct hpw_node, "cpu_count", cpu_count, HPW_J_UNSIGNED),
        HPW_JOPT(struct hpw_node, "hugepages_fixed", hugepages_fixed, HPW_J_BOOL),
};

/* The node's "memory" object (absent or not an object: zeros). */
static const struct hpw_jfield node_memory_fields[] = {
        HPW_JOPT(struct hpw_node, "total_bytes", memory_total_bytes, HPW_J_U64),
        HPW_JOPT(struct hpw_node, "free_bytes", memory_free_bytes, HPW_J_U64),
};

/* One entry of a node's "hugepages"; "available" is beside the table, for
 * its fallback. */
static const struct hpw_jfield hugepages_fields[] = {
        HPW_JGET(struct hpw_hugepages, "page_size_bytes", page_size_bytes, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "total", total, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "free", free, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "surplus", surplus, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "warm", warm, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "warming", warming, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "runtime_growth", runtime_growth, HPW_J_CHARS),
};

/* The entry's "elastic" object, read only when it is one. */
static const struct hpw_jfield hugepages_elastic_fields[] = {
        HPW_JOPT(struct hpw_hugepages, "min", elastic_min, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "max", elastic_max, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "headroom", elastic_headroom, HPW_J_U64),
        HPW_JOPT(struct hpw_hugepages, "idle_seconds", elastic_idle_seconds, HPW_J_U64),
};

static enum hpw_error hugepages_from(const cJSON *e, struct hpw_hugepages *h)
{
        const cJSON *el = hpw_jget(e, "elastic");
        enum hpw_error err;

        if (!cJSON_IsObject(e))
                return HPW_E_PROTOCOL;
        if ((err = HPW_JFIELDS(e, h, hugepages_fields)) != HPW_OK)
                return err;
        /* Older daemons do not report it: what they call free is the best
         * bound there is. */
        h->available_reported = hpw_jget_u64(e, "available", &h->available);
        if (!h->available_reported)
                h->available = h->free;
        if (!cJSON_IsObject(el))
                return HPW_OK;
        h->elastic = true;
        return HPW_JFIELDS(el, h, hugepages_elastic_fields);
}

/* Fill *N from object O.  On failure *N may hold partial allocations that
 * hpw_node_clear() releases. */
static enum hpw_error node_from(const cJSON *o, void *item)
{
        struct hpw_node *n = item;
        const cJSON *hp = hpw_jget(o, "hugepages"), *e;
        enum hpw_error err;
        size_t i = 0;

        if (!cJSON_IsObject(o))
                return HPW_E_PROTOCOL;
        if ((err = HPW_JFIELDS(o, n, node_fields)) != HPW_OK ||
            (err = HPW_JFIELDS(hpw_jget(o, "memory"), n, node_memory_fields)) != HPW_OK)
                return err;
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
        n->hugepages = (struct hpw_hugepages **)hpw_jptr_array(block, n->n_hugepages, sizeof(*block));
        if (!n->hugepages) {
                free(block);
                return HPW_E_NOMEM;
        }
        cJSON_ArrayForEach(e, hp)
                if ((err = hugepages_from(e, n->hugepages[i++])) != HPW_OK)
                        return err;
        return HPW_OK;
}

static void node_clear(void *item)
{
        hpw_node_clear(item);
}

static const struct hpw_item_kind node_kind = {
        .size = sizeof(struct hpw_node),
        .from = node_from,
        .clear = node_clear,
};

enum hpw_error hpw_json_node(const char *body, size_t len, struct hpw_node **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = hpw_jparse_items(body, len, NULL, &node_kind, &item, &n, &json);

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
        err = hpw_jparse_items(body, len, "nodes", &node_kind, &items, &x->n, &x->json);
        if (err != HPW_OK) {
                free(x);
                return err;
        }
        x->nodes = (struct hpw_node **)hpw_jptr_array(items, x->n, sizeof(struct hpw_node));
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

static const struct hpw_jfield reserve_fields[] = {
        HPW_JGET(struct hpw_reserve_result, "node", node, HPW_J_INT),
        HPW_JGET(struct hpw_reserve_result, "total", total, HPW_J_U64),
        HPW_JOPT(struct hpw_reserve_result, "page_size_bytes", page_size_bytes, HPW_J_U64),
        HPW_JOPT(struct hpw_reserve_result, "requested", requested, HPW_J_U64),
        HPW_JOPT(struct hpw_reserve_result, "free", free, HPW_J_U64),
};

static enum hpw_error reserve_from(const cJSON *o, void *item)
{
        struct hpw_reserve_result *x = item;
        enum hpw_error err = HPW_JFIELDS(o, x, reserve_fields);

        if (err != HPW_OK)
                return err;
        /* Absent "complete" means the server had nothing to report short. */
        x->complete = hpw_jget(o, "complete") ? hpw_jopt_bool(o, "complete") : true;
        return HPW_OK;
}

static const struct hpw_item_kind reserve_kind = {
        .size = sizeof(struct hpw_reserve_result),
        .from = reserve_from,
        .clear = clear_nothing,
};

enum hpw_error hpw_json_reserve(const char *body, size_t len, struct hpw_reserve_result **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = hpw_jparse_items(body, len, NULL, &reserve_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
}

/* ---- elastic policies ---- */

/* The policy's members are the answer's own, not a nested object. */
static const struct hpw_jfield elastic_fields[] = {
        HPW_JGET(struct hpw_elastic, "node", node, HPW_J_INT),
        HPW_JGET(struct hpw_elastic, "max", policy.max, HPW_J_U64),
        HPW_JOPT(struct hpw_elastic, "page_size_bytes", page_size_bytes, HPW_J_U64),
        HPW_JOPT(struct hpw_elastic, "min", policy.min, HPW_J_U64),
        HPW_JOPT(struct hpw_elastic, "headroom", policy.headroom, HPW_J_U64),
        HPW_JOPT(struct hpw_elastic, "idle_seconds", policy.idle_seconds, HPW_J_U64),
        HPW_JOPT(struct hpw_elastic, "allow_best_effort", policy.allow_best_effort, HPW_J_BOOL),
        HPW_JOPT(struct hpw_elastic, "runtime_growth", runtime_growth, HPW_J_CHARS),
        HPW_JOPT(struct hpw_elastic, "grown_pages", grown_pages, HPW_J_U64),
        HPW_JOPT(struct hpw_elastic, "returned_pages", returned_pages, HPW_J_U64),
};

static enum hpw_error elastic_from(const cJSON *o, void *item)
{
        return HPW_JFIELDS(o, item, elastic_fields);
}

static const struct hpw_item_kind elastic_kind = {
        .size = sizeof(struct hpw_elastic),
        .from = elastic_from,
        .clear = clear_nothing,
};

enum hpw_error hpw_json_elastic(const char *body, size_t len, struct hpw_elastic **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = hpw_jparse_items(body, len, NULL, &elastic_kind, &item, &n, &json);

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

/* Every format's text from the pool's "handoff" object, one per row of the
 * table ("" where the object has none), read by hpw_pool_handoff(); the two
 * members older callers read (0.1) are copies of their rows' texts. */
static enum hpw_error pool_handoffs_from(const cJSON *ho, struct hpw_pool *p)
{
        p->handoffs = calloc(1, sizeof(*p->handoffs) + hpw_n_vmms * sizeof(p->handoffs->text[0]));
        if (!p->handoffs)
                return HPW_E_NOMEM;
        for (size_t i = 0; i < hpw_n_vmms; i++) {
                if (!(p->handoffs->text[i] = hpw_jopt_str(ho, hpw_vmms[i].key)))
                        return HPW_E_NOMEM;
                p->handoffs->n = i + 1;
        }
        p->handoff_qemu = hpw_jopt_str(ho, "qemu");
        p->handoff_cloud_hypervisor = hpw_jopt_str(ho, "cloud_hypervisor");
        return p->handoff_qemu && p->handoff_cloud_hypervisor ? HPW_OK : HPW_E_NOMEM;
}

/* A pool's plain members.  "node" is beside the table (absent reads as -1,
 * not 0), as are the file's owner (both ids or neither) and "error". */
static const struct hpw_jfield pool_fields[] = {
        HPW_JGET(struct hpw_pool, "name", name, HPW_J_STR),
        HPW_JGET(struct hpw_pool, "state", state_name, HPW_J_STR),
        HPW_JOPT(struct hpw_pool, "path", path, HPW_J_STR),
        HPW_JOPT(struct hpw_pool, "from_stock", from_stock, HPW_J_STR),
        HPW_JOPT(struct hpw_pool, "label", label, HPW_J_STR),
        HPW_JOPT(struct hpw_pool, "page_size_bytes", page_size_bytes, HPW_J_U64),
        HPW_JOPT(struct hpw_pool, "size_bytes", size_bytes, HPW_J_U64),
        HPW_JOPT(struct hpw_pool, "bytes_done", bytes_done, HPW_J_U64),
        HPW_JOPT(struct hpw_pool, "rate_bytes_per_second", rate_bytes_per_second, HPW_J_DOUBLE),
        HPW_JOPT(struct hpw_pool, "threads", threads, HPW_J_UNSIGNED),
        HPW_JOPT(struct hpw_pool, "started_at", started_at, HPW_J_TIME),
        HPW_JOPT(struct hpw_pool, "finished_at", finished_at, HPW_J_TIME),
        HPW_JOPT(struct hpw_pool, "elapsed_seconds", elapsed_seconds, HPW_J_DOUBLE),
        HPW_JOPT(struct hpw_pool, "claimed", claimed, HPW_J_BOOL),
        HPW_JOPT(struct hpw_pool, "expires_at", expires_at, HPW_J_TIME),
        HPW_JOPT(struct hpw_pool, "ttl_seconds", ttl_seconds, HPW_J_U64),
        HPW_JOPT(struct hpw_pool, "owner_pid", owner_pid, HPW_J_INT),
        HPW_JOPT(struct hpw_pool, "unmapped_since", unmapped_since, HPW_J_TIME),
};

/* The pool's "placement" object (absent: not verified, 0 off node). */
static const struct hpw_jfield pool_placement_fields[] = {
        HPW_JOPT(struct hpw_pool, "verified", placement_verified, HPW_J_BOOL),
        HPW_JOPT(struct hpw_pool, "pages_off_node", pages_off_node, HPW_J_U64),
};

static enum hpw_error pool_from(const cJSON *o, void *item)
{
        struct hpw_pool *p = item;
        const cJSON *problem;
        enum hpw_error err;
        uint64_t fu, fg;

        if (!cJSON_IsObject(o))
                return HPW_E_PROTOCOL;
        if ((err = HPW_JFIELDS(o, p, pool_fields)) != HPW_OK ||
            (err = HPW_JFIELDS(hpw_jget(o, "placement"), p, pool_placement_fields)) != HPW_OK)
                return err;
        if (pool_handoffs_from(hpw_jget(o, "handoff"), p) != HPW_OK)
                return HPW_E_NOMEM;
        p->state = state_parse(p->state_name);
        if (!hpw_jget_int(o, "node", &p->node))
                p->node = -1;
        if (p->owner_pid < 0)
                p->owner_pid = 0;    /* no process, as null (no owner) and absent read */
        if (hpw_jget_u64(o, "file_uid", &fu) && hpw_jget_u64(o, "file_gid", &fg) && fu < UINT32_MAX &&
            fg < UINT32_MAX) {
                p->file_owned = true;
                p->file_uid = (uint32_t)fu;
                p->file_gid = (uint32_t)fg;
        }
        problem = hpw_jget(o, "error");
        if (cJSON_IsObject(problem)) {
                p->error = hpw_jproblem_from(problem);
                if (!p->error)
                        return HPW_E_NOMEM;
        }
        return HPW_OK;
}

static void pool_clear(void *item)
{
        hpw_pool_clear(item);
}

static const struct hpw_item_kind pool_kind = {
        .size = sizeof(struct hpw_pool),
        .from = pool_from,
        .clear = pool_clear,
};

enum hpw_error hpw_json_pool(const char *body, size_t len, struct hpw_pool **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = hpw_jparse_items(body, len, NULL, &pool_kind, &item, &n, &json);

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
        err = hpw_jparse_items(body, len, "pools", &pool_kind, &items, &x->n, &x->json);
        if (err != HPW_OK) {
                free(x);
                return err;
        }
        x->pools = (struct hpw_pool **)hpw_jptr_array(items, x->n, sizeof(struct hpw_pool));
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
        next = hpw_jget(root, "next");
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

/* Strict on what a caller acts on (which target, how many ready: fleet
 * place sends VMs by it), lenient on the rest.  No strings: a table of
 * numbers fails only with HPW_E_PROTOCOL. */
static const struct hpw_jfield stock_target_fields[] = {
        HPW_JGET(struct hpw_stock_target, "node", node, HPW_J_INT),
        HPW_JGET(struct hpw_stock_target, "page_size_bytes", page_size_bytes, HPW_J_U64),
        HPW_JGET(struct hpw_stock_target, "size_bytes", size_bytes, HPW_J_U64),
        HPW_JGET(struct hpw_stock_target, "count", count, HPW_J_U64),
        HPW_JGET(struct hpw_stock_target, "ready", ready, HPW_J_U64),
        HPW_JOPT(struct hpw_stock_target, "warming", warming, HPW_J_U64),
        HPW_JOPT(struct hpw_stock_target, "recycling", recycling, HPW_J_U64),
        HPW_JOPT(struct hpw_stock_target, "deficit", deficit, HPW_J_U64),
};

static enum hpw_error stock_target_from(const cJSON *o, void *item)
{
        struct hpw_stock_target *t = item;

        t->size = sizeof(*t);
        if (!cJSON_IsObject(o) || HPW_JFIELDS(o, t, stock_target_fields) != HPW_OK || t->node < 0 ||
            t->page_size_bytes == 0)
                return HPW_E_PROTOCOL;
        return HPW_OK;
}

static const struct hpw_item_kind stock_target_kind = {
        .size = sizeof(struct hpw_stock_target),
        .from = stock_target_from,
        .clear = clear_nothing,
};

enum hpw_error hpw_json_stock(const char *body, size_t len, struct hpw_stock **ret)
{
        struct hpw_stock *x = calloc(1, sizeof(*x));
        void *items;
        enum hpw_error err;

        if (!x)
                return HPW_E_NOMEM;
        err = hpw_jparse_items(body, len, "targets", &stock_target_kind, &items, &x->n, &x->json);
        if (err != HPW_OK) {
                free(x);
                return err;
        }
        x->targets = (struct hpw_stock_target **)hpw_jptr_array(items, x->n, sizeof(struct hpw_stock_target));
        if (x->n && !x->targets) {
                free(items);
                free(x->json);
                free(x);
                return HPW_E_NOMEM;
        }
        /* Parsed again for the one member beside the list: the body is a
         * few hundred bytes. */
        cJSON *root = hpw_json_parse_object(body, len);
        if (root && hpw_jget(root, "generation")) {
                if (!hpw_jget_u64(root, "generation", &x->generation)) {
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
        hpw_handoff_clear(item);
}

/* A handoff's members.  Each is read as a row of its own, in the order of
 * handoff_from's checks: the VMM first (it says which texts must be
 * there), so a wrong VMM is refused before anything else is read. */
enum handoff_row { H_VMM, H_MEMORY, H_XML, H_NAMESPACE, H_ARGS, H_NOTE };

static const struct hpw_jfield handoff_fields[] = {
        [H_VMM] = HPW_JGET(struct hpw_handoff, "vmm", vmm, HPW_J_STR),
        [H_MEMORY] = HPW_JGET(struct hpw_handoff, "memory_bytes", memory_bytes, HPW_J_U64),
        [H_XML] = HPW_JGET(struct hpw_handoff, "xml", xml, HPW_J_STR),
        [H_NAMESPACE] = HPW_JGET(struct hpw_handoff, "namespace", xml_namespace, HPW_J_STR),
        [H_ARGS] = HPW_JGET(struct hpw_handoff, "args", args, HPW_J_STR),
        [H_NOTE] = HPW_JOPT(struct hpw_handoff, "note", note, HPW_J_STR),
};

static enum hpw_error handoff_read(const cJSON *o, struct hpw_handoff *x, enum handoff_row r)
{
        return hpw_jfields(o, x, &handoff_fields[r], 1);
}

/* Strict: the words are what a caller will exec, so every one must be a
 * string and the fields its VMM promises must be there. */
static enum hpw_error handoff_from(const cJSON *o, void *item)
{
        struct hpw_handoff *x = item;
        const cJSON *arr = hpw_jget(o, "argv"), *e;
        const struct hpw_vmm *vmm;
        enum hpw_error err;
        size_t n, i = 0;

        if ((err = handoff_read(o, x, H_VMM)) != HPW_OK)
                return err;
        if (!(vmm = hpw_vmm_find(x->vmm, false)))
                return HPW_E_PROTOCOL;
        if (handoff_read(o, x, H_MEMORY) != HPW_OK || x->memory_bytes == 0)
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
        if (vmm->output == HPW_VMM_XML) {
                if ((err = handoff_read(o, x, H_XML)) != HPW_OK ||
                    (err = handoff_read(o, x, H_NAMESPACE)) != HPW_OK)
                        return err;
                x->args = strdup("");
        } else {
                if ((err = handoff_read(o, x, H_ARGS)) != HPW_OK)
                        return err;
                x->xml = strdup("");
                x->xml_namespace = strdup("");
        }
        if ((err = handoff_read(o, x, H_NOTE)) != HPW_OK)
                return err;
        /* as=: the pools whose source the server did not hold to compare. */
        arr = hpw_jget(o, "pools");
        cJSON_ArrayForEach(e, arr) {
                const cJSON *chk = hpw_jget(e, "as_checked");
                if (cJSON_IsBool(chk) && !cJSON_IsTrue(chk))
                        x->n_as_unchecked++;
        }
        return x->args && x->xml && x->xml_namespace ? HPW_OK : HPW_E_NOMEM;
}

static const struct hpw_item_kind handoff_kind = {
        .size = sizeof(struct hpw_handoff),
        .from = handoff_from,
        .clear = handoff_clear,
};

enum hpw_error hpw_json_handoff(const char *body, size_t len, struct hpw_handoff **ret)
{
        void *item;
        char *json;
        size_t n;
        enum hpw_error err = hpw_jparse_items(body, len, NULL, &handoff_kind, &item, &n, &json);

        if (err == HPW_OK) {
                *ret = item;
                (*ret)->json = json;
        }
        return err;
}
