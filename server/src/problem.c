/* problem: fill and encode RFC 9457 problem details.  problem_set describes
 * the problem itself (status, slug, title, detail); the extension members
 * (counts, Allow, Retry-After) are left as the caller set them, before or
 * after, so a handler can add them in any order.  Encoding goes through the
 * json builder, never cJSON directly. */
#include <stdarg.h>
#include <stdio.h>

#include "json.h"
#include "problem.h"

#define PROBLEM_TYPE_PREFIX "urn:hpwarm:problem:"

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
        vsnprintf(p->detail, sizeof(p->detail), fmt, ap);
        va_end(ap);
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
