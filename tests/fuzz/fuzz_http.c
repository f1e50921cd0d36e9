/* Fuzz target: one request through routing and handlers, without a socket
 * (http_handle_local), against a live app: a private copy of the two-node
 * fixture for sysfs, a temp dir standing in for each hugetlbfs mount, the
 * real pool registry and the real engine with its populate call stubbed out
 * (a pool is ready as soon as its chunks are handed out, so long-polls return
 * at once and a hang is a bug, not a slow input).
 *
 * Input layout, chosen so seeds stay readable: up to MAX_REQUESTS requests
 * separated by the line "\n===\n" (so sequences such as PUT, wait, claim,
 * DELETE on one pool are reachable), each one
 *   byte 0   method     (b - '0') % N_METHODS
 *   byte 1   URL prefix (b - '0') % N_PREFIXES
 *   byte 2   content type (b - '0') % N_CTYPES
 *   then     URL suffix up to the first '\n' (a NUL ends the URL, as it would
 *            on the wire), then the body: every byte after that '\n'.
 *
 * Invariants: status is 200..599; every status >= 400 comes as
 * application/problem+json with string type/title/detail and a numeric
 * status equal to the HTTP one; every 2xx JSON body parses (204 has none);
 * /metrics answers text.  After each input every pool is deleted, and the
 * pool directories must then be empty: no request sequence leaks a file.
 * The sysfs counters the reserve path writes are put back after each input
 * so inputs do not depend on each other.
 *
 * Each request also goes through the access decision (authz.c) with the
 * listener and credentials drawn from a hash of its bytes, and the decision
 * must keep its invariants (check_authz). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api.h"
#include "app.h"
#include "audit.h"
#include "authz.h"
#include "engine.h"
#include "fake_engine.h"
#include "fuzz.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "pools.h"
#include "pools_testing.h"
#include "sysfs.h"
#include "topo.h"
#include "util.h"

/* A little over the body limit, so "too large" is reachable, no more. */
#define FUZZ_MAX_INPUT (HTTP_BODY_MAX + 16 * 1024)
/* nr_hugepages-like files the reserve path may write; the fixture has 12. */
#define MAX_SAVED_FILES 32
#define SAVED_FILE_MAX 64
#define MAX_REQUESTS 8
#define SEPARATOR "\n===\n"

#ifndef HPW_FIXTURES_DIR
#define HPW_FIXTURES_DIR ""
#endif

extern char **environ;

static const char *const methods[] = {
        "GET", "PUT", "POST", "DELETE", "HEAD", "PATCH", "OPTIONS", "get", "", "PUT\r\nX: y",
};
static const char *const prefixes[] = {
        "",
        "/v1/health",
        "/v1/nodes",
        "/v1/nodes/",
        "/v1/nodes/0/hugepages/",
        "/v1/pools",
        "/v1/pools/",
        "/v1/pools/fz/claim",
        "/metrics",
        "/v1/pools/fz",
        "/v1/nodes/1",
        "/v1/nodes/0/hugepages/2M",
};
static const char *const ctypes[] = {
        NULL,
        "application/json",
        "application/json; charset=utf-8",
        "text/plain",
        "APPLICATION/JSON",
        "application/jsonx",
        "",
};

static struct {
        bool ready;
        bool verbose;           /* $HPW_FUZZ_VERBOSE: print each exchange */
        char root[64];
        char sys[128], mnt2m[128], mnt1g[128], state[128], boot[128];
        struct sysfs *fs;
        struct topo *topo;
        struct engine *engine;
        struct pools *pools;
        struct app app;
        struct http_metrics http_metrics;
        struct {
                char path[512];
                char text[SAVED_FILE_MAX];
        } saved[MAX_SAVED_FILES];
        size_t n_saved;
} g;

/* ---- setup and teardown ---- */

static void remove_root(void);

static void die(const char *what, int err)
{
        fprintf(stderr, "fuzz_http: %s: %s\n", what, strerror(err));
        remove_root();
        abort();
}

static void run(char *const argv[])
{
        pid_t pid;
        int status;

        if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0 ||
            waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                die(argv[0], EIO);
}

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        if (!f || fputs(text, f) < 0 || fclose(f) != 0)
                die(path, errno);
}

static void read_text(const char *path, char *buf, size_t len)
{
        FILE *f = fopen(path, "r");
        size_t n;

        if (!f)
                die(path, errno);
        n = fread(buf, 1, len - 1, f);
        buf[n] = '\0';
        fclose(f);
}

static int save_counter(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        const char *base = path + ftw->base;

        if (type != FTW_F || (strcmp(base, "nr_hugepages") != 0 &&
                              strcmp(base, "nr_overcommit_hugepages") != 0))
                return 0;
        if (g.n_saved == MAX_SAVED_FILES)
                die("too many counter files in the fixture", ENOSPC);
        snprintf(g.saved[g.n_saved].path, sizeof(g.saved[0].path), "%s", path);
        read_text(path, g.saved[g.n_saved].text, sizeof(g.saved[0].text));
        g.n_saved++;
        return 0;
}

static void restore_counters(void)
{
        for (size_t i = 0; i < g.n_saved; i++) {
                char now[SAVED_FILE_MAX];

                read_text(g.saved[i].path, now, sizeof(now));
                if (strcmp(now, g.saved[i].text) != 0)
                        write_text(g.saved[i].path, g.saved[i].text);
        }
}

/* Before an abort too, so a failing input leaves no tree in /dev/shm
 * (a sanitizer report still does: it exits without running this). */
static void remove_root(void)
{
        static bool removing;

        if (removing || !g.root[0])
                return;
        removing = true;
        char *argv[] = { "rm", "-rf", g.root, NULL };
        pid_t pid;
        if (posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) == 0)
                waitpid(pid, NULL, 0);
        g.root[0] = '\0';
}

static void teardown(void)
{
        if (!g.ready)
                return;
        pools_free(g.pools);
        engine_free(g.engine);
        http_metrics_done(&g.http_metrics);
        topo_free(g.topo);
        sysfs_close(g.fs);
        remove_root();
        g.ready = false;
}

static void setup(void)
{
        const char *src = getenv("HPW_FIXTURES");
        char from[4096];
        int r;

        if (!src || !*src)
                src = HPW_FIXTURES_DIR;
        snprintf(from, sizeof(from), "%s/two-node/.", src);
        if (access(from, R_OK) != 0)
                die(from, errno);

        snprintf(g.root, sizeof(g.root), "/dev/shm/hpw-fuzz-http.XXXXXX");
        if (!mkdtemp(g.root)) {
                snprintf(g.root, sizeof(g.root), "/tmp/hpw-fuzz-http.XXXXXX");
                if (!mkdtemp(g.root))
                        die("mkdtemp", errno);
        }
        snprintf(g.sys, sizeof(g.sys), "%s/sys", g.root);
        snprintf(g.mnt2m, sizeof(g.mnt2m), "%s/mnt-2M", g.root);
        snprintf(g.mnt1g, sizeof(g.mnt1g), "%s/mnt-1G", g.root);
        snprintf(g.state, sizeof(g.state), "%s/state", g.root);
        snprintf(g.boot, sizeof(g.boot), "%s/boot_id", g.root);
        if (mkdir(g.sys, 0700) < 0 || mkdir(g.state, 0700) < 0)
                die("mkdir", errno);
        char *argv[] = { "cp", "-R", from, g.sys, NULL };
        run(argv);
        write_text(g.boot, "0f0f0f0f-1111-2222-3333-444444444444\n");
        if (nftw(g.sys, save_counter, 16, FTW_PHYS) != 0)
                die("nftw", errno);
        atexit(teardown);

        /* Quiet: the core logs every refused request at info or below. */
        log_set_max_level(LOG_ERR);
        if ((r = sysfs_open(g.sys, &g.fs)) < 0)
                die("sysfs_open", -r);
        if ((r = topo_load(g.fs, &g.topo)) < 0)
                die("topo_load", -r);
        struct engine_config ec = { .topo = g.topo, .threads_per_node = 1, .ops = fake_engine_stub_ops() };
        if ((r = engine_new(&ec, &g.engine)) < 0)
                die("engine_new", -r);
        struct pools_config pc = {
                .fs = g.fs,
                .topo = g.topo,
                .engine = g.engine,
                .state_dir = g.state,
                .boot_id_path = g.boot,
                .mounts = { { .page_size = 2 * MIB, .dir = g.mnt2m },
                            { .page_size = GIB, .dir = g.mnt1g } },
                .n_mounts = 2,
                .pool_gid = (gid_t)-1,
                .memory_floor = RESERVE_FLOOR_AUTO,
                .skip_mount_check = true,
        };
        if ((r = pools_new(&pc, &g.pools)) < 0)
                die("pools_new", -r);
        if ((r = http_metrics_init(&g.http_metrics)) < 0)
                die("http_metrics_init", -r);
        g.app.http_metrics = &g.http_metrics;
        g.app.fs = g.fs;
        g.app.topo = g.topo;
        g.app.engine = g.engine;
        g.app.pools = g.pools;
        g.app.memory_floor = RESERVE_FLOOR_AUTO;
        g.verbose = getenv("HPW_FUZZ_VERBOSE") != NULL;
        g.ready = true;
}

/* ---- invariants ---- */

static void fail(const char *why, const char *url, int status, const char *body)
{
        fprintf(stderr, "fuzz_http: %s\n  url: %s\n  status: %d\n  body: %.300s\n", why, url, status,
                body ? body : "(null)");
        remove_root();
        abort();
}

static void check_response(const char *url, int status, const char *body, const char *ct)
{
        struct json *v = NULL;

        if (status < 200 || status > 599)
                fail("status out of range", url, status, body);
        if (!ct)
                fail("no content type", url, status, body);
        if (status >= 400) {
                const char *s;
                uint64_t st;

                if (strcmp(ct, "application/problem+json") != 0)
                        fail("error without a problem content type", url, status, body);
                if (!body || json_parse(body, strlen(body), &v) != 0)
                        fail("problem body is not JSON", url, status, body);
                if (json_get_str(v, "type", &s) != 0 || strncmp(s, "urn:hpwarm:problem:", 19) != 0 ||
                    json_get_str(v, "title", &s) != 0 || !*s || json_get_str(v, "detail", &s) != 0 ||
                    json_get_u64(v, "status", &st) != 0 || st != (uint64_t)status)
                        fail("problem body lacks type/title/status/detail", url, status, body);
                json_free(v);
                return;
        }
        if (status >= 300)
                fail("unexpected 3xx", url, status, body);
        if (status == 204) {
                if (body && *body)
                        fail("204 with a body", url, status, body);
                return;
        }
        if (strncmp(ct, "text/plain", 10) == 0) {
                if (!body)
                        fail("text response without a body", url, status, body);
                return;
        }
        if (strcmp(ct, "application/json") != 0)
                fail("2xx with an unexpected content type", url, status, body);
        if (!body || json_parse(body, strlen(body), &v) != 0 || !json_is_object(v))
                fail("2xx body is not a JSON object", url, status, body);
        json_free(v);
}

static void check_dir_empty(const char *dir)
{
        DIR *d = opendir(dir);
        struct dirent *e;

        if (!d)
                return; /* not created yet: no pool ever used it */
        while ((e = readdir(d))) {
                if (strcmp(e->d_name, POOLS_STOCK_DIR) == 0) {
                        /* The stock directory stays, empty. */
                        char sub[PATH_MAX];
                        snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
                        check_dir_empty(sub);
                        continue;
                }
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                    strcmp(e->d_name, POOLS_DIR_MARKER) != 0) {
                        fprintf(stderr, "fuzz_http: %s/%s left behind after deleting every pool\n", dir,
                                e->d_name);
                        remove_root();
                        abort();
                }
        }
        closedir(d);
}

/* Delete every pool, then nothing may be left in the pool dirs. */
static void reset(void)
{
        struct pool_view *views = NULL;
        size_t n = 0;
        int r;

        if ((r = pools_list(g.pools, &views, &n)) < 0)
                die("pools_list", -r);
        for (size_t i = 0; i < n; i++) {
                r = pools_delete(g.pools, views[i].name, NULL);
                if (r < 0 && r != -ENOENT)
                        die("pools_delete", -r);
        }
        free(views);
        check_dir_empty(g.mnt2m);
        check_dir_empty(g.mnt1g);
        restore_counters();
}

/* The access rules that must hold whatever the input. */
static void check_authz(const char *method, const char *url, const uint8_t *data, size_t size)
{
        uint32_t h = 2166136261u; /* FNV-1a */
        for (size_t i = 0; i < size; i++)
                h = (h ^ data[i]) * 16777619u;
        struct authz_input in = {
                .listener = (h & 1) ? AUTHZ_TCP : AUTHZ_UNIX,
                .cert = (enum authz_cert)((h >> 1) % 4),
                .tokens_configured = (h >> 3) & 1,
                .token_sent = (h >> 4) & 1,
                .token_role = (enum auth_role)((h >> 5) % 3),
                .open_route = (strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0) &&
                              strcmp(url, "/v1/health") == 0,
                .mutation = audit_is_mutation(method),
                .stopping = (h >> 7) & 1,
        };
        if (in.listener == AUTHZ_UNIX)
                in.cert = AUTHZ_CERT_NOT_REQUIRED;
        if (!in.token_sent)
                in.token_role = AUTH_NONE;
        enum authz_decision d = authz_decide(&in);
        int st = authz_status(d);
        const char *why = NULL;

        if (in.listener == AUTHZ_UNIX && (st == 401 || st == 403))
                why = "unix socket caller refused as unauthenticated";
        else if (in.listener == AUTHZ_TCP && in.open_route && d != AUTHZ_ALLOW)
                why = "the open route was refused";
        else if (d == AUTHZ_ALLOW && in.mutation && in.stopping)
                why = "a mutation allowed while stopping";
        else if (d == AUTHZ_ALLOW && in.listener == AUTHZ_TCP && !in.open_route &&
                 ((in.tokens_configured && in.token_role == AUTH_NONE) || in.cert == AUTHZ_CERT_MISSING ||
                  in.cert == AUTHZ_CERT_INVALID))
                why = "TCP caller without a valid credential allowed";
        else if (d == AUTHZ_ALLOW && in.mutation && in.listener == AUTHZ_TCP && in.tokens_configured &&
                 in.token_role != AUTH_ADMIN)
                why = "a read-only token allowed to mutate";
        else if (d != AUTHZ_ALLOW && st != 401 && st != 403 && st != 503)
                why = "a refusal with an unexpected status";
        if (why)
                fail(why, url, st, NULL);
}

static void one_request(const uint8_t *data, size_t size)
{
        const char *method, *prefix, *ct, *nl, *body = "";
        size_t suffix_len, body_len = 0, prefix_len;
        char *url, *resp_body = NULL;
        const char *resp_ct = NULL;
        int status = 0;

        if (size < 3)
                return;
        method = methods[(uint8_t)(data[0] - '0') % ARRAY_SIZE(methods)];
        prefix = prefixes[(uint8_t)(data[1] - '0') % ARRAY_SIZE(prefixes)];
        ct = ctypes[(uint8_t)(data[2] - '0') % ARRAY_SIZE(ctypes)];
        data += 3;
        size -= 3;
        nl = memchr(data, '\n', size);
        suffix_len = nl ? (size_t)((const uint8_t *)nl - data) : size;
        if (nl) {
                body = nl + 1;
                body_len = size - suffix_len - 1;
        }
        prefix_len = strlen(prefix);
        url = malloc(prefix_len + suffix_len + 1);
        if (!url)
                return;
        memcpy(url, prefix, prefix_len);
        memcpy(url + prefix_len, data, suffix_len);
        url[prefix_len + suffix_len] = '\0';

        check_authz(method, url, data, size);
        if (http_handle_local(&api_routes, &g.app, method, url, ct, body, body_len, &status, &resp_body, &resp_ct) != 0)
                fail("http_handle_local failed", url, 0, NULL);
        check_response(url, status, resp_body, resp_ct);
        if (g.verbose)
                fprintf(stderr, "%s %s -> %d %.200s\n", method, url, status, resp_body ? resp_body : "");
        free(resp_body);
        free(url);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const size_t sep_len = strlen(SEPARATOR);

        if (size > FUZZ_MAX_INPUT)
                return 0;
        if (!g.ready)
                setup();
        for (unsigned i = 0; i < MAX_REQUESTS && size; i++) {
                const uint8_t *sep = memmem(data, size, SEPARATOR, sep_len);
                size_t len = sep ? (size_t)(sep - data) : size;

                one_request(data, len);
                if (!sep)
                        break;
                data += len + sep_len;
                size -= len + sep_len;
        }
        reset();
        return 0;
}
