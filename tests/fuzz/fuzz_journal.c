/* Fuzz target: the journal's readers must never crash on any input, and
 * whatever they accept must survive format -> parse unchanged (the daemon
 * writes only what it could read back, and reads back exactly what it
 * wrote).
 *
 * An input is a snapshot (state.json), optionally followed by a NUL and a
 * log (state.log) to replay onto it, so one corpus covers both files and
 * the rule that ties a log to its snapshot. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "journal.h"

/* Journals are small; long inputs only slow the fuzzer down. */
#define FUZZ_MAX_INPUT (64 * 1024)

static void same_journal(const struct journal *a, const struct journal *b)
{
        if (strcmp(a->boot_id, b->boot_id) != 0 || strcmp(a->snapshot_id, b->snapshot_id) != 0 ||
            a->n_pools != b->n_pools || a->n_reservations != b->n_reservations ||
            a->n_stock_targets != b->n_stock_targets)
                abort();
        for (size_t i = 0; i < a->n_reservations; i++) {
                const struct reservation_record *x = &a->reservations[i], *y = &b->reservations[i];
                if (x->node != y->node || x->page_size != y->page_size || x->count != y->count)
                        abort();
        }
        /* Parsed records are zero-filled before use, so whole-struct
         * comparison is meaningful. */
        if (a->n_pools && memcmp(a->pools, b->pools, a->n_pools * sizeof(*a->pools)) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct journal *j = NULL, *k = NULL;
        const char *nul;
        size_t snap_len;
        char *text, *again;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        nul = memchr(data, '\0', size);
        snap_len = nul ? (size_t)(nul - (const char *)data) : size;
        if (journal_parse((const char *)data, snap_len, &j) < 0)
                return 0;
        if (nul) {
                int r = journal_apply_log(j, nul + 1, size - snap_len - 1);
                if (r < 0) {
                        if (r != -EINVAL && r != -EPROTONOSUPPORT && r != -ENOMEM)
                                abort();
                        journal_free(j);
                        return 0;
                }
                /* A stale log changes nothing; a torn one is cut at its tail. */
                if (j->log_stale && j->log_records)
                        abort();
        }

        text = journal_format(j);
        if (!text)
                abort();
        if (journal_parse(text, strlen(text), &k) != 0)
                abort();
        same_journal(j, k);
        again = journal_format(k);
        if (!again || strcmp(text, again) != 0)
                abort();

        free(again);
        free(text);
        journal_free(k);
        journal_free(j);
        return 0;
}
