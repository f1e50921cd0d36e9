/* app: the wiring every handler sees — the long-lived objects main.c builds
 * at start and frees at exit.  Plain struct, no behaviour. */
#pragma once
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct sysfs;
struct topo;
struct engine;
struct pools;
struct http_metrics;

struct app {
        struct sysfs *fs;
        const struct topo *topo;
        struct engine *engine;          /* NULL when no hugetlbfs is configured */
        struct pools *pools;            /* NULL when no hugetlbfs is configured */
        uint64_t memory_floor;          /* bytes per node */
        struct http_metrics *http_metrics; /* requests by route, method, code; latency */
        atomic_bool stopping;           /* SIGTERM seen: mutations answer 503 */
};
