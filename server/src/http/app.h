/* app: the wiring every handler sees — the long-lived objects main.c builds
 * at start and frees at exit.  Plain struct, no behaviour.  Once main.c has
 * built it, no pointer in it is NULL: the engine and the pool registry exist
 * even with no --hugetlbfs directory (a pool request is then refused with
 * no-hugetlbfs, per page size). */
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
        struct engine *engine;
        struct pools *pools;
        uint64_t memory_floor;          /* bytes per node */
        bool hugepages_fixed;           /* --fixed-hugepages: GET /v1/nodes says so */
        struct http_metrics *http_metrics; /* requests by route, method, code; latency */
        atomic_bool stopping;           /* SIGTERM seen: mutations answer 503 */
};
