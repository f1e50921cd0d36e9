/* Long-polls over real sockets without a thread each: thousands park, each
 * is answered when its pool is ready or its client hangs up.
 *
 * A private copy of the two-node fixture, the real pool registry and engine
 * with populate stubbed to block until the test lets it go, so one pool stays
 * "warming" exactly as long as the test wants.  The HTTP layer listens on a
 * unix socket and on 127.0.0.1 (no authentication: the caller is the peer
 * uid there, the address here).
 *
 * Rules, each checked with both values printed:
 *   capacity   WAITERS (2000) long-polls from one caller all wait at once
 *   cap        one more from that caller gets 429 too-many-waits with
 *              Retry-After, at once, while the others still wait
 *   per caller another caller (TCP address) may still wait
 *   hang-up    clients that close their socket free their waits at once
 *   wake       when the pool turns ready every waiter is answered 200 ready */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "app.h"
#include "check.h"
#include "engine.h"
#include "http.h"
#include "log.h"
#include "pools.h"
#include "pools_testing.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

#define WAITERS 2000
#define HUNG_UP 100
/* Bounds separate "answered" from "stuck until a 60 s timeout" on a loaded
 * shared machine; they are not latency targets. */
#define PARK_BOUND_S 60
#define ANSWER_BOUND_S 30

extern char **environ;

static char root[] = "/tmp/hpw-test-http-wait-XXXXXX";
static char sock_path[100];

/* ---- populate stub: blocks until released ---- */

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_open;

static int gated_madvise(void *addr, size_t len, int advice)
{
        pthread_mutex_lock(&gate_lock);
        while (!gate_open)
                pthread_cond_wait(&gate_cond, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        return 0;
}

static void open_gate(void)
{
        pthread_mutex_lock(&gate_lock);
        gate_open = true;
        pthread_cond_broadcast(&gate_cond);
        pthread_mutex_unlock(&gate_lock);
}

static long stub_mbind(void *addr, unsigned long len, int mode, const unsigned long *nodemask,
                       unsigned long maxnode, unsigned flags)
{
        return 0;
}

static long stub_move_pages(int pid, unsigned long count, void **pages, const int *nodes, int *status,
                            int flags)
{
        for (unsigned long i = 0; i < count; i++)
                status[i] = 0;
        return 0;
}

static const struct engine_ops gated_ops = {
        .madvise = gated_madvise,
        .mbind = stub_mbind,
        .move_pages = stub_move_pages,
};

/* ---- helpers ---- */

static void run(char *const argv[])
{
        pid_t pid;
        int status;
        CHECK(posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) == 0);
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Deferred (check.h): runs in the runner after the test, however it ended;
 * DATA is the directory's path, made in the test's process. */
static void remove_root(const void *data, size_t len)
{
        char path[sizeof(root)];
        snprintf(path, sizeof(path), "%.*s", (int)len, (const char *)data);
        char *argv[] = {"rm", "-rf", path, NULL};
        pid_t pid;
        if (posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) == 0)
                waitpid(pid, NULL, 0);
}

static double now_s(void)
{
        return (double)now_mono_ns() / 1e9;
}

static int connect_unix(void)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        memcpy(sa.sun_path, sock_path, sizeof(sock_path));
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
        return fd;
}

static int connect_tcp(uint16_t port)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(fd >= 0);
        CHECK_INT(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
        return fd;
}

static void send_wait(int fd)
{
        static const char req[] = "GET /v1/pools/p1?wait=ready&timeout=120 HTTP/1.1\r\nHost: x\r\n\r\n";
        CHECK_INT(write(fd, req, sizeof(req) - 1), ==, (long long)(sizeof(req) - 1));
}

/* Read FD until a whole response (headers + Content-Length body) or BOUND_S
 * passes; returns the bytes read (NUL-terminated, caller frees). */
static char *read_response(int fd, double bound_s)
{
        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        CHECK(buf);
        double until = now_s() + bound_s;
        for (;;) {
                buf[len] = '\0';
                char *eoh = strstr(buf, "\r\n\r\n");
                if (eoh) {
                        const char *cl = strcasestr(buf, "Content-Length:");
                        size_t want = cl ? strtoul(cl + 15, NULL, 10) : 0;
                        if (len >= (size_t)(eoh + 4 - buf) + want)
                                return buf;
                }
                int left = (int)((until - now_s()) * 1000);
                if (left <= 0)
                        return buf;
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (poll(&p, 1, left) <= 0)
                        continue;
                if (len + 1024 >= cap) {
                        cap *= 2;
                        buf = realloc(buf, cap);
                        CHECK(buf);
                }
                ssize_t n = read(fd, buf + len, cap - len - 1);
                if (n <= 0)
                        return buf;
                len += (size_t)n;
        }
}

static void wait_parked(struct http *h, size_t want)
{
        double until = now_s() + PARK_BOUND_S;
        while (http_parked(h) != want && now_s() < until)
                usleep(20 * 1000);
        CHECK_U64(http_parked(h), ==, want);
}

/* None of FDS has anything to read: they are all still waiting. */
static void check_all_waiting(const int *fds, size_t n)
{
        struct pollfd *p = calloc(n, sizeof(*p));
        CHECK(p);
        for (size_t i = 0; i < n; i++)
                p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        CHECK_INT(poll(p, n, 0), ==, 0);
        free(p);
}

/* The rules share one warming pool and one set of sockets, each step
 * building on the one before, so they are one registered test: forked by the
 * runner (check.h), so a crash fails it with its name and the runner still
 * removes the private tree. */
TEST(long_polls_park_cap_per_caller_hang_up_and_wake)
{
        const char *fixtures = getenv("HPW_FIXTURES");

        /* ---- a pool that stays warming ---- */
        CHECK(mkdtemp(root));
        test_defer(remove_root, root, strlen(root));
        char from[4096], sys[300], m2[300], m1g[300], state[300], boot[300];
        snprintf(from, sizeof(from), "%s/two-node/.", fixtures);
        snprintf(sys, sizeof(sys), "%s/sys", root);
        snprintf(m2, sizeof(m2), "%s/mnt-2M", root);
        snprintf(m1g, sizeof(m1g), "%s/mnt-1G", root);
        snprintf(state, sizeof(state), "%s/state", root);
        snprintf(boot, sizeof(boot), "%s/boot_id", root);
        snprintf(sock_path, sizeof(sock_path), "%s/api.sock", root);
        CHECK_INT(mkdir(sys, 0700), ==, 0);
        CHECK_INT(mkdir(state, 0700), ==, 0);
        char *cp[] = {"cp", "-R", from, sys, NULL};
        run(cp);
        FILE *f = fopen(boot, "w");
        CHECK(f);
        fputs("0f0f0f0f-1111-2222-3333-444444444444\n", f);
        fclose(f);

        struct sysfs *fs;
        struct topo *topo;
        struct engine *engine;
        struct pools *pools;
        CHECK_INT(sysfs_open(sys, &fs), ==, 0);
        CHECK_INT(topo_load(fs, &topo), ==, 0);
        struct engine_config ec = {.topo = topo, .threads_per_node = 1, .ops = &gated_ops};
        CHECK_INT(engine_new(&ec, &engine), ==, 0);
        struct pools_config pc = {
                .fs = fs, .topo = topo, .engine = engine, .state_dir = state, .boot_id_path = boot,
                .mounts = {{.page_size = 2 * MIB, .dir = m2}, {.page_size = GIB, .dir = m1g}},
                .n_mounts = 2, .pool_gid = (gid_t)-1, .memory_floor = RESERVE_FLOOR_AUTO,
                .skip_mount_check = true,
        };
        CHECK_INT(pools_new(&pc, &pools), ==, 0);
        struct app app = {.fs = fs, .topo = topo, .engine = engine, .pools = pools,
                          .memory_floor = RESERVE_FLOOR_AUTO};

        static const char body[] = "{\"node\":0,\"size\":\"4M\",\"page_size\":\"2M\"}";
        int status;
        char *rbody;
        const char *rct;
        CHECK_INT(http_handle_local(&api_routes, &app, "PUT", "/v1/pools/p1", "application/json", body, strlen(body),
                                    &status, &rbody, &rct), ==, 0);
        CHECK_INT(status, ==, 201);
        CHECK(strstr(rbody, "\"warming\""));
        free(rbody);

        struct http_config hc = {
                .routes = &api_routes,
                .listen = "127.0.0.1:0", .socket_path = sock_path, .socket_gid = (gid_t)-1,
                .connection_limit = 3 * WAITERS, .connection_timeout_s = 120,
                .max_waits_per_caller = WAITERS,
        };
        struct http *h;
        CHECK_INT(http_start(&hc, &app, &h), ==, 0);

        /* capacity: WAITERS long-polls from one caller (this uid) all park. */
        int *fds = calloc(WAITERS, sizeof(int));
        CHECK(fds);
        double t0 = now_s();
        for (int i = 0; i < WAITERS; i++) {
                fds[i] = connect_unix();
                send_wait(fds[i]);
        }
        wait_parked(h, WAITERS);
        fprintf(stderr, "capacity: %d long-polls parked in %.1f s\n", WAITERS, now_s() - t0);
        check_all_waiting(fds, WAITERS);

        /* cap: one more from the same caller: 429 at once, others still wait. */
        int extra = connect_unix();
        send_wait(extra);
        t0 = now_s();
        char *r = read_response(extra, 10);
        fprintf(stderr, "cap: answered in %.2f s: %.80s\n", now_s() - t0, r);
        CHECK(strncmp(r, "HTTP/1.1 429", 12) == 0);
        CHECK(strcasestr(r, "Retry-After: 5"));
        CHECK(strcasestr(r, "Content-Type: application/problem+json"));
        CHECK(strstr(r, "urn:hpwarm:problem:too-many-waits"));
        free(r);
        close(extra);
        check_all_waiting(fds, WAITERS);
        CHECK_U64(http_parked(h), ==, WAITERS);

        /* per caller: another caller (TCP 127.0.0.1) may still wait. */
        int other = connect_tcp(http_tcp_port(h));
        send_wait(other);
        wait_parked(h, WAITERS + 1);

        /* hang-up: closed clients free their waits at once. */
        for (int i = 0; i < HUNG_UP; i++) {
                close(fds[i]);
                fds[i] = -1;
        }
        t0 = now_s();
        wait_parked(h, WAITERS + 1 - HUNG_UP);
        fprintf(stderr, "hang-up: %d waits dropped in %.2f s\n", HUNG_UP, now_s() - t0);
        /* ... and the caller may wait again in their place. */
        int again = connect_unix();
        send_wait(again);
        wait_parked(h, WAITERS + 2 - HUNG_UP);

        /* wake: the pool turns ready, every waiter is answered. */
        t0 = now_s();
        open_gate();
        int answered = 0, ready = 0;
        for (int i = HUNG_UP; i <= WAITERS + 1; i++) {
                int fd = i < WAITERS ? fds[i] : i == WAITERS ? other : again;
                char *resp = read_response(fd, ANSWER_BOUND_S);
                if (strncmp(resp, "HTTP/1.1 200", 12) == 0)
                        answered++;
                if (strstr(resp, "\"state\":\"ready\""))
                        ready++;
                free(resp);
                close(fd);
        }
        fprintf(stderr, "wake: %d answered, %d ready, in %.1f s\n", answered, ready, now_s() - t0);
        CHECK_INT(answered, ==, WAITERS + 2 - HUNG_UP);
        CHECK_INT(ready, ==, WAITERS + 2 - HUNG_UP);
        CHECK_U64(http_parked(h), ==, 0);

        http_stop(h);
        free(fds);
        CHECK_INT(pools_delete(pools, "p1", NULL), ==, 0);
        pools_free(pools);
        engine_free(engine);
        topo_free(topo);
        sysfs_close(fs);
}

int main(void)
{
        if (!getenv("HPW_FIXTURES"))
                SKIP("HPW_FIXTURES not set");
        struct rlimit rl;
        CHECK_INT(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
        if (rl.rlim_cur < 3 * WAITERS) {
                rl.rlim_cur = rl.rlim_max;
                setrlimit(RLIMIT_NOFILE, &rl);
                CHECK_INT(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
                if (rl.rlim_cur < 3 * WAITERS)
                        SKIP("RLIMIT_NOFILE too low for the waiters");
        }
        log_set_max_level(LOG_WARN);
        return test_run_all();
}
