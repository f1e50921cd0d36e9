/* http: libmicrohttpd glue (see http.h for the shape, http_internal.h for
 * how the http*.c files divide the work).
 *
 * libmicrohttpd calls the access handler once for the headers, once per body
 * chunk and once at the end; a response may be queued only on the first or
 * the last call.  We answer 413 on the first call when Content-Length is over
 * the limit, collect the body otherwise, and route on the last call.
 *
 * Deferred work (reserve, delete) goes to a fixed queue with a bound on
 * pending items; past it the request is answered 503 with Retry-After
 * rather than queued without limit.  Long-polls hold no thread: the
 * connection is suspended and parked in waiters.c, which re-runs the
 * handler's check when the pool core tells that pool changed (the observer,
 * pools_set_observer),
 * at the deadline, and drops the wait when the client hangs up; each
 * caller may park a bounded number (429 past it).
 *
 * Access is decided on the first call, before routing, so an unauthenticated
 * caller learns nothing about which paths exist: this file gathers the
 * caller's credentials and authz.c decides.  Unix-socket callers are named
 * by their peer credentials, TCP callers by token id, certificate subject
 * and address.  Every mutation, refused or not, leaves one audit line when
 * its response is queued.
 *
 * Each listener runs libmicrohttpd in poll mode, not epoll: 0.9.75's epoll
 * loop drains its 128-event buffer by calling epoll_wait() again with the
 * full timeout while the events it already collected wait unprocessed, so
 * when exactly a buffer's worth of connections is ready at once (a burst of
 * keep-alive requests on a loaded machine) their answers are held until
 * another event or the connection timeout arrives: 20-30 s.  poll() costs a
 * walk over the open connections per round, which at our connection limits
 * is nothing; suspended connections are not polled at all.
 *
 * Each connection is tracked by deadline.c from libmicrohttpd's start
 * notification to its close notification, so a request that trickles in is
 * cut at its deadline.
 *
 * A resumed connection is answered by the polling thread, which
 * MHD_resume_connection wakes with one write to an eventfd; when that write
 * fails libmicrohttpd only logs it, and a polling thread with no other
 * connection to time out sleeps in poll() with no timeout while the answer
 * waits (tests/real/fault_sweep.py found it: an injected ENOSPC on a work
 * thread's second write left PUTs unanswered).  mhd_log sees that message
 * and wakes the thread another way: a connection to its own listening
 * socket, closed at once (see http_nudge_listener). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "app.h"
#include "audit.h"
#include "auth.h"
#include "authz.h"
#include "http.h"
#include "http_internal.h"
#include "log.h"
#include "pools.h"
#include "metrics.h"
#include "router.h"
#include "tls.h"
#include "util.h"

/* Threads for short blocking work (sysfs writes, cancels). */
#define BLOCKING_THREADS 2
/* Pending blocking items beyond which we answer 503. */
#define QUEUE_MAX_PENDING 256
/* A header must arrive within this many seconds of its connection or its
 * request line (never more than the connection timeout): a client that is
 * not trickling on purpose sends it at once. */
#define HEADER_TIMEOUT_S 5
/* Share of a TCP listener's connections that may be unvouched (no request
 * yet allowed by access control); past it the oldest is evicted. */
#define UNVOUCHED_SHARE_PCT 75
/* libmicrohttpd's TCP connection limit above ours, so that a newcomer
 * reaches our eviction instead of being refused outright. */
#define EVICTION_SLACK 16u
/* Memory libmicrohttpd may use per connection (request line, headers, its
 * records of them).  Past it libmicrohttpd answers by itself, in HTML, so
 * it is well above our own limits below, which answer problem+json.  Only
 * the pages a request really fills are touched. */
#define CONNECTION_MEMORY (64 * 1024)


/* libmicrohttpd creates the polling thread and offers no hook there; name
 * it from the first callback it runs. */
static void name_polling_thread(struct listener *l)
{
        if (!atomic_exchange(&l->thread_named, true))
                pthread_setname_np(pthread_self(), l->thread_name);
}

/* -------------------------------------------------------- request deadline */

static struct conn_track *conn_track_of(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return ci ? ci->socket_context : NULL;
}

/* The track is looked up from the connection each time (never cached in the
 * request): after the close notification it is gone and the lookup says so.
 * NS: how long from now, 0 for no deadline. */
static void set_deadline(struct http *h, struct MHD_Connection *conn, uint64_t ns)
{
        deadlines_arm(&h->deadlines, conn_track_of(conn), ns);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
        struct listener *l = cls;
        struct http *h = l->http;
        name_polling_thread(l);
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
                *socket_context = ci ? deadlines_add(&h->deadlines, ci->connect_fd, l->tcp) : NULL;
                return;
        }
        deadlines_remove(&h->deadlines, *socket_context);
        *socket_context = NULL;
}

/* ----------------------------------------------------------- deferred work */

/* On a work-queue thread: run the handler's work, then let libmicrohttpd
 * call the access handler again, which queues the response. */
static void run_deferred(struct workq_item *it)
{
        struct hreq *h = container_of(it, struct hreq, item);
        h->resp.work(&h->resp, h->resp.ctx);
        h->resp.work = NULL;
        atomic_store(&h->work_done, true);
        MHD_resume_connection(h->conn);
}

/* ---------------------------------------------------------------- parking */

static bool park_check(struct waiter *w, bool expired)
{
        struct hreq *h = container_of(w, struct hreq, waiter);
        return h->resp.park_check(&h->resp, h->resp.ctx, expired || atomic_load(&h->http->app->stopping));
}

static void park_done(struct waiter *w, bool gone)
{
        struct hreq *h = container_of(w, struct hreq, waiter);
        h->client_gone = gone;
        atomic_store(&h->work_done, true);
        MHD_resume_connection(h->conn);
}

/* The pool core's observer (pools_set_observer): the pool NAME changed (NULL: something did), look
 * at its waiters again, and at the stock's: every change may be one. */
static void pool_changed(void *arg, const char *name)
{
        struct http *h = arg;
        if (name)
                waiters_notify(&h->waiters, name);
        waiters_notify(&h->waiters, PARK_TOPIC_STOCK);
}

/* H is deferred (work queue or parked): count it until it completes. */
static void answering_begin(struct hreq *h)
{
        if (!h->answering) {
                h->answering = true;
                atomic_fetch_add(&h->http->answering, 1);
        }
}

/* Suspend H's connection and park it; on refusal answer at once. */
static void park(struct hreq *h, struct MHD_Connection *conn)
{
        struct waiter *w = &h->waiter;
        snprintf(w->topic, sizeof(w->topic), "%s", h->resp.park_topic);
        snprintf(w->caller, sizeof(w->caller), "%s", h->caller);
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        w->fd = ci ? ci->connect_fd : -1;
        w->deadline_ns = h->resp.park_deadline_ns;
        w->check = park_check;
        w->done = park_done;

        set_deadline(h->http, conn, 0); /* received in full; the wait may take its time */
        h->deferred = true;
        answering_begin(h);
        MHD_suspend_connection(conn);
        int r = waiters_add(&h->http->waiters, w);
        if (r == 0)
                return;
        h->resp.park_check = NULL;
        http_park_refuse(&h->resp, r, h->http->waiters.per_caller_max);
        atomic_store(&h->work_done, true);
        MHD_resume_connection(conn);
}

struct header_size {
        size_t bytes, fields;
};

static enum MHD_Result add_header_size(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        struct header_size *hs = cls;
        hs->bytes += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " and CRLF */
        hs->fields++;
        return MHD_YES;
}

/* Whether the header is within our limits; a 431 problem in H otherwise. */
static bool header_within_limits(struct hreq *h, struct MHD_Connection *conn)
{
        struct header_size hs = {0, 0};
        MHD_get_connection_values(conn, MHD_HEADER_KIND, add_header_size, &hs);
        if (hs.bytes <= HTTP_HEADER_BYTES_MAX && hs.fields <= HTTP_HEADER_FIELDS_MAX)
                return true;
        http_header_refuse(&h->resp);
        return false;
}

static struct hreq *hreq_new(struct http *http, struct MHD_Connection *conn)
{
        struct hreq *h = calloc(1, sizeof(*h));
        if (!h)
                return NULL;
        h->http = http;
        h->conn = conn;
        h->started_ns = now_mono_ns();
        return h;
}

/* libmicrohttpd's URI log callback: the request line has arrived, the
 * headers have not.  Its return value is the request's con_cls.
 *
 * Two things happen here, before libmicrohttpd parses the query string:
 * the header deadline starts (a keep-alive connection's next request has
 * as little time for its headers as a new connection), and the query
 * string is copied into the request and cut from libmicrohttpd's buffer.
 * In 0.9.75 the URI handed here is the connection's own writable line
 * buffer and the arguments are parsed from it right after this returns;
 * with the query cut they find nothing.  Left to libmicrohttpd, each
 * argument takes a header record from the 32 KiB connection pool: a URI of
 * 600 arguments exhausted it and the client got no answer at all. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
        struct listener *l = cls;
        struct hreq *h = hreq_new(l->http, conn);
        set_deadline(l->http, conn, l->http->header_ns);
        char *qm = strchr(uri, '?');
        if (!qm)
                return h;
        if (h)
                h->query_err = http_query_parse(&h->query, qm + 1, strlen(qm + 1));
        qm[1] = '\0';
        return h;
}

static enum MHD_Result queue(struct hreq *h)
{
        set_deadline(h->http, h->conn, 0);
        char *body;
        const char *ct;
        int status = h->resp.status;
        unsigned retry_after = h->resp.problem.retry_after;
        bool is_problem = status >= 400;

        if (!retry_after && (status == MHD_HTTP_TOO_MANY_REQUESTS || status == MHD_HTTP_SERVICE_UNAVAILABLE))
                retry_after = problem_retry_after(h->resp.problem.id);

        http_finish_resp(&h->resp, &body, &ct);
        size_t len = body ? strlen(body) : 0;
        struct MHD_Response *mr = MHD_create_response_from_buffer(len, body ? body : (char *)"",
                                                                  body ? MHD_RESPMEM_MUST_FREE
                                                                       : MHD_RESPMEM_PERSISTENT);
        if (!mr) {
                free(body);
                return MHD_NO;
        }
        /* A 204 has no content, so no type for it (RFC 9110 8.3). */
        if (status != MHD_HTTP_NO_CONTENT)
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

static void unix_peer(struct MHD_Connection *conn, char *buf, size_t len, char *caller, size_t caller_len)
{
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        pid_t pid;
        uid_t uid;
        gid_t gid;
        if (!ci || auth_peer_cred(ci->connect_fd, &pid, &uid, &gid) < 0) {
                snprintf(buf, len, "unix peer=unknown");
                snprintf(caller, caller_len, "unix peer=unknown");
                return;
        }
        snprintf(buf, len, "uid=%u gid=%u pid=%d", (unsigned)uid, (unsigned)gid, (int)pid);
        snprintf(caller, caller_len, "uid=%u", (unsigned)uid);
}

/* Gather what the caller presented, let authz.c decide; false when a
 * refusal is in H->resp.  Fills H->who in any case. */
static bool authorize(struct listener *l, struct hreq *h, struct MHD_Connection *conn, const char *url)
{
        struct http *http = l->http;
        struct authz_input in = {
                .listener = l->tcp ? AUTHZ_TCP : AUTHZ_UNIX,
                .cert = AUTHZ_CERT_NOT_REQUIRED,
                .tokens_configured = http->auth != NULL,
                .token_role = AUTH_NONE,
                .open_route = (strcmp(h->method, "GET") == 0 || strcmp(h->method, "HEAD") == 0) &&
                              strcmp(url, "/v1/health") == 0,
                .mutation = audit_is_mutation(h->method),
                .stopping = atomic_load(&http->app->stopping),
        };

        if (!l->tcp) {
                unix_peer(conn, h->who, sizeof(h->who), h->caller, sizeof(h->caller));
        } else {
                char ip[INET6_ADDRSTRLEN + 8], cert[200] = "", token[AUTH_ID_MAX] = "";
                client_ip(conn, ip, sizeof(ip));
                if (l->tls && http->client_ca) {
                        const union MHD_ConnectionInfo *ci =
                                MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
                        void *session = ci ? ci->tls_session : NULL;
                        int r = tls_verify_client(session);
                        in.cert = r == 0 ? AUTHZ_CERT_OK
                                  : r == -ENOKEY || r == -ENOTCONN ? AUTHZ_CERT_MISSING
                                                                   : AUTHZ_CERT_INVALID;
                        if (tls_client_subject(session, cert, sizeof(cert)) < 0)
                                cert[0] = '\0';
                }
                if (http->auth) {
                        const char *authz = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                                         MHD_HTTP_HEADER_AUTHORIZATION);
                        in.token_role = auth_check_bearer(http->auth, authz, token, &in.token_sent);
                }
                snprintf(h->who, sizeof(h->who), "%s%s%s%s%sip=%s", token[0] ? token : "",
                         token[0] ? " " : "", cert[0] ? "cert:" : "", cert, cert[0] ? " " : "", ip);
                if (!token[0] && http->auth && in.token_sent)
                        snprintf(h->who, sizeof(h->who), "bad-token%s%s ip=%s", cert[0] ? " cert:" : "", cert, ip);
                /* Whose long-polls these are: the token, else the
                 * certificate, else the address. */
                if (token[0])
                        snprintf(h->caller, sizeof(h->caller), "%s", token);
                else if (cert[0])
                        snprintf(h->caller, sizeof(h->caller), "cert:%.70s", cert);
                else
                        snprintf(h->caller, sizeof(h->caller), "ip=%s", ip);
        }
        enum authz_decision d = authz_decide(&in);
        http_refuse(&h->resp, d, &h->www_authenticate, &h->invalid_token);
        /* A connection that proved who it is (or a listener that asks for
         * nothing, once a request of it is allowed) is no longer the first
         * to be evicted. */
        if (d == AUTHZ_ALLOW && !in.open_route &&
            (authz_authenticated(&in) || (!in.tokens_configured && in.cert == AUTHZ_CERT_NOT_REQUIRED)))
                deadlines_vouch(&http->deadlines, conn_track_of(conn));
        return d == AUTHZ_ALLOW;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        struct listener *l = cls;
        struct hreq *h = *con_cls;

        if (!h || !h->started) {
                if (!h && !(h = hreq_new(l->http, conn)))
                        return MHD_NO;
                *con_cls = h;
                h->started = true;
                /* Headers in; the body has the request limit to arrive. */
                set_deadline(l->http, conn, l->http->request_ns);
                snprintf(h->method, sizeof(h->method), "%s", method);
                h->req.method = h->method;
                h->req.path = "";
                /* Truncated for the audit line until the length is checked. */
                snprintf(h->path, sizeof(h->path), "%s", url);
                if (!header_within_limits(h, conn))
                        return queue(h);
                if (!authorize(l, h, conn, url))
                        return queue(h);
                if (h->query_err < 0) {
                        http_query_refuse(&h->resp, h->query_err);
                        return queue(h);
                }
                if (strlen(url) >= sizeof(h->path)) {
                        http_set_problem(&h->resp, PROBLEM_URI_TOO_LONG, "the request path is too long");
                        return queue(h);
                }
                h->req.path = h->path;
                const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl && strtoull(cl, NULL, 10) > HTTP_BODY_MAX) {
                        http_set_problem(&h->resp, PROBLEM_BODY_TOO_LARGE, "request bodies are limited to 64 KiB");
                        return queue(h);
                }
                return MHD_YES;
        }

        if (h->deferred) {
                /* Called again after MHD_resume_connection. */
                if (!atomic_load(&h->work_done))
                        return MHD_YES;
                h->deferred = false;
                if (h->client_gone)
                        return MHD_NO; /* nobody to answer: close */
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
        req->query = http_query_get;
        req->conn = &h->query;
        req->content_type = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        req->body = h->body ? h->body : "";
        req->body_len = h->body_len;
        req->app = l->http->app;

        if (!http_dispatch(l->http->routes, req, h->too_large, &h->resp))
                return queue(h);
        if (h->resp.park_check) {
                park(h, conn);
                return MHD_YES;
        }

        struct workq *q = &l->http->blocking;
        set_deadline(l->http, conn, 0); /* received in full; the work may take its time */
        h->deferred = true;
        answering_begin(h);
        MHD_suspend_connection(conn);
        h->item.run = run_deferred;
        if (!workq_push(q, &h->item)) {
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
        if (h->answering)
                atomic_fetch_sub(&h->http->answering, 1);
        /* Keep-alive: the connection may idle this long before its next
         * request line. */
        set_deadline(h->http, h->conn, h->http->request_ns);
        http_resp_cleanup(&h->resp);
        free(h->body);
        free(h);
        *con_cls = NULL;
}

/* Wake L's polling thread without libmicrohttpd's eventfd: connect to the
 * listening socket (a wildcard address through its loopback) and close at
 * once; poll() returns for the pending accept, and the round that accepts
 * also runs the resumes libmicrohttpd had marked.  The stray connection
 * reads end-of-file and is closed like any client that left.  Returns
 * -errno when no connection could be started. */
static int http_nudge_listener(int listen_fd)
{
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);
        if (getsockname(listen_fd, (struct sockaddr *)&ss, &len) < 0)
                return -errno;
        if (ss.ss_family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *)&ss;
                if (in->sin_addr.s_addr == htonl(INADDR_ANY))
                        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        } else if (ss.ss_family == AF_INET6) {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
                if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
                        in6->sin6_addr = in6addr_loopback;
        }
        int s = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0)
                return -errno;
        /* Non-blocking: EINPROGRESS still queues the connection. */
        int r = connect(s, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS ? -errno : 0;
        close(s);
        return r;
}

/* libmicrohttpd's failure to wake its thread for a resumed connection (see
 * the top of this file); the text is 0.9.75's. */
#define MHD_RESUME_WAKE_FAILED "Failed to signal resume"

static __attribute__((format(printf, 2, 0))) void mhd_log(void *cls, const char *fmt, va_list ap)
{
        struct listener *l = cls;
        char buf[512];
        vsnprintf(buf, sizeof(buf), fmt, ap);
        size_t n = strlen(buf);
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                buf[--n] = '\0';
        if (strncmp(buf, MHD_RESUME_WAKE_FAILED, strlen(MHD_RESUME_WAKE_FAILED)) == 0) {
                int r = http_nudge_listener(l->fd);
                log_warn("libmicrohttpd could not wake its %s thread for an answer; woken through its "
                         "listening socket%s%s", l->thread_name, r < 0 ? " failed: " : "",
                         r < 0 ? strerror(-r) : "");
                return;
        }
        log_debug("libmicrohttpd: %s", buf);
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
        l->thread_name = tcp ? "http-tcp" : "http-unix";
        unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
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
        /* On TCP deadline.c enforces the connection limit by evicting the
         * oldest unvouched connection, so libmicrohttpd's own limit (which
         * refuses the newcomer) sits a little above it. */
        unsigned limit = cfg->connection_limit ? cfg->connection_limit : 256u;
        l->mhd = MHD_start_daemon(
                flags, 0, NULL, NULL, on_request, l,
                MHD_OPTION_EXTERNAL_LOGGER, mhd_log, l,
                MHD_OPTION_LISTEN_SOCKET, fd,
                MHD_OPTION_NOTIFY_COMPLETED, on_completed, l,
                MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
                MHD_OPTION_URI_LOG_CALLBACK, on_uri, l,
                MHD_OPTION_UNESCAPE_CALLBACK, keep_escaped, NULL,
                MHD_OPTION_CONNECTION_LIMIT, tcp ? limit + EVICTION_SLACK : limit,
                MHD_OPTION_CONNECTION_TIMEOUT, cfg->connection_timeout_s ? cfg->connection_timeout_s : 30u,
                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
                MHD_OPTION_PER_IP_CONNECTION_LIMIT, tcp ? (cfg->per_ip_limit ? cfg->per_ip_limit : 64u) : 0u,
                MHD_OPTION_ARRAY, tls,
                MHD_OPTION_END);
        if (!l->mhd)
                return -EIO;
        return 0;
}

int http_start(const struct http_config *cfg, struct app *app, struct http **ret)
{
        assert_return(cfg->routes, -EINVAL);
        struct http *h = calloc(1, sizeof(*h));
        int r;
        if (!h)
                return -ENOMEM;
        h->app = app;
        h->routes = cfg->routes;
        h->tcp.fd = h->unix_.fd = -1;
        h->auth = cfg->auth;
        h->client_ca = cfg->tls_client_ca_pem != NULL;
        if ((cfg->tls_cert_pem || cfg->tls_key_pem) && !MHD_is_feature_supported(MHD_FEATURE_TLS)) {
                log_err("this libmicrohttpd has no TLS support");
                free(h);
                return -EOPNOTSUPP;
        }

        unsigned timeout_s = cfg->connection_timeout_s ? cfg->connection_timeout_s : 30u;
        unsigned header_s = cfg->header_timeout_s ? cfg->header_timeout_s : HEADER_TIMEOUT_S;
        if (header_s > timeout_s)
                header_s = timeout_s;
        h->request_ns = (uint64_t)timeout_s * 1000000000u;
        h->header_ns = (uint64_t)header_s * 1000000000u;
        unsigned limit = cfg->connection_limit ? cfg->connection_limit : 256u;
        /* Each names the threads it could not start: the daemon exits with
         * this as its last word (the fault sweep's clone3 EAGAIN found the
         * start refused without one). */
        r = deadlines_start(&h->deadlines, h->header_ns, limit, limit * UNVOUCHED_SHARE_PCT / 100);
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot start the http-deadline thread");
                goto fail;
        }
        r = workq_start(&h->blocking, "http-blk", BLOCKING_THREADS, QUEUE_MAX_PENDING, false);
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot start the http-blk threads");
                goto fail;
        }
        r = waiters_start(&h->waiters, cfg->max_waits_per_caller, cfg->max_waits);
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot start the http-waits thread");
                goto fail;
        }

        for (size_t i = 0; i < cfg->n_listen_fds; i++) {
                int fd = cfg->listen_fds[i];
                int fam = http_socket_family(fd);
                bool tcp = fam == AF_INET || fam == AF_INET6;
                struct listener *l = tcp ? &h->tcp : &h->unix_;
                if (fam < 0 || (!tcp && fam != AF_UNIX) || l->mhd) {
                        log_err("socket activation: passed socket %d is not one TCP and one unix stream socket", fd);
                        r = -EINVAL;
                        goto fail;
                }
                if (tcp)
                        h->tcp_port = http_socket_port(fd);
                r = start_listener(h, l, fd, cfg, tcp);
                if (r < 0) {
                        log_err("cannot start HTTP on passed socket %d", fd);
                        goto fail;
                }
        }
        if (cfg->listen && !cfg->n_listen_fds) {
                int fd = -1;
                r = http_listen_tcp(cfg->listen, &fd, &h->tcp_port);
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
                r = http_listen_unix(cfg->socket_path, cfg->socket_gid, &fd);
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
        pools_set_observer(app->pools, pool_changed, h);
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
        /* Parked long-polls answer now with what they have (the checks see
         * app->stopping). */
        waiters_notify_all(&h->waiters);
}

size_t http_parked(struct http *h)
{
        return h ? waiters_count(&h->waiters) : 0;
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
        pools_set_observer(h->app->pools, NULL, NULL);
        http_quiesce(h);
        workq_stop(&h->blocking);
        waiters_stop(&h->waiters);
        /* The finished work resumed its connections, but libmicrohttpd's
         * threads send those answers: stopping them now would close the
         * connections of requests that were drained for, unanswered.  Wait
         * until each has completed; bounded, for a client that never reads. */
        uint64_t until = now_mono_ns() + 10 * UINT64_C(1000000000);
        while (atomic_load(&h->answering) > 0 && now_mono_ns() < until)
                usleep(1000);
        if (atomic_load(&h->answering) > 0)
                log_warn("stopping with %u answers unsent", atomic_load(&h->answering));
        stop_listener(&h->tcp);
        stop_listener(&h->unix_);
        /* Only now: until its listener threads were joined, a request on an
         * open connection could still park (waiters_add answers
         * -ESHUTDOWN, under the lock, and writes the eventfd). */
        waiters_destroy(&h->waiters);
        deadlines_stop(&h->deadlines);
        if (h->socket_path[0])
                unlink(h->socket_path);
        free(h);
}

