/* hpw-vfio-check: what a VMM with a passed-through device does to guest RAM
 * at boot, run inside the qemu.vfio guest (tests/qemu/vfio_boot.py).
 *
 *   hpw-vfio-check --list
 *   hpw-vfio-check PORT GROUP MNT PAGES
 *
 * A VMM maps all guest RAM into the IOMMU before the guest runs, one
 * VFIO_IOMMU_MAP_DMA per RAM region.  The map pins every page, and pinning a
 * page that is not there faults it in: on a hugetlbfs file nobody touched,
 * the kernel allocates and zeroes every hugepage inside that one ioctl, on
 * one thread.  On a pool hpwarmd warmed the pages are in the file already
 * and the map should only pin.  This program measures that with the
 * kernel's own VFIO code: it asks hpwarmd (already listening on
 * 127.0.0.1:PORT) for a pool of PAGES 2 MiB pages, opens /dev/vfio/vfio and
 * /dev/vfio/GROUP (a device bound to vfio-pci), sets a type1 IOMMU, and
 * then, for the pool's file and for a cold file of the same size on the
 * hugetlbfs at MNT (created, ftruncated, never touched), mmaps it
 * MAP_SHARED as a VMM does and times VFIO_IOMMU_MAP_DMA of the whole region,
 * reading the free hugepages (sysfs and /proc/meminfo) and the process's
 * minor faults just before and just after the ioctl; then unmaps.
 *
 * Each check prints one "HPWARM-CHECK PASS|FAIL name" line; the times and
 * their ratio are HPWARM-INFO lines only (TCG timing is no benchmark).  The
 * pool JSON is read with cJSON, so the program is linked like
 * hpw-qemu-check and its libraries go into the initramfs beside hpwarmd. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/vfio.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PAGE_2M (UINT64_C(2) << 20)
#define FREE_2M "/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages"
/* The IOVA the region is mapped at: any aligned address inside the
 * IOMMU's aperture; a VMM uses the guest-physical address. */
#define IOVA_BASE (UINT64_C(1) << 32)
/* Seconds the pool may take to warm (TCG zeroes about 0.4 GiB/s). */
#define WARM_TIMEOUT_S 120

static const char *const checks[] = {
        "vfio-container",  /* group viable, container set, type1 IOMMU set */
        "pool-warm",       /* hpwarmd's pool is ready, every page in its file */
        "warm-map-ok",     /* MAP_DMA and UNMAP_DMA of the pool succeed */
        "warm-map-faults-0", /* the map of the pool took no free hugepage */
        "cold-map-ok",     /* MAP_DMA and UNMAP_DMA of the cold file succeed */
        "cold-map-faults-n", /* the map of the cold file took exactly its pages */
};

static char why[1024];

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        return -1;
}

static void report(const char *name, int rc)
{
        if (rc == 0)
                printf("HPWARM-CHECK PASS %s\n", name);
        else
                printf("HPWARM-CHECK FAIL %s: %s\n", name, why);
        fflush(stdout);
        why[0] = '\0';
}

static double now_s(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- counters ------------------------------------------------------------ */

struct counts {
        long sys_free;      /* free_hugepages of 2 MiB pages */
        long meminfo_free;  /* HugePages_Free */
        /* This process's minor faults: printed, not judged.  On the 6.1
         * guest kernel a hugetlb page that pinning faults in goes through
         * follow_hugetlb_page() -> hugetlb_fault(), which does not count
         * the fault to the task (mm_account_fault() is handle_mm_fault()'s),
         * so the cold map shows +0 here: the free counts are the measure. */
        long minflt;
};

static long read_long(const char *path)
{
        FILE *f = fopen(path, "r");
        long v = -1;
        if (f) {
                if (fscanf(f, "%ld", &v) != 1)
                        v = -1;
                fclose(f);
        }
        return v;
}

static long meminfo(const char *key)
{
        FILE *f = fopen("/proc/meminfo", "r");
        char line[256];
        long v = -1;
        size_t n = strlen(key);
        while (f && fgets(line, sizeof(line), f))
                if (!strncmp(line, key, n) && line[n] == ':')
                        v = strtol(line + n + 1, NULL, 10);
        if (f)
                fclose(f);
        return v;
}

static struct counts counts_now(void)
{
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        return (struct counts){read_long(FREE_2M), meminfo("HugePages_Free"), ru.ru_minflt};
}

/* ---- hpwarmd over HTTP/1.1 (Connection: close) ----------------------------- */

/* One request; the body of the answer (malloc'd, caller frees) with its
 * status in *status, or NULL (why says what). */
static char *http(int port, const char *method, const char *target, const char *body, int *status)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                fail("%s %s: connect: %s", method, target, strerror(errno));
                if (fd >= 0)
                        close(fd);
                return NULL;
        }
        char req[1024];
        int n = snprintf(req, sizeof(req),
                         "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                         method, target, body ? strlen(body) : 0, body ? body : "");
        if (write(fd, req, n) != n) {
                fail("%s %s: write: %s", method, target, strerror(errno));
                close(fd);
                return NULL;
        }
        size_t cap = 1 << 16, len = 0;
        char *buf = malloc(cap);
        ssize_t got;
        while (buf && len < cap - 1 && (got = read(fd, buf + len, cap - 1 - len)) > 0)
                len += got;
        close(fd);
        if (!buf)
                return fail("out of memory"), NULL;
        buf[len] = '\0';
        char *hdr_end = strstr(buf, "\r\n\r\n");
        if (!hdr_end || sscanf(buf, "HTTP/1.%*d %d", status) != 1 ||
            strcasestr(buf, "Transfer-Encoding: chunked")) {
                fail("%s %s: not a plain HTTP response: %.120s", method, target, buf);
                free(buf);
                return NULL;
        }
        memmove(buf, hdr_end + 4, strlen(hdr_end + 4) + 1);
        return buf;
}

/* A pool of PAGES 2 MiB pages, warmed: its file's path in PATH. */
static int pool_warm(int port, uint64_t pages, char *path, size_t path_len)
{
        char body[160];
        int st = 0;
        snprintf(body, sizeof(body), "{\"node\": 0, \"size_bytes\": %" PRIu64 ", \"page_size\": \"2M\"}",
                 pages * PAGE_2M);
        double t0 = now_s();
        char *ans = http(port, "PUT", "/v1/pools/vfio-warm", body, &st);
        if (!ans)
                return -1;
        if (st != 201 && st != 200) {
                fail("PUT /v1/pools/vfio-warm: status %d: %.300s", st, ans);
                free(ans);
                return -1;
        }
        free(ans);
        char target[96];
        snprintf(target, sizeof(target), "/v1/pools/vfio-warm?wait=ready&timeout=%d", WARM_TIMEOUT_S);
        if (!(ans = http(port, "GET", target, NULL, &st)))
                return -1;
        double t1 = now_s();
        cJSON *j = cJSON_Parse(ans);
        const cJSON *state = cJSON_GetObjectItemCaseSensitive(j, "state");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "path");
        int rc = 0;
        if (st != 200 || !cJSON_IsString(state) || strcmp(state->valuestring, "ready") || !cJSON_IsString(p))
                rc = fail("GET %s: status %d: %.300s", target, st, ans);
        else
                snprintf(path, path_len, "%s", p->valuestring);
        cJSON_Delete(j);
        free(ans);
        if (rc == 0)
                printf("HPWARM-INFO pool vfio-warm: %" PRIu64 " MiB warmed by hpwarmd in %.3f s\n",
                       pages * PAGE_2M >> 20, t1 - t0);
        struct stat sb;
        if (rc == 0 && stat(path, &sb) < 0)
                rc = fail("stat %s: %s", path, strerror(errno));
        if (rc == 0 && (uint64_t)sb.st_blocks * 512 != pages * PAGE_2M)
                rc = fail("%s holds %" PRIu64 " bytes of pages, the pool is %" PRIu64, path,
                          (uint64_t)sb.st_blocks * 512, pages * PAGE_2M);
        return rc;
}

/* ---- VFIO ---------------------------------------------------------------- */

/* A container on /dev/vfio/GROUP with a type1 IOMMU (v2 when offered). */
static int vfio_container(const char *group, int *ret_container)
{
        char path[64];
        int container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
        if (container < 0)
                return fail("open /dev/vfio/vfio: %s", strerror(errno));
        if (ioctl(container, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
                return fail("VFIO_GET_API_VERSION is not %d", VFIO_API_VERSION);
        snprintf(path, sizeof(path), "/dev/vfio/%s", group);
        int g = open(path, O_RDWR | O_CLOEXEC);
        if (g < 0)
                return fail("open %s: %s", path, strerror(errno));
        struct vfio_group_status gs = {.argsz = sizeof(gs)};
        if (ioctl(g, VFIO_GROUP_GET_STATUS, &gs) < 0 || !(gs.flags & VFIO_GROUP_FLAGS_VIABLE))
                return fail("group %s is not viable (flags %#x): %s", group, gs.flags, strerror(errno));
        if (ioctl(g, VFIO_GROUP_SET_CONTAINER, &container) < 0)
                return fail("VFIO_GROUP_SET_CONTAINER: %s", strerror(errno));
        int type = ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) > 0 ? VFIO_TYPE1v2_IOMMU
                                                                                  : VFIO_TYPE1_IOMMU;
        if (ioctl(container, VFIO_SET_IOMMU, type) < 0)
                return fail("VFIO_SET_IOMMU %s: %s", type == VFIO_TYPE1v2_IOMMU ? "type1v2" : "type1",
                            strerror(errno));
        printf("HPWARM-INFO vfio: group %s, IOMMU %s\n", group, type == VFIO_TYPE1v2_IOMMU ? "type1v2" : "type1");
        *ret_container = container; /* the group stays open: it holds the container */
        return 0;
}

struct measure {
        double map_s;
        struct counts before, after;
        bool mapped, unmapped;
};

/* mmap PATH (SIZE bytes) shared, MAP_DMA it in one call, timed, counters
 * read around the ioctl alone; then UNMAP_DMA and munmap. */
static int map_region(int container, const char *path, uint64_t size, struct measure *m)
{
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return fail("open %s: %s", path, strerror(errno));
        void *va = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (va == MAP_FAILED)
                return fail("mmap %s: %s", path, strerror(errno));
        struct vfio_iommu_type1_dma_map map = {
                .argsz = sizeof(map),
                .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
                .vaddr = (uintptr_t)va,
                .iova = IOVA_BASE,
                .size = size,
        };
        int rc = 0;
        m->before = counts_now();
        double t0 = now_s();
        int r = ioctl(container, VFIO_IOMMU_MAP_DMA, &map);
        int err = errno;
        m->map_s = now_s() - t0;
        m->after = counts_now();
        m->mapped = r == 0;
        if (r < 0)
                rc = fail("VFIO_IOMMU_MAP_DMA of %s (%" PRIu64 " MiB): %s", path, size >> 20, strerror(err));
        if (r == 0) {
                struct vfio_iommu_type1_dma_unmap unmap = {.argsz = sizeof(unmap), .iova = IOVA_BASE, .size = size};
                m->unmapped = ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap) == 0 && unmap.size == size;
                if (!m->unmapped)
                        rc = fail("VFIO_IOMMU_UNMAP_DMA: %s (unmapped %" PRIu64 " of %" PRIu64 " bytes)",
                                  strerror(errno), (uint64_t)unmap.size, size);
        }
        munmap(va, size);
        printf("HPWARM-INFO map %s: %" PRIu64 " MiB in %.6f s; free_hugepages %ld -> %ld, HugePages_Free %ld -> %ld, "
               "minor faults +%ld\n",
               path, size >> 20, m->map_s, m->before.sys_free, m->after.sys_free, m->before.meminfo_free,
               m->after.meminfo_free, m->after.minflt - m->before.minflt);
        return rc;
}

/* Pages the map took from the free lists, the same by both counters. */
static int faulted(const struct measure *m, long want, const char *what)
{
        long sys = m->before.sys_free - m->after.sys_free;
        long mi = m->before.meminfo_free - m->after.meminfo_free;
        if (sys != want || mi != want)
                return fail("the %s map took %ld free hugepages (sysfs) and %ld (meminfo), expected %ld", what, sys,
                            mi, want);
        return 0;
}

int main(int argc, char **argv)
{
        if (argc == 2 && !strcmp(argv[1], "--list")) {
                for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
                        printf("%s\n", checks[i]);
                return 0;
        }
        if (argc != 5) {
                fprintf(stderr, "usage: %s --list | PORT GROUP MNT PAGES\n", argv[0]);
                return 2;
        }
        int port = atoi(argv[1]);
        const char *group = argv[2], *mnt = argv[3];
        uint64_t pages = strtoull(argv[4], NULL, 10), size = pages * PAGE_2M;

        int container = -1;
        report("vfio-container", vfio_container(group, &container));
        char pool[512] = "";
        report("pool-warm", pool_warm(port, pages, pool, sizeof(pool)));

        struct measure warm = {0}, cold = {0};
        int rc = container >= 0 && pool[0] ? map_region(container, pool, size, &warm)
                                            : fail("no container or no pool");
        report("warm-map-ok", rc);
        report("warm-map-faults-0", warm.mapped ? faulted(&warm, 0, "warm") : fail("the warm map failed"));

        char cold_path[512];
        snprintf(cold_path, sizeof(cold_path), "%s/vfio-cold", mnt);
        int fd = open(cold_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || ftruncate(fd, size) < 0)
                rc = fail("create %s of %" PRIu64 " bytes: %s", cold_path, size, strerror(errno));
        else
                rc = container >= 0 ? map_region(container, cold_path, size, &cold) : fail("no container");
        if (fd >= 0)
                close(fd);
        unlink(cold_path);
        report("cold-map-ok", rc);
        report("cold-map-faults-n", cold.mapped ? faulted(&cold, (long)pages, "cold") : fail("the cold map failed"));

        if (warm.mapped && cold.mapped)
                printf("HPWARM-INFO vfio map of %" PRIu64 " MiB: cold %.3f s, warm %.3f s, cold/warm %.1fx\n",
                       size >> 20, cold.map_s, warm.map_s, warm.map_s > 0 ? cold.map_s / warm.map_s : 0.0);
        fflush(stdout);
        return 0;
}
