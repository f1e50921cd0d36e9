/* libvirt.domain: client/src/libvirt/libvirt_domain.c read directly, each field of
 * struct lv_domain for the domain XMLs the libvirt tests use (test_hook.py's
 * hand-written and Nova-shaped ones, test_libvirt.py's boot and two-cell
 * ones, test_migrate.py's incoming one, as libvirt formats it), "" for what
 * is absent, document order, the cell and memnode look-ups, lists of
 * thousands and deep nesting, and the refusals (not well-formed, empty, too
 * large, a DOCTYPE: no entity expanded, nothing fetched; a WHY too small).
 * No libvirt, no daemon: the XML is a string here.  Under the asan preset
 * LeakSanitizer checks that lv_domain_free() frees all. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "check.h"
#include "libvirt_domain.h"

#define QNS "http://libvirt.org/schemas/domain/qemu/1.0"
#define UUID_A "6a1c0f3e-2b4d-4e5f-8a9b-0c1d2e3f4a5b"
#define NOVA_UUID "0d3f6a7e-6b0a-4c8e-9a57-2c1b2d3e4f50"

/* ---- helpers ---- */

static struct lv_domain *parse_len(const char *xml, size_t len)
{
        struct lv_domain *d = NULL;
        char why[256] = "";
        int rc = lv_domain_parse(xml, len, &d, why, sizeof(why));

        if (rc != 0)
                fprintf(stderr, "lv_domain_parse: %d (%s)\n", rc, why);
        CHECK_INT(rc, ==, 0);
        CHECK(d != NULL);
        return d;
}

static struct lv_domain *parse(const char *xml)
{
        return parse_len(xml, strlen(xml));
}

/* lv_domain_parse's answer to XML that must be refused: -EINVAL, a
 * non-empty WHY on one line, *RET untouched. */
static void refused(const char *xml, size_t len)
{
        struct lv_domain *d = NULL;
        char why[256];

        memset(why, 'X', sizeof(why));
        CHECK_INT(lv_domain_parse(xml, len, &d, why, sizeof(why)), ==, -EINVAL);
        CHECK(d == NULL);
        CHECK(memchr(why, '\0', sizeof(why)) != NULL);
        CHECK(why[0] != '\0');
        CHECK(strchr(why, '\n') == NULL);
}

static void str_is(const char *field, size_t i, const char *got, const char *want)
{
        if (!want)
                want = "";
        if (!got || strcmp(got, want) != 0)
                fprintf(stderr, "field %s (element %zu):\n", field, i);
        CHECK_STR(got, want);
}

static void count_is(const char *field, size_t got, size_t want)
{
        if (got != want)
                fprintf(stderr, "count %s:\n", field);
        CHECK_U64(got, ==, want);
}

#define STR(f) str_is(#f, 0, d->f, w->f)
#define EL(f, i) str_is(#f, i, d->f, w->f)

/* D holds exactly W: every string field equal (NULL in W means ""; D's is
 * never NULL), every count and list element equal, in order. */
static void check_domain(const struct lv_domain *d, const struct lv_domain *w)
{
        CHECK(d->arena != NULL);
        STR(id);
        STR(name);
        STR(uuid);
        STR(memory);
        STR(memory_unit);
        STR(dac_label);
        count_is("n_pools", d->n_pools, w->n_pools);
        for (size_t i = 0; i < w->n_pools; i++) {
                EL(pools[i].node, i);
                EL(pools[i].size, i);
                EL(pools[i].required, i);
                EL(pools[i].pool, i);
                EL(pools[i].cell, i);
        }
        count_is("n_qemu_args", d->n_qemu_args, w->n_qemu_args);
        for (size_t i = 0; i < w->n_qemu_args; i++)
                EL(qemu_args[i], i);
        count_is("n_hugepages", d->n_hugepages, w->n_hugepages);
        count_is("n_pages", d->n_pages, w->n_pages);
        for (size_t i = 0; i < w->n_pages; i++) {
                EL(pages[i].size, i);
                EL(pages[i].unit, i);
                EL(pages[i].nodeset, i);
        }
        STR(source_type);
        STR(access_mode);
        count_is("n_discard", d->n_discard, w->n_discard);
        count_is("n_cells", d->n_cells, w->n_cells);
        for (size_t i = 0; i < w->n_cells; i++) {
                EL(cells[i].id, i);
                EL(cells[i].memory, i);
                EL(cells[i].unit, i);
                EL(cells[i].mem_access, i);
                EL(cells[i].discard, i);
        }
        count_is("n_devmem", d->n_devmem, w->n_devmem);
        count_is("n_nt_memory", d->n_nt_memory, w->n_nt_memory);
        STR(nt_mode);
        STR(nt_nodeset);
        STR(nt_placement);
        count_is("n_memnodes", d->n_memnodes, w->n_memnodes);
        for (size_t i = 0; i < w->n_memnodes; i++) {
                EL(memnodes[i].cellid, i);
                EL(memnodes[i].mode, i);
                EL(memnodes[i].nodeset, i);
        }
}

/* Parse XML, check it holds W, free it. */
static void check_xml(const char *xml, const struct lv_domain *w)
{
        struct lv_domain *d = parse(xml);

        check_domain(d, w);
        lv_domain_free(d);
}

/* ---- the domains the libvirt tests use ---- */

/* test_hook.py's domain(meta="node='0' size='256M' required='no'",
 * path=POOLDIR/vm1) with a comma in the pool directory (doubled in QEMU's
 * option syntax), beside another namespace's metadata. */
TEST(hook_domain_opted_in)
{
        static const char xml[] =
                "<domain type='qemu' xmlns:qemu='" QNS "'><name>vm1</name><uuid>" UUID_A "</uuid>"
                "<memory>262144</memory>"
                "<metadata><other:x xmlns:other='urn:other'/><hpwarm:pool xmlns:hpwarm='urn:hpwarm:libvirt:1' "
                "node='0' size='256M' required='no'/></metadata>"
                "<os><type>hvm</type></os>"
                "<qemu:commandline><qemu:arg value='-object'/>"
                "<qemu:arg value='memory-backend-file,id=mem-vm1,mem-path=/tmp/a,,b/pools/vm1,size=1,share=on,"
                "prealloc=on'/>"
                "<qemu:arg value='-machine'/><qemu:arg value='memory-backend=mem-vm1'/></qemu:commandline>"
                "</domain>";
        const struct lv_domain w = {
                .name = "vm1",
                .uuid = UUID_A,
                .memory = "262144",
                .n_pools = 1,
                .pools = (struct lv_pool_el[]){ { .node = "0", .size = "256M", .required = "no" } },
                .n_qemu_args = 4,
                .qemu_args = (const char *[]){ "-object",
                                               "memory-backend-file,id=mem-vm1,mem-path=/tmp/a,,b/pools/vm1,"
                                               "size=1,share=on,prealloc=on",
                                               "-machine", "memory-backend=mem-vm1" },
        };

        check_xml(xml, &w);
}

/* test_hook.py's domain(unit='MiB', memory='256'): not opted in, nothing but
 * the basics; its <seclabel> variants: the static DAC label read, the
 * first such <seclabel> with a <label> winning. */
TEST(hook_domain_plain_and_dac_label)
{
        static const struct lv_domain plain = {
                .name = "vm1", .uuid = UUID_A, .memory = "256", .memory_unit = "MiB",
        };
        static const struct lv_domain labelled = {
                .name = "vm1", .uuid = UUID_A, .memory = "256", .memory_unit = "MiB", .dac_label = "+64100:+64101",
        };

        check_xml("<domain type='qemu' xmlns:qemu='" QNS "'><name>vm1</name><uuid>" UUID_A "</uuid>"
                  "<memory unit='MiB'>256</memory><os><type>hvm</type></os></domain>",
                  &plain);
        check_xml("<domain type='qemu'><name>vm1</name><uuid>" UUID_A "</uuid><memory unit='MiB'>256</memory>"
                  "<seclabel type='static' model='dac' relabel='no'><label>+64100:+64101</label></seclabel>"
                  "<os><type>hvm</type></os></domain>",
                  &labelled);
        /* Other models, a dynamic DAC label, a static one without <label>:
         * passed over for the first static DAC <seclabel> with a label. */
        check_xml("<domain type='qemu'><name>vm1</name><uuid>" UUID_A "</uuid><memory unit='MiB'>256</memory>"
                  "<seclabel type='static' model='selinux'><label>system_u:system_r:svirt_t:s0</label></seclabel>"
                  "<seclabel type='dynamic' model='dac' relabel='yes'><label>+64055:+64055</label></seclabel>"
                  "<seclabel type='static' model='dac' relabel='no'/>"
                  "<seclabel type='static' model='dac'><label>+64100:+64101</label></seclabel>"
                  "<seclabel type='static' model='dac'><label>qemu:kvm</label></seclabel>"
                  "<os><type>hvm</type></os></domain>",
                  &labelled);
        /* A name label is read as written: the hook decides what it means. */
        {
                struct lv_domain *d = parse("<domain><seclabel type='static' model='dac'><label>qemu:kvm</label>"
                                            "</seclabel></domain>");
                CHECK_STR(d->dac_label, "qemu:kvm");
                lv_domain_free(d);
        }
        /* Dynamic only: no static label. */
        {
                struct lv_domain *d = parse("<domain><seclabel type='dynamic' model='dac'><label>+1:+1</label>"
                                            "</seclabel><seclabel type='none' model='none'/></domain>");
                CHECK_STR(d->dac_label, "");
                lv_domain_free(d);
        }
}

/* test_libvirt.py's domain_xml() as libvirt.boot defines it: indented,
 * line breaks between elements, the <uuid> the test inserts, <metadata>
 * with pool_meta(), and the <qemu:commandline> `hpwarm handoff --vmm
 * libvirt` prints (double quotes, one argument a line). */
TEST(boot_domain)
{
        static const char xml[] =
                "<domain type='qemu' xmlns:qemu='" QNS "'>\n"
                "  <name>hpw-lv-basic</name>\n"
                "  <uuid>" UUID_A "</uuid>\n"
                "  <memory unit='MiB'>256</memory>\n"
                "  <vcpu>1</vcpu>\n"
                "  <metadata><hpwarm:pool xmlns:hpwarm='urn:hpwarm:libvirt:1' node='0' size='256M'/></metadata>\n"
                "  <os>\n"
                "    <type arch='x86_64' machine='q35'>hvm</type>\n"
                "    <kernel>/tmp/hpwarm-libvirt/vmlinuz</kernel>\n"
                "    <initrd>/tmp/hpwarm-libvirt/initrd.gz</initrd>\n"
                "    <cmdline>console=ttyS0 panic=-1 quiet</cmdline>\n"
                "  </os>\n"
                "  <on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>\n"
                "  <devices>\n"
                "    <serial type='file'><source path='/tmp/hpwarm-libvirt/hpw-lv-basic.serial.log'/>"
                "<target port='0'/></serial>\n"
                "    <memballoon model='none'/>\n"
                "  </devices>\n"
                "  <qemu:commandline>\n"
                "  <qemu:arg value=\"-object\"/>\n"
                "  <qemu:arg value=\"memory-backend-file,id=mem-hpw-lv-basic,mem-path=/mnt/hp/hpwarm/hpw-lv-basic,"
                "size=268435456,share=on,prealloc=on,host-nodes=0,policy=bind\"/>\n"
                "  <qemu:arg value=\"-machine\"/>\n"
                "  <qemu:arg value=\"memory-backend=mem-hpw-lv-basic\"/>\n"
                "</qemu:commandline>\n"
                "</domain>\n";
        const struct lv_domain w = {
                .name = "hpw-lv-basic",
                .uuid = UUID_A,
                .memory = "256",
                .memory_unit = "MiB",
                .n_pools = 1,
                .pools = (struct lv_pool_el[]){ { .node = "0", .size = "256M" } },
                .n_qemu_args = 4,
                .qemu_args = (const char *[]){ "-object",
                                               "memory-backend-file,id=mem-hpw-lv-basic,"
                                               "mem-path=/mnt/hp/hpwarm/hpw-lv-basic,size=268435456,share=on,"
                                               "prealloc=on,host-nodes=0,policy=bind",
                                               "-machine", "memory-backend=mem-hpw-lv-basic" },
        };

        check_xml(xml, &w);
}

/* test_libvirt.py's two-cell domain (test_two_cells_boot_on_two_pools) and
 * test_hook.py's cells_domain(): file-backed shared cells, one
 * <hpwarm:pool cell=...> each inside <hpwarm:pools> (a level deeper). */
TEST(two_cell_domain)
{
        static const char xml[] =
                "<domain type='qemu' id='7'><name>vm1</name><uuid>" UUID_A "</uuid>"
                "<memory unit='MiB'>256</memory>"
                "<memoryBacking><source type='file'/><access mode='shared'/></memoryBacking>"
                "<metadata><hpwarm:pools xmlns:hpwarm='urn:hpwarm:libvirt:1'>"
                "<hpwarm:pool cell='0' node='0' size='128M'/><hpwarm:pool cell='1' node='1' size='128M' "
                "required='no'/></hpwarm:pools></metadata>"
                "<vcpu>2</vcpu>"
                "<cpu><numa><cell id='0' cpus='0' memory='128' unit='MiB' memAccess='shared'/>"
                "<cell id='1' cpus='1' memory='128' unit='MiB' memAccess='shared'/></numa></cpu>"
                "<os><type>hvm</type></os></domain>";
        const struct lv_domain w = {
                .id = "7",
                .name = "vm1",
                .uuid = UUID_A,
                .memory = "256",
                .memory_unit = "MiB",
                .n_pools = 2,
                .pools = (struct lv_pool_el[]){ { .node = "0", .size = "128M", .cell = "0" },
                                                { .node = "1", .size = "128M", .required = "no", .cell = "1" } },
                .source_type = "file",
                .access_mode = "shared",
                .n_cells = 2,
                .cells = (struct lv_cell[]){ { .id = "0", .memory = "128", .unit = "MiB", .mem_access = "shared" },
                                             { .id = "1", .memory = "128", .unit = "MiB", .mem_access = "shared" } },
        };
        struct lv_domain *d = parse(xml);
        const struct lv_cell *c;
        size_t n = 99;

        check_domain(d, &w);
        c = lv_domain_cell(d, "1", &n);
        CHECK(c == &d->cells[1]);
        CHECK_U64(n, ==, 1);
        CHECK(lv_domain_cell(d, "2", &n) == NULL);
        CHECK_U64(n, ==, 0);
        n = 99;
        CHECK(lv_domain_memnode(d, "0", &n) == NULL);
        CHECK_U64(n, ==, 0);
        lv_domain_free(d);
}

/* test_libvirt.py's nova_xml(cells=2): a domain as Nova's libvirt driver
 * writes a hugepage flavor: <nova:instance> metadata (no hpwarm element),
 * a page per cell, shared access, <numatune> strict with a memnode per
 * cell, the cells in KiB; no <qemu:commandline> though the namespace is
 * declared. */
TEST(nova_domain)
{
        static const char xml[] =
                "<domain type='qemu' xmlns:qemu='" QNS "'>\n"
                "  <name>hpw-lv-nova2</name>\n"
                "  <uuid>" NOVA_UUID "</uuid>\n"
                "  <memory unit='MiB'>256</memory>\n"
                "  <vcpu>2</vcpu><memoryBacking><hugepages><page size='2048' unit='KiB' nodeset='0,1'/></hugepages>"
                "<access mode='shared'/></memoryBacking>"
                "<numatune><memory mode='strict' nodeset='0'/><memnode cellid='0' mode='strict' nodeset='0'/>"
                "<memnode cellid='1' mode='strict' nodeset='0'/></numatune>"
                "<cpu><numa><cell id='0' cpus='0' memory='131072' unit='KiB' memAccess='shared'/>"
                "<cell id='1' cpus='1' memory='131072' unit='KiB' memAccess='shared'/></numa></cpu>\n"
                "  <metadata><nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'>"
                "<nova:package version='27.1.0'/><nova:name>hpw-lv-nova2</nova:name>"
                "<nova:flavor name='hp.small'><nova:memory>256</nova:memory><nova:vcpus>2</nova:vcpus>"
                "</nova:flavor><nova:owner><nova:user uuid='u1'>demo</nova:user>"
                "<nova:project uuid='p1'>demo</nova:project></nova:owner></nova:instance></metadata>\n"
                "  <os><type arch='x86_64' machine='q35'>hvm</type></os>\n"
                "  <devices><memballoon model='none'/></devices>\n"
                "</domain>\n";
        const struct lv_domain w = {
                .name = "hpw-lv-nova2",
                .uuid = NOVA_UUID,
                .memory = "256",
                .memory_unit = "MiB",
                .n_hugepages = 1,
                .n_pages = 1,
                .pages = (struct lv_page[]){ { .size = "2048", .unit = "KiB", .nodeset = "0,1" } },
                .access_mode = "shared",
                .n_cells = 2,
                .cells = (struct lv_cell[]){ { .id = "0", .memory = "131072", .unit = "KiB", .mem_access = "shared" },
                                             { .id = "1", .memory = "131072", .unit = "KiB", .mem_access = "shared" } },
                .n_nt_memory = 1,
                .nt_mode = "strict",
                .nt_nodeset = "0",
                .n_memnodes = 2,
                .memnodes = (struct lv_memnode[]){ { .cellid = "0", .mode = "strict", .nodeset = "0" },
                                                   { .cellid = "1", .mode = "strict", .nodeset = "0" } },
        };
        struct lv_domain *d = parse(xml);
        const struct lv_memnode *m;
        const struct lv_cell *c;
        size_t n = 99;

        check_domain(d, &w);
        m = lv_domain_memnode(d, "1", &n);
        CHECK(m == &d->memnodes[1]);
        CHECK_U64(n, ==, 1);
        c = lv_domain_cell(d, "0", &n);
        CHECK(c == &d->cells[0]);
        CHECK_U64(n, ==, 1);
        lv_domain_free(d);
}

/* test_hook.py's nova_domain() with the variants its policy refuses: a
 * <discard/>, a memfd source, a <memory> device, placement='auto', a
 * discard attribute on a cell, and a second <hugepages>. */
TEST(nova_domain_policy_variants)
{
        static const char xml[] =
                "<domain type='qemu' id='7'><name>instance-0000002a</name><uuid>" NOVA_UUID "</uuid>"
                "<memory unit='KiB'>262144</memory>"
                "<metadata><nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'>"
                "<nova:name>web-1</nova:name><nova:flavor name='m1.small'><nova:memory>256</nova:memory>"
                "</nova:flavor></nova:instance></metadata>"
                "<memoryBacking><hugepages><page size='2048' unit='KiB' nodeset='0'/>"
                "<page size='1048576' unit='KiB' nodeset='1'/></hugepages><hugepages/>"
                "<access mode='shared'/><discard/><source type='memfd'/><discard/></memoryBacking>"
                "<vcpu>1</vcpu><numatune><memory mode='strict' placement='auto'/></numatune>"
                "<cpu><numa><cell id='0' cpus='0' memory='262144' unit='KiB' memAccess='shared' discard='yes'/>"
                "</numa></cpu><os><type>hvm</type></os>"
                "<devices><disk type='file'/><memory model='dimm'><target><size unit='KiB'>131072</size>"
                "<node>0</node></target></memory><memory model='virtio-mem'/></devices></domain>";
        const struct lv_domain w = {
                .id = "7",
                .name = "instance-0000002a",
                .uuid = NOVA_UUID,
                .memory = "262144",
                .memory_unit = "KiB",
                .n_hugepages = 2,
                .n_pages = 2,
                .pages = (struct lv_page[]){ { .size = "2048", .unit = "KiB", .nodeset = "0" },
                                             { .size = "1048576", .unit = "KiB", .nodeset = "1" } },
                .source_type = "memfd",
                .access_mode = "shared",
                .n_discard = 2,
                .n_cells = 1,
                .cells = (struct lv_cell[]){ { .id = "0", .memory = "262144", .unit = "KiB", .mem_access = "shared",
                                               .discard = "yes" } },
                .n_devmem = 2,
                .n_nt_memory = 1,
                .nt_mode = "strict",
                .nt_placement = "auto",
        };

        check_xml(xml, &w);
}

/* test_migrate.py's domain as the destination's hook gets it at migrate
 * begin: libvirt's own formatting of the domain test_libvirt.domain_xml()
 * made (memory in KiB, an id, the metadata element kept with its namespace
 * declaration and double quotes, a dynamic DAC <seclabel> libvirt added). */
TEST(incoming_migration_domain)
{
        static const char xml[] =
                "<domain type='qemu' id='1' xmlns:qemu='" QNS "'>\n"
                "  <name>hpw-lv-mig</name>\n"
                "  <uuid>" UUID_A "</uuid>\n"
                "  <metadata>\n"
                "    <hpwarm:pool xmlns:hpwarm=\"urn:hpwarm:libvirt:1\" node=\"0\" size=\"128M\"/>\n"
                "  </metadata>\n"
                "  <memory unit='KiB'>131072</memory>\n"
                "  <currentMemory unit='KiB'>131072</currentMemory>\n"
                "  <vcpu placement='static'>1</vcpu>\n"
                "  <os>\n"
                "    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>\n"
                "    <kernel>/tmp/hpwarm-libvirt/vmlinuz</kernel>\n"
                "    <boot dev='hd'/>\n"
                "  </os>\n"
                "  <devices>\n"
                "    <emulator>/usr/bin/qemu-system-x86_64</emulator>\n"
                "    <memballoon model='none'/>\n"
                "  </devices>\n"
                "  <seclabel type='dynamic' model='dac' relabel='yes'>\n"
                "    <label>+64055:+64055</label>\n"
                "    <imagelabel>+64055:+64055</imagelabel>\n"
                "  </seclabel>\n"
                "  <qemu:commandline>\n"
                "    <qemu:arg value='-object'/>\n"
                "    <qemu:arg value='memory-backend-file,id=mem-hpw-lv-mig,mem-path=/mnt/hp/hpwarm/hpw-lv-mig,"
                "size=134217728,share=on,prealloc=on,host-nodes=0,policy=bind'/>\n"
                "    <qemu:arg value='-machine'/>\n"
                "    <qemu:arg value='memory-backend=mem-hpw-lv-mig'/>\n"
                "  </qemu:commandline>\n"
                "</domain>\n";
        const struct lv_domain w = {
                .id = "1",
                .name = "hpw-lv-mig",
                .uuid = UUID_A,
                .memory = "131072",
                .memory_unit = "KiB",
                .n_pools = 1,
                .pools = (struct lv_pool_el[]){ { .node = "0", .size = "128M" } },
                .n_qemu_args = 4,
                .qemu_args = (const char *[]){ "-object",
                                               "memory-backend-file,id=mem-hpw-lv-mig,"
                                               "mem-path=/mnt/hp/hpwarm/hpw-lv-mig,size=134217728,share=on,"
                                               "prealloc=on,host-nodes=0,policy=bind",
                                               "-machine", "memory-backend=mem-hpw-lv-mig" },
        };

        check_xml(xml, &w);
}

/* ---- what the header promises ---- */

/* Nothing there: every string "" (never NULL), every count 0. */
TEST(absent_values_are_empty)
{
        static const struct lv_domain none = { 0 };

        check_xml("<domain/>", &none);
        check_xml("<domain type='kvm'><devices/><cpu/><memoryBacking/><numatune/><metadata/></domain>", &none);
        /* The elements there, their attributes not: "" each, the counts 1. */
        check_xml("<domain xmlns:qemu='" QNS "'><name/><uuid></uuid><memory/>"
                  "<seclabel type='static' model='dac'><label/></seclabel>"
                  "<metadata><hpwarm:pool xmlns:hpwarm='urn:hpwarm:libvirt:1'/></metadata>"
                  "<qemu:commandline><qemu:arg/></qemu:commandline>"
                  "<memoryBacking><hugepages><page/></hugepages><source/><access/><discard/></memoryBacking>"
                  "<cpu><numa><cell/></numa></cpu><devices><memory/></devices>"
                  "<numatune><memory/><memnode/></numatune></domain>",
                  &(struct lv_domain){ .n_pools = 1, .pools = (struct lv_pool_el[]){ { 0 } }, .n_qemu_args = 1,
                                       .qemu_args = (const char *[]){ "" }, .n_hugepages = 1, .n_pages = 1,
                                       .pages = (struct lv_page[]){ { 0 } }, .n_discard = 1, .n_cells = 1,
                                       .cells = (struct lv_cell[]){ { 0 } }, .n_devmem = 1, .n_nt_memory = 1,
                                       .n_memnodes = 1, .memnodes = (struct lv_memnode[]){ { 0 } } });
}

/* A root that is not <domain>: nothing matches /domain/..., as with XPath;
 * parsed (it is well-formed), every value "". */
TEST(root_not_domain_matches_nothing)
{
        static const struct lv_domain none = { 0 };

        check_xml("<domains><domain id='1'><name>vm1</name></domain></domains>", &none);
        check_xml("<other id='3' xmlns:qemu='" QNS "'><name>vm1</name><uuid>" UUID_A "</uuid>"
                  "<memory unit='MiB'>256</memory><metadata><hpwarm:pool xmlns:hpwarm='urn:hpwarm:libvirt:1' "
                  "node='0'/></metadata><qemu:commandline><qemu:arg value='-S'/></qemu:commandline>"
                  "<cpu><numa><cell id='0'/></numa></cpu></other>",
                  &none);
}

/* Values as XPath's string() gives them: no trimming, character and
 * predefined references resolved, CDATA kept, comments and processing
 * instructions left out, a child element's text included; attribute values
 * normalised as XML says (a literal line break is a blank, &#10; is one). */
TEST(values_as_written)
{
        struct lv_domain *d = parse(
                "<domain id=' 7 '><name>  vm1\n\t</name><uuid>ab<!-- c -->cd<?pi x?><x>ef</x><![CDATA[<&>]]></uuid>"
                "<memory unit='M&amp;B'> 1&#50;8 </memory>"
                "<metadata><hpwarm:pool xmlns:hpwarm='urn:hpwarm:libvirt:1' node='0&#10;1' size='1\n2' "
                "required='&quot;yes&apos;' pool='&lt;p&gt;' cell='&#x41;'/></metadata></domain>");

        CHECK_STR(d->id, " 7 ");
        CHECK_STR(d->name, "  vm1\n\t");
        CHECK_STR(d->uuid, "abcdef<&>");
        CHECK_STR(d->memory, " 128 ");
        CHECK_STR(d->memory_unit, "M&B");
        CHECK_U64(d->n_pools, ==, 1);
        CHECK_STR(d->pools[0].node, "0\n1");
        CHECK_STR(d->pools[0].size, "1 2");
        CHECK_STR(d->pools[0].required, "\"yes'");
        CHECK_STR(d->pools[0].pool, "<p>");
        CHECK_STR(d->pools[0].cell, "A");
        lv_domain_free(d);

        /* UTF-8 passes through as bytes. */
        d = parse("<domain><name>\xc3\xa9t\xc3\xa9</name></domain>");
        CHECK_STR(d->name, "\xc3\xa9t\xc3\xa9");
        lv_domain_free(d);
}

/* Only LEN bytes are read: the XML need not end in '\0', and what follows
 * LEN is not looked at. */
TEST(reads_len_bytes)
{
        static const char text[] = "<domain><name>vm1</name></domain>";
        size_t len = strlen(text);
        char *buf = malloc(len);   /* no terminating '\0': ASan sees a read past it */
        struct lv_domain *d;

        CHECK(buf != NULL);
        memcpy(buf, text, len);
        d = parse_len(buf, len);
        CHECK_STR(d->name, "vm1");
        lv_domain_free(d);
        free(buf);

        d = parse_len("<domain><name>vm1</name></domain><garbage", len);
        CHECK_STR(d->name, "vm1");
        lv_domain_free(d);
        refused("<domain><name>vm1</name></domain>", len - 1);
}

/* The first match wins where the path names one element (as string() of a
 * node-set takes its first node): the first <name>, <memory>,
 * <memoryBacking>, <hugepages> (for its pages), <source>, <access>, <cpu>,
 * <numa>, <devices>, <numatune> and its first <memory>; the counts count
 * within those. */
TEST(first_match_wins)
{
        static const char xml[] =
                "<domain id='1' id2='2'><name>first</name><name>second</name>"
                "<uuid>u1</uuid><uuid>u2</uuid>"
                "<memory unit='MiB'>1</memory><memory unit='GiB'>2</memory>"
                "<memoryBacking><hugepages><page size='1'/></hugepages><hugepages><page size='2'/></hugepages>"
                "<source type='file'/><source type='anonymous'/><access mode='shared'/><access mode='private'/>"
                "</memoryBacking>"
                "<memoryBacking><hugepages/><discard/><source type='memfd'/></memoryBacking>"
                "<cpu><numa><cell id='0'/></numa><numa><cell id='9'/></numa></cpu><cpu><numa><cell id='8'/></numa>"
                "</cpu>"
                "<devices><memory/></devices><devices><memory/><memory/></devices>"
                "<numatune><memory mode='strict' nodeset='0'/><memory mode='interleave' nodeset='1' "
                "placement='auto'/><memnode cellid='0'/></numatune>"
                "<numatune><memory mode='preferred'/><memnode cellid='5'/></numatune></domain>";
        const struct lv_domain w = {
                .id = "1",
                .name = "first",
                .uuid = "u1",
                .memory = "1",
                .memory_unit = "MiB",
                .n_hugepages = 2,
                .n_pages = 1,
                .pages = (struct lv_page[]){ { .size = "1" } },
                .source_type = "file",
                .access_mode = "shared",
                .n_cells = 1,
                .cells = (struct lv_cell[]){ { .id = "0" } },
                .n_devmem = 1,
                .n_nt_memory = 2,
                .nt_mode = "strict",
                .nt_nodeset = "0",
                .n_memnodes = 1,
                .memnodes = (struct lv_memnode[]){ { .cellid = "0" } },
        };

        check_xml(xml, &w);
}

/* hpwarm's and QEMU's elements are found by namespace URI, whatever the
 * prefix (a default namespace too), never by prefix; <hpwarm:pool> at any
 * depth below every <metadata>, in document order, nowhere else; every
 * <qemu:arg> of every <qemu:commandline>, in order. */
TEST(namespaces_by_uri_and_document_order)
{
        static const char xml[] =
                "<domain xmlns:q='" QNS "' xmlns:h='urn:hpwarm:libvirt:1'>"
                "<h:pool node='outside metadata'/>"
                "<metadata>"
                "<hpwarm:pool xmlns:hpwarm='urn:not-hpwarm' node='other uri'/>"
                "<pool node='no namespace'/>"
                "<h:pool node='a' pool='p-a'/>"
                "<x:wrap xmlns:x='urn:other'><y><pool xmlns='urn:hpwarm:libvirt:1' node='b'>"
                "<h:pool node='c' h:size='namespaced attribute' size='1G'/></pool></y></x:wrap>"
                "<qemu:commandline xmlns:qemu='" QNS "'><qemu:arg value='in metadata'/></qemu:commandline>"
                "</metadata>"
                "<devices><h:pool node='in devices'/></devices>"
                "<q:commandline><q:arg value='-a'/><q:env name='X' value='env'/><q:arg value='-b'/>"
                "</q:commandline>"
                "<qemu:commandline xmlns:qemu='urn:not-qemu'><qemu:arg value='other uri'/></qemu:commandline>"
                "<commandline><arg value='no namespace'/></commandline>"
                "<metadata><deep><deeper><h:pool node='d' cell='1'/></deeper></deep></metadata>"
                "<commandline xmlns='" QNS "'><arg value='-c'/><arg/></commandline>"
                "</domain>";
        const struct lv_domain w = {
                .n_pools = 4,
                .pools = (struct lv_pool_el[]){ { .node = "a", .pool = "p-a" },
                                                { .node = "b" },
                                                { .node = "c", .size = "1G" },
                                                { .node = "d", .cell = "1" } },
                .n_qemu_args = 4,
                .qemu_args = (const char *[]){ "-a", "-b", "-c", "" },
        };

        check_xml(xml, &w);
        /* An undeclared prefix is a namespace error, not a well-formedness
         * one: parsed, and the element is in no namespace, so not ours. */
        check_xml("<domain><metadata><hpwarm:pool node='0'/></metadata>"
                  "<qemu:commandline><qemu:arg value='-S'/></qemu:commandline></domain>",
                  &(struct lv_domain){ 0 });
}

/* lv_domain_cell / lv_domain_memnode: the first element with that id and
 * how many have it; NULL and 0 when none does. */
TEST(cell_and_memnode_lookup)
{
        struct lv_domain *d = parse(
                "<domain><cpu><numa><cell id='0' memory='1'/><cell id='1' memory='2'/><cell id='0' memory='3'/>"
                "<cell memory='4'/><cell id='0' memory='5'/></numa></cpu>"
                "<numatune><memnode cellid='1' nodeset='a'/><memnode cellid='1' nodeset='b'/>"
                "<memnode cellid='2' nodeset='c'/></numatune></domain>");
        const struct lv_cell *c;
        const struct lv_memnode *m;
        size_t n = 99;

        c = lv_domain_cell(d, "0", &n);
        CHECK(c == &d->cells[0]);
        CHECK_STR(c->memory, "1");
        CHECK_U64(n, ==, 3);
        c = lv_domain_cell(d, "1", &n);
        CHECK(c == &d->cells[1]);
        CHECK_U64(n, ==, 1);
        /* A cell without id has id "". */
        c = lv_domain_cell(d, "", &n);
        CHECK(c == &d->cells[3]);
        CHECK_U64(n, ==, 1);
        n = 99;
        CHECK(lv_domain_cell(d, "2", &n) == NULL);
        CHECK_U64(n, ==, 0);
        n = 99;
        CHECK(lv_domain_cell(d, "00", &n) == NULL);   /* ids are strings, compared as written */
        CHECK_U64(n, ==, 0);

        m = lv_domain_memnode(d, "1", &n);
        CHECK(m == &d->memnodes[0]);
        CHECK_STR(m->nodeset, "a");
        CHECK_U64(n, ==, 2);
        m = lv_domain_memnode(d, "2", &n);
        CHECK(m == &d->memnodes[2]);
        CHECK_U64(n, ==, 1);
        n = 99;
        CHECK(lv_domain_memnode(d, "0", &n) == NULL);
        CHECK_U64(n, ==, 0);
        lv_domain_free(d);

        /* No cells, no memnodes at all. */
        d = parse("<domain/>");
        n = 99;
        CHECK(lv_domain_cell(d, "0", &n) == NULL);
        CHECK_U64(n, ==, 0);
        n = 99;
        CHECK(lv_domain_memnode(d, "0", &n) == NULL);
        CHECK_U64(n, ==, 0);
        lv_domain_free(d);
        lv_domain_free(NULL);
}

/* ---- entities, DTDs, fetching ---- */

/* A DOCTYPE is refused: libvirt writes none, and it is where entities and
 * attribute defaults would be declared, which reading a value would
 * otherwise expand (an internal entity's text, a default the document
 * lacks, 1 MB of references to one entity read as 1 GB). */
TEST(doctype_refused)
{
        static const char *const xml[] = {
                "<!DOCTYPE domain><domain><name>vm1</name></domain>",
                "<?xml version='1.0'?>\n<!DOCTYPE domain [\n<!ENTITY x 'INTERNAL'>\n]>\n"
                "<domain><name>&x;</name><memory unit='&x;'>1</memory></domain>",
                "<!DOCTYPE domain [<!ATTLIST memory unit CDATA 'GiB'>]><domain><memory>1</memory></domain>",
                "<!DOCTYPE domain [<!ATTLIST hpwarm:pool node CDATA '7'>]><domain><metadata>"
                "<hpwarm:pool xmlns:hpwarm='urn:hpwarm:libvirt:1'/></metadata></domain>",
                "<!DOCTYPE domain [<!ENTITY x 'unused'>]><domain><name>vm1</name></domain>",
        };

        for (size_t i = 0; i < sizeof(xml) / sizeof(xml[0]); i++) {
                fprintf(stderr, "DOCTYPE: xml[%zu]\n", i);
                refused(xml[i], strlen(xml[i]));
        }
        {
                struct lv_domain *d = NULL;
                char why[256];

                CHECK_INT(lv_domain_parse(xml[0], strlen(xml[0]), &d, why, sizeof(why)), ==, -EINVAL);
                CHECK(strstr(why, "DOCTYPE") != NULL);
        }
}

/* Billion laughs: ten entities each ten of the one before; refused
 * (libxml2 sees the amplification, and there is a DOCTYPE), at once. */
TEST(billion_laughs_refused)
{
        char xml[4096], *p = xml;

        p += sprintf(p, "<!DOCTYPE domain [<!ENTITY a0 'lol'>");
        for (int i = 1; i < 10; i++) {
                p += sprintf(p, "<!ENTITY a%d '", i);
                for (int k = 0; k < 10; k++)
                        p += sprintf(p, "&a%d;", i - 1);
                p += sprintf(p, "'>");
        }
        p += sprintf(p, "]><domain><name>&a9;</name><memory unit='&a9;'>1</memory></domain>");
        refused(xml, (size_t)(p - xml));
}

/* One 50 KB entity referenced 20000 times: 1 MB of XML that libxml2 parses
 * (no loop, each reference one node), which would read as a 1 GB name. */
TEST(quadratic_blowup_refused)
{
        enum { ENT = 50000, REFS = 20000 };
        char *xml = malloc(ENT + REFS * 3 + 200), *p = xml;

        CHECK(xml != NULL);
        p += sprintf(p, "<!DOCTYPE domain [<!ENTITY q '");
        memset(p, 'A', ENT);
        p += ENT;
        p += sprintf(p, "'>]><domain><name>");
        for (int i = 0; i < REFS; i++)
                p += sprintf(p, "&q;");
        p += sprintf(p, "</name></domain>");
        refused(xml, (size_t)(p - xml));
        free(xml);
}

struct fetch_dir {
        char path[64];
};

static void remove_fetch_dir(const void *data, size_t len)
{
        const struct fetch_dir *f = data;
        char p[128];

        (void)len;
        snprintf(p, sizeof(p), "%s/secret.txt", f->path);
        unlink(p);
        snprintf(p, sizeof(p), "%s/ext.dtd", f->path);
        unlink(p);
        rmdir(f->path);
}

static void write_file(const char *dir, const char *name, const char *text)
{
        char p[128];
        FILE *f;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        f = fopen(p, "w");
        CHECK(f != NULL);
        CHECK_INT(fputs(text, f), >=, 0);
        CHECK_INT(fclose(f), ==, 0);
}

/* Nothing is fetched: an external entity, an external DTD, a parameter
 * entity naming a file or an HTTP URL on loopback, an XInclude.  Watched
 * from outside libxml2: inotify sees no open of the files, the listening
 * socket no connection; and no value holds their text. */
TEST(nothing_is_fetched)
{
        struct fetch_dir fd = { .path = "/tmp/hpw-lvdom-XXXXXX" };
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t salen = sizeof(sa);
        int in, ls;
        char xml[1024], buf[4096];
        struct lv_domain *d;

        CHECK(mkdtemp(fd.path) != NULL);
        test_defer(remove_fetch_dir, &fd, sizeof(fd));
        write_file(fd.path, "secret.txt", "LEAKED-FILE");
        write_file(fd.path, "ext.dtd", "<!ENTITY y \"LEAKED-DTD\">");
        in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        CHECK(in >= 0);
        CHECK(inotify_add_watch(in, fd.path, IN_OPEN | IN_ACCESS) >= 0);
        ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        CHECK(ls >= 0);
        CHECK_INT(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
        CHECK_INT(listen(ls, 8), ==, 0);
        CHECK_INT(getsockname(ls, (struct sockaddr *)&sa, &salen), ==, 0);

        for (int kind = 0; kind < 8; kind++) {
                const char *dir = fd.path;
                int port = ntohs(sa.sin_port);

                switch (kind) {
                case 0:
                        snprintf(xml, sizeof(xml), "<!DOCTYPE domain [<!ENTITY x SYSTEM 'file://%s/secret.txt'>]>"
                                 "<domain><name>&x;</name><uuid>" UUID_A "</uuid></domain>", dir);
                        break;
                case 1:
                        snprintf(xml, sizeof(xml), "<!DOCTYPE domain [<!ENTITY x SYSTEM '%s/secret.txt'>]>"
                                 "<domain><name>&x;</name></domain>", dir);
                        break;
                case 2:
                        snprintf(xml, sizeof(xml), "<!DOCTYPE domain SYSTEM 'file://%s/ext.dtd'>"
                                 "<domain><name>&y;</name></domain>", dir);
                        break;
                case 3:
                        snprintf(xml, sizeof(xml), "<!DOCTYPE domain [<!ENTITY %% p SYSTEM '%s/ext.dtd'> %%p;]>"
                                 "<domain><name>&y;</name></domain>", dir);
                        break;
                case 4:
                        snprintf(xml, sizeof(xml), "<!DOCTYPE domain [<!ENTITY x SYSTEM "
                                 "'http://127.0.0.1:%d/secret.txt'>]><domain><name>&x;</name></domain>", port);
                        break;
                case 5:
                        snprintf(xml, sizeof(xml), "<!DOCTYPE domain SYSTEM 'http://127.0.0.1:%d/ext.dtd'>"
                                 "<domain><name>&y;</name></domain>", port);
                        break;
                case 6:
                        snprintf(xml, sizeof(xml), "<!DOCTYPE domain [<!ENTITY %% p SYSTEM "
                                 "'http://127.0.0.1:%d/ext.dtd'> %%p;]><domain><name>&y;</name></domain>", port);
                        break;
                default:
                        /* No DOCTYPE: parsed; an XInclude is an element like
                         * any other, its href not followed. */
                        snprintf(xml, sizeof(xml), "<domain xmlns:xi='http://www.w3.org/2001/XInclude'><name>"
                                 "<xi:include href='%s/secret.txt' parse='text'/></name><metadata>"
                                 "<xi:include href='http://127.0.0.1:%d/ext.dtd'/></metadata></domain>", dir, port);
                        d = parse(xml);
                        CHECK_STR(d->name, "");
                        CHECK_U64(d->n_pools, ==, 0);
                        lv_domain_free(d);
                        continue;
                }
                fprintf(stderr, "fetch: kind %d\n", kind);
                refused(xml, strlen(xml));
        }
        CHECK_INT(read(in, buf, sizeof(buf)), ==, -1);
        CHECK_INT(errno, ==, EAGAIN);
        CHECK_INT(accept(ls, NULL, NULL), ==, -1);
        CHECK_INT(errno, ==, EAGAIN);
        close(in);
        close(ls);
}

/* ---- many elements ---- */

#if defined(__SANITIZE_ADDRESS__)
#define HPW_ASAN_ 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HPW_ASAN_ 1
#endif
#endif

/* Cap this process's address space at what it maps now plus 256 MiB, so
 * that a list growing by a copy of itself per element (quadratic: 20000
 * pools would be 8 GB) fails the parse with -ENOMEM instead of passing
 * slowly.  Not under ASan, whose shadow memory reserves terabytes. */
static void cap_address_space(void)
{
#ifndef HPW_ASAN_
        unsigned long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        struct rlimit rl;

        CHECK(f != NULL);
        CHECK_INT(fscanf(f, "%lu", &pages), ==, 1);
        fclose(f);
        CHECK_INT(getrlimit(RLIMIT_AS, &rl), ==, 0);
        rl.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + ((rlim_t)256 << 20);
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max)
                rl.rlim_cur = rl.rlim_max;
        CHECK_INT(setrlimit(RLIMIT_AS, &rl), ==, 0);
#endif
}

/* Append sprintf(FMT, I, I) to P for I in [0, N). */
#define REPEAT(p, fmt, n)                            \
        do {                                         \
                for (size_t i_ = 0; i_ < (n); i_++)  \
                        p += sprintf(p, fmt, i_, i_); \
        } while (0)

/* Lists of thousands of elements: every element kept, in order, each its
 * own values; memory linear in the count. */
TEST(many_elements)
{
        enum { NPOOL = 20000, NARG = 20000, NCELL = 5000 };
        char *xml = malloc((size_t)(NPOOL + NARG + 3 * NCELL) * 100 + 1000), *p = xml;
        struct lv_domain *d;
        char want[64];
        size_t n;

        CHECK(xml != NULL);
        p += sprintf(p, "<domain xmlns:qemu='" QNS "'><metadata><hpwarm:pools xmlns:hpwarm='urn:hpwarm:libvirt:1'>");
        REPEAT(p, "<hpwarm:pool node='%zu' cell='%zu'/>", NPOOL);
        p += sprintf(p, "</hpwarm:pools></metadata><qemu:commandline>");
        REPEAT(p, "<qemu:arg value='-a%zu-%zu'/>", NARG);
        p += sprintf(p, "</qemu:commandline><memoryBacking><hugepages>");
        REPEAT(p, "<page size='%zu' nodeset='%zu'/>", NCELL);
        p += sprintf(p, "</hugepages></memoryBacking><cpu><numa>");
        REPEAT(p, "<cell id='%zu' memory='%zu'/>", NCELL);
        p += sprintf(p, "</numa></cpu><numatune>");
        REPEAT(p, "<memnode cellid='%zu' nodeset='%zu'/>", NCELL);
        p += sprintf(p, "</numatune></domain>");

        cap_address_space();
        d = parse_len(xml, (size_t)(p - xml));
        free(xml);
        CHECK_U64(d->n_pools, ==, NPOOL);
        for (size_t i = 0; i < NPOOL; i++) {
                snprintf(want, sizeof(want), "%zu", i);
                str_is("pools[i].node", i, d->pools[i].node, want);
                str_is("pools[i].cell", i, d->pools[i].cell, want);
                str_is("pools[i].size", i, d->pools[i].size, "");
        }
        CHECK_U64(d->n_qemu_args, ==, NARG);
        for (size_t i = 0; i < NARG; i++) {
                snprintf(want, sizeof(want), "-a%zu-%zu", i, i);
                str_is("qemu_args[i]", i, d->qemu_args[i], want);
        }
        CHECK_U64(d->n_pages, ==, NCELL);
        CHECK_U64(d->n_cells, ==, NCELL);
        CHECK_U64(d->n_memnodes, ==, NCELL);
        for (size_t i = 0; i < NCELL; i++) {
                snprintf(want, sizeof(want), "%zu", i);
                str_is("pages[i].size", i, d->pages[i].size, want);
                str_is("pages[i].nodeset", i, d->pages[i].nodeset, want);
                str_is("pages[i].unit", i, d->pages[i].unit, "");
                str_is("cells[i].id", i, d->cells[i].id, want);
                str_is("cells[i].memory", i, d->cells[i].memory, want);
                str_is("memnodes[i].cellid", i, d->memnodes[i].cellid, want);
                str_is("memnodes[i].nodeset", i, d->memnodes[i].nodeset, want);
        }
        CHECK(lv_domain_cell(d, "4999", &n) == &d->cells[4999]);
        CHECK_U64(n, ==, 1);
        CHECK(lv_domain_memnode(d, "0", &n) == &d->memnodes[0]);
        CHECK_U64(n, ==, 1);
        lv_domain_free(d);
}

/* <hpwarm:pool> deep below <metadata> is found; a document nested deeper
 * than libxml2 builds (its limit without XML_PARSE_HUGE, 256) is refused,
 * never walked. */
TEST(deep_nesting)
{
        enum { DEEP = 240, TOO_DEEP = 100000 };
        char *xml = malloc((size_t)TOO_DEEP * 8 + 200), *p = xml;
        struct lv_domain *d;

        CHECK(xml != NULL);
        p += sprintf(p, "<domain><metadata>");
        for (int i = 0; i < DEEP; i++)
                p += sprintf(p, "<x>");
        p += sprintf(p, "<pool xmlns='urn:hpwarm:libvirt:1' node='deep'/>");
        for (int i = 0; i < DEEP; i++)
                p += sprintf(p, "</x>");
        p += sprintf(p, "</metadata></domain>");
        d = parse_len(xml, (size_t)(p - xml));
        CHECK_U64(d->n_pools, ==, 1);
        CHECK_STR(d->pools[0].node, "deep");
        lv_domain_free(d);

        p = xml;
        p += sprintf(p, "<domain><metadata>");
        for (int i = 0; i < TOO_DEEP; i++)
                p += sprintf(p, "<x>");
        p += sprintf(p, "<pool xmlns='urn:hpwarm:libvirt:1' node='deep'/>");
        for (int i = 0; i < TOO_DEEP; i++)
                p += sprintf(p, "</x>");
        p += sprintf(p, "</metadata></domain>");
        refused(xml, (size_t)(p - xml));
        free(xml);
}

/* ---- failure paths ---- */

TEST(not_well_formed_is_einval)
{
        static const char *const bad[] = {
                "<domain><name>vm1</name",            /* cut short, as test_hook.py's */
                "<domain><name>vm1</domain>",         /* mismatched end tag */
                "<domain/><domain/>",                 /* two roots */
                "just text",
                "<domain id='1' id='2'/>",            /* an attribute twice */
                "<domain>&nbsp;</domain>",            /* an undeclared entity */
                "<domain>\x01</domain>",              /* a character XML forbids */
                "<domain><name>\xff\xfe</name></domain>", /* not UTF-8 */
                "<?xml version='1.0'?>",
                "   ",
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                fprintf(stderr, "not well-formed: bad[%zu]\n", i);
                refused(bad[i], strlen(bad[i]));
        }
}

/* WHY says where libxml2 stopped, on one line. */
TEST(why_says_where)
{
        struct lv_domain *d = NULL;
        char why[256];

        CHECK_INT(lv_domain_parse("<domain><name>vm1</name", 23, &d, why, sizeof(why)), ==, -EINVAL);
        fprintf(stderr, "why: %s\n", why);
        CHECK(strstr(why, "line 1") != NULL);
        CHECK(strchr(why, '\n') == NULL);
}

/* A WHY smaller than the message: cut, terminated, nothing written past
 * WHYLEN. */
TEST(why_truncated_safely)
{
        static const char xml[] = "<domain><name>vm1</name";
        struct lv_domain *d = NULL;
        char full[256], why[16];

        CHECK_INT(lv_domain_parse(xml, strlen(xml), &d, full, sizeof(full)), ==, -EINVAL);
        CHECK(strlen(full) > 8);
        for (size_t len = 1; len <= 8; len++) {
                memset(why, 'X', sizeof(why));
                CHECK_INT(lv_domain_parse(xml, strlen(xml), &d, why, len), ==, -EINVAL);
                CHECK_U64(strlen(why), ==, len - 1);
                CHECK(strncmp(why, full, len - 1) == 0);
                for (size_t i = len; i < sizeof(why); i++)
                        CHECK_INT(why[i], ==, 'X');
        }
        CHECK(d == NULL);
}

/* WHYLEN 0: nothing written at all (WHY may then be NULL). */
TEST(why_of_length_zero)
{
        static const char xml[] = "<domain><name>vm1</name";
        struct lv_domain *d = NULL;
        char why[16];

        memset(why, 'X', sizeof(why));
        CHECK_INT(lv_domain_parse(xml, strlen(xml), &d, why, 0), ==, -EINVAL);
        for (size_t i = 0; i < sizeof(why); i++)
                CHECK_INT(why[i], ==, 'X');
        CHECK_INT(lv_domain_parse(xml, strlen(xml), &d, NULL, 0), ==, -EINVAL);
        CHECK_INT(lv_domain_parse("", 0, &d, NULL, 0), ==, -EINVAL);
        CHECK(d == NULL);
}

/* Empty input is not a document. */
TEST(empty_is_einval)
{
        refused("", 0);
        refused("<domain/>", 0);
}

/* WHY is about this parse, never an earlier one's error (libxml2 keeps
 * its last error per thread, and an empty buffer raises none). */
TEST(why_is_about_this_parse)
{
        static const char cut[] = "<domain><name>vm1</name";
        struct lv_domain *d = NULL;
        char first[256], why[256];

        CHECK_INT(lv_domain_parse(cut, strlen(cut), &d, first, sizeof(first)), ==, -EINVAL);
        CHECK_INT(lv_domain_parse("", 0, &d, why, sizeof(why)), ==, -EINVAL);
        fprintf(stderr, "first: %s\nthen: %s\n", first, why);
        CHECK(why[0] != '\0');
        CHECK(strcmp(why, first) != 0);
        /* A good parse between: still not the old message. */
        d = parse("<domain/>");
        lv_domain_free(d);
        d = NULL;
        CHECK_INT(lv_domain_parse(cut, 0, &d, why, sizeof(why)), ==, -EINVAL);
        CHECK(strcmp(why, first) != 0);
}

/* A length past INT_MAX (libxml2 takes an int) is refused before the
 * buffer is read: the 1-byte buffer here would be overrun otherwise. */
TEST(too_large_is_einval)
{
        char one[1] = { '<' }, why[64];
        struct lv_domain *d = NULL;

        CHECK_INT(lv_domain_parse(one, (size_t)INT32_MAX + 1, &d, why, sizeof(why)), ==, -EINVAL);
        CHECK_STR(why, "the XML is too large");
        CHECK(d == NULL);
}

TEST_MAIN()
