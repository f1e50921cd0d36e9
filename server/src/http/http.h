/* http: libmicrohttpd glue, the only module that includes <microhttpd.h>.
 *
 * One libmicrohttpd daemon per listener (TCP, unix socket), each with its own
 * internal polling thread.  Request bodies are collected up to a hard limit;
 * the route's handler runs on the polling thread and must be fast.  A handler
 * that must block hands back a work function: the connection is suspended,
 * the work runs on one of a fixed set of threads created at start (no thread
 * is created while pools warm: thread stacks take the mmap lock as a writer),
 * and the connection resumes when it is done.  A long-poll costs no thread:
 * its connection is suspended and parked until the pool it waits for
 * changes (pools_set_observer), its time is up or its client hangs up. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct app;
struct auth;
struct http;
struct route_table;

#define HTTP_BODY_MAX (64 * 1024)

struct http_config {
        /* What to answer and with which handler (main.c: api_routes); must
         * outlive the http object. */
        const struct route_table *routes;
        const char *listen;      /* "HOST:PORT" or NULL */
        const char *socket_path; /* unix socket path or NULL */
        unsigned connection_limit;
        unsigned connection_timeout_s;
        unsigned header_timeout_s; /* 0: 5 s (at most connection_timeout_s) */
        unsigned per_ip_limit;
        /* Long-polls parked at once per caller (token, unix uid or TCP
         * address; 0: 256) and in all (0: 16384); past them 429. */
        unsigned max_waits_per_caller, max_waits;
        gid_t socket_gid;        /* group of the unix socket; (gid_t)-1 or 0 leaves it */
        /* Access on TCP (the unix socket is guarded by its file mode):
         * bearer tokens when AUTH is set, TLS when both PEMs are set, and a
         * verified client certificate on every request but GET /v1/health
         * when TLS_CLIENT_CA_PEM is set too.  PEM text must outlive the
         * http object. */
        struct auth *auth;
        const char *tls_cert_pem, *tls_key_pem, *tls_client_ca_pem;
        /* Listening sockets handed over by the service manager (socket
         * activation), used instead of LISTEN/SOCKET_PATH: at most one
         * AF_UNIX and one TCP socket; http_stop() closes them. */
        int listen_fds[2];
        size_t n_listen_fds;
};

/* Whether SPEC ("HOST:PORT") binds loopback only: 1 when every address it
 * resolves to is in 127.0.0.0/8 or ::1, 0 when any is not (a wildcard
 * address is not), -EINVAL/-EADDRNOTAVAIL when it does not parse/resolve. */
int http_listen_is_loopback(const char *spec);
/* Same for a bound socket: 1 for loopback TCP and for AF_UNIX, 0 otherwise. */
int http_socket_is_loopback(int fd);
/* 1 when FD is a TCP (IPv4/IPv6) socket, 0 when not, -errno when it cannot
 * be told. */
int http_socket_is_tcp(int fd);
/* Stop accepting new connections; requests on open connections are still
 * answered (mutations with 503 once app->stopping is set).  Accepts NULL. */
void http_quiesce(struct http *h);

/* Bind, listen, start serving.  Caller owns *ret. */
int http_start(const struct http_config *cfg, struct app *app, struct http **ret);
/* The TCP port really bound (after port 0), or 0. */
uint16_t http_tcp_port(const struct http *h);
/* Long-polls parked now (for tests). */
size_t http_parked(struct http *h);
/* Stop accepting, finish in-flight work, stop threads.  Accepts NULL. */
void http_stop(struct http *h);

/* For tests and the fuzzer: run one request through ROUTES and their handlers
 * without a socket.  Writes status, a malloc'd body and its content type.
 * Work functions run inline. */
int http_handle_local(const struct route_table *routes, struct app *app, const char *method, const char *url,
                      const char *content_type, const char *body, size_t body_len,
                      int *ret_status, char **ret_body, const char **ret_content_type);
