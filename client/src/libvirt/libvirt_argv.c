/* libvirt_argv: a domain with one <hpwarm:pool>, booting on it through the
 * <qemu:commandline> that `hpwarm handoff NAME --vmm libvirt` prints
 * (libvirt_hook.h).  prepare warms the pool and checks that it is the file
 * the fragment's memory backend maps (or, with required="no", makes an
 * empty file there for a cold boot); started claims it; release gives it
 * back; migrate begin refuses an incoming domain without the fragment. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libvirt_hook.h"

/* Split a QEMU option string at its commas (",," is a literal comma) and
 * call FN on each field; stop when FN returns true. */
static bool each_field(const char *v, bool (*fn)(const char *field, void *ud), void *ud)
{
        char field[LV_PATH_MAX];
        size_t n = 0;

        for (const char *p = v;; p++) {
                if (*p == ',' && p[1] == ',') {
                        if (n + 1 < sizeof(field))
                                field[n++] = ',';
                        p++;
                        continue;
                }
                if (*p == ',' || !*p) {
                        field[n] = '\0';
                        if (fn(field, ud))
                                return true;
                        n = 0;
                        if (!*p)
                                return false;
                        continue;
                }
                if (n + 1 < sizeof(field))
                        field[n++] = *p;
        }
}

static bool is_field(const char *field, void *ud)
{
        return strcmp(field, ud) == 0;
}

static bool mem_path_field(const char *field, void *ud)
{
        if (strncmp(field, "mem-path=", 9) != 0)
                return false;
        snprintf(ud, LV_PATH_MAX, "%s", field + 9);
        return true;
}

/* The memory-backend-file argument of our pool in <qemu:commandline>: the
 * first <qemu:arg> naming id=mem-POOL, when a field of it is exactly that. */
static const char *backend_arg(const struct lv_hook *h)
{
        char id[160], probe[LV_PATH_MAX + 2];

        snprintf(id, sizeof(id), "id=mem-%s", h->pool);
        for (size_t i = 0; i < h->d->n_qemu_args; i++) {
                char want[164];
                snprintf(probe, sizeof(probe), ",%s,", h->d->qemu_args[i]);
                snprintf(want, sizeof(want), ",%s,", id);
                if (!strstr(probe, want))
                        continue;
                return each_field(h->d->qemu_args[i], is_field, id) ? h->d->qemu_args[i] : NULL;
        }
        return NULL;
}

/* required="no": QEMU's argument names the pool file, so it must exist for
 * QEMU to start.  Make an empty one (QEMU then preallocates it: a cold boot)
 * and note it so that release removes it.  Only inside a directory hpwarmd
 * made (its marker file), so the daemon's orphan sweep will recognise it. */
static int start_cold(struct lv_hook *h, const char *why, const char *want)
{
        char dir[LV_PATH_MAX], marker[LV_PATH_MAX + 32], id[128], note[LV_PATH_MAX + 160];
        struct stat st;
        int fd;

        if (!want[0])
                return lv_fail(h, "%s; required=\"no\" but <qemu:commandline> has no mem-path for mem-%s", why, h->pool);
        snprintf(dir, sizeof(dir), "%s", want);
        if (strrchr(dir, '/'))
                *strrchr(dir, '/') = '\0';
        snprintf(marker, sizeof(marker), "%s/.hpwarm-pool-dir", dir);
        if (!lv_exists(marker))
                return lv_fail(h, "%s; required=\"no\" but %s is not an hpwarmd pool directory, so it cannot start cold",
                               why, dir);
        /* Not made by this start: another domain's pool, or a file nobody
         * vouches for.  QEMU would map someone else's memory. */
        if (lv_exists(want))
                return lv_fail(h, "%s; required=\"no\" but %s exists and is not this domain's: refusing to start on it",
                               why, want);
        if (lv_mkdir_notes(h) < 0 || lv_write_file(h->cold_note, "", 077) < 0)
                return lv_fail(h, "%s; cannot write %s", why, h->cold_note);
        fd = open(want, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
        if (fd < 0) {
                unlink(h->cold_note);
                return lv_fail(h, "%s; cannot create %s for a cold start", why, want);
        }
        if (stat(dir, &st) < 0 || fchown(fd, (uid_t)-1, st.st_gid) < 0 || fchmod(fd, 0660) < 0) {
                close(fd);
                unlink(want);
                unlink(h->cold_note);
                return lv_fail(h, "%s; cannot give %s its directory's group", why, want);
        }
        close(fd);
        lv_dev_ino(want, id, sizeof(id));
        snprintf(note, sizeof(note), "%s\n%s\n", id, want);
        lv_write_file(h->cold_note, note, 077);
        lv_say(h, "%s; required=\"no\": starting cold on %s (QEMU preallocates it while booting)", why, want);
        return LV_GO_ON;
}

static int prepare(struct lv_hook *h)
{
        const char *arg = backend_arg(h);
        char want[LV_PATH_MAX] = "", why[512];
        struct lv_call c;
        struct lv_answer a;

        if (!arg)
                return lv_fail(h, "opts in to pool '%s' but its <qemu:commandline> has no memory backend id=mem-%s; "
                               "add what 'hpwarm handoff %s --vmm libvirt' prints", h->pool, h->pool, h->pool);
        each_field(arg, mem_path_field, want);
        c = lv_warm_call(h, h->node, h->size_bytes, h->s.page_size);
        lv_ask(h, &c, &a);
        if (a.rc == 0) {
                /* A note left by a cold start whose release never ran
                 * (libvirtd died) must not stop started from claiming. */
                unlink(h->cold_note);
                TRY(lv_took(h));
                /* The pool must be the file QEMU is told to map.  Should the
                 * status call itself fail, the ready pool and the fragment
                 * are taken on trust rather than failing a good start. */
                struct lv_answer st;
                char have[LV_PATH_MAX];
                lv_status(h, &st);
                snprintf(have, sizeof(have), "%s", st.rc == 0 ? st.path : want);
                /* The same file under another name (the pool directory bound
                 * where the domain expects it) is the same pool. */
                if (want[0] && strcmp(have, want) != 0) {
                        char x[128], y[128];
                        lv_dev_ino(have, x, sizeof(x));
                        lv_dev_ino(want, y, sizeof(y));
                        if (!x[0] || !y[0] || strcmp(x, y) != 0) {
                                lv_give_back(h);
                                return lv_fail(h, "pool '%s' is at '%s' but <qemu:commandline> says mem-path=%s; "
                                               "regenerate it with 'hpwarm handoff %s --vmm libvirt'",
                                               h->pool, have, want, h->pool);
                        }
                }
                lv_say(h, "pool '%s' ready on node %s (%llu bytes)", h->pool, h->node,
                       (unsigned long long)h->size_bytes);
                return LV_GO_ON;
        }
        lv_warm_why(h, h->node, a.rc, a.out, why, sizeof(why));
        lv_flat(a.out);
        if (strcmp(h->required, "yes") == 0)
                return lv_fail(h, "%s: %s; refusing to start (set required=\"no\" in <hpwarm:pool> to start cold instead)",
                               why, a.out);
        /* The daemon may have begun and then failed or timed out: give back
         * what it holds for this domain under this name before starting
         * cold (another domain's pool of that name stays). */
        if (a.rc != 3)
                lv_give_back(h);
        char msg[LV_OUT_MAX + 600];
        snprintf(msg, sizeof(msg), "%s: %s", why, a.out);
        return start_cold(h, msg, want);
}

int lv_argv_main(struct lv_hook *h)
{
        uint64_t mem;

        if (h->d->n_pools != 1)
                return lv_fail(h, "has %zu <hpwarm:pool> elements without cell=\"N\": a domain booting through "
                               "<qemu:commandline> takes one pool; a multi-node domain gives each <numa> cell its "
                               "pool with cell=\"N\" (see README, 'libvirt')", h->d->n_pools);
        TRY(lv_check_attrs(h));
        if (lv_to_bytes(h->d->memory, h->d->memory_unit[0] ? h->d->memory_unit : "KiB", &mem) < 0)
                return lv_fail(h, "cannot read <memory unit=\"%s\">%s</memory>", h->d->memory_unit, h->d->memory);
        TRY(lv_pool_size(h, mem, "the domain's <memory>"));
        if (strcmp(h->op, "prepare") == 0)
                return prepare(h);
        if (strcmp(h->op, "started") == 0)
                return lv_started(h);
        if (strcmp(h->op, "release") == 0)
                return lv_release(h);
        if (strcmp(h->op, "migrate") == 0) {
                if (!backend_arg(h))
                        return lv_fail(h, "arrives for pool '%s' but its <qemu:commandline> has no memory backend "
                                       "id=mem-%s; refusing the migration (the destination QEMU would not map a warm pool)",
                                       h->pool, h->pool);
                return lv_incoming(h);
        }
        return LV_GO_ON;
}
