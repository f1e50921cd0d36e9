/* handoff: PURE composition of the VMM arguments that make one or more warm
 * pools a guest's RAM.  No syscalls; table-tested in tests/unit/test_handoff.c.
 *
 * The formats are a table (handoff_formats[]): one row of
 * common/vmm_formats.def each, whose composer lives in its own file
 * (handoff_qemu.c, handoff_cloud_hypervisor.c, handoff_libvirt.c) and says
 * there what the VMM needs.  This module checks the pools, runs the row's
 * composer and renders its words; the handlers (api_handoff.c) walk the
 * table and never name a VMM.
 *
 * A migration destination (or a restore) takes the source's identity: with
 * `as` set, the VMM knows the pool by AS's id (handoff_pool_id()).  Whether
 * AS's pool has the same size and page size is the caller's to check: this
 * module knows no pool but the ones it is given.
 *
 * Escaping, per layer: each VMM's option syntax is its composer's; the
 * shell string single-quotes each word that needs it; the XML escapes
 * & < > " ' and writes tab, LF and CR as character references. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "vmm.h"

/* Most pools one composition takes: a guest with more NUMA nodes than this
 * is not a machine anyone boots, and the bound keeps a request cheap. */
#define HANDOFF_MAX_POOLS 64

struct handoff_pool {
        const char *name;    /* [A-Za-z0-9._-]+, unique within one composition */
        const char *path;    /* the pool file, non-empty */
        int node;            /* host NUMA node, >= 0 */
        uint64_t size_bytes; /* > 0 */
        uint64_t page_size;  /* bytes, > 0 */
        const char *as;      /* NULL, or the pool whose id this one takes (a
                                migration source); same rules as name */
};

struct handoff {
        char **argv; /* argc words, NULL-terminated: what to exec (for libvirt: QEMU's words) */
        size_t argc;
        char *shell;               /* the same words, shell-quoted where needed, joined by single spaces */
        char *xml;                 /* an XML format's fragment; NULL for the others */
        const char *xml_namespace; /* an XML format's: what the document's root element must declare */
        uint64_t memory_bytes;     /* sum of the pools' sizes: QEMU's -m */
};

struct handoff_words;

/* One VMM format: a row of common/vmm_formats.def with its composer. */
struct handoff_format {
        const char *name;          /* what ?vmm= and the answer's "vmm" say */
        const char *key;           /* the pool object's "handoff" member */
        const char *argv_key;      /* and its words' member (shell formats), else NULL */
        enum hpw_vmm_output output;
        const char *as_refused;    /* NULL when as= is composed, else why not */
        /* Add the words for POOLS[0..N) (checked by handoff_compose: names,
         * paths, sizes) to W; an XML format also sets H->xml and
         * H->xml_namespace.  0, -EINVAL for pools this VMM cannot take,
         * -ENOMEM (running out inside W counts: handoff_compose checks). */
        int (*compose)(struct handoff_words *w, struct handoff *h, const struct handoff_pool *pools, size_t n);
        /* What the caller adds around the words, TOTAL being the pools'
         * size as QEMU's -m reads it; sent with every GET /v1/handoff. */
        void (*note)(const char *total, char *buf, size_t len);
};

/* The table, in common/vmm_formats.def's order (handoff_formats.c). */
extern const struct handoff_format handoff_formats[];
extern const size_t handoff_n_formats;

/* The row named NAME (exactly, case and all), or NULL. */
const struct handoff_format *handoff_format_find(const char *name);

/* The names as a person reads them ("qemu, cloud-hypervisor or libvirt"). */
void handoff_format_names(char *buf, size_t len);

/* Compose for F from POOLS[0..N).  0 with *ret (free with handoff_free);
 * -EINVAL when F is NULL, N is 0 or over HANDOFF_MAX_POOLS, a name is
 * empty, has a character outside [A-Za-z0-9._-] or repeats, a path is
 * empty, a size or page size is 0, a node is negative, the total
 * overflows, or F's composer refuses the pools; the same for AS where
 * given (ids repeated across pools refused too: a name given as another
 * pool's AS is not a different id); -ENOMEM. */
int handoff_compose(const struct handoff_format *f, const struct handoff_pool *pools, size_t n,
                    struct handoff **ret);
void handoff_free(struct handoff *h); /* accepts NULL */
