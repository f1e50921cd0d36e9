/* fk_write ROOT PATH VALUE: write VALUE to ROOT/PATH through the daemon's own
 * sysfs layer (openat + O_TRUNC + one write(2)), then print what reads back.
 * Used by test_fakekernel.sh to check the shim on the code path that ships. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysfs.h"

int main(int argc, char **argv)
{
        struct sysfs *fs;
        uint64_t v;
        char *end;
        int r;

        if (argc != 4) {
                fprintf(stderr, "usage: fk_write ROOT PATH VALUE\n");
                return 2;
        }
        errno = 0;
        v = strtoull(argv[3], &end, 10);
        if (errno || *end || end == argv[3]) {
                fprintf(stderr, "fk_write: bad value %s\n", argv[3]);
                return 2;
        }
        r = sysfs_open(argv[1], &fs);
        if (r < 0) {
                fprintf(stderr, "fk_write: %s: %s\n", argv[1], strerror(-r));
                return 1;
        }
        r = sysfs_write_u64(fs, argv[2], v);
        if (r == 0)
                r = sysfs_read_u64(fs, argv[2], &v);
        sysfs_close(fs);
        if (r < 0) {
                fprintf(stderr, "fk_write: %s: %s\n", argv[2], strerror(-r));
                return 1;
        }
        printf("%" PRIu64 "\n", v);
        return 0;
}
