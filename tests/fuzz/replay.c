/* A main() for fuzz targets built without libFuzzer: runs every file named on
 * the command line, or found (sorted, non-recursively) in a directory named
 * there, through LLVMFuzzerTestOneInput once.  A target signals a bug by
 * crashing or aborting, so reaching the end means the corpus passed.  This
 * lets the committed corpus run as an ordinary ctest with any compiler. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Corpus entries are small; a larger file is a mistake worth reporting. */
#define REPLAY_MAX_BYTES (1024 * 1024)

static int run_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        uint8_t *buf;
        size_t n;

        if (!f) {
                fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
                return -1;
        }
        buf = malloc(REPLAY_MAX_BYTES + 1);
        if (!buf) {
                fclose(f);
                return -1;
        }
        n = fread(buf, 1, REPLAY_MAX_BYTES + 1, f);
        fclose(f);
        if (n > REPLAY_MAX_BYTES) {
                fprintf(stderr, "replay: %s: larger than %d bytes\n", path, REPLAY_MAX_BYTES);
                free(buf);
                return -1;
        }
        /* Shrink to the exact size so ASan sees reads past the input. */
        uint8_t *exact = malloc(n ? n : 1);
        if (!exact) {
                free(buf);
                return -1;
        }
        memcpy(exact, buf, n);
        free(buf);
        LLVMFuzzerTestOneInput(exact, n);
        free(exact);
        return 0;
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, unsigned *count)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        char **names = NULL;
        size_t n = 0, cap = 0;
        int r = 0;

        if (!d) {
                fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
                return -1;
        }
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                if (n == cap) {
                        cap = cap ? cap * 2 : 64;
                        char **nn = realloc(names, cap * sizeof(*nn));
                        if (!nn) {
                                r = -1;
                                break;
                        }
                        names = nn;
                }
                if (!(names[n] = strdup(e->d_name))) {
                        r = -1;
                        break;
                }
                n++;
        }
        closedir(d);
        qsort(names, n, sizeof(*names), cmp_names);
        for (size_t i = 0; i < n; i++) {
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                if (r == 0 && run_file(path) < 0)
                        r = -1;
                else if (r == 0)
                        (*count)++;
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char **argv)
{
        unsigned count = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
                return 2;
        }
        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
                        return 1;
                }
                if (S_ISDIR(st.st_mode)) {
                        r = run_dir(argv[i], &count);
                } else {
                        r = run_file(argv[i]);
                        count += r == 0;
                }
                if (r < 0)
                        return 1;
        }
        if (count == 0) {
                fprintf(stderr, "replay: no inputs found\n");
                return 1;
        }
        printf("replay: %u inputs ran\n", count);
        return 0;
}
