/* libvirt_domain: the domain XML read with libxml2's tree (libvirt_domain.h).
 *
 * The hook used to ask xmllint one XPath at a time; here one walk of the
 * tree fills a struct of strings, and the rules live in libvirt_hook*.c.
 * Paths are walked by element name under the root <domain>; the two
 * namespaced parts (hpwarm's metadata, QEMU's commandline) are matched by
 * namespace URI, never by prefix, as the XPath's namespace-uri() did.
 * Strings are owned by an arena freed with the domain. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "libvirt_domain.h"

struct lv_arena {
        size_t n, cap;
        void **p;
};

static void *arena_keep(struct lv_arena *a, void *p)
{
        if (!p)
                return NULL;
        if (a->n == a->cap) {
                size_t cap = a->cap ? a->cap * 2 : 64;
                void **np = realloc(a->p, cap * sizeof(*np));
                if (!np) {
                        free(p);
                        return NULL;
                }
                a->p = np;
                a->cap = cap;
        }
        a->p[a->n++] = p;
        return p;
}

/* Grow the array *ARR of *N elements of SIZE bytes by one zeroed element. */
static void *arena_push(struct lv_arena *a, void **arr, size_t *n, size_t size)
{
        /* A fresh copy of twice the size when *N is 0 or a power of two (the
         * old one stays in the arena, a plain list of pointers): linear in
         * all, where a copy per element was quadratic. */
        if ((*n & (*n - 1)) == 0) {
                char *np = calloc(*n ? *n * 2 : 1, size);

                if (!np)
                        return NULL;
                if (*n)
                        memcpy(np, *arr, *n * size);
                if (!arena_keep(a, np))
                        return NULL;
                *arr = np;
        }
        return (char *)*arr + (*n)++ * size;
}

struct reader {
        struct lv_arena *a;
        int err;
};

static const char *keep_str(struct reader *r, xmlChar *s)
{
        char *c;

        if (!s)
                return "";
        c = strdup((const char *)s);
        xmlFree(s);
        if (!c || !arena_keep(r->a, c)) {
                r->err = -ENOMEM;
                return "";
        }
        return c;
}

static const char *attr(struct reader *r, xmlNode *n, const char *name)
{
        return n ? keep_str(r, xmlGetNoNsProp(n, (const xmlChar *)name)) : "";
}

static const char *text(struct reader *r, xmlNode *n)
{
        return n ? keep_str(r, xmlNodeGetContent(n)) : "";
}

static bool is(const xmlNode *n, const char *name)
{
        return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static bool in_ns(const xmlNode *n, const char *uri)
{
        return n->ns && n->ns->href && strcmp((const char *)n->ns->href, uri) == 0;
}

/* The first child element NAME of N (no namespace test: libvirt's own
 * elements), NULL if none. */
static xmlNode *child(xmlNode *n, const char *name)
{
        for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
                if (is(c, name))
                        return c;
        return NULL;
}

static size_t count(xmlNode *n, const char *name)
{
        size_t k = 0;

        for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
                k += is(c, name);
        return k;
}

#define PUSH(r, d, arr, n)                                                                                  \
        ((__typeof__(&(d)->arr[0]))arena_push((r)->a, (void **)&(d)->arr, &(d)->n, sizeof((d)->arr[0])))

/* Every <hpwarm:pool> below E, in document order. */
static void read_pools(struct reader *r, struct lv_domain *d, xmlNode *e)
{
        for (xmlNode *c = e->children; c && !r->err; c = c->next) {
                if (c->type != XML_ELEMENT_NODE)
                        continue;
                if (strcmp((const char *)c->name, "pool") == 0 && in_ns(c, LV_NS)) {
                        struct lv_pool_el *p = PUSH(r, d, pools, n_pools);
                        if (!p) {
                                r->err = -ENOMEM;
                                return;
                        }
                        p->node = attr(r, c, "node");
                        p->size = attr(r, c, "size");
                        p->required = attr(r, c, "required");
                        p->pool = attr(r, c, "pool");
                        p->cell = attr(r, c, "cell");
                }
                read_pools(r, d, c);
        }
}

static void read_qemu_args(struct reader *r, struct lv_domain *d, xmlNode *root)
{
        for (xmlNode *c = root->children; c; c = c->next) {
                if (c->type != XML_ELEMENT_NODE || strcmp((const char *)c->name, "commandline") != 0 ||
                    !in_ns(c, LV_QEMU_NS))
                        continue;
                for (xmlNode *a = c->children; a; a = a->next) {
                        if (a->type != XML_ELEMENT_NODE || strcmp((const char *)a->name, "arg") != 0)
                                continue;
                        const char **s = PUSH(r, d, qemu_args, n_qemu_args);
                        if (!s) {
                                r->err = -ENOMEM;
                                return;
                        }
                        *s = attr(r, a, "value");
                }
        }
}

static void read_backing(struct reader *r, struct lv_domain *d, xmlNode *mb)
{
        xmlNode *hp = child(mb, "hugepages");

        d->n_hugepages = count(mb, "hugepages");
        for (xmlNode *c = hp ? hp->children : NULL; c; c = c->next) {
                if (!is(c, "page"))
                        continue;
                struct lv_page *p = PUSH(r, d, pages, n_pages);
                if (!p) {
                        r->err = -ENOMEM;
                        return;
                }
                p->size = attr(r, c, "size");
                p->unit = attr(r, c, "unit");
                p->nodeset = attr(r, c, "nodeset");
        }
        d->source_type = attr(r, child(mb, "source"), "type");
        d->access_mode = attr(r, child(mb, "access"), "mode");
        d->n_discard = count(mb, "discard");
}

static void read_cells(struct reader *r, struct lv_domain *d, xmlNode *numa)
{
        for (xmlNode *c = numa ? numa->children : NULL; c; c = c->next) {
                if (!is(c, "cell"))
                        continue;
                struct lv_cell *cl = PUSH(r, d, cells, n_cells);
                if (!cl) {
                        r->err = -ENOMEM;
                        return;
                }
                cl->id = attr(r, c, "id");
                cl->memory = attr(r, c, "memory");
                cl->unit = attr(r, c, "unit");
                cl->mem_access = attr(r, c, "memAccess");
                cl->discard = attr(r, c, "discard");
        }
}

static void read_numatune(struct reader *r, struct lv_domain *d, xmlNode *nt)
{
        xmlNode *m = child(nt, "memory");

        d->n_nt_memory = count(nt, "memory");
        d->nt_mode = attr(r, m, "mode");
        d->nt_nodeset = attr(r, m, "nodeset");
        d->nt_placement = attr(r, m, "placement");
        for (xmlNode *c = nt ? nt->children : NULL; c; c = c->next) {
                if (!is(c, "memnode"))
                        continue;
                struct lv_memnode *mn = PUSH(r, d, memnodes, n_memnodes);
                if (!mn) {
                        r->err = -ENOMEM;
                        return;
                }
                mn->cellid = attr(r, c, "cellid");
                mn->mode = attr(r, c, "mode");
                mn->nodeset = attr(r, c, "nodeset");
        }
}

/* The static DAC label: the first <seclabel model='dac' type='static'>'s <label>. */
static const char *dac_label(struct reader *r, xmlNode *root)
{
        for (xmlNode *c = root->children; c; c = c->next) {
                if (!is(c, "seclabel"))
                        continue;
                xmlChar *model = xmlGetNoNsProp(c, (const xmlChar *)"model");
                xmlChar *type = xmlGetNoNsProp(c, (const xmlChar *)"type");
                bool hit = model && type && strcmp((char *)model, "dac") == 0 && strcmp((char *)type, "static") == 0;
                xmlFree(model);
                xmlFree(type);
                if (hit && child(c, "label"))
                        return text(r, child(c, "label"));
        }
        return "";
}

static void read_domain(struct reader *r, struct lv_domain *d, xmlNode *root)
{
        static const char *const empty = "";

        d->id = d->name = d->uuid = d->memory = d->memory_unit = d->dac_label = empty;
        d->source_type = d->access_mode = d->nt_mode = d->nt_nodeset = d->nt_placement = empty;
        if (!root || !is(root, "domain"))
                return;   /* no /domain: nothing matches, as with XPath */
        d->id = attr(r, root, "id");
        d->name = text(r, child(root, "name"));
        d->uuid = text(r, child(root, "uuid"));
        d->memory = text(r, child(root, "memory"));
        d->memory_unit = attr(r, child(root, "memory"), "unit");
        d->dac_label = dac_label(r, root);
        for (xmlNode *c = root->children; c && !r->err; c = c->next)
                if (is(c, "metadata"))
                        read_pools(r, d, c);
        read_qemu_args(r, d, root);
        read_backing(r, d, child(root, "memoryBacking"));
        read_cells(r, d, child(child(root, "cpu"), "numa"));
        d->n_devmem = count(child(root, "devices"), "memory");
        read_numatune(r, d, child(root, "numatune"));
}

int lv_domain_parse(const char *xml, size_t len, struct lv_domain **ret, char *why, size_t whylen)
{
        struct lv_domain *d = calloc(1, sizeof(*d));
        struct reader r = { 0 };
        xmlDoc *doc;

        if (!d || !(d->arena = calloc(1, sizeof(*d->arena)))) {
                free(d);
                return -ENOMEM;
        }
        r.a = d->arena;
        if (len > (size_t)INT32_MAX) {
                snprintf(why, whylen, "the XML is too large");
                lv_domain_free(d);
                return -EINVAL;
        }
        /* An empty buffer raises no error: WHY must not be an earlier one's. */
        xmlResetLastError();
        doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
                            XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        if (!doc) {
                const xmlError *e = xmlGetLastError();
                snprintf(why, whylen, "%s", e && e->message ? e->message : "not well-formed");
                /* libxml2's messages end in a line break. */
                if (whylen)
                        why[strcspn(why, "\n")] = '\0';
                lv_domain_free(d);
                return -EINVAL;
        }
        /* libvirt writes no DOCTYPE.  One is where entities and attribute
         * defaults are declared, which reading a value would expand
         * (xmlNodeGetContent follows entity references: 1 MB of XML can
         * read as 1 GB), so it is refused. */
        if (doc->intSubset || doc->extSubset) {
                snprintf(why, whylen, "a DOCTYPE is refused: libvirt writes none");
                xmlFreeDoc(doc);
                lv_domain_free(d);
                return -EINVAL;
        }
        read_domain(&r, d, xmlDocGetRootElement(doc));
        xmlFreeDoc(doc);
        if (r.err) {
                lv_domain_free(d);
                return r.err;
        }
        *ret = d;
        return 0;
}

void lv_domain_free(struct lv_domain *d)
{
        if (!d)
                return;
        if (d->arena) {
                for (size_t i = 0; i < d->arena->n; i++)
                        free(d->arena->p[i]);
                free(d->arena->p);
                free(d->arena);
        }
        free(d);
}

const struct lv_cell *lv_domain_cell(const struct lv_domain *d, const char *id, size_t *n)
{
        const struct lv_cell *hit = NULL;

        *n = 0;
        for (size_t i = 0; i < d->n_cells; i++)
                if (strcmp(d->cells[i].id, id) == 0 && (*n)++ == 0)
                        hit = &d->cells[i];
        return hit;
}

const struct lv_memnode *lv_domain_memnode(const struct lv_domain *d, const char *id, size_t *n)
{
        const struct lv_memnode *hit = NULL;

        *n = 0;
        for (size_t i = 0; i < d->n_memnodes; i++)
                if (strcmp(d->memnodes[i].cellid, id) == 0 && (*n)++ == 0)
                        hit = &d->memnodes[i];
        return hit;
}
