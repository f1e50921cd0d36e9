/* problem: fill and encode RFC 9457 problem details.  problem_set describes
 * the problem itself (status, slug, title, detail); the extension members
 * (counts, Allow, Retry-After) are left as the caller set them, before or
 * after, so a handler can add them in any order.  Details are forced to
 * valid UTF-8.  Encoding goes through the json builder, never cJSON directly. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "problem.h"

#define PROBLEM_TYPE_PREFIX "urn:hpwarm:problem:"

/* Length of the valid UTF-8 sequence at S (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF), or 0 if the bytes there are not one. */
static size_t utf8_seq_len(const unsigned char *s)
{
        unsigned char c = s[0];
        if (c < 0x80)
                return 1;
        size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (!n)
                return 0;
        for (size_t i = 1; i < n; i++)
                if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
                        return 0;
        if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
            (c == 0xf4 && s[1] > 0x8f))
                return 0;
        return n;
}

/* A truncated detail may end inside a multi-byte UTF-8 sequence; drop that
 * partial sequence rather than mark it invalid below. */
static void trim_partial_utf8(char *s)
{
        size_t len = strlen(s), k = len, need;
        unsigned char lead;

        while (k > 0 && len - k < 4 && ((unsigned char)s[k - 1] & 0xc0) == 0x80)
                k--;
        if (k == 0)
                return;
        lead = (unsigned char)s[k - 1];
        if (lead < 0xc0)
                return;
        need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
        if (len - (k - 1) < need)
                s[k - 1] = '\0';
}

/* Details quote what clients sent (a path segment, a key), which may be any
 * bytes; JSON text must be UTF-8 (RFC 8259 section 8.1).  Replace each byte
 * that does not start a valid sequence with '?', in place; this also drops
 * a sequence that vsnprintf cut in half. */
static void make_utf8(char *s)
{
        for (unsigned char *p = (unsigned char *)s; *p;) {
                size_t n = utf8_seq_len(p);
                if (n) {
                        p += n;
                } else {
                        *p++ = '?';
                }
        }
}

void problem_set(struct problem *p, int status, const char *slug, const char *title,
                 const char *fmt, ...)
{
        va_list ap;

        if (!p)
                return;
        p->status = status;
        p->slug = slug;
        p->title = title;
        va_start(ap, fmt);
        int n = vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
        va_end(ap);
        if (n >= (int)sizeof(p->detail))
                trim_partial_utf8(p->detail);
        make_utf8(p->detail);
}

struct json *problem_to_value(const struct problem *p)
{
        struct json *o;
        char type[128];

        if (!p)
                return NULL;
        if (p->slug)
                snprintf(type, sizeof(type), PROBLEM_TYPE_PREFIX "%s", p->slug);
        else
                snprintf(type, sizeof(type), "about:blank");

        o = json_new_object();
        json_add_str(o, "type", type);
        json_add_str(o, "title", p->title ? p->title : "Error");
        json_add_i64(o, "status", p->status);
        json_add_str(o, "detail", p->detail);
        if (p->has_counts) {
                json_add_u64(o, "requested", p->requested);
                json_add_u64(o, "achieved", p->achieved);
        }
        if (p->has_floor) {
                json_add_u64(o, "memory_floor_bytes", p->floor_bytes);
                json_add_u64(o, "memory_free_bytes", p->mem_free_bytes);
                json_add_u64(o, "max_count", p->max_count);
        }
        return o;
}

char *problem_to_json(const struct problem *p)
{
        struct json *o = problem_to_value(p);
        char *text = json_print(o);
        json_free(o);
        return text;
}
