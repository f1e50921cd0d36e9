/* hpwarmd: argv -> wiring -> serve until SIGTERM.  The only exit() is here.
 *
 * Start order matters: topology first (everything sizes from it), then the
 * engine (its workers must exist before any populate runs), then the pool
 * registry (it reconciles the journal and may resume warming jobs), and the
 * HTTP listeners last, so nothing is served before the state is known.
 *
 * Before any of that: the access configuration is checked (a TCP listener
 * off loopback needs tokens or mutual TLS) and the state directory's lock is
 * taken, so a second daemon never touches the journal or the socket. */
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "api.h"
#include "app.h"
#include "auth.h"
#include "engine.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "pools.h"
#include "sysfs.h"
#include "tls.h"
#include "topo.h"
#include "units.h"
#include "util.h"

#define DEFAULT_SOCKET "/run/hpwarmd/api.sock"
#define DEFAULT_STATE_DIR "/var/lib/hpwarmd"
#define LOCK_FILE "hpwarmd.lock"
/* Exit code for a configuration the daemon refuses to run with (as usage). */
#define EXIT_CONFIG 2

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
        struct journal_stock_target stock[POOLS_STOCK_TARGETS_MAX];
        size_t n_stock;
        struct journal_elastic_policy elastic[POOLS_STOCK_TARGETS_MAX];
        size_t n_elastic;
        gid_t socket_gid;
        const char *token_file, *read_token_file;
        const char *tls_cert, *tls_key, *tls_client_ca;
        unsigned max_connections;
        unsigned connection_timeout_s;
        bool reset_state;
        bool allow_unauthenticated_tcp;
        unsigned max_waits_per_caller;
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

/* How often claimed pools without a pid are checked for mappers.  Not a
 * flag: the default (60 s) is right for hosts; tests shorten it through
 * HPWARMD_TEST_UNMAPPED_SWEEP_MS.  0 = the default. */
static uint64_t unmapped_sweep_ms(void)
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

static void parse_args(int argc, char **argv, struct options *o)
{
        enum { O_LISTEN = 256, O_SOCKET, O_SYSFS, O_STATE, O_FLOOR, O_HUGETLBFS, O_POOL_GROUP,
               O_THREADS, O_MAX_POOL, O_MAX_NODE, O_MAX_POOLS, O_LOG, O_VERSION, O_HELP,
               O_SOCKET_GROUP, O_TOKEN, O_READ_TOKEN, O_TLS_CERT, O_TLS_KEY, O_TLS_CA, O_MAX_CONN,
               O_CONN_TIMEOUT, O_ALLOW_UNAUTH_TCP, O_MAX_WAITS, O_RELEASE_UNMAPPED, O_RESET_STATE, O_STOCK,
               O_ELASTIC };
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
                case O_POOL_GROUP: {
                        struct group *g = getgrnam(optarg);
                        if (!g)
                                die_usage("unknown group \"%s\"", optarg);
                        o->pool_gid = g->gr_gid;
                        break;
                }
                case O_SOCKET_GROUP: {
                        struct group *g = getgrnam(optarg);
                        if (!g)
                                die_usage("unknown group \"%s\"", optarg);
                        o->socket_gid = g->gr_gid;
                        break;
                }
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
                        struct journal_stock_target *t = &o->stock[o->n_stock];
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
                        struct journal_elastic_policy *e = &o->elastic[o->n_elastic];
                        uint64_t node;
                        char *end[4];
                        if (o->n_elastic >= POOLS_STOCK_TARGETS_MAX)
                                die_usage("too many --elastic options");
                        *e = (struct journal_elastic_policy){0};
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
                        if (errno || elastic_policy_check(e, why, sizeof(why)) < 0)
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

/* Take <STATE_DIR>/hpwarmd.lock for the life of the process (the fd is
 * never closed; the kernel drops the lock at exit, also after kill -9).
 * -EBUSY with *RET_HOLDER (0 if unknown) when another process holds it. */
static int take_lock(const char *state_dir, int *ret_fd, long *ret_holder)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/" LOCK_FILE, state_dir);
        _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int r = -errno;
                if (r != -EWOULDBLOCK)
                        return r;
                char buf[32] = "";
                ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
                *ret_holder = n > 0 ? strtol(buf, NULL, 10) : 0;
                return -EBUSY;
        }
        /* The pid is for the message above only; the lock is the truth. */
        char buf[32];
        int len = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)len, 0) != len)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

struct access {
        struct auth *auth;
        char *cert, *key, *client_ca;
};

static void access_done(struct access *a)
{
        auth_free(a->auth);
        free(a->cert);
        tls_free_secret(a->key);
        free(a->client_ca);
}

static int load_pem(const char *flag, const char *path, char **ret)
{
        int r = tls_read_pem(path, ret);
        if (r < 0)
                log_err("%s %s: %s", flag, path,
                        r == -EINVAL ? "not a PEM file" : r == -EFBIG ? "file too large" : strerror(-r));
        return r;
}

/* Load tokens and TLS material, and refuse a TCP listener off loopback that
 * nobody guards.  Returns 0, or -1 after logging why. */
static int setup_access(const struct options *o, const int *fds, size_t n_fds, struct access *a)
{
        if (o->token_file || o->read_token_file) {
                char why[1024];
                int r = auth_new(o->token_file, o->read_token_file, &a->auth, why, sizeof(why));
                if (r < 0) {
                        log_err("cannot load tokens: %s", why[0] ? why : strerror(-r));
                        return -1;
                }
                if (why[0])
                        log_warn("tokens: %s", why);
                size_t na, nr;
                auth_count(a->auth, &na, &nr);
                log_info("bearer tokens loaded: %zu admin, %zu read-only", na, nr);
        }
        if (o->tls_cert) {
                if (load_pem("--tls-cert", o->tls_cert, &a->cert) < 0 ||
                    load_pem("--tls-key", o->tls_key, &a->key) < 0)
                        return -1;
        }
        if (o->tls_client_ca && load_pem("--tls-client-ca", o->tls_client_ca, &a->client_ca) < 0)
                return -1;

        if (a->auth || a->client_ca)
                return 0;
        /* Nobody would be asked who they are on TCP: refuse unless the
         * operator said so explicitly, and even then only on loopback. */
        const char *tcp = NULL, *exposed = NULL;
        char desc[64];
        if (n_fds) {
                for (size_t i = 0; i < n_fds; i++) {
                        int is_tcp = http_socket_is_tcp(fds[i]);
                        if (is_tcp == 0)
                                continue;
                        snprintf(desc, sizeof(desc), "passed socket %d", fds[i]);
                        tcp = desc;
                        if (is_tcp < 0 || http_socket_is_loopback(fds[i]) != 1) /* an error counts as exposed */
                                exposed = desc;
                }
        } else if (o->listen) {
                tcp = o->listen;
                int r = http_listen_is_loopback(o->listen);
                if (r < 0) {
                        log_err("--listen %s: %s", o->listen,
                                r == -EINVAL ? "expected HOST:PORT" : "cannot resolve the address");
                        return -1;
                }
                if (r == 0)
                        exposed = o->listen;
        }
        if (exposed) {
                log_err("refusing to listen on %s without authentication: it is not a loopback address; "
                        "give --token-file/--read-token-file or --tls-client-ca, or listen on 127.0.0.1",
                        exposed);
                return -1;
        }
        if (tcp && !o->allow_unauthenticated_tcp) {
                log_err("refusing TCP listener %s without authentication: give --token-file/--read-token-file "
                        "or --tls-client-ca, use the unix socket, or accept the risk with "
                        "--allow-unauthenticated-tcp (loopback only)",
                        tcp);
                return -1;
        }
        if (tcp)
                log_warn("TCP listener %s asks for no token or certificate (--allow-unauthenticated-tcp): "
                         "every local user and every container sharing the host network has admin access",
                         tcp);
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

/* glibc's allocator as it comes keeps what a host of many pools frees: each
 * thread that allocates gets an arena of its own (up to eight per CPU) that
 * holds on to its high-water mark, and after a large block is freed it
 * raises the size above which blocks are mmapped, so the transient buffers
 * of a long list or a journal snapshot end up kept in some arena.  Measured
 * with 1000 pools: about 10 MiB of RSS that nothing used.  Two arenas (the
 * HTTP thread and everybody else rarely contend: the registry has one lock
 * anyway), a fixed mmap threshold and trimming above it keep RSS close to
 * what is live.  1 MiB: the journal's snapshot of 1000 rows (under 0.5 MiB,
 * built on every save) stays in an arena and is reused instead of being
 * mapped and faulted in each time; a long list's views are mapped. */
#define MALLOC_ARENAS 2
#define MALLOC_MMAP_THRESHOLD (1024 * 1024)
#define MALLOC_TRIM_THRESHOLD (2 * 1024 * 1024)

static void tune_malloc(void)
{
        /* Each is a hint: a libc that refuses one works as before. */
        (void)mallopt(M_ARENA_MAX, MALLOC_ARENAS);
        (void)mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD);
        (void)mallopt(M_TRIM_THRESHOLD, MALLOC_TRIM_THRESHOLD);
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
        struct access acc = {0};
        int listen_fds[2];
        _cleanup_close_ int lock_fd = -1;
        int r, rc = 1;

        tune_malloc();
        parse_args(argc, argv, &o);

        /* Block the signals we wait for before any thread exists, so every
         * thread inherits the mask and sigwait() below gets them. */
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGPIPE);
        sigaddset(&sigs, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);

        int n_fds = notify_listen_fds(listen_fds, ARRAY_SIZE(listen_fds));
        if (n_fds < 0) {
                log_err("socket activation: %s", n_fds == -E2BIG ? "at most one TCP and one unix socket"
                                                                  : strerror(-n_fds));
                rc = EXIT_CONFIG;
                goto out;
        }
        if (setup_access(&o, listen_fds, (size_t)n_fds, &acc) < 0) {
                rc = EXIT_CONFIG;
                goto out;
        }

        r = sysfs_open(o.sysfs_root, &fs);
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot open sysfs root %s", o.sysfs_root);
                goto out;
        }
        r = topo_load(fs, &topo);
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot read NUMA topology under %s", o.sysfs_root);
                goto out;
        }
        r = mkdir_parents(o.state_dir, 0700);
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot create state dir %s", o.state_dir);
                goto out;
        }
        long holder = 0;
        r = take_lock(o.state_dir, &lock_fd, &holder);
        if (r == -EBUSY) {
                if (holder > 0)
                        log_err("another hpwarmd (pid %ld) is running with state dir %s; not starting", holder,
                                o.state_dir);
                else
                        log_err("another hpwarmd is running with state dir %s; not starting", o.state_dir);
                goto out;
        }
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot lock %s/" LOCK_FILE, o.state_dir);
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
                                : r == -EBUSY     ? "is the mount's root; give a directory of hpwarmd's own inside it "
                                                    "(e.g. .../hpwarm), since unrecorded files there are removed"
                                : r == -ENOTEMPTY ? "holds files but is not an hpwarmd pool directory (no "
                                                    ".hpwarm-pool-dir marker); give an empty or new directory"
                                                  : strerror(-r));
                        goto out;
                }
        }

        r = engine_new(&(struct engine_config){.topo = topo, .threads_per_node = o.threads_per_node}, &engine);
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot start prefault workers");
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
                .release_unmapped_after = o.release_unmapped_after,
                .stock_targets = o.stock,
                .n_stock_targets = o.n_stock,
                .elastic = o.elastic,
                .n_elastic = o.n_elastic,
                .unmapped_sweep_ms = unmapped_sweep_ms(),
                .reset_state = o.reset_state,
        };
        memcpy(pc.mounts, o.mounts, sizeof(o.mounts));
        r = pools_new(&pc, &pools);
        if (r < 0) {
                /* A refused --stock was said already; the state is fine. */
                if (r != -EDOM)
                        log_errno(LOG_ERR, r, "cannot load pool state from %s", o.state_dir);
                goto out;
        }

        app.fs = fs;
        app.topo = topo;
        app.engine = engine;
        app.pools = pools;
        app.memory_floor = o.memory_floor;
        static struct http_metrics http_metrics;
        r = http_metrics_init(&http_metrics);
        if (r < 0)
                goto out;
        app.http_metrics = &http_metrics;

        struct http_config hc = {
                .routes = &api_routes,
                .listen = o.listen, .socket_path = o.socket_path, .socket_gid = o.socket_gid,
                .connection_limit = o.max_connections, .connection_timeout_s = o.connection_timeout_s,
                .max_waits_per_caller = o.max_waits_per_caller,
                .auth = acc.auth, .tls_cert_pem = acc.cert, .tls_key_pem = acc.key,
                .tls_client_ca_pem = acc.client_ca, .n_listen_fds = (size_t)n_fds,
        };
        memcpy(hc.listen_fds, listen_fds, sizeof(listen_fds));
        r = http_start(&hc, &app, &http);
        if (r < 0)
                goto out;

        char topo_desc[512], listeners[512] = "";
        describe_topology(topo, topo_desc, sizeof(topo_desc));
        const char *scheme = acc.cert ? "https" : "http";
        if (n_fds > 0) {
                snprintf(listeners, sizeof(listeners), "%zu socket(s) from the service manager", (size_t)n_fds);
                if (http_tcp_port(http))
                        snprintf(listeners + strlen(listeners), sizeof(listeners) - strlen(listeners),
                                 " (TCP port %u, %s)", http_tcp_port(http), scheme);
        } else {
                if (o.listen) {
                        char host[256];
                        snprintf(host, sizeof(host), "%s", o.listen);
                        char *colon = strrchr(host, ':');
                        if (colon)
                                *colon = '\0';
                        snprintf(listeners, sizeof(listeners), "%s://%s:%u", scheme, host, http_tcp_port(http));
                }
                if (o.socket_path)
                        snprintf(listeners + strlen(listeners), sizeof(listeners) - strlen(listeners),
                                 "%sunix:%s", listeners[0] ? " " : "", o.socket_path);
        }
        /* The one start-up line: what serves, on which topology, and the
         * zeroing routine the CPU gave recycles (engine_zero_routine), which
         * a bench or a slow recycle needs to be read against. */
        log_notice("hpwarmd %s listening on %s; %s; %zu pool dir(s); zeroing routine %s", HPW_VERSION, listeners,
                   topo_desc, o.n_mounts, engine_zero_routine(engine));
        char status[600];
        snprintf(status, sizeof(status), "Serving on %s", listeners);
        notify_ready(status);
        unsigned long long wd_usec = 0;
        r = notify_watchdog_start(&wd_usec);
        if (r < 0)
                log_errno(LOG_WARN, r, "cannot start the watchdog pings");
        else if (wd_usec)
                log_info("watchdog: pinging every %llu ms", wd_usec / 2000);

        for (;;) {
                int sig;
                if (sigwait(&sigs, &sig) != 0)
                        continue;
                if (sig == SIGPIPE)
                        continue;
                if (sig == SIGHUP) {
                        if (!acc.auth) {
                                log_info("SIGHUP: no token files to reload");
                                continue;
                        }
                        char why[1024];
                        r = auth_reload(acc.auth, why, sizeof(why));
                        if (r < 0) {
                                log_err("SIGHUP: token reload failed, keeping the old tokens: %s",
                                        why[0] ? why : strerror(-r));
                                continue;
                        }
                        if (why[0])
                                log_warn("tokens: %s", why);
                        size_t na, nr;
                        auth_count(acc.auth, &na, &nr);
                        log_notice("SIGHUP: tokens reloaded: %zu admin, %zu read-only", na, nr);
                        continue;
                }
                log_notice("received %s, stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
                break;
        }
        /* Mutations that still arrive on open connections answer 503 from
         * here on; no new connections are accepted. */
        atomic_store(&app.stopping, true);
        notify_stopping("Stopping: finishing requests, stopping workers, saving the journal");
        http_quiesce(http);
        rc = 0;
out:
        notify_watchdog_stop();
        http_stop(http);
        pools_free(pools);
        engine_free(engine);
        if (app.http_metrics)
                http_metrics_done(app.http_metrics);
        topo_free(topo);
        sysfs_close(fs);
        access_done(&acc);
        if (rc == 0)
                log_notice("stopped");
        return rc;
}
