/* http_internal: what the http*.c files share, and nothing else may use.
 *
 *   http.c          libmicrohttpd glue: listeners' daemons, per-request
 *                   state, access, suspend/resume (the only file that
 *                   includes <microhttpd.h>)
 *   http_dispatch.c routing, handler call, response encoding; the
 *                   socketless entry for tests and the fuzzer
 *   http_listen.c   listening sockets
 *   authz.c         the access decision (pure)
 *   workq.c         bounded deferred-work queue
 *   waiters.c       parked long-polls and the thread that serves them
 *   deadline.c      per-request arrival limit and its thread
 *
 * Threads (each named): per listener one libmicrohttpd polling thread
 * ("http-tcp", "http-unix": named from its first callback, libmicrohttpd
 * gives no hook at creation), "http-deadline", "http-waits" (every parked
 * long-poll) and the work queue's threads ("http-blk-N").  Handlers run on
 * a polling thread; long-poll checks on "http-waits". */
#pragma once

/* Private to server/src/http/: its object library defines HPW_IN_HTTP
 * (server/CMakeLists.txt); everything else goes through http.h. */
#ifndef HPW_IN_HTTP
#error "http_internal.h is private to server/src/http/"
#endif
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "auth.h"
#include "authz.h"
#include "deadline.h"
#include "router.h"
#include "waiters.h"
#include "workq.h"

/* Query strings are ours to parse (libmicrohttpd's parser would spend its
 * per-connection memory on each argument: 600 of them exhausted it, and the
 * client got no answer).  Beyond these: 414 uri-too-long. */
#define HTTP_QUERY_MAX 1024
#define HTTP_QUERY_ARGS_MAX 32

/* The query string split at '&' into NUL-terminated "key=value" entries;
 * values stay escaped (see keep_escaped in http.c). */
struct http_query {
        char buf[HTTP_QUERY_MAX];
        size_t len;
};

/* Our limits on the header: bytes (names, values and separators) and
 * fields.  Far above what our clients send (a few hundred bytes). */
#define HTTP_HEADER_BYTES_MAX (8 * 1024)
#define HTTP_HEADER_FIELDS_MAX 64
/* Retry-After for a caller over its long-poll cap: long enough for one of
 * its waits to end, short enough that a client which backs off is not
 * starved. */
#define PARK_RETRY_AFTER_S 5

struct MHD_Daemon;
struct MHD_Connection;
struct app;
struct http;

struct listener {
        struct MHD_Daemon *mhd;
        struct http *http;
        int fd;
        bool tcp;
        bool tls;
        bool quiesced;
        atomic_bool thread_named;
        const char *thread_name;
};

struct http {
        struct app *app;
        const struct route_table *routes;
        struct deadlines deadlines;
        struct listener tcp, unix_;
        uint16_t tcp_port;
        char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
        struct workq blocking;
        struct waiters waiters;
        uint64_t header_ns;         /* a header must arrive within this */
        uint64_t request_ns;        /* a body, and an idle keep-alive gap, within this */
        struct auth *auth;
        bool client_ca;
        /* Requests deferred to the work queue or parked whose completion
         * libmicrohttpd has not reported yet: http_stop lets them send their
         * answers before it stops the listeners. */
        atomic_uint answering;
};

/* One per request, from the first access-handler call to the completion
 * notification (libmicrohttpd's con_cls). */
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
        bool started;            /* the access handler has seen the headers */
        bool client_gone;        /* a parked request whose client hung up */
        bool answering;          /* counted in http->answering */
        int query_err;           /* http_query_parse's, for the first call */
        struct http_query query;
        char who[320];           /* caller, for the audit line */
        char caller[WAITERS_CALLER_MAX]; /* whose long-poll cap it counts against */
        struct req req;
        struct resp resp;
        char method[16];
        char path[1024];
        uint64_t started_ns;     /* headers arrived (CLOCK_MONOTONIC): request latency */
        struct workq_item item;  /* in a work queue */
        struct waiter waiter;    /* parked (long-poll) */
};

/* http_dispatch.c */
void http_set_problem(struct resp *r, enum problem_id id, const char *detail);
/* Route REQ and run the handler.  True when RESP carries deferred work that
 * must run before the response can be sent. */
bool http_dispatch(const struct route_table *routes, struct req *req, bool too_large, struct resp *resp);
/* Encode RESP into (body, content type); takes the body. */
void http_finish_resp(struct resp *resp, char **ret_body, const char **ret_ct);
void http_resp_cleanup(struct resp *resp);
/* Parse RAW (LEN bytes, after the '?') into Q: -E2BIG when it is longer than
 * HTTP_QUERY_MAX - 1, -EMSGSIZE when it has more than HTTP_QUERY_ARGS_MAX
 * arguments (Q then holds nothing). */
int http_query_parse(struct http_query *q, const char *raw, size_t len);
/* req->query for a struct http_query in req->conn. */
const char *http_query_get(const struct req *r, const char *key);
/* The 414 for a query that http_query_parse refused with ERR. */
void http_query_refuse(struct resp *resp, int err);
/* The refusal for access decision D (not AUTHZ_ALLOW); sets
 * *RET_WWW_AUTHENTICATE for a 401 and *RET_INVALID_TOKEN for a wrong token. */
void http_refuse(struct resp *resp, enum authz_decision d, bool *ret_www_authenticate, bool *ret_invalid_token);
/* The answer to a long-poll waiters_add refused with ERR (429 over the
 * caller's cap, else 503). */
void http_park_refuse(struct resp *resp, int err, unsigned per_caller_max);
/* 431 headers-too-large. */
void http_header_refuse(struct resp *resp);

/* http_listen.c */
int http_socket_family(int fd);
uint16_t http_socket_port(int fd);
int http_listen_tcp(const char *spec, int *ret_fd, uint16_t *ret_port);
int http_listen_unix(const char *path, gid_t gid, int *ret_fd);
