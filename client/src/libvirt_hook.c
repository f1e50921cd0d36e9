/* libvirt_hook: the hook's settings, messages and notes, and what every
 * path shares about the pool at hand (libvirt_hook.h).
 *
 * libvirt runs the hook as DOMAIN OPERATION SUB-OPERATION EXTRA with the
 * domain XML on stdin.  Which operations do what is deploy/libvirt/README.md's
 * table; this file routes a run to the metadata path (one <hpwarm:pool>),
 * the cell path (libvirt_cells.c) or the host policy (libvirt_policy.c).
 * What a domain's prepare took is noted under STATEDIR/UUID/ (POOL.own,
 * POOL.cold, POOL.incoming), so started and release touch only that: a
 * refused start gives back nothing that was not its own. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libvirt_hook.h"

/* ---- messages ---- */

static void vsay(const struct lv_hook *h, const char *fmt, va_list ap)
{
        fprintf(stderr, "hpwarm hook: domain '%s': ", h->dom);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
}

void lv_say(const struct lv_hook *h, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsay(h, fmt, ap);
        va_end(ap);
}

int lv_fail(const struct lv_hook *h, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsay(h, fmt, ap);
        va_end(ap);
        return 1;
}

const char *lv_flat(char *out)
{
        size_t n = strlen(out);

        /* The CLI's output ends in a line break that $(...) used to drop. */
        while (n && out[n - 1] == '\n')
                out[--n] = '\0';
        for (char *p = out; *p; p++)
                if (*p == '\n')
                        *p = ' ';
        return out;
}

/* ---- the daemon seam ---- */

void lv_call_argv(const struct lv_call *c, char *buf, size_t buflen, char **argv)
{
        static const char *const verbs[] = { [LV_WARM] = "warm", [LV_STATUS] = "status", [LV_CLAIM] = "claim",
                                             [LV_RELEASE] = "release" };
        size_t used = 0, n = 0;

#define WORD(...)                                                                      \
        do {                                                                           \
                int w_ = snprintf(buf + used, buflen - used, __VA_ARGS__);             \
                if (w_ < 0 || (size_t)w_ >= buflen - used || n + 1 >= LV_ARGV_MAX)     \
                        goto out;                                                      \
                argv[n++] = buf + used;                                                \
                used += (size_t)w_ + 1;                                                \
        } while (0)
        WORD("%s", verbs[c->kind]);
        WORD("%s", c->pool);
        switch (c->kind) {
        case LV_WARM:
                WORD("--node");
                WORD("%s", c->node);
                WORD("--size");
                WORD("%llu", (unsigned long long)c->size);
                WORD("--page-size");
                WORD("%s", c->page_size);
                if (c->ttl) {
                        WORD("--ttl");
                        WORD("%lu", c->ttl_s);
                }
                WORD("--reserve");
                WORD("--wait");
                break;
        case LV_CLAIM:
                if (c->pid > 0) {
                        WORD("--pid");
                        WORD("%ld", c->pid);
                }
                break;
        case LV_RELEASE:
                if (c->ignore_missing)
                        WORD("--ignore-missing");
                break;
        case LV_STATUS:
                break;
        }
        WORD("--timeout");
        WORD("%u", c->timeout_s);
        if (c->kind == LV_WARM) {
                WORD("--label");
                WORD("%s", c->label);
                if (c->file_owned) {
                        WORD("--file-owner");
                        WORD("%lu:%lu", c->uid, c->gid);
                }
        }
#undef WORD
out:
        argv[n] = NULL;
}

void lv_ask(const struct lv_hook *h, const struct lv_call *c, struct lv_answer *a)
{
        memset(a, 0, sizeof(*a));
        if (h->s.calls && h->s.calls[0]) {
                /* One line per request in the CLI's words: what the hook asked
                 * of hpwarmd, for the tests and for whoever debugs a host. */
                char buf[2048], *argv[LV_ARGV_MAX];
                FILE *f = fopen(h->s.calls, "a");

                if (f) {
                        lv_call_argv(c, buf, sizeof(buf), argv);
                        for (size_t i = 0; argv[i]; i++)
                                fprintf(f, "%s%s", i ? " " : "", argv[i]);
                        fputc('\n', f);
                        fclose(f);
                }
        }
        h->daemon->call(h->daemon->ud, &h->s, c, a);
}

/* ---- small rules ---- */

bool lv_digits(const char *s)
{
        if (!s[0])
                return false;
        for (; *s; s++)
                if (*s < '0' || *s > '9')
                        return false;
        return true;
}

static bool alnum(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool lv_pool_name_ok(const char *p)
{
        size_t n = strlen(p);

        if (n < 1 || n > 64 || !alnum(p[0]))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!alnum(p[i]) && p[i] != '.' && p[i] != '_' && p[i] != '-')
                        return false;
        return true;
}

/* libvirt's units (domain XML schema) and hpwarm's spellings of them.
 * KB_BINARY is hpwarm's "kB": 1024, where libvirt's KB is 1000. */
static const struct {
        const char *unit;
        uint64_t mult;
} units[] = {
        { "b", 1 }, { "bytes", 1 }, { "B", 1 },
        { "k", 1ull << 10 }, { "K", 1ull << 10 }, { "KiB", 1ull << 10 }, { "kB", 1ull << 10 },
        { "KB_BINARY", 1ull << 10 }, { "KB", 1000ull },
        { "m", 1ull << 20 }, { "M", 1ull << 20 }, { "MiB", 1ull << 20 }, { "MB", 1000000ull },
        { "g", 1ull << 30 }, { "G", 1ull << 30 }, { "GiB", 1ull << 30 }, { "GB", 1000000000ull },
        { "t", 1ull << 40 }, { "T", 1ull << 40 }, { "TiB", 1ull << 40 }, { "TB", 1000000000000ull },
        { "p", 1ull << 50 }, { "P", 1ull << 50 }, { "PiB", 1ull << 50 }, { "PB", 1000000000000000ull },
};

/* Sizes from 2^63 on are refused (hpwarmd's sizes are signed on the way). */
#define LV_SIZE_LIMIT 9.2e18

int lv_to_bytes(const char *num, const char *unit, uint64_t *ret)
{
        uint64_t m = 0, n;

        if (!lv_digits(num))
                return -1;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(units[i].unit, unit) == 0)
                        m = units[i].mult;
        if (!m)
                return -1;
        errno = 0;
        n = strtoull(num, NULL, 10);
        if (errno || (double)n * (double)m >= LV_SIZE_LIMIT)
                return -1;
        *ret = n * m;
        return 0;
}

bool lv_exists(const char *path)
{
        struct stat st;

        return lstat(path, &st) == 0;
}

int lv_write_file(const char *path, const char *text, unsigned mask)
{
        mode_t old = umask(mask);
        FILE *f = fopen(path, "w");
        int rc = 0;

        umask(old);
        if (!f)
                return -1;
        if (fputs(text, f) < 0)
                rc = -1;
        if (fclose(f) != 0)
                rc = -1;
        return rc;
}

int lv_mkdir_notes(const struct lv_hook *h)
{
        char p[LV_PATH_MAX];

        snprintf(p, sizeof(p), "%s", h->notes);
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0777) < 0 && errno != EEXIST)
                        return -1;
                *s = '/';
        }
        if (mkdir(p, 0777) < 0 && errno != EEXIST)
                return -1;
        return 0;
}

/* ---- the pool at hand ---- */

void lv_set_pool(struct lv_hook *h, const char *pool)
{
        snprintf(h->pool, sizeof(h->pool), "%s", pool);
        snprintf(h->cold_note, sizeof(h->cold_note), "%s/%s.cold", h->notes, pool);
        snprintf(h->own_note, sizeof(h->own_note), "%s/%s.own", h->notes, pool);
        snprintf(h->in_note, sizeof(h->in_note), "%s/%s.incoming", h->notes, pool);
}

int lv_check_attrs(struct lv_hook *h)
{
        /* A domain whose name is no pool name must say which pool to use
         * rather than be renamed silently. */
        if (!lv_pool_name_ok(h->pool))
                return lv_fail(h, "'%s' is not a valid pool name ([A-Za-z0-9][A-Za-z0-9._-]{0,63}); "
                               "set pool=\"NAME\" in <hpwarm:pool>", h->pool);
        if (!h->required[0])
                h->required = "yes";
        else if (strcmp(h->required, "yes") != 0 && strcmp(h->required, "no") != 0)
                return lv_fail(h, "<hpwarm:pool required=\"%s\">: expected yes or no", h->required);
        if (!h->node[0])
                return lv_fail(h, "<hpwarm:pool> lacks node=\"N\" (the host NUMA node to warm on)");
        if (!lv_digits(h->node))
                return lv_fail(h, "<hpwarm:pool node=\"%s\">: not a node number", h->node);
        return LV_GO_ON;
}

int lv_pool_size(struct lv_hook *h, uint64_t mem, const char *what)
{
        uint64_t size = mem;
        const char *a = h->size_attr;

        if (a[0]) {
                /* hpwarm's units are binary: 4G = 4 GiB, 2048kB = 2 MiB. */
                char num[64], unit[64];
                size_t d = strspn(a, "0123456789");
                size_t l = strspn(a + d, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");

                if (d == 0 || a[d + l] || d >= sizeof(num) || l >= sizeof(unit))
                        return lv_fail(h, "<hpwarm:pool size=\"%s\">: not a size (e.g. 4G, 512M, 2048kB)", a);
                memcpy(num, a, d);
                num[d] = '\0';
                memcpy(unit, a + d, l);
                unit[l] = '\0';
                if (!unit[0])
                        snprintf(unit, sizeof(unit), "b");
                else if (strcmp(unit, "kB") == 0 || strcmp(unit, "KB") == 0)
                        snprintf(unit, sizeof(unit), "KB_BINARY");
                if (lv_to_bytes(num, unit, &size) < 0)
                        return lv_fail(h, "<hpwarm:pool size=\"%s\">: not a size (e.g. 4G, 512M, 2048kB)", a);
        }
        if (size != mem)
                return lv_fail(h, "pool size %llu bytes (<hpwarm:pool size=\"%s\">) differs from %s of %llu bytes; "
                               "QEMU's RAM must be exactly the pool: make them equal",
                               (unsigned long long)size, a, what, (unsigned long long)mem);
        h->size_bytes = size;
        return LV_GO_ON;
}

struct lv_call lv_warm_call(const struct lv_hook *h, const char *node, uint64_t size, const char *page_size)
{
        /* A domain arriving by migration warms without a TTL: its claim comes
         * at started, when the stream is in, however long that takes. */
        struct lv_call c = {
                .kind = LV_WARM, .pool = h->pool, .node = node, .size = size, .page_size = page_size,
                .ttl = !lv_exists(h->in_note), .ttl_s = h->s.ttl, .timeout_s = (unsigned)h->s.timeout,
                .label = h->label, .file_owned = h->owner, .uid = h->uid, .gid = h->gid,
        };
        return c;
}

void lv_warm_why(const struct lv_hook *h, const char *node, int rc, const char *out, char *why, size_t len)
{
        switch (rc) {
        case 3:
                snprintf(why, len, "hpwarmd is unreachable (%s)", h->s.url[0] ? h->s.url : "the default socket");
                break;
        case 4:
                snprintf(why, len, "pool '%s' was not ready within %lus", h->pool, h->s.timeout);
                break;
        case 5:
                if (strstr(out, "\"label\""))
                        snprintf(why, len, "pool '%s' exists for another domain (hpwarmd refused this domain's label %s)",
                                 h->pool, h->label);
                else
                        snprintf(why, len, "conflict or not enough hugepages on node %s", node);
                break;
        case 6:
                snprintf(why, len, "hpwarmd refused the credentials");
                break;
        default:
                snprintf(why, len, "warming pool '%s' failed (hpwarm exit %d)", h->pool, rc);
        }
}

void lv_status(const struct lv_hook *h, struct lv_answer *a)
{
        struct lv_call c = { .kind = LV_STATUS, .pool = h->pool, .timeout_s = 10 };

        lv_ask(h, &c, a);
}

bool lv_ours(const struct lv_hook *h)
{
        struct lv_answer a;

        lv_status(h, &a);
        return a.rc == 0 && strcmp(a.label, h->label) == 0 && !a.claimed;
}

void lv_give_back(const struct lv_hook *h)
{
        if (lv_ours(h)) {
                struct lv_call c = { .kind = LV_RELEASE, .pool = h->pool, .timeout_s = 10 };
                struct lv_answer a;
                lv_ask(h, &c, &a);
        }
        unlink(h->own_note);
}

int lv_took(struct lv_hook *h)
{
        struct lv_answer a;

        /* This domain's QEMU does not run yet: a claimed pool is another
         * VM's memory.  Status failing: taken on trust (hpwarmd checked the
         * label). */
        lv_status(h, &a);
        if (a.rc == 0 && a.claimed)
                return lv_fail(h, "pool '%s' is claimed by another process (a running VM's memory); "
                               "refusing to start on it", h->pool);
        if (lv_mkdir_notes(h) < 0 || lv_write_file(h->own_note, "", 0) < 0) {
                lv_give_back(h);
                return lv_fail(h, "cannot write %s", h->own_note);
        }
        return LV_GO_ON;
}

int lv_incoming(struct lv_hook *h)
{
        if (lv_mkdir_notes(h) < 0 || lv_write_file(h->in_note, "", 0) < 0)
                return lv_fail(h, "cannot write %s", h->in_note);
        return LV_GO_ON;
}

/* QEMU's pid from libvirt's RUNDIR/DOMAIN.pid, its digits; 0 if none. */
static long qemu_pid(const struct lv_hook *h)
{
        char path[LV_PATH_MAX], buf[64], digits[32];
        size_t n = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s.pid", h->s.rundir, h->dom);
        if (!(f = fopen(path, "r")))
                return 0;
        size_t got = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        for (size_t i = 0; i < got && n + 1 < sizeof(digits); i++)
                if (buf[i] >= '0' && buf[i] <= '9')
                        digits[n++] = buf[i];
        digits[n] = '\0';
        return n ? strtol(digits, NULL, 10) : 0;
}

int lv_started(struct lv_hook *h)
{
        struct lv_call c = { .kind = LV_CLAIM, .pool = h->pool, .timeout_s = 30, .pid = qemu_pid(h) };
        struct lv_answer a;

        unlink(h->in_note);   /* arrived: the migration is complete */
        if (lv_exists(h->cold_note) || !lv_exists(h->own_note))
                return LV_GO_ON;   /* no pool of this domain's to claim */
        lv_ask(h, &c, &a);
        if (a.rc == 2 && c.pid > 0) {
                /* "usage": the other side knows no --pid; claim without it. */
                c.pid = 0;
                lv_ask(h, &c, &a);
        }
        /* The guest already runs on the pool; failing here would kill it.
         * An unclaimed pool only loses its file at TTL, never the VM's pages. */
        if (a.rc != 0)
                lv_say(h, "claiming pool '%s' failed (hpwarm exit %d): %s", h->pool, a.rc, lv_flat(a.out));
        return LV_GO_ON;
}

void lv_dev_ino(const char *path, char *buf, size_t len)
{
        struct stat st;

        if (stat(path, &st) < 0)
                buf[0] = '\0';
        else
                snprintf(buf, len, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

/* Line LINE (1-based) of the file PATH into BUF, "" if none. */
static void read_line(const char *path, int line, char *buf, size_t len)
{
        FILE *f = fopen(path, "r");

        buf[0] = '\0';
        if (!f)
                return;
        for (int i = 1; fgets(buf, (int)len, f); i++) {
                buf[strcspn(buf, "\n")] = '\0';
                if (i == line) {
                        fclose(f);
                        return;
                }
        }
        buf[0] = '\0';
        fclose(f);
}

int lv_release(struct lv_hook *h)
{
        struct lv_call c = { .kind = LV_RELEASE, .pool = h->pool, .ignore_missing = true, .timeout_s = 30 };
        struct lv_answer a;

        unlink(h->in_note);
        if (lv_exists(h->cold_note)) {
                /* The cold file this domain's prepare made: removed only
                 * while it is still that file. */
                char id[128], path[LV_PATH_MAX], now[128];
                read_line(h->cold_note, 1, id, sizeof(id));
                read_line(h->cold_note, 2, path, sizeof(path));
                lv_dev_ino(path, now, sizeof(now));
                if (path[0] && now[0] && strcmp(now, id) == 0)
                        unlink(path);
                unlink(h->cold_note);
                return LV_GO_ON;
        }
        /* Not taken by this domain's prepare (refused, or another domain's
         * pool of that name): not this domain's to give back. */
        if (!lv_exists(h->own_note))
                return LV_GO_ON;
        lv_ask(h, &c, &a);
        if (a.rc == 2) {
                /* The other side knows no --ignore-missing: release, and
                 * accept "gone" (status 1; 3 would be unreachable). */
                c.ignore_missing = false;
                lv_ask(h, &c, &a);
                if (a.rc != 0) {
                        struct lv_answer st;
                        lv_status(h, &st);
                        if (st.rc == 1)
                                a.rc = 0;
                }
        }
        if (a.rc != 0)
                lv_say(h, "releasing pool '%s' failed (hpwarm exit %d): %s", h->pool, a.rc, lv_flat(a.out));
        unlink(h->own_note);
        return LV_GO_ON;
}

/* ---- settings ---- */

/* The settings the hook reads, from the environment or the defaults file
 * (NAME=VALUE lines, optionally quoted, as the shell hook sourced them); a
 * variable already in the environment wins. */
static const char *const setting_names[] = {
        "HPWARM_URL", "HPWARM_TOKEN_FILE", "HPWARM_PAGE_SIZE", "HPWARM_LIBVIRT_TIMEOUT", "HPWARM_LIBVIRT_TTL",
        "HPWARM_LIBVIRT_RUNDIR", "HPWARM_LIBVIRT_STATEDIR", "HPWARM_LIBVIRT_MEMORY_BACKING_DIR",
        "HPWARM_LIBVIRT_POLICY", "HPWARM_LIBVIRT_REQUIRED", "HPWARM_LIBVIRT_QEMU_CONF", "HPWARM_LIBVIRT_MOUNTS",
        "HPWARM_LIBVIRT_LOG", "HPWARM_LIBVIRT_CALLS",
};
#define N_SETTINGS (sizeof(setting_names) / sizeof(setting_names[0]))

static char *file_values[N_SETTINGS];

static void read_config(const char *path)
{
        char line[LV_PATH_MAX];
        FILE *f = fopen(path, "r");

        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *p = line + strspn(line, " \t"), *eq, *v, *end;

                if (strncmp(p, "export ", 7) == 0)
                        p += 7 + strspn(p + 7, " \t");
                if (!(eq = strchr(p, '=')))
                        continue;
                *eq = '\0';
                v = eq + 1;
                if (*v == '\'' || *v == '"') {
                        char q = *v++;
                        end = strchr(v, q);
                } else {
                        end = v + strcspn(v, " \t\n#;");
                }
                if (!end)
                        continue;
                *end = '\0';
                for (size_t i = 0; i < N_SETTINGS; i++) {
                        if (strcmp(p, setting_names[i]) != 0)
                                continue;
                        free(file_values[i]);
                        file_values[i] = strdup(v);
                }
        }
        fclose(f);
}

static const char *setting(const char *name, const char *dflt)
{
        const char *e = getenv(name);

        if (e)
                return e[0] ? e : dflt;
        for (size_t i = 0; i < N_SETTINGS; i++)
                if (strcmp(setting_names[i], name) == 0 && file_values[i])
                        return file_values[i][0] ? file_values[i] : dflt;
        return dflt;
}

static int read_settings(struct lv_hook *h)
{
        const char *conf = getenv("HPWARM_LIBVIRT_CONFIG");
        struct lv_settings *s = &h->s;
        const char *t, *l;

        read_config(conf && conf[0] ? conf : "/etc/default/hpwarm-libvirt");
        s->url = setting("HPWARM_URL", "");
        s->token_file = setting("HPWARM_TOKEN_FILE", "");
        s->page_size = setting("HPWARM_PAGE_SIZE", "2M");
        s->rundir = setting("HPWARM_LIBVIRT_RUNDIR", "/run/libvirt/qemu");
        s->statedir = setting("HPWARM_LIBVIRT_STATEDIR", "/run/hpwarm-libvirt");
        s->mbd = setting("HPWARM_LIBVIRT_MEMORY_BACKING_DIR", "");
        s->policy = setting("HPWARM_LIBVIRT_POLICY", "metadata");
        s->required = setting("HPWARM_LIBVIRT_REQUIRED", "no");
        s->qemu_conf = setting("HPWARM_LIBVIRT_QEMU_CONF", "/etc/libvirt/qemu.conf");
        s->mounts = setting("HPWARM_LIBVIRT_MOUNTS", "/proc/mounts");
        s->log = setting("HPWARM_LIBVIRT_LOG", "");
        s->calls = setting("HPWARM_LIBVIRT_CALLS", "");
        t = setting("HPWARM_LIBVIRT_TIMEOUT", "120");
        l = setting("HPWARM_LIBVIRT_TTL", "600");
        if (!lv_digits(t) || strlen(t) > 9)
                return lv_fail(h, "HPWARM_LIBVIRT_TIMEOUT=%s: expected seconds", t);
        if (!lv_digits(l) || strlen(l) > 9)
                return lv_fail(h, "HPWARM_LIBVIRT_TTL=%s: expected seconds", l);
        s->timeout = strtoul(t, NULL, 10);
        s->ttl = strtoul(l, NULL, 10);
        return LV_GO_ON;
}

/* ---- the run ---- */

static bool handled(const char *op, const char *sub)
{
        static const char *const ops[][2] = {
                { "prepare", "begin" }, { "start", "begin" }, { "started", "begin" },
                { "release", "end" },   { "migrate", "begin" },
        };

        for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
                if (strcmp(op, ops[i][0]) == 0 && strcmp(sub, ops[i][1]) == 0)
                        return true;
        return false;   /* stopped end included: release end does the work */
}

static int read_stdin(char **ret, size_t *len)
{
        size_t cap = 1 << 16, n = 0;
        char *b = malloc(cap);

        if (!b)
                return -1;
        for (;;) {
                if (n == cap) {
                        char *nb = realloc(b, cap *= 2);
                        if (!nb) {
                                free(b);
                                return -1;
                        }
                        b = nb;
                }
                ssize_t r = read(STDIN_FILENO, b + n, cap - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        free(b);
                        return -1;
                }
                if (r == 0)
                        break;
                n += (size_t)r;
        }
        *ret = b;
        *len = n;
        return 0;
}

static bool has_nl(const char *s)
{
        return strchr(s, '\n') != NULL;
}

static int run(struct lv_hook *h)
{
        char *xml = NULL, why[256];
        size_t len;
        const struct lv_pool_el *p0;
        const char *uuid, *dac;
        int rc;

        TRY(read_settings(h));
        if (read_stdin(&xml, &len) < 0)
                return 0;
        rc = lv_domain_parse(xml, len, &h->d, why, sizeof(why));
        free(xml);
        if (rc == -ENOMEM)
                return lv_fail(h, "out of memory reading the domain XML");
        if (rc < 0)
                return lv_fail(h, "cannot parse the domain XML (%s)", why);
        p0 = h->d->n_pools ? &h->d->pools[0] : NULL;
        uuid = h->d->uuid;
        dac = h->d->dac_label;
        if (p0 && (has_nl(p0->node) || has_nl(p0->size) || has_nl(p0->required) || has_nl(p0->pool) ||
                   has_nl(p0->cell) || has_nl(h->d->memory) || has_nl(h->d->memory_unit) || has_nl(uuid) ||
                   has_nl(dac)))
                return lv_fail(h, "a line break in an <hpwarm:pool> attribute or in <memory>");

        /* A pool this hook warms is labelled libvirt:UUID, so hpwarmd refuses
         * it to a domain with another UUID and never hands one domain's pool
         * to another under the same name. */
        if (!uuid[0] && p0)
                return lv_fail(h, "the domain XML has no <uuid>: pools are bound to their domain by it");
        if (strspn(uuid, "0123456789abcdefABCDEF-") != strlen(uuid))
                return lv_fail(h, "<uuid>%s</uuid> is not a UUID", uuid);
        snprintf(h->label, sizeof(h->label), "libvirt:%s", uuid);
        snprintf(h->notes, sizeof(h->notes), "%s/%s", h->s.statedir, uuid);
        /* With a static DAC label of numbers (+UID:+GID) QEMU runs as that
         * user: the pool's file is handed to it alone (mode 0600). */
        if (dac[0] == '+' && strchr(dac, ':') && strchr(dac, ':')[1] == '+') {
                char u[32] = "", g[32] = "";
                const char *colon = strchr(dac, ':');
                if ((size_t)(colon - dac - 1) < sizeof(u) && strlen(colon + 2) < sizeof(g)) {
                        memcpy(u, dac + 1, (size_t)(colon - dac - 1));
                        snprintf(g, sizeof(g), "%s", colon + 2);
                        if (lv_digits(u) && lv_digits(g) && strlen(u) < 10 && strlen(g) < 10) {
                                h->owner = true;
                                h->uid = strtoul(u, NULL, 10);
                                h->gid = strtoul(g, NULL, 10);
                        }
                }
        }
        lv_set_pool(h, p0 && p0->pool[0] ? p0->pool : h->dom);
        if (!p0) {
                if (strcmp(h->s.policy, "metadata") == 0)
                        return 0;
                if (strcmp(h->s.policy, "hugepages") == 0)
                        return lv_policy_main(h);
                lv_note(h, "HPWARM_LIBVIRT_POLICY=%s is neither metadata nor hugepages; leaving the domain as it is",
                        h->s.policy);
                return 0;
        }
        if (p0->cell[0])
                return lv_cells_main(h);
        h->node = p0->node;
        h->size_attr = p0->size;
        h->required = p0->required;
        rc = lv_argv_main(h);
        return rc == LV_GO_ON ? 0 : rc;
}

int lv_hook_main(int argc, char **argv, const struct lv_daemon *daemon)
{
        struct lv_hook h = {
                .dom = argc > 1 ? argv[1] : "", .op = argc > 2 ? argv[2] : "", .sub = argc > 3 ? argv[3] : "",
                .daemon = daemon, .node = "", .size_attr = "", .required = "", .cell = "",
        };
        int rc;

        if (!handled(h.op, h.sub))
                return 0;
        rc = run(&h);
        /* The last release leaves no empty directory behind. */
        if (strcmp(h.op, "release") == 0 && h.notes[0])
                rmdir(h.notes);
        lv_domain_free(h.d);
        for (size_t i = 0; i < N_SETTINGS; i++) {
                free(file_values[i]);
                file_values[i] = NULL;
        }
        return rc == LV_GO_ON ? 0 : rc;
}
