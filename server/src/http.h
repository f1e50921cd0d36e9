/* http: libmicrohttpd glue, the only module that includes <microhttpd.h>.
 *
 * One libmicrohttpd daemon per listener (TCP, unix socket), each with its own
 * internal polling thread.  Request bodies are collected up to a hard limit;
 * the route's handler runs on the polling thread and must be fast.  A handler
 * that must block hands back a work function: the connection is suspended,
 * the work runs on one of a fixed set of threads created at start (no thread
 * is created while pools warm: thread stacks take the mmap lock as a writer),
 * and the connection resumes when it is done. */
#pragma once
#include <stdint.h>

struct app;
struct http;

#define HTTP_BODY_MAX (64 * 1024)

struct http_config {
        const char *listen;      /* "HOST:PORT" or NULL */
        const char *socket_path; /* unix socket path or NULL */
        unsigned connection_limit;
        unsigned connection_timeout_s;
        unsigned per_ip_limit;
};

/* Bind, listen, start serving.  Caller owns *ret. */
int http_start(const struct http_config *cfg, struct app *app, struct http **ret);
/* The TCP port really bound (after port 0), or 0. */
uint16_t http_tcp_port(const struct http *h);
/* Stop accepting, finish in-flight work, stop threads.  Accepts NULL. */
void http_stop(struct http *h);

/* For tests and the fuzzer: run one request through routing and handlers
 * without a socket.  Writes status, a malloc'd body and its content type.
 * Work functions run inline. */
int http_handle_local(struct app *app, const char *method, const char *url,
                      const char *content_type, const char *body, size_t body_len,
                      int *ret_status, char **ret_body, const char **ret_content_type);
