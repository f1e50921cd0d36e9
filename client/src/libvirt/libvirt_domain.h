/* libvirt_domain: what the libvirt hook reads from a domain's XML, read
 * once into plain strings and counts.  The only file that includes libxml2.
 *
 * Every value is what XPath's string() of the same path gives: the first
 * match's text or attribute, "" when there is none (never NULL), so the
 * hook's rules see exactly what libvirt wrote (no trimming, no defaults).
 * Lists keep document order.  Entities are not expanded and nothing is
 * fetched (a DOCTYPE, where entities are declared, is refused: libvirt
 * writes none): the XML comes from libvirtd, but it is still input. */
#pragma once
#include <stddef.h>

#define LV_NS "urn:hpwarm:libvirt:1"
#define LV_QEMU_NS "http://libvirt.org/schemas/domain/qemu/1.0"

/* An <hpwarm:pool> element, at any depth below /domain/metadata. */
struct lv_pool_el {
        const char *node, *size, *required, *pool, *cell;
};

/* A /domain/cpu/numa/cell. */
struct lv_cell {
        const char *id, *memory, *unit, *mem_access, *discard;
};

/* A /domain/memoryBacking/hugepages/page. */
struct lv_page {
        const char *size, *unit, *nodeset;
};

/* A /domain/numatune/memnode. */
struct lv_memnode {
        const char *cellid, *mode, *nodeset;
};

struct lv_domain {
        const char *id;            /* /domain/@id */
        const char *name, *uuid;
        const char *memory, *memory_unit;
        const char *dac_label;     /* <seclabel model='dac' type='static'><label> */

        size_t n_pools;
        struct lv_pool_el *pools;

        size_t n_qemu_args;        /* <qemu:commandline><qemu:arg value=...>, every one */
        const char **qemu_args;

        /* <memoryBacking> */
        size_t n_hugepages;        /* count(hugepages) */
        size_t n_pages;
        struct lv_page *pages;
        const char *source_type, *access_mode;
        size_t n_discard;

        size_t n_cells;
        struct lv_cell *cells;
        size_t n_devmem;           /* count(/domain/devices/memory) */

        /* <numatune> */
        size_t n_nt_memory;
        const char *nt_mode, *nt_nodeset, *nt_placement;
        size_t n_memnodes;
        struct lv_memnode *memnodes;

        struct lv_arena *arena;    /* owns every string and array above */
};

/* Parse XML (LEN bytes).  0 and *RET (free with lv_domain_free), -ENOMEM, or
 * -EINVAL when it is not well-formed XML or has a DOCTYPE; then WHY (WHYLEN
 * bytes) says where or why. */
int lv_domain_parse(const char *xml, size_t len, struct lv_domain **ret, char *why, size_t whylen);
void lv_domain_free(struct lv_domain *d);

/* The cell whose id attribute is ID, NULL if none; *COUNT how many have it. */
const struct lv_cell *lv_domain_cell(const struct lv_domain *d, const char *id, size_t *count);
/* The memnode for cell ID (cellid=ID), NULL if none; *COUNT how many. */
const struct lv_memnode *lv_domain_memnode(const struct lv_domain *d, const char *id, size_t *count);
