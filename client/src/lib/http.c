/* http: the library's only contact with libcurl.
 *
 * One easy handle per struct hpw, reused across calls so a wait loop keeps
 * its connection; options are reset and set afresh for every attempt, so no
 * request inherits another's method or body.  The fleet path drives many
 * easy handles through one multi handle: every host is asked at once and a
 * dead or silent host costs at most the per-host timeout, not a serial wait.
 * Transport failures are reduced to the public enum here; HTTP statuses are
 * left to retry.c. */
#include <curl/curl.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"


struct hpw_http {
        CURL *easy;
};

struct buf {
        char *data;
        size_t len;
        bool too_big;
};

void hpw_http_global_init(void)
{
        curl_global_init(CURL_GLOBAL_DEFAULT);
}

void hpw_http_global_cleanup(void)
{
        curl_global_cleanup();
}

void hpw_http_resp_clear(struct hpw_http_resp *r)
{
        if (!r)
                return;
        free(r->body);
        if (r->header) {
                explicit_bzero(r->header, strlen(r->header));
                free(r->header);
        }
        memset(r, 0, sizeof(*r));
        r->retry_after_s = -1;
}

/* HOST[:PORT] as the CLI takes it: a name or IPv4 address, or [IPv6], then
 * an optional port of digits.  Anything else (another scheme, a path, user
 * info) is not a target. */
static bool host_port_ok(const char *s)
{
        size_t h;

        if (s[0] == '[') {
                const char *e = strchr(s, ']');
                if (!e || e == s + 1 || strspn(s + 1, "0123456789abcdefABCDEF:.") != (size_t)(e - s - 1))
                        return false;
                h = (size_t)(e - s) + 1;
        } else {
                h = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_");
                if (h == 0)
                        return false;
        }
        if (s[h] == '\0')
                return true;
        return s[h] == ':' && s[h + 1] && strspn(s + h + 1, "0123456789") == strlen(s + h + 1) &&
               strlen(s + h + 1) <= 5;
}

enum hpw_error hpw_url_split(const char *url, char **ret_base, char **ret_socket)
{
        char *base, *sock = NULL;
        size_t n;

        if (!url || !url[0])
                return HPW_E_INVALID;
        if (strncmp(url, "unix://", 7) == 0 || strncmp(url, "unix:/", 6) == 0 || url[0] == '/') {
                /* unix:///run/x.sock, unix:/run/x.sock or /run/x.sock: the
                 * path must be absolute. */
                const char *path = url[0] == '/' ? url : strncmp(url, "unix://", 7) == 0 ? url + 7 : url + 5;

                if (path[0] != '/' || path[1] == '\0' || path[1] == '/')
                        return HPW_E_INVALID;
                sock = strdup(path);
                if (!sock)
                        return HPW_E_NOMEM;
                base = strdup("http://localhost");
        } else if (strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0) {
                const char *host = strstr(url, "://") + 3;
                if (!host[0] || host[0] == '/' || strpbrk(url, "?# \t\r\n"))
                        return HPW_E_INVALID;
                base = strdup(url);
                if (base) {
                        n = strlen(base);
                        while (n > 0 && base[n - 1] == '/')
                                base[--n] = '\0';
                }
        } else if (host_port_ok(url)) {
                /* HOST:PORT (or HOST), as the CLI's --url takes it: http. */
                if (asprintf(&base, "http://%s", url) < 0)
                        base = NULL;
        } else {
                return HPW_E_INVALID;
        }
        if (!base) {
                free(sock);
                return HPW_E_NOMEM;
        }
        *ret_base = base;
        *ret_socket = sock;
        return HPW_OK;
}

enum hpw_error hpw_http_new(struct hpw_http **ret)
{
        struct hpw_http *x = calloc(1, sizeof(*x));

        if (!x)
                return HPW_E_NOMEM;
        x->easy = curl_easy_init();
        if (!x->easy) {
                free(x);
                return HPW_E_NOMEM;
        }
        *ret = x;
        return HPW_OK;
}

void hpw_http_free(struct hpw_http *x)
{
        if (!x)
                return;
        curl_easy_cleanup(x->easy);
        free(x);
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct buf *b = userdata;
        size_t n = size * nmemb;
        char *p;

        if (b->len + n > HPW_MAX_BODY) {
                b->too_big = true;
                return 0;
        }
        p = realloc(b->data, b->len + n + 1);
        if (!p)
                return 0;
        memcpy(p + b->len, ptr, n);
        b->len += n;
        p[b->len] = '\0';
        b->data = p;
        return n;
}

/* CONNECTED says whether the attempt ever had a connection: a timeout
 * before that (a SYN dropped by a firewall, a host that is down) is the same
 * as "unreachable" and worth another attempt, while a timeout after it means
 * the server took too long and retrying would only double the wait. */
enum hpw_error hpw_transport_error(int curl_code, bool connected)
{
        CURLcode rc = (CURLcode)curl_code;

        if (rc == CURLE_OPERATION_TIMEDOUT && !connected)
                return HPW_E_UNREACHABLE;
        switch (rc) {
        case CURLE_OK:
                return HPW_OK;
        case CURLE_COULDNT_CONNECT:
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_GOT_NOTHING:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
                return HPW_E_UNREACHABLE;
        case CURLE_OPERATION_TIMEDOUT:
                return HPW_E_TIMEOUT;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_CRL_BADFILE:
                return HPW_E_TLS;
        case CURLE_OUT_OF_MEMORY:
                return HPW_E_NOMEM;
        case CURLE_WRITE_ERROR:
        case CURLE_FILESIZE_EXCEEDED:
                return HPW_E_PROTOCOL;
        case CURLE_ABORTED_BY_CALLBACK:
                return HPW_E_CANCELLED;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL:
                return HPW_E_INVALID;
        default:
                return HPW_E_UNREACHABLE;
        }
}

/* libcurl's progress hook, used only to stop a transfer that hpw_cancel()
 * cancelled; libcurl then closes the connection, so nothing half-read is
 * left for the next request. */
static int on_xferinfo(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
        (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
        return atomic_load((atomic_bool *)clientp) ? 1 : 0;
}

/* Set everything one request needs on EASY.  HEADERS is built here and
 * freed by the caller after the transfer. */
static enum hpw_error setup(CURL *easy, const struct hpw_conn *c, const char *method,
                            const char *path, const char *body, uint64_t timeout_ms,
                            struct buf *b, char *errbuf, struct curl_slist **ret_headers)
{
        struct curl_slist *hdrs = NULL, *t;
        size_t ulen = strlen(c->base_url) + strlen(path) + 1;
        char *url = malloc(ulen);
        char *auth = NULL;
        CURLcode rc = CURLE_OK;

        if (!url)
                return HPW_E_NOMEM;
        snprintf(url, ulen, "%s%s", c->base_url, path);

        curl_easy_reset(easy);
#define SET(opt, val) do { if (rc == CURLE_OK) rc = curl_easy_setopt(easy, opt, val); } while (0)
        SET(CURLOPT_URL, url);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_ERRORBUFFER, errbuf);
        SET(CURLOPT_WRITEFUNCTION, on_body);
        SET(CURLOPT_WRITEDATA, b);
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_USERAGENT, "hpwarm/" HPW_VERSION_STRING);
        /* hpwarmd is reached directly: an empty proxy overrides http_proxy,
         * https_proxy and all_proxy, so the bearer token never goes to a
         * proxy the environment happens to name. */
        SET(CURLOPT_PROXY, "");
        if (c->socket_path)
                SET(CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
        if (c->connect_ms)
                SET(CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_ms);
        if (timeout_ms)
                SET(CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        if (c->ca_file)
                SET(CURLOPT_CAINFO, c->ca_file);
        if (c->cert_file)
                SET(CURLOPT_SSLCERT, c->cert_file);
        if (c->key_file)
                SET(CURLOPT_SSLKEY, c->key_file);
        if (c->cancel) {
                SET(CURLOPT_XFERINFOFUNCTION, on_xferinfo);
                SET(CURLOPT_XFERINFODATA, (void *)c->cancel);
                SET(CURLOPT_NOPROGRESS, 0L);
        }
        if (strcmp(method, "GET") != 0)
                SET(CURLOPT_CUSTOMREQUEST, method);
        if (body) {
                SET(CURLOPT_POSTFIELDS, body);
                SET(CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        } else if (strcmp(method, "POST") == 0) {
                SET(CURLOPT_POSTFIELDS, "");
                SET(CURLOPT_POSTFIELDSIZE, 0L);
        }
#undef SET
        /* curl copies the URL string. */
        free(url);
        if (rc != CURLE_OK)
                return rc == CURLE_OUT_OF_MEMORY ? HPW_E_NOMEM : HPW_E_INVALID;

        t = curl_slist_append(hdrs, "Accept: application/json, application/problem+json");
        if (t) hdrs = t;
        if (t) {
                /* A bodiless POST (claim) would otherwise go out as a form
                 * post, which a strict server answers 415. */
                t = curl_slist_append(hdrs, body ? "Content-Type: application/json" : "Content-Type:");
                if (t) hdrs = t;
        }
        if (t) {
                /* No "Expect: 100-continue" round trip for our tiny bodies. */
                t = curl_slist_append(hdrs, "Expect:");
                if (t) hdrs = t;
        }
        for (size_t i = 0; t && c->headers && c->headers[i]; i++) {
                t = curl_slist_append(hdrs, c->headers[i]);
                if (t) hdrs = t;
        }
        if (t && c->token) {
                size_t alen = strlen(c->token) + 32;
                auth = malloc(alen);
                if (auth) {
                        snprintf(auth, alen, "Authorization: Bearer %s", c->token);
                        t = curl_slist_append(hdrs, auth);
                        if (t) hdrs = t;
                        /* Do not leave the token lying around in freed memory. */
                        explicit_bzero(auth, alen);
                        free(auth);
                } else {
                        t = NULL;
                }
        }
        if (!t || curl_easy_setopt(easy, CURLOPT_HTTPHEADER, hdrs) != CURLE_OK) {
                curl_slist_free_all(hdrs);
                return HPW_E_NOMEM;
        }
        *ret_headers = hdrs;
        return HPW_OK;
}

static void finish(CURL *easy, CURLcode rc, struct buf *b, const char *errbuf, const char *want_header,
                   struct hpw_http_resp *resp)
{
        struct curl_header *hv = NULL;

        long status = 0;
        curl_off_t ra = -1, connect_us = 0;

        if (curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connect_us) != CURLE_OK)
                connect_us = 0;
        resp->transport = hpw_transport_error(rc, connect_us > 0);
        if (rc == CURLE_WRITE_ERROR && !b->too_big)
                resp->transport = HPW_E_NOMEM;
        if (resp->transport != HPW_OK) {
                snprintf(resp->message, sizeof(resp->message), "%s",
                         b->too_big ? "answer too large" : errbuf[0] ? errbuf : curl_easy_strerror(rc));
                free(b->data);
                return;
        }
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (curl_easy_getinfo(easy, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
                resp->retry_after_s = (int64_t)ra;
        else if (status == 429 || status == 503)
                resp->retry_after_s = -1;
        resp->status = status;
        resp->body = b->data;
        resp->len = b->len;
        if (want_header && curl_easy_header(easy, want_header, 0, CURLH_HEADER, -1, &hv) == CURLHE_OK && hv->value)
                resp->header = strdup(hv->value);
}

enum hpw_error hpw_http_perform(struct hpw_http *x, const struct hpw_conn *c, const char *method,
                                const char *path, const char *body, uint64_t timeout_ms,
                                struct hpw_http_resp *resp)
{
        struct curl_slist *hdrs = NULL;
        struct buf b = { 0 };
        char errbuf[CURL_ERROR_SIZE] = "";
        enum hpw_error err;
        CURLcode rc;

        hpw_http_resp_clear(resp);
        err = setup(x->easy, c, method, path, body, timeout_ms, &b, errbuf, &hdrs);
        if (err != HPW_OK) {
                resp->transport = err;
                snprintf(resp->message, sizeof(resp->message), "%s", hpw_strerror(err));
                return err == HPW_E_NOMEM ? err : HPW_OK;
        }
        rc = curl_easy_perform(x->easy);
        finish(x->easy, rc, &b, errbuf, c->want_header, resp);
        /* The header list must outlive the transfer; drop it and the options
         * pointing at it now. */
        curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(hdrs);
        return HPW_OK;
}

struct multi_slot {
        CURL *easy;
        struct curl_slist *hdrs;
        struct buf b;
        char errbuf[CURL_ERROR_SIZE];
};

enum hpw_error hpw_http_multi_get(const struct hpw_conn *conns, size_t n, const char *path,
                                  uint64_t timeout_ms, struct hpw_http_resp *resps)
{
        struct multi_slot *slots;
        CURLM *multi;
        enum hpw_error ret = HPW_OK;
        int running = 0;

        for (size_t i = 0; i < n; i++) {
                memset(&resps[i], 0, sizeof(resps[i]));
                resps[i].retry_after_s = -1;
        }
        if (n == 0)
                return HPW_OK;
        slots = calloc(n, sizeof(*slots));
        multi = curl_multi_init();
        if (!slots || !multi) {
                ret = HPW_E_NOMEM;
                goto out_free;
        }
        /* Do not let a few slow hosts starve the rest of connections. */
        curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);

        for (size_t i = 0; i < n; i++) {
                enum hpw_error err;

                if (!conns[i].base_url) {
                        resps[i].transport = HPW_E_INVALID;
                        snprintf(resps[i].message, sizeof(resps[i].message), "invalid URL");
                        continue;
                }
                slots[i].easy = curl_easy_init();
                if (!slots[i].easy) {
                        ret = HPW_E_NOMEM;
                        goto out_free;
                }
                err = setup(slots[i].easy, &conns[i], "GET", path, NULL, timeout_ms, &slots[i].b,
                            slots[i].errbuf, &slots[i].hdrs);
                if (err != HPW_OK) {
                        resps[i].transport = err;
                        snprintf(resps[i].message, sizeof(resps[i].message), "%s", hpw_strerror(err));
                        curl_easy_cleanup(slots[i].easy);
                        slots[i].easy = NULL;
                        if (err == HPW_E_NOMEM) {
                                ret = err;
                                goto out_free;
                        }
                        continue;
                }
                curl_easy_setopt(slots[i].easy, CURLOPT_PRIVATE, (void *)&slots[i]);
                if (curl_multi_add_handle(multi, slots[i].easy) != CURLM_OK) {
                        ret = HPW_E_NOMEM;
                        goto out_free;
                }
        }

        do {
                CURLMcode mc = curl_multi_perform(multi, &running);
                if (mc != CURLM_OK)
                        break;
                if (running)
                        mc = curl_multi_poll(multi, NULL, 0, 100, NULL);
                if (mc != CURLM_OK)
                        break;
        } while (running);

        for (;;) {
                int left;
                CURLMsg *m = curl_multi_info_read(multi, &left);
                struct multi_slot *s;
                void *priv = NULL;

                if (!m)
                        break;
                if (m->msg != CURLMSG_DONE)
                        continue;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
                s = priv;
                finish(s->easy, m->data.result, &s->b, s->errbuf, NULL, &resps[s - slots]);
                /* finish() took the body or freed it. */
                s->b.data = NULL;
        }

out_free:
        for (size_t i = 0; slots && i < n; i++) {
                if (slots[i].easy) {
                        if (multi)
                                curl_multi_remove_handle(multi, slots[i].easy);
                        curl_easy_cleanup(slots[i].easy);
                }
                curl_slist_free_all(slots[i].hdrs);
                if (slots[i].b.data) {
                        /* Never finished: report it rather than leave it blank. */
                        free(slots[i].b.data);
                }
                if (ret == HPW_OK && resps[i].transport == HPW_OK && resps[i].status == 0) {
                        resps[i].transport = HPW_E_UNREACHABLE;
                        snprintf(resps[i].message, sizeof(resps[i].message), "no answer");
                }
        }
        if (multi)
                curl_multi_cleanup(multi);
        free(slots);
        return ret;
}
