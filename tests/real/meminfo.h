/* Shared by the tests that run on the real kernel under tests/real/guard.sh:
 * reading the host's hugepage count from /proc/meminfo, and the restore that
 * runs after every test (one copy for all). */
#pragma once
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* Deferred restore (check.h's test_defer, DATA a directory path): remove the
 * regular files a test left in that directory on the private hugetlbfs, so
 * their pages are the kernel's again before the next test counts them,
 * however the test ended.  Hidden files (the pool directory's marker) stay.
 * guard.sh still restores nr_hugepages and the mount when the binary ends. */
static inline void real_remove_files(const void *data, size_t len)
{
        char path[4096];
        DIR *d;
        struct dirent *de;

        snprintf(path, sizeof(path), "%.*s", (int)len, (const char *)data);
        d = opendir(path);
        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && de->d_type == DT_REG)
                        unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
}

/* Register real_remove_files(DIR) for the running test. */
static inline void real_restore_dir(const char *dir)
{
        test_defer(real_remove_files, dir, strlen(dir));
}
