/* Unit tests of the hpwarm CLI's pure parts: argument parsing (options
 * before and after the command, env defaults, every usage error class),
 * sizes, seconds, exit-code mapping, place selection, hosts files, tables. */
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"

static char errbuf[256];

/* Parse a NULL-terminated word list; returns cli_parse's result. */
static int parse(struct cli *c, const char *env_url, ...)
{
        char *argv[32] = { (char *)"hpwarm" };
        int argc = 1;
        va_list ap;
        const char *w;

        va_start(ap, env_url);
        while ((w = va_arg(ap, const char *)) != NULL)
                argv[argc++] = (char *)w;
        va_end(ap);
        memset(c, 0x5a, sizeof(*c));
        return cli_parse(argc, argv, env_url, NULL, c, errbuf, sizeof(errbuf));
}

static void test_parse_ok(void)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "health", NULL), ==, 0);
        CHECK_INT(c.cmd, ==, CMD_HEALTH);
        CHECK_STR(c.url, CLI_DEFAULT_URL);
        CHECK(!c.timeout_set);
        CHECK(!c.json);

        /* The README's handoff recipe: options after the command, including globals. */
        CHECK_INT(parse(&c, NULL, "warm", "vm-42", "--node", "0", "--size", "1G", "--wait", "--timeout", "60",
                        NULL), ==, 0);
        CHECK_INT(c.cmd, ==, CMD_WARM);
        CHECK_STR(c.name, "vm-42");
        CHECK_INT(c.node, ==, 0);
        CHECK_U64(c.size, ==, 1ull << 30);
        CHECK(c.wait);
        CHECK(c.timeout_set);
        CHECK_U64(c.timeout_ms, ==, 60000);
        CHECK_U64(c.page_size, ==, 0);

        /* Globals before, command options before the command, --opt=value. */
        CHECK_INT(parse(&c, "http://env:1", "--json", "--url=http://h:9", "--node=1", "warm", "p",
                        "--size=4G", "--page-size", "1G", "--threads", "4", "--ttl", "600", "--reserve", NULL),
                  ==, 0);
        CHECK_STR(c.url, "http://h:9");
        CHECK(c.json);
        CHECK_INT(c.node, ==, 1);
        CHECK_U64(c.page_size, ==, 1ull << 30);
        CHECK_INT(c.threads, ==, 4);
        CHECK_U64(c.ttl_seconds, ==, 600);
        CHECK(c.reserve);

        /* Environment default, overridden by the option. */
        CHECK_INT(parse(&c, "http://env:1", "pools", NULL), ==, 0);
        CHECK_STR(c.url, "http://env:1");
        char *argv[] = { (char *)"hpwarm", (char *)"pools", (char *)"--token-file", (char *)"/b" };
        CHECK_INT(cli_parse(4, argv, NULL, "/a", &c, errbuf, sizeof(errbuf)), ==, 0);
        CHECK_STR(c.token_file, "/b");
        CHECK_INT(cli_parse(2, argv, "", "/a", &c, errbuf, sizeof(errbuf)), ==, 0);
        CHECK_STR(c.token_file, "/a");
        CHECK_STR(c.url, CLI_DEFAULT_URL);

        CHECK_INT(parse(&c, NULL, "reserve", "0", "2M", "64", "--allow-partial", NULL), ==, 0);
        CHECK_INT(c.cmd, ==, CMD_RESERVE);
        CHECK_INT(c.node, ==, 0);
        CHECK_U64(c.page_size, ==, 2ull << 20);
        CHECK_U64(c.count, ==, 64);
        CHECK(c.allow_partial);

        CHECK_INT(parse(&c, NULL, "nodes", "3", NULL), ==, 0);
        CHECK_INT(c.node, ==, 3);
        CHECK_INT(parse(&c, NULL, "nodes", NULL), ==, 0);
        CHECK_INT(c.node, ==, -1);

        CHECK_INT(parse(&c, NULL, "handoff", "vm", "--vmm", "cloud-hypervisor", NULL), ==, 0);
        CHECK_INT(c.vmm, ==, VMM_CLOUD_HYPERVISOR);
        CHECK_INT(parse(&c, NULL, "--vmm=qemu", "handoff", "vm", NULL), ==, 0);
        CHECK_INT(c.vmm, ==, VMM_QEMU);
        CHECK_INT(c.n_names, ==, 1);
        CHECK_STR(c.names[0], "vm");
        CHECK(!c.argv_words);
        /* Several pools, in guest node order; libvirt; --argv. */
        CHECK_INT(parse(&c, NULL, "handoff", "vm-b", "vm-a", "--vmm", "libvirt", "vm-c", "--argv", NULL), ==, 0);
        CHECK_INT(c.vmm, ==, VMM_LIBVIRT);
        CHECK_INT(c.n_names, ==, 3);
        CHECK_STR(c.names[0], "vm-b");
        CHECK_STR(c.names[1], "vm-a");
        CHECK_STR(c.names[2], "vm-c");
        CHECK(c.argv_words);

        CHECK_INT(parse(&c, NULL, "fleet", "--hosts", "f", "place", "--size", "1G", "--warm", "vm", NULL), ==, 0);
        CHECK_INT(c.fleet, ==, FLEET_PLACE);
        CHECK_U64(c.page_size, ==, CLI_DEFAULT_PAGE_SIZE);
        CHECK_STR(c.warm_name, "vm");
        CHECK_INT(parse(&c, NULL, "fleet", "nodes", "--hosts=f", "--timeout", "0.5", NULL), ==, 0);
        CHECK_INT(c.fleet, ==, FLEET_NODES);
        CHECK_U64(c.timeout_ms, ==, 500);

        CHECK_INT(parse(&c, NULL, "--help", NULL), ==, 0);
        CHECK(c.help);
        CHECK_INT(parse(&c, NULL, "warm", "-h", NULL), ==, 0);  /* help wins over missing options */
        CHECK(c.help);
        CHECK_INT(parse(&c, NULL, "--version", NULL), ==, 0);
        CHECK(c.version);
        /* "--" ends options: a pool named like an option is still rejected by the name rule. */
        CHECK_INT(parse(&c, NULL, "status", "--", "--x", NULL), ==, -EINVAL);
        CHECK_INT(parse(&c, NULL, "--", "status", "x", NULL), ==, 0);
        CHECK_INT(parse(&c, NULL, "--cert", "c", "--key", "k", "--cacert", "ca", "health", NULL), ==, 0);
        CHECK_STR(c.cert, "c");
        CHECK_STR(c.key, "k");
        CHECK_STR(c.cacert, "ca");
}

static void test_parse_errors(void)
{
        static const char *const bad[][10] = {
                { NULL },                                          /* no command */
                { "frobnicate", NULL },                            /* unknown command */
                { "health", "extra", NULL },                       /* too many args */
                { "status", NULL },                                /* missing name */
                { "status", "a", "b", NULL },
                { "status", "bad name", NULL },
                { "status", "-leading", NULL },
                { "warm", "x", "--size", "1G", NULL },             /* no --node */
                { "warm", "x", "--node", "0", NULL },              /* no --size */
                { "warm", "x", "--node", "-1", "--size", "1G", NULL },
                { "warm", "x", "--node", "0", "--size", "1.5G", NULL },
                { "warm", "x", "--node", "0", "--size", "0", NULL },
                { "warm", "x", "--node", "0", "--size", "3M", "--page-size", "2M", NULL },
                { "warm", "x", "--node", "0", "--size", "1G", "--page-size", "3M", NULL },
                { "warm", "x", "--node", "0", "--size", "1G", "--threads", "0", NULL },
                { "warm", "x", "--node", "0", "--size", "1G", "--vmm", "qemu", NULL }, /* wrong command */
                { "health", "--node", "0", NULL },
                { "health", "--bogus", NULL },
                { "health", "-x", NULL },
                { "health", "--timeout", NULL },                   /* value missing */
                { "health", "--timeout", "soon", NULL },
                { "health", "--timeout", "-1", NULL },
                { "health", "--json=yes", NULL },
                { "reserve", "0", "2M", NULL },
                { "reserve", "x", "2M", "1", NULL },
                { "reserve", "0", "2X", "1", NULL },
                { "reserve", "0", "2M", "-1", NULL },
                { "handoff", "vm", NULL },
                { "handoff", "vm", "--vmm", "xen", NULL },
                { "handoff", "vm", "vm", "--vmm", "qemu", NULL },   /* one pool per guest node */
                { "handoff", "vm", "a/b", "--vmm", "qemu", NULL },
                { "handoff", "--vmm", "qemu", "--argv", NULL },
                { "status", "vm", "--argv", NULL },
                { "fleet", "nodes", NULL },                        /* no --hosts */
                { "fleet", "--hosts", "f", "dance", NULL },
                { "fleet", "--hosts", "f", "place", NULL },        /* no --size */
                { "fleet", "--hosts", "f", "nodes", "--size", "1G", NULL },
                { "fleet", "--hosts", "f", "place", "--size", "1G", "--wait", NULL },
                { "health", "--cert", "c", NULL },                 /* cert without key */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *argv[12] = { (char *)"hpwarm" };
                int argc = 1;
                struct cli c;
                for (size_t j = 0; bad[i][j]; j++)
                        argv[argc++] = (char *)bad[i][j];
                errbuf[0] = '\0';
                int r = cli_parse(argc, argv, NULL, NULL, &c, errbuf, sizeof(errbuf));
                if (r != -EINVAL)
                        fprintf(stderr, "case %zu (%s ...) parsed\n", i, argc > 1 ? argv[1] : "");
                CHECK_INT(r, ==, -EINVAL);
                CHECK(errbuf[0] != '\0');
        }
}

static void test_sizes(void)
{
        static const struct { const char *s; int r; uint64_t v; } t[] = {
                { "0", 0, 0 }, { "4096", 0, 4096 }, { "1K", 0, 1024 }, { "1k", 0, 1024 },
                { "2048kB", 0, 2ull << 20 }, { "2M", 0, 2ull << 20 }, { "2MiB", 0, 2ull << 20 },
                { "2mb", 0, 2ull << 20 }, { "1G", 0, 1ull << 30 }, { "64GiB", 0, 64ull << 30 },
                { "3T", 0, 3ull << 40 }, { "10B", 0, 10 }, { "16777215T", 0, 16777215ull << 40 },
                { "16777216T", -ERANGE, 0 }, { "18446744073709551615", 0, UINT64_MAX },
                { "18446744073709551616", -ERANGE, 0 }, { "", -EINVAL, 0 }, { "G", -EINVAL, 0 },
                { "-1G", -EINVAL, 0 }, { "+1G", -EINVAL, 0 }, { "1.5G", -EINVAL, 0 }, { "1 G", -EINVAL, 0 },
                { "1GG", -EINVAL, 0 }, { "1P", -EINVAL, 0 }, { "0x10", -EINVAL, 0 },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                uint64_t v = 12345;
                int r = cli_parse_size(t[i].s, &v);
                if (r != t[i].r)
                        fprintf(stderr, "size '%s'\n", t[i].s);
                CHECK_INT(r, ==, t[i].r);
                CHECK_U64(v, ==, r == 0 ? t[i].v : 12345);
        }
        uint64_t v;
        CHECK_INT(cli_parse_page_size("2M", &v), ==, 0);
        CHECK_U64(v, ==, 2ull << 20);
        CHECK_INT(cli_parse_page_size("1GiB", &v), ==, 0);
        CHECK_INT(cli_parse_page_size("4K", &v), ==, 0);
        CHECK_INT(cli_parse_page_size("3M", &v), ==, -EINVAL);
        CHECK_INT(cli_parse_page_size("2K", &v), ==, -EINVAL);
        CHECK_INT(cli_parse_page_size("0", &v), ==, -EINVAL);

        CHECK_INT(cli_parse_seconds("30", &v), ==, 0);
        CHECK_U64(v, ==, 30000);
        CHECK_INT(cli_parse_seconds("0.25", &v), ==, 0);
        CHECK_U64(v, ==, 250);
        CHECK_INT(cli_parse_seconds("1.5", &v), ==, 0);
        CHECK_U64(v, ==, 1500);
        CHECK_INT(cli_parse_seconds("0", &v), ==, 0);
        CHECK_U64(v, ==, 0);
        CHECK_INT(cli_parse_seconds("1.", &v), ==, -EINVAL);
        CHECK_INT(cli_parse_seconds(".5", &v), ==, -EINVAL);
        CHECK_INT(cli_parse_seconds("1.0001", &v), ==, -EINVAL);
        CHECK_INT(cli_parse_seconds("1s", &v), ==, -EINVAL);
        CHECK_INT(cli_parse_seconds("99999999999", &v), ==, -ERANGE);

        char b[32];
        cli_format_bytes(17, b, sizeof(b));
        CHECK_STR(b, "17 B");
        cli_format_bytes(1ull << 30, b, sizeof(b));
        CHECK_STR(b, "1 GiB");
        cli_format_bytes(3ull << 29, b, sizeof(b));
        CHECK_STR(b, "1.5 GiB");
}

static void test_exit_codes(void)
{
        static const struct { enum hpw_error e; int code; } t[] = {
                { HPW_OK, 0 }, { HPW_E_POOL_FAILED, 1 }, { HPW_E_NOT_FOUND, 1 }, { HPW_E_BAD_REQUEST, 1 },
                { HPW_E_SERVER, 1 }, { HPW_E_UNAVAILABLE, 1 }, { HPW_E_RATE_LIMITED, 1 }, { HPW_E_PROTOCOL, 1 },
                { HPW_E_NOMEM, 1 }, { HPW_E_HTTP, 1 }, { HPW_E_IO, 1 }, { HPW_E_INVALID, 2 },
                { HPW_E_UNREACHABLE, 3 }, { HPW_E_TLS, 3 }, { HPW_E_TIMEOUT, 4 }, { HPW_E_CONFLICT, 5 },
                { HPW_E_INSUFFICIENT, 5 }, { HPW_E_UNAUTHORIZED, 6 }, { HPW_E_FORBIDDEN, 6 },
                { (enum hpw_error)999, 1 },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                CHECK_INT(cli_exit_code(t[i].e), ==, t[i].code);
        /* --help documents every code. */
        for (int code = 0; code <= 6; code++) {
                char line[8];
                snprintf(line, sizeof(line), "  %d  ", code);
                CHECK(strstr(cli_usage, line) != NULL);
        }
}

static void test_timeouts_and_fleet_exit(void)
{
        struct cli c = { 0 };

        CHECK_U64(cli_timeout_ms(&c, true), ==, CLI_DEFAULT_FLEET_TIMEOUT_MS);
        CHECK_U64(cli_timeout_ms(&c, false), ==, CLI_DEFAULT_TIMEOUT_MS);
        c.timeout_set = true;
        c.timeout_ms = 0;
        /* fleet --timeout 0 must not mean "wait for a silent host forever". */
        CHECK_U64(cli_timeout_ms(&c, true), ==, CLI_DEFAULT_FLEET_TIMEOUT_MS);
        CHECK_U64(cli_timeout_ms(&c, false), ==, 0);
        c.timeout_ms = 4200;
        CHECK_U64(cli_timeout_ms(&c, true), ==, 4200);
        CHECK_U64(cli_timeout_ms(&c, false), ==, 4200);

        struct hpw_fleet_host hs[3] = { 0 };
        struct hpw_fleet f = { .n = 3, .hosts = hs };
        hs[0].err = HPW_E_UNAUTHORIZED;
        hs[1].err = HPW_E_FORBIDDEN;
        hs[2].err = HPW_E_UNAUTHORIZED;
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_AUTH);
        hs[1].err = HPW_E_UNREACHABLE;
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_UNREACHABLE);
        hs[1].err = HPW_E_PROTOCOL;
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_UNREACHABLE);
        hs[0].err = hs[1].err = hs[2].err = HPW_E_TIMEOUT;
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_TIMEOUT);
        hs[2].err = HPW_OK;
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_OK);
        f.n = 0;
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_UNREACHABLE);
}

static void test_place(void)
{
        const uint64_t M2 = 2ull << 20, G1 = 1ull << 30;
        struct place_cand c[] = {
                { 0, 0, M2, 100 }, { 0, 1, M2, 300 }, { 1, 0, M2, 300 }, { 1, 1, G1, 900 },
                { 2, 2, M2, 300 }, { 2, 0, M2, 300 }, { 3, 0, M2, 50 },
        };
        size_t best = 99;

        /* Most free wins; ties: earlier host, then lower node. */
        CHECK_INT(cli_place(c, 7, 64 * M2, M2, &best), ==, 0);
        CHECK_INT(best, ==, 1);
        /* Reorder so the tie is resolved by node id within a host. */
        struct place_cand d[] = { { 5, 2, M2, 300 }, { 5, 0, M2, 300 }, { 6, 0, M2, 300 } };
        CHECK_INT(cli_place(d, 3, M2, M2, &best), ==, 0);
        CHECK_INT(best, ==, 1);
        /* Page size must match. */
        CHECK_INT(cli_place(c, 7, 2 * G1, G1, &best), ==, 0);
        CHECK_INT(best, ==, 3);
        /* Exactly fits; one page more does not; partial pages round up. */
        CHECK_INT(cli_place(c, 7, 300 * M2, M2, &best), ==, 0);
        best = 99;
        CHECK_INT(cli_place(c, 7, 301 * M2, M2, &best), ==, -ENOENT);
        CHECK_INT(best, ==, 99);
        CHECK_INT(cli_place(c, 7, 300 * M2 - 1, M2, &best), ==, 0);
        CHECK_INT(cli_place(c, 7, 300 * M2 + 1, M2, &best), ==, -ENOENT);
        CHECK_INT(cli_place(c, 0, M2, M2, &best), ==, -ENOENT);
        CHECK_INT(cli_place(c, 7, M2, 0, &best), ==, -EINVAL);
        CHECK_INT(cli_place(c, 7, 2 * G1, 4096, &best), ==, -ENOENT);
}

static void test_hosts_and_table(void)
{
        char path[] = "/tmp/hpwarm-hosts-XXXXXX";
        int fd = mkstemp(path);
        char **h = NULL;
        size_t n = 0;
        FILE *f;

        CHECK(fd >= 0);
        f = fdopen(fd, "w");
        fputs("# fleet\n\nhttp://a:1\n  http://b:2  \r\n#http://c:3\nunix:///s.sock", f);
        fclose(f);
        CHECK_INT(cli_read_hosts(path, &h, &n), ==, 0);
        CHECK_INT(n, ==, 3);
        CHECK_STR(h[0], "http://a:1");
        CHECK_STR(h[1], "http://b:2");
        CHECK_STR(h[2], "unix:///s.sock");
        cli_hosts_free(h, n);
        unlink(path);
        CHECK_INT(cli_read_hosts(path, &h, &n), ==, -ENOENT);

        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        struct table *t = table_new("A\tLONGER\tC");
        table_addf(t, "%s\t%d\t%s", "xxxx", 1, "z");
        table_addf(t, "y");  /* short rows are padded */
        table_print(t, m);
        table_free(t);
        fclose(m);
        CHECK_STR(buf, "A     LONGER  C\nxxxx  1       z\ny             \n");
        free(buf);
}

int main(void)
{
        test_parse_ok();
        test_parse_errors();
        test_sizes();
        test_exit_codes();
        test_timeouts_and_fleet_exit();
        test_place();
        test_hosts_and_table();
        printf("ok\n");
        return 0;
}
