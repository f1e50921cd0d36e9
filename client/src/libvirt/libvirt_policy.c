/* libvirt_policy: HPWARM_LIBVIRT_POLICY=hugepages, a warm pool for every
 * hugepage-backed domain as libvirt users (OpenStack Nova, virt-manager)
 * write it, its XML unchanged.
 *
 * What libvirt does with such a domain (libvirt 9.0, qemu_command.c
 * qemuBuildMemoryBackendProps, qemuBuildMemoryGetPagesize): its guest RAM
 * (one NUMA cell, or none) is memory-backend-file with mem-path=DIR, DIR
 * being MOUNT/libvirt/qemu/ID-SHORTNAME (qemu_conf.c
 * qemuGetDomainHupageMemPath), MOUNT the first hugetlbfs mount of that page
 * size.  libvirt makes DIR, mode 0700, between the "prepare" and "start"
 * hooks; QEMU, given a mem-path that is a regular file, maps that file.  So:
 * prepare warms the pool; start replaces the empty DIR by a hard link of the
 * pool file (same mount); started claims the pool and puts the empty
 * directory back (QEMU has mapped the file by then), so that libvirt's own
 * clean-up at stop finds what it made; release gives the pool back.
 *
 * Domains this cannot serve safely start as they would without hpwarm, with
 * one line saying why (lv_note): several NUMA cells (one file would back two
 * guest nodes), memory that is not shared (QEMU would copy every page),
 * discard (QEMU would punch the pool's pages out), memory devices, a memfd
 * source, no strict single host node in <numatune>. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <syslog.h>
#include <unistd.h>

#include "libvirt_hook.h"

#define MAX_MOUNTS 32

struct policy {
        struct lv_hook *h;
        char conf_mounts[MAX_MOUNTS][LV_PATH_MAX / 4];
        size_t n_conf;
        const struct lv_cell *cell;   /* the first cell, NULL if none */
        unsigned long long kib;       /* the guest RAM's page size, 0 = not hugepages */
        char pnode[32];
        uint64_t psize;
        char pmount[LV_PATH_MAX / 2];
};

void lv_note(const struct lv_hook *h, const char *fmt, ...)
{
        char msg[2 * LV_PATH_MAX], line[2 * LV_PATH_MAX + 200];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        snprintf(line, sizeof(line), "hpwarm hook: domain '%s': %s", h->dom, msg);
        if (h->s.log[0]) {
                FILE *f = fopen(h->s.log, "a");
                if (f) {
                        fprintf(f, "%s\n", line);
                        fclose(f);
                }
        } else {
                openlog("hpwarm-libvirt", 0, LOG_DAEMON);
                syslog(LOG_NOTICE, "%s", line);
                closelog();
        }
        fprintf(stderr, "%s\n", line);
}

/* Start as without hpwarm (or refuse, HPWARM_LIBVIRT_REQUIRED=yes): the
 * exit code of the run. */
static int cold(struct policy *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cold(struct policy *p, const char *fmt, ...)
{
        struct lv_hook *h = p->h;
        char why[2 * LV_PATH_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        /* A pool warmed at prepare for a start given up at start: back. */
        if (strcmp(h->op, "start") == 0 && h->pnote[0] && lv_exists(h->pnote))
                lv_give_back(h);
        if (h->pnote[0])
                unlink(h->pnote);
        if (h->preq)
                return lv_fail(h, "%s; refusing to start (HPWARM_LIBVIRT_REQUIRED=yes)", why);
        lv_note(h, "%s; starting without a warm pool", why);
        return 0;
}

/* libvirt's node set syntax (0,2-3,^2): whether N is in SET. */
static bool in_nodeset(long n, const char *set)
{
        char buf[256], *save = NULL;
        bool hit = false;

        snprintf(buf, sizeof(buf), "%s", set);
        for (char *x = strtok_r(buf, ",", &save); x; x = strtok_r(NULL, ",", &save)) {
                bool neg = *x == '^', in;
                char *dash;
                x += neg;
                if ((dash = strchr(x, '-'))) {
                        *dash = '\0';
                        if (!lv_digits(x) || !lv_digits(dash + 1))
                                return false;
                        in = n >= atol(x) && n <= atol(dash + 1);
                } else {
                        if (!lv_digits(x))
                                return false;
                        in = n == atol(x);
                }
                if (in)
                        hit = !neg;
        }
        return hit;
}

/* A mount table field: \040 for a blank, \011 a tab, \134 a backslash. */
static void unescape(const char *in, char *out, size_t len)
{
        size_t n = 0;

        for (const char *s = in; *s && n + 1 < len; s++) {
                if (s[0] == '\\' && (!strncmp(s + 1, "040", 3) || !strncmp(s + 1, "011", 3) || !strncmp(s + 1, "134", 3))) {
                        out[n++] = s[1] == '0' && s[2] == '4' ? ' ' : s[1] == '0' ? '\t' : '\\';
                        s += 3;
                } else {
                        out[n++] = *s;
                }
        }
        out[n] = '\0';
}

/* Call FN on every hugetlbfs line of the mount table: its (unescaped) mount
 * point and options; stop when FN returns true. */
static bool each_hugetlbfs(const struct policy *p, bool (*fn)(const char *mp, const char *opts, void *ud), void *ud)
{
        char line[LV_PATH_MAX], dev[LV_PATH_MAX], mp[LV_PATH_MAX], type[64], opts[LV_PATH_MAX / 2], mpu[LV_PATH_MAX];
        FILE *f = fopen(p->h->s.mounts, "r");
        bool stop = false;

        if (!f)
                return false;
        while (!stop && fgets(line, sizeof(line), f)) {
                opts[0] = '\0';
                if (sscanf(line, "%4095s %4095s %63s %2047s", dev, mp, type, opts) < 3 || strcmp(type, "hugetlbfs") != 0)
                        continue;
                unescape(mp, mpu, sizeof(mpu));
                stop = fn(mpu, opts, ud);
        }
        fclose(f);
        return stop;
}

struct page_probe {
        const char *path;
        unsigned long long kib;
};

static bool pagesize_of(const char *mp, const char *opts, void *ud)
{
        struct page_probe *pp = ud;
        char buf[LV_PATH_MAX / 2], *save = NULL;

        if (strcmp(mp, pp->path) != 0)
                return false;
        snprintf(buf, sizeof(buf), "%s", opts);
        for (char *o = strtok_r(buf, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
                size_t n;
                if (strncmp(o, "pagesize=", 9) != 0)
                        continue;
                o += 9;
                n = strlen(o);
                if (n < 2)
                        continue;
                char u = o[n - 1];
                o[n - 1] = '\0';
                if (!lv_digits(o))
                        continue;
                unsigned long long v = strtoull(o, NULL, 10);
                pp->kib = u == 'K' ? v : u == 'M' ? v * 1024 : u == 'G' ? v * 1048576 : 0;
                if (pp->kib)
                        return true;
        }
        return false;
}

/* The page size of hugetlbfs mount PATH in KiB, as libvirt reads it (statfs);
 * the mount table's pagesize= when it lists PATH.  0 if unknown. */
static unsigned long long mount_page_kib(const struct policy *p, const char *path)
{
        struct page_probe pp = { .path = path };
        struct statfs sf;

        if (each_hugetlbfs(p, pagesize_of, &pp))
                return pp.kib;
        if (statfs(path, &sf) < 0)
                return 0;
        return (unsigned long long)(sf.f_frsize ? sf.f_frsize : sf.f_bsize) / 1024;
}

/* qemu.conf's hugetlbfs_mount: a string or a list of strings. */
static void read_conf_mounts(struct policy *p)
{
        char line[LV_PATH_MAX];
        bool in = false, list = false;
        FILE *f = fopen(p->h->s.qemu_conf, "r");

        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *s = line;
                line[strcspn(line, "#")] = '\0';
                if (!in) {
                        s += strspn(s, " \t");
                        if (strncmp(s, "hugetlbfs_mount", 15) != 0)
                                continue;
                        s += 15 + strspn(s + 15, " \t");
                        if (*s != '=')
                                continue;
                        s++;
                        s += strspn(s, " \t");
                        in = true;
                        list = *s == '[';
                }
                for (char *q; (q = strchr(s, '"'));) {
                        char *e = strchr(q + 1, '"');
                        if (!e)
                                break;
                        *e = '\0';
                        if (p->n_conf < MAX_MOUNTS)
                                snprintf(p->conf_mounts[p->n_conf++], sizeof(p->conf_mounts[0]), "%s", q + 1);
                        s = e + 1;
                }
                if (!list || strchr(s, ']') || strchr(line, ']'))
                        break;
        }
        fclose(f);
}

/* The mounts libvirt knows, in its order: qemu.conf's hugetlbfs_mount if
 * set (virQEMUDriverConfigLoadFile), else every hugetlbfs in the mount table
 * (virFileFindHugeTLBFS). */
struct mount_list {
        size_t n;
        char m[MAX_MOUNTS][LV_PATH_MAX / 4];
};

static bool collect(const char *mp, const char *opts, void *ud)
{
        struct mount_list *l = ud;

        (void)opts;
        if (l->n < MAX_MOUNTS)
                snprintf(l->m[l->n++], sizeof(l->m[0]), "%s", mp);
        return false;
}

static void hugetlbfs_mounts(const struct policy *p, struct mount_list *l)
{
        l->n = 0;
        if (p->n_conf) {
                for (size_t i = 0; i < p->n_conf; i++)
                        snprintf(l->m[l->n++], sizeof(l->m[0]), "%s", p->conf_mounts[i]);
                return;
        }
        each_hugetlbfs(p, collect, l);
}

/* The page size of <hugepages/> without <page> (qemuBuildMemoryGetDefaultPagesize):
 * the "default" mount, which for qemu.conf's list is the second entry and
 * for detected mounts the one of the kernel's default Hugepagesize; else
 * the first. */
static unsigned long long default_page_kib(const struct policy *p)
{
        static struct mount_list l;
        unsigned long long first = 0, second = 0, dflt = 0, sys = 0;
        char line[256];
        FILE *f = fopen("/proc/meminfo", "r");
        size_t i = 0;

        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "Hugepagesize: %llu kB", &sys) == 1)
                        break;
        if (f)
                fclose(f);
        hugetlbfs_mounts(p, &l);
        for (size_t j = 0; j < l.n; j++) {
                unsigned long long k = mount_page_kib(p, l.m[j]);
                if (!k)
                        continue;
                i++;
                if (i == 1)
                        first = k;
                if (i == 2)
                        second = k;
                if (!dflt && k == sys)
                        dflt = k;
        }
        if (p->n_conf)
                return second ? second : first;
        return dflt ? dflt : first;
}

/* The first mount libvirt lists with KIB pages into P->pmount; false if none. */
static bool mount_for(struct policy *p, unsigned long long kib)
{
        static struct mount_list l;

        hugetlbfs_mounts(p, &l);
        for (size_t i = 0; i < l.n; i++) {
                if (l.m[i][0] && mount_page_kib(p, l.m[i]) == kib) {
                        snprintf(p->pmount, sizeof(p->pmount), "%s", l.m[i]);
                        return true;
                }
        }
        return false;
}

/* The page size libvirt gives the guest RAM (qemuBuildMemoryGetPagesize):
 * the <page> whose nodeset holds the cell, else the <page> without nodeset,
 * else none; <hugepages/> alone takes the default size; the system page size
 * counts as no hugepages.  LV_GO_ON with P->kib (0: not hugepages). */
static int policy_page(struct policy *p)
{
        const struct lv_domain *d = p->h->d;
        long target = p->cell && lv_digits(p->cell->id) ? atol(p->cell->id) : -1;
        unsigned long long master = 0, chosen = 0;

        for (size_t i = 0; i < d->n_pages; i++) {
                const struct lv_page *pg = &d->pages[i];
                uint64_t b;
                if (lv_to_bytes(pg->size, pg->unit[0] ? pg->unit : "KiB", &b) < 0)
                        return cold(p, "cannot read <page size='%s' unit='%s'>", pg->size, pg->unit);
                if (!pg->nodeset[0]) {
                        master = b / 1024;
                } else if (target >= 0 && in_nodeset(target, pg->nodeset)) {
                        chosen = b / 1024;
                        break;
                }
        }
        p->kib = chosen ? chosen : master;
        if (!d->n_pages) {
                p->kib = default_page_kib(p);
                if (!p->kib)
                        return cold(p, "<hugepages/> without a page size, and no hugetlbfs mount to take the default from");
        }
        if (p->kib == (unsigned long long)sysconf(_SC_PAGESIZE) / 1024)
                p->kib = 0;
        return LV_GO_ON;
}

static int policy_checks(struct policy *p)
{
        const struct lv_domain *d = p->h->d;
        const struct lv_cell *c = p->cell;
        const char *cid = c ? c->id : "", *acc = c && c->mem_access[0] ? c->mem_access : d->access_mode;
        const char *cdiscard = c ? c->discard : "", *mode, *set;
        char where[128];
        const struct lv_memnode *mn = NULL;
        size_t nmn = 0;

        if (strcmp(d->source_type, "memfd") == 0)
                return cold(p, "<memoryBacking><source type='memfd'/>: QEMU gets no file to map");
        if (d->n_devmem)
                return cold(p, "has %zu <memory> devices: their backends would share the guest RAM's hugepage path",
                            d->n_devmem);
        if (d->n_cells > 1)
                return cold(p, "has %zu NUMA cells: libvirt points every cell's memory backend at the same hugepage "
                            "path, and one pool file would back them all (aliased guest nodes); one pool per cell needs "
                            "<hpwarm:pools> metadata and file-backed cells", d->n_cells);
        if (strcmp(acc, "shared") != 0)
                return cold(p, "memory access is %s: QEMU would map the pool copy-on-write and copy every page; use "
                            "<access mode='shared'/> or memAccess='shared'", acc[0] ? acc : "private (the default)");
        if (strcmp(cdiscard, "yes") == 0 || (!cdiscard[0] && d->n_discard))
                return cold(p, "<discard/>: QEMU would punch the pool's pages out when it stops");
        if (c && c->id[0])
                mn = lv_domain_memnode(d, cid, &nmn);
        if (nmn) {
                mode = mn->mode[0] ? mn->mode : "strict";
                set = mn->nodeset;
                snprintf(where, sizeof(where), "<numatune><memnode cellid='%s'>", cid);
        } else if (d->n_nt_memory) {
                mode = d->nt_mode[0] ? d->nt_mode : "strict";
                set = d->nt_nodeset;
                snprintf(where, sizeof(where), "<numatune><memory>");
        } else {
                return cold(p, "no <numatune>: the host node to warm on is not known (add <numatune><memory "
                            "mode='strict' nodeset='N'/>)");
        }
        if (strcmp(d->nt_placement, "auto") == 0 && !set[0])
                return cold(p, "%s placement='auto': the host node is chosen by numad at start, not known at prepare",
                            where);
        if (strcmp(mode, "strict") != 0)
                return cold(p, "%s mode='%s': only strict binds the RAM to one node", where, mode);
        if (!lv_digits(set) || strlen(set) >= sizeof(p->pnode))
                return cold(p, "%s nodeset='%s' is not one host node", where, set);
        snprintf(p->pnode, sizeof(p->pnode), "%s", set);
        if (cid[0]) {
                if (lv_to_bytes(c->memory, c->unit[0] ? c->unit : "KiB", &p->psize) < 0)
                        return cold(p, "cannot read NUMA cell %s's memory", cid);
        } else if (lv_to_bytes(d->memory, d->memory_unit[0] ? d->memory_unit : "KiB", &p->psize) < 0) {
                return cold(p, "cannot read <memory>");
        }
        if (!mount_for(p, p->kib))
                return cold(p, "libvirt has no hugetlbfs mount of %llu KiB pages (qemu.conf hugetlbfs_mount, or the "
                            "mount table)", p->kib);
        return LV_GO_ON;
}

static bool same_dev(const char *a, const char *b)
{
        struct stat x, y;

        if (stat(a, &x) < 0 || stat(b, &y) < 0)
                return false;
        return x.st_dev == y.st_dev;
}

static int policy_prepare(struct policy *p)
{
        struct lv_hook *h = p->h;
        char page[48], why[512], text[LV_PATH_MAX + 8];
        struct lv_answer a;

        TRY(policy_checks(p));
        snprintf(page, sizeof(page), "%llukB", p->kib);
        struct lv_call c = lv_warm_call(h, p->pnode, p->psize, page);
        lv_ask(h, &c, &a);
        if (a.rc != 0) {
                lv_warm_why(h, p->pnode, a.rc, a.out, why, sizeof(why));
                if (a.rc != 3)
                        lv_give_back(h);
                return cold(p, "%s: %s", why, lv_flat(a.out));
        }
        struct lv_call sc = { .kind = LV_STATUS, .pool = h->pool, .timeout_s = 10 };
        lv_ask(h, &sc, &a);
        if (a.claimed) {
                h->pnote[0] = '\0';
                return cold(p, "pool '%s' is claimed by another process (a running VM's memory)", h->pool);
        }
        if (!a.path[0] || !same_dev(a.path, p->pmount)) {
                lv_give_back(h);
                return cold(p, "pool '%s' (%s) is not on libvirt's hugetlbfs mount %s, so it cannot be linked there "
                            "(give hpwarmd --hugetlbfs a directory on that mount)", h->pool,
                            a.path[0] ? a.path : "no path", p->pmount);
        }
        snprintf(text, sizeof(text), "%s\n", a.path);
        if (lv_mkdir_notes(h) < 0 || lv_write_file(h->pnote, text, 0) < 0) {
                lv_give_back(h);
                return cold(p, "cannot write %s", h->pnote);
        }
        lv_say(h, "pool '%s' ready on node %s (%llu bytes, %llu KiB pages) for %s", h->pool, p->pnode,
               (unsigned long long)p->psize, p->kib, p->pmount);
        return LV_GO_ON;
}

/* The candidates for libvirt's per-domain directory name (domain_conf.c
 * virDomainDefGetShortName): ID-NAME with NAME cut to 20 characters in
 * libvirtd's locale: bytes when ASCII, else maybe UTF-8 characters.  The
 * hook cannot see libvirtd's locale, so a non-ASCII name gives both. */
static size_t short_names(const char *id, const char *name, char out[2][LV_PATH_MAX / 4])
{
        size_t n = 1, bytes = strlen(name) < 20 ? strlen(name) : 20, chars = 0, i;
        bool ascii = true;

        snprintf(out[0], sizeof(out[0]), "%s-%.*s", id, (int)bytes, name);
        for (i = 0; name[i]; i++)
                if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] > 0x7e)
                        ascii = false;
        if (!ascii) {
                for (i = 0; name[i]; i++) {
                        if (((unsigned char)name[i] & 0xc0) != 0x80 && chars++ == 20)
                                break;
                }
                snprintf(out[1], sizeof(out[1]), "%s-%.*s", id, (int)i, name);
                n = 2;
        }
        return n;
}

/* The per-domain directory libvirt made for this start, into PDIR. */
static bool policy_dir(struct policy *p, char *pdir, size_t len)
{
        char names[2][LV_PATH_MAX / 4];
        const struct lv_domain *d = p->h->d;
        size_t n;

        if (!lv_digits(d->id))
                return false;
        n = short_names(d->id, d->name, names);
        for (size_t i = 0; i < n; i++) {
                struct stat st;
                int w = snprintf(pdir, len, "%s/libvirt/qemu/%s", p->pmount, names[i]);
                if (w > 0 && (size_t)w < len && names[i][0] && lstat(pdir, &st) == 0 && S_ISDIR(st.st_mode))
                        return true;
        }
        return false;
}

static void read_note(const char *path, char lines[3][LV_PATH_MAX])
{
        FILE *f = fopen(path, "r");

        for (int i = 0; i < 3; i++)
                lines[i][0] = '\0';
        if (!f)
                return;
        for (int i = 0; i < 3 && fgets(lines[i], LV_PATH_MAX, f); i++)
                lines[i][strcspn(lines[i], "\n")] = '\0';
        fclose(f);
}

static bool is_empty_dir(const char *path)
{
        DIR *d = opendir(path);
        struct dirent *e;
        bool empty = true;

        if (!d)
                return true;   /* as `ls -A` of nothing: the rmdir says why */
        while (empty && (e = readdir(d)))
                empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
        closedir(d);
        return empty;
}

static int policy_start(struct policy *p)
{
        struct lv_hook *h = p->h;
        char note[3][LV_PATH_MAX], pdir[LV_PATH_MAX], text[3 * LV_PATH_MAX];
        struct stat st;

        if (access(h->pnote, R_OK) != 0)
                return 0;   /* prepare started it cold */
        read_note(h->pnote, note);
        if (!mount_for(p, p->kib))
                return cold(p, "libvirt's hugetlbfs mount of %llu KiB pages is gone", p->kib);
        if (!policy_dir(p, pdir, sizeof(pdir)))
                return cold(p, "libvirt made no directory for this domain under %s/libvirt/qemu", p->pmount);
        if (!is_empty_dir(pdir))
                return cold(p, "%s is not empty", pdir);
        if (stat(pdir, &st) < 0)
                return cold(p, "cannot stat %s", pdir);
        if (rmdir(pdir) < 0)
                return cold(p, "cannot remove libvirt's empty %s", pdir);
        if (link(note[0], pdir) < 0) {
                if (mkdir(pdir, st.st_mode & 07777) == 0) {
                        if (chown(pdir, st.st_uid, st.st_gid) < 0) {
                                /* as libvirt made it, as far as we can */
                        }
                        chmod(pdir, st.st_mode & 07777);
                }
                return cold(p, "cannot link pool '%s' (%s) as %s", h->pool, note[0], pdir);
        }
        /* What started and release need to put libvirt's directory back. */
        snprintf(text, sizeof(text), "%s\n%s\n%u:%u %o\n", note[0], pdir, (unsigned)st.st_uid, (unsigned)st.st_gid,
                 (unsigned)(st.st_mode & 07777));
        lv_write_file(h->pnote, text, 0);
        return LV_GO_ON;
}

/* Undo start's link: the empty directory, owner and mode as libvirt made it. */
static void policy_unlink(struct policy *p)
{
        struct lv_hook *h = p->h;
        char note[3][LV_PATH_MAX], text[LV_PATH_MAX + 2];
        struct stat a, b;
        unsigned uid, gid, mode;

        if (access(h->pnote, R_OK) != 0)
                return;
        read_note(h->pnote, note);
        if (!note[1][0])
                return;
        if (lstat(note[1], &a) == 0 && S_ISREG(a.st_mode) && stat(note[0], &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino && sscanf(note[2], "%u:%u %o", &uid, &gid, &mode) == 3) {
                unlink(note[1]);
                if (mkdir(note[1], mode) == 0) {
                        if (chown(note[1], uid, gid) < 0) {
                                /* left to libvirt's clean-up, which removes it */
                        }
                        chmod(note[1], mode);
                }
        }
        snprintf(text, sizeof(text), "%s\n", note[0]);
        lv_write_file(h->pnote, text, 0);
}

static int policy_started(struct policy *p)
{
        unlink(p->h->in_note);
        if (access(p->h->pnote, R_OK) != 0)
                return 0;
        TRY(lv_started(p->h));
        policy_unlink(p);
        return LV_GO_ON;
}

static int policy_release(struct policy *p)
{
        unlink(p->h->in_note);
        if (access(p->h->pnote, R_OK) != 0)
                return 0;
        policy_unlink(p);
        TRY(lv_release(p->h));
        unlink(p->h->pnote);
        return LV_GO_ON;
}

static bool nl(const char *s)
{
        return strchr(s, '\n') != NULL;
}

int lv_policy_main(struct lv_hook *h)
{
        static struct policy p;
        const struct lv_domain *d = h->d;
        const char *req = h->s.required;
        char pool[128];
        int rc;

        memset(&p, 0, sizeof(p));
        p.h = h;
        if (strcmp(req, "yes") != 0 && strcmp(req, "no") != 0)
                return lv_fail(h, "HPWARM_LIBVIRT_REQUIRED=%s: expected yes or no", req);
        h->preq = strcmp(req, "yes") == 0;
        read_conf_mounts(&p);
        if (!d->n_hugepages)
                return 0;   /* not hugepage-backed: not ours */
        p.cell = d->n_cells ? &d->cells[0] : NULL;
        const struct lv_cell *c = p.cell;
        if (nl(d->source_type) || nl(d->access_mode) || nl(d->nt_mode) || nl(d->nt_nodeset) || nl(d->nt_placement) ||
            nl(d->uuid) || nl(d->memory) || nl(d->memory_unit) ||
            (c && (nl(c->id) || nl(c->memory) || nl(c->unit) || nl(c->mem_access) || nl(c->discard))))
                return cold(&p, "a line break in the domain's memory or NUMA settings");
        for (size_t i = 0; i < d->n_memnodes; i++)
                if (nl(d->memnodes[i].mode) || nl(d->memnodes[i].nodeset))
                        return cold(&p, "a line break in the domain's memory or NUMA settings");
        /* The pool name: the domain's, or from its UUID when the name is not one. */
        if (lv_pool_name_ok(h->dom)) {
                snprintf(pool, sizeof(pool), "%s", h->dom);
        } else {
                size_t n = snprintf(pool, sizeof(pool), "lv-");
                for (const char *u = d->uuid; *u && n + 1 < sizeof(pool); u++)
                        if ((*u >= '0' && *u <= '9') || (*u >= 'a' && *u <= 'f') || *u == '-')
                                pool[n++] = *u;
                pool[n] = '\0';
        }
        lv_set_pool(h, pool);
        /* What prepare took, for started and release: the policy's own note. */
        snprintf(h->pnote, sizeof(h->pnote), "%s/%s.policy", h->notes, pool);
        snprintf(h->own_note, sizeof(h->own_note), "%s", h->pnote);
        TRY(policy_page(&p));
        if (!p.kib)
                return 0;   /* this RAM is not on hugepages after all */
        if (strcmp(h->op, "prepare") == 0)
                rc = policy_prepare(&p);
        else if (strcmp(h->op, "start") == 0)
                rc = policy_start(&p);
        else if (strcmp(h->op, "started") == 0)
                rc = policy_started(&p);
        else if (strcmp(h->op, "release") == 0)
                rc = policy_release(&p);
        else   /* migrate: what cannot be served starts cold at prepare, as a start would */
                rc = lv_incoming(h);
        return rc == LV_GO_ON ? 0 : rc;
}
