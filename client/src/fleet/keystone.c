/* keystone: a token from OpenStack's identity service, as services get one.
 *
 * One POST /v3/auth/tokens with the password of a user scoped to a project,
 * or with an application credential (which carries its scope): Keystone
 * answers 201 with the token in the X-Subject-Token header and, in the body,
 * its expiry and the service catalog, where the Placement endpoint is found
 * when the caller names none.  Renewal is the caller's (placement.c asks
 * again before the expiry).  Secrets (the password, the secret, the token)
 * are never put in a message and are wiped from the buffers that held
 * them.  The bodies are built and read in placement_json.c, the request
 * goes through http.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The catalog's service type of Placement. */
#define KS_PLACEMENT_TYPE "placement"

static void wipe_free(char *s)
{
        if (s) {
                explicit_bzero(s, strlen(s));
                free(s);
        }
}

enum hpw_error hpw_keystone_token(struct hpw *h, const struct hpw_openstack_auth *a, char **ret_token,
                                  int64_t *ret_expires, char **ret_url)
{
        struct hpw_http *http = NULL;
        struct hpw_http_resp resp = { .retry_after_s = -1 };
        struct hpw_conn conn, hc;
        char *base = NULL, *body = NULL, *url = NULL, code[80], detail[200];
        const char *path;
        size_t blen;
        int64_t expires = 0;
        enum hpw_error err;

        if (strncmp(a->auth_url, "http://", 7) != 0 && strncmp(a->auth_url, "https://", 8) != 0) {
                hpw_set_failure(h, "OS_AUTH_URL '%s': not an http:// or https:// URL", a->auth_url);
                return HPW_E_INVALID;
        }
        if (!(base = strdup(a->auth_url)))
                return HPW_E_NOMEM;
        blen = strlen(base);
        while (blen > 0 && base[blen - 1] == '/')
                base[--blen] = '\0';
        /* OS_AUTH_URL names the v3 root or the service root. */
        path = blen >= 3 && strcmp(base + blen - 3, "/v3") == 0 ? "/auth/tokens" : "/v3/auth/tokens";
        if (!(body = hpw_pj_keystone_body(a))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        hpw_conn_get(h, &hc);
        conn = (struct hpw_conn){ .base_url = base, .connect_ms = hc.connect_ms, .cancel = hc.cancel,
                                  .ca_file = hc.ca_file, .want_header = "X-Subject-Token" };
        if ((err = hpw_http_new(&http)) != HPW_OK ||
            (err = hpw_http_perform(http, &conn, "POST", path, body, hpw_total_timeout_ms(h), &resp)) != HPW_OK)
                goto out;
        if (resp.transport != HPW_OK) {
                err = resp.transport;
                hpw_set_failure(h, "Keystone %s: %s", base, resp.message);
                goto out;
        }
        if (resp.status != 201) {
                hpw_pj_error(resp.body, resp.len, code, sizeof(code), detail, sizeof(detail));
                err = hpw_status_error(resp.status, NULL);
                if (err == HPW_OK)
                        err = HPW_E_PROTOCOL;
                /* Keystone's own message says which part it refused; it
                 * never repeats the secret. */
                hpw_set_failure(h, "Keystone %s refused the credentials: HTTP %ld%s%s", base, resp.status,
                                detail[0] ? ": " : "", detail);
                goto out;
        }
        if (!resp.header || !resp.header[0]) {
                err = HPW_E_PROTOCOL;
                hpw_set_failure(h, "Keystone %s: a 201 without X-Subject-Token", base);
                goto out;
        }
        err = hpw_pj_keystone_token(resp.body, resp.len, ret_url ? KS_PLACEMENT_TYPE : NULL,
                                    a->interface ? a->interface : "public", a->region, &expires, &url);
        if (err != HPW_OK) {
                hpw_set_failure(h, "Keystone %s: the token answer is not Keystone v3's", base);
                goto out;
        }
        if (!(*ret_token = strdup(resp.header))) {
                err = HPW_E_NOMEM;
                goto out;
        }
        *ret_expires = expires;
        if (ret_url) {
                *ret_url = url;
                url = NULL;
        }
out:
        hpw_http_resp_clear(&resp);
        hpw_http_free(http);
        wipe_free(body);
        free(base);
        free(url);
        return err;
}
