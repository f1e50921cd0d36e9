/* libvirt_cells: a multi-node domain, one warm pool per NUMA cell.
 *
 * libvirt cannot be told to map a given file as a cell's RAM, and
 * <qemu:commandline> cannot replace the cells libvirt declares.  But with
 * <memoryBacking><source type='file'/> (and shared access) libvirt backs
 * cell i with the file MBD/libvirt/qemu/ID-NAME/ram-node<i>, MBD being
 * qemu.conf's memory_backing_dir: it makes that directory before the
 * "start" hook and QEMU opens the file then.  With MBD on the hugetlbfs
 * mount that holds hpwarmd's pool directory, a hard link of the warm pool
 * file at that name is what QEMU maps: the cell boots on warm pages.
 * libvirt removes the directory (our links) when the domain stops; the
 * pools stay hpwarmd's.  Each element: cell="i" node="N" size="S"
 * [pool="NAME"] (default pool name DOMAIN-cell<i>). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "libvirt_hook.h"

/* Load element I (0-based) as the pool at hand and check it. */
static int cell_attrs(struct lv_hook *h, size_t i)
{
        const struct lv_pool_el *p = &h->d->pools[i];
        char name[128];

        if (strchr(p->cell, '\n') || strchr(p->node, '\n') || strchr(p->size, '\n') || strchr(p->required, '\n') ||
            strchr(p->pool, '\n'))
                return lv_fail(h, "a line break in an <hpwarm:pool> attribute");
        if (!p->cell[0])
                return lv_fail(h, "<hpwarm:pool> element %zu lacks cell=\"N\" (with several pools, each names its "
                               "NUMA cell)", i + 1);
        if (!lv_digits(p->cell))
                return lv_fail(h, "<hpwarm:pool cell=\"%s\">: not a cell id", p->cell);
        if (p->pool[0])
                snprintf(name, sizeof(name), "%s", p->pool);
        else
                snprintf(name, sizeof(name), "%s-cell%s", h->dom, p->cell);
        lv_set_pool(h, name);
        h->cell = p->cell;
        h->node = p->node;
        h->size_attr = p->size;
        h->required = p->required;
        return lv_check_attrs(h);
}

/* The cell's memory, checked against the element: what prepare warms. */
static int cell_size(struct lv_hook *h, const struct lv_cell *c)
{
        uint64_t b;

        if (lv_to_bytes(c->memory, c->unit[0] ? c->unit : "KiB", &b) < 0)
                return lv_fail(h, "cannot read cell %s's memory", h->cell);
        char what[64];
        snprintf(what, sizeof(what), "cell %s's memory", h->cell);
        return lv_pool_size(h, b, what);
}

/* What prepare refuses before asking hpwarmd for anything. */
static int cells_check(struct lv_hook *h)
{
        const struct lv_domain *d = h->d;
        struct stat st;

        if (!h->s.mbd[0])
                return lv_fail(h, "<hpwarm:pool cell=...> needs HPWARM_LIBVIRT_MEMORY_BACKING_DIR (in "
                               "/etc/default/hpwarm-libvirt) set to qemu.conf's memory_backing_dir, a directory on the "
                               "hugetlbfs mount that holds hpwarmd's pool directory");
        if (stat(h->s.mbd, &st) < 0 || !S_ISDIR(st.st_mode))
                return lv_fail(h, "HPWARM_LIBVIRT_MEMORY_BACKING_DIR=%s is not a directory", h->s.mbd);
        if (strcmp(d->source_type, "file") != 0 || d->n_hugepages)
                return lv_fail(h, "<hpwarm:pool cell=...> needs <memoryBacking><source type='file'/> and no "
                               "<hugepages/>, so that libvirt backs each cell with a file in memory_backing_dir");
        if (d->n_pools != d->n_cells)
                return lv_fail(h, "has %zu <numa> cells but %zu <hpwarm:pool> elements: give every cell one, all "
                               "inside one <hpwarm:pools> element (libvirt keeps only the first element of a "
                               "namespace in <metadata>)", d->n_cells, d->n_pools);
        for (size_t i = 0; i < d->n_pools; i++) {
                size_t n;
                TRY(cell_attrs(h, i));
                for (size_t j = 0; j < i; j++)
                        if (strcmp(d->pools[j].cell, h->cell) == 0)
                                return lv_fail(h, "two <hpwarm:pool> elements for cell %s", h->cell);
                const struct lv_cell *c = lv_domain_cell(d, h->cell, &n);
                if (n != 1)
                        return lv_fail(h, "<hpwarm:pool cell=\"%s\">: the domain has no <numa> cell with id %s",
                                       h->cell, h->cell);
                if (strcmp(c->mem_access, "shared") != 0 &&
                    (c->mem_access[0] || strcmp(d->access_mode, "shared") != 0))
                        return lv_fail(h, "cell %s is not shared memory (memAccess='shared' on the cell, or <access "
                                       "mode='shared'/>): QEMU would copy the pool's pages instead of mapping them",
                                       h->cell);
                TRY(cell_size(h, c));
        }
        return LV_GO_ON;
}

static int cell_prepare(struct lv_hook *h)
{
        size_t n;
        char why[512];
        struct lv_answer a;

        /* Each cell's own size (cells_check proved every one). */
        TRY(cell_size(h, lv_domain_cell(h->d, h->cell, &n)));
        struct lv_call c = lv_warm_call(h, h->node, h->size_bytes, h->s.page_size);
        lv_ask(h, &c, &a);
        if (a.rc == 0) {
                unlink(h->cold_note);
                TRY(lv_took(h));
                lv_say(h, "pool '%s' ready on node %s for cell %s", h->pool, h->node, h->cell);
                return LV_GO_ON;
        }
        lv_warm_why(h, h->node, a.rc, a.out, why, sizeof(why));
        lv_flat(a.out);
        if (strcmp(h->required, "no") != 0)
                return lv_fail(h, "%s: %s; refusing to start (set required=\"no\" in <hpwarm:pool> to start cold instead)",
                               why, a.out);
        if (a.rc != 3)
                lv_give_back(h);
        /* Cold: libvirt and QEMU make the cell's file themselves. */
        if (lv_mkdir_notes(h) < 0 || lv_write_file(h->cold_note, "", 077) < 0)
                return lv_fail(h, "%s; cannot write %s", why, h->cold_note);
        lv_say(h, "%s: %s; required=\"no\": cell %s starts cold", why, a.out, h->cell);
        return LV_GO_ON;
}

/* start begin: libvirt has made the domain's memory directory MEMDIR; QEMU
 * is not running yet.  Link the ready pool in as the cell's file. */
static int cell_link(struct lv_hook *h, const char *memdir)
{
        struct lv_call c = { .kind = LV_STATUS, .pool = h->pool, .timeout_s = 10 };
        struct lv_answer a;
        char file[LV_PATH_MAX + 32], why[2 * LV_PATH_MAX + 300];

        if (lv_exists(h->cold_note))
                return LV_GO_ON;
        lv_ask(h, &c, &a);
        snprintf(file, sizeof(file), "%s/ram-node%s", memdir, h->cell);
        if (a.path[0] && link(a.path, file) == 0)
                return LV_GO_ON;
        snprintf(why, sizeof(why), "cannot link pool '%s' (%s) as %s (the memory_backing_dir must be on the "
                 "hugetlbfs mount of the pool directory)", h->pool, a.path[0] ? a.path : "no path", file);
        if (strcmp(h->required, "no") != 0)
                return lv_fail(h, "%s; refusing to start", why);
        lv_write_file(h->cold_note, "", 0);
        lv_say(h, "%s; required=\"no\": cell %s starts cold", why, h->cell);
        return LV_GO_ON;
}

/* The directory is ID-NAME with NAME shortened by libvirt; the id alone is
 * unique among running domains. */
static int memdir_of(struct lv_hook *h, char *memdir, size_t len)
{
        char base[LV_PATH_MAX - 300], prefix[64];
        DIR *dir;
        struct dirent *e;

        if (!lv_digits(h->d->id))
                return lv_fail(h, "no domain id in the XML at start");
        snprintf(base, sizeof(base), "%s/libvirt/qemu", h->s.mbd);
        snprintf(prefix, sizeof(prefix), "%s-", h->d->id);
        memdir[0] = '\0';
        if ((dir = opendir(base))) {
                while ((e = readdir(dir))) {
                        char p[LV_NOTE_MAX];
                        struct stat st;
                        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
                                continue;
                        snprintf(p, sizeof(p), "%s/%s", base, e->d_name);
                        if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                                continue;
                        if (memdir[0]) {
                                closedir(dir);
                                return lv_fail(h, "two memory directories for domain id %s under %s", h->d->id, base);
                        }
                        snprintf(memdir, len, "%s", p);
                }
                closedir(dir);
        }
        if (!memdir[0])
                return lv_fail(h, "libvirt made no memory directory %s/%s*: is qemu.conf's memory_backing_dir %s?",
                               base, prefix, h->s.mbd);
        return LV_GO_ON;
}

int lv_cells_main(struct lv_hook *h)
{
        const char *op = h->op;
        char memdir[LV_NOTE_MAX] = "";

        if (strcmp(op, "prepare") == 0 || strcmp(op, "migrate") == 0)
                TRY(cells_check(h));
        if (strcmp(op, "start") == 0)
                TRY(memdir_of(h, memdir, sizeof(memdir)));
        for (size_t i = 0; i < h->d->n_pools; i++) {
                TRY(cell_attrs(h, i));
                if (strcmp(op, "prepare") == 0)
                        TRY(cell_prepare(h));
                else if (strcmp(op, "start") == 0)
                        TRY(cell_link(h, memdir));
                else if (strcmp(op, "started") == 0)
                        TRY(lv_started(h));
                else if (strcmp(op, "release") == 0)
                        TRY(lv_release(h));
                else if (strcmp(op, "migrate") == 0)
                        TRY(lv_incoming(h));
        }
        return 0;
}
