/* options: hpwarmd's command line (see options.h).  One getopt_long table
 * of long options only; each flag's value is checked where it is parsed, the
 * rules between flags after the loop.  The messages and the exit code are
 * the CLI's contract (the integration tests and the man page check them). */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "units.h"
#include "util.h"

#define DEFAULT_SOCKET "/run/hpwarmd/api.sock"
#define DEFAULT_STATE_DIR "/var/lib/hpwarmd"


static void usage(FILE *f)
{
        fprintf(f,
                "Usage: hpwarmd [OPTIONS]\n"
                "Reserve, prefault and report hugepage pools per NUMA node over a REST API.\n\n"
                "  --listen HOST:PORT        TCP listener (port 0 picks a free port and logs it)\n"
                "  --socket PATH             unix socket listener (default " DEFAULT_SOCKET
                " when no --listen)\n"
                "  --sysfs-root DIR          read topology and counters under DIR (default /sys)\n"
                "  --state-dir DIR           journal directory (default " DEFAULT_STATE_DIR ")\n"
                "  --reset-state             if the journal cannot be read, move it aside and\n"
                "                            start empty (files a process maps are kept);\n"
                "                            without it such a journal stops the start\n"
                "  --memory-floor BYTES      ordinary memory a reservation must leave free per node\n"
                "                            (default: 1/32 of the node's memory, at least 256M)\n"
                "  --hugetlbfs SIZE=DIR      pool directory for page size SIZE inside a hugetlbfs\n"
                "                            mount of that page size (repeatable), e.g.\n"
                "                            --hugetlbfs 2M=/dev/hugepages/hpwarm\n"
                "  --pool-group GROUP        group owning pool files (mode 0660)\n"
                "  --threads-per-node N      cap on prefault workers per node (default: its CPUs)\n"
                "  --max-pool-bytes BYTES    largest pool accepted (default: no limit)\n"
                "  --max-node-warm-bytes B   cap on warming+ready bytes per node (default: none)\n"
                "  --max-pools N             most pools at once (default 1024)\n"
                "  --stock NODE:PAGESIZE:SIZE:COUNT  keep COUNT ready files of SIZE on NODE\n"
                "                            (repeatable; replaces the saved stock targets)\n"
                "  --elastic NODE:SIZE:MIN:MAX:HEADROOM:IDLE  make NODE's pool of SIZE pages elastic:\n"
                "                            grown on demand up to MAX pages, free pages beyond\n"
                "                            HEADROOM given back after IDLE seconds, never below MIN\n"
                "                            (repeatable; replaces the saved policy of that pool)\n"
                "  --fixed-hugepages         never change a hugepage count (nr_hugepages): for hosts\n"
                "                            whose scheduler reads them once, e.g. Nova compute hosts;\n"
                "                            \"reserve\" grows nothing, reservations and elastic\n"
                "                            pools are refused (409 hugepages-fixed)\n"
                "  --release-unmapped-after SEC  release a pool claimed without a pid once no\n"
                "                            process has mapped it for SEC seconds (default: never)\n"
                "  --socket-group GROUP      group owning the unix socket (mode 0660)\n"
                "  --token-file FILE         admin bearer tokens for TCP, one per line\n"
                "  --read-token-file FILE    read-only bearer tokens for TCP, one per line\n"
                "  --tls-cert FILE           TLS certificate (PEM) for the TCP listener\n"
                "  --tls-key FILE            its private key (PEM)\n"
                "  --tls-client-ca FILE      require client certificates signed by these CAs\n"
                "  --allow-unauthenticated-tcp  let a loopback TCP listener run without tokens or\n"
                "                            client certificates (any local user gets admin)\n"
                "  --max-connections N       open connections per listener (default 256)\n"
                "  --max-waits-per-caller N  long-polls one caller (token, uid, address) may have\n"
                "                            waiting at once (default 256; past it 429)\n"
                "  --connection-timeout SEC  close connections idle this long, or whose request\n"
                "                            takes longer to arrive (default 30)\n"
                "  --log-level LEVEL         err, warn, notice, info (default) or debug\n"
                "  --version, --help\n");
}

static __attribute__((format(printf, 1, 2))) void die_usage(const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "hpwarmd: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nTry 'hpwarmd --help'.\n");
        exit(OPTIONS_EXIT_USAGE);
}

static uint64_t parse_bytes_arg(const char *flag, const char *s)
{
        uint64_t v;
        if (parse_size(s, &v) < 0)
                die_usage("invalid byte count for %s", flag);
        return v;
}

static unsigned parse_uint_arg(const char *flag, const char *s, unsigned max)
{
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (!*s || *end || errno || s[0] == '-' || v > max)
                die_usage("invalid number for %s", flag);
        return (unsigned)v;
}

static gid_t parse_group_arg(const char *name)
{
        struct group *g = getgrnam(name);
        if (!g)
                die_usage("unknown group \"%s\"", name);
        return g->gr_gid;
}

/* How often claimed pools without a pid are checked for mappers.  Not a
 * flag: the default (60 s) is right for hosts; tests shorten it through
 * HPWARMD_TEST_UNMAPPED_SWEEP_MS.  0 = the default. */
uint64_t options_unmapped_sweep_ms(void)
{
        const char *s = getenv("HPWARMD_TEST_UNMAPPED_SWEEP_MS");
        char *end;
        unsigned long v;

        if (!s || !*s)
                return 0;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (*end || errno || s[0] == '-' || v < 10 || v > 3600 * 1000) {
                log_warn("ignoring HPWARMD_TEST_UNMAPPED_SWEEP_MS=%s (10 to 3600000 ms)", s);
                return 0;
        }
        return v;
}

void options_parse(int argc, char **argv, struct options *o)
{
        enum { O_LISTEN = 256, O_SOCKET, O_SYSFS, O_STATE, O_FLOOR, O_HUGETLBFS, O_POOL_GROUP,
               O_THREADS, O_MAX_POOL, O_MAX_NODE, O_MAX_POOLS, O_LOG, O_VERSION, O_HELP,
               O_SOCKET_GROUP, O_TOKEN, O_READ_TOKEN, O_TLS_CERT, O_TLS_KEY, O_TLS_CA, O_MAX_CONN,
               O_CONN_TIMEOUT, O_ALLOW_UNAUTH_TCP, O_MAX_WAITS, O_RELEASE_UNMAPPED, O_RESET_STATE, O_STOCK,
               O_ELASTIC, O_FIXED_HUGEPAGES };
        static const struct option longopts[] = {
                {"listen", required_argument, NULL, O_LISTEN},
                {"socket", required_argument, NULL, O_SOCKET},
                {"sysfs-root", required_argument, NULL, O_SYSFS},
                {"state-dir", required_argument, NULL, O_STATE},
                {"reset-state", no_argument, NULL, O_RESET_STATE},
                {"memory-floor", required_argument, NULL, O_FLOOR},
                {"hugetlbfs", required_argument, NULL, O_HUGETLBFS},
                {"pool-group", required_argument, NULL, O_POOL_GROUP},
                {"threads-per-node", required_argument, NULL, O_THREADS},
                {"max-pool-bytes", required_argument, NULL, O_MAX_POOL},
                {"max-node-warm-bytes", required_argument, NULL, O_MAX_NODE},
                {"max-pools", required_argument, NULL, O_MAX_POOLS},
                {"stock", required_argument, NULL, O_STOCK},
                {"elastic", required_argument, NULL, O_ELASTIC},
                {"fixed-hugepages", no_argument, NULL, O_FIXED_HUGEPAGES},
                {"release-unmapped-after", required_argument, NULL, O_RELEASE_UNMAPPED},
                {"log-level", required_argument, NULL, O_LOG},
                {"socket-group", required_argument, NULL, O_SOCKET_GROUP},
                {"token-file", required_argument, NULL, O_TOKEN},
                {"read-token-file", required_argument, NULL, O_READ_TOKEN},
                {"tls-cert", required_argument, NULL, O_TLS_CERT},
                {"tls-key", required_argument, NULL, O_TLS_KEY},
                {"tls-client-ca", required_argument, NULL, O_TLS_CA},
                {"max-connections", required_argument, NULL, O_MAX_CONN},
                {"connection-timeout", required_argument, NULL, O_CONN_TIMEOUT},
                {"allow-unauthenticated-tcp", no_argument, NULL, O_ALLOW_UNAUTH_TCP},
                {"max-waits-per-caller", required_argument, NULL, O_MAX_WAITS},
                {"version", no_argument, NULL, O_VERSION},
                {"help", no_argument, NULL, O_HELP},
                {NULL, 0, NULL, 0},
        };
        *o = (struct options){.sysfs_root = "/sys", .state_dir = DEFAULT_STATE_DIR,
                              .memory_floor = RESERVE_FLOOR_AUTO, .pool_gid = (gid_t)-1,
                              .socket_gid = (gid_t)-1};
        int c;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                switch (c) {
                case O_LISTEN: o->listen = optarg; break;
                case O_SOCKET: o->socket_path = optarg; break;
                case O_SYSFS: o->sysfs_root = optarg; break;
                case O_STATE: o->state_dir = optarg; break;
                case O_RESET_STATE: o->reset_state = true; break;
                case O_FIXED_HUGEPAGES: o->fixed_hugepages = true; break;
                case O_FLOOR: o->memory_floor = parse_bytes_arg("--memory-floor", optarg); break;
                case O_HUGETLBFS: {
                        char *eq = strchr(optarg, '=');
                        uint64_t ps;
                        if (!eq || eq[1] != '/')
                                die_usage("--hugetlbfs wants SIZE=/absolute/dir, got \"%s\"", optarg);
                        if (strlen(eq + 1) > POOL_DIR_MAX)
                                die_usage("--hugetlbfs: the directory may be at most %d bytes long", POOL_DIR_MAX);
                        *eq = '\0';
                        if (parse_page_size(optarg, &ps) < 0)
                                die_usage("invalid page size \"%s\" in --hugetlbfs", optarg);
                        if (o->n_mounts == ARRAY_SIZE(o->mounts))
                                die_usage("too many --hugetlbfs options");
                        for (size_t i = 0; i < o->n_mounts; i++)
                                if (o->mounts[i].page_size == ps)
                                        die_usage("--hugetlbfs given twice for %s", optarg);
                        o->mounts[o->n_mounts++] = (struct pools_mount){.page_size = ps, .dir = eq + 1};
                        break;
                }
                case O_POOL_GROUP: o->pool_gid = parse_group_arg(optarg); break;
                case O_SOCKET_GROUP: o->socket_gid = parse_group_arg(optarg); break;
                case O_TOKEN: o->token_file = optarg; break;
                case O_READ_TOKEN: o->read_token_file = optarg; break;
                case O_TLS_CERT: o->tls_cert = optarg; break;
                case O_TLS_KEY: o->tls_key = optarg; break;
                case O_TLS_CA: o->tls_client_ca = optarg; break;
                case O_ALLOW_UNAUTH_TCP: o->allow_unauthenticated_tcp = true; break;
                case O_MAX_WAITS:
                        o->max_waits_per_caller = parse_uint_arg("--max-waits-per-caller", optarg, 1000000);
                        if (!o->max_waits_per_caller)
                                die_usage("--max-waits-per-caller must be at least 1");
                        break;
                case O_MAX_CONN:
                        o->max_connections = parse_uint_arg("--max-connections", optarg, 65536);
                        if (!o->max_connections)
                                die_usage("--max-connections must be at least 1");
                        break;
                case O_CONN_TIMEOUT:
                        o->connection_timeout_s = parse_uint_arg("--connection-timeout", optarg, 3600);
                        if (!o->connection_timeout_s)
                                die_usage("--connection-timeout must be at least 1 second");
                        break;
                case O_THREADS: o->threads_per_node = parse_uint_arg("--threads-per-node", optarg, 4096); break;
                case O_MAX_POOL: o->max_pool_bytes = parse_bytes_arg("--max-pool-bytes", optarg); break;
                case O_MAX_NODE: o->max_node_warm_bytes = parse_bytes_arg("--max-node-warm-bytes", optarg); break;
                case O_MAX_POOLS: o->max_pools = parse_uint_arg("--max-pools", optarg, 1000000); break;
                case O_STOCK: {
                        char node_s[16], ps_s[16], size_s[32], count_s[16];
                        struct stock_target_record *t = &o->stock[o->n_stock];
                        uint64_t node;
                        int end = -1;
                        if (o->n_stock >= POOLS_STOCK_TARGETS_MAX)
                                die_usage("too many --stock options");
                        /* All of it: a fifth field or text after COUNT is
                         * a mistake, not something to ignore. */
                        if (sscanf(optarg, "%15[0-9]:%15[^:]:%31[^:]:%15[0-9]%n", node_s, ps_s, size_s, count_s,
                                   &end) != 4 || end < 0 || optarg[end] != '\0' ||
                            (node = strtoull(node_s, NULL, 10)) > INT32_MAX ||
                            parse_page_size(ps_s, &t->page_size) < 0 || parse_size(size_s, &t->size_bytes) < 0 ||
                            (t->count = strtoull(count_s, NULL, 10)) == 0)
                                die_usage("--stock wants NODE:PAGESIZE:SIZE:COUNT (e.g. 0:2M:4G:2), got \"%s\"",
                                          optarg);
                        t->node = (int)node;
                        o->n_stock++;
                        break;
                }
                case O_ELASTIC: {
                        char node_s[16], ps_s[16], min_s[24], max_s[24], head_s[24], idle_s[24], why[200];
                        struct elastic_policy_record *e = &o->elastic[o->n_elastic];
                        uint64_t node;
                        char *end[4];
                        if (o->n_elastic >= POOLS_STOCK_TARGETS_MAX)
                                die_usage("too many --elastic options");
                        *e = (struct elastic_policy_record){0};
                        if (sscanf(optarg, "%15[0-9]:%15[^:]:%23[0-9]:%23[0-9]:%23[0-9]:%23[0-9]", node_s, ps_s, min_s,
                                   max_s, head_s, idle_s) != 6 ||
                            (node = strtoull(node_s, NULL, 10)) > INT32_MAX || parse_page_size(ps_s, &e->page_size) < 0)
                                die_usage("--elastic wants NODE:PAGESIZE:MIN:MAX:HEADROOM:IDLE (pages, seconds; e.g. "
                                          "0:2M:0:512:16:300), got \"%s\"", optarg);
                        errno = 0;
                        e->node = (int)node;
                        e->min = strtoull(min_s, &end[0], 10);
                        e->max = strtoull(max_s, &end[1], 10);
                        e->headroom = strtoull(head_s, &end[2], 10);
                        e->idle_seconds = strtoull(idle_s, &end[3], 10);
                        if (errno || record_check_elastic_policy(e, why, sizeof(why)) < 0)
                                die_usage("--elastic %s: %s", optarg, errno ? "a number out of range" : why);
                        o->n_elastic++;
                        break;
                }
                case O_RELEASE_UNMAPPED:
                        /* Up to a year; 0 means never, as when not given. */
                        o->release_unmapped_after =
                                parse_uint_arg("--release-unmapped-after", optarg, 366 * 24 * 3600);
                        break;
                case O_LOG: {
                        static const char *names[] = {[LOG_ERR] = "err", [LOG_WARN] = "warn",
                                                      [LOG_NOTICE] = "notice", [LOG_INFO] = "info",
                                                      [LOG_DEBUG] = "debug"};
                        size_t i;
                        for (i = LOG_ERR; i <= LOG_DEBUG; i++)
                                if (strcmp(optarg, names[i]) == 0)
                                        break;
                        if (i > LOG_DEBUG)
                                die_usage("unknown log level \"%s\"", optarg);
                        log_set_max_level((enum log_level)i);
                        break;
                }
                case O_VERSION: printf("hpwarmd %s\n", HPW_VERSION); exit(0);
                case O_HELP: usage(stdout); exit(0);
                default:
                        die_usage("unknown or incomplete option \"%s\"", argv[optind - 1]);
                }
        }
        if (optind < argc)
                die_usage("unexpected argument \"%s\"", argv[optind]);
        if (!o->listen && !o->socket_path)
                o->socket_path = DEFAULT_SOCKET;
        if (!o->tls_cert != !o->tls_key)
                die_usage("--tls-cert and --tls-key go together");
        if (o->tls_client_ca && !o->tls_cert)
                die_usage("--tls-client-ca needs --tls-cert and --tls-key");
        if (o->fixed_hugepages && o->n_elastic)
                die_usage("--elastic and --fixed-hugepages exclude each other: an elastic pool grows and "
                          "shrinks nr_hugepages, which --fixed-hugepages forbids");
}

