/* Fuzz target: journal_parse must never crash on any input, and anything it
 * accepts must survive format -> parse unchanged (the daemon writes only what
 * it could read back, and reads back exactly what it wrote). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "journal.h"

/* Journals are small; long inputs only slow the fuzzer down. */
#define FUZZ_MAX_INPUT (64 * 1024)

static void same_journal(const struct journal *a, const struct journal *b)
{
        if (strcmp(a->boot_id, b->boot_id) != 0 || a->n_pools != b->n_pools ||
            a->n_reservations != b->n_reservations)
                abort();
        for (size_t i = 0; i < a->n_reservations; i++) {
                const struct journal_reservation *x = &a->reservations[i], *y = &b->reservations[i];
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
        char *text, *again;

        if (size > FUZZ_MAX_INPUT)
                return 0;
        if (journal_parse((const char *)data, size, &j) < 0)
                return 0;

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
