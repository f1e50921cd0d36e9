/* placement_json: the bodies of OpenStack's Placement and Keystone APIs.
 *
 * Beside json.c and json_answers.c (which read hpwarmd's answers): the same
 * rules, kept apart because these documents are another service's.  Readers are strict where a wrong shape
 * means the peer is not Placement or Keystone (the top level is one object,
 * required members have their types, counts fit Placement's 32-bit
 * integers) and ignore members they do not use, so newer microversions
 * still parse.  Lookups are case-sensitive (cJSON's default is not). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Placement's integer columns are 32-bit signed. */
#define PJ_INT_MAX 2147483647.0

static const cJSON *get(const cJSON *o, const char *key)
{
        return cJSON_GetObjectItemCaseSensitive(o, key);
}

static bool get_u32(const cJSON *o, const char *key, uint32_t *ret)
{
        const cJSON *v = get(o, key);

        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > PJ_INT_MAX ||
            v->valuedouble != (double)(uint32_t)v->valuedouble)
                return false;
        *ret = (uint32_t)v->valuedouble;
        return true;
}

static const char *get_str(const cJSON *o, const char *key)
{
        const cJSON *v = get(o, key);

        return cJSON_IsString(v) ? v->valuestring : NULL;
}

enum hpw_error hpw_pj_provider(const char *body, size_t len, bool *ret_found, char **ret_uuid,
                               uint32_t *ret_generation)
{
        cJSON *root = hpw_json_parse_object(body, len);
        const cJSON *list, *rp;
        const char *uuid;
        uint32_t gen;
        enum hpw_error err = HPW_E_PROTOCOL;

        if (!root)
                return HPW_E_PROTOCOL;
        list = get(root, "resource_providers");
        if (!cJSON_IsArray(list))
                goto out;
        rp = cJSON_GetArrayItem(list, 0);
        if (!rp) {
                *ret_found = false;
                err = HPW_OK;
                goto out;
        }
        uuid = get_str(rp, "uuid");
        if (!cJSON_IsObject(rp) || !uuid || strlen(uuid) > 64 || !get_u32(rp, "generation", &gen))
                goto out;
        if (!(*ret_uuid = strdup(uuid))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        *ret_generation = gen;
        *ret_found = true;
        err = HPW_OK;
out:
        cJSON_Delete(root);
        return err;
}

enum hpw_error hpw_pj_inventories(const char *body, size_t len, const char *const *names, size_t n,
                                  uint32_t *ret_generation, struct hpw_pl_inv *inv, char **ret_others)
{
        cJSON *root, *invs;
        struct hpw_pl_inv got[HPW_PL_MAX_CLASSES] = { 0 };
        uint32_t gen;
        char *others;

        if (n > HPW_PL_MAX_CLASSES)
                return HPW_E_INVALID;
        if (!(root = hpw_json_parse_object(body, len)))
                return HPW_E_PROTOCOL;
        invs = cJSON_GetObjectItemCaseSensitive(root, "inventories");
        if (!get_u32(root, "resource_provider_generation", &gen) || !cJSON_IsObject(invs))
                goto bad;
        for (size_t i = 0; i < n; i++) {
                cJSON *c = cJSON_DetachItemFromObjectCaseSensitive(invs, names[i]);
                if (!c)
                        continue;
                got[i].present = cJSON_IsObject(c) && get_u32(c, "total", &got[i].total) &&
                                 get_u32(c, "reserved", &got[i].reserved);
                cJSON_Delete(c);
                if (!got[i].present)
                        goto bad;
        }
        if (!(others = cJSON_PrintUnformatted(invs))) {
                cJSON_Delete(root);
                return HPW_E_NOMEM;
        }
        cJSON_Delete(root);
        memcpy(inv, got, n * sizeof(got[0]));
        *ret_generation = gen;
        *ret_others = others;
        return HPW_OK;
bad:
        cJSON_Delete(root);
        return HPW_E_PROTOCOL;
}

enum hpw_error hpw_pj_usages(const char *body, size_t len, const char *const *names, size_t n, uint32_t *used)
{
        cJSON *root;
        const cJSON *u;
        uint32_t got[HPW_PL_MAX_CLASSES] = { 0 };
        bool ok;

        if (n > HPW_PL_MAX_CLASSES)
                return HPW_E_INVALID;
        root = hpw_json_parse_object(body, len);
        u = get(root, "usages");
        ok = cJSON_IsObject(u);
        /* A class nothing uses yet may be absent: it reads as 0. */
        for (size_t i = 0; ok && i < n; i++)
                if (get(u, names[i]))
                        ok = get_u32(u, names[i], &got[i]);
        cJSON_Delete(root);
        if (!ok)
                return HPW_E_PROTOCOL;
        memcpy(used, got, n * sizeof(got[0]));
        return HPW_OK;
}

void hpw_pj_error(const char *body, size_t len, char *code, size_t codelen, char *detail, size_t detlen)
{
        cJSON *root = hpw_json_parse_object(body, len);
        const cJSON *e = cJSON_GetArrayItem(get(root, "errors"), 0);
        const char *c = get_str(e, "code"), *d = get_str(e, "detail");

        if (codelen)
                snprintf(code, codelen, "%s", c ? c : "");
        if (detlen) {
                /* One line: Placement's details carry newlines. */
                snprintf(detail, detlen, "%s", d ? d : "");
                for (char *p = detail; *p; p++)
                        if (*p == '\n' || *p == '\r')
                                *p = ' ';
        }
        cJSON_Delete(root);
}

char *hpw_pj_inventories_body(uint32_t generation, const char *others, const char *const *names, size_t n,
                              const struct hpw_pl_inv *inv)
{
        cJSON *root = cJSON_CreateObject(), *invs = others ? cJSON_Parse(others) : cJSON_CreateObject();
        cJSON *into;
        char *s = NULL;

        if (!root || !cJSON_IsObject(invs))
                goto out;
        cJSON_AddItemToObject(root, "inventories", invs);
        into = invs;
        invs = NULL;
        if (!cJSON_AddNumberToObject(root, "resource_provider_generation", generation))
                goto out;
        for (size_t i = 0; i < n; i++) {
                cJSON *c;
                if (!inv[i].present)
                        continue;
                if (!(c = cJSON_AddObjectToObject(into, names[i])) ||
                    !cJSON_AddNumberToObject(c, "total", inv[i].total) ||
                    !cJSON_AddNumberToObject(c, "reserved", inv[i].reserved) ||
                    !cJSON_AddNumberToObject(c, "min_unit", 1) ||
                    !cJSON_AddNumberToObject(c, "max_unit", inv[i].total) ||
                    !cJSON_AddNumberToObject(c, "step_size", 1) ||
                    !cJSON_AddNumberToObject(c, "allocation_ratio", 1.0))
                        goto out;
        }
        s = cJSON_PrintUnformatted(root);
out:
        cJSON_Delete(invs);
        cJSON_Delete(root);
        return s;
}

char *hpw_pj_provider_body(const char *name, const char *parent_uuid)
{
        cJSON *root = cJSON_CreateObject();
        char *s = NULL;

        if (root && cJSON_AddStringToObject(root, "name", name) &&
            cJSON_AddStringToObject(root, "parent_provider_uuid", parent_uuid))
                s = cJSON_PrintUnformatted(root);
        cJSON_Delete(root);
        return s;
}

/* {"name":NAME,"domain":{"name":DOMAIN}} */
static cJSON *named_in_domain(cJSON *parent, const char *key, const char *name, const char *domain)
{
        cJSON *o = cJSON_AddObjectToObject(parent, key), *d;

        if (!o || !cJSON_AddStringToObject(o, "name", name) || !(d = cJSON_AddObjectToObject(o, "domain")) ||
            !cJSON_AddStringToObject(d, "name", domain ? domain : "Default"))
                return NULL;
        return o;
}

static void wipe(const cJSON *v)
{
        if (cJSON_IsString(v) && v->valuestring)
                explicit_bzero(v->valuestring, strlen(v->valuestring));
}

char *hpw_pj_keystone_body(const struct hpw_openstack_auth *a)
{
        cJSON *root = cJSON_CreateObject(), *auth, *id, *m;
        char *s = NULL;

        if (!root || !(auth = cJSON_AddObjectToObject(root, "auth")) ||
            !(id = cJSON_AddObjectToObject(auth, "identity")) || !(m = cJSON_AddArrayToObject(id, "methods")))
                goto out;
        if (a->app_cred_id) {
                /* An application credential carries its own scope. */
                cJSON *ac;
                cJSON_AddItemToArray(m, cJSON_CreateString("application_credential"));
                if (!(ac = cJSON_AddObjectToObject(id, "application_credential")) ||
                    !cJSON_AddStringToObject(ac, "id", a->app_cred_id) ||
                    !cJSON_AddStringToObject(ac, "secret", a->app_cred_secret ? a->app_cred_secret : ""))
                        goto out;
        } else {
                cJSON *pw, *user, *scope;
                cJSON_AddItemToArray(m, cJSON_CreateString("password"));
                if (!(pw = cJSON_AddObjectToObject(id, "password")) ||
                    !(user = named_in_domain(pw, "user", a->username, a->user_domain_name)) ||
                    !cJSON_AddStringToObject(user, "password", a->password ? a->password : ""))
                        goto out;
                if (a->project_name && (!(scope = cJSON_AddObjectToObject(auth, "scope")) ||
                                        !named_in_domain(scope, "project", a->project_name, a->project_domain_name)))
                        goto out;
        }
        s = cJSON_PrintUnformatted(root);
out:
        /* The secret is one of the tree's strings: wipe it before freeing. */
        wipe(get(get(get(get(get(root, "auth"), "identity"), "password"), "user"), "password"));
        wipe(get(get(get(get(root, "auth"), "identity"), "application_credential"), "secret"));
        cJSON_Delete(root);
        return s;
}

int64_t hpw_pj_time(const char *s)
{
        struct tm tm = { 0 };
        const char *rest;

        if (!s || !(rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
                return -1;
        if (*rest == '.')
                for (rest++; *rest >= '0' && *rest <= '9'; rest++)
                        ;
        if (strcmp(rest, "Z") != 0 && strcmp(rest, "+00:00") != 0 && *rest != '\0')
                return -1;
        return (int64_t)timegm(&tm);
}

enum hpw_error hpw_pj_keystone_token(const char *body, size_t len, const char *want_type, const char *interface,
                                     const char *region, int64_t *ret_expires, char **ret_url)
{
        cJSON *root = hpw_json_parse_object(body, len);
        const cJSON *tok = get(root, "token"), *svc;
        const char *exp;
        char *url = NULL;

        if (!root || !cJSON_IsObject(tok)) {
                cJSON_Delete(root);
                return HPW_E_PROTOCOL;
        }
        exp = get_str(tok, "expires_at");
        *ret_expires = exp ? hpw_pj_time(exp) : 0;
        if (*ret_expires < 0)
                *ret_expires = 0;
        if (want_type)
                cJSON_ArrayForEach(svc, get(tok, "catalog")) {
                        const cJSON *ep;
                        const char *t = get_str(svc, "type");
                        if (!t || strcmp(t, want_type) != 0)
                                continue;
                        cJSON_ArrayForEach(ep, get(svc, "endpoints")) {
                                const char *i = get_str(ep, "interface"), *u = get_str(ep, "url");
                                const char *r = get_str(ep, "region_id") ? get_str(ep, "region_id")
                                                                         : get_str(ep, "region");
                                if (!i || !u || strcmp(i, interface) != 0 || (region && (!r || strcmp(r, region))))
                                        continue;
                                url = strdup(u);
                                goto found;
                        }
                }
found:
        cJSON_Delete(root);
        if (want_type && url == NULL && ret_url)
                *ret_url = NULL;
        else if (ret_url)
                *ret_url = url;
        else
                free(url);
        return HPW_OK;
}
