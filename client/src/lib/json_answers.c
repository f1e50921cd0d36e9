/* json_answers: hpwarmd's answers as the public structs.
 *
 * One decoder per answer (health, nodes, a reserve, an elastic policy,
 * pools and their pages, stock, a handoff), each a "from" function that
 * fills one zeroed item from a JSON object, handed with the item's size and
 * its clear function to hpw_jparse_items() (json.c), the one parse ->
 * allocate -> fill -> keep-the-body path.  Forgiving where the API may grow
 * (unknown members ignored, optional ones zero or ""), strict where a wrong
 * shape means the peer is not hpwarmd or where the caller acts on a value
 * (a handoff's argv, a stock target's counts).  Destructors are in
 * json_free.c. */
#include <cjson/cJSON.h>
#include <stdio.h>
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

static enum hpw_error health_from(const cJSON *o, void *item)
{
        struct hpw_health *x = item;

        if (!cJSON_IsString(hpw_jget(o, "status")))
                return HPW_E_PROTOCOL;
        x->status = hpw_jopt_str(o, "status");
        x->version = hpw_jopt_str(o, "version");
        return x->status && x->version ? HPW_OK : HPW_E_NOMEM;
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

/* Fill *N from object O.  On failure *N may hold partial allocations that
 * hpw_node_clear() releases. */
static enum hpw_error node_from(const cJSON *o, void *item)
{
        struct hpw_node *n = item;
        const cJSON *hp = hpw_jget(o, "hugepages"), *e, *mem = hpw_jget(o, "memory");
        size_t i = 0;
        uint64_t cc = 0;

        if (!cJSON_IsObject(o) || !hpw_jget_int(o, "id", &n->id))
                return HPW_E_PROTOCOL;
        n->cpus = hpw_jopt_str(o, "cpus");
        if (!n->cpus)
                return HPW_E_NOMEM;
        hpw_jget_u64(o, "cpu_count", &cc);
        n->cpu_count = (unsigned)cc;
        n->hugepages_fixed = hpw_jopt_bool(o, "hugepages_fixed");
        n->memory_total_bytes = hpw_jopt_u64(mem, "total_bytes");
        n->memory_free_bytes = hpw_jopt_u64(mem, "free_bytes");
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
        cJSON_ArrayForEach(e, hp) {
                struct hpw_hugepages *h = n->hugepages[i++];
                if (!cJSON_IsObject(e) || !hpw_jget_u64(e, "page_size_bytes", &h->page_size_bytes))
                        return HPW_E_PROTOCOL;
                h->total = hpw_jopt_u64(e, "total");
                h->free = hpw_jopt_u64(e, "free");
                /* Older daemons do not report it: what they call free is
                 * the best bound there is. */
                h->available_reported = hpw_jget_u64(e, "available", &h->available);
                if (!h->available_reported)
                        h->available = h->free;
                h->surplus = hpw_jopt_u64(e, "surplus");
                h->warm = hpw_jopt_u64(e, "warm");
                h->warming = hpw_jopt_u64(e, "warming");
                const cJSON *rg = hpw_jget(e, "runtime_growth");
                if (cJSON_IsString(rg))
                        snprintf(h->runtime_growth, sizeof(h->runtime_growth), "%s", rg->valuestring);
                const cJSON *el = hpw_jget(e, "elastic");
                if (cJSON_IsObject(el)) {
                        h->elastic = true;
                        h->elastic_min = hpw_jopt_u64(el, "min");
                        h->elastic_max = hpw_jopt_u64(el, "max");
                        h->elastic_headroom = hpw_jopt_u64(el, "headroom");
                        h->elastic_idle_seconds = hpw_jopt_u64(el, "idle_seconds");
                }
        }
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

static enum hpw_error reserve_from(const cJSON *o, void *item)
{
        struct hpw_reserve_result *x = item;

        if (!hpw_jget_int(o, "node", &x->node) || !hpw_jget_u64(o, "total", &x->total))
                return HPW_E_PROTOCOL;
        x->page_size_bytes = hpw_jopt_u64(o, "page_size_bytes");
        x->requested = hpw_jopt_u64(o, "requested");
        x->free = hpw_jopt_u64(o, "free");
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

static enum hpw_error elastic_from(const cJSON *o, void *item)
{
        struct hpw_elastic *x = item;

        if (!hpw_jget_int(o, "node", &x->node) || !hpw_jget_u64(o, "max", &x->policy.max))
                return HPW_E_PROTOCOL;
        x->page_size_bytes = hpw_jopt_u64(o, "page_size_bytes");
        x->policy.min = hpw_jopt_u64(o, "min");
        x->policy.headroom = hpw_jopt_u64(o, "headroom");
        x->policy.idle_seconds = hpw_jopt_u64(o, "idle_seconds");
        x->policy.allow_best_effort = hpw_jopt_bool(o, "allow_best_effort");
        const cJSON *rg = hpw_jget(o, "runtime_growth");
        if (cJSON_IsString(rg))
                snprintf(x->runtime_growth, sizeof(x->runtime_growth), "%s", rg->valuestring);
        x->grown_pages = hpw_jopt_u64(o, "grown_pages");
        x->returned_pages = hpw_jopt_u64(o, "returned_pages");
        return HPW_OK;
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

static enum hpw_error pool_from(const cJSON *o, void *item)
{
        struct hpw_pool *p = item;
        const cJSON *err, *pl = hpw_jget(o, "placement"), *ho = hpw_jget(o, "handoff");
        uint64_t th = 0;

        if (!cJSON_IsObject(o) || !cJSON_IsString(hpw_jget(o, "name")) || !cJSON_IsString(hpw_jget(o, "state")))
                return HPW_E_PROTOCOL;
        p->name = hpw_jopt_str(o, "name");
        p->state_name = hpw_jopt_str(o, "state");
        p->path = hpw_jopt_str(o, "path");
        p->from_stock = hpw_jopt_str(o, "from_stock");
        p->label = hpw_jopt_str(o, "label");
        if (!p->name || !p->state_name || !p->path || !p->from_stock || !p->label ||
            pool_handoffs_from(ho, p) != HPW_OK)
                return HPW_E_NOMEM;
        p->state = state_parse(p->state_name);
        if (!hpw_jget_int(o, "node", &p->node))
                p->node = -1;
        p->page_size_bytes = hpw_jopt_u64(o, "page_size_bytes");
        p->size_bytes = hpw_jopt_u64(o, "size_bytes");
        p->bytes_done = hpw_jopt_u64(o, "bytes_done");
        p->rate_bytes_per_second = hpw_jopt_double(o, "rate_bytes_per_second");
        hpw_jget_u64(o, "threads", &th);
        p->threads = (unsigned)th;
        p->started_at = hpw_jopt_time(o, "started_at");
        p->finished_at = hpw_jopt_time(o, "finished_at");
        p->elapsed_seconds = hpw_jopt_double(o, "elapsed_seconds");
        p->placement_verified = hpw_jopt_bool(pl, "verified");
        p->pages_off_node = hpw_jopt_u64(pl, "pages_off_node");
        p->claimed = hpw_jopt_bool(o, "claimed");
        p->expires_at = hpw_jopt_time(o, "expires_at");
        p->ttl_seconds = hpw_jopt_u64(o, "ttl_seconds");
        if (!hpw_jget_int(o, "owner_pid", &p->owner_pid) || p->owner_pid < 0)
                p->owner_pid = 0;    /* null (no owner) or absent */
        p->unmapped_since = hpw_jopt_time(o, "unmapped_since");
        {
                uint64_t fu, fg;
                if (hpw_jget_u64(o, "file_uid", &fu) && hpw_jget_u64(o, "file_gid", &fg) && fu < UINT32_MAX &&
                    fg < UINT32_MAX) {
                        p->file_owned = true;
                        p->file_uid = (uint32_t)fu;
                        p->file_gid = (uint32_t)fg;
                }
        }
        err = hpw_jget(o, "error");
        if (cJSON_IsObject(err)) {
                p->error = hpw_jproblem_from(err);
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
 * place sends VMs by it), lenient on the rest. */
static enum hpw_error stock_target_from(const cJSON *o, void *item)
{
        struct hpw_stock_target *t = item;

        t->size = sizeof(*t);
        if (!cJSON_IsObject(o) || !hpw_jget_int(o, "node", &t->node) || t->node < 0 ||
            !hpw_jget_u64(o, "page_size_bytes", &t->page_size_bytes) || t->page_size_bytes == 0 ||
            !hpw_jget_u64(o, "size_bytes", &t->size_bytes) || !hpw_jget_u64(o, "count", &t->count) ||
            !hpw_jget_u64(o, "ready", &t->ready))
                return HPW_E_PROTOCOL;
        t->warming = hpw_jopt_u64(o, "warming");
        t->recycling = hpw_jopt_u64(o, "recycling");
        t->deficit = hpw_jopt_u64(o, "deficit");
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

/* A string member that must be there (HPW_E_PROTOCOL if absent or not a
 * string); *ret is a copy. */
static enum hpw_error req_str(const cJSON *o, const char *key, char **ret)
{
        const cJSON *v = hpw_jget(o, key);

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
        const cJSON *arr = hpw_jget(o, "argv"), *e;
        const struct hpw_vmm *vmm;
        enum hpw_error err;
        size_t n, i = 0;

        if ((err = req_str(o, "vmm", &x->vmm)) != HPW_OK)
                return err;
        if (!(vmm = hpw_vmm_find(x->vmm, false)))
                return HPW_E_PROTOCOL;
        if (!hpw_jget_u64(o, "memory_bytes", &x->memory_bytes) || x->memory_bytes == 0)
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
        x->note = hpw_jopt_str(o, "note");
        /* as=: the pools whose source the server did not hold to compare. */
        arr = hpw_jget(o, "pools");
        cJSON_ArrayForEach(e, arr) {
                const cJSON *chk = hpw_jget(e, "as_checked");
                if (cJSON_IsBool(chk) && !cJSON_IsTrue(chk))
                        x->n_as_unchecked++;
        }
        return x->args && x->xml && x->xml_namespace && x->note ? HPW_OK : HPW_E_NOMEM;
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
