/* vmm: the VMM formats the library and the CLI know, common/vmm_formats.def's
 * rows as the client reads them (internal.h's struct hpw_vmm; the daemon
 * expands the same rows with their composers).  Nothing but the table lives
 * here, so a test build can link its own copy with rows added
 * (HPW_VMM_EXTRA) in place of this one. */
#include "internal.h"

const struct hpw_vmm hpw_vmms[] = {
#define HPW_VMM(id, name_, alias_, output_, as_refused_, as_refused_short)                                       \
        { .name = name_, .key = #id, .alias = alias_, .output = output_, .as_refused = as_refused_short },
#include "vmm_formats.def"
#undef HPW_VMM
};

const size_t hpw_n_vmms = sizeof(hpw_vmms) / sizeof(hpw_vmms[0]);
