/* handoff_cloud_hypervisor: the cloud-hypervisor format (a row of
 * common/vmm_formats.def).
 *
 * `--memory size=0` plus one `--memory-zone
 * id=,size=,file=,shared=on,hugepages=on,hugepage_size=` per pool and, for
 * several pools, one `--numa guest_numa_id=I,memory_zones=ID` each.  No
 * host_numa_node: cloud-hypervisor refuses it on a shared file zone, and
 * the daemon placed the pages when it warmed them (docs/CLOUD-HYPERVISOR.md).
 * A restore keeps zone ids in its snapshot, so a destination's zone id is
 * AS; as= itself is refused by the row (restore and receive take the zones
 * from the source).
 *
 * Values that hold a comma, quote, bracket or edge blank are put in double
 * quotes with inner quotes doubled (its option_parser grammar). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "handoff_internal.h"

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

/* cloud-hypervisor keeps identifiers that start with "__" for itself and
 * refuses them as zone ids (vmm/src/config.rs, validate_identifier). */
static bool ch_names_ok(const struct handoff_pool *pools, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (strncmp(handoff_pool_id(&pools[i]), "__", 2) == 0)
                        return false;
        return true;
}

/* A zone backed by a file and mapped shared may not carry host_numa_node:
 * cloud-hypervisor refuses the three together at every boot
 * (InvalidSharedMemoryZoneWithHostNuma).  The pages are already on the
 * pool's node, placed by the daemon's mbind when it warmed the file, so
 * the key would add nothing.  hugepages=on with file= only selects the
 * page size for alignment; it is kept so hugepage_size is accepted. */
int handoff_cloud_hypervisor_compose(struct handoff_words *w, struct handoff *h, const struct handoff_pool *pools,
                                     size_t n)
{
        (void)h;
        if (!ch_names_ok(pools, n))
                return -EINVAL;
        handoff_word_str(w, "--memory");
        handoff_word_str(w, "size=0");
        for (size_t i = 0; i < n; i++) {
                const struct handoff_pool *p = &pools[i];
                struct sbuf b = { 0 };
                sb_puts(&b, "id=");
                put_ch_value(&b, handoff_pool_id(p));
                sb_printf(&b, ",size=%" PRIu64 ",file=", p->size_bytes);
                put_ch_value(&b, p->path);
                sb_puts(&b, ",shared=on,hugepages=on,hugepage_size=");
                put_ch_size(&b, p->page_size);
                handoff_word_str(w, "--memory-zone");
                handoff_word(w, sb_take(&b));
        }
        if (n == 1)
                return 0;
        for (size_t i = 0; i < n; i++) {
                /* memory_zones is a list that cloud-hypervisor does not
                 * unquote; pool names never need quoting. */
                struct sbuf b = { 0 };
                sb_printf(&b, "guest_numa_id=%zu,memory_zones=", i);
                sb_puts(&b, handoff_pool_id(&pools[i]));
                handoff_word_str(w, "--numa");
                handoff_word(w, sb_take(&b));
        }
        return 0;
}

void handoff_cloud_hypervisor_note(const char *total, char *buf, size_t len)
{
        snprintf(buf, len,
                 "add --cpus, --kernel and the rest of the VM; guest memory is the pools' "
                 "total (%s) and needs nothing else; add no --balloon (it punches holes in the "
                 "pool); checked against cloud-hypervisor's validation rules, not run live",
                 total);
}
