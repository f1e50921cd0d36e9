/* api_handoff: the VMM arguments that make warm pools a guest's RAM.
 *
 * Two places show them: every pool object's "handoff" (one pool, every VMM)
 * and GET /v1/handoff?vmm=...&pools=A,B (several pools composed into one
 * multi-node guest, guest node i = the i-th pool named).  Both go through
 * handoff.c, so a pool's own strings and a one-pool composition are the same
 * text.  Reads only: answered on the HTTP thread from the registry's views.
 *
 * as=S1,S2 makes the pools a migration destination: pool i is mapped under
 * source Si's id.  The daemon checks what it knows: a source pool on this
 * host (a local migration, a live update) must have the destination's size
 * and page size; a source it does not hold is on another host, and the
 * answer says so ("as_checked": false) for the caller to check against
 * that host's daemon (hpwarm handoff --source-url does). */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "api_handoff.h"
#include "api_util.h"
#include "app.h"
#include "handoff.h"
#include "json.h"
#include "pools.h"

/* Bytes as QEMU's -m reads them: the largest binary unit that divides. */
static void qemu_size(uint64_t v, char *buf, size_t len)
{
        static const struct {
                char suffix;
                unsigned shift;
        } u[] = { { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 } };
        for (size_t i = 0; i < ARRAY_SIZE(u); i++)
                if (v % (UINT64_C(1) << u[i].shift) == 0) {
                        snprintf(buf, len, "%" PRIu64 "%c", v >> u[i].shift, u[i].suffix);
                        return;
                }
        snprintf(buf, len, "%" PRIu64 "B", v);
}

static struct handoff_pool as_handoff_pool(const struct pool_view *v)
{
        return (struct handoff_pool){
                .name = v->name,
                .path = v->path,
                .node = v->node,
                .size_bytes = v->size_bytes,
                .page_size = v->page_size,
        };
}

static void add_argv(struct json *o, const char *key, const struct handoff *h)
{
        struct json *arr = json_add_array(o, key);
        for (size_t i = 0; h && i < h->argc; i++)
                json_append_str(arr, h->argv[i]);
}

void api_add_pool_handoff(struct json *pool, const struct pool_view *v)
{
        /* A pool without a file (failed, cancelled) offers nothing: "" and []. */
        struct handoff_pool hp = as_handoff_pool(v);
        struct json *o = json_add_object(pool, "handoff");
        for (size_t i = 0; i < handoff_n_formats; i++) {
                const struct handoff_format *f = &handoff_formats[i];
                struct handoff *h = NULL;
                handoff_compose(f, &hp, 1, &h);
                if (f->output == HPW_VMM_XML) {
                        json_add_str(o, f->key, h ? h->xml : "");
                } else {
                        json_add_str(o, f->key, h ? h->shell : "");
                        add_argv(o, f->argv_key, h);
                }
                handoff_free(h);
        }
}

/* Split the KEY= value (pools or as) at commas (also written %2C, as form
 * encoders do).  0, or 422 in RESP: empty item, bad name, duplicate, too
 * many. */
static int parse_pool_list(const char *key, const char *s, char names[][POOL_NAME_MAX + 1], size_t *ret_n,
                           struct resp *resp)
{
        size_t n = 0;
        const char *p = s;
        for (;;) {
                const char *end = p;
                size_t sep = 0;
                while (*end) {
                        if (*end == ',') {
                                sep = 1;
                                break;
                        }
                        if (end[0] == '%' && end[1] == '2' && (end[2] == 'C' || end[2] == 'c')) {
                                sep = 3;
                                break;
                        }
                        end++;
                }
                char name[POOL_NAME_MAX + 2];
                size_t len = (size_t)(end - p);
                if (n == HANDOFF_MAX_POOLS) {
                        problem_raise(&resp->problem, PROBLEM_INVALID_FIELD, "%s: at most %d pools per guest",
                                      key, HANDOFF_MAX_POOLS);
                        resp->status = resp->problem.status;
                        return -1;
                }
                if (len == 0 || len > POOL_NAME_MAX) {
                        problem_raise(&resp->problem, PROBLEM_INVALID_FIELD,
                                      "%s: item %zu is %s; give pool names separated by commas, e.g. %s=vm-a,vm-b",
                                      key, n + 1, len ? "too long" : "empty", key);
                        resp->status = resp->problem.status;
                        return -1;
                }
                memcpy(name, p, len);
                name[len] = '\0';
                if (!pool_name_valid(name)) {
                        problem_raise(&resp->problem, PROBLEM_INVALID_FIELD,
                                      "%s: \"%.64s\" is not a pool name: " POOL_NAME_RULE, key, name);
                        resp->status = resp->problem.status;
                        return -1;
                }
                for (size_t i = 0; i < n; i++)
                        if (strcmp(names[i], name) == 0) {
                                problem_raise(&resp->problem, PROBLEM_INVALID_FIELD,
                                              "%s: \"%s\" is named twice; one pool backs one guest node", key, name);
                                resp->status = resp->problem.status;
                                return -1;
                        }
                memcpy(names[n++], name, len + 1);
                if (!*end)
                        break;
                p = end + sep;
        }
        *ret_n = n;
        return 0;
}

/* as=: one source per destination pool, refused for a format whose row
 * says why (cloud-hypervisor: its restore and receive take the zones from
 * the snapshot or the source, docs/CLOUD-HYPERVISOR.md).  0, or 422 in
 * RESP. */
static int parse_as(const char *s, const struct handoff_format *f, size_t n, char as[][POOL_NAME_MAX + 1],
                    size_t *ret_n, struct resp *resp)
{
        size_t n_as = 0;
        if (f->as_refused) {
                problem_raise(&resp->problem, PROBLEM_INVALID_FIELD, "as: %s", f->as_refused);
                resp->status = resp->problem.status;
                return -1;
        }
        if (parse_pool_list("as", s, as, &n_as, resp) < 0)
                return -1;
        if (n_as != n) {
                problem_raise(&resp->problem, PROBLEM_INVALID_FIELD,
                              "as: %zu source pools for %zu destination pools; give one source per pool, in the "
                              "same order", n_as, n);
                resp->status = resp->problem.status;
                return -1;
        }
        *ret_n = n_as;
        return 0;
}

/* A source pool on this host must match its destination in size and page
 * size: the stream carries the source's RAM blocks, and QEMU refuses one
 * whose size differs (and a different page size changes the block's
 * alignment).  *ret_checked says whether the source was here to compare.
 * 0, or 422 in RESP. */
static int check_source(struct pools *pools, const struct pool_view *dst, const char *src, bool *ret_checked,
                        struct resp *resp)
{
        struct pool_view sv;
        if (pools_get(pools, src, &sv, NULL) < 0) {
                *ret_checked = false;
                return 0;
        }
        if (sv.size_bytes != dst->size_bytes || sv.page_size != dst->page_size) {
                problem_raise(&resp->problem, PROBLEM_INVALID_FIELD,
                              "as: pool \"%s\" is %" PRIu64 " bytes on %" PRIu64 "-byte pages, its source \"%s\" is "
                              "%" PRIu64 " bytes on %" PRIu64 "-byte pages; a migration needs the same size and page "
                              "size on both sides",
                              dst->name, dst->size_bytes, dst->page_size, src, sv.size_bytes, sv.page_size);
                resp->status = resp->problem.status;
                return -1;
        }
        *ret_checked = true;
        return 0;
}

void api_handoff(const struct req *req, struct resp *resp)
{
        const char *vmm_s = req->query(req, "vmm"), *pools_s = req->query(req, "pools");
        const struct handoff_format *f = handoff_format_find(vmm_s);
        if (!f) {
                char list[256], why[300];
                handoff_format_names(list, sizeof(list));
                snprintf(why, sizeof(why), "vmm must be %s", list);
                api_invalid(resp, why);
                return;
        }
        if (!pools_s || !*pools_s) {
                api_invalid(resp, "pools is required: pool names separated by commas, e.g. pools=vm-a,vm-b");
                return;
        }
        char names[HANDOFF_MAX_POOLS][POOL_NAME_MAX + 1];
        size_t n = 0;
        if (parse_pool_list("pools", pools_s, names, &n, resp) < 0)
                return;
        char as[HANDOFF_MAX_POOLS][POOL_NAME_MAX + 1];
        bool as_checked[HANDOFF_MAX_POOLS] = { false };
        size_t n_as = 0;
        const char *as_s = req->query(req, "as");
        if (as_s && parse_as(as_s, f, n, as, &n_as, resp) < 0)
                return;

        _cleanup_free_ struct pool_view *views = calloc(n, sizeof(*views));
        struct handoff_pool hp[HANDOFF_MAX_POOLS];
        if (!views) {
                api_oom(resp);
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct problem p = { 0 };
                if (pools_get(req->app->pools, names[i], &views[i], &p) < 0) {
                        resp_problem(resp, &p);
                        return;
                }
                /* Claimed pools are ready too: a VM being restarted on its pool. */
                if (views[i].state != POOL_READY) {
                        problem_raise(&p, PROBLEM_POOL_NOT_READY,
                                      "pool \"%s\" is %s; only ready pools can be handed to a VMM", names[i],
                                      pool_state_name(views[i].state));
                        resp_problem(resp, &p);
                        return;
                }
                hp[i] = as_handoff_pool(&views[i]);
                if (n_as) {
                        hp[i].as = as[i];
                        if (check_source(req->app->pools, &views[i], as[i], &as_checked[i], resp) < 0)
                                return;
                }
        }

        struct handoff *h = NULL;
        int r = handoff_compose(f, hp, n, &h);
        if (r < 0) {
                struct problem p = { 0 };
                if (r == -ENOMEM) {
                        api_oom(resp);
                        return;
                }
                problem_raise(&p, PROBLEM_INTERNAL_ERROR,
                              "the pool paths cannot be written for %s (a control character in a path?)", vmm_s);
                resp_problem(resp, &p);
                return;
        }

        char total[32], note[512];
        qemu_size(h->memory_bytes, total, sizeof(total));
        f->note(total, note, sizeof(note));
        struct json *o = json_new_object();
        json_add_str(o, "vmm", f->name);
        struct json *arr = json_add_array(o, "pools");
        for (size_t i = 0; i < n; i++) {
                struct json *e = json_append_object(arr);
                json_add_str(e, "name", views[i].name);
                json_add_u64(e, "guest_node", i);
                json_add_u64(e, "node", (uint64_t)views[i].node);
                json_add_u64(e, "size_bytes", views[i].size_bytes);
                json_add_u64(e, "page_size_bytes", views[i].page_size);
                json_add_str(e, "path", views[i].path);
                if (n_as) {
                        json_add_str(e, "as", as[i]);
                        json_add_bool(e, "as_checked", as_checked[i]);
                }
        }
        json_add_u64(o, "memory_bytes", h->memory_bytes);
        if (f->output == HPW_VMM_SHELL)
                json_add_str(o, "args", h->shell);
        add_argv(o, "argv", h);
        if (f->output == HPW_VMM_XML) {
                json_add_str(o, "xml", h->xml);
                json_add_str(o, "namespace", h->xml_namespace);
        }
        json_add_str(o, "note", note);
        handoff_free(h);
        resp_json(resp, 200, json_print(o));
        json_free(o);
}
