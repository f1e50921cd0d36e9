/* handoff_testvmm: the test-only VMM format's composer (row.def), written
 * the way server/src/api/handoff_qemu.c is: one `--ram
 * id=ID,file=PATH,size=BYTES,node=N` per pool.  No VMM reads these words;
 * integration.vmm_row checks that the daemon composes them and the CLI
 * prints them without any other file knowing the format. */
#include <inttypes.h>
#include <stdio.h>

#include "handoff_internal.h"

int handoff_testvmm_compose(struct handoff_words *w, struct handoff *h, const struct handoff_pool *pools, size_t n)
{
        (void)h;
        for (size_t i = 0; i < n; i++) {
                struct sbuf b = { 0 };
                sb_puts(&b, "id=");
                sb_puts(&b, handoff_pool_id(&pools[i]));
                sb_puts(&b, ",file=");
                sb_puts(&b, pools[i].path);
                sb_printf(&b, ",size=%" PRIu64 ",node=%d", pools[i].size_bytes, pools[i].node);
                handoff_word_str(w, "--ram");
                handoff_word(w, sb_take(&b));
        }
        return 0;
}

void handoff_testvmm_note(const char *total, char *buf, size_t len)
{
        snprintf(buf, len, "test-vmm: the guest's memory is %s", total);
}
