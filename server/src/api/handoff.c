/* handoff: compose VMM arguments from warm pools (see handoff.h).
 *
 * Built as a list of argv words first; the shell string and the libvirt XML
 * are renderings of that list, so the three can never disagree.  Each layer
 * of escaping is a separate function applied exactly once, where the layer
 * is entered: a path goes through the VMM's option escaping when it becomes
 * part of an option word, and the finished word goes through the shell or
 * XML escaping when it is rendered. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handoff.h"

/* ---- a growing string that remembers running out of memory ---- */

struct sbuf {
        char *s;
        size_t len, cap;
        bool oom;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
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

static void sb_puts(struct sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

static void sb_putc(struct sbuf *b, char c) { sb_putn(b, &c, 1); }

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
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

/* The finished string (owned by the caller), or NULL if memory ran out. */
static char *sb_take(struct sbuf *b)
{
        if (b->oom || !b->s) {
                if (!b->oom && !b->s)
                        return strdup("");
                free(b->s);
                return NULL;
        }
        char *s = b->s;
        *b = (struct sbuf){ 0 };
        return s;
}

/* ---- word list ---- */

struct words {
        char **v;
        size_t n, cap;
        bool oom;
};

static void words_add(struct words *w, char *s)
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

static void words_add_str(struct words *w, const char *s) { words_add(w, strdup(s)); }

static void words_free(struct words *w)
{
        for (size_t i = 0; i < w->n; i++)
                free(w->v[i]);
        free(w->v);
        *w = (struct words){ 0 };
}

/* ---- escaping, one function per layer ---- */

/* QEMU's option syntax (QemuOpts and keyval alike): a comma inside a value
 * is written twice. */
static void put_qemu_value(struct sbuf *b, const char *v)
{
        for (; *v; v++) {
                if (*v == ',')
                        sb_putc(b, ',');
                sb_putc(b, *v);
        }
}

/* cloud-hypervisor's option_parser splits at commas outside double quotes
 * and brackets, trims blanks around each value, and removes quotes, a
 * doubled quote inside quotes standing for one.  A value with any of those
 * characters (or blank at an edge, or empty) is therefore quoted whole. */
static void put_ch_value(struct sbuf *b, const char *v)
{
        size_t n = strlen(v);
        bool quote = n == 0 || strpbrk(v, ",\"[]") || v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' ||
                v[n - 1] == '\t' || v[0] == '\n' || v[n - 1] == '\n' || v[0] == '\r' || v[n - 1] == '\r';
        if (!quote) {
                sb_puts(b, v);
                return;
        }
        sb_putc(b, '"');
        for (; *v; v++) {
                if (*v == '"')
                        sb_putc(b, '"');
                sb_putc(b, *v);
        }
        sb_putc(b, '"');
}

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

/* XML attribute value in double quotes.  Tab, LF and CR would be normalised
 * to blanks by any parser unless written as references; the other control
 * characters cannot appear in XML 1.0 at all (-EINVAL). */
static int put_xml_attr(struct sbuf *b, const char *v)
{
        for (; *v; v++) {
                unsigned char c = (unsigned char)*v;
                switch (c) {
                case '&': sb_puts(b, "&amp;"); break;
                case '<': sb_puts(b, "&lt;"); break;
                case '>': sb_puts(b, "&gt;"); break;
                case '"': sb_puts(b, "&quot;"); break;
                case '\'': sb_puts(b, "&apos;"); break;
                case '\t': sb_puts(b, "&#9;"); break;
                case '\n': sb_puts(b, "&#10;"); break;
                case '\r': sb_puts(b, "&#13;"); break;
                default:
                        if (c < 0x20 || c == 0x7f)
                                return -EINVAL;
                        sb_putc(b, (char)c);
                }
        }
        return 0;
}

/* cloud-hypervisor sizes take a K, M or G suffix (binary) or plain bytes. */
static void put_ch_size(struct sbuf *b, uint64_t v)
{
        static const struct {
                char suffix;
                unsigned shift;
        } units[] = { { 'G', 30 }, { 'M', 20 }, { 'K', 10 } };
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                uint64_t unit = UINT64_C(1) << units[i].shift;
                if (v % unit == 0) {
                        sb_printf(b, "%" PRIu64 "%c", v / unit, units[i].suffix);
                        return;
                }
        }
        sb_printf(b, "%" PRIu64, v);
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

/* The id the VMM knows the pool's memory by: its own name, or the source's
 * when it stands in for one. */
static const char *pool_id(const struct handoff_pool *p) { return p->as ? p->as : p->name; }

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
                        if (strcmp(pools[j].name, p->name) == 0 || strcmp(pool_id(&pools[j]), pool_id(p)) == 0)
                                return -EINVAL;
                total += p->size_bytes;
        }
        *ret_total = total;
        return 0;
}

static void qemu_words(struct words *w, const struct handoff_pool *pools, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const struct handoff_pool *p = &pools[i];
                struct sbuf b = { 0 };
                sb_printf(&b, "memory-backend-file,id=mem-");
                sb_puts(&b, pool_id(p));
                sb_puts(&b, ",mem-path=");
                put_qemu_value(&b, p->path);
                sb_printf(&b, ",size=%" PRIu64 ",share=on,prealloc=on,host-nodes=%d,policy=bind", p->size_bytes, p->node);
                words_add_str(w, "-object");
                words_add(w, sb_take(&b));
        }
        if (n == 1) {
                struct sbuf b = { 0 };
                sb_puts(&b, "memory-backend=mem-");
                sb_puts(&b, pool_id(&pools[0]));
                words_add_str(w, "-machine");
                words_add(w, sb_take(&b));
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct sbuf b = { 0 };
                sb_printf(&b, "node,nodeid=%zu,memdev=mem-", i);
                sb_puts(&b, pool_id(&pools[i]));
                words_add_str(w, "-numa");
                words_add(w, sb_take(&b));
        }
}

/* cloud-hypervisor keeps identifiers that start with "__" for itself and
 * refuses them as zone ids (vmm/src/config.rs, validate_identifier). */
static bool ch_names_ok(const struct handoff_pool *pools, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strncmp(pool_id(&pools[i]), "__", 2) == 0)
                        return false;
        return true;
}

/* A zone backed by a file and mapped shared may not carry host_numa_node:
 * cloud-hypervisor refuses the three together at every boot
 * (InvalidSharedMemoryZoneWithHostNuma).  The pages are already on the
 * pool's node, placed by the daemon's mbind when it warmed the file, so
 * the key would add nothing.  hugepages=on with file= only selects the
 * page size for alignment; it is kept so hugepage_size is accepted. */
static void ch_words(struct words *w, const struct handoff_pool *pools, size_t n)
{
        words_add_str(w, "--memory");
        words_add_str(w, "size=0");
        for (size_t i = 0; i < n; i++) {
                const struct handoff_pool *p = &pools[i];
                struct sbuf b = { 0 };
                sb_puts(&b, "id=");
                put_ch_value(&b, pool_id(p));
                sb_printf(&b, ",size=%" PRIu64 ",file=", p->size_bytes);
                put_ch_value(&b, p->path);
                sb_puts(&b, ",shared=on,hugepages=on,hugepage_size=");
                put_ch_size(&b, p->page_size);
                words_add_str(w, "--memory-zone");
                words_add(w, sb_take(&b));
        }
        if (n == 1)
                return;
        for (size_t i = 0; i < n; i++) {
                /* memory_zones is a list that cloud-hypervisor does not
                 * unquote; pool names never need quoting. */
                struct sbuf b = { 0 };
                sb_printf(&b, "guest_numa_id=%zu,memory_zones=", i);
                sb_puts(&b, pool_id(&pools[i]));
                words_add_str(w, "--numa");
                words_add(w, sb_take(&b));
        }
}

static char *render_shell(const struct words *w)
{
        struct sbuf b = { 0 };
        for (size_t i = 0; i < w->n; i++) {
                if (i)
                        sb_putc(&b, ' ');
                put_shell_word(&b, w->v[i]);
        }
        return sb_take(&b);
}

static int render_xml(const struct words *w, char **ret)
{
        struct sbuf b = { 0 };
        sb_puts(&b, "<qemu:commandline>\n");
        for (size_t i = 0; i < w->n; i++) {
                sb_puts(&b, "  <qemu:arg value=\"");
                if (put_xml_attr(&b, w->v[i]) < 0) {
                        free(b.s);
                        return -EINVAL;
                }
                sb_puts(&b, "\"/>\n");
        }
        sb_puts(&b, "</qemu:commandline>");
        *ret = sb_take(&b);
        return *ret ? 0 : -ENOMEM;
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

int handoff_compose(enum handoff_vmm vmm, const struct handoff_pool *pools, size_t n, struct handoff **ret)
{
        uint64_t total;
        struct words w = { 0 };
        int r = check_pools(pools, n, &total);
        if (r < 0)
                return r;
        switch (vmm) {
        case HANDOFF_QEMU:
        case HANDOFF_LIBVIRT: qemu_words(&w, pools, n); break;
        case HANDOFF_CLOUD_HYPERVISOR:
                if (!ch_names_ok(pools, n))
                        return -EINVAL;
                ch_words(&w, pools, n);
                break;
        default: return -EINVAL;
        }
        if (w.oom) {
                words_free(&w);
                return -ENOMEM;
        }
        struct handoff *h = calloc(1, sizeof(*h));
        if (!h) {
                words_free(&w);
                return -ENOMEM;
        }
        h->argv = w.v;
        h->argc = w.n;
        h->memory_bytes = total;
        h->shell = render_shell(&w);
        if (!h->shell) {
                handoff_free(h);
                return -ENOMEM;
        }
        if (vmm == HANDOFF_LIBVIRT && (r = render_xml(&w, &h->xml)) < 0) {
                handoff_free(h);
                return r;
        }
        *ret = h;
        return 0;
}

static const char *const vmm_names[] = {
        [HANDOFF_QEMU] = "qemu",
        [HANDOFF_CLOUD_HYPERVISOR] = "cloud-hypervisor",
        [HANDOFF_LIBVIRT] = "libvirt",
};

int handoff_vmm_parse(const char *s, enum handoff_vmm *ret)
{
        for (size_t i = 0; s && i < sizeof(vmm_names) / sizeof(vmm_names[0]); i++)
                if (strcmp(s, vmm_names[i]) == 0) {
                        *ret = (enum handoff_vmm)i;
                        return 0;
                }
        return -EINVAL;
}

const char *handoff_vmm_name(enum handoff_vmm vmm)
{
        return (size_t)vmm < sizeof(vmm_names) / sizeof(vmm_names[0]) ? vmm_names[vmm] : "unknown";
}
