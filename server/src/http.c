/* http: libmicrohttpd glue (see http.h for the shape).
 *
 * libmicrohttpd calls the access handler once for the headers, once per body
 * chunk and once at the end; a response may be queued only on the first or
 * the last call.  We answer 413 on the first call when Content-Length is over
 * the limit, collect the body otherwise, and route on the last call.
 *
 * Deferred work goes to one of two fixed queues, so long-polls (which may
 * sit for their whole timeout) never starve short blocking work (reserve,
 * delete).  Each queue has a bound on pending items; past it the request is
 * answered 503 with Retry-After rather than queued without limit.
 *
 * Access is decided on the first call, before routing, so an unauthenticated
 * caller learns nothing about which paths exist.  Unix-socket callers are
 * trusted (the socket's mode and group decide who can connect) and named by
 * their peer credentials; TCP callers need a verified client certificate when
 * a client CA is configured, and a bearer token when tokens are, except for
 * GET /v1/health.  A read-only token may not mutate (403).  Every mutation,
 * refused or not, leaves one audit line when its response is queued.
 *
 * libmicrohttpd's timeout only notices silence, so a client that sends its
 * headers one byte a second (slowloris) would hold a connection forever.  We
 * track every connection and give each request a deadline, the same number
 * of seconds, to arrive in full; a reaper thread shuts down the socket of a
 * connection past it, and libmicrohttpd then closes it as if the peer had.
 * The reaper and libmicrohttpd's close notification share a lock, so the
 * reaper never touches a descriptor that was already closed (and reused). */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <microhttpd.h>

#include "api.h"
#include "app.h"
#include "audit.h"
#include "auth.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "router.h"
#include "tls.h"
#include "util.h"

/* Threads for short blocking work (sysfs writes, cancels). */
#define BLOCKING_THREADS 2
/* Threads for long-polls: each holds one waiting client for up to its
 * timeout, so a long-poll is only accepted when a thread is idle to take it
 * at once; otherwise 503 with Retry-After (a queued wait could sit behind
 * others far past its own timeout). */
#define WAIT_THREADS 64
/* Pending blocking items beyond which we answer 503. */
#define QUEUE_MAX_PENDING 256

struct hreq;

struct workq {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct hreq *head, *tail;
        size_t pending;
        size_t idle;            /* threads waiting for an item */
        bool only_if_idle;      /* accept an item only when a thread is idle for it */
        bool stopping;
        size_t n_threads;
        pthread_t threads[WAIT_THREADS];
};

struct listener {
        struct MHD_Daemon *mhd;
        struct http *http;
        int fd;
        bool tcp;
        bool tls;
        bool quiesced;
};

/* One per open connection, from libmicrohttpd's start to its close
 * notification; in http->conns under http->conns_lock. */
struct conn_track {
        int fd;
        uint64_t deadline_ns;   /* 0: no request being received */
        struct conn_track *prev, *next;
};

struct http {
        struct app *app;
        pthread_mutex_t conns_lock;
        pthread_cond_t reaper_cond;
        struct conn_track *conns;   /* conns_lock */
        bool reaper_stop;           /* conns_lock */
        bool reaper_running;
        pthread_t reaper;
        uint64_t request_deadline_ns;
        struct listener tcp, unix_;
        uint16_t tcp_port;
        char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
        struct workq blocking, wait;
        struct auth *auth;
        bool client_ca;
};

struct hreq {
        struct http *http;
        struct MHD_Connection *conn;
        char *body;
        size_t body_len, body_cap;
        bool too_large;
        bool deferred;
        bool www_authenticate;   /* 401: add the challenge */
        bool invalid_token;      /* ... with error="invalid_token" */
        atomic_bool work_done;
        char who[320];           /* caller, for the audit line */
        struct req req;
        struct resp resp;
        char method[16];
        char path[1024];
        uint64_t started_ns;     /* headers arrived (CLOCK_MONOTONIC): request latency */
        struct hreq *next; /* in a workq */
};

/* ---------------------------------------------------------------- routing */

static void set_problem(struct resp *r, enum problem_id id, const char *detail)
{
        struct problem p = {0};
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
 * work that must run before the response can be sent. */
static bool dispatch(struct app *app, struct req *req, bool too_large, struct resp *resp)
{
        const struct route *route = NULL;
        char allow[64];

        resp->status = 0;
        switch (route_match(req->method, req->path, req, &route, allow, sizeof(allow))) {
        case ROUTE_NO_PATH:
                req->route = NULL;
                set_problem(resp, PROBLEM_NOT_FOUND, "no such resource");
                return false;
        case ROUTE_BAD_METHOD: {
                req->route = NULL;
                struct problem p = {0};
                problem_raise(&p, PROBLEM_METHOD_NOT_ALLOWED, "%s is not allowed here; allowed: %s", req->method,
                              allow);
                resp_problem(resp, &p);
                snprintf(resp->allow, sizeof(resp->allow), "%s", allow);
                return false;
        }
        case ROUTE_FOUND:
                break;
        }
        if (route->has_body && (req->body_len > 0 || too_large || route->has_body != ROUTE_BODY_OPTIONAL)) {
                if (too_large) {
                        set_problem(resp, PROBLEM_BODY_TOO_LARGE, "request bodies are limited to 64 KiB");
                        return false;
                }
                if (!content_type_is_json(req->content_type)) {
                        set_problem(resp, PROBLEM_UNSUPPORTED_MEDIA_TYPE, "send the body as application/json");
                        return false;
                }
        } else if (!route->has_body && (req->body_len > 0 || too_large)) {
                set_problem(resp, PROBLEM_UNEXPECTED_BODY, "this request takes no body");
                return false;
        }
        route->handler(req, resp);
        return resp->work != NULL;
}

/* Encode RESP into (status, body, content type); takes the body. */
static void finish_resp(struct resp *resp, char **ret_body, const char **ret_ct)
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

static void resp_cleanup(struct resp *resp)
{
        free(resp->body);
        resp->body = NULL;
        if (resp->ctx_free)
                resp->ctx_free(resp->ctx);
        resp->ctx = NULL;
        resp->ctx_free = NULL;
}

/* ------------------------------------------------------------- work queues */

static void *workq_thread(void *arg)
{
        struct workq *q = arg;
        for (;;) {
                pthread_mutex_lock(&q->lock);
                q->idle++;
                while (!q->head && !q->stopping)
                        pthread_cond_wait(&q->cond, &q->lock);
                q->idle--;
                struct hreq *h = q->head;
                if (!h) {
                        pthread_mutex_unlock(&q->lock);
                        return NULL;
                }
                q->head = h->next;
                if (!q->head)
                        q->tail = NULL;
                q->pending--;
                pthread_mutex_unlock(&q->lock);

                h->resp.work(&h->resp, h->resp.ctx);
                h->resp.work = NULL;
                atomic_store(&h->work_done, true);
                MHD_resume_connection(h->conn);
        }
}

static int workq_start(struct workq *q, size_t n_threads, bool only_if_idle)
{
        q->only_if_idle = only_if_idle;
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->cond, NULL);
        for (size_t i = 0; i < n_threads; i++) {
                int r = pthread_create(&q->threads[i], NULL, workq_thread, q);
                if (r != 0)
                        return -r;
                q->n_threads++;
        }
        return 0;
}

static bool workq_push(struct workq *q, struct hreq *h)
{
        pthread_mutex_lock(&q->lock);
        if (q->stopping || q->pending >= (q->only_if_idle ? q->idle : QUEUE_MAX_PENDING)) {
                pthread_mutex_unlock(&q->lock);
                return false;
        }
        h->next = NULL;
        if (q->tail)
                q->tail->next = h;
        else
                q->head = h;
        q->tail = h;
        q->pending++;
        pthread_cond_signal(&q->cond);
        pthread_mutex_unlock(&q->lock);
        return true;
}

/* Drain: threads finish what is queued, then exit. */
static void workq_stop(struct workq *q)
{
        if (!q->n_threads)
                return;
        pthread_mutex_lock(&q->lock);
        q->stopping = true;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
        for (size_t i = 0; i < q->n_threads; i++)
                pthread_join(q->threads[i], NULL);
        q->n_threads = 0;
}

/* ---------------------------------------------------------- libmicrohttpd */

/* -------------------------------------------------------- request deadline */

static struct conn_track *conn_track_of(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return ci ? ci->socket_context : NULL;
}

/* T is looked up from the connection each time (never cached in the
 * request): after the close notification it is gone and the lookup says so. */
static void set_deadline(struct http *h, struct conn_track *t, bool arm)
{
        if (!t)
                return;
        pthread_mutex_lock(&h->conns_lock);
        t->deadline_ns = arm ? now_mono_ns() + h->request_deadline_ns : 0;
        pthread_mutex_unlock(&h->conns_lock);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
        struct listener *l = cls;
        struct http *h = l->http;
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                struct conn_track *t = calloc(1, sizeof(*t));
                if (!t || !ci) {
                        free(t);
                        *socket_context = NULL;
                        return; /* untracked: only the idle timeout applies */
                }
                t->fd = ci->connect_fd;
                pthread_mutex_lock(&h->conns_lock);
                t->deadline_ns = now_mono_ns() + h->request_deadline_ns;
                t->next = h->conns;
                if (h->conns)
                        h->conns->prev = t;
                h->conns = t;
                pthread_mutex_unlock(&h->conns_lock);
                *socket_context = t;
                return;
        }
        struct conn_track *t = *socket_context;
        if (!t)
                return;
        pthread_mutex_lock(&h->conns_lock);
        if (t->prev)
                t->prev->next = t->next;
        else
                h->conns = t->next;
        if (t->next)
                t->next->prev = t->prev;
        pthread_mutex_unlock(&h->conns_lock);
        free(t);
        *socket_context = NULL;
}

/* How often the reaper looks; a late client may get up to this much extra. */
#define REAPER_PERIOD_NS (250 * 1000 * 1000)

static void *reaper_main(void *arg)
{
        struct http *h = arg;
        pthread_mutex_lock(&h->conns_lock);
        while (!h->reaper_stop) {
                uint64_t now = now_mono_ns();
                for (struct conn_track *t = h->conns; t; t = t->next)
                        if (t->deadline_ns && now > t->deadline_ns) {
                                shutdown(t->fd, SHUT_RDWR);
                                t->deadline_ns = 0;
                        }
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                uint64_t until = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + REAPER_PERIOD_NS;
                ts.tv_sec = (time_t)(until / 1000000000u);
                ts.tv_nsec = (long)(until % 1000000000u);
                pthread_cond_timedwait(&h->reaper_cond, &h->conns_lock, &ts);
        }
        pthread_mutex_unlock(&h->conns_lock);
        return NULL;
}

static int reaper_start(struct http *h)
{
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&h->reaper_cond, &ca);
        pthread_condattr_destroy(&ca);
        int r = pthread_create(&h->reaper, NULL, reaper_main, h);
        if (r != 0)
                return -r;
        h->reaper_running = true;
        return 0;
}

static void reaper_stop(struct http *h)
{
        if (!h->reaper_running)
                return;
        pthread_mutex_lock(&h->conns_lock);
        h->reaper_stop = true;
        pthread_cond_broadcast(&h->reaper_cond);
        pthread_mutex_unlock(&h->conns_lock);
        pthread_join(h->reaper, NULL);
        h->reaper_running = false;
}


static const char *query_mhd(const struct req *r, const char *key)
{
        return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

static enum MHD_Result queue(struct hreq *h)
{
        set_deadline(h->http, conn_track_of(h->conn), false);
        char *body;
        const char *ct;
        int status = h->resp.status;
        unsigned retry_after = h->resp.problem.retry_after;
        bool is_problem = status >= 400;

        finish_resp(&h->resp, &body, &ct);
        size_t len = body ? strlen(body) : 0;
        struct MHD_Response *mr = MHD_create_response_from_buffer(len, body ? body : (char *)"",
                                                                  body ? MHD_RESPMEM_MUST_FREE
                                                                       : MHD_RESPMEM_PERSISTENT);
        if (!mr) {
                free(body);
                return MHD_NO;
        }
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
        MHD_add_response_header(mr, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        if (h->resp.allow[0])
                MHD_add_response_header(mr, MHD_HTTP_HEADER_ALLOW, h->resp.allow);
        if (is_problem && retry_after) {
                char buf[16];
                snprintf(buf, sizeof(buf), "%u", retry_after);
                MHD_add_response_header(mr, MHD_HTTP_HEADER_RETRY_AFTER, buf);
        }
        if (!is_problem && h->resp.location[0])
                MHD_add_response_header(mr, MHD_HTTP_HEADER_LOCATION, h->resp.location);
        if (h->www_authenticate)
                MHD_add_response_header(mr, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                        h->invalid_token ? "Bearer realm=\"hpwarmd\", error=\"invalid_token\""
                                                         : "Bearer realm=\"hpwarmd\"");
        metrics_observe_request(h->http->app->http_metrics, h->req.route, h->req.method, status,
                                (double)(now_mono_ns() - h->started_ns) / 1e9);
        if (audit_is_mutation(h->method))
                audit_log(h->who, h->method, h->path, status);
        enum MHD_Result r = MHD_queue_response(h->conn, (unsigned)status, mr);
        MHD_destroy_response(mr);
        return r;
}

/* ----------------------------------------------------------------- access */

static void client_ip(struct MHD_Connection *conn, char *buf, size_t len)
{
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        snprintf(buf, len, "?");
        if (!ci || !ci->client_addr)
                return;
        const struct sockaddr *sa = ci->client_addr;
        socklen_t sl = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        if (getnameinfo(sa, sl, buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST) != 0)
                snprintf(buf, len, "?");
}

static void unix_peer(struct MHD_Connection *conn, char *buf, size_t len)
{
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        pid_t pid;
        uid_t uid;
        gid_t gid;
        if (!ci || auth_peer_cred(ci->connect_fd, &pid, &uid, &gid) < 0) {
                snprintf(buf, len, "unix peer=unknown");
                return;
        }
        snprintf(buf, len, "uid=%u gid=%u pid=%d", (unsigned)uid, (unsigned)gid, (int)pid);
}

static void refuse(struct hreq *h, enum problem_id id, const char *detail)
{
        set_problem(&h->resp, id, detail);
        if (h->resp.problem.status == 401)
                h->www_authenticate = true;
}

/* Decide whether H may go on; false when a refusal is in H->resp.  Fills
 * H->who in any case. */
static bool authorize(struct listener *l, struct hreq *h, struct MHD_Connection *conn, const char *url)
{
        struct http *http = l->http;
        bool mutation = audit_is_mutation(h->method);
        enum auth_role role = AUTH_ADMIN;

        if (!l->tcp) {
                unix_peer(conn, h->who, sizeof(h->who));
        } else {
                bool open_route = strcmp(h->method, "GET") == 0 && strcmp(url, "/v1/health") == 0;
                char ip[INET6_ADDRSTRLEN + 8], cert[200] = "", token[AUTH_ID_MAX] = "";
                int cert_r = 0;
                bool token_sent = false;
                client_ip(conn, ip, sizeof(ip));

                if (l->tls && http->client_ca) {
                        const union MHD_ConnectionInfo *ci =
                                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
                        void *session = ci ? ci->tls_session : NULL;
                        cert_r = tls_verify_client(session);
                        if (tls_client_subject(session, cert, sizeof(cert)) < 0)
                                cert[0] = '\0';
                }
                if (http->auth) {
                        const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                                         MHD_HTTP_HEADER_AUTHORIZATION);
                        role = auth_check_bearer(http->auth, authz, token, &token_sent);
                }
                snprintf(h->who, sizeof(h->who), "%s%s%s%s%sip=%s", token[0] ? token : "",
                         token[0] ? " " : "", cert[0] ? "cert:" : "", cert, cert[0] ? " " : "", ip);
                if (!token[0] && http->auth && token_sent)
                        snprintf(h->who, sizeof(h->who), "bad-token%s%s ip=%s", cert[0] ? " cert:" : "", cert, ip);

                if (open_route)
                        return true;
                if (cert_r == -ENOKEY || cert_r == -ENOTCONN) {
                        refuse(h, PROBLEM_UNAUTHORIZED, "a client certificate signed by a trusted CA is required");
                        return false;
                }
                if (cert_r < 0) {
                        refuse(h, PROBLEM_UNAUTHORIZED,
                               "the client certificate did not verify against the trusted CAs");
                        return false;
                }
                if (role == AUTH_NONE) {
                        h->invalid_token = token_sent;
                        refuse(h, PROBLEM_UNAUTHORIZED,
                               token_sent ? "the bearer token is not valid" : "send Authorization: Bearer <token>");
                        return false;
                }
        }
        if (mutation && role != AUTH_ADMIN) {
                refuse(h, PROBLEM_FORBIDDEN, "a read-only token may not change anything");
                return false;
        }
        if (mutation && atomic_load(&http->app->stopping)) {
                api_refuse_stopping(&h->resp);
                return false;
        }
        return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        struct listener *l = cls;
        struct hreq *h = *con_cls;

        if (!h) {
                h = calloc(1, sizeof(*h));
                if (!h)
                        return MHD_NO;
                h->http = l->http;
                h->conn = conn;
                h->started_ns = now_mono_ns();
                *con_cls = h;
                snprintf(h->method, sizeof(h->method), "%s", method);
                h->req.method = h->method;
                h->req.path = "";
                /* Truncated for the audit line until the length is checked. */
                snprintf(h->path, sizeof(h->path), "%s", url);
                if (!authorize(l, h, conn, url))
                        return queue(h);
                if (strlen(url) >= sizeof(h->path)) {
                        set_problem(&h->resp, PROBLEM_URI_TOO_LONG, "the request path is too long");
                        return queue(h);
                }
                h->req.path = h->path;
                const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl && strtoull(cl, NULL, 10) > HTTP_BODY_MAX) {
                        set_problem(&h->resp, PROBLEM_BODY_TOO_LARGE, "request bodies are limited to 64 KiB");
                        return queue(h);
                }
                return MHD_YES;
        }

        if (h->deferred) {
                /* Called again after MHD_resume_connection. */
                if (!atomic_load(&h->work_done))
                        return MHD_YES;
                h->deferred = false;
                return queue(h);
        }

        if (*upload_data_size) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                if (h->too_large || h->body_len + n > HTTP_BODY_MAX) {
                        h->too_large = true;
                        return MHD_YES;
                }
                if (h->body_len + n + 1 > h->body_cap) {
                        size_t cap = h->body_cap ? h->body_cap : 1024;
                        while (cap < h->body_len + n + 1)
                                cap *= 2;
                        char *b = realloc(h->body, cap);
                        if (!b)
                                return MHD_NO;
                        h->body = b;
                        h->body_cap = cap;
                }
                memcpy(h->body + h->body_len, upload_data, n);
                h->body_len += n;
                h->body[h->body_len] = '\0';
                return MHD_YES;
        }

        struct req *req = &h->req;
        req->query = query_mhd;
        req->conn = conn;
        req->content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        req->body = h->body ? h->body : "";
        req->body_len = h->body_len;
        req->app = l->http->app;

        if (!dispatch(req->app, req, h->too_large, &h->resp))
                return queue(h);

        struct workq *q = h->resp.work_kind == WORK_WAIT ? &l->http->wait : &l->http->blocking;
        set_deadline(l->http, conn_track_of(conn), false); /* received in full; the work may take its time */
        h->deferred = true;
        MHD_suspend_connection(conn);
        if (!workq_push(q, h)) {
                h->resp.work = NULL;
                struct problem p = {0};
                problem_raise(&p, PROBLEM_BUSY, "too many requests are waiting; retry later");
                p.retry_after = 1;
                resp_problem(&h->resp, &p);
                atomic_store(&h->work_done, true);
                MHD_resume_connection(conn);
        }
        return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct hreq *h = *con_cls;
        if (!h)
                return;
        /* Keep-alive: the next request on this connection gets a new deadline. */
        set_deadline(h->http, conn_track_of(h->conn), true);
        resp_cleanup(&h->resp);
        free(h->body);
        free(h);
        *con_cls = NULL;
}

static __attribute__((format(printf, 2, 0))) void mhd_log(void *cls, const char *fmt, va_list ap)
{
        char buf[512];
        vsnprintf(buf, sizeof(buf), fmt, ap);
        size_t n = strlen(buf);
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                buf[--n] = '\0';
        log_debug("libmicrohttpd: %s", buf);
}

/* "HOST:PORT", "[V6]:PORT" or ":PORT" -> getaddrinfo() results. */
static int resolve_listen(const char *spec, struct addrinfo **ret)
{
        char host[256];
        const char *colon = strrchr(spec, ':');
        if (!colon || colon == spec || !colon[1])
                return -EINVAL;
        size_t hl = (size_t)(colon - spec);
        if (spec[0] == '[' && hl >= 2 && spec[hl - 1] == ']') {
                spec++;
                hl -= 2;
        }
        if (hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, spec, hl);
        host[hl] = '\0';
        char *end;
        unsigned long port = strtoul(colon + 1, &end, 10);
        if (*end || port > 65535)
                return -EINVAL;

        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                                 .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
        if (getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, ret) != 0)
                return -EADDRNOTAVAIL;
        return 0;
}

static bool sockaddr_is_loopback(const struct sockaddr *sa)
{
        /* Copied out: a struct sockaddr * need not be aligned for the
         * family's own struct. */
        if (sa->sa_family == AF_INET) {
                struct sockaddr_in in;
                memcpy(&in, sa, sizeof(in));
                return (ntohl(in.sin_addr.s_addr) >> 24) == 127;
        }
        if (sa->sa_family == AF_INET6) {
                struct sockaddr_in6 in6;
                memcpy(&in6, sa, sizeof(in6));
                if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
                        return in6.sin6_addr.s6_addr[12] == 127;
                return IN6_IS_ADDR_LOOPBACK(&in6.sin6_addr);
        }
        return sa->sa_family == AF_UNIX;
}

int http_listen_is_loopback(const char *spec)
{
        struct addrinfo *ai = NULL;
        int r = resolve_listen(spec, &ai);
        if (r < 0)
                return r;
        r = 1;
        for (struct addrinfo *a = ai; a; a = a->ai_next)
                if (!sockaddr_is_loopback(a->ai_addr))
                        r = 0;
        freeaddrinfo(ai);
        return r;
}

int http_socket_is_loopback(int fd)
{
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
                return -errno;
        return sockaddr_is_loopback((struct sockaddr *)&ss);
}

static int socket_family(int fd)
{
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
                return -errno;
        return ss.ss_family;
}

static uint16_t socket_port(int fd)
{
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
                return 0;
        return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
}

static int listen_tcp(const char *spec, int *ret_fd, uint16_t *ret_port)
{
        struct addrinfo *ai = NULL;
        int r = resolve_listen(spec, &ai);
        if (r < 0)
                return r;
        r = -EADDRNOTAVAIL;
        for (struct addrinfo *a = ai; a && r < 0; a = a->ai_next) {
                int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        r = -errno;
                        continue;
                }
                int one = 1;
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
                if (bind(fd, a->ai_addr, a->ai_addrlen) < 0 || listen(fd, 128) < 0) {
                        r = -errno;
                        close(fd);
                        continue;
                }
                *ret_port = socket_port(fd);
                *ret_fd = fd;
                r = 0;
        }
        freeaddrinfo(ai);
        return r;
}

static int listen_unix(const char *path, gid_t gid, int *ret_fd)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);

        /* Replace a stale socket from an earlier run, never any other file. */
        struct stat st;
        if (lstat(path, &st) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return -EEXIST;
                unlink(path);
        }
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        mode_t old = umask(0117); /* socket 0660 */
        int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0)
                return -errno;
        /* Group before listen(): nobody of the old group can connect in between. */
        if (gid != (gid_t)-1 && gid != 0 && chown(path, (uid_t)-1, gid) < 0) {
                r = -errno;
                unlink(path);
                return r;
        }
        if (listen(fd, 128) < 0) {
                r = -errno;
                unlink(path);
                return r;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Leave the URL as the client sent it.  libmicrohttpd's own unescaping turns
 * "%00" into a NUL that silently cuts "/v1/pools/a%00b" to pool "a"; the
 * router decodes each path capture itself and refuses NUL and '/'.  Query
 * values stay raw too: ours ("ready", whole seconds) need no escapes, and an
 * escaped one fails validation with 422 rather than being guessed at. */
static size_t keep_escaped(void *cls, struct MHD_Connection *c, char *s)
{
        return strlen(s);
}

static int start_listener(struct http *h, struct listener *l, int fd, const struct http_config *cfg, bool tcp)
{
        l->http = h;
        l->fd = fd;
        l->tcp = tcp;
        l->tls = tcp && cfg->tls_cert_pem && cfg->tls_key_pem;
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                         MHD_USE_ERROR_LOG;
        /* TLS options only on the TCP listener; MHD_OPTION_ARRAY lets the
         * list depend on the configuration. */
        struct MHD_OptionItem tls[4];
        size_t n = 0;
        if (l->tls) {
                flags |= MHD_USE_TLS;
                tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cfg->tls_cert_pem};
                tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->tls_key_pem};
                if (cfg->tls_client_ca_pem)
                        tls[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0,
                                                           (void *)cfg->tls_client_ca_pem};
        }
        tls[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
        l->mhd = MHD_start_daemon(
                flags, 0, NULL, NULL, on_request, l,
                MHD_OPTION_LISTEN_SOCKET, fd,
                MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
                MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
                MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
                MHD_OPTION_EXTERNAL_LOGGER, mhd_log, l,
                MHD_OPTION_CONNECTION_LIMIT, cfg->connection_limit ? cfg->connection_limit : 256u,
                MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout_s ? cfg->connection_timeout_s : 30u,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                MHD_OPTION_PER_IP_CONNECTION_LIMIT, tcp ? (cfg->per_ip_limit ? cfg->per_ip_limit : 64u) : 0u,
                MHD_OPTION_ARRAY, tls,
                MHD_OPTION_END);
        if (!l->mhd)
                return -EIO;
        return 0;
}

int http_start(const struct http_config *cfg, struct app *app, struct http **ret)
{
        struct http *h = calloc(1, sizeof(*h));
        int r;
        if (!h)
                return -ENOMEM;
        h->app = app;
        h->tcp.fd = h->unix_.fd = -1;
        h->auth = cfg->auth;
        pthread_mutex_init(&h->conns_lock, NULL);
        h->request_deadline_ns = (uint64_t)(cfg->connection_timeout_s ? cfg->connection_timeout_s : 30u) *
                                 1000000000u;
        h->client_ca = cfg->tls_client_ca_pem != NULL;
        if ((cfg->tls_cert_pem || cfg->tls_key_pem) && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
                log_err("this libmicrohttpd has no TLS support");
                free(h);
                return -EOPNOTSUPP;
        }

        r = reaper_start(h);
        if (r == 0)
                r = workq_start(&h->blocking, BLOCKING_THREADS, false);
        if (r == 0)
                r = workq_start(&h->wait, WAIT_THREADS, true);
        if (r < 0)
                goto fail;

        for (size_t i = 0; i < cfg->n_listen_fds; i++) {
                int fd = cfg->listen_fds[i];
                int fam = socket_family(fd);
                bool tcp = fam == AF_INET || fam == AF_INET6;
                struct listener *l = tcp ? &h->tcp : &h->unix_;
                if (fam < 0 || (!tcp && fam != AF_UNIX) || l->mhd) {
                        log_err("socket activation: passed socket %d is not one TCP and one unix stream socket", fd);
                        r = -EINVAL;
                        goto fail;
                }
                if (tcp)
                        h->tcp_port = socket_port(fd);
                r = start_listener(h, l, fd, cfg, tcp);
                if (r < 0) {
                        log_err("cannot start HTTP on passed socket %d", fd);
                        goto fail;
                }
        }
        if (cfg->listen && !cfg->n_listen_fds) {
                int fd = -1;
                r = listen_tcp(cfg->listen, &fd, &h->tcp_port);
                if (r < 0) {
                        log_err("cannot listen on %s: %s", cfg->listen, strerror(-r));
                        goto fail;
                }
                r = start_listener(h, &h->tcp, fd, cfg, true);
                if (r < 0) {
                        close(fd);
                        log_err("cannot start HTTP on %s", cfg->listen);
                        goto fail;
                }
        }
        if (cfg->socket_path && !cfg->n_listen_fds) {
                int fd = -1;
                r = listen_unix(cfg->socket_path, cfg->socket_gid, &fd);
                if (r < 0) {
                        log_err("cannot listen on %s: %s", cfg->socket_path, strerror(-r));
                        goto fail;
                }
                snprintf(h->socket_path, sizeof(h->socket_path), "%s", cfg->socket_path);
                r = start_listener(h, &h->unix_, fd, cfg, false);
                if (r < 0) {
                        close(fd);
                        log_err("cannot start HTTP on %s", cfg->socket_path);
                        goto fail;
                }
        }
        *ret = h;
        return 0;
fail:
        http_stop(h);
        return r;
}

uint16_t http_tcp_port(const struct http *h) { return h ? h->tcp_port : 0; }

static void quiesce_listener(struct listener *l)
{
        if (l->mhd && !l->quiesced) {
                MHD_quiesce_daemon(l->mhd);
                l->quiesced = true;
        }
}

void http_quiesce(struct http *h)
{
        if (!h)
                return;
        quiesce_listener(&h->tcp);
        quiesce_listener(&h->unix_);
}

static void stop_listener(struct listener *l)
{
        if (!l->mhd)
                return;
        MHD_stop_daemon(l->mhd);
        l->mhd = NULL;
        if (l->fd >= 0)
                close(l->fd);
        l->fd = -1;
}

void http_stop(struct http *h)
{
        if (!h)
                return;
        /* Stop accepting first, then let queued work finish (it resumes its
         * connections), then stop the daemons: libmicrohttpd must not be
         * stopped with connections still suspended. */
        http_quiesce(h);
        workq_stop(&h->blocking);
        workq_stop(&h->wait);
        stop_listener(&h->tcp);
        stop_listener(&h->unix_);
        reaper_stop(h);
        if (h->socket_path[0])
                unlink(h->socket_path);
        pthread_mutex_destroy(&h->conns_lock);
        free(h);
}

/* ------------------------------------------------------- socketless entry */

/* The query string split at '&' into NUL-terminated "key=value" entries;
 * values stay escaped, as on the socket path (see keep_escaped). */
struct local_query {
        char buf[1024];
        size_t len;
};

static const char *query_local(const struct req *r, const char *key)
{
        const struct local_query *q = r->conn;
        size_t kl = strlen(key);
        for (const char *p = q->buf; p < q->buf + q->len; p += strlen(p) + 1)
                if (strncmp(p, key, kl) == 0 && p[kl] == '=')
                        return p + kl + 1;
        return NULL;
}

int http_handle_local(struct app *app, const char *method, const char *url, const char *content_type,
                      const char *body, size_t body_len, int *ret_status, char **ret_body,
                      const char **ret_content_type)
{
        struct req req = {0};
        struct resp resp = {0};
        struct local_query q = {.len = 0};
        char path[1024];
        const char *qm = strchr(url, '?');
        size_t pl = qm ? (size_t)(qm - url) : strlen(url);
        if (pl >= sizeof(path))
                pl = sizeof(path) - 1;
        memcpy(path, url, pl);
        path[pl] = '\0';
        if (qm) {
                snprintf(q.buf, sizeof(q.buf), "%s", qm + 1);
                q.len = strlen(q.buf);
                for (char *amp = q.buf; (amp = strchr(amp, '&'));)
                        *amp++ = '\0';
        }
        _cleanup_free_ char *copy = malloc(body_len + 1);
        if (!copy)
                return -ENOMEM;
        if (body_len)
                memcpy(copy, body, body_len);
        copy[body_len] = '\0';

        req.method = method;
        req.path = path;
        req.query = query_local;
        req.conn = &q;
        req.content_type = content_type;
        req.body = copy;
        req.body_len = body_len;
        req.app = app;
        if (dispatch(app, &req, body_len > HTTP_BODY_MAX, &resp)) {
                resp.work(&resp, resp.ctx);
                resp.work = NULL;
        }
        /* No socket here: no request latency worth a sample, only the count. */
        metrics_observe_request(app->http_metrics, req.route, req.method, resp.status, 0);
        *ret_status = resp.status;
        finish_resp(&resp, ret_body, ret_content_type);
        resp_cleanup(&resp);
        return 0;
}
