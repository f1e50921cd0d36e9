/* Small helpers shared by every module: cleanup attributes (as in systemd),
 * array sizes, and overflow-checked arithmetic.  No dependencies. */
#pragma once
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* The struct TYPE that holds MEMBER at PTR (as in the kernel). */
#define container_of(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define KIB (UINT64_C(1) << 10)
#define MIB (UINT64_C(1) << 20)
#define GIB (UINT64_C(1) << 30)

static inline void freep(void *p) { free(*(void **)p); }
static inline void closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Hand a pointer out of a cleanup scope: returns it and NULLs the variable. */
#define TAKE_PTR(p)                                                            \
        ({                                                                     \
                __typeof__(p) take_ptr_ = (p);                                 \
                (p) = NULL;                                                    \
                take_ptr_;                                                     \
        })
#define TAKE_FD(fd)                                                            \
        ({                                                                     \
                int take_fd_ = (fd);                                           \
                (fd) = -1;                                                     \
                take_fd_;                                                      \
        })

/* CLOCK_MONOTONIC / CLOCK_REALTIME / CLOCK_BOOTTIME in nanoseconds.
 * now_real_ns is wall time, for display only (a clock set before 1970 reads
 * 0: unknown, never a wrapped year-2548 value); anything that must elapse
 * (TTLs) uses now_boot_ns, which counts suspend and is valid within one boot
 * (boot_id). */
uint64_t now_mono_ns(void);
uint64_t now_real_ns(void);
uint64_t now_boot_ns(void);
/* Tests only (fault injection): shift what now_real_ns and now_boot_ns
 * return by these signed offsets (a wall clock jump, time passing). */
void clock_inject_offsets(int64_t real_ns, int64_t boot_ns);

/* A public entry's precondition, in the manner of sd-event's assert_return:
 * when EXPR is false the caller broke the entry's contract; say where
 * (hpw_assert_failed logs the expression, file, line and function at error
 * level) and return RET instead of going on with a bad argument. */
#define assert_return(expr, ret)                                               \
        do {                                                                   \
                if (__builtin_expect(!(expr), 0)) {                            \
                        hpw_assert_failed(#expr, __FILE__, __LINE__, __func__); \
                        return (ret);                                          \
                }                                                              \
        } while (0)
void hpw_assert_failed(const char *expr, const char *file, int line, const char *func);
