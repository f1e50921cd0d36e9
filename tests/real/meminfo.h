/* Reading the host's hugepage count from /proc/meminfo, for the tests that
 * run on the real kernel under tests/real/guard.sh: one copy for all. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

/* HugePages_Free from /proc/meminfo (default page size, all nodes). */
static inline uint64_t meminfo_free(void)
{
        FILE *f = fopen("/proc/meminfo", "re");
        char line[256];
        unsigned long long v = 0;
        bool found = false;

        CHECK(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "HugePages_Free: %llu", &v) == 1) {
                        found = true;
                        break;
                }
        fclose(f);
        CHECK(found);
        return v;
}
