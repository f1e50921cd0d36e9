/* handoff: compose VMM arguments from warm pools (see handoff.h).
 *
 * Built as a list of argv words first, by the format's composer; the shell
 * string and an XML format's fragment are renderings of that list, so they
 * can never disagree.  Each layer of escaping is a separate function
 * applied exactly once, where the layer is entered: a path goes through the
 * VMM's option escaping (its composer's) when it becomes part of an option
 * word, and the finished word goes through the shell (here) or XML escaping
 * (the XML format's composer) when it is rendered. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handoff_internal.h"

/* ---- a growing string that remembers running out of memory ---- */

void sb_putn(struct sbuf *b, const char *s, size_t n)
{
        if (b->oom)
                return;
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 64;
                while (cap < b->len + n + 1)
                        cap *= 2;
                char *p = realloc(b->s, cap);
                if (!p) {
                        b->oom = true;
                        return;
                }
                b->s = p;
                b->cap = cap;
        }
        memcpy(b->s + b->len, s, n);
        b->len += n;
        b->s[b->len] = '\0';
}

void sb_puts(struct sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

void sb_putc(struct sbuf *b, char c) { sb_putn(b, &c, 1); }

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
        char tmp[128];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        /* Only numbers and fixed words go through here. */
        if (n < 0 || (size_t)n >= sizeof(tmp)) {
                b->oom = true;
                return;
        }
        sb_putn(b, tmp, (size_t)n);
}

char *sb_take(struct sbuf *b)
{
        if (b->oom || !b->s) {
                if (!b->oom && !b->s)
                        return strdup("");
                free(b->s);
                *b = (struct sbuf){ 0 };
                return NULL;
        }
        char *s = b->s;
        *b = (struct sbuf){ 0 };
        return s;
}

/* ---- word list ---- */

struct handoff_words {
        char **v;
        size_t n, cap;
        bool oom;
};

void handoff_word(struct handoff_words *w, char *s)
{
        if (!s || w->oom) {
                free(s);
                w->oom = true;
                return;
        }
        if (w->n + 2 > w->cap) {
                size_t cap = w->cap ? w->cap * 2 : 16;
                char **v = realloc(w->v, cap * sizeof(*v));
                if (!v) {
                        free(s);
                        w->oom = true;
                        return;
                }
                w->v = v;
                w->cap = cap;
        }
        w->v[w->n++] = s;
        w->v[w->n] = NULL;
}

void handoff_word_str(struct handoff_words *w, const char *s) { handoff_word(w, strdup(s)); }

char *const *handoff_words_list(const struct handoff_words *w, size_t *ret_n)
{
        *ret_n = w->n;
        return w->v;
}

static void words_free(struct handoff_words *w)
{
        for (size_t i = 0; i < w->n; i++)
                free(w->v[i]);
        free(w->v);
        *w = (struct handoff_words){ 0 };
}

/* ---- the shell rendering, every format's ---- */

/* POSIX shell: a word of only these characters means itself anywhere in a
 * command line; anything else is single-quoted, a quote written '\''. */
static bool shell_safe(const char *w)
{
        if (!*w)
                return false;
        for (; *w; w++)
                if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@%+=:,./_-", *w))
                        return false;
        return true;
}

static void put_shell_word(struct sbuf *b, const char *w)
{
        if (shell_safe(w)) {
                sb_puts(b, w);
                return;
        }
        sb_putc(b, '\'');
        for (; *w; w++) {
                if (*w == '\'')
                        sb_puts(b, "'\\''");
                else
                        sb_putc(b, *w);
        }
        sb_putc(b, '\'');
}

static char *render_shell(const struct handoff_words *w)
{
        struct sbuf b = { 0 };
        for (size_t i = 0; i < w->n; i++) {
                if (i)
                        sb_putc(&b, ' ');
                put_shell_word(&b, w->v[i]);
        }
        return sb_take(&b);
}

/* ---- composition ---- */

static bool name_ok(const char *s)
{
        if (!s || !*s)
                return false;
        for (; *s; s++)
                if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-", *s))
                        return false;
        return true;
}

const char *handoff_pool_id(const struct handoff_pool *p) { return p->as ? p->as : p->name; }

static int check_pools(const struct handoff_pool *pools, size_t n, uint64_t *ret_total)
{
        uint64_t total = 0;
        if (!pools || n == 0 || n > HANDOFF_MAX_POOLS)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                const struct handoff_pool *p = &pools[i];
                if (!name_ok(p->name) || (p->as && !name_ok(p->as)) || !p->path || !*p->path || p->node < 0 ||
                    p->size_bytes == 0 || p->page_size == 0 || p->size_bytes > UINT64_MAX - total)
                        return -EINVAL;
                /* Names are distinct pools; ids are what the VMM sees, so
                 * two pools may not both answer to one. */
                for (size_t j = 0; j < i; j++)
                        if (strcmp(pools[j].name, p->name) == 0 ||
                            strcmp(handoff_pool_id(&pools[j]), handoff_pool_id(p)) == 0)
                                return -EINVAL;
                total += p->size_bytes;
        }
        *ret_total = total;
        return 0;
}

void handoff_free(struct handoff *h)
{
        if (!h)
                return;
        if (h->argv)
                for (size_t i = 0; i < h->argc; i++)
                        free(h->argv[i]);
        free(h->argv);
        free(h->shell);
        free(h->xml);
        free(h);
}

int handoff_compose(const struct handoff_format *f, const struct handoff_pool *pools, size_t n,
                    struct handoff **ret)
{
        uint64_t total;
        struct handoff_words w = { 0 };
        if (!f)
                return -EINVAL;
        int r = check_pools(pools, n, &total);
        if (r < 0)
                return r;
        struct handoff *h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        r = f->compose(&w, h, pools, n);
        if (r == 0 && w.oom)
                r = -ENOMEM;
        if (r < 0) {
                words_free(&w);
                handoff_free(h);
                return r;
        }
        h->argv = w.v;
        h->argc = w.n;
        h->memory_bytes = total;
        h->shell = render_shell(&w);
        if (!h->shell) {
                handoff_free(h);
                return -ENOMEM;
        }
        *ret = h;
        return 0;
}

/* ---- the table ---- */

const struct handoff_format *handoff_format_find(const char *name)
{
        for (size_t i = 0; name && i < handoff_n_formats; i++)
                if (strcmp(name, handoff_formats[i].name) == 0)
                        return &handoff_formats[i];
        return NULL;
}

static const char *format_name_at(size_t i) { return handoff_formats[i].name; }

void handoff_format_names(char *buf, size_t len)
{
        vmm_join(buf, len, handoff_n_formats, format_name_at, ", ", " or ");
}
