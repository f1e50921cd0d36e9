/* router: a route table {method, pattern, handler, body} given from above
 * (api/routes.c), and its matcher.  Handlers see plain
 * structs, never libmicrohttpd: they parse, call the core, encode.  A handler
 * that must block (a sysfs write that compacts memory, a cancel that waits
 * for workers) sets resp->work; http.c then suspends the connection, runs
 * work() on a worker thread and sends the response after.  A long-poll
 * parks instead (resp_park): the connection is suspended with no thread
 * held, and the handler's check() is called again whenever the awaited
 * thing may have changed, until it answers. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "problem.h"

struct app;

#define ROUTE_MAX_PARAMS 4
#define ROUTE_PARAM_MAX 256

struct req {
        const char *method;
        const char *path;                        /* without the query string */
        const char *route;                       /* matched pattern, e.g. "/v1/nodes/{id}" */
        char params[ROUTE_MAX_PARAMS][ROUTE_PARAM_MAX]; /* {x} captures, in order, decoded */
        size_t n_params;
        /* Query string value for KEY, or NULL. */
        const char *(*query)(const struct req *r, const char *key);
        void *conn;                              /* http.c's, for query() */
        const char *content_type;                /* NULL if none */
        const char *body;                        /* NULL-terminated copy, may contain NULs */
        size_t body_len;
        struct app *app;
};

/* A parked request's re-evaluation: fill R and return true once the answer
 * is known; with EXPIRED (deadline passed, or the daemon is stopping) it
 * must fill R and return true.  Called on the HTTP layer's waits thread:
 * must not block (a registry lookup is fine). */
struct resp;
typedef bool (*park_check_fn)(struct resp *r, void *ctx, bool expired);

struct resp {
        int status;                 /* 2xx with body, or >= 400 with problem */
        char *body;                 /* malloc'd; http.c frees */
        const char *content_type;   /* default application/json */
        struct problem problem;     /* used when status >= 400 and body == NULL */
        char location[256];         /* Location header when non-empty */
        char allow[64];             /* Allow header (405) when non-empty */
        /* Deferred work: run off the HTTP thread, fills status/body/problem. */
        void (*work)(struct resp *r, void *ctx);
        void *ctx;
        void (*ctx_free)(void *ctx);
        /* Long-poll (resp_park): re-check on changes of PARK_TOPIC until
         * PARK_DEADLINE_NS (CLOCK_MONOTONIC). */
        park_check_fn park_check;
        char park_topic[ROUTE_PARAM_MAX];
        uint64_t park_deadline_ns;
};

typedef void (*handler_fn)(const struct req *req, struct resp *resp);

/* What body a route takes. */
enum route_body {
        ROUTE_BODY_NONE,            /* none: any body is 400 */
        ROUTE_BODY_JSON,            /* a JSON body (PUT/POST with JSON) */
        ROUTE_BODY_OPTIONAL,        /* a JSON body, or no body at all */
};

struct route {
        const char *method;
        const char *pattern;        /* "/v1/nodes/{id}/hugepages/{size}" */
        handler_fn handler;
        enum route_body body;
};

/* The routes a transport answers: data from above (api/routes.c), handed
 * to http_start by main.c.  ROWS outlives every user of the table. */
struct route_table {
        const struct route *rows;
        size_t n_rows;
};

enum route_match { ROUTE_FOUND, ROUTE_NO_PATH, ROUTE_BAD_METHOD };

/* Match METHOD and PATH against TABLE; HEAD matches GET routes.  On
 * ROUTE_FOUND fills *ret_route and the captures in REQ.  On
 * ROUTE_BAD_METHOD writes the Allow header value (e.g. "GET, HEAD, PUT")
 * into ALLOW.  Captures are percent-decoded; a capture with '/' or NUL
 * after decoding never matches. */
enum route_match route_match(const struct route_table *table, const char *method, const char *path,
                             struct req *req, const struct route **ret_route, char *allow, size_t allow_len);

/* Helpers for handlers. */
void resp_json(struct resp *r, int status, char *body);  /* takes BODY */
void resp_problem(struct resp *r, const struct problem *p);
/* 503 stopping: the daemon is shutting down (retry after 1 s). */
void resp_refuse_stopping(struct resp *r);
/* Run WORK off the HTTP thread, on the blocking work queue (workq.c: short
 * blocking operations such as a create, a reservation, a delete); CTX is
 * malloc'd and freed after the response. */
void resp_defer(struct resp *r, void (*work)(struct resp *r, void *ctx), void *ctx);
/* Park the request until CHECK answers (see park_check_fn): it is called
 * when TOPIC (a pool name) changes and at DEADLINE_NS.  CTX is malloc'd and
 * freed after the response. */
void resp_park(struct resp *r, park_check_fn check, void *ctx, const char *topic, uint64_t deadline_ns);
/* The topic of waits on the whole stock (GET /v1/stock?wait=change): told
 * of every change, of a pool or not.  No pool name has a '/'. */
#define PARK_TOPIC_STOCK "/stock"

