/* handoff_internal: what a VMM format's composer file (handoff_ID.c) is
 * written with, shared by handoff.c and the composers only.
 *
 * A composer adds words to a list and builds each word in a growing string;
 * both remember running out of memory instead of failing at every call, so
 * a composer is a straight run of puts that handoff_compose() checks once.
 * The escaping of a VMM's own option syntax stays in its composer file. */
#pragma once

/* Private to server/src/api/: its object library defines HPW_IN_API (a
 * test's own composer is built the same way). */
#ifndef HPW_IN_API
#error "handoff_internal.h is private to server/src/api/"
#endif

#include <stdbool.h>
#include <stddef.h>

#include "handoff.h"

/* A growing string that remembers running out of memory. */
struct sbuf {
        char *s;
        size_t len, cap;
        bool oom;
};

void sb_putn(struct sbuf *b, const char *s, size_t n);
void sb_puts(struct sbuf *b, const char *s);
void sb_putc(struct sbuf *b, char c);
/* Only numbers and fixed words: a result over 127 bytes counts as out of memory. */
void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The finished string (owned by the caller; "" when nothing was put), or
 * NULL if memory ran out.  B is empty afterwards. */
char *sb_take(struct sbuf *b);

/* Add S (taken over; NULL means memory ran out) or a copy of S. */
void handoff_word(struct handoff_words *w, char *s);
void handoff_word_str(struct handoff_words *w, const char *s);
/* The words added so far, in order, and how many. */
char *const *handoff_words_list(const struct handoff_words *w, size_t *ret_n);

/* The id the VMM knows the pool's memory by: its own name, or the
 * source's when it stands in for one. */
const char *handoff_pool_id(const struct handoff_pool *p);

/* Each row's composer and note, by the row's ID. */
#define HPW_VMM(id, name, alias, output, as_refused, as_refused_short)                                           \
        int handoff_##id##_compose(struct handoff_words *w, struct handoff *h, const struct handoff_pool *pools, \
                                   size_t n);                                                                    \
        void handoff_##id##_note(const char *total, char *buf, size_t len);
#include "vmm_formats.def"
#undef HPW_VMM
