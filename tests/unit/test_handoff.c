/* Table tests of handoff.c: the exact words for QEMU, cloud-hypervisor and
 * libvirt with one pool and with several, the escaping of each layer, and
 * the compositions it must refuse.
 *
 * Exact strings are written out so a change of the contract has to change
 * this file.  On top of that every output is read back by a small reader of
 * the consuming grammar, written here from its documentation: POSIX shell
 * words, QEMU's comma-doubling option syntax, cloud-hypervisor's
 * option_parser (split at commas outside quotes and brackets, trim, unquote
 * with "" for a quote; the keys its --memory, --memory-zone and --numa
 * accept, from vmm/src/config.rs and docs/memory.md) and XML attribute
 * values.  cloud-hypervisor's validation rules (the checks it makes before
 * it maps a zone) are written out below with the source line of each; every
 * composition must pass all of them.  A path full of awkward characters must come back byte for byte
 * through each of them. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>

#include "check.h"
#include "handoff.h"
#include "util.h"

#define M2 (2 * MIB)

static const char *const CH_MEMORY_KEYS[] = {
        "size",   "file",      "mergeable",     "hotplug_method", "hotplug_size", "hotplugged_size",
        "shared", "hugepages", "hugepage_size", "prefault",       "reserve",      "thp",
        NULL
};
static const char *const CH_ZONE_KEYS[] = { "id",
                                            "size",
                                            "file",
                                            "shared",
                                            "hugepages",
                                            "hugepage_size",
                                            "host_numa_node",
                                            "hotplug_size",
                                            "hotplugged_size",
                                            "prefault",
                                            "reserve",
                                            "mergeable",
                                            NULL };
static const char *const CH_NUMA_KEYS[] = { "guest_numa_id", "cpus", "distances", "memory_zones", "device_id", NULL };

/* ---- readers of the consuming grammars ---- */

#define MAXW 512

struct list {
        char *v[MAXW];
        size_t n;
};

static void list_free(struct list *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        l->n = 0;
}

static void list_add(struct list *l, const char *s, size_t n)
{
        CHECK(l->n < MAXW);
        l->v[l->n] = strndup(s, n);
        CHECK(l->v[l->n]);
        l->n++;
}

/* POSIX sh word splitting of what handoff writes: blanks separate words,
 * '...' quotes literally, a backslash outside quotes takes the next
 * character.  Anything a shell would expand ($, `, *, ?, ~ at the start, ...)
 * unquoted is a failure: the string must mean the same in any shell. */
static void shell_split(const char *s, struct list *out)
{
        char word[8192];
        size_t wl = 0;
        bool in_word = false;
        for (const char *p = s;; p++) {
                if (*p == '\0' || *p == ' ') {
                        if (in_word)
                                list_add(out, word, wl);
                        wl = 0;
                        in_word = false;
                        if (!*p)
                                return;
                        continue;
                }
                in_word = true;
                if (*p == '\'') {
                        for (p++; *p && *p != '\''; p++)
                                word[wl++] = *p;
                        CHECK(*p == '\'');
                } else if (*p == '\\') {
                        p++;
                        CHECK(*p);
                        word[wl++] = *p;
                } else {
                        if (strchr("$`\"*?[]{}~#&;|<>()!\t\n\r", *p))
                                CHECK_FAIL_("unquoted shell metacharacter '%c' in %s", *p, s);
                        word[wl++] = *p;
                }
                CHECK(wl < sizeof(word));
        }
}

/* QEMU option string: "a,k=v,k=v" with ",," standing for a comma.  Returns
 * the parts, unescaped; the first may be a bare word (the type). */
static void qemu_split(const char *s, struct list *out)
{
        char part[8192];
        size_t pl = 0;
        for (const char *p = s;; p++) {
                if (*p == ',' && p[1] == ',') {
                        part[pl++] = ',';
                        p++;
                } else if (*p == ',' || *p == '\0') {
                        list_add(out, part, pl);
                        pl = 0;
                        if (!*p)
                                return;
                } else {
                        part[pl++] = *p;
                }
                CHECK(pl < sizeof(part));
        }
}

/* cloud-hypervisor option_parser: split at commas outside "..." and [...],
 * then per option key=value with the value trimmed and dequoted. */
static void ch_split(const char *s, struct list *keys, struct list *vals)
{
        char cur[8192];
        size_t cl = 0;
        int brackets = 0;
        bool q = false;
        for (const char *p = s;; p++) {
                if (*p == '\0' || (*p == ',' && !q && brackets == 0)) {
                        cur[cl] = '\0';
                        const char *eq = strchr(cur, '=');
                        CHECK(eq);
                        list_add(keys, cur, (size_t)(eq - cur));
                        /* trim, then dequote: '"' toggles, "" inside quotes is one '"' */
                        const char *v = eq + 1, *e = cur + cl;
                        while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')
                                v++;
                        while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
                                e--;
                        char out[8192];
                        size_t ol = 0;
                        bool iq = false;
                        char prev = 0;
                        for (const char *c = v; c < e; c++) {
                                if (*c == '"') {
                                        if (prev == '"' && !iq)
                                                out[ol++] = '"';
                                        iq = !iq;
                                } else {
                                        out[ol++] = *c;
                                }
                                prev = *c;
                        }
                        CHECK(!iq);
                        list_add(vals, out, ol);
                        cl = 0;
                        if (!*p)
                                break;
                        continue;
                }
                if (*p == '"')
                        q = !q;
                else if (!q && *p == '[')
                        brackets++;
                else if (!q && *p == ']')
                        CHECK(brackets-- > 0);
                cur[cl++] = *p;
                CHECK(cl < sizeof(cur));
        }
        CHECK(!q);
        CHECK(brackets == 0);
}

static bool in_set(const char *k, const char *const *set)
{
        for (; *set; set++)
                if (strcmp(k, *set) == 0)
                        return true;
        return false;
}

static const char *ch_get(const struct list *keys, const struct list *vals, const char *k)
{
        for (size_t i = 0; i < keys->n; i++)
                if (strcmp(keys->v[i], k) == 0)
                        return vals->v[i];
        return NULL;
}

/* cloud-hypervisor ByteSized: digits with an optional K, M or G (binary). */
static uint64_t ch_bytes(const char *s)
{
        char *end;
        uint64_t v = strtoull(s, &end, 10);
        CHECK(end != s);
        if (*end == 'K')
                v <<= 10, end++;
        else if (*end == 'M')
                v <<= 20, end++;
        else if (*end == 'G')
                v <<= 30, end++;
        CHECK(*end == '\0');
        return v;
}

/* The <qemu:arg value="..."/> values of a libvirt fragment, unescaped. */
static void xml_args(const char *xml, struct list *out)
{
        const char *open = "<qemu:commandline>\n", *close = "</qemu:commandline>";
        CHECK(strncmp(xml, open, strlen(open)) == 0);
        const char *p = xml + strlen(open);
        for (;;) {
                if (strcmp(p, close) == 0)
                        return;
                const char *pre = "  <qemu:arg value=\"";
                CHECK(strncmp(p, pre, strlen(pre)) == 0);
                p += strlen(pre);
                char v[8192];
                size_t vl = 0;
                static const struct {
                        const char *ref;
                        char c;
                } refs[] = {
                        { "&amp;", '&' },   { "&lt;", '<' },  { "&gt;", '>' },   { "&quot;", '"' },
                        { "&apos;", '\'' }, { "&#9;", '\t' }, { "&#10;", '\n' }, { "&#13;", '\r' },
                };
                while (*p != '"') {
                        CHECK(*p && *p != '<' && *p != '>' && *p != '\'' && (unsigned char)*p >= 0x20);
                        if (*p == '&') {
                                size_t i;
                                for (i = 0; i < ARRAY_SIZE(refs); i++)
                                        if (strncmp(p, refs[i].ref, strlen(refs[i].ref)) == 0)
                                                break;
                                CHECK(i < ARRAY_SIZE(refs));
                                v[vl++] = refs[i].c;
                                p += strlen(refs[i].ref);
                        } else {
                                v[vl++] = *p++;
                        }
                        CHECK(vl < sizeof(v));
                }
                CHECK(strncmp(p, "\"/>\n", 4) == 0);
                p += 4;
                list_add(out, v, vl);
        }
}

/* ---- helpers ---- */

/* The table's row for NAME (the test fails if there is none). */
static const struct handoff_format *F(const char *name)
{
        const struct handoff_format *f = handoff_format_find(name);
        CHECK(f);
        return f;
}

#define QEMU F("qemu")
#define CLOUD_HYPERVISOR F("cloud-hypervisor")
#define LIBVIRT F("libvirt")

static struct handoff *compose(const struct handoff_format *vmm, const struct handoff_pool *p, size_t n)
{
        struct handoff *h = NULL;
        int r = handoff_compose(vmm, p, n, &h);
        CHECK_INT(r, ==, 0);
        CHECK(h);
        CHECK(h->argv[h->argc] == NULL);
        return h;
}

static void check_argv(const struct handoff *h, const char *const *want)
{
        size_t n = 0;
        while (want[n])
                n++;
        for (size_t i = 0; i < n && i < h->argc; i++)
                CHECK_STR(h->argv[i], want[i]);
        CHECK_INT(h->argc, ==, n);
}

/* Every rendering reads back as the argv words. */
static void check_renderings_agree(const struct handoff *h)
{
        struct list l = { .n = 0 };
        shell_split(h->shell, &l);
        CHECK_INT(l.n, ==, h->argc);
        for (size_t i = 0; i < l.n; i++)
                CHECK_STR(l.v[i], h->argv[i]);
        list_free(&l);
        if (h->xml) {
                xml_args(h->xml, &l);
                CHECK_INT(l.n, ==, h->argc);
                for (size_t i = 0; i < l.n; i++)
                        CHECK_STR(l.v[i], h->argv[i]);
                list_free(&l);
        }
        for (size_t i = 0; i < h->argc; i++)
                if (strstr(h->argv[i], "discard-data"))
                        CHECK_FAIL_("rule: never discard-data (it punches the pool's pages out): %s", h->argv[i]);
}

static const char AWKWARD[] = "/mnt/h p,o'l\"d&<x>[1]=$HOME`id`*/a,,b/vm-1";

static const struct handoff_pool ONE = { "vm-42", "/dev/hugepages/hpwarm/vm-42", 0, GIB, M2, NULL };
static const struct handoff_pool TWO[] = {
        { "vm-a", "/dev/hugepages/hpwarm/vm-a", 0, 160 * MIB, M2, NULL },
        { "vm-b", "/dev/hugepages1G/hpwarm/vm-b", 1, 2 * GIB, GIB, NULL },
};

/* ---- tests, one rule each ---- */

TEST(qemu_one_pool_is_guest_ram)
{
        struct handoff *h = compose(QEMU, &ONE, 1);
        const char *const want[] = {
                "-object",
                "memory-backend-file,id=mem-vm-42,mem-path=/dev/hugepages/hpwarm/vm-42,size=1073741824,"
                "share=on,prealloc=on,host-nodes=0,policy=bind",
                "-machine",
                "memory-backend=mem-vm-42",
                NULL,
        };
        check_argv(h, want);
        CHECK_STR(h->shell,
                  "-object memory-backend-file,id=mem-vm-42,mem-path=/dev/hugepages/hpwarm/vm-42,"
                  "size=1073741824,share=on,prealloc=on,host-nodes=0,policy=bind "
                  "-machine memory-backend=mem-vm-42");
        CHECK(h->xml == NULL);
        CHECK_U64(h->memory_bytes, ==, GIB);
        check_renderings_agree(h);
        handoff_free(h);
}

TEST(qemu_pools_become_numa_nodes_in_order)
{
        struct handoff *h = compose(QEMU, TWO, 2);
        const char *const want[] = {
                "-object",
                "memory-backend-file,id=mem-vm-a,mem-path=/dev/hugepages/hpwarm/vm-a,size=167772160,"
                "share=on,prealloc=on,host-nodes=0,policy=bind",
                "-object",
                "memory-backend-file,id=mem-vm-b,mem-path=/dev/hugepages1G/hpwarm/vm-b,size=2147483648,"
                "share=on,prealloc=on,host-nodes=1,policy=bind",
                "-numa",
                "node,nodeid=0,memdev=mem-vm-a",
                "-numa",
                "node,nodeid=1,memdev=mem-vm-b",
                NULL,
        };
        check_argv(h, want);
        /* -machine memory-backend and -numa memdev exclude each other in QEMU. */
        for (size_t i = 0; i < h->argc; i++)
                CHECK(strstr(h->argv[i], "memory-backend=") == NULL);
        CHECK_U64(h->memory_bytes, ==, 160 * MIB + 2 * GIB);
        check_renderings_agree(h);
        handoff_free(h);

        /* The order given is the guest's node order. */
        const struct handoff_pool rev[] = { TWO[1], TWO[0] };
        h = compose(QEMU, rev, 2);
        CHECK_STR(h->argv[5], "node,nodeid=0,memdev=mem-vm-b");
        CHECK_STR(h->argv[7], "node,nodeid=1,memdev=mem-vm-a");
        handoff_free(h);
}

/* A migration destination takes the source's ids: QEMU matches the
 * incoming stream's RAM blocks by the backend's id (mem-SRC), so the
 * destination's file goes under the source pool's name, on both the
 * -object and the -machine / -numa word that names it. */
TEST(qemu_as_maps_the_pool_under_the_source_id)
{
        struct handoff_pool dst = ONE;
        dst.name = "vm-42-dst";
        dst.path = "/dev/hugepages/hpwarm/vm-42-dst";
        dst.as = "vm-42";
        struct handoff *h = compose(QEMU, &dst, 1);
        const char *const want[] = {
                "-object",
                "memory-backend-file,id=mem-vm-42,mem-path=/dev/hugepages/hpwarm/vm-42-dst,size=1073741824,"
                "share=on,prealloc=on,host-nodes=0,policy=bind",
                "-machine",
                "memory-backend=mem-vm-42",
                NULL,
        };
        check_argv(h, want);
        check_renderings_agree(h);
        handoff_free(h);

        /* Two nodes: each destination pool under its own source's id, in
         * the order given. */
        struct handoff_pool two[2] = { TWO[0], TWO[1] };
        two[0].name = "vm-a2";
        two[0].as = "vm-a";
        two[1].name = "vm-b2";
        two[1].as = "vm-b";
        h = compose(QEMU, two, 2);
        CHECK_STR(h->argv[1], "memory-backend-file,id=mem-vm-a,mem-path=/dev/hugepages/hpwarm/vm-a,size=167772160,"
                              "share=on,prealloc=on,host-nodes=0,policy=bind");
        CHECK_STR(h->argv[5], "node,nodeid=0,memdev=mem-vm-a");
        CHECK_STR(h->argv[7], "node,nodeid=1,memdev=mem-vm-b");
        handoff_free(h);

        /* libvirt carries the same words. */
        h = compose(LIBVIRT, &dst, 1);
        CHECK(strstr(h->xml, "<qemu:arg value=\"memory-backend=mem-vm-42\"/>") != NULL);
        check_renderings_agree(h);
        handoff_free(h);
}

/* Two pools may not answer to one id: the stream's block would match both.
 * A source's id given twice, or equal to another pool's own name, is
 * refused; an as equal to the pool's own name is simply its id. */
TEST(as_ids_must_be_distinct)
{
        struct handoff_pool p[2] = { { "a", "/p/a", 0, M2, M2, "s" }, { "b", "/p/b", 0, M2, M2, "s" } };
        struct handoff *h = (struct handoff *)0x1;
        CHECK_INT(handoff_compose(QEMU, p, 2, &h), ==, -EINVAL);
        p[0].as = NULL;
        p[1].as = "a";
        CHECK_INT(handoff_compose(QEMU, p, 2, &h), ==, -EINVAL);
        p[1].as = NULL;
        p[0].as = "b";
        CHECK_INT(handoff_compose(CLOUD_HYPERVISOR, p, 2, &h), ==, -EINVAL);
        p[0].as = "bad,id";
        CHECK_INT(handoff_compose(QEMU, p, 2, &h), ==, -EINVAL);
        p[0].as = "";
        CHECK_INT(handoff_compose(QEMU, p, 2, &h), ==, -EINVAL);
        CHECK(h == (struct handoff *)0x1);
        p[0].as = "a";
        h = compose(QEMU, p, 2);
        CHECK_STR(h->argv[5], "node,nodeid=0,memdev=mem-a");
        handoff_free(h);
}

TEST(cloud_hypervisor_one_pool)
{
        struct handoff *h = compose(CLOUD_HYPERVISOR, &ONE, 1);
        const char *const want[] = {
                "--memory",
                "size=0",
                "--memory-zone",
                "id=vm-42,size=1073741824,file=/dev/hugepages/hpwarm/vm-42,shared=on,hugepages=on,"
                "hugepage_size=2M",
                NULL,
        };
        check_argv(h, want);
        CHECK(h->xml == NULL);
        CHECK_U64(h->memory_bytes, ==, GIB);
        check_renderings_agree(h);
        handoff_free(h);
}

TEST(cloud_hypervisor_pools_become_numa_nodes)
{
        struct handoff *h = compose(CLOUD_HYPERVISOR, TWO, 2);
        const char *const want[] = {
                "--memory",
                "size=0",
                "--memory-zone",
                "id=vm-a,size=167772160,file=/dev/hugepages/hpwarm/vm-a,shared=on,hugepages=on,"
                "hugepage_size=2M",
                "--memory-zone",
                "id=vm-b,size=2147483648,file=/dev/hugepages1G/hpwarm/vm-b,shared=on,hugepages=on,"
                "hugepage_size=1G",
                "--numa",
                "guest_numa_id=0,memory_zones=vm-a",
                "--numa",
                "guest_numa_id=1,memory_zones=vm-b",
                NULL,
        };
        check_argv(h, want);
        check_renderings_agree(h);
        handoff_free(h);
}

/* Every cloud-hypervisor word parses under its grammar with keys it knows,
 * and says what the pool is. */
static void check_ch_grammar(const struct handoff *h, const struct handoff_pool *pools, size_t n)
{
        size_t zones = 0, numa = 0;
        CHECK_INT(h->argc % 2, ==, 0);
        for (size_t i = 0; i < h->argc; i += 2) {
                struct list k = { .n = 0 }, v = { .n = 0 };
                const char *flag = h->argv[i];
                ch_split(h->argv[i + 1], &k, &v);
                if (strcmp(flag, "--memory") == 0) {
                        for (size_t j = 0; j < k.n; j++)
                                CHECK(in_set(k.v[j], CH_MEMORY_KEYS));
                        CHECK_U64(ch_bytes(ch_get(&k, &v, "size")), ==, 0);
                } else if (strcmp(flag, "--memory-zone") == 0) {
                        const struct handoff_pool *p = &pools[zones++];
                        for (size_t j = 0; j < k.n; j++)
                                CHECK(in_set(k.v[j], CH_ZONE_KEYS));
                        CHECK_STR(ch_get(&k, &v, "id"), p->name);
                        CHECK_STR(ch_get(&k, &v, "file"), p->path);
                        CHECK_U64(ch_bytes(ch_get(&k, &v, "size")), ==, p->size_bytes);
                        CHECK_U64(ch_bytes(ch_get(&k, &v, "hugepage_size")), ==, p->page_size);
                        CHECK_STR(ch_get(&k, &v, "shared"), "on");
                        CHECK_STR(ch_get(&k, &v, "hugepages"), "on");
                        CHECK(ch_get(&k, &v, "host_numa_node") == NULL);
                } else if (strcmp(flag, "--numa") == 0) {
                        for (size_t j = 0; j < k.n; j++)
                                CHECK(in_set(k.v[j], CH_NUMA_KEYS));
                        CHECK_INT(atoi(ch_get(&k, &v, "guest_numa_id")), ==, numa);
                        CHECK_STR(ch_get(&k, &v, "memory_zones"), pools[numa].name);
                        numa++;
                } else {
                        CHECK_FAIL_("unexpected cloud-hypervisor flag %s", flag);
                }
                list_free(&k);
                list_free(&v);
        }
        CHECK_INT(zones, ==, n);
        CHECK_INT(numa, ==, n > 1 ? n : 0);
}

TEST(cloud_hypervisor_grammar)
{
        struct handoff *h = compose(CLOUD_HYPERVISOR, &ONE, 1);
        check_ch_grammar(h, &ONE, 1);
        handoff_free(h);
        h = compose(CLOUD_HYPERVISOR, TWO, 2);
        check_ch_grammar(h, TWO, 2);
        handoff_free(h);
}

/* ---- cloud-hypervisor's own validation rules ----
 *
 * Each rule below is one check cloud-hypervisor makes before or while it
 * builds guest memory, read from its source at commit
 * ae44c2971c83dd2b1bd704fa81102ec0dec4e7d4 (2026-08-22, v53.0 + fixes); the
 * file:line is where the rule lives there.  ch_refusal() applies them to a
 * cloud-hypervisor argv and names the first one broken, so every
 * composition can be put through all of them, and each rule is shown to
 * refuse the input it exists for (a rule that accepts everything would
 * prove nothing). */

#define CH_MAX_ZONES (HANDOFF_MAX_POOLS + 2)

struct ch_cfg {
        struct list mk, mv;
        size_t nz, nn;
        struct list zk[CH_MAX_ZONES], zv[CH_MAX_ZONES];
        struct list nk[CH_MAX_ZONES], nv[CH_MAX_ZONES];
        bool memory;
};

static void ch_cfg_free(struct ch_cfg *c)
{
        list_free(&c->mk);
        list_free(&c->mv);
        for (size_t i = 0; i < c->nz; i++)
                list_free(&c->zk[i]), list_free(&c->zv[i]);
        for (size_t i = 0; i < c->nn; i++)
                list_free(&c->nk[i]), list_free(&c->nv[i]);
        free(c);
}

/* option_parser/src/lib.rs:303-312: a Toggle is "", on, off, true or false. */
static bool ch_toggle(const char *v, bool *on)
{
        if (!v) {
                *on = false;
                return true;
        }
        if (strcmp(v, "on") == 0 || strcmp(v, "true") == 0)
                return (*on = true);
        if (!*v || strcmp(v, "off") == 0 || strcmp(v, "false") == 0)
                return !(*on = false);
        return false;
}

/* option_parser/src/lib.rs:330-351: ByteSized is a u64 with an optional
 * K, M or G (binary) suffix. */
static bool ch_bytesized(const char *v, uint64_t *ret)
{
        char *end;
        if (!v || !*v || *v < '0' || *v > '9')
                return false;
        errno = 0;
        uint64_t n = strtoull(v, &end, 10);
        unsigned shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        if (shift)
                end++;
        if (errno || *end)
                return false;
        *ret = n << shift;
        return true;
}

#define REFUSE(...)                                      \
        do {                                             \
                snprintf(why, sizeof(why), __VA_ARGS__); \
                ch_cfg_free(c);                          \
                return strdup(why);                      \
        } while (0)

/* NULL if cloud-hypervisor's rules accept ARGV, else (caller frees) the
 * first rule it breaks, with the line the rule comes from. */
static char *ch_refusal(char *const *argv, size_t argc)
{
        static char why[512];
        struct ch_cfg *c = calloc(1, sizeof(*c));
        CHECK(c);
        if (argc % 2)
                REFUSE("an option without a value");
        for (size_t i = 0; i < argc; i += 2) {
                struct list *k, *v;
                const char *const *keys;
                if (strcmp(argv[i], "--memory") == 0) {
                        if (c->memory)
                                REFUSE("--memory given twice (cloud-hypervisor/src/main.rs takes one)");
                        c->memory = true;
                        k = &c->mk, v = &c->mv, keys = CH_MEMORY_KEYS;
                } else if (strcmp(argv[i], "--memory-zone") == 0) {
                        if (c->nz == CH_MAX_ZONES)
                                REFUSE("too many zones for this reader");
                        k = &c->zk[c->nz], v = &c->zv[c->nz], keys = CH_ZONE_KEYS;
                        c->nz++;
                } else if (strcmp(argv[i], "--numa") == 0) {
                        if (c->nn == CH_MAX_ZONES)
                                REFUSE("too many numa nodes for this reader");
                        k = &c->nk[c->nn], v = &c->nv[c->nn], keys = CH_NUMA_KEYS;
                        c->nn++;
                } else {
                        REFUSE("flag %s is not one the handoff may print", argv[i]);
                }
                ch_split(argv[i + 1], k, v);
                for (size_t j = 0; j < k->n; j++) {
                        if (!in_set(k->v[j], keys))
                                REFUSE("UnknownOption(%s) in %s (option_parser/src/lib.rs:139-143; keys: "
                                       "vmm/src/config.rs:1097-1109 --memory, 1168-1180 --memory-zone, "
                                       "2642-2649 --numa)",
                                       k->v[j], argv[i]);
                        for (size_t l = 0; l < j; l++)
                                if (strcmp(k->v[l], k->v[j]) == 0)
                                        REFUSE("%s given twice in one %s (the option parser keeps the last: "
                                               "ambiguous)",
                                               k->v[j], argv[i]);
                }
        }
        uint64_t size = 0;
        if (!c->memory || !ch_bytesized(ch_get(&c->mk, &c->mv, "size"), &size))
                REFUSE("--memory size= missing or not a ByteSized (vmm/src/config.rs:1113-1117: the default "
                       "would add 512 MiB of anonymous RAM)");
        if (size != 0)
                REFUSE("--memory size=%" PRIu64 ": only size=0 makes the zones the guest's RAM "
                       "(vmm/src/memory_manager.rs:1672)",
                       size);
        if (c->nz == 0)
                REFUSE("MissingMemoryZones: size=0 needs zones (vmm/src/memory_manager.rs:1439-1452)");
        for (size_t z = 0; z < c->nz; z++) {
                const struct list *k = &c->zk[z], *v = &c->zv[z];
                const char *id = ch_get(k, v, "id");
                bool shared, hugepages, mergeable;
                uint64_t zsize, hps;
                if (!id)
                        REFUSE("ParseMemoryZoneIdMissing (vmm/src/config.rs:1183)");
                if (strncmp(id, "__", 2) == 0)
                        REFUSE("InvalidIdentifier(%s): ids may not start with __ (vmm/src/config.rs:3186-3188, "
                               "applied to zones at 3594-3597)",
                               id);
                for (size_t y = 0; y < z; y++)
                        if (strcmp(ch_get(&c->zk[y], &c->zv[y], "id"), id) == 0)
                                REFUSE("IdentifierNotUnique(%s) (vmm/src/config.rs:3190-3191)", id);
                if (!ch_bytesized(ch_get(k, v, "size"), &zsize) || zsize == 0)
                        REFUSE("zone %s: size= missing, 0 or not a ByteSized (vmm/src/config.rs:1184-1188 "
                               "defaults it to 512 MiB)",
                               id);
                if (!ch_toggle(ch_get(k, v, "shared"), &shared) || !ch_toggle(ch_get(k, v, "hugepages"), &hugepages) ||
                    !ch_toggle(ch_get(k, v, "mergeable"), &mergeable))
                        REFUSE("zone %s: a toggle is not on/off (option_parser/src/lib.rs:303-312)", id);
                const char *hps_s = ch_get(k, v, "hugepage_size");
                if (hps_s) {
                        if (!ch_bytesized(hps_s, &hps))
                                REFUSE("zone %s: hugepage_size not a ByteSized (vmm/src/config.rs:1200-1203)", id);
                        if (!hugepages)
                                REFUSE("HugePageSizeWithoutHugePages: zone %s (vmm/src/config.rs:3471-3474)", id);
                        if (hps == 0 || (hps & (hps - 1)))
                                REFUSE("InvalidHugePageSize(%" PRIu64 "): zone %s (vmm/src/config.rs:3475-3477)", hps,
                                       id);
                }
                if (shared && mergeable)
                        REFUSE("InvalidSharedMemoryWithMergeable: zone %s (vmm/src/config.rs:3467-3469)", id);
                if (shared && ch_get(k, v, "file") && ch_get(k, v, "host_numa_node"))
                        REFUSE("InvalidSharedMemoryZoneWithHostNuma: zone %s has file=, shared=on and "
                               "host_numa_node (vmm/src/memory_manager.rs:1458-1464)",
                               id);
        }
        bool used[CH_MAX_ZONES] = { false };
        for (size_t i = 0; i < c->nn; i++) {
                const struct list *k = &c->nk[i], *v = &c->nv[i];
                const char *gid = ch_get(k, v, "guest_numa_id"), *mz = ch_get(k, v, "memory_zones");
                if (!gid || !*gid || strspn(gid, "0123456789") != strlen(gid))
                        REFUSE("--numa without a u32 guest_numa_id (vmm/src/config.rs:2653-2659)");
                for (size_t j = 0; j < i; j++)
                        if (atoll(ch_get(&c->nk[j], &c->nv[j], "guest_numa_id")) == atoll(gid))
                                REFUSE("guest_numa_id=%s twice: \"Can't define twice the same NUMA node\" "
                                       "(vmm/src/vm.rs:1276-1278)",
                                       gid);
                if (!mz || !*mz)
                        REFUSE("--numa guest_numa_id=%s: memory_zones missing or empty (vmm/src/config.rs:"
                               "2725-2731; without zones the node has no memory)",
                               gid);
                /* StringList: one name, or [a,b] (option_parser/src/lib.rs). */
                char list[1024];
                snprintf(list, sizeof(list), "%s", mz);
                char *p = list;
                if (*p == '[') {
                        p++;
                        size_t n = strlen(p);
                        if (n == 0 || p[n - 1] != ']')
                                REFUSE("memory_zones=%s: unclosed list", mz);
                        p[n - 1] = '\0';
                }
                for (char *save = NULL, *name = strtok_r(p, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
                        size_t z;
                        for (z = 0; z < c->nz; z++)
                                if (strcmp(ch_get(&c->zk[z], &c->zv[z], "id"), name) == 0)
                                        break;
                        if (z == c->nz)
                                REFUSE("Unknown memory zone '%s' (vmm/src/vm.rs:1291-1293)", name);
                        if (used[z])
                                REFUSE("MemoryZoneReused(%s) (vmm/src/config.rs:3556-3567)", name);
                        used[z] = true;
                }
        }
        ch_cfg_free(c);
        return NULL;
}

#undef REFUSE

/* Fails the test with the rule if cloud-hypervisor would refuse H. */
static void check_ch_accepts(const struct handoff *h)
{
        char *why = ch_refusal(h->argv, h->argc);
        if (why)
                CHECK_FAIL_("cloud-hypervisor refuses %s: %s", h->shell, why);
        free(why);
}

/* Our own contract on top: several pools make one guest node each, in the
 * order given; one pool makes no --numa at all. */
static void check_ch_nodes(const struct handoff *h, const struct handoff_pool *pools, size_t n)
{
        size_t node = 0;
        for (size_t i = 0; i + 1 < h->argc; i += 2) {
                if (strcmp(h->argv[i], "--numa") != 0)
                        continue;
                char want[128];
                snprintf(want, sizeof(want), "guest_numa_id=%zu,memory_zones=%s", node, pools[node].name);
                CHECK_STR(h->argv[i + 1], want);
                node++;
        }
        CHECK_INT(node, ==, n > 1 ? n : 0);
}

TEST(cloud_hypervisor_rules_accept_every_composition)
{
        struct handoff_pool many[HANDOFF_MAX_POOLS];
        char names[HANDOFF_MAX_POOLS][16];
        for (size_t i = 0; i < HANDOFF_MAX_POOLS; i++) {
                snprintf(names[i], sizeof(names[i]), "p%zu", i);
                many[i] = (struct handoff_pool){ names[i], "/p/x", (int)(i % 4), M2, i % 2 ? GIB : M2, NULL };
        }
        const struct handoff_pool odd[] = {
                { "vm-1", AWKWARD, 0, 64 * MIB, M2, NULL }, { "_x", "/p/_x", 3, 3 * M2, 64 * KIB, NULL }, /* one underscore is allowed */
        };
        const struct {
                const struct handoff_pool *p;
                size_t n;
        } cases[] = { { &ONE, 1 }, { TWO, 2 }, { many, HANDOFF_MAX_POOLS }, { odd, 1 }, { odd, 2 }, { odd + 1, 1 } };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                struct handoff *h = compose(CLOUD_HYPERVISOR, cases[i].p, cases[i].n);
                check_ch_accepts(h);
                check_ch_nodes(h, cases[i].p, cases[i].n);
                handoff_free(h);
        }
}

/* Each rule refuses what it is there for: the argv is the good one-pool or
 * two-pool handoff with one word changed. */
static void check_rule_refuses(const char *rule, const char *const *argv)
{
        size_t n = 0;
        while (argv[n])
                n++;
        char *why = ch_refusal((char *const *)argv, n);
        if (!why)
                CHECK_FAIL_("rule %s accepted an argv it exists to refuse", rule);
        else if (!strstr(why, rule))
                CHECK_FAIL_("rule %s: refused for another reason: %s", rule, why);
        free(why);
}

#define ZONE_A "id=a,size=2M,file=/p/a,shared=on,hugepages=on,hugepage_size=2M"
#define ZONE_B "id=b,size=2M,file=/p/b,shared=on,hugepages=on,hugepage_size=2M"

TEST(cloud_hypervisor_rule_shared_file_zone_without_host_numa_node)
{
        /* What hpwarm printed before: every boot failed on it. */
        check_rule_refuses(
                "memory_manager.rs:1458-1464",
                (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A ",host_numa_node=0", NULL, NULL });
        /* Private or anonymous zones may carry it. */
        char *why = ch_refusal((char *const[]){ "--memory", "size=0", "--memory-zone",
                                                "id=a,size=2M,file=/p/a,shared=off,host_numa_node=0" },
                               4);
        CHECK(why == NULL);
        free(why);
}

TEST(cloud_hypervisor_rule_known_keys)
{
        check_rule_refuses("UnknownOption(thp) in --memory-zone",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A ",thp=on", NULL, NULL });
        check_rule_refuses("UnknownOption(id) in --memory",
                           (const char *const[]){ "--memory", "size=0,id=x", "--memory-zone", ZONE_A, NULL, NULL });
        check_rule_refuses("UnknownOption(nodeid) in --numa",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A, "--numa",
                                                  "guest_numa_id=0,nodeid=0,memory_zones=a", NULL });
}

TEST(cloud_hypervisor_rule_hugepage_size_needs_hugepages)
{
        check_rule_refuses("config.rs:3471-3474",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone",
                                                  "id=a,size=2M,file=/p/a,shared=on,hugepage_size=2M", NULL, NULL });
        check_rule_refuses("config.rs:3475-3477",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone",
                                                  "id=a,size=2M,file=/p/a,shared=on,hugepages=on,hugepage_size=3M",
                                                  NULL, NULL });
}

TEST(cloud_hypervisor_rule_zone_ids)
{
        check_rule_refuses("config.rs:3186-3188",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone",
                                                  "id=__a,size=2M,file=/p/a,shared=on", NULL, NULL });
        check_rule_refuses(
                "config.rs:3190-3191",
                (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A, "--memory-zone", ZONE_A, NULL });
        check_rule_refuses(
                "config.rs:1183",
                (const char *const[]){ "--memory", "size=0", "--memory-zone", "size=2M,file=/p/a,shared=on", NULL, NULL });
        /* And the handoff never offers such an id. */
        const struct handoff_pool p = { "__a", "/p/__a", 0, M2, M2, NULL };
        struct handoff *h = (struct handoff *)0x1;
        CHECK_INT(handoff_compose(CLOUD_HYPERVISOR, &p, 1, &h), ==, -EINVAL);
        CHECK(h == (struct handoff *)0x1);
        h = compose(QEMU, &p, 1); /* QEMU has no such rule */
        handoff_free(h);
}

TEST(cloud_hypervisor_rule_size_zero_means_zones)
{
        check_rule_refuses("memory_manager.rs:1672",
                           (const char *const[]){ "--memory", "size=1G", "--memory-zone", ZONE_A, NULL, NULL });
        check_rule_refuses("memory_manager.rs:1439-1452", (const char *const[]){ "--memory", "size=0", NULL });
        check_rule_refuses("config.rs:1113-1117", (const char *const[]){ "--memory-zone", ZONE_A, NULL });
}

TEST(cloud_hypervisor_rule_shared_not_mergeable)
{
        check_rule_refuses("config.rs:3467-3469",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A ",mergeable=on", NULL, NULL });
}

TEST(cloud_hypervisor_rule_one_numa_node_per_zone)
{
        check_rule_refuses("config.rs:2653-2659",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A, "--numa",
                                                  "memory_zones=a", NULL });
        check_rule_refuses("config.rs:2725-2731",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A, "--numa",
                                                  "guest_numa_id=0", NULL });
        check_rule_refuses("config.rs:3556-3567",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A, "--memory-zone",
                                                  ZONE_B, "--numa", "guest_numa_id=0,memory_zones=a", "--numa",
                                                  "guest_numa_id=1,memory_zones=a", NULL });
        check_rule_refuses("vm.rs:1276-1278",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A, "--memory-zone",
                                                  ZONE_B, "--numa", "guest_numa_id=0,memory_zones=a", "--numa",
                                                  "guest_numa_id=0,memory_zones=b", NULL });
        check_rule_refuses("vm.rs:1291-1293",
                           (const char *const[]){ "--memory", "size=0", "--memory-zone", ZONE_A, "--numa",
                                                  "guest_numa_id=0,memory_zones=c", NULL });
}

/* ---- cloud-hypervisor restore and receive-migration ----
 *
 * Both take the VM's config, memory zones included, from the snapshot
 * (restore: recv_vm_config(source_url), vmm/src/lib.rs:2494) or from the
 * source's stream (receive: VmMigrationConfig read at lib.rs:1183-1192); no
 * --memory-zone is given.  The restore options are these keys
 * (RestoreConfig::parse, vmm/src/config.rs:2885-2893), none of which names a
 * zone's file or id: */
static const char *const CH_RESTORE_KEYS[] = { "source_url", "memory_restore_mode", "prefault", "net_fds",
                                               "vfio_fds", "iommufd_fd", "resume", "zone_updates", NULL };

/* Why cloud-hypervisor refuses restore options OPTS for a snapshot whose
 * zones are ZONES (the handoff's words, as the snapshot's config saved
 * them); NULL when it accepts. */
static char *ch_restore_refusal(const char *opts, const struct handoff *zones)
{
        static char why[256];
        struct list k = { .n = 0 }, v = { .n = 0 };
        ch_split(opts, &k, &v);
        why[0] = '\0';
        for (size_t i = 0; i < k.n && !why[0]; i++) {
                if (!in_set(k.v[i], CH_RESTORE_KEYS))
                        snprintf(why, sizeof(why), "unknown restore option %s (vmm/src/config.rs:2885-2893)", k.v[i]);
                else if (strcmp(k.v[i], "zone_updates") == 0)
                        /* update_memory_zones moves a zone to another host
                         * node, and refuses it for a zone backed by a file
                         * and shared: every handoff zone (lib.rs:2317-2324). */
                        for (size_t j = 0; j + 1 < zones->argc && !why[0]; j++)
                                if (strcmp(zones->argv[j], "--memory-zone") == 0 &&
                                    strstr(zones->argv[j + 1], ",shared=on") && strstr(zones->argv[j + 1], ",file="))
                                        snprintf(why, sizeof(why),
                                                 "SharedZoneBackedByFile (vmm/src/lib.rs:2317-2324)");
        }
        list_free(&k);
        list_free(&v);
        return why[0] ? why : NULL;
}

TEST(cloud_hypervisor_restore_rule_options_name_no_zone_file)
{
        struct handoff *h = compose(CLOUD_HYPERVISOR, &ONE, 1);
        CHECK(ch_restore_refusal("source_url=file:///snap,resume=on", h) == NULL);
        CHECK(ch_restore_refusal("source_url=file:///snap,prefault=on", h) == NULL);
        const char *const bad[] = { "source_url=file:///snap,file=/dev/hugepages/hpwarm/vm-43",
                                    "source_url=file:///snap,memory_zones=[vm-42]",
                                    "source_url=file:///snap,id=vm-43", NULL };
        for (size_t i = 0; bad[i]; i++)
                if (!ch_restore_refusal(bad[i], h))
                        CHECK_FAIL_("rule config.rs:2885-2893: restore accepted %s", bad[i]);
        handoff_free(h);
}

TEST(cloud_hypervisor_restore_rule_zone_updates_refused_on_pool_zones)
{
        struct handoff *h = compose(CLOUD_HYPERVISOR, TWO, 2);
        char *why = ch_restore_refusal("source_url=file:///snap,zone_updates=[vm-a@1]", h);
        CHECK(why != NULL);
        if (why)
                CHECK(strstr(why, "lib.rs:2317-2324") != NULL);
        handoff_free(h);
}

/* restore_memory_regions_and_zones maps each saved RAM mapping from the zone
 * config whose id it names, with that config's file, shared flag and page
 * size, at the saved offset and size (vmm/src/memory_manager.rs:792-813).
 * So what lands a restore (or an incoming migration) on warm memory is a
 * pool at the very path the source's zone names, of its size: a pool of
 * the source's name in the same pool directory, whose words are the
 * source's word for word; no rename (as) can be carried. */
TEST(cloud_hypervisor_restore_rule_zone_is_the_saved_file)
{
        struct handoff_pool dst = ONE;   /* the destination host's pool: same name, same directory */
        struct handoff *src_h = compose(CLOUD_HYPERVISOR, &ONE, 1), *dst_h = compose(CLOUD_HYPERVISOR, &dst, 1);
        CHECK_INT(src_h->argc, ==, dst_h->argc);
        for (size_t i = 0; i < src_h->argc && i < dst_h->argc; i++)
                CHECK_STR(dst_h->argv[i], src_h->argv[i]);
        handoff_free(dst_h);
        /* Another name would be another file and another zone: nothing the
         * restore reads. */
        dst.name = "vm-43";
        dst.path = "/dev/hugepages/hpwarm/vm-43";
        dst_h = compose(CLOUD_HYPERVISOR, &dst, 1);
        CHECK(strcmp(dst_h->argv[3], src_h->argv[3]) != 0);
        handoff_free(dst_h);
        handoff_free(src_h);
}

TEST(libvirt_fragment)
{
        struct handoff *h = compose(LIBVIRT, &ONE, 1);
        CHECK_STR(h->xml,
                  "<qemu:commandline>\n"
                  "  <qemu:arg value=\"-object\"/>\n"
                  "  <qemu:arg value=\"memory-backend-file,id=mem-vm-42,mem-path=/dev/hugepages/hpwarm/vm-42,"
                  "size=1073741824,share=on,prealloc=on,host-nodes=0,policy=bind\"/>\n"
                  "  <qemu:arg value=\"-machine\"/>\n"
                  "  <qemu:arg value=\"memory-backend=mem-vm-42\"/>\n"
                  "</qemu:commandline>");
        /* libvirt's words are QEMU's. */
        struct handoff *q = compose(QEMU, &ONE, 1);
        CHECK_INT(h->argc, ==, q->argc);
        for (size_t i = 0; i < q->argc; i++)
                CHECK_STR(h->argv[i], q->argv[i]);
        CHECK_STR(h->shell, q->shell);
        handoff_free(q);
        check_renderings_agree(h);
        CHECK_STR(h->xml_namespace, "xmlns:qemu=\"http://libvirt.org/schemas/domain/qemu/1.0\"");
        handoff_free(h);

        h = compose(LIBVIRT, TWO, 2);
        CHECK(strstr(h->xml, "<qemu:arg value=\"node,nodeid=1,memdev=mem-vm-b\"/>"));
        check_renderings_agree(h);
        handoff_free(h);
}

/* A path with every character that means something to one of the layers. */

TEST(escaping_round_trips_through_every_layer)
{
        const struct handoff_pool p[] = {
                { "vm-1", AWKWARD, 0, 64 * MIB, M2, NULL },
                { "vm.2_x", "/plain/vm.2_x", 3, 2 * MIB, M2, NULL },
        };
        for (size_t n = 1; n <= 2; n++) {
                struct handoff *h = compose(QEMU, p, n);
                struct list parts = { .n = 0 };
                qemu_split(h->argv[1], &parts);
                CHECK_STR(parts.v[0], "memory-backend-file");
                CHECK_STR(parts.v[1], "id=mem-vm-1");
                CHECK(strncmp(parts.v[2], "mem-path=", 9) == 0);
                CHECK_STR(parts.v[2] + 9, AWKWARD);
                CHECK_STR(parts.v[3], "size=67108864");
                CHECK_INT(parts.n, ==, 8);
                list_free(&parts);
                check_renderings_agree(h);
                handoff_free(h);

                h = compose(CLOUD_HYPERVISOR, p, n);
                check_ch_grammar(h, p, n);
                check_renderings_agree(h);
                handoff_free(h);

                h = compose(LIBVIRT, p, n);
                check_renderings_agree(h);
                CHECK(strstr(h->xml, "&quot;d&amp;&lt;x&gt;") != NULL);
                handoff_free(h);
        }
        /* cloud-hypervisor trims blanks at a value's edges: they are quoted. */
        const struct handoff_pool edge = { "e", " /lead and trail/ ", 0, M2, M2, NULL };
        struct handoff *h = compose(CLOUD_HYPERVISOR, &edge, 1);
        check_ch_grammar(h, &edge, 1);
        CHECK(strstr(h->argv[3], "file=\" /lead and trail/ \"") != NULL);
        handoff_free(h);
        /* XML carries tab and newline as references, not as blanks. */
        const struct handoff_pool nl = { "n", "/a\tb\nc\rd", 0, M2, M2, NULL };
        h = compose(LIBVIRT, &nl, 1);
        CHECK(strstr(h->xml, "/a&#9;b&#10;c&#13;d") != NULL);
        check_renderings_agree(h);
        handoff_free(h);
}

TEST(sizes_are_exact)
{
        const struct handoff_pool odd = { "o", "/p/o", 0, 3 * M2, 64 * KIB, NULL };
        struct handoff *h = compose(CLOUD_HYPERVISOR, &odd, 1);
        CHECK(strstr(h->argv[3], ",size=6291456,") != NULL);
        CHECK(strstr(h->argv[3], ",hugepage_size=64K") != NULL);
        handoff_free(h);
        const struct handoff_pool big[] = {
                { "a", "/p/a", 0, UINT64_MAX / 2, GIB, NULL },
                { "b", "/p/b", 0, UINT64_MAX / 2 + 1, GIB, NULL },
        };
        h = compose(QEMU, big, 2);
        CHECK_U64(h->memory_bytes, ==, UINT64_MAX);
        CHECK(strstr(h->argv[3], ",size=9223372036854775808,") != NULL);
        handoff_free(h);
}

TEST(max_pools)
{
        struct handoff_pool p[HANDOFF_MAX_POOLS + 1];
        char names[HANDOFF_MAX_POOLS + 1][16];
        for (size_t i = 0; i <= HANDOFF_MAX_POOLS; i++) {
                snprintf(names[i], sizeof(names[i]), "p%zu", i);
                p[i] = (struct handoff_pool){ names[i], "/p/x", (int)(i % 4), M2, M2, NULL };
        }
        struct handoff *h = compose(QEMU, p, HANDOFF_MAX_POOLS);
        CHECK_INT(h->argc, ==, 4 * HANDOFF_MAX_POOLS);
        CHECK_STR(h->argv[h->argc - 1], "node,nodeid=63,memdev=mem-p63");
        CHECK_U64(h->memory_bytes, ==, HANDOFF_MAX_POOLS * M2);
        handoff_free(h);
        h = (struct handoff *)0x1;
        CHECK_INT(handoff_compose(QEMU, p, HANDOFF_MAX_POOLS + 1, &h), ==, -EINVAL);
        CHECK(h == (struct handoff *)0x1);
}

struct bad {
        const char *why;
        const char *vmm;
        struct handoff_pool p[2];
        size_t n;
};

static const struct bad BAD[] = {
        { "no pools", "qemu", { { 0 } }, 0 },
        { "duplicate name", "qemu", { { "a", "/p/a", 0, M2, M2, NULL }, { "a", "/p/b", 0, M2, M2, NULL } }, 2 },
        { "empty name", "qemu", { { "", "/p/a", 0, M2, M2, NULL } }, 1 },
        { "NULL name", "qemu", { { NULL, "/p/a", 0, M2, M2, NULL } }, 1 },
        { "comma in name", "qemu", { { "a,b", "/p/a", 0, M2, M2, NULL } }, 1 },
        { "slash in name", "cloud-hypervisor", { { "a/b", "/p/a", 0, M2, M2, NULL } }, 1 },
        { "bracket in name", "cloud-hypervisor", { { "a[", "/p/a", 0, M2, M2, NULL } }, 1 },
        { "empty path", "qemu", { { "a", "", 0, M2, M2, NULL } }, 1 },
        { "NULL path", "qemu", { { "a", NULL, 0, M2, M2, NULL } }, 1 },
        { "zero size", "qemu", { { "a", "/p/a", 0, 0, M2, NULL } }, 1 },
        { "zero page size", "qemu", { { "a", "/p/a", 0, M2, 0, NULL } }, 1 },
        { "negative node", "qemu", { { "a", "/p/a", -1, M2, M2, NULL } }, 1 },
        { "total overflows", "qemu", { { "a", "/p/a", 0, UINT64_MAX - M2 + 1, M2, NULL }, { "b", "/p/b", 0, M2, M2, NULL } }, 2 },
        { "control character in a libvirt path", "libvirt", { { "a", "/p/\x01", 0, M2, M2, NULL } }, 1 },
        { "unknown vmm", "xen", { { "a", "/p/a", 0, M2, M2, NULL } }, 1 },
};

TEST(refusals)
{
        for (size_t i = 0; i < ARRAY_SIZE(BAD); i++) {
                struct handoff *h = (struct handoff *)0x1;
                int r = handoff_compose(handoff_format_find(BAD[i].vmm), BAD[i].p, BAD[i].n, &h);
                if (r != -EINVAL)
                        CHECK_FAIL_("refusal \"%s\": want -EINVAL, got %d", BAD[i].why, r);
                if (h != (struct handoff *)0x1)
                        CHECK_FAIL_("refusal \"%s\": *ret written", BAD[i].why);
        }
        CHECK_INT(handoff_compose(QEMU, NULL, 1, &(struct handoff *){ NULL }), ==, -EINVAL);
        /* The control character QEMU's and the shell's syntax carry fine. */
        const struct handoff_pool ctl = { "a", "/p/\x01", 0, M2, M2, NULL };
        struct handoff *h = compose(QEMU, &ctl, 1);
        check_renderings_agree(h);
        handoff_free(h);
        handoff_free(NULL);
}

TEST(vmm_names)
{
        /* The rows of common/vmm_formats.def, in order, with their keys. */
        static const struct {
                const char *name, *key, *argv_key;
                enum hpw_vmm_output output;
                bool takes_as;
        } want[] = {
                { "qemu", "qemu", "qemu_argv", HPW_VMM_SHELL, true },
                { "cloud-hypervisor", "cloud_hypervisor", "cloud_hypervisor_argv", HPW_VMM_SHELL, false },
                { "libvirt", "libvirt", NULL, HPW_VMM_XML, true },
        };
        CHECK_INT(handoff_n_formats, ==, ARRAY_SIZE(want));
        for (size_t i = 0; i < ARRAY_SIZE(want) && i < handoff_n_formats; i++) {
                const struct handoff_format *f = &handoff_formats[i];
                CHECK_STR(f->name, want[i].name);
                CHECK_STR(f->key, want[i].key);
                if (want[i].argv_key)
                        CHECK_STR(f->argv_key, want[i].argv_key);
                else
                        CHECK(f->argv_key == NULL);
                CHECK_INT(f->output, ==, want[i].output);
                CHECK_INT(f->as_refused == NULL, ==, want[i].takes_as);
                CHECK(handoff_format_find(want[i].name) == f);
        }
        const char *bad[] = { "QEMU", "ch", "", "qemu ", "cloud_hypervisor", "xen", NULL };
        for (size_t i = 0; bad[i]; i++)
                CHECK(handoff_format_find(bad[i]) == NULL);
        CHECK(handoff_format_find(NULL) == NULL);
        char list[128];
        handoff_format_names(list, sizeof(list));
        CHECK_STR(list, "qemu, cloud-hypervisor or libvirt");
        handoff_format_names(list, 8);
        CHECK_STR(list, "qemu, c");
}

TEST_MAIN()
