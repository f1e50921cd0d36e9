/* Fuzz target: json_decode with the schema of PUT /v1/pools/{name}, plus the
 * generic json_parse.  Invariants: no crash; a refusal is a 400 or 422 with a
 * slug and a problem body that is itself valid JSON; an acceptance leaves
 * NUL-terminated strings and integers within 2^53; whatever json_parse
 * accepts prints to text that json_parse accepts again. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "json.h"
#include "problem.h"

#define FUZZ_MAX_INPUT (64 * 1024) /* the HTTP body limit */
#define MAX_EXACT (UINT64_C(1) << 53)

struct pool_body {
        uint64_t node, size_bytes, threads, ttl_seconds;
        char size[32], page_size[16];
        bool reserve;
        bool has_node, has_size_bytes, has_threads, has_ttl, has_size, has_page_size,
                has_reserve;
};

static void check_decode(const char *buf, size_t len)
{
        struct pool_body b = {};
        struct problem p = {};
        const struct jfield fields[] = {
                { "node", JF_U64, &b.node, 0, &b.has_node },
                { "size", JF_STRING, b.size, sizeof(b.size), &b.has_size },
                { "size_bytes", JF_U64, &b.size_bytes, 0, &b.has_size_bytes },
                { "page_size", JF_STRING, b.page_size, sizeof(b.page_size), &b.has_page_size },
                { "threads", JF_U64, &b.threads, 0, &b.has_threads },
                { "ttl_seconds", JF_U64, &b.ttl_seconds, 0, &b.has_ttl },
                { "reserve", JF_BOOL, &b.reserve, 0, &b.has_reserve },
        };
        int r = json_decode(buf, len, fields, sizeof(fields) / sizeof(fields[0]), &p);

        if (r == 0) {
                if (p.status != 0)
                        abort();
                if (b.node > MAX_EXACT || b.size_bytes > MAX_EXACT || b.threads > MAX_EXACT ||
                    b.ttl_seconds > MAX_EXACT)
                        abort();
                if (!memchr(b.size, '\0', sizeof(b.size)) ||
                    !memchr(b.page_size, '\0', sizeof(b.page_size)))
                        abort();
                if (!b.has_size && b.size[0])
                        abort();
                return;
        }
        if (r == -ENOMEM)
                return;
        if (r != -EINVAL || (p.status != 400 && p.status != 422) || !p.slug || !p.title ||
            !memchr(p.detail, '\0', sizeof(p.detail)))
                abort();
        /* Outputs stay untouched on refusal. */
        if (b.has_node || b.has_size || b.has_size_bytes || b.has_page_size || b.has_threads ||
            b.has_ttl || b.has_reserve)
                abort();

        char *body = problem_to_json(&p);
        struct json *v = NULL;
        if (!body)
                abort();
        if (json_parse(body, strlen(body), &v) != 0)
                abort();
        json_free(v);
        free(body);
}

static void check_parse(const char *buf, size_t len)
{
        struct json *v = NULL, *w = NULL;
        char *text;

        if (json_parse(buf, len, &v) != 0)
                return;
        text = json_print(v);
        if (!text)
                abort();
        if (json_parse(text, strlen(text), &w) != 0)
                abort();
        json_free(w);
        free(text);
        json_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > FUZZ_MAX_INPUT)
                return 0;
        check_decode((const char *)data, size);
        check_parse((const char *)data, size);
        return 0;
}
