/* hpw-qemu-check: the checks that run inside the two-node QEMU guest.
 *
 *   hpw-qemu-check --list
 *   hpw-qemu-check --port PORT -- /bin/hpwarmd ARGS...
 *
 * It starts the daemon itself (so it knows the pid whose threads it inspects
 * and can check the exit status after SIGTERM), drives it over HTTP on
 * 127.0.0.1:PORT and compares every answer with what the kernel says in /sys
 * and /proc.  Each check prints exactly one line on stdout,
 *   HPWARM-CHECK PASS <name>      or      HPWARM-CHECK FAIL <name>: why
 * and the host side (run.sh) fails on any FAIL or on a name from --list that
 * never printed.  A check whose precondition broke (daemon died) still
 * prints FAIL, so the serial log says why, not just what is missing.
 *
 * Why C rather than busybox sh: the answers are JSON, busybox has no JSON
 * tool, and matching "free": N with sed is exactly the kind of check that
 * passes for the wrong reason.  The HTTP client is a few lines over a socket
 * (HTTP/1.1, Connection: close) so the guest needs no libcurl and its
 * dozens of libraries.
 *
 * Sizes are chosen for the guest run.sh boots: 512 2 MiB pages on node 0,
 * 128 on node 1 and one 1 GiB page on node 1.  Keep them in step with run.sh. */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define PAGE_2M (UINT64_C(2) << 20)
#define PAGE_1G (UINT64_C(1) << 30)
#define N_NODES 2

/* Pages per pool in the concurrent warm.  Big enough that, even at TCG speed,
 * the node 0 pool is still warming when the node 1 pool has been created, so
 * "at the same time" is observed, not assumed (about 2 s of warming at the
 * ~0.4 GiB/s a TCG guest reaches: creating qn1 and asking about qn0 took
 * longer than the 0.5 s a 224 MiB pool lasted); small enough to leave room
 * on each node (512 boot pages on node 0; 128 + 16 reserved on node 1). */
#define WARM_PAGES_N0 496
#define WARM_PAGES_N1 128
/* Pages reserve-node1 adds to node 1's 2 MiB pool. */
#define RESERVE_EXTRA 16
/* Seconds to wait for the daemon to answer /v1/health after exec. */
#define START_TIMEOUT_S 30
/* Long-poll timeout for a warm; a 1 GiB first touch under TCG takes seconds. */
#define WARM_TIMEOUT_S 120
/* Socket timeout: above the long-poll timeout so the server answers first. */
#define IO_TIMEOUT_S (WARM_TIMEOUT_S + 30)

struct ctx {
        int port;
        pid_t daemon;           /* 0 once reaped */
        int daemon_status;
        char why[1024];
};

/* ---- reporting -------------------------------------------------------- */

/* Record why a check failed and return -1, so a check is a list of
 * `if (bad) return fail(c, "...")`. */
__attribute__((format(printf, 2, 3))) static int fail(struct ctx *c, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->why, sizeof(c->why), fmt, ap);
        va_end(ap);
        return -1;
}

/* ---- /sys and /proc ---------------------------------------------------- */

static int read_file(const char *path, char *buf, size_t size)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        size_t n = fread(buf, 1, size - 1, f);
        int err = ferror(f) ? -EIO : 0;
        fclose(f);
        if (err)
                return err;
        buf[n] = '\0';
        while (n > 0 && isspace((unsigned char)buf[n - 1]))
                buf[--n] = '\0';
        return 0;
}

static int read_u64(const char *path, uint64_t *ret)
{
        char buf[64], *end;
        int r = read_file(path, buf, sizeof(buf));
        if (r < 0)
                return r;
        errno = 0;
        unsigned long long v = strtoull(buf, &end, 10);
        if (errno || end == buf || *end)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* nodeN/hugepages/hugepages-<kB>kB/<what>_hugepages, or UINT64_MAX if absent
 * (a test then fails on the comparison, with the value in the message). */
static uint64_t sys_hp(int node, uint64_t page_size, const char *what)
{
        char path[256];
        uint64_t v;
        snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/hugepages/hugepages-%" PRIu64 "kB/%s_hugepages",
                 node, page_size >> 10, what);
        return read_u64(path, &v) < 0 ? UINT64_MAX : v;
}

/* A snapshot of every counter we compare: [node][0 = 2M, 1 = 1G]. */
struct counts {
        uint64_t nr[N_NODES][2], free[N_NODES][2];
};
static const uint64_t page_sizes[2] = {PAGE_2M, PAGE_1G};

static void counts_read(struct counts *s)
{
        for (int n = 0; n < N_NODES; n++)
                for (int p = 0; p < 2; p++) {
                        s->nr[n][p] = sys_hp(n, page_sizes[p], "nr");
                        s->free[n][p] = sys_hp(n, page_sizes[p], "free");
                }
}

/* Every counter equal, except those the caller lists as expected to move. */
struct moved {
        int node, psi;
        int64_t nr_delta, free_delta;
};

static int counts_expect(struct ctx *c, const struct counts *before, const struct counts *after,
                         const struct moved *m, size_t n_moved)
{
        for (int n = 0; n < N_NODES; n++)
                for (int p = 0; p < 2; p++) {
                        int64_t dnr = 0, dfree = 0;
                        for (size_t i = 0; i < n_moved; i++)
                                if (m[i].node == n && m[i].psi == p) {
                                        dnr = m[i].nr_delta;
                                        dfree = m[i].free_delta;
                                }
                        if (after->nr[n][p] != before->nr[n][p] + dnr)
                                return fail(c, "node%d %s nr_hugepages %" PRIu64 " -> %" PRIu64 ", expected change %+" PRId64,
                                            n, p ? "1G" : "2M", before->nr[n][p], after->nr[n][p], dnr);
                        if (after->free[n][p] != before->free[n][p] + dfree)
                                return fail(c, "node%d %s free_hugepages %" PRIu64 " -> %" PRIu64 ", expected change %+" PRId64,
                                            n, p ? "1G" : "2M", before->free[n][p], after->free[n][p], dfree);
                }
        return 0;
}

/* ---- HTTP over a plain socket ------------------------------------------ */

struct resp {
        int status;
        char content_type[128];
        char *body;             /* NUL-terminated, malloc'd */
        cJSON *json;            /* parsed body, NULL if not JSON */
};

static void resp_clear(struct resp *r)
{
        free(r->body);
        cJSON_Delete(r->json);
        memset(r, 0, sizeof(*r));
}

/* Value of header NAME (case-insensitive) in the header block HDR, copied. */
static bool header_get(const char *hdr, const char *name, char *out, size_t size)
{
        size_t len = strlen(name);
        for (const char *p = hdr; p && *p; p = strstr(p, "\r\n"), p = p ? p + 2 : NULL) {
                if (strncasecmp(p, name, len) || p[len] != ':')
                        continue;
                p += len + 1;
                while (*p == ' ' || *p == '\t')
                        p++;
                size_t n = strcspn(p, "\r\n");
                if (n >= size)
                        n = size - 1;
                memcpy(out, p, n);
                out[n] = '\0';
                return true;
        }
        return false;
}

/* Undo chunked transfer coding in place; -EINVAL when malformed. */
static int dechunk(char *body, size_t *len)
{
        char *in = body, *out = body, *end = body + *len;
        for (;;) {
                unsigned long n = strtoul(in, NULL, 16);
                char *eol = strstr(in, "\r\n");
                if (!eol)
                        return -EINVAL;
                in = eol + 2;
                if (n == 0)
                        break;
                if ((size_t)(end - in) < n + 2)
                        return -EINVAL;
                memmove(out, in, n);
                out += n;
                in += n + 2;
        }
        *len = out - body;
        *out = '\0';
        return 0;
}

/* One request on a fresh connection.  BODY NULL = none.  0 with *r filled,
 * or -errno when nothing usable came back (c->why says what). */
static int http(struct ctx *c, const char *method, const char *target, const char *body, struct resp *r)
{
        memset(r, 0, sizeof(*r));
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                int err = errno;
                fail(c, "socket: %s", strerror(err));
                return -err;
        }
        struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(c->port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int err = errno;
                close(fd);
                fail(c, "%s %s: connect: %s", method, target, strerror(err));
                return -err;
        }

        char *req = NULL;
        size_t blen = body ? strlen(body) : 0;
        int n = body ? asprintf(&req,
                                "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                                "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                                method, target, blen, body)
                     : asprintf(&req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                                method, target);
        if (n < 0) {
                close(fd);
                return fail(c, "out of memory"), -ENOMEM;
        }
        for (int off = 0; off < n;) {
                ssize_t w = write(fd, req + off, n - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0) {
                        int err = errno;
                        free(req);
                        close(fd);
                        fail(c, "%s %s: write: %s", method, target, strerror(err));
                        return -err;
                }
                off += w;
        }
        free(req);

        size_t cap = 4096, len = 0;
        char *buf = malloc(cap);
        for (;;) {
                if (!buf) {
                        close(fd);
                        return fail(c, "out of memory"), -ENOMEM;
                }
                if (cap - len < 2048) {
                        char *bigger = realloc(buf, cap * 2);
                        if (!bigger)
                                free(buf);
                        buf = bigger;
                        cap *= 2;
                } else {
                        ssize_t got = read(fd, buf + len, cap - len - 1);
                        if (got < 0 && errno == EINTR)
                                continue;
                        if (got < 0) {
                                int err = errno;
                                free(buf);
                                close(fd);
                                fail(c, "%s %s: read: %s", method, target,
                                     err == EAGAIN ? "timed out" : strerror(err));
                                return -err;
                        }
                        if (got == 0)
                                break;
                        len += got;
                }
        }
        close(fd);
        buf[len] = '\0';

        char *hdr_end = strstr(buf, "\r\n\r\n");
        int minor;
        if (!hdr_end || sscanf(buf, "HTTP/1.%d %d", &minor, &r->status) != 2) {
                fail(c, "%s %s: not an HTTP response: %.80s", method, target, buf);
                free(buf);
                return -EPROTO;
        }
        *hdr_end = '\0';
        char te[64] = "";
        header_get(buf, "Content-Type", r->content_type, sizeof(r->content_type));
        header_get(buf, "Transfer-Encoding", te, sizeof(te));
        size_t body_len = len - (hdr_end + 4 - buf);
        memmove(buf, hdr_end + 4, body_len + 1);
        if (strcasecmp(te, "chunked") == 0 && dechunk(buf, &body_len) < 0) {
                fail(c, "%s %s: bad chunked body", method, target);
                free(buf);
                return -EPROTO;
        }
        r->body = buf;
        r->json = cJSON_ParseWithLength(buf, body_len);
        return 0;
}

/* http() and insist on STATUS and a JSON body. */
static int http_expect(struct ctx *c, const char *method, const char *target, const char *body, int status,
                       struct resp *r)
{
        if (http(c, method, target, body, r) < 0)
                return -1;
        if (r->status != status) {
                fail(c, "%s %s: status %d, expected %d: %.300s", method, target, r->status, status, r->body);
                resp_clear(r);
                return -1;
        }
        if (!r->json && status != 204) {
                fail(c, "%s %s: body is not JSON: %.200s", method, target, r->body);
                resp_clear(r);
                return -1;
        }
        return 0;
}

/* ---- JSON getters (exact, case-sensitive) ------------------------------ */

static bool j_u64(const cJSON *o, const char *key, uint64_t *ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
            v->valuedouble != (double)(uint64_t)v->valuedouble)
                return false;
        *ret = (uint64_t)v->valuedouble;
        return true;
}

static const char *j_str(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* ---- pools --------------------------------------------------------------- */

static int pool_put(struct ctx *c, const char *name, int node, uint64_t size, const char *page_size, int status,
                    struct resp *r)
{
        char target[128], body[256];
        snprintf(target, sizeof(target), "/v1/pools/%s", name);
        snprintf(body, sizeof(body), "{\"node\": %d, \"size_bytes\": %" PRIu64 ", \"page_size\": \"%s\"}", node,
                 size, page_size);
        return http_expect(c, "PUT", target, body, status, r);
}

/* Long-poll until the pool leaves warming, then insist it is ready, complete
 * and verified on its node. */
static int pool_wait_ready(struct ctx *c, const char *name, uint64_t size, struct resp *r)
{
        char target[160];
        snprintf(target, sizeof(target), "/v1/pools/%s?wait=ready&timeout=%d", name, WARM_TIMEOUT_S);
        if (http_expect(c, "GET", target, NULL, 200, r) < 0)
                return -1;
        const char *state = j_str(r->json, "state");
        uint64_t done = 0;
        if (!state || strcmp(state, "ready"))
                return fail(c, "pool %s is %s, not ready: %.300s", name, state ? state : "(no state)", r->body);
        if (!j_u64(r->json, "bytes_done", &done) || done != size)
                return fail(c, "pool %s bytes_done %" PRIu64 ", size %" PRIu64, name, done, size);
        const cJSON *el = cJSON_GetObjectItemCaseSensitive(r->json, "elapsed_seconds");
        const cJSON *rate = cJSON_GetObjectItemCaseSensitive(r->json, "rate_bytes_per_second");
        printf("HPWARM-INFO pool %s: %" PRIu64 " MiB ready in %.3f s (%.0f MiB/s)\n", name, size >> 20,
               cJSON_IsNumber(el) ? el->valuedouble : -1.0,
               cJSON_IsNumber(rate) ? rate->valuedouble / (1 << 20) : -1.0);
        return 0;
}

static int pool_placement_ok(struct ctx *c, const char *name, const cJSON *pool)
{
        const cJSON *pl = cJSON_GetObjectItemCaseSensitive(pool, "placement");
        const cJSON *verified = cJSON_GetObjectItemCaseSensitive(pl, "verified");
        uint64_t off;
        if (!cJSON_IsTrue(verified))
                return fail(c, "pool %s: placement.verified is not true", name);
        if (!j_u64(pl, "pages_off_node", &off))
                return fail(c, "pool %s: no placement.pages_off_node", name);
        if (off != 0)
                return fail(c, "pool %s: %" PRIu64 " pages off node", name, off);
        return 0;
}

static int pool_delete(struct ctx *c, const char *name)
{
        char target[128];
        struct resp r;
        snprintf(target, sizeof(target), "/v1/pools/%s", name);
        if (http(c, "DELETE", target, NULL, &r) < 0)
                return -1;
        int st = r.status;
        resp_clear(&r);
        if (st != 200 && st != 204)
                return fail(c, "DELETE %s: status %d", target, st);
        if (http(c, "GET", target, NULL, &r) < 0)
                return -1;
        st = r.status;
        resp_clear(&r);
        if (st != 404)
                return fail(c, "GET %s after DELETE: status %d, expected 404", target, st);
        return 0;
}

static bool path_exists(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0;
}

/* ---- worker threads ------------------------------------------------------ */

/* One daemon thread as /proc shows it. */
struct thread_info {
        int tid;
        char comm[32];
        char allowed[64];       /* Cpus_allowed_list */
        int processor;          /* stat field 39: CPU it last ran on */
        uint64_t ticks;         /* stat fields 14 + 15: utime + stime */
};

#define MAX_THREADS 256

static int thread_read(int pid, int tid, struct thread_info *t)
{
        char path[96], buf[4096];
        memset(t, 0, sizeof(*t));
        t->tid = tid;
        t->processor = -1;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
        if (read_file(path, t->comm, sizeof(t->comm)) < 0)
                return -1;
        snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
        if (read_file(path, buf, sizeof(buf)) < 0)
                return -1;
        const char *p = strstr(buf, "\nCpus_allowed_list:");
        if (p)
                sscanf(p, "\nCpus_allowed_list: %63s", t->allowed);
        /* stat is "tid (comm) state ...": fields after the last ')' start at 3. */
        snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
        if (read_file(path, buf, sizeof(buf)) < 0)
                return -1;
        char *q = strrchr(buf, ')'), *save = NULL;
        int field = 2;
        for (char *tok = q ? strtok_r(q + 1, " ", &save) : NULL; tok; tok = strtok_r(NULL, " ", &save)) {
                field++;
                if (field == 14 || field == 15)
                        t->ticks += strtoull(tok, NULL, 10);
                else if (field == 39)
                        t->processor = atoi(tok);
        }
        return 0;
}

/* All threads of PID; returns how many (threads that vanish midway are skipped). */
static size_t threads_read(int pid, struct thread_info *ts, size_t max)
{
        char dir[64];
        size_t n = 0;
        snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
        DIR *d = opendir(dir);
        if (!d)
                return 0;
        struct dirent *de;
        while ((de = readdir(d)) && n < max)
                if (de->d_name[0] != '.' && thread_read(pid, atoi(de->d_name), &ts[n]) == 0)
                        n++;
        closedir(d);
        return n;
}

/* Node a thread works for, from its name ("hpw-n<node>-w<i>", set by the
 * engine with pthread_setname_np), or -1 for any other thread.  Busy threads
 * are also found by the CPU time they spent, so a rename cannot hide one. */
static int worker_node(const char *comm)
{
        int node, idx, len = 0;
        if (sscanf(comm, "hpw-n%d-w%d%n", &node, &idx, &len) == 2 && comm[len] == '\0')
                return node;
        return -1;
}

/* A thread that gained at least this share of the daemon's CPU time during
 * a one-node warm took part in populating.  The HTTP and main threads wait
 * in poll and in the long-poll, but under TCG on a loaded host answering
 * the PUT and the wait was seen to cost an HTTP thread 11% of a 200 MiB
 * warm: a quarter is well above that and well below what any thread that
 * populates gets (the workers that did the work must still account for
 * at least half, below). */
#define WORKER_SHARE_PCT 25
/* Minimum ticks (1/100 s) a warm must cost for the attribution to mean
 * anything; a 200 MiB populate under TCG costs tens of them. */
#define WORKER_MIN_TICKS 3

/* Warm a pool on NODE alone and find who did the work: every thread that
 * spent a real share of the daemon's CPU time meanwhile must be allowed
 * only on the node's CPU (CPUS) and have last run on it (CPU), and such
 * threads must account for most of the time.  Named workers, if any, must
 * obey the same. */
static int check_workers_on(struct ctx *c, int node, const char *cpus, int cpu, uint64_t pages)
{
        static struct thread_info before[MAX_THREADS], after[MAX_THREADS];
        char name[16];
        struct resp r;
        snprintf(name, sizeof(name), "qw%d", node);

        size_t nb = threads_read(c->daemon, before, MAX_THREADS);
        if (nb == 0)
                return fail(c, "cannot read /proc/%d/task", (int)c->daemon);
        if (pool_put(c, name, node, pages * PAGE_2M, "2M", 201, &r) < 0)
                return -1;
        resp_clear(&r);
        int ret = pool_wait_ready(c, name, pages * PAGE_2M, &r);
        resp_clear(&r);
        size_t na = threads_read(c->daemon, after, MAX_THREADS);
        char saved[sizeof(c->why)];
        memcpy(saved, c->why, sizeof(saved));
        int del = pool_delete(c, name);
        if (ret)
                return memcpy(c->why, saved, sizeof(saved)), ret;
        if (del)
                return del;

        uint64_t gain[MAX_THREADS], total = 0, workers_total = 0;
        for (size_t i = 0; i < na; i++) {
                gain[i] = after[i].ticks;
                for (size_t k = 0; k < nb; k++)
                        if (before[k].tid == after[i].tid)
                                gain[i] = after[i].ticks - before[k].ticks;
                total += gain[i];
        }
        if (total < WORKER_MIN_TICKS)
                return fail(c, "warming %" PRIu64 " pages cost the daemon only %" PRIu64 " ticks; cannot attribute",
                            pages, total);
        unsigned workers = 0, named = 0;
        for (size_t i = 0; i < na; i++) {
                const struct thread_info *t = &after[i];
                bool is_named = worker_node(t->comm) == node;
                bool busy = gain[i] * 100 >= total * WORKER_SHARE_PCT;
                if (!is_named && !busy)
                        continue;
                named += is_named;
                if (busy) {
                        workers++;
                        workers_total += gain[i];
                }
                if (strcmp(t->allowed, cpus))
                        return fail(c, "thread %d \"%s\" (%" PRIu64 " of %" PRIu64 " ticks) has Cpus_allowed_list \"%s\", node %d's cpus are \"%s\"",
                                    t->tid, t->comm, gain[i], total, t->allowed, node, cpus);
                if (t->processor != cpu)
                        return fail(c, "thread %d \"%s\" (%" PRIu64 " of %" PRIu64 " ticks) last ran on cpu %d, node %d's cpu is %d",
                                    t->tid, t->comm, gain[i], total, t->processor, node, cpu);
        }
        if (named == 0)
                return fail(c, "no thread named hpw-n%d-w* serves node %d", node, node);
        if (workers == 0 || workers_total * 2 < total)
                return fail(c, "no thread pinned to cpu %d did most of the work (%" PRIu64 " of %" PRIu64 " ticks)",
                            cpu, workers_total, total);
        printf("HPWARM-INFO workers-node%d: %u busy thread(s), %" PRIu64 "/%" PRIu64 " ticks, %u named\n", node,
               workers, workers_total, total, named);
        return 0;
}

/* ---- the checks ---------------------------------------------------------- */

/* Daemon comes up and answers health. */
static int check_daemon_health(struct ctx *c)
{
        struct timespec t0, t;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                int status;
                if (waitpid(c->daemon, &status, WNOHANG) == c->daemon) {
                        c->daemon = 0;
                        c->daemon_status = status;
                        return fail(c, "hpwarmd exited at start (status 0x%x)", status);
                }
                struct resp r;
                if (http(c, "GET", "/v1/health", NULL, &r) == 0) {
                        const char *s = r.json ? j_str(r.json, "status") : NULL;
                        int ret = r.status == 200 && s && !strcmp(s, "ok")
                                          ? 0
                                          : fail(c, "GET /v1/health: %d %.200s", r.status, r.body);
                        resp_clear(&r);
                        return ret;
                }
                clock_gettime(CLOCK_MONOTONIC, &t);
                if (t.tv_sec - t0.tv_sec > START_TIMEOUT_S)
                        return fail(c, "no answer on port %d after %d s", c->port, START_TIMEOUT_S);
                usleep(100 * 1000);
        }
}

static const cJSON *find_node(const cJSON *nodes, int id)
{
        const cJSON *n;
        cJSON_ArrayForEach(n, nodes) {
                uint64_t v;
                if (j_u64(n, "id", &v) && v == (uint64_t)id)
                        return n;
        }
        return NULL;
}

/* Two nodes, node0 = cpu 0, node1 = cpu 1, as QEMU's -numa lines say. */
static int check_nodes_topology(struct ctx *c)
{
        struct resp r;
        if (http_expect(c, "GET", "/v1/nodes", NULL, 200, &r) < 0)
                return -1;
        const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(r.json, "nodes");
        int ret = 0;
        if (!cJSON_IsArray(nodes) || cJSON_GetArraySize(nodes) != N_NODES)
                ret = fail(c, "expected %d nodes: %.300s", N_NODES, r.body);
        for (int id = 0; ret == 0 && id < N_NODES; id++) {
                const cJSON *n = find_node(nodes, id);
                char want[8];
                uint64_t count;
                snprintf(want, sizeof(want), "%d", id);
                if (!n)
                        ret = fail(c, "node %d missing", id);
                else if (!j_str(n, "cpus") || strcmp(j_str(n, "cpus"), want))
                        ret = fail(c, "node %d cpus \"%s\", expected \"%s\"", id,
                                   j_str(n, "cpus") ? j_str(n, "cpus") : "(none)", want);
                else if (!j_u64(n, "cpu_count", &count) || count != 1)
                        ret = fail(c, "node %d cpu_count is not 1", id);
        }
        resp_clear(&r);
        return ret;
}

/* Every per-node hugepage count equals /sys, for both page sizes. */
static int check_nodes_counts(struct ctx *c)
{
        struct resp r;
        if (http_expect(c, "GET", "/v1/nodes", NULL, 200, &r) < 0)
                return -1;
        const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(r.json, "nodes");
        int ret = 0;
        for (int id = 0; ret == 0 && id < N_NODES; id++) {
                const cJSON *n = find_node(nodes, id);
                const cJSON *hp = cJSON_GetObjectItemCaseSensitive(n, "hugepages");
                if (!cJSON_IsArray(hp) || cJSON_GetArraySize(hp) != 2) {
                        ret = fail(c, "node %d: expected 2 hugepage sizes", id);
                        break;
                }
                for (int p = 0; ret == 0 && p < 2; p++) {
                        const cJSON *e, *entry = NULL;
                        cJSON_ArrayForEach(e, hp) {
                                uint64_t ps;
                                if (j_u64(e, "page_size_bytes", &ps) && ps == page_sizes[p])
                                        entry = e;
                        }
                        if (!entry) {
                                ret = fail(c, "node %d: no entry for page size %" PRIu64, id, page_sizes[p]);
                                break;
                        }
                        static const char *const keys[] = {"total", "free", "surplus"};
                        static const char *const files[] = {"nr", "free", "surplus"};
                        for (int k = 0; k < 3; k++) {
                                uint64_t got = 0, want = sys_hp(id, page_sizes[p], files[k]);
                                if (!j_u64(entry, keys[k], &got) || got != want) {
                                        ret = fail(c, "node %d %s %s: daemon says %" PRIu64 ", /sys says %" PRIu64,
                                                   id, p ? "1G" : "2M", keys[k], got, want);
                                        break;
                                }
                        }
                }
        }
        resp_clear(&r);
        return ret;
}

/* Growing node 1's 2 MiB pool moves node 1's nr_hugepages and nothing else. */
static int check_reserve_node1(struct ctx *c)
{
        struct counts before, after;
        counts_read(&before);
        uint64_t want = before.nr[1][0] + RESERVE_EXTRA;
        char body[64];
        snprintf(body, sizeof(body), "{\"count\": %" PRIu64 "}", want);
        struct resp r;
        if (http_expect(c, "PUT", "/v1/nodes/1/hugepages/2M", body, 200, &r) < 0)
                return -1;
        uint64_t total = 0, node = 99;
        int ret = 0;
        if (!j_u64(r.json, "node", &node) || node != 1)
                ret = fail(c, "answer names node %" PRIu64 ": %.200s", node, r.body);
        else if (!j_u64(r.json, "total", &total) || total != want)
                ret = fail(c, "answer total %" PRIu64 ", asked %" PRIu64, total, want);
        else if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r.json, "complete")))
                ret = fail(c, "answer not complete: %.200s", r.body);
        resp_clear(&r);
        if (ret)
                return ret;
        counts_read(&after);
        const struct moved m = {1, 0, RESERVE_EXTRA, RESERVE_EXTRA};
        return counts_expect(c, &before, &after, &m, 1);
}

/* Results of the concurrent warm, for the checks that inspect it. */
static struct {
        bool ok;
        bool overlap_seen;
        int attempts;           /* warms whose overlap was not seen */
        char overlap_why[256];
        char path[2][512];
} warm;

/* How often the two warms are tried until the checker sees them overlap.
 * Whether qn0 is still warming when qn1's answer comes back depends on how
 * the host schedules this guest's vCPUs; a daemon that warms nodes one after
 * the other never shows an overlap, however often it is tried. */
#define OVERLAP_ATTEMPTS 3

/* Pools on node 0 and node 1 warming at once: each node's free count drops by
 * exactly its pool's pages, nothing else moves.  When the overlap was not
 * seen, both pools are deleted (every page must come back) and it is tried
 * again, up to OVERLAP_ATTEMPTS times. */
static int check_warm_two_nodes(struct ctx *c)
{
        static const char *const names[2] = {"qn0", "qn1"};
        const uint64_t pages[2] = {WARM_PAGES_N0, WARM_PAGES_N1};
        struct counts before, after;
        struct resp r;

again:
        counts_read(&before);
        for (int n = 0; n < 2; n++) {
                if (pool_put(c, names[n], n, pages[n] * PAGE_2M, "2M", 201, &r) < 0)
                        return -1;
                const char *js = j_str(r.json, "state");
                char state_buf[32];
                snprintf(state_buf, sizeof(state_buf), "%s", js ? js : "?");
                const char *state = js ? state_buf : NULL;
                if (n == 1) {
                        /* qn1 was created (its answer says warming) after qn0
                         * started; if qn0 is still warming after that, both
                         * were warming at the moment qn1's answer was made. */
                        bool n1_warming = state && !strcmp(state, "warming");
                        resp_clear(&r);
                        if (http_expect(c, "GET", "/v1/pools/qn0", NULL, 200, &r) < 0)
                                return -1;
                        const char *s0 = j_str(r.json, "state");
                        warm.overlap_seen = n1_warming && s0 && !strcmp(s0, "warming");
                        snprintf(warm.overlap_why, sizeof(warm.overlap_why),
                                 "qn1 was %s when created, qn0 was %s right after", state ? state : "?",
                                 s0 ? s0 : "?");
                }
                resp_clear(&r);
        }
        for (int n = 0; n < 2; n++) {
                if (pool_wait_ready(c, names[n], pages[n] * PAGE_2M, &r) < 0) {
                        resp_clear(&r);
                        return -1;
                }
                const char *path = j_str(r.json, "path");
                snprintf(warm.path[n], sizeof(warm.path[n]), "%s", path ? path : "");
                resp_clear(&r);
                if (!path_exists(warm.path[n]))
                        return fail(c, "pool %s: path \"%s\" does not exist", names[n], warm.path[n]);
        }
        counts_read(&after);
        const struct moved m[2] = {{0, 0, 0, -(int64_t)pages[0]}, {1, 0, 0, -(int64_t)pages[1]}};
        if (counts_expect(c, &before, &after, m, 2) < 0)
                return -1;
        if (!warm.overlap_seen && ++warm.attempts < OVERLAP_ATTEMPTS) {
                struct counts gone;
                for (int n = 0; n < 2; n++)
                        if (pool_delete(c, names[n]) < 0)
                                return -1;
                counts_read(&gone);
                if (counts_expect(c, &before, &gone, NULL, 0) < 0)
                        return -1;
                printf("HPWARM-INFO overlap not seen (%s); trying again\n", warm.overlap_why);
                goto again;
        }
        warm.ok = true;
        return 0;
}

static int check_warm_overlap(struct ctx *c)
{
        if (!warm.ok)
                return fail(c, "the concurrent warm failed");
        if (!warm.overlap_seen)
                return fail(c, "not seen warming at the same time in %d attempts: %s", OVERLAP_ATTEMPTS,
                            warm.overlap_why);
        return 0;
}

static int check_warm_placement(struct ctx *c)
{
        static const char *const names[2] = {"qn0", "qn1"};
        if (!warm.ok)
                return fail(c, "the concurrent warm failed");
        for (int n = 0; n < 2; n++) {
                char target[64];
                struct resp r;
                snprintf(target, sizeof(target), "/v1/pools/%s", names[n]);
                if (http_expect(c, "GET", target, NULL, 200, &r) < 0)
                        return -1;
                int ret = pool_placement_ok(c, names[n], r.json);
                resp_clear(&r);
                if (ret)
                        return ret;
        }
        return 0;
}

static int check_workers_node0(struct ctx *c)
{
        return check_workers_on(c, 0, "0", 0, WARM_PAGES_N0);
}

static int check_workers_node1(struct ctx *c)
{
        return check_workers_on(c, 1, "1", 1, WARM_PAGES_N1);
}

/* DELETE gives every page back and removes the files. */
static int check_release_2m(struct ctx *c)
{
        static const char *const names[2] = {"qn0", "qn1"};
        const uint64_t pages[2] = {WARM_PAGES_N0, WARM_PAGES_N1};
        struct counts before, after;
        counts_read(&before);
        for (int n = 0; n < 2; n++)
                if (pool_delete(c, names[n]) < 0)
                        return -1;
        counts_read(&after);
        const struct moved m[2] = {{0, 0, 0, (int64_t)pages[0]}, {1, 0, 0, (int64_t)pages[1]}};
        if (!warm.ok)
                return fail(c, "the concurrent warm failed (pools deleted anyway)");
        if (counts_expect(c, &before, &after, m, 2) < 0)
                return -1;
        for (int n = 0; n < 2; n++)
                if (path_exists(warm.path[n]))
                        return fail(c, "%s still exists after DELETE", warm.path[n]);
        return 0;
}

/* The boot-time 1 GiB page on node 1 becomes a warm pool and comes back. */
static int check_pool_1g(struct ctx *c)
{
        struct counts before, mid, after;
        struct resp r;
        counts_read(&before);
        if (before.free[1][1] < 1)
                return fail(c, "node 1 has no free 1 GiB page (cmdline hugepages=1:1 not applied?)");
        if (pool_put(c, "qg1", 1, PAGE_1G, "1G", 201, &r) < 0)
                return -1;
        resp_clear(&r);
        int ret = pool_wait_ready(c, "qg1", PAGE_1G, &r);
        if (ret == 0)
                ret = pool_placement_ok(c, "qg1", r.json);
        char path[512];
        const char *p = r.json ? j_str(r.json, "path") : NULL;
        snprintf(path, sizeof(path), "%s", p ? p : "");
        resp_clear(&r);
        counts_read(&mid);
        const struct moved m1 = {1, 1, 0, -1};
        if (ret == 0)
                ret = counts_expect(c, &before, &mid, &m1, 1);
        if (ret == 0 && !path_exists(path))
                ret = fail(c, "pool qg1: path \"%s\" does not exist", path);
        /* Release even after a failure, so later checks see the page. */
        char saved[sizeof(c->why)];
        memcpy(saved, c->why, sizeof(saved));
        int del = pool_delete(c, "qg1");
        if (ret)
                return memcpy(c->why, saved, sizeof(saved)), ret;
        if (del)
                return del;
        counts_read(&after);
        if (counts_expect(c, &before, &after, NULL, 0) < 0)
                return -1;
        if (path_exists(path))
                return fail(c, "%s still exists after DELETE", path);
        return 0;
}

/* Asking for more than node 0 has free: 409, nothing created, nothing moved. */
static int check_insufficient_409(struct ctx *c)
{
        struct counts before, after;
        struct resp r;
        counts_read(&before);
        uint64_t size = (before.free[0][0] + 1) * PAGE_2M;
        char body[256];
        snprintf(body, sizeof(body), "{\"node\": 0, \"size_bytes\": %" PRIu64 ", \"page_size\": \"2M\"}", size);
        if (http(c, "PUT", "/v1/pools/qbig", body, &r) < 0)
                return -1;
        int ret = 0;
        const char *type = r.json ? j_str(r.json, "type") : NULL;
        if (r.status != 409)
                ret = fail(c, "PUT %" PRIu64 " pages on node 0 with %" PRIu64 " free: status %d: %.300s",
                           size / PAGE_2M, before.free[0][0], r.status, r.body);
        else if (strncmp(r.content_type, "application/problem+json", 24))
                ret = fail(c, "409 with content type \"%s\"", r.content_type);
        else if (!type || !strstr(type, "insufficient-hugepages"))
                ret = fail(c, "409 of type \"%s\", expected insufficient-hugepages", type ? type : "(none)");
        resp_clear(&r);
        if (ret)
                return ret;
        counts_read(&after);
        if (counts_expect(c, &before, &after, NULL, 0) < 0)
                return -1;
        if (http(c, "GET", "/v1/pools/qbig", NULL, &r) < 0)
                return -1;
        int st = r.status;
        resp_clear(&r);
        if (st != 404)
                return fail(c, "GET /v1/pools/qbig after the 409: status %d, expected 404", st);
        if (path_exists("/mnt/huge2m/hpwarm/qbig"))
                return fail(c, "/mnt/huge2m/hpwarm/qbig exists after the 409");
        return 0;
}

/* SIGTERM stops the daemon cleanly with status 0. */
static int check_daemon_sigterm(struct ctx *c)
{
        if (c->daemon <= 0)
                return fail(c, "hpwarmd is not running");
        kill(c->daemon, SIGTERM);
        for (int i = 0; i < 300; i++) {
                int status;
                pid_t p = waitpid(c->daemon, &status, WNOHANG);
                if (p == c->daemon) {
                        c->daemon = 0;
                        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                                return fail(c, "hpwarmd ended with status 0x%x after SIGTERM", status);
                        return 0;
                }
                usleep(100 * 1000);
        }
        return fail(c, "hpwarmd still running 30 s after SIGTERM");
}

/* After everything: every hugepage free again, our directories empty. */
/* Poll node NODE's 1 GiB nr_hugepages until it is WANT; a 60 s bound only
 * against a hang (the verdict is the count). */
static int wait_nr_1g(struct ctx *c, int node, uint64_t want)
{
        for (int i = 0; i < 600; i++) {
                if (sys_hp(node, PAGE_1G, "nr") == want)
                        return 0;
                usleep(100 * 1000);
        }
        return fail(c, "node %d: 1 GiB nr_hugepages stayed %" PRIu64 ", expected %" PRIu64, node,
                    sys_hp(node, PAGE_1G, "nr"), want);
}

/* A pool of one 1 GiB page on NODE, whose elastic pool (best-effort) must
 * grow for it.  Best-effort means either: the kernel finds a free gigabyte
 * and the pool grows, warms, and the page goes back once the pool is
 * deleted and idle; or it does not and the growth is refused with the
 * kernel named and nothing left behind.  *RET_GREW says which. */
static int best_effort_grow(struct ctx *c, int node, bool *ret_grew)
{
        char body[256], name[16];
        struct resp r;
        int ret = 0;

        *ret_grew = false;
        snprintf(name, sizeof(name), "qe%d", node);
        snprintf(body, sizeof(body), "{\"node\": %d, \"size_bytes\": %" PRIu64 ", \"page_size\": \"1G\"}", node,
                 PAGE_1G);
        uint64_t nr = sys_hp(node, PAGE_1G, "nr");
        char target[64];
        snprintf(target, sizeof(target), "/v1/pools/%s", name);
        if (http(c, "PUT", target, body, &r) < 0)
                return -1;
        if (r.status == 409) {
                const char *d = r.json ? j_str(r.json, "detail") : NULL;
                if (!d || !strstr(d, "the kernel gave fewer pages"))
                        ret = fail(c, "a refused best-effort growth does not say the kernel gave less: %.300s", r.body);
                else if (sys_hp(node, PAGE_1G, "nr") != nr)
                        ret = fail(c, "a refused growth left node %d with %" PRIu64 " 1 GiB pages", node,
                                   sys_hp(node, PAGE_1G, "nr"));
                else
                        printf("HPWARM-INFO elastic 1G node %d: the kernel found no free gigabyte (best-effort), "
                               "refused with nothing left behind\n", node);
                resp_clear(&r);
                return ret;
        }
        if (r.status != 201) {
                ret = fail(c, "PUT %s: status %d: %.300s", target, r.status, r.body);
                resp_clear(&r);
                return ret;
        }
        resp_clear(&r);
        ret = pool_wait_ready(c, name, PAGE_1G, &r);
        resp_clear(&r);
        if (ret == 0 && sys_hp(node, PAGE_1G, "nr") != nr + 1)
                ret = fail(c, "node %d has %" PRIu64 " 1 GiB pages with the pool ready, expected %" PRIu64, node,
                           sys_hp(node, PAGE_1G, "nr"), nr + 1);
        int del = pool_delete(c, name);
        if (ret == 0)
                ret = del;
        if (ret == 0)
                ret = wait_nr_1g(c, node, nr);
        if (ret == 0) {
                *ret_grew = true;
                printf("HPWARM-INFO elastic 1G node %d: grown at runtime for the pool, given back once idle\n", node);
        }
        return ret;
}

/* Elastic gigantic pages.  The guest's command line names a hugetlb_cma
 * area on node 0 (run.sh), but Debian 12's kernel is built without CMA, so
 * /proc/meminfo shows no CmaTotal: hpwarmd must not trust the command line
 * alone and call both nodes' 1 GiB growth best-effort.  A policy is then
 * refused unless allow_best_effort; with it, node 0's pool of 1 GiB pages
 * grows for a pool at runtime and gives the page back once idle. */
static int check_elastic_1g(struct ctx *c)
{
        const char *pol0 = "/v1/nodes/0/hugepages/1G/policy";
        const char *strict = "{\"min\": 0, \"max\": 1, \"headroom\": 0, \"idle_seconds\": 1}";
        const char *lax = "{\"min\": 0, \"max\": 1, \"headroom\": 0, \"idle_seconds\": 1, "
                          "\"allow_best_effort\": true}";
        char meminfo[8192] = "";
        struct resp r;
        int ret = 0;

        (void)read_file("/proc/meminfo", meminfo, sizeof(meminfo));
        const char *want = strstr(meminfo, "CmaTotal:") ? NULL : "best-effort";
        if (!want)
                return fail(c, "this guest kernel has CMA: the check expects Debian 12's kernel without it");
        if (http_expect(c, "GET", "/v1/nodes", NULL, 200, &r) < 0)
                return -1;
        const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(r.json, "nodes");
        for (int n = 0; n < N_NODES && ret == 0; n++) {
                const cJSON *hps = cJSON_GetObjectItemCaseSensitive(find_node(nodes, n), "hugepages"), *h;
                const char *g = NULL;
                cJSON_ArrayForEach(h, hps) {
                        uint64_t ps;
                        if (j_u64(h, "page_size_bytes", &ps) && ps == PAGE_1G)
                                g = j_str(h, "runtime_growth");
                }
                if (!g || strcmp(g, want))
                        ret = fail(c, "node %d 1G runtime_growth is %s, expected %s (no CmaTotal, whatever the "
                                   "command line says)", n, g ? g : "(none)", want);
        }
        resp_clear(&r);
        if (ret)
                return ret;
        if (http_expect(c, "PUT", pol0, strict, 409, &r) < 0)
                return -1;
        const char *type = j_str(r.json, "type");
        if (!type || !strstr(type, "growth-not-reliable"))
                ret = fail(c, "node 0 without CMA: %.300s", r.body);
        resp_clear(&r);
        if (ret)
                return ret;
        if (sys_hp(0, PAGE_1G, "nr") != 0)
                return fail(c, "node 0 starts with %" PRIu64 " 1 GiB pages, expected 0", sys_hp(0, PAGE_1G, "nr"));
        if (http_expect(c, "PUT", pol0, lax, 200, &r) < 0)
                return -1;
        resp_clear(&r);
        bool grew;
        ret = best_effort_grow(c, 0, &grew);
        if (http(c, "DELETE", pol0, NULL, &r) == 0)
                resp_clear(&r);
        return ret;
}

/* A gigantic page given back: node 1's boot-time 1 GiB page, free and
 * idle, goes back to the kernel under a best-effort policy; then a pool
 * on node 1 asks for it again at runtime (best_effort_grow). */
static int check_elastic_1g_give_back(struct ctx *c)
{
        const char *pol1 = "/v1/nodes/1/hugepages/1G/policy";
        const char *lax = "{\"min\": 0, \"max\": 1, \"headroom\": 0, \"idle_seconds\": 1, "
                          "\"allow_best_effort\": true}";
        struct resp r;
        int ret;
        bool grew;

        if (sys_hp(1, PAGE_1G, "nr") != 1 || sys_hp(1, PAGE_1G, "free") != 1)
                return fail(c, "node 1 should have its boot-time 1 GiB page free (%" PRIu64 "/%" PRIu64 ")",
                            sys_hp(1, PAGE_1G, "nr"), sys_hp(1, PAGE_1G, "free"));
        if (http_expect(c, "PUT", pol1, lax, 200, &r) < 0)
                return -1;
        resp_clear(&r);
        ret = wait_nr_1g(c, 1, 0);
        /* The policy tells its give-back once the write is read back and
         * saved, a moment after the count moved: poll for it. */
        for (int i = 0; ret == 0 && i < 600; i++) {
                if (http_expect(c, "GET", pol1, NULL, 200, &r) < 0)
                        return -1;
                const cJSON *last = cJSON_GetObjectItemCaseSensitive(r.json, "last");
                const char *action = j_str(last, "action");
                uint64_t pages = 0;
                bool told = action && !strcmp(action, "returned") && j_u64(last, "pages", &pages) && pages == 1;
                if (!told && i == 599)
                        ret = fail(c, "GET policy after the give-back: %.300s", r.body);
                resp_clear(&r);
                if (told)
                        break;
                usleep(100 * 1000);
        }
        if (ret == 0) {
                printf("HPWARM-INFO elastic 1G node 1: its idle gigantic page was given back\n");
                ret = best_effort_grow(c, 1, &grew);
        }
        if (http(c, "DELETE", pol1, NULL, &r) == 0)
                resp_clear(&r);
        return ret;
}

static int check_no_leak(struct ctx *c)
{
        static const char *const dirs[] = {"/mnt/huge2m/hpwarm", "/mnt/huge1g/hpwarm"};
        for (int n = 0; n < N_NODES; n++)
                for (int p = 0; p < 2; p++) {
                        uint64_t nr = sys_hp(n, page_sizes[p], "nr"), fr = sys_hp(n, page_sizes[p], "free");
                        if (nr != fr)
                                return fail(c, "node%d %s: %" PRIu64 " of %" PRIu64 " pages still in use", n,
                                            p ? "1G" : "2M", nr - fr, nr);
                }
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
                DIR *d = opendir(dirs[i]);
                struct dirent *de;
                if (!d)
                        continue;
                while ((de = readdir(d)))
                        if (de->d_name[0] != '.') {
                                closedir(d);
                                return fail(c, "%s/%s left behind", dirs[i], de->d_name);
                        }
                closedir(d);
        }
        return 0;
}

static const struct check {
        const char *name;
        int (*fn)(struct ctx *c);
        bool needs_daemon;
} checks[] = {
        {"daemon-health", check_daemon_health, true},
        {"nodes-topology", check_nodes_topology, true},
        {"nodes-counts", check_nodes_counts, true},
        {"elastic-1g-best-effort", check_elastic_1g, true},
        {"reserve-node1-only", check_reserve_node1, true},
        {"warm-two-nodes-counts", check_warm_two_nodes, true},
        {"warm-two-nodes-overlap", check_warm_overlap, true},
        {"warm-two-nodes-placement", check_warm_placement, true},
        {"release-2m", check_release_2m, true},
        {"workers-node0-on-cpu0", check_workers_node0, true},
        {"workers-node1-on-cpu1", check_workers_node1, true},
        {"pool-1g-node1", check_pool_1g, true},
        {"insufficient-409", check_insufficient_409, true},
        {"elastic-1g-give-back", check_elastic_1g_give_back, true},
        {"daemon-sigterm", check_daemon_sigterm, true},
        {"no-leak", check_no_leak, false},
};

int main(int argc, char **argv)
{
        struct ctx c = {.port = 0};
        int i;
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc == 2 && !strcmp(argv[1], "--list")) {
                for (size_t k = 0; k < sizeof(checks) / sizeof(checks[0]); k++)
                        printf("%s\n", checks[k].name);
                return 0;
        }
        for (i = 1; i < argc && strcmp(argv[i], "--"); i++)
                if (!strcmp(argv[i], "--port") && i + 1 < argc)
                        c.port = atoi(argv[++i]);
        if (c.port <= 0 || i + 1 >= argc) {
                fprintf(stderr, "usage: %s --list | --port PORT -- HPWARMD ARGS...\n", argv[0]);
                return 2;
        }
        signal(SIGPIPE, SIG_IGN);
        c.daemon = fork();
        if (c.daemon < 0) {
                perror("fork");
                return 1;
        }
        if (c.daemon == 0) {
                execv(argv[i + 1], argv + i + 1);
                fprintf(stderr, "exec %s: %s\n", argv[i + 1], strerror(errno));
                _exit(127);
        }

        int failed = 0;
        for (size_t k = 0; k < sizeof(checks) / sizeof(checks[0]); k++) {
                const struct check *ck = &checks[k];
                c.why[0] = '\0';
                int r;
                if (ck->needs_daemon && c.daemon > 0 && waitpid(c.daemon, &c.daemon_status, WNOHANG) == c.daemon)
                        c.daemon = 0;
                if (ck->needs_daemon && c.daemon <= 0)
                        r = fail(&c, "hpwarmd is not running (exit status 0x%x)", c.daemon_status);
                else
                        r = ck->fn(&c);
                if (r == 0)
                        printf("HPWARM-CHECK PASS %s\n", ck->name);
                else {
                        printf("HPWARM-CHECK FAIL %s: %s\n", ck->name, c.why);
                        failed++;
                }
        }
        if (c.daemon > 0) {
                kill(c.daemon, SIGKILL);
                waitpid(c.daemon, NULL, 0);
        }
        return failed ? 1 : 0;
}
