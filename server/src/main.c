/* hpwarmd: options -> wiring -> serve until SIGTERM.  The command line is
 * options.c's (the only other exit(): a usage error, --help, --version),
 * tokens and TLS access.c's; this file builds the objects, hands the route
 * table to the transport and runs the signal loop.
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
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "access.h"
#include "api.h"
#include "app.h"
#include "auth.h"
#include "engine.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "options.h"
#include "pools.h"
#include "sysfs.h"
#include "topo.h"
#include "units.h"
#include "util.h"

#define LOCK_FILE "hpwarmd.lock"
/* Exit code for a configuration the daemon refuses to run with (as usage). */
#define EXIT_CONFIG OPTIONS_EXIT_USAGE

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
        struct access_ctx acc = {0};
        int listen_fds[2];
        _cleanup_close_ int lock_fd = -1;
        int r, rc = 1;

        tune_malloc();
        options_parse(argc, argv, &o);

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
        if (access_setup(&o, listen_fds, (size_t)n_fds, &acc) < 0) {
                rc = EXIT_CONFIG;
                goto out;
        }

        r = sysfs_open(o.sysfs_root, &fs);
        if (r < 0) {
                log_errno(LOG_ERR, r, "cannot open sysfs root %s", o.sysfs_root);
                goto out;
        }
        /* Below every path that could write a count, not just those
         * that ask (pools.h, fixed_hugepages). */
        if (o.fixed_hugepages)
                sysfs_forbid_writes(fs);
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
                .unmapped_sweep_ms = options_unmapped_sweep_ms(),
                .reset_state = o.reset_state,
                .fixed_hugepages = o.fixed_hugepages,
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
        app.hugepages_fixed = o.fixed_hugepages;
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
        log_notice("hpwarmd %s listening on %s; %s; %zu pool dir(s); zeroing routine %s%s", HPW_VERSION, listeners,
                   topo_desc, o.n_mounts, engine_zero_routine(engine),
                   o.fixed_hugepages ? "; hugepages fixed (no count is ever written)" : "");
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
