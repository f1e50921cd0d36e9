/* handoff_qemu: the QEMU format (a row of common/vmm_formats.def).
 *
 * One `-object memory-backend-file` per pool (share=on so the VMM maps the
 * pages the daemon already zeroed, prealloc=on, host-nodes + policy=bind;
 * never discard-data=on, which punches the pages out when QEMU exits).  An
 * object alone is NOT guest RAM: one pool is named by `-machine
 * memory-backend=ID`, several by `-numa node,nodeid=I,memdev=ID` (guest node
 * I = the I-th pool given).  The caller adds `-m` equal to the total size
 * (QEMU refuses any other value; with -numa it is not optional), `-smp` and
 * the rest of the machine.
 *
 * A migration destination's backend id is mem-AS: QEMU matches the incoming
 * RAM blocks by that id.  The libvirt format (handoff_libvirt.c) is these
 * same words. */
#include <inttypes.h>
#include <stdio.h>

#include "handoff_internal.h"

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

int handoff_qemu_compose(struct handoff_words *w, struct handoff *h, const struct handoff_pool *pools, size_t n)
{
        (void)h;
        for (size_t i = 0; i < n; i++) {
                const struct handoff_pool *p = &pools[i];
                struct sbuf b = { 0 };
                sb_printf(&b, "memory-backend-file,id=mem-");
                sb_puts(&b, handoff_pool_id(p));
                sb_puts(&b, ",mem-path=");
                put_qemu_value(&b, p->path);
                sb_printf(&b, ",size=%" PRIu64 ",share=on,prealloc=on,host-nodes=%d,policy=bind", p->size_bytes, p->node);
                handoff_word_str(w, "-object");
                handoff_word(w, sb_take(&b));
        }
        if (n == 1) {
                struct sbuf b = { 0 };
                sb_puts(&b, "memory-backend=mem-");
                sb_puts(&b, handoff_pool_id(&pools[0]));
                handoff_word_str(w, "-machine");
                handoff_word(w, sb_take(&b));
                return 0;
        }
        for (size_t i = 0; i < n; i++) {
                struct sbuf b = { 0 };
                sb_printf(&b, "node,nodeid=%zu,memdev=mem-", i);
                sb_puts(&b, handoff_pool_id(&pools[i]));
                handoff_word_str(w, "-numa");
                handoff_word(w, sb_take(&b));
        }
        return 0;
}

void handoff_qemu_note(const char *total, char *buf, size_t len)
{
        snprintf(buf, len,
                 "add -m %s (exactly the pools' total: QEMU refuses any other size), -smp and "
                 "the rest of the machine; with several pools, guest NUMA node i is the i-th pool",
                 total);
}
