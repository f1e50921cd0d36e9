/* handoff: PURE composition of the VMM arguments that make one or more warm
 * pools a guest's RAM.  No syscalls; table-tested in tests/unit/test_handoff.c.
 *
 * QEMU: one `-object memory-backend-file` per pool (share=on so the VMM maps
 * the pages the daemon already zeroed, prealloc=on, host-nodes + policy=bind;
 * never discard-data=on, which punches the pages out when QEMU exits).  An
 * object alone is NOT guest RAM: one pool is named by `-machine
 * memory-backend=ID`, several by `-numa node,nodeid=I,memdev=ID` (guest node
 * I = the I-th pool given).  The caller adds `-m` equal to the total size
 * (QEMU refuses any other value; with -numa it is not optional), `-smp` and
 * the rest of the machine.
 *
 * cloud-hypervisor: `--memory size=0` plus one `--memory-zone
 * id=,size=,file=,shared=on,hugepages=on,hugepage_size=` per pool and, for
 * several pools, one `--numa guest_numa_id=I,memory_zones=ID` each.  No
 * host_numa_node: cloud-hypervisor refuses it on a shared file zone, and
 * the daemon placed the pages when it warmed them (docs/CLOUD-HYPERVISOR.md).
 *
 * libvirt: the QEMU words as `<qemu:arg value="..."/>` inside
 * `<qemu:commandline>`; the domain root element must declare
 * HANDOFF_LIBVIRT_NAMESPACE.
 *
 * A migration destination (or a restore) takes the source's identity: with
 * `as` set, the backend id is mem-AS (QEMU matches the incoming RAM blocks
 * by that id) and the zone id is AS (cloud-hypervisor keeps zone ids in its
 * snapshot).  Whether AS's pool has the same size and page size is the
 * caller's to check: this module knows no pool but the ones it is given.
 *
 * Escaping, per layer: QEMU option values double a comma; cloud-hypervisor
 * values that hold a comma, quote, bracket or edge blank are put in double
 * quotes with inner quotes doubled (its option_parser grammar); the shell
 * string single-quotes each word that needs it; the XML escapes & < > " '
 * and writes tab, LF and CR as character references. */
#pragma once
#include <stddef.h>
#include <stdint.h>

enum handoff_vmm {
        HANDOFF_QEMU,
        HANDOFF_CLOUD_HYPERVISOR,
        HANDOFF_LIBVIRT
};

/* Most pools one composition takes: a guest with more NUMA nodes than this
 * is not a machine anyone boots, and the bound keeps a request cheap. */
#define HANDOFF_MAX_POOLS 64

/* The attribute the libvirt domain's root element must carry for the
 * <qemu:commandline> fragment to be read. */
#define HANDOFF_LIBVIRT_NAMESPACE "xmlns:qemu=\"http://libvirt.org/schemas/domain/qemu/1.0\""

struct handoff_pool {
        const char *name;    /* [A-Za-z0-9._-]+, unique within one composition */
        const char *path;    /* the pool file, non-empty */
        int node;            /* host NUMA node, >= 0 */
        uint64_t size_bytes; /* > 0 */
        uint64_t page_size;  /* bytes, > 0 */
        const char *as;      /* NULL, or the pool whose id this one takes (a
                                migration source): the backend is mem-AS, the
                                zone id AS; same rules as name */
};

struct handoff {
        char **argv; /* argc words, NULL-terminated: what to exec (for libvirt: QEMU's words) */
        size_t argc;
        char *shell;           /* the same words, shell-quoted where needed, joined by single spaces */
        char *xml;             /* libvirt: the <qemu:commandline> element; NULL for the others */
        uint64_t memory_bytes; /* sum of the pools' sizes: QEMU's -m */
};

/* Compose for VMM from POOLS[0..N).  0 with *ret (free with handoff_free);
 * -EINVAL when N is 0 or over HANDOFF_MAX_POOLS, a name is empty, has a
 * character outside [A-Za-z0-9._-] or repeats, a path is empty, a size or
 * page size is 0, a node is negative, the total overflows, or (libvirt) a
 * path holds a control character XML cannot carry, or (cloud-hypervisor) a
 * name starts with "__", which it keeps for itself; the same for AS where
 * given (ids repeated across pools refused too: a name given as another
 * pool's AS is not a different id); -ENOMEM. */
int handoff_compose(enum handoff_vmm vmm, const struct handoff_pool *pools, size_t n, struct handoff **ret);
void handoff_free(struct handoff *h); /* accepts NULL */

/* "qemu", "cloud-hypervisor", "libvirt" <-> the enum; -EINVAL for others. */
int handoff_vmm_parse(const char *s, enum handoff_vmm *ret);
const char *handoff_vmm_name(enum handoff_vmm vmm);
