/* problem: fill and encode RFC 9457 problem details.  problem_set describes
 * the problem itself (status, slug, title, detail); the extension members
 * (counts, Allow, Retry-After) are left as the caller set them, before or
 * after, so a handler can add them in any order.  Encoding goes through the
 * json builder, never cJSON directly. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "problem.h"

#define PROBLEM_TYPE_PREFIX "urn:hpwarm:problem:"

/* A truncated detail may end inside a multi-byte UTF-8 sequence; drop that
 * partial sequence so the detail stays valid UTF-8 on the wire. */
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
                return; /* ASCII or stray continuation bytes: leave as is */
        need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
        if (len - (k - 1) < need)
                s[k - 1] = '\0';
}

void problem_set(struct problem *p, int status, const char *slug, const char *title,
                 const char *fmt, ...)
{
        va_list ap;
        int n;

        if (!p)
                return;
        p->status = status;
        p->slug = slug;
        p->title = title;
        va_start(ap, fmt);
        n = vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
        va_end(ap);
        if (n >= (int)sizeof(p->detail))
                trim_partial_utf8(p->detail);
}

char *problem_to_json(const struct problem *p)
{
        struct json *o;
        char type[128];
        char *text;

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
        text = json_print(o);
        json_free(o);
        return text;
}
