/* bench_args.h: the command-line counts the benchmarks share. */
#ifndef HPW_BENCH_ARGS_H
#define HPW_BENCH_ARGS_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/* ARG as a decimal count from 1 to MAX, in *OUT; false if it is not one. */
static inline bool bench_count(const char *arg, unsigned long long max, unsigned long long *out)
{
        char *end;

        errno = 0;
        *out = strtoull(arg, &end, 10);
        return !errno && !*end && *out != 0 && *out <= max;
}

/* THREADS and ROUNDS, argv[3] and argv[4] of every benchmark here. */
static inline bool bench_threads_rounds(char **argv, unsigned long long *threads, unsigned long long *rounds,
                                        const char **bad)
{
        if (!bench_count(argv[3], 1024, threads)) {
                *bad = "bad THREADS";
                return false;
        }
        if (!bench_count(argv[4], 10000, rounds)) {
                *bad = "bad ROUNDS";
                return false;
        }
        return true;
}

#endif
