/* guest_pattern: the memory a live-migration test watches, run as the
 * guest's only program (tests/qemu/migrate.py puts it in the initramfs).
 *
 * guest_pattern MIB SEED fills MIB MiB of anonymous memory with a
 * xorshift64 stream seeded by SEED, prints "HPWARM-PATTERN-SET <sum>", then
 * once a second reads the same memory again and prints "HPWARM-PATTERN
 * <tick> <sum>".  The host computes the sum of the same stream itself
 * (migrate.py, pattern_sum), so a line from the destination's console
 * proves the bytes arrived intact, not only that they did not change.  The
 * sum is FNV-1a over the 64-bit words; each word depends on the position
 * through the stream, so a page moved or zeroed changes it.
 *
 * Static, no libc beyond what a static glibc binary needs: the initramfs
 * has busybox and nothing else. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* FNV-1a's 64-bit constants, applied per word instead of per byte. */
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t sum_words(const uint64_t *w, size_t n)
{
        uint64_t h = FNV_OFFSET;
        for (size_t i = 0; i < n; i++)
                h = (h ^ w[i]) * FNV_PRIME;
        return h;
}

int main(int argc, char **argv)
{
        if (argc != 3) {
                fprintf(stderr, "usage: guest_pattern MIB SEED\n");
                return 2;
        }
        size_t bytes = (size_t)strtoull(argv[1], NULL, 10) << 20;
        uint64_t x = strtoull(argv[2], NULL, 10);
        if (bytes == 0 || x == 0) {
                fprintf(stderr, "guest_pattern: MIB and SEED must be positive\n");
                return 2;
        }
        uint64_t *w = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (w == MAP_FAILED) {
                perror("guest_pattern: mmap");
                return 1;
        }
        size_t n = bytes / sizeof(*w);
        for (size_t i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                w[i] = x;
        }
        printf("HPWARM-PATTERN-SET %016llx\n", (unsigned long long)sum_words(w, n));
        fflush(stdout);
        for (unsigned long tick = 1;; tick++) {
                sleep(1);
                printf("HPWARM-PATTERN %lu %016llx\n", tick, (unsigned long long)sum_words(w, n));
                fflush(stdout);
        }
}
