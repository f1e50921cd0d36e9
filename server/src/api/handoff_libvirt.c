/* handoff_libvirt: the libvirt format (a row of common/vmm_formats.def).
 *
 * QEMU's words (handoff_qemu.c) as `<qemu:arg value="..."/>` inside
 * `<qemu:commandline>`; the domain root element must declare
 * HANDOFF_LIBVIRT_NAMESPACE, sent as the answer's "namespace".  The XML
 * escapes & < > " ' and writes tab, LF and CR as character references; a
 * path with another control character cannot be written (-EINVAL). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "handoff_internal.h"

/* The attribute the libvirt domain's root element must carry for the
 * <qemu:commandline> fragment to be read. */
#define HANDOFF_LIBVIRT_NAMESPACE "xmlns:qemu=\"http://libvirt.org/schemas/domain/qemu/1.0\""

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

int handoff_libvirt_compose(struct handoff_words *w, struct handoff *h, const struct handoff_pool *pools, size_t n)
{
        int r = handoff_qemu_compose(w, h, pools, n);
        size_t argc;
        char *const *argv = handoff_words_list(w, &argc);
        struct sbuf b = { 0 };

        if (r < 0)
                return r;
        sb_puts(&b, "<qemu:commandline>\n");
        for (size_t i = 0; i < argc; i++) {
                sb_puts(&b, "  <qemu:arg value=\"");
                if (put_xml_attr(&b, argv[i]) < 0) {
                        free(b.s);
                        return -EINVAL;
                }
                sb_puts(&b, "\"/>\n");
        }
        sb_puts(&b, "</qemu:commandline>");
        h->xml = sb_take(&b);
        h->xml_namespace = HANDOFF_LIBVIRT_NAMESPACE;
        return h->xml ? 0 : -ENOMEM;
}

void handoff_libvirt_note(const char *total, char *buf, size_t len)
{
        snprintf(buf, len,
                 "put xml inside <domain> and namespace on the <domain> element; <memory> must "
                 "be %s (the pools' total); with several pools the domain must not declare <numa> "
                 "cells (these words do)",
                 total);
}
