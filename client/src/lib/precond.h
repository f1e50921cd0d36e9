/* precond.h: the preconditions of libhpwarm's exported calls (STYLE.md §14).
 *
 * Each exported call states its contract at its top, one line per rule, as
 * sd-event's assert_return() does: the call returns the rule's error at once,
 * sends nothing and writes no out-parameter.  The errors say which kind of
 * misuse it was (hpwarm.h, "Misuse"):
 *   HPW_E_NULL_HANDLE    the handle is NULL;
 *   HPW_E_NULL_ARGUMENT  a pointer the call needs (an out-parameter, a
 *                        request, a name, a list or one of its items) is NULL;
 *   HPW_E_STRUCT_SIZE    a size-prefixed request's size is below its first
 *                        version's (the caller did not use HPW_*_INIT);
 *   HPW_E_INVALID        a value outside what the call takes (a bad name, a
 *                        negative node, a zero size, a count over its limit).
 * On a call with a handle, hpw_last_message() then names the call and the
 * rule that failed ("hpw_warm: req->node >= 0 does not hold"). */
#pragma once
#include "internal.h"

/* H's message says that RULE of call FN does not hold; returns ERR. */
enum hpw_error hpw_misuse(struct hpw *h, const char *fn, const char *rule, enum hpw_error err);

/* Return ERR from the calling function unless COND holds. */
#define hpw_assert_return(cond, err)                                            \
        do {                                                                    \
                if (__builtin_expect(!(cond), 0))                               \
                        return (err);                                           \
        } while (0)

/* As hpw_assert_return, in a call on handle H (already known not NULL):
 * hpw_last_message(H) names the call and COND. */
#define hpw_assert_return_h(h, cond, err)                                       \
        do {                                                                    \
                if (__builtin_expect(!(cond), 0))                               \
                        return hpw_misuse((h), __func__, #cond, (err));         \
        } while (0)

/* The first rule of every call on a handle: H is not NULL. */
#define hpw_assert_handle(h) hpw_assert_return((h) != NULL, HPW_E_NULL_HANDLE)

/* NAME, an argument of a call on H, is a pool name: not NULL
 * (HPW_E_NULL_ARGUMENT) and [A-Za-z0-9][A-Za-z0-9._-]{0,63} (HPW_E_INVALID:
 * empty, too long, or another character). */
#define hpw_assert_name(h, name)                                                \
        do {                                                                    \
                hpw_assert_return_h(h, (name) != NULL, HPW_E_NULL_ARGUMENT);    \
                hpw_assert_return_h(h, hpw_name_valid(name), HPW_E_INVALID);    \
        } while (0)
