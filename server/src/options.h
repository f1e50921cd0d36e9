/* options: hpwarmd's command line -- the getopt table, the usage text, the
 * configuration it fills and the checks between flags.  A usage error is
 * reported here ("hpwarmd: ...", "Try 'hpwarmd --help'.") and exits with
 * OPTIONS_EXIT_USAGE; --help and --version print and exit 0.  Everything
 * that needs the host (files, groups' members, sockets) is main.c's. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pools.h"
#include "topo.h"

/* Exit code of a usage error, and of a configuration the daemon refuses to
 * run with. */
#define OPTIONS_EXIT_USAGE 2

struct options {
        const char *listen;
        const char *socket_path;
        const char *sysfs_root;
        const char *state_dir;
        uint64_t memory_floor;
        struct pools_mount mounts[TOPO_MAX_PAGE_SIZES];
        size_t n_mounts;
        gid_t pool_gid;
        unsigned threads_per_node;
        uint64_t max_pool_bytes;
        uint64_t max_node_warm_bytes;
        unsigned max_pools;
        unsigned release_unmapped_after;
        struct stock_target_record stock[POOLS_STOCK_TARGETS_MAX];
        size_t n_stock;
        struct elastic_policy_record elastic[POOLS_STOCK_TARGETS_MAX];
        size_t n_elastic;
        gid_t socket_gid;
        const char *token_file, *read_token_file;
        const char *tls_cert, *tls_key, *tls_client_ca;
        unsigned max_connections;
        unsigned connection_timeout_s;
        bool reset_state;
        bool fixed_hugepages;   /* never write a hugepage count (pools.h) */
        bool allow_unauthenticated_tcp;
        unsigned max_waits_per_caller;
};

/* Fill O from ARGV; on a usage error, --help or --version print and exit.
 * O's strings point into ARGV. */
void options_parse(int argc, char **argv, struct options *o);
/* How often claimed pools without a pid are checked for mappers, in ms (0:
 * the default).  Not a flag: tests shorten it through
 * HPWARMD_TEST_UNMAPPED_SWEEP_MS; a bad value is logged and ignored. */
uint64_t options_unmapped_sweep_ms(void);
