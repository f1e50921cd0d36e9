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

/* CLOCK_MONOTONIC / CLOCK_REALTIME in nanoseconds. */
uint64_t now_mono_ns(void);
uint64_t now_real_ns(void);
