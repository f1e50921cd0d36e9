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
#include "pools.h" /* POOLS_STOCK_DIR */

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

/* The regular files in the directory PATH, but hidden ones, removed. */
static inline void real_remove_files_in(const char *path)
{
        struct dirent *de;
        DIR *d = opendir(path);

        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && de->d_type == DT_REG)
                        unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
}

/* Deferred restore (check.h's test_defer, DATA a directory path): remove the
 * regular files a test left in that pool directory on the private
 * hugetlbfs, and in its stock directory (pools.h POOLS_STOCK_DIR), so
 * their pages are the kernel's again before the next test counts them,
 * however the test ended.  Hidden files (the pool directory's marker) and
 * the stock directory itself stay.  guard.sh still restores nr_hugepages
 * and the mount when the binary ends. */
static inline void real_remove_files(const void *data, size_t len)
{
        char path[4096];

        snprintf(path, sizeof(path), "%.*s", (int)len, (const char *)data);
        real_remove_files_in(path);
        snprintf(path, sizeof(path), "%.*s/%s", (int)len, (const char *)data, POOLS_STOCK_DIR);
        real_remove_files_in(path);
}

/* Register real_remove_files(DIR) for the running test. */
static inline void real_restore_dir(const char *dir)
{
        test_defer(real_remove_files, dir, strlen(dir));
}
