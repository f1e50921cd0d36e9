/* vmm: what the daemon and the client share about a VMM format.  The rows
 * are common/vmm_formats.def; each side expands them into its own table
 * (server/src/api/handoff_formats.c, client/src/lib/vmm.c) and lists their
 * names in its messages with vmm_join(). */
#pragma once
#include <stddef.h>

/* How a format's text is written: shell words or an XML fragment. */
enum hpw_vmm_output {
        HPW_VMM_SHELL,
        HPW_VMM_XML,
};

/* Write NAME_AT(0..N) into BUF (LEN bytes, always terminated, cut short if
 * it does not fit) as a list a person reads: joined by SEP, the last two by
 * LAST ("qemu, cloud-hypervisor or libvirt" with ", " and " or ").  A NULL
 * from NAME_AT leaves that row out. */
void vmm_join(char *buf, size_t len, size_t n, const char *(*name_at)(size_t i), const char *sep,
              const char *last);
