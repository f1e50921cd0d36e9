/* libvirt_main: one run of the hook (lv_hook_main).
 *
 * libvirt runs the hook as DOMAIN OPERATION SUB-OPERATION EXTRA with the
 * domain XML on stdin.  Which operations do what is deploy/libvirt/README.md's
 * table; this file reads the settings and the XML and routes the run to the
 * metadata path (one <hpwarm:pool>, libvirt_argv.c), the cell path
 * (libvirt_cells.c) or the host policy (libvirt_policy.c).  It sits above
 * them: they call down to libvirt_hook.c, never back here. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libvirt_hook.h"

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
