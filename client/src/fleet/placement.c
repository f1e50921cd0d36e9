/* placement: a host's warm hugepages as OpenStack Placement inventory.
 *
 * Nova's scheduler asks Placement, not hpwarmd, which hosts can take a VM,
 * and holds what it picked as an allocation for the VM's whole life.  So a
 * sync reads what hpwarmd has (nodes, stock, pools), turns it into one child
 * resource provider per NUMA node of the compute node's provider (the one
 * nova-compute made; never created here) with one resource class per page
 * size the node has (CUSTOM_HPWARM_2M, CUSTOM_HPWARM_1G, CUSTOM_HPWARM_64K:
 * pl_class_name says the rule) counted in pages, and writes only what
 * differs from what Placement holds.
 *
 * The arithmetic (hpwarm.h says it too, docs/OPENSTACK.md says why):
 * capacity (total - reserved) is the ready stock pages plus the pages of
 * pools handed out from stock, because the allocation of a VM that took a
 * stock file stays while the file is its pool; reserved is what the stock
 * is still warming or recycling.  Placement lets an update put capacity
 * under the usage and forbids removing a class that has allocations
 * (InventoryInUse): neither is done here, the capacity is held at the usage
 * instead and the class says `kept`.
 *
 * Writes cost the control plane (each bumps the provider's generation), so
 * the session remembers the generation, inventory and usage it last saw and
 * a sync whose counts equal them asks Placement nothing; a write with a
 * stale generation (nova-compute, an operator adding a trait) gets 409
 * placement.concurrent_update and is retried after re-reading.  The
 * counting is offer.c's (pure, table-tested); the requests go
 * through http.c, the bodies through placement_json.c, the Keystone token
 * through keystone.c. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "offer.h"
#include "placement.h"
#include "precond.h"

/* 1.14: providers with parents; 1.20: POST answers the provider; 1.26:
 * reserved may equal total (everything still warming).  Placement 8.0
 * serves up to 1.39. */
#define PL_MICROVERSION "placement 1.26"
/* Conflicts one provider's write is retried through before the sync gives
 * up (each retry re-reads first): more writers than this at once is not a
 * race but a fight. */
#define PL_MAX_TRIES 5
/* Placement's name column is 200 characters; the child's suffix must fit. */
#define PL_NAME_MAX 200

_Static_assert(HPW_PL_MAX_CLASSES == OFFER_MAX_SIZES, "a provider holds a class per page size of its node");

struct pl_prov {
        int node;
        char *name, *uuid;
        uint32_t generation;
        bool known;                       /* inv, used and others are what Placement held */
        size_t n;                         /* classes: one per page size of the node */
        uint64_t page[OFFER_MAX_SIZES];   /* ascending */
        const char *cls[OFFER_MAX_SIZES]; /* pl_class_name(page[i]) */
        struct hpw_pl_inv inv[OFFER_MAX_SIZES];
        uint32_t used[OFFER_MAX_SIZES];
        char *others;                     /* classes not ours, kept on writes */
};

struct hpw_placement {
        struct hpw *h;
        char *url;                        /* NULL until the catalog gave it */
        char *compute_node, *cn_uuid;
        char *token;                      /* NULL = none (noauth2) */
        int64_t token_expires, token_renew_at; /* unix seconds; 0 = never */
        bool keystone;
        uint64_t classes_made;            /* bit k: the class of 2^k-byte pages exists */
        struct hpw_openstack_auth auth;   /* copies */
        char *auth_str[10];               /* what auth's members point at */
        size_t n;
        struct pl_prov *prov;
};

static void wipe_free(char *s)
{
        if (s) {
                explicit_bzero(s, strlen(s));
                free(s);
        }
}

/* ---- pure: classes and counting (the arithmetic is offer.c's) ---- */

#define PL_CLASS_PREFIX "CUSTOM_HPWARM_"

/* Every class name there can be, by log2 of the page size: written once,
 * then read only, so hpw_placement_class's resource_class stays static. */
static char class_names[64][sizeof(PL_CLASS_PREFIX) + 8];
static pthread_once_t class_names_once = PTHREAD_ONCE_INIT;

static void class_names_init(void)
{
        static const char unit[] = "KMGTPE";

        for (int k = 10; k < 64; k++)
                snprintf(class_names[k], sizeof(class_names[k]), PL_CLASS_PREFIX "%llu%c", 1ull << (k % 10),
                         unit[k / 10 - 1]);
}

const char *pl_class_name(uint64_t page_size)
{
        if (page_size < 1024 || (page_size & (page_size - 1)))
                return NULL;
        pthread_once(&class_names_once, class_names_init);
        return class_names[__builtin_ctzll(page_size)];
}

/* V's classes are O's page sizes.  When they differ (the first sync, or a
 * daemon started again with other sizes) what Placement holds is read
 * again for the new list. */
static void set_classes(struct pl_prov *v, const struct offer *o)
{
        uint64_t page[OFFER_MAX_SIZES];
        size_t n = 0;

        for (size_t i = 0; i < o->n; i++)
                if (pl_class_name(o->size[i].page_size))
                        page[n++] = o->size[i].page_size;
        if (n == v->n && memcmp(page, v->page, n * sizeof(page[0])) == 0)
                return;
        v->n = n;
        for (size_t i = 0; i < n; i++) {
                v->page[i] = page[i];
                v->cls[i] = pl_class_name(page[i]);
                v->inv[i] = (struct hpw_pl_inv){ 0 };
                v->used[i] = 0;
        }
        v->known = false;
}

/* Class I of V's count in O (zeros when O lacks its page size). */
static struct offer_count class_count(const struct offer *o, const struct pl_prov *v, size_t i)
{
        const struct offer_count *c = offer_find(o, v->page[i]);

        return c ? *c : (struct offer_count){ .page_size = v->page[i] };
}

/* The inventory C makes true when allocations hold USED pages (offer_want
 * in Placement's 32-bit integers); true when the capacity was held at USED. */
static bool pl_want(const struct offer_count *c, uint32_t used, struct hpw_pl_inv *ret)
{
        struct offer_publish w;
        bool kept = offer_want(c, used, PL_INT32_MAX, &w);

        *ret = (struct hpw_pl_inv){ .present = w.present, .total = (uint32_t)w.total,
                                    .reserved = (uint32_t)w.reserved };
        return kept;
}

int64_t pl_renew_at(int64_t now, int64_t expires)
{
        int64_t life, margin;

        if (expires <= now)
                return 0;     /* no expiry known (or already past): keep it until a 401 */
        life = expires - now;
        margin = life / 2 < PL_RENEW_BEFORE_S ? life / 2 : PL_RENEW_BEFORE_S;
        return expires - margin;
}

static bool inv_equal(const struct hpw_pl_inv *a, const struct hpw_pl_inv *b)
{
        if (a->present != b->present)
                return false;
        return !a->present || (a->total == b->total && a->reserved == b->reserved);
}

/* ---- requests ---- */

static int64_t now_s(void)
{
        return (int64_t)time(NULL);
}

static enum hpw_error get_token(struct hpw_placement *p)
{
        char *tok = NULL, *url = NULL;
        int64_t exp = 0, now = now_s();
        enum hpw_error err;

        if (!p->keystone || (p->token && (p->token_renew_at == 0 || now < p->token_renew_at)))
                return HPW_OK;
        err = hpw_keystone_token(p->h, &p->auth, &tok, &exp, p->url ? NULL : &url);
        if (err != HPW_OK)
                return err;
        if (!p->url) {
                if (!url) {
                        wipe_free(tok);
                        hpw_set_failure(p->h, "Keystone's catalog has no %s placement endpoint%s%s; give --placement URL",
                                        p->auth.interface ? p->auth.interface : "public",
                                        p->auth.region ? " in region " : "", p->auth.region ? p->auth.region : "");
                        return HPW_E_NOT_FOUND;
                }
                p->url = url;
        }
        wipe_free(p->token);
        p->token = tok;
        p->token_expires = exp;
        p->token_renew_at = pl_renew_at(now, exp);
        return HPW_OK;
}

/* One request to Placement; a 401 with Keystone credentials gets one new
 * token and one more try (the token may have been revoked early).  Fills
 * *RESP; returns the transport's error (with the message set) or HPW_OK
 * for any HTTP answer. */
static enum hpw_error pl_req(struct hpw_placement *p, const char *method, const char *path, const char *body,
                             struct hpw_http_resp *resp)
{
        struct hpw_http *http = NULL;
        struct hpw_conn conn, hc;
        char auth[8192];
        const char *hdrs[3] = { "OpenStack-API-Version: " PL_MICROVERSION, NULL, NULL };
        enum hpw_error err;

        if ((err = get_token(p)) != HPW_OK)
                return err;
        if ((err = hpw_http_new(&http)) != HPW_OK)
                return err;
        hpw_conn_get(p->h, &hc);
        for (int attempt = 0;; attempt++) {
                if (p->token) {
                        if (snprintf(auth, sizeof(auth), "X-Auth-Token: %s", p->token) >= (int)sizeof(auth)) {
                                err = HPW_E_INVALID;
                                hpw_set_failure(p->h, "the Placement token is too long");
                                break;
                        }
                        hdrs[1] = auth;
                }
                conn = (struct hpw_conn){ .base_url = p->url, .connect_ms = hc.connect_ms, .cancel = hc.cancel,
                                          .ca_file = hc.ca_file, .headers = hdrs };
                err = hpw_http_perform(http, &conn, method, path, body, hpw_total_timeout_ms(p->h), resp);
                if (err == HPW_OK && resp->transport != HPW_OK) {
                        err = resp->transport;
                        hpw_set_failure(p->h, "Placement %s: %s", p->url, resp->message);
                }
                if (err != HPW_OK || resp->status != 401 || !p->keystone || attempt > 0)
                        break;
                p->token_renew_at = 1;    /* renew now */
                if ((err = get_token(p)) != HPW_OK)
                        break;
        }
        explicit_bzero(auth, sizeof(auth));
        hpw_http_free(http);
        return err;
}

/* An answer that is not what the call expects: its error, with Placement's
 * own words. */
static enum hpw_error pl_fail(struct hpw_placement *p, const char *what, const struct hpw_http_resp *r)
{
        char code[80], detail[300];
        enum hpw_error err = hpw_status_error(r->status, NULL);

        hpw_pj_error(r->body, r->len, code, sizeof(code), detail, sizeof(detail));
        if (err == HPW_OK)
                err = HPW_E_PROTOCOL;
        if (r->status == 401 || r->status == 403)
                hpw_set_failure(p->h, "Placement %s refused %s: HTTP %ld (%s)", p->url, what, r->status,
                                r->status == 401 ? "the token is not valid: check --token-file or the OS_* credentials"
                                                 : "the credentials lack the role Placement's policy asks for");
        else
                hpw_set_failure(p->h, "Placement %s: %s: HTTP %ld%s%s%s%s", p->url, what, r->status,
                                code[0] ? " " : "", code, detail[0] ? ": " : "", detail);
        return err;
}

/* The provider named NAME: *RET_FOUND, its uuid and generation. */
static enum hpw_error find_provider(struct hpw_placement *p, const char *name, bool *ret_found, char **ret_uuid,
                                    uint32_t *ret_gen)
{
        struct hpw_http_resp r = { .retry_after_s = -1 };
        char *esc = hpw_prom_escape(name), *path = NULL;
        enum hpw_error err;

        if (!esc || asprintf(&path, "/resource_providers?name=%s", esc) < 0) {
                free(esc);
                return HPW_E_NOMEM;
        }
        err = pl_req(p, "GET", path, NULL, &r);
        if (err == HPW_OK && r.status != 200)
                err = pl_fail(p, "the provider list", &r);
        else if (err == HPW_OK && (err = hpw_pj_provider(r.body, r.len, ret_found, ret_uuid, ret_gen)) != HPW_OK)
                hpw_set_failure(p->h, "Placement %s: the provider list is not Placement's", p->url);
        hpw_http_resp_clear(&r);
        free(esc);
        free(path);
        return err;
}

/* V's resource classes, each made once a session. */
static enum hpw_error make_classes(struct hpw_placement *p, const struct pl_prov *v)
{
        struct hpw_http_resp r = { .retry_after_s = -1 };
        char path[80];
        enum hpw_error err = HPW_OK;

        for (size_t i = 0; i < v->n && err == HPW_OK; i++) {
                uint64_t bit = 1ull << __builtin_ctzll(v->page[i]);
                if (p->classes_made & bit)
                        continue;
                snprintf(path, sizeof(path), "/resource_classes/%s", v->cls[i]);
                err = pl_req(p, "PUT", path, NULL, &r);
                if (err == HPW_OK && r.status != 201 && r.status != 204)
                        err = pl_fail(p, "creating the resource class", &r);
                hpw_http_resp_clear(&r);
                if (err == HPW_OK)
                        p->classes_made |= bit;
        }
        return err;
}

static enum hpw_error ensure_provider(struct hpw_placement *p, struct pl_prov *v, bool *ret_created)
{
        struct hpw_http_resp r = { .retry_after_s = -1 };
        bool found = false;
        char *body;
        enum hpw_error err;

        if (v->uuid)
                return HPW_OK;
        if ((err = find_provider(p, v->name, &found, &v->uuid, &v->generation)) != HPW_OK || found)
                return err;
        if (!(body = hpw_pj_provider_body(v->name, p->cn_uuid)))
                return HPW_E_NOMEM;
        err = pl_req(p, "POST", "/resource_providers", body, &r);
        free(body);
        /* 409: another sync made it since the lookup; it is ours all the same. */
        if (err == HPW_OK && r.status != 200 && r.status != 201 && r.status != 409)
                err = pl_fail(p, "creating the NUMA node's provider", &r);
        *ret_created = err == HPW_OK && r.status != 409;
        hpw_http_resp_clear(&r);
        if (err == HPW_OK && (err = find_provider(p, v->name, &found, &v->uuid, &v->generation)) == HPW_OK &&
            !found) {
                err = HPW_E_PROTOCOL;
                hpw_set_failure(p->h, "Placement %s: provider %s is not listed after its creation", p->url, v->name);
        }
        v->known = false;
        return err;
}

static enum hpw_error read_usage(struct hpw_placement *p, struct pl_prov *v)
{
        struct hpw_http_resp r = { .retry_after_s = -1 };
        char path[160];
        enum hpw_error err;

        snprintf(path, sizeof(path), "/resource_providers/%s/usages", v->uuid);
        err = pl_req(p, "GET", path, NULL, &r);
        if (err == HPW_OK && r.status != 200)
                err = pl_fail(p, "reading the usage", &r);
        else if (err == HPW_OK && (err = hpw_pj_usages(r.body, r.len, v->cls, v->n, v->used)) != HPW_OK)
                hpw_set_failure(p->h, "Placement %s: the usage of %s is not Placement's", p->url, v->name);
        hpw_http_resp_clear(&r);
        return err;
}

/* Inventory (with its generation) and usage.  The usage is read after the
 * inventory: a generation that moved in between shows up as a conflict
 * on the write. */
static enum hpw_error read_provider(struct hpw_placement *p, struct pl_prov *v)
{
        struct hpw_http_resp r = { .retry_after_s = -1 };
        char path[160];
        char *others = NULL;
        uint32_t gen;
        struct hpw_pl_inv inv[OFFER_MAX_SIZES];
        enum hpw_error err;

        snprintf(path, sizeof(path), "/resource_providers/%s/inventories", v->uuid);
        err = pl_req(p, "GET", path, NULL, &r);
        if (err == HPW_OK && r.status != 200)
                err = pl_fail(p, "reading the inventory", &r);
        else if (err == HPW_OK && (err = hpw_pj_inventories(r.body, r.len, v->cls, v->n, &gen, inv, &others)) != HPW_OK)
                hpw_set_failure(p->h, "Placement %s: the inventory of %s is not Placement's", p->url, v->name);
        hpw_http_resp_clear(&r);
        if (err == HPW_OK)
                err = read_usage(p, v);
        if (err != HPW_OK) {
                free(others);
                return err;
        }
        memcpy(v->inv, inv, v->n * sizeof(inv[0]));
        v->generation = gen;
        free(v->others);
        v->others = others;
        v->known = true;
        return HPW_OK;
}

/* Bring V's inventory to what COUNTS (one per class of V) say, given its
 * usage.  *RET_KEPT[i]: class i's capacity was held at its usage. */
static enum hpw_error reconcile(struct hpw_placement *p, struct pl_prov *v, const struct offer_count *counts,
                                bool reread, bool *kept, bool *ret_written, unsigned *conflicts)
{
        struct hpw_http_resp r = { .retry_after_s = -1 };
        struct hpw_pl_inv want[OFFER_MAX_SIZES];
        bool fresh = false, same;
        char path[160], *body, code[80], detail[200];
        enum hpw_error err;

        for (int attempt = 0; attempt < PL_MAX_TRIES; attempt++) {
                if (!v->known || reread) {
                        if ((err = read_provider(p, v)) != HPW_OK)
                                return err;
                        fresh = true;
                        reread = false;
                }
                same = true;
                for (size_t i = 0; i < v->n; i++) {
                        kept[i] = pl_want(&counts[i], v->used[i], &want[i]);
                        same = same && inv_equal(&want[i], &v->inv[i]);
                }
                if (same)
                        return HPW_OK;
                if (!fresh) {
                        /* A write is due: decide it on the current usage,
                         * and write on the generation last seen (a 409
                         * says when another writer moved it). */
                        if ((err = read_usage(p, v)) != HPW_OK)
                                return err;
                        fresh = true;
                        attempt--;
                        continue;
                }
                if (!(body = hpw_pj_inventories_body(v->generation, v->others, v->cls, v->n, want)))
                        return HPW_E_NOMEM;
                snprintf(path, sizeof(path), "/resource_providers/%s/inventories", v->uuid);
                err = pl_req(p, "PUT", path, body, &r);
                free(body);
                if (err != HPW_OK)
                        return err;
                if (r.status == 200) {
                        uint32_t gen;
                        struct hpw_pl_inv got[OFFER_MAX_SIZES];
                        char *others = NULL;
                        err = hpw_pj_inventories(r.body, r.len, v->cls, v->n, &gen, got, &others);
                        hpw_http_resp_clear(&r);
                        if (err != HPW_OK) {
                                hpw_set_failure(p->h, "Placement %s: the written inventory is not Placement's", p->url);
                                return err;
                        }
                        memcpy(v->inv, got, v->n * sizeof(got[0]));
                        v->generation = gen;
                        free(v->others);
                        v->others = others;
                        *ret_written = true;
                        return HPW_OK;
                }
                hpw_pj_error(r.body, r.len, code, sizeof(code), detail, sizeof(detail));
                if (r.status != 409) {
                        err = pl_fail(p, "writing the inventory", &r);
                        hpw_http_resp_clear(&r);
                        return err;
                }
                /* concurrent_update: another writer moved the generation;
                 * inventory.inuse: an allocation came in since the usage
                 * was read.  Either way: read again and decide again. */
                hpw_http_resp_clear(&r);
                (*conflicts)++;
                v->known = false;
                fresh = false;
        }
        hpw_set_failure(p->h, "Placement %s: writing %s's inventory met %d conflicts in a row (%s%s%s)", p->url,
                        v->name, PL_MAX_TRIES, code, detail[0] ? ": " : "", detail);
        return HPW_E_CONFLICT;
}

/* ---- the public calls ---- */

void hpw_placement_free(struct hpw_placement *p)
{
        if (!p)
                return;
        for (size_t i = 0; i < p->n; i++) {
                free(p->prov[i].name);
                free(p->prov[i].uuid);
                free(p->prov[i].others);
        }
        free(p->prov);
        for (size_t i = 0; i < sizeof(p->auth_str) / sizeof(p->auth_str[0]); i++)
                wipe_free(p->auth_str[i]);
        wipe_free(p->token);
        free(p->url);
        free(p->compute_node);
        free(p->cn_uuid);
        free(p);
}

static enum hpw_error copy_auth(struct hpw_placement *p, const struct hpw_openstack_auth *a)
{
        const char *src[10] = { a->auth_url, a->username, a->password, a->project_name, a->user_domain_name,
                                a->project_domain_name, a->app_cred_id, a->app_cred_secret, a->interface,
                                a->region };
        const char **dst[10] = { &p->auth.auth_url, &p->auth.username, &p->auth.password, &p->auth.project_name,
                                 &p->auth.user_domain_name, &p->auth.project_domain_name, &p->auth.app_cred_id,
                                 &p->auth.app_cred_secret, &p->auth.interface, &p->auth.region };

        for (int i = 0; i < 10; i++) {
                if (!src[i] || !src[i][0])
                        continue;
                if (!(p->auth_str[i] = strdup(src[i])))
                        return HPW_E_NOMEM;
                *dst[i] = p->auth_str[i];
        }
        return HPW_OK;
}

bool pl_url_ok(const char *u)
{
        return u && (strncmp(u, "http://", 7) == 0 || strncmp(u, "https://", 8) == 0) &&
               strlen(u) < 1024 && !strpbrk(u, " \t\r\n?#");
}

enum hpw_error hpw_placement_new(struct hpw *h, const struct hpw_placement_opts *o, struct hpw_placement **ret)
{
        struct hpw_placement *p;
        enum hpw_error err;

        hpw_assert_handle(h);
        hpw_begin_call(h);
        hpw_assert_return_h(h, ret != NULL, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, o != NULL, HPW_E_NULL_ARGUMENT);
        hpw_assert_return_h(h, o->size >= sizeof(*o), HPW_E_STRUCT_SIZE);
        hpw_assert_return_h(h, o->compute_node != NULL, HPW_E_NULL_ARGUMENT);
        if (!o->compute_node[0] || strlen(o->compute_node) + sizeof("_hpwarm_numa9999") > PL_NAME_MAX) {
                hpw_set_failure(h, "the compute node's name must be 1 to %zu characters",
                                PL_NAME_MAX - sizeof("_hpwarm_numa9999"));
                return HPW_E_INVALID;
        }
        if (o->placement_url && !pl_url_ok(o->placement_url)) {
                hpw_set_failure(h, "--placement '%s': not an http:// or https:// URL", o->placement_url);
                return HPW_E_INVALID;
        }
        if (o->auth && o->auth->auth_url &&
            !(o->auth->app_cred_id ? o->auth->app_cred_secret != NULL
                                   : o->auth->username && o->auth->password)) {
                hpw_set_failure(h, "Keystone: OS_AUTH_URL needs OS_USERNAME and OS_PASSWORD, or "
                                   "OS_APPLICATION_CREDENTIAL_ID and OS_APPLICATION_CREDENTIAL_SECRET");
                return HPW_E_INVALID;
        }
        if (!o->placement_url && !(o->auth && o->auth->auth_url)) {
                hpw_set_failure(h, "no Placement endpoint: give --placement URL, or OS_AUTH_URL to find it in Keystone's catalog");
                return HPW_E_INVALID;
        }
        if (!(p = calloc(1, sizeof(*p))))
                return HPW_E_NOMEM;
        p->h = h;
        if (!(p->compute_node = strdup(o->compute_node)) ||
            (o->placement_url && !(p->url = strdup(o->placement_url)))) {
                hpw_placement_free(p);
                return HPW_E_NOMEM;
        }
        if (p->url) {
                size_t l = strlen(p->url);
                while (l > 0 && p->url[l - 1] == '/')
                        p->url[--l] = '\0';
        }
        if (o->token_file) {
                /* hpwarmd's token-file format and checks, through a handle
                 * of its own. */
                struct hpw *t = NULL;
                struct hpw_conn c;
                if ((err = hpw_new("http://localhost", &t)) != HPW_OK ||
                    (err = hpw_set_token_file(t, o->token_file)) != HPW_OK) {
                        if (t)
                                hpw_set_failure(h, "--token-file: %s", hpw_last_message(t));
                        hpw_free(t);
                        hpw_placement_free(p);
                        return err;
                }
                hpw_conn_get(t, &c);
                p->token = c.token ? strdup(c.token) : NULL;
                hpw_free(t);
                if (!p->token) {
                        hpw_placement_free(p);
                        return HPW_E_NOMEM;
                }
        } else if (o->auth && o->auth->auth_url) {
                p->keystone = true;
                if ((err = copy_auth(p, o->auth)) != HPW_OK) {
                        hpw_placement_free(p);
                        return err;
                }
        }
        *ret = p;
        return HPW_OK;
}

void hpw_placement_sync_free(struct hpw_placement_sync *x)
{
        if (!x)
                return;
        for (size_t i = 0; i < x->n; i++) {
                struct hpw_placement_provider *v = x->providers[i];
                if (!v)
                        continue;
                for (size_t j = 0; j < v->n; j++)
                        free(v->classes[j]);
                free(v->classes);
                free(v->name);
                free(v->uuid);
                free(v);
        }
        free(x->providers);
        free(x->placement_url);
        free(x->compute_node_uuid);
        free(x);
}

/* The sessions's providers for the daemon's nodes (the node list is fixed
 * for a daemon's life; a new one gets providers on the next sync). */
static enum hpw_error ensure_slots(struct hpw_placement *p, const struct hpw_node_list *nl)
{
        for (size_t i = 0; i < nl->n; i++) {
                struct pl_prov *v = NULL, *grown;
                for (size_t j = 0; j < p->n; j++)
                        if (p->prov[j].node == nl->nodes[i]->id)
                                v = &p->prov[j];
                if (v)
                        continue;
                if (!(grown = realloc(p->prov, (p->n + 1) * sizeof(*grown))))
                        return HPW_E_NOMEM;
                p->prov = grown;
                v = &p->prov[p->n];
                memset(v, 0, sizeof(*v));
                v->node = nl->nodes[i]->id;
                if (asprintf(&v->name, "%s_hpwarm_numa%d", p->compute_node, v->node) < 0) {
                        v->name = NULL;
                        return HPW_E_NOMEM;
                }
                p->n++;
        }
        return HPW_OK;
}

static enum hpw_error result_add(struct hpw_placement_sync *res, const struct pl_prov *v,
                                 const struct offer_count *c, const bool *kept, bool created, bool written)
{
        struct hpw_placement_provider *rp = calloc(1, sizeof(*rp));

        if (!rp)
                return HPW_E_NOMEM;
        res->providers[res->n++] = rp;
        rp->node = v->node;
        rp->generation = v->generation;
        rp->created = created;
        rp->written = written;
        if (!(rp->name = strdup(v->name)) || !(rp->uuid = strdup(v->uuid)) ||
            !(rp->classes = calloc(v->n ? v->n : 1, sizeof(*rp->classes))))
                return HPW_E_NOMEM;
        for (size_t i = 0; i < v->n; i++) {
                struct hpw_placement_class *k = calloc(1, sizeof(*k));
                if (!k)
                        return HPW_E_NOMEM;
                rp->classes[rp->n++] = k;
                k->resource_class = v->cls[i];
                k->page_size_bytes = v->page[i];
                k->ready = c[i].ready;
                k->in_use = c[i].in_use;
                k->warming = c[i].warming;
                k->total = v->inv[i].present ? v->inv[i].total : 0;
                k->reserved = v->inv[i].present ? v->inv[i].reserved : 0;
                k->used = v->used[i];
                k->kept = kept[i];
        }
        return HPW_OK;
}

enum hpw_error hpw_placement_sync(struct hpw_placement *p, bool reread, struct hpw_placement_sync **ret)
{
        struct hpw_node_list *nl = NULL;
        struct hpw_stock *st = NULL;
        struct hpw_pool_list *pl = NULL;
        struct hpw_placement_sync *res = NULL;
        char msg[512];
        bool found = false;
        uint32_t gen;
        enum hpw_error err;

        hpw_assert_handle(p);
        hpw_begin_call(p->h);
        hpw_assert_return_h(p->h, ret != NULL, HPW_E_NULL_ARGUMENT);
        /* What hpwarmd has, first: a daemon that does not answer writes
         * nothing to Placement. */
        if ((err = hpw_nodes(p->h, &nl)) != HPW_OK)
                goto daemon_failed;
        err = hpw_stock_get(p->h, &st);
        if (err == HPW_E_NOT_FOUND)
                err = HPW_OK;    /* a daemon without stock: nothing ready */
        if (err != HPW_OK || (err = hpw_pools(p->h, &pl)) != HPW_OK)
                goto daemon_failed;
        if ((err = ensure_slots(p, nl)) != HPW_OK)
                goto out;
        if ((err = get_token(p)) != HPW_OK)
                goto out;
        if (!p->cn_uuid) {
                if ((err = find_provider(p, p->compute_node, &found, &p->cn_uuid, &gen)) != HPW_OK)
                        goto out;
                if (!found) {
                        hpw_set_failure(p->h, "Placement %s has no resource provider named '%s' (nova-compute "
                                              "creates it for its compute node): nothing created", p->url,
                                        p->compute_node);
                        err = HPW_E_NOT_FOUND;
                        goto out;
                }
        }
        if (!(res = calloc(1, sizeof(*res))) || !(res->providers = calloc(p->n, sizeof(*res->providers))) ||
            !(res->placement_url = strdup(p->url)) || !(res->compute_node_uuid = strdup(p->cn_uuid))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        for (size_t i = 0; i < p->n; i++) {
                struct pl_prov *v = &p->prov[i];
                struct offer_count c[OFFER_MAX_SIZES];
                struct offer o = { .node = v->node };   /* a node gone since: nothing */
                bool kept[OFFER_MAX_SIZES] = { false }, created = false, written = false;
                for (size_t j = 0; j < nl->n; j++)
                        if (nl->nodes[j]->id == v->node)
                                offer_of_node(nl->nodes[j], st, pl, &o);
                set_classes(v, &o);
                for (size_t k = 0; k < v->n; k++)
                        c[k] = class_count(&o, v, k);
                if ((err = make_classes(p, v)) != HPW_OK ||
                    (err = ensure_provider(p, v, &created)) != HPW_OK ||
                    (err = reconcile(p, v, c, reread, kept, &written, &res->conflicts)) != HPW_OK ||
                    (err = result_add(res, v, c, kept, created, written)) != HPW_OK)
                        goto out;
                res->writes += written;
        }
        *ret = res;
        res = NULL;
        goto out;
daemon_failed:
        snprintf(msg, sizeof(msg), "%s", hpw_last_message(p->h));
        hpw_set_failure(p->h, "hpwarmd: %s", msg[0] ? msg : hpw_strerror(err));
out:
        hpw_placement_sync_free(res);
        hpw_node_list_free(nl);
        hpw_stock_free(st);
        hpw_pool_list_free(pl);
        return err;
}
