/* router: a matcher for "{param}" patterns over a route table it is given,
 * and the helpers handlers fill their response with.  The table itself is
 * data from above (api/routes.c, handed down by main.c): the transport never
 * names a handler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "router.h"

#define SEGMENT_MAX ROUTE_PARAM_MAX

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Percent-decode [S, S+LEN) into OUT.  Fails on bad escapes, NUL, '/', or
 * overflow: a capture never smuggles a path separator or a terminator. */
static bool decode_segment(const char *s, size_t len, char *out, size_t out_len)
{
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (c == '%') {
                        if (i + 2 >= len)
                                return false;
                        int hi = hexval(s[i + 1]), lo = hexval(s[i + 2]);
                        if (hi < 0 || lo < 0)
                                return false;
                        c = (char)(hi * 16 + lo);
                        i += 2;
                }
                if (c == '\0' || c == '/' || o + 1 >= out_len)
                        return false;
                out[o++] = c;
        }
        out[o] = '\0';
        return o > 0;
}

/* Match PATH against PATTERN segment by segment; captures go to CAPS. */
static bool match_pattern(const char *pattern, const char *path,
                          char caps[ROUTE_MAX_PARAMS][SEGMENT_MAX], size_t *n_caps)
{
        size_t n = 0;
        const char *p = pattern, *s = path;
        while (*p && *s) {
                if (*p != '/' || *s != '/')
                        return false;
                p++, s++;
                const char *pe = strchrnul(p, '/'), *se = strchrnul(s, '/');
                if (*p == '{') {
                        if (n >= ROUTE_MAX_PARAMS ||
                            !decode_segment(s, (size_t)(se - s), caps[n], SEGMENT_MAX))
                                return false;
                        n++;
                } else if ((size_t)(pe - p) != (size_t)(se - s) || memcmp(p, s, (size_t)(pe - p)) != 0) {
                        return false;
                }
                p = pe, s = se;
        }
        if (*p || *s)
                return false;
        *n_caps = n;
        return true;
}

enum route_match route_match(const struct route_table *table, const char *method, const char *path,
                             struct req *req, const struct route **ret_route, char *allow, size_t allow_len)
{
        char(*caps)[SEGMENT_MAX] = req->params;
        bool path_seen = false;
        size_t used = 0;

        if (allow_len)
                allow[0] = '\0';
        for (const struct route *r = table->rows; r < table->rows + table->n_rows; r++) {
                size_t n_caps;
                if (!match_pattern(r->pattern, path, caps, &n_caps))
                        continue;
                /* HEAD is answered wherever GET is: the same handler and
                 * headers; the HTTP layer sends no body. */
                if (strcmp(r->method, method) == 0 ||
                    (strcmp(method, "HEAD") == 0 && strcmp(r->method, "GET") == 0)) {
                        req->n_params = n_caps;
                        req->route = r->pattern;
                        *ret_route = r;
                        return ROUTE_FOUND;
                }
                path_seen = true;
                int w = snprintf(allow + used, allow_len - used, "%s%s%s", used ? ", " : "", r->method,
                                 strcmp(r->method, "GET") == 0 ? ", HEAD" : "");
                if (w > 0 && (size_t)w < allow_len - used)
                        used += (size_t)w;
        }
        return path_seen ? ROUTE_BAD_METHOD : ROUTE_NO_PATH;
}

void resp_json(struct resp *r, int status, char *body)
{
        r->status = status;
        free(r->body);
        r->body = body;
        r->content_type = "application/json";
        if (!body) {
                problem_raise(&r->problem, PROBLEM_INTERNAL_ERROR, "out of memory encoding the response");
                r->status = 500;
        }
}

void resp_problem(struct resp *r, const struct problem *p)
{
        free(r->body);
        r->body = NULL;
        r->problem = *p;
        r->status = p->status;
}

void resp_refuse_stopping(struct resp *r)
{
        struct problem p = { 0 };
        problem_raise(&p, PROBLEM_STOPPING, "the daemon is stopping; retry against its successor");
        p.retry_after = 1;
        resp_problem(r, &p);
}

void resp_defer(struct resp *r, void (*work)(struct resp *r, void *ctx), void *ctx)
{
        r->work = work;
        r->ctx = ctx;
        r->ctx_free = free;
}

void resp_park(struct resp *r, park_check_fn check, void *ctx, const char *topic, uint64_t deadline_ns)
{
        r->park_check = check;
        r->ctx = ctx;
        r->ctx_free = free;
        snprintf(r->park_topic, sizeof(r->park_topic), "%s", topic);
        r->park_deadline_ns = deadline_ns;
}
