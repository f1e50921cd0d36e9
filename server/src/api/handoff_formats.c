/* handoff_formats: the table of VMM formats, common/vmm_formats.def's rows
 * with their composers (handoff.h).  Nothing but the table lives here, so a
 * test build can link its own copy with rows added (HPW_VMM_EXTRA) in place
 * of this one. */
#include "handoff_internal.h"

const struct handoff_format handoff_formats[] = {
#define HPW_VMM(id, name_, alias, output_, as_refused_, as_refused_short)                                        \
        {                                                                                                         \
                .name = name_,                                                                                    \
                .key = #id,                                                                                       \
                .argv_key = (output_) == HPW_VMM_SHELL ? #id "_argv" : NULL,                                      \
                .output = output_,                                                                                \
                .as_refused = as_refused_,                                                                        \
                .compose = handoff_##id##_compose,                                                                \
                .note = handoff_##id##_note,                                                                      \
        },
#include "vmm_formats.def"
#undef HPW_VMM
};

const size_t handoff_n_formats = sizeof(handoff_formats) / sizeof(handoff_formats[0]);
