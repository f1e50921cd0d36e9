/* hpwarmd: argv -> wiring -> serve until SIGTERM.  The only exit() is here.
 *
 * Start order matters: topology first (everything sizes from it), then the
 * engine (its workers must exist before any populate runs), then the pool
 * registry (it reconciles the journal and may resume warming jobs), and the
 * HTTP listeners last, so nothing is served before the state is known. */
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "app.h"
#include "engine.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "pools.h"
#include "sysfs.h"
#include "topo.h"
#include "units.h"
#include "util.h"

#define DEFAULT_SOCKET "/run/hpwarmd/api.sock"
#define DEFAULT_STATE_DIR "/var/lib/hpwarmd"

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
};

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
        exit(2);
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

static void parse_args(int argc, char **argv, struct options *o)
{
        enum { O_LISTEN = 256, O_SOCKET, O_SYSFS, O_STATE, O_FLOOR, O_HUGETLBFS, O_POOL_GROUP,
               O_THREADS, O_MAX_POOL, O_MAX_NODE, O_MAX_POOLS, O_LOG, O_VERSION, O_HELP };
        static const struct option longopts[] = {
                {"listen", required_argument, NULL, O_LISTEN},
                {"socket", required_argument, NULL, O_SOCKET},
                {"sysfs-root", required_argument, NULL, O_SYSFS},
                {"state-dir", required_argument, NULL, O_STATE},
                {"memory-floor", required_argument, NULL, O_FLOOR},
                {"hugetlbfs", required_argument, NULL, O_HUGETLBFS},
                {"pool-group", required_argument, NULL, O_POOL_GROUP},
                {"threads-per-node", required_argument, NULL, O_THREADS},
                {"max-pool-bytes", required_argument, NULL, O_MAX_POOL},
                {"max-node-warm-bytes", required_argument, NULL, O_MAX_NODE},
                {"max-pools", required_argument, NULL, O_MAX_POOLS},
                {"log-level", required_argument, NULL, O_LOG},
                {"version", no_argument, NULL, O_VERSION},
                {"help", no_argument, NULL, O_HELP},
                {NULL, 0, NULL, 0},
        };
        *o = (struct options){.sysfs_root = "/sys", .state_dir = DEFAULT_STATE_DIR,
                              .memory_floor = RESERVE_FLOOR_AUTO, .pool_gid = (gid_t)-1};
        int c;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                switch (c) {
                case O_LISTEN: o->listen = optarg; break;
                case O_SOCKET: o->socket_path = optarg; break;
                case O_SYSFS: o->sysfs_root = optarg; break;
                case O_STATE: o->state_dir = optarg; break;
                case O_FLOOR: o->memory_floor = parse_bytes_arg("--memory-floor", optarg); break;
                case O_HUGETLBFS: {
                        char *eq = strchr(optarg, '=');
                        uint64_t ps;
                        if (!eq || eq[1] != '/')
                                die_usage("--hugetlbfs wants SIZE=/absolute/dir, got \"%s\"", optarg);
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
                case O_POOL_GROUP: {
                        struct group *g = getgrnam(optarg);
                        if (!g)
                                die_usage("unknown group \"%s\"", optarg);
                        o->pool_gid = g->gr_gid;
                        break;
                }
                case O_THREADS: o->threads_per_node = parse_uint_arg("--threads-per-node", optarg, 4096); break;
                case O_MAX_POOL: o->max_pool_bytes = parse_bytes_arg("--max-pool-bytes", optarg); break;
                case O_MAX_NODE: o->max_node_warm_bytes = parse_bytes_arg("--max-node-warm-bytes", optarg); break;
                case O_MAX_POOLS: o->max_pools = parse_uint_arg("--max-pools", optarg, 1000000); break;
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
}

static int mkdir_parents(const char *path, mode_t mode)
{
        char buf[4096];
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(buf, mode) < 0 && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static void describe_topology(const struct topo *t, char *buf, size_t len)
{
        size_t used = 0;
        used += (size_t)snprintf(buf + used, len - used, "nodes");
        for (size_t i = 0; i < t->n_nodes && used < len; i++)
                used += (size_t)snprintf(buf + used, len - used, "%s%d(cpus %s)", i ? "," : " ",
                                         t->nodes[i].id, t->nodes[i].cpulist[0] ? t->nodes[i].cpulist : "none");
        if (used < len)
                used += (size_t)snprintf(buf + used, len - used, "; page sizes");
        for (size_t i = 0; i < t->n_page_sizes && used < len; i++) {
                char s[16];
                format_size(t->page_sizes[i], s, sizeof(s));
                used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "," : " ", s);
        }
}

int main(int argc, char **argv)
{
        struct options o;
        struct app app = {0};
        struct sysfs *fs = NULL;
        struct topo *topo = NULL;
        struct engine *engine = NULL;
        struct pools *pools = NULL;
        struct http *http = NULL;
        int r, rc = 1;

        parse_args(argc, argv, &o);

        /* Block the signals we wait for before any thread exists, so every
         * thread inherits the mask and sigwait() below gets them. */
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);

        r = sysfs_open(o.sysfs_root, &fs);
        if (r < 0) {
                log_err("cannot open sysfs root %s: %s", o.sysfs_root, strerror(-r));
                goto out;
        }
        r = topo_load(fs, &topo);
        if (r < 0) {
                log_err("cannot read NUMA topology under %s: %s", o.sysfs_root, strerror(-r));
                goto out;
        }
        r = mkdir_parents(o.state_dir, 0700);
        if (r < 0) {
                log_err("cannot create state dir %s: %s", o.state_dir, strerror(-r));
                goto out;
        }
        if (o.socket_path) {
                char dir[4096];
                snprintf(dir, sizeof(dir), "%s", o.socket_path);
                char *slash = strrchr(dir, '/');
                if (slash && slash != dir) {
                        *slash = '\0';
                        mkdir_parents(dir, 0755);
                }
        }

        for (size_t i = 0; i < o.n_mounts; i++) {
                r = pools_check_mount(o.mounts[i].dir, o.mounts[i].page_size, o.pool_gid);
                if (r < 0) {
                        char s[16];
                        format_size(o.mounts[i].page_size, s, sizeof(s));
                        log_err("--hugetlbfs %s=%s: %s", s, o.mounts[i].dir,
                                r == -EMEDIUMTYPE ? "not inside a hugetlbfs mount"
                                : r == -EXDEV     ? "that hugetlbfs mount has another page size (mount with -o pagesize=)"
                                                  : strerror(-r));
                        goto out;
                }
        }

        r = engine_new(&(struct engine_config){.topo = topo, .threads_per_node = o.threads_per_node}, &engine);
        if (r < 0) {
                log_err("cannot start prefault workers: %s", strerror(-r));
                goto out;
        }
        for (size_t i = 0; i < topo->n_nodes; i++)
                if (!engine_node_pinned(engine, topo->nodes[i].id))
                        log_warn("node %d: prefault workers run unpinned (no usable CPU of the node in "
                                 "this process's affinity)", topo->nodes[i].id);

        struct pools_config pc = {
                .fs = fs, .topo = topo, .engine = engine, .state_dir = o.state_dir,
                .n_mounts = o.n_mounts, .pool_gid = o.pool_gid, .memory_floor = o.memory_floor,
                .max_pool_bytes = o.max_pool_bytes, .max_node_warm_bytes = o.max_node_warm_bytes,
                .max_pools = o.max_pools,
        };
        memcpy(pc.mounts, o.mounts, sizeof(o.mounts));
        r = pools_new(&pc, &pools);
        if (r < 0) {
                log_err("cannot load pool state from %s: %s", o.state_dir, strerror(-r));
                goto out;
        }

        app.fs = fs;
        app.topo = topo;
        app.engine = engine;
        app.pools = pools;
        app.memory_floor = o.memory_floor;
        r = counter_vec_new("hpwarmd_http_requests_total", "HTTP requests by route template, method and status code.",
                            (const char *const[]){"route", "method", "code"}, 3, &app.http_requests);
        if (r < 0)
                goto out;

        r = http_start(&(struct http_config){.listen = o.listen, .socket_path = o.socket_path}, &app, &http);
        if (r < 0)
                goto out;

        char topo_desc[512], listeners[512] = "";
        describe_topology(topo, topo_desc, sizeof(topo_desc));
        if (o.listen) {
                char host[256];
                snprintf(host, sizeof(host), "%s", o.listen);
                char *colon = strrchr(host, ':');
                if (colon)
                        *colon = '\0';
                snprintf(listeners, sizeof(listeners), "http://%s:%u", host, http_tcp_port(http));
        }
        if (o.socket_path)
                snprintf(listeners + strlen(listeners), sizeof(listeners) - strlen(listeners), "%sunix:%s",
                         listeners[0] ? " " : "", o.socket_path);
        log_notice("hpwarmd %s listening on %s; %s; %zu pool dir(s)", HPW_VERSION, listeners, topo_desc,
                   o.n_mounts);

        for (;;) {
                int sig;
                if (sigwait(&sigs, &sig) != 0)
                        continue;
                if (sig == SIGPIPE)
                        continue;
                log_notice("received %s, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
                break;
        }
        atomic_store(&app.stopping, true);
        rc = 0;
out:
        http_stop(http);
        pools_free(pools);
        engine_free(engine);
        counter_vec_free(app.http_requests);
        topo_free(topo);
        sysfs_close(fs);
        return rc;
}
