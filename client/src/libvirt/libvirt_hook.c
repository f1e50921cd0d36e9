/* libvirt_hook: the hook's messages and notes, and what every path shares
 * about the pool at hand (libvirt_hook.h); libvirt_main.c reads the run and
 * routes it to a path, the paths call down to this file.
 *
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
