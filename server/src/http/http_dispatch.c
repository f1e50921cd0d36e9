/* http_dispatch: from a parsed request to an encoded response, with no
 * socket in sight.  Routes, applies the body rules every route shares
 * (size, content type, no body where none is taken), calls the handler, and
 * turns its struct resp into (status, body, content type).  The socket path
 * (http.c) and the socketless entry below, used by tests and the fuzzer, go
 * through the same code. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "app.h"
#include "authz.h"
#include "http.h"
#include "http_internal.h"
#include "metrics.h"
#include "router.h"
#include "util.h"

void http_set_problem(struct resp *r, enum problem_id id, const char *detail)
{
        struct problem p = { 0 };
        problem_raise(&p, id, "%s", detail);
        resp_problem(r, &p);
}

static bool content_type_is_json(const char *ct)
{
        if (!ct)
                return false;
        size_t n = strlen("application/json");
        if (strncasecmp(ct, "application/json", n) != 0)
                return false;
        return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

/* Route REQ and run the handler.  Returns true when RESP carries deferred
 * work, or a parked long-poll, to finish before the response can be sent. */
bool http_dispatch(const struct route_table *routes, struct req *req, bool too_large, struct resp *resp)
{
        const struct route *route = NULL;
        char allow[64];

        resp->status = 0;
        switch (route_match(routes, req->method, req->path, req, &route, allow, sizeof(allow))) {
        case ROUTE_NO_PATH:
                req->route = NULL;
                http_set_problem(resp, PROBLEM_NOT_FOUND, "no such resource");
                return false;
        case ROUTE_BAD_METHOD: {
                req->route = NULL;
                struct problem p = { 0 };
                problem_raise(&p, PROBLEM_METHOD_NOT_ALLOWED, "%s is not allowed here; allowed: %s", req->method, allow);
                resp_problem(resp, &p);
                snprintf(resp->allow, sizeof(resp->allow), "%s", allow);
                return false;
        }
        case ROUTE_FOUND: break;
        }
        /* A route whose body is optional takes none at all as it is. */
        bool sent_body = req->body_len > 0 || too_large;
        if (route->body == ROUTE_BODY_JSON || (route->body == ROUTE_BODY_OPTIONAL && sent_body)) {
                if (too_large) {
                        http_set_problem(resp, PROBLEM_BODY_TOO_LARGE, "request bodies are limited to 64 KiB");
                        return false;
                }
                if (!content_type_is_json(req->content_type)) {
                        http_set_problem(resp, PROBLEM_UNSUPPORTED_MEDIA_TYPE, "send the body as application/json");
                        return false;
                }
        } else if (route->body == ROUTE_BODY_NONE && sent_body) {
                http_set_problem(resp, PROBLEM_UNEXPECTED_BODY, "this request takes no body");
                return false;
        }
        route->handler(req, resp);
        return resp->work != NULL || resp->park_check != NULL;
}

/* Encode RESP into (status, body, content type); takes the body. */
void http_finish_resp(struct resp *resp, char **ret_body, const char **ret_ct)
{
        if (resp->status >= 400 && !resp->body) {
                resp->body = problem_to_json(&resp->problem);
                resp->content_type = "application/problem+json";
        }
        if (!resp->content_type)
                resp->content_type = "application/json";
        *ret_body = TAKE_PTR(resp->body);
        *ret_ct = resp->content_type;
}

void http_resp_cleanup(struct resp *resp)
{
        free(resp->body);
        resp->body = NULL;
        if (resp->ctx_free)
                resp->ctx_free(resp->ctx);
        resp->ctx = NULL;
        resp->ctx_free = NULL;
}

/* ---------------------------------------------------------------- refusals */

void http_refuse(struct resp *resp, enum authz_decision d, bool *ret_www_authenticate, bool *ret_invalid_token)
{
        switch (d) {
        case AUTHZ_ALLOW: return;
        case AUTHZ_CERT_REQUIRED:
                http_set_problem(resp, PROBLEM_UNAUTHORIZED, "a client certificate signed by a trusted CA is required");
                break;
        case AUTHZ_CERT_REJECTED:
                http_set_problem(resp, PROBLEM_UNAUTHORIZED,
                                 "the client certificate did not verify against the trusted CAs");
                break;
        case AUTHZ_TOKEN_REQUIRED:
                http_set_problem(resp, PROBLEM_UNAUTHORIZED, "send Authorization: Bearer <token>");
                break;
        case AUTHZ_TOKEN_REJECTED:
                *ret_invalid_token = true;
                http_set_problem(resp, PROBLEM_UNAUTHORIZED, "the bearer token is not valid");
                break;
        case AUTHZ_READ_ONLY:
                http_set_problem(resp, PROBLEM_FORBIDDEN, "a read-only token may not change anything");
                break;
        case AUTHZ_STOPPING: resp_refuse_stopping(resp); break;
        }
        *ret_www_authenticate = authz_status(d) == 401;
}

void http_park_refuse(struct resp *resp, int err, unsigned per_caller_max)
{
        struct problem p = { 0 };
        if (err == -EUSERS) {
                problem_raise(&p, PROBLEM_TOO_MANY_WAITS,
                              "this caller already has %u long-polls waiting; retry when one has ended", per_caller_max);
                p.retry_after = PARK_RETRY_AFTER_S;
        } else {
                problem_raise(&p, PROBLEM_BUSY, "too many requests are waiting; retry later");
                p.retry_after = 1;
        }
        resp_problem(resp, &p);
}

void http_header_refuse(struct resp *resp)
{
        struct problem p = { 0 };
        problem_raise(&p, PROBLEM_HEADERS_TOO_LARGE, "the request header is limited to %d fields and %d bytes",
                      HTTP_HEADER_FIELDS_MAX, HTTP_HEADER_BYTES_MAX);
        resp_problem(resp, &p);
}

/* ------------------------------------------------------- socketless entry */

/* How often the socketless entry re-checks a long-poll (no observer here). */
#define LOCAL_PARK_POLL_US 2000

int http_query_parse(struct http_query *q, const char *raw, size_t len)
{
        q->len = 0;
        q->buf[0] = '\0';
        if (len >= sizeof(q->buf))
                return -E2BIG;
        size_t args = len ? 1 : 0;
        for (size_t i = 0; i < len; i++)
                if (raw[i] == '&')
                        args++;
        if (args > HTTP_QUERY_ARGS_MAX)
                return -EMSGSIZE;
        memcpy(q->buf, raw, len);
        q->buf[len] = '\0';
        q->len = len;
        for (char *amp = q->buf; (amp = strchr(amp, '&'));)
                *amp++ = '\0';
        return 0;
}

const char *http_query_get(const struct req *r, const char *key)
{
        const struct http_query *q = r->conn;
        size_t kl = strlen(key);
        for (const char *p = q->buf; p < q->buf + q->len; p += strlen(p) + 1)
                if (strncmp(p, key, kl) == 0 && p[kl] == '=')
                        return p + kl + 1;
        return NULL;
}

void http_query_refuse(struct resp *resp, int err)
{
        struct problem p = { 0 };
        if (err == -EMSGSIZE)
                problem_raise(&p, PROBLEM_URI_TOO_LONG, "at most %d query arguments are accepted", HTTP_QUERY_ARGS_MAX);
        else
                problem_raise(&p, PROBLEM_URI_TOO_LONG, "the query string is limited to %d bytes", HTTP_QUERY_MAX - 1);
        resp_problem(resp, &p);
}

int http_handle_local(const struct route_table *routes, struct app *app, const char *method, const char *url,
                      const char *content_type, const char *body, size_t body_len, int *ret_status,
                      char **ret_body, const char **ret_content_type)
{
        struct req req = { 0 };
        struct resp resp = { 0 };
        struct http_query q;
        char path[1024];
        const char *qm = strchr(url, '?');
        size_t pl = qm ? (size_t)(qm - url) : strlen(url);
        if (pl >= sizeof(path))
                pl = sizeof(path) - 1;
        memcpy(path, url, pl);
        path[pl] = '\0';
        int query_err = http_query_parse(&q, qm ? qm + 1 : "", qm ? strlen(qm + 1) : 0);
        _cleanup_free_ char *copy = malloc(body_len + 1);
        if (!copy)
                return -ENOMEM;
        if (body_len)
                memcpy(copy, body, body_len);
        copy[body_len] = '\0';

        req.method = method;
        req.path = path;
        req.query = http_query_get;
        req.conn = &q;
        req.content_type = content_type;
        req.body = copy;
        req.body_len = body_len;
        req.app = app;
        if (query_err < 0) {
                http_query_refuse(&resp, query_err);
        } else if (http_dispatch(routes, &req, body_len > HTTP_BODY_MAX, &resp)) {
                if (resp.work) {
                        resp.work(&resp, resp.ctx);
                        resp.work = NULL;
                }
                /* A long-poll: look again every few ms until it answers. */
                while (resp.park_check && !resp.park_check(&resp, resp.ctx, now_mono_ns() >= resp.park_deadline_ns))
                        usleep(LOCAL_PARK_POLL_US);
                resp.park_check = NULL;
        }
        /* No socket here: no request latency worth a sample, only the count. */
        metrics_observe_request(app->http_metrics, req.route, req.method, resp.status, 0);
        *ret_status = resp.status;
        http_finish_resp(&resp, ret_body, ret_content_type);
        http_resp_cleanup(&resp);
        return 0;
}
