/* Unit tests of the hpwarm CLI's pure parts: argument parsing (options
 * before and after the command, env defaults, every usage error class),
 * sizes, seconds, exit-code mapping, place selection, hosts files, tables.
 * Each rule is a TEST() of check.h's, run in a process of its own, so a
 * failed check names its rule and the other rules still run; HPW_TEST=name
 * runs one. */
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "check.h"
#include "cli.h"
#include "internal.h"
#include "size_cases.h"

static char errbuf[256];

/* test_defer's cleanup: remove the file the test made, however it ended. */
static void unlink_path(const void *path, size_t len)
{
        (void)len;
        unlink(path);
}

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

TEST(parse_defaults_without_options)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "health", NULL), ==, 0);
        CHECK_INT(c.cmd, ==, CMD_HEALTH);
        CHECK_STR(c.url, CLI_DEFAULT_URL);
        CHECK(!c.timeout_set);
        CHECK(!c.json);
}

/* The README's handoff recipe: options after the command, including globals. */
TEST(parse_options_after_the_command)
{
        struct cli c;

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
}

/* Globals before the command, command options after it, --opt=value. */
TEST(parse_globals_before_command_options_after)
{
        struct cli c;

        CHECK_INT(parse(&c, "http://env:1", "--json", "--url=http://h:9", "warm", "p", "--node=1",
                        "--size=4G", "--page-size", "1G", "--threads", "4", "--ttl", "600", "--reserve", NULL),
                  ==, 0);
        CHECK_STR(c.url, "http://h:9");
        CHECK(c.json);
        CHECK_INT(c.node, ==, 1);
        CHECK_U64(c.page_size, ==, 1ull << 30);
        CHECK_INT(c.threads, ==, 4);
        CHECK_U64(c.ttl_seconds, ==, 600);
        CHECK(c.reserve);
}

/* Environment default, overridden by the option. */
TEST(parse_env_default_overridden_by_option)
{
        struct cli c;

        CHECK_INT(parse(&c, "http://env:1", "pools", NULL), ==, 0);
        CHECK_STR(c.url, "http://env:1");
        char *argv[] = { (char *)"hpwarm", (char *)"pools", (char *)"--token-file", (char *)"/b" };
        CHECK_INT(cli_parse(4, argv, NULL, "/a", &c, errbuf, sizeof(errbuf)), ==, 0);
        CHECK_STR(c.token_file, "/b");
        CHECK_INT(cli_parse(2, argv, "", "/a", &c, errbuf, sizeof(errbuf)), ==, 0);
        CHECK_STR(c.token_file, "/a");
        CHECK_STR(c.url, CLI_DEFAULT_URL);
}

TEST(parse_reserve_and_nodes)
{
        struct cli c;

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
}

/* Several pools, in guest node order; libvirt; --argv. */
TEST(parse_handoff_vmm_pools_and_argv)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "handoff", "vm", "--vmm", "cloud-hypervisor", NULL), ==, 0);
        CHECK_STR(c.vmm->name, "cloud-hypervisor");
        CHECK_INT(parse(&c, NULL, "handoff", "--vmm=qemu", "vm", NULL), ==, 0);
        CHECK_STR(c.vmm->name, "qemu");
        CHECK_INT(c.n_names, ==, 1);
        CHECK_STR(c.names[0], "vm");
        CHECK(!c.argv_words);
        CHECK_INT(parse(&c, NULL, "handoff", "vm-b", "vm-a", "--vmm", "libvirt", "vm-c", "--argv", NULL), ==, 0);
        CHECK_STR(c.vmm->name, "libvirt");
        CHECK_INT(c.n_names, ==, 3);
        CHECK_STR(c.names[0], "vm-b");
        CHECK_STR(c.names[1], "vm-a");
        CHECK_STR(c.names[2], "vm-c");
        CHECK(c.argv_words);
        CHECK_INT(c.n_as, ==, 0);
        CHECK(c.source_url == NULL);
}

/* A migration destination: one --as per pool, repeated or as a list, in
 * guest node order; --source-url with it. */
TEST(parse_handoff_as_and_source_url)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "handoff", "d-a", "d-b", "--vmm", "qemu", "--as", "s-a", "--as", "s-b", NULL), ==, 0);
        CHECK_INT(c.n_as, ==, 2);
        CHECK_STR(c.as[0], "s-a");
        CHECK_STR(c.as[1], "s-b");
        CHECK_INT(parse(&c, NULL, "handoff", "d-a", "d-b", "--vmm", "qemu", "--as=s-a,s-b", "--source-url",
                        "http://src:7411", NULL), ==, 0);
        CHECK_INT(c.n_as, ==, 2);
        CHECK_STR(c.as[1], "s-b");
        CHECK_STR(c.source_url, "http://src:7411");
        CHECK_INT(parse(&c, NULL, "handoff", "d", "--vmm", "libvirt", "--as", "s", NULL), ==, 0);
        CHECK_STR(c.as[0], "s");
}

TEST(parse_claim_pid_and_release_ignore_missing)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "claim", "vm", "--pid", "4242", NULL), ==, 0);
        CHECK_INT(c.cmd, ==, CMD_CLAIM);
        CHECK_INT(c.pid, ==, 4242);
        CHECK_INT(parse(&c, NULL, "claim", "vm", NULL), ==, 0);
        CHECK_INT(c.pid, ==, 0);
        CHECK_INT(parse(&c, NULL, "release", "vm", "--ignore-missing", NULL), ==, 0);
        CHECK(c.ignore_missing);
        CHECK_INT(parse(&c, NULL, "release", "vm", NULL), ==, 0);
        CHECK(!c.ignore_missing);
}

TEST(parse_fleet_place_and_nodes)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "fleet", "--hosts", "f", "place", "--size", "1G", "--warm", "vm", NULL), ==, 0);
        CHECK_INT(c.fleet, ==, FLEET_PLACE);
        CHECK_U64(c.page_size, ==, CLI_DEFAULT_PAGE_SIZE);
        CHECK_STR(c.warm_name, "vm");
        CHECK_INT(parse(&c, NULL, "fleet", "nodes", "--hosts=f", "--timeout", "0.5", NULL), ==, 0);
        CHECK_INT(c.fleet, ==, FLEET_NODES);
        CHECK_U64(c.timeout_ms, ==, 500);
}

/* Help wins over missing options and is the command's own. */
TEST(parse_help_and_version)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "--help", NULL), ==, 0);
        CHECK(c.help);
        CHECK_INT(parse(&c, NULL, "warm", "-h", NULL), ==, 0);  /* help wins over missing options */
        CHECK(c.help);
        CHECK_INT(c.cmd, ==, CMD_WARM);                         /* ... and is warm's help */
        CHECK_INT(parse(&c, NULL, "fleet", "--help", NULL), ==, 0);
        CHECK(c.help);
        CHECK_INT(c.cmd, ==, CMD_FLEET);
        CHECK_INT(parse(&c, NULL, "help", "release", NULL), ==, 0);
        CHECK(c.help);
        CHECK_INT(c.cmd, ==, CMD_RELEASE);
        CHECK_INT(parse(&c, NULL, "help", NULL), ==, 0);
        CHECK(c.help);
        CHECK_INT(c.cmd, ==, CMD_NONE);
        CHECK_INT(parse(&c, NULL, "--version", NULL), ==, 0);
        CHECK(c.version);
}

/* "--" ends options: a pool named like an option is still rejected by the name rule. */
TEST(parse_double_dash_ends_options)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "status", "--", "--x", NULL), ==, -EINVAL);
        CHECK_INT(parse(&c, NULL, "--", "status", "x", NULL), ==, 0);
}

TEST(parse_tls_files)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "--cert", "c", "--key", "k", "--cacert", "ca", "health", NULL), ==, 0);
        CHECK_STR(c.cert, "c");
        CHECK_STR(c.key, "k");
        CHECK_STR(c.cacert, "ca");
}

/* Every usage error class is -EINVAL with a message. */
TEST(parse_refuses_each_usage_error_with_a_message)
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
                { "handoff", "d-a", "d-b", "--vmm", "qemu", "--as", "s-a", NULL },   /* one source per pool */
                { "handoff", "d", "--vmm", "qemu", "--as", "s-a,s-b", NULL },
                { "handoff", "d-a", "d-b", "--vmm", "qemu", "--as", "s,s", NULL },   /* a source twice */
                { "handoff", "d", "--vmm", "qemu", "--as", "a/b", NULL },
                { "handoff", "d", "--vmm", "qemu", "--as", "", NULL },
                { "handoff", "d", "d2", "--vmm", "qemu", "--as", "s,", NULL },
                { "handoff", "d", "--vmm", "qemu", "--source-url", "http://s:1", NULL }, /* without --as */
                { "handoff", "d", "--vmm", "cloud-hypervisor", "--as", "s", NULL },      /* restore keeps the source's zones */
                { "status", "vm", "--as", "s", NULL },
                { "status", "vm", "--argv", NULL },
                { "fleet", "nodes", NULL },                        /* no --hosts */
                { "fleet", "--hosts", "f", "dance", NULL },
                { "fleet", "--hosts", "f", "place", NULL },        /* no --size */
                { "fleet", "--hosts", "f", "nodes", "--size", "1G", NULL },
                { "fleet", "--hosts", "f", "place", "--size", "1G", "--wait", NULL },
                { "health", "--cert", "c", NULL },                 /* cert without key */
                { "--node", "1", "warm", "p", "--size", "1G", NULL }, /* command option before the command */
                { "--vmm=qemu", "handoff", "vm", NULL },
                { "warm", "x", "--node", "0", "--size", "2m", NULL }, /* the shared grammar: case matters */
                { "warm", "x", "--node", "0", "--size", "2MB", NULL },
                { "claim", "vm", "--pid", "0", NULL },
                { "claim", "vm", "--pid", "-5", NULL },
                { "claim", "vm", "--pid", "x", NULL },
                { "release", "vm", "--pid", "5", NULL },           /* claim's option */
                { "claim", "vm", "--ignore-missing", NULL },       /* release's option */
                { "help", "frob", NULL },
                { "help", "warm", "claim", NULL },
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

TEST(sizes_follow_the_shared_grammar)
{
        /* The shared table (tests/common/size_cases.h), which the daemon's
         * unit test runs through its parser too. */
        for (size_t i = 0; i < sizeof(size_cases) / sizeof(size_cases[0]); i++) {
                const struct size_case *t = &size_cases[i];
                uint64_t v = 12345, pv = 12345;
                int r = cli_parse_size(t->s, &v);
                int pr = cli_parse_page_size(t->s, &pv);
                char why[200];

                if (r != t->size_r || (pr == 0) != (t->page_ok == 1))
                        fprintf(stderr, "size '%s': %d (want %d), page %d (want %s)\n", t->s, r, t->size_r, pr,
                                t->page_ok ? "ok" : "refused");
                CHECK_INT(r, ==, t->size_r);
                CHECK_U64(v, ==, r == 0 ? t->v : 12345);
                CHECK_INT(pr, ==, t->page_ok ? 0 : -EINVAL);
                CHECK_U64(pv, ==, pr == 0 ? t->v : 12345);
                /* Every refusal is explained; nothing accepted is. */
                cli_size_explain(t->s, false, why, sizeof(why));
                CHECK_INT(why[0] != '\0', ==, r != 0);
                cli_size_explain(t->s, true, why, sizeof(why));
                CHECK_INT(why[0] != '\0', ==, pr != 0);
        }
}

/* Page sizes: powers of two from 4K. */
TEST(page_sizes_are_powers_of_two)
{
        uint64_t v;

        CHECK_INT(cli_parse_page_size("2M", &v), ==, 0);
        CHECK_U64(v, ==, 2ull << 20);
        CHECK_INT(cli_parse_page_size("1GiB", &v), ==, 0);
        CHECK_INT(cli_parse_page_size("4K", &v), ==, 0);
        CHECK_INT(cli_parse_page_size("3M", &v), ==, -EINVAL);
        CHECK_INT(cli_parse_page_size("2K", &v), ==, -EINVAL);
        CHECK_INT(cli_parse_page_size("0", &v), ==, -EINVAL);
}

/* Seconds to milliseconds, at most three decimals. */
TEST(seconds_to_milliseconds)
{
        uint64_t v;

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
}

TEST(format_bytes_in_binary_units)
{
        char b[32];

        cli_format_bytes(17, b, sizeof(b));
        CHECK_STR(b, "17 B");
        cli_format_bytes(1ull << 30, b, sizeof(b));
        CHECK_STR(b, "1 GiB");
        cli_format_bytes(3ull << 29, b, sizeof(b));
        CHECK_STR(b, "1.5 GiB");
}

TEST(exit_code_per_error)
{
        static const struct { enum hpw_error e; int code; } t[] = {
                { HPW_OK, 0 }, { HPW_E_POOL_FAILED, 1 }, { HPW_E_NOT_FOUND, 1 }, { HPW_E_BAD_REQUEST, 1 },
                { HPW_E_SERVER, 1 }, { HPW_E_UNAVAILABLE, 8 }, { HPW_E_RATE_LIMITED, 8 }, { HPW_E_PROTOCOL, 1 },
                { HPW_E_CANCELLED, 1 },
                { HPW_E_NOMEM, 1 }, { HPW_E_HTTP, 1 }, { HPW_E_IO, 1 }, { HPW_E_INVALID, 2 },
                { HPW_E_UNREACHABLE, 3 }, { HPW_E_TLS, 3 }, { HPW_E_TIMEOUT, 4 }, { HPW_E_CONFLICT, 5 },
                { HPW_E_INSUFFICIENT, 5 }, { HPW_E_UNAUTHORIZED, 6 }, { HPW_E_FORBIDDEN, 6 },
                { (enum hpw_error)999, 1 },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                CHECK_INT(cli_exit_code(t[i].e), ==, t[i].code);
}

/* "Try again later" only for what the catalog says passes: a busy daemon,
 * not one without hugetlbfs; a 503 without a known slug (a proxy's) by its
 * status. */
TEST(exit_retry_only_for_retryable_slugs)
{
        CHECK_INT(cli_exit_for(HPW_E_UNAVAILABLE, HPW_SLUG_BUSY), ==, CLI_EXIT_RETRY);
        CHECK_INT(cli_exit_for(HPW_E_UNAVAILABLE, HPW_SLUG_STOPPING), ==, CLI_EXIT_RETRY);
        CHECK_INT(cli_exit_for(HPW_E_RATE_LIMITED, HPW_SLUG_TOO_MANY_WAITS), ==, CLI_EXIT_RETRY);
        CHECK_INT(cli_exit_for(HPW_E_UNAVAILABLE, HPW_SLUG_UNKNOWN), ==, CLI_EXIT_RETRY);
        CHECK_INT(cli_exit_for(HPW_E_UNAVAILABLE, HPW_SLUG_NO_HUGETLBFS), ==, CLI_EXIT_FAILED);
        CHECK_INT(cli_exit_for(HPW_E_RATE_LIMITED, HPW_SLUG_TOO_MANY_POOLS), ==, CLI_EXIT_FAILED);
        CHECK_INT(cli_exit_for(HPW_E_CONFLICT, HPW_SLUG_POOL_CONFLICT), ==, CLI_EXIT_CONFLICT);
}

/* --help documents every code, and fleet --help the partial one. */
TEST(help_documents_every_exit_code)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        cli_help(CMD_NONE, m);
        fclose(m);
        for (int code = 0; code <= 7; code++) {
                char line[8];
                snprintf(line, sizeof(line), "  %d  ", code);
                CHECK(strstr(buf, line) != NULL);
        }
        free(buf);
        m = open_memstream(&buf, &len);
        cli_help(CMD_FLEET, m);
        fclose(m);
        CHECK(strstr(buf, "7 some hosts did not answer") != NULL);
        CHECK(strstr(buf, "--hosts FILE") != NULL);
        free(buf);
}

/* Per-command help lists that command's options and no other's. */
TEST(help_lists_its_commands_options_only)
{
        static const struct { enum cli_cmd cmd; const char *has, *hasnt; } t[] = {
                { CMD_WARM, "--reserve", "--pid" },
                { CMD_WARM, "--node N", "--ignore-missing" },
                { CMD_CLAIM, "--pid PID", "--reserve" },
                { CMD_RELEASE, "--ignore-missing", "--node" },
                { CMD_FLEET, "--hosts FILE", "--vmm" },
                { CMD_HANDOFF, "--vmm VMM", "--size" },
                { CMD_RESERVE, "--allow-partial", "--wait" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char *buf = NULL;
                size_t len = 0;
                FILE *m = open_memstream(&buf, &len);

                cli_help(t[i].cmd, m);
                fclose(m);
                if (!strstr(buf, t[i].has) || strstr(buf, t[i].hasnt))
                        fprintf(stderr, "help of command %d: want '%s', not '%s':\n%s", t[i].cmd, t[i].has,
                                t[i].hasnt, buf);
                CHECK(strstr(buf, t[i].has) != NULL);
                CHECK(strstr(buf, t[i].hasnt) == NULL);
                free(buf);
        }
}

/* --url: HOST:PORT is http, a path a unix socket; other schemes refused. */
TEST(url_normalize)
{
        static const struct { const char *in, *out; } ok[] = {
                { "127.0.0.1:7411", "http://127.0.0.1:7411" },
                { "host.example:80", "http://host.example:80" },
                { "/run/hpwarmd/api.sock", "unix:///run/hpwarmd/api.sock" },
                { "http://h:1", "http://h:1" },
                { "https://h:1", "https://h:1" },
                { "unix:///s", "unix:///s" },
        };
        char out[256], err[256];

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                CHECK_INT(cli_url_normalize(ok[i].in, out, sizeof(out), err, sizeof(err)), ==, 0);
                CHECK_STR(out, ok[i].out);
        }
        CHECK_INT(cli_url_normalize("ftp://h", out, sizeof(out), err, sizeof(err)), ==, -EINVAL);
        CHECK(strstr(err, "unsupported scheme 'ftp'") && strstr(err, "http://HOST:PORT"));
        CHECK_INT(cli_url_normalize("", out, sizeof(out), err, sizeof(err)), ==, -EINVAL);
}

/* An unreachable daemon: the hint says what to look at. */
TEST(unreachable_hints)
{
        char hint[512];

        cli_unreachable_hint("unix:///run/hpwarmd/api.sock", ENOENT, "Couldn't connect", hint, sizeof(hint));
        CHECK(strstr(hint, "is hpwarmd running? (looked for unix:/run/hpwarmd/api.sock)") != NULL);
        cli_unreachable_hint("unix:///run/hpwarmd/api.sock", EACCES, "", hint, sizeof(hint));
        CHECK(strstr(hint, "permission denied on unix:/run/hpwarmd/api.sock") && strstr(hint, "--socket-group"));
        cli_unreachable_hint("unix:///s", ECONNREFUSED, "", hint, sizeof(hint));
        CHECK(strstr(hint, "nothing listens on unix:/s") != NULL);
        cli_unreachable_hint("http://10.0.0.1:7411", 0,
                             "Failed to connect to 10.0.0.1 port 7411 after 0 ms: Couldn't connect to server", hint,
                             sizeof(hint));
        CHECK(strstr(hint, "connection refused by http://10.0.0.1:7411") && strstr(hint, "--listen"));
        cli_unreachable_hint("https://h:1", 0, "error:0A00010B:SSL routines::wrong version number", hint,
                             sizeof(hint));
        CHECK(strstr(hint, "use http://") != NULL);
        cli_unreachable_hint("http://h:1", 0, "Empty reply from server", hint, sizeof(hint));
        CHECK(strstr(hint, "use https://") != NULL);
}

/* fleet --timeout 0 must not mean "wait for a silent host forever". */
TEST(timeouts_default_and_fleet_zero)
{
        struct cli c = { 0 };

        CHECK_U64(cli_timeout_ms(&c, true), ==, CLI_DEFAULT_FLEET_TIMEOUT_MS);
        CHECK_U64(cli_timeout_ms(&c, false), ==, CLI_DEFAULT_TIMEOUT_MS);
        c.timeout_set = true;
        c.timeout_ms = 0;
        CHECK_U64(cli_timeout_ms(&c, true), ==, CLI_DEFAULT_FLEET_TIMEOUT_MS);
        CHECK_U64(cli_timeout_ms(&c, false), ==, 0);
        c.timeout_ms = 4200;
        CHECK_U64(cli_timeout_ms(&c, true), ==, 4200);
        CHECK_U64(cli_timeout_ms(&c, false), ==, 4200);
}

/* The fleet's exit code, read from how each host answered. */
TEST(fleet_exit_by_host_errors)
{
        struct hpw_fleet_host hs[3] = { 0 };
        struct hpw_fleet_host *hp[3] = { &hs[0], &hs[1], &hs[2] };
        struct hpw_fleet f = { .n = 3, .hosts = hp };
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
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_PARTIAL);    /* some answered, some did not */
        hs[0].err = hs[1].err = HPW_OK;
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_OK);         /* every host answered */
        f.n = 0;
        CHECK_INT(cli_fleet_exit(&f), ==, CLI_EXIT_UNREACHABLE);
}

TEST(place_most_free_of_the_page_size)
{
        const uint64_t M2 = 2ull << 20, G1 = 1ull << 30;
        struct place_cand c[] = {
                { 0, 0, M2, 100, 0 }, { 0, 1, M2, 300, 0 }, { 1, 0, M2, 300, 0 }, { 1, 1, G1, 900, 0 },
                { 2, 2, M2, 300, 0 }, { 2, 0, M2, 300, 0 }, { 3, 0, M2, 50, 0 },
        };
        size_t best = 99;
        enum place_why why = PLACE_STOCK;

        /* Most free wins; ties: earlier host, then lower node. */
        CHECK_INT(cli_place(c, 7, 64 * M2, M2, &best, &why), ==, 0);
        CHECK_INT(best, ==, 1);
        CHECK_INT(why, ==, PLACE_FREE);
        /* Reorder so the tie is resolved by node id within a host. */
        struct place_cand d[] = { { 5, 2, M2, 300, 0 }, { 5, 0, M2, 300, 0 }, { 6, 0, M2, 300, 0 } };
        CHECK_INT(cli_place(d, 3, M2, M2, &best, &why), ==, 0);
        CHECK_INT(best, ==, 1);
        /* Page size must match. */
        CHECK_INT(cli_place(c, 7, 2 * G1, G1, &best, &why), ==, 0);
        CHECK_INT(best, ==, 3);
        /* Exactly fits; one page more does not; partial pages round up. */
        CHECK_INT(cli_place(c, 7, 300 * M2, M2, &best, &why), ==, 0);
        best = 99;
        why = PLACE_STOCK;
        CHECK_INT(cli_place(c, 7, 301 * M2, M2, &best, &why), ==, -ENOENT);
        CHECK_INT(best, ==, 99);
        CHECK_INT(why, ==, PLACE_STOCK);   /* written only on success */
        CHECK_INT(cli_place(c, 7, 300 * M2 - 1, M2, &best, &why), ==, 0);
        CHECK_INT(cli_place(c, 7, 300 * M2 + 1, M2, &best, &why), ==, -ENOENT);
        CHECK_INT(cli_place(c, 0, M2, M2, &best, &why), ==, -ENOENT);
        CHECK_INT(cli_place(c, 7, M2, 0, &best, &why), ==, -EINVAL);
        CHECK_INT(cli_place(c, 7, 2 * G1, 4096, &best, &why), ==, -ENOENT);
}

/* A ready stock file of the size beats free pages; the table says which
 * candidate each case must pick and why. */
TEST(place_prefers_a_ready_stock_file)
{
        static const struct {
                const char *rule;
                struct place_cand c[4];
                size_t n;
                uint64_t size, page_size;
                int rc;
                size_t best;
                enum place_why why;
        } t[] = {
                { "stock hit beats the most free pages",
                  { { 0, 0, 2ull << 20, 500, 0 }, { 1, 1, 2ull << 20, 10, 1 } }, 2, 8 << 20, 2ull << 20, 0, 1,
                  PLACE_STOCK },
                { "stock hit needs no free pages (the file holds them)",
                  { { 0, 0, 2ull << 20, 500, 0 }, { 1, 0, 2ull << 20, 0, 1 } }, 2, 1ull << 30, 2ull << 20, 0, 1,
                  PLACE_STOCK },
                { "stock of another page size is no hit",
                  { { 0, 0, 2ull << 20, 500, 0 }, { 1, 0, 1ull << 30, 0, 3 } }, 2, 512ull << 20, 2ull << 20, 0, 0,
                  PLACE_FREE },
                { "among hits the most ready files win",
                  { { 0, 0, 2ull << 20, 900, 1 }, { 1, 0, 2ull << 20, 10, 2 } }, 2, 8 << 20, 2ull << 20, 0, 1,
                  PLACE_STOCK },
                { "equal ready: the most free pages",
                  { { 0, 0, 2ull << 20, 10, 1 }, { 1, 1, 2ull << 20, 20, 1 } }, 2, 8 << 20, 2ull << 20, 0, 1,
                  PLACE_STOCK },
                { "equal ready and free: earlier host, then lower node",
                  { { 3, 1, 2ull << 20, 10, 1 }, { 3, 0, 2ull << 20, 10, 1 }, { 4, 0, 2ull << 20, 10, 1 } }, 3,
                  8 << 20, 2ull << 20, 0, 1, PLACE_STOCK },
                { "no stock anywhere: free pages as before",
                  { { 0, 0, 2ull << 20, 5, 0 }, { 1, 0, 2ull << 20, 50, 0 } }, 2, 8 << 20, 2ull << 20, 0, 1,
                  PLACE_FREE },
                { "no stock and nothing fits",
                  { { 0, 0, 2ull << 20, 1, 0 } }, 1, 8 << 20, 2ull << 20, -ENOENT, 0, PLACE_FREE },
                { "a 1G stock hit",
                  { { 0, 0, 1ull << 30, 64, 0 }, { 1, 1, 1ull << 30, 0, 1 } }, 2, 4ull << 30, 1ull << 30, 0, 1,
                  PLACE_STOCK },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                size_t best = 99;
                enum place_why why = (enum place_why)-1;
                int rc = cli_place(t[i].c, t[i].n, t[i].size, t[i].page_size, &best, &why);

                if (rc != t[i].rc || (rc == 0 && (best != t[i].best || why != t[i].why)))
                        fprintf(stderr, "place rule '%s': rc %d best %zu why %d\n", t[i].rule, rc, best, (int)why);
                CHECK_INT(rc, ==, t[i].rc);
                if (rc == 0) {
                        CHECK_U64(best, ==, t[i].best);
                        CHECK_INT(why, ==, t[i].why);
                }
        }
}

/* NODE:PAGESIZE:SIZE:COUNT, as hpwarmd --stock reads it. */
TEST(stock_spec_node_pagesize_size_count)
{
        static const struct {
                const char *spec;
                int rc;
                int node;
                uint64_t ps, size, count;
                const char *why;   /* part of the message on failure */
        } t[] = {
                { "0:2M:4G:2", 0, 0, 2ull << 20, 4ull << 30, 2, NULL },
                { "1:1G:64G:1", 0, 1, 1ull << 30, 64ull << 30, 1, NULL },
                { "3:2048kB:8M:4294967295", 0, 3, 2ull << 20, 8ull << 20, 4294967295ull, NULL },
                { "65535:2M:2M:1", 0, 65535, 2ull << 20, 2ull << 20, 1, NULL },
                { "", -EINVAL, 0, 0, 0, 0, "NODE:PAGESIZE:SIZE:COUNT" },
                { "0:2M:4G", -EINVAL, 0, 0, 0, 0, "NODE:PAGESIZE:SIZE:COUNT" },
                { "0:2M:4G:2:9", -EINVAL, 0, 0, 0, 0, "NODE:PAGESIZE:SIZE:COUNT" },
                { "0::4G:2", -EINVAL, 0, 0, 0, 0, "NODE:PAGESIZE:SIZE:COUNT" },
                { ":2M:4G:2", -EINVAL, 0, 0, 0, 0, "NODE:PAGESIZE:SIZE:COUNT" },
                { "0:2M:4G:", -EINVAL, 0, 0, 0, 0, "NODE:PAGESIZE:SIZE:COUNT" },
                { "x:2M:4G:2", -EINVAL, 0, 0, 0, 0, "NODE: not a node id" },
                { "-1:2M:4G:2", -EINVAL, 0, 0, 0, 0, "NODE: not a node id" },
                { "65536:2M:4G:2", -EINVAL, 0, 0, 0, 0, "NODE: not a node id" },
                { "0:3M:4G:2", -EINVAL, 0, 0, 0, 0, "PAGESIZE" },
                { "0:2m:4G:2", -EINVAL, 0, 0, 0, 0, "PAGESIZE" },
                { "0:2M:4X:2", -EINVAL, 0, 0, 0, 0, "SIZE" },
                { "0:2M:0:2", -EINVAL, 0, 0, 0, 0, "positive multiple" },
                { "0:2M:3M:2", -EINVAL, 0, 0, 0, 0, "positive multiple" },
                { "0:1G:2M:1", -EINVAL, 0, 0, 0, 0, "positive multiple" },
                { "0:2M:4G:0", -EINVAL, 0, 0, 0, 0, "COUNT" },
                { "0:2M:4G:-1", -EINVAL, 0, 0, 0, 0, "COUNT" },
                { "0:2M:4G:4294967296", -EINVAL, 0, 0, 0, 0, "COUNT" },
                { "0:2M:4G:2x", -EINVAL, 0, 0, 0, 0, "COUNT" },
                { "0:2M:18446744073709551616:1", -EINVAL, 0, 0, 0, 0, "SIZE" },
                { "00000000000000000000000000000000000000000000000000000000000000000:2M:4G:2", -EINVAL, 0, 0, 0, 0,
                  "NODE:PAGESIZE:SIZE:COUNT" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct hpw_stock_target g = { .node = -7 };
                char err[256] = "";
                int rc = cli_parse_stock_spec(t[i].spec, &g, err, sizeof(err));

                if (rc != t[i].rc)
                        fprintf(stderr, "spec '%s': rc %d (%s)\n", t[i].spec, rc, err);
                CHECK_INT(rc, ==, t[i].rc);
                if (rc == 0) {
                        CHECK_INT(g.node, ==, t[i].node);
                        CHECK_U64(g.page_size_bytes, ==, t[i].ps);
                        CHECK_U64(g.size_bytes, ==, t[i].size);
                        CHECK_U64(g.count, ==, t[i].count);
                        CHECK_U64(g.ready + g.warming + g.recycling + g.deficit, ==, 0);
                } else {
                        if (!strstr(err, t[i].why))
                                fprintf(stderr, "spec '%s': message '%s' lacks '%s'\n", t[i].spec, err, t[i].why);
                        CHECK(strstr(err, t[i].why) != NULL);
                        CHECK_INT(g.node, ==, -7);   /* written only on success */
                }
        }
}

TEST(parse_stock_show_set_clear)
{
        struct cli c;

        CHECK_INT(parse(&c, NULL, "stock", NULL), ==, 0);
        CHECK_INT(c.cmd, ==, CMD_STOCK);
        CHECK_INT(c.stock_op, ==, STOCK_SHOW);
        CHECK_INT(parse(&c, NULL, "stock", "show", "--json", NULL), ==, 0);
        CHECK_INT(c.stock_op, ==, STOCK_SHOW);
        CHECK(c.json);
        CHECK_INT(parse(&c, NULL, "stock", "clear", NULL), ==, 0);
        CHECK_INT(c.stock_op, ==, STOCK_CLEAR);
        CHECK_U64(c.n_stock, ==, 0);
        CHECK_INT(parse(&c, NULL, "--json", "stock", "set", "0:2M:4G:2", "1:1G:8G:1", "0:2M:8G:1", NULL), ==, 0);
        CHECK_INT(c.stock_op, ==, STOCK_SET);
        CHECK_U64(c.n_stock, ==, 3);
        CHECK_INT(c.stock[1].node, ==, 1);
        CHECK_U64(c.stock[1].page_size_bytes, ==, 1ull << 30);
        CHECK_U64(c.stock[2].size_bytes, ==, 8ull << 30);
        CHECK_U64(c.stock[0].count, ==, 2);
        CHECK_INT(parse(&c, NULL, "fleet", "--hosts", "f", "place", "--size", "2M", "--verbose", NULL), ==, 0);
        CHECK(c.verbose);
        CHECK_INT(parse(&c, NULL, "fleet", "--hosts", "f", "place", "--size", "2M", NULL), ==, 0);
        CHECK(!c.verbose);
}

TEST(parse_stock_refusals_say_why)
{
        struct cli c;
        static const struct { const char *w[6]; const char *why; } bad[] = {
                { { "stock", "set", NULL }, "stock clear" },          /* set with nothing: say how to clear */
                { { "stock", "set", "0:2M:4G", NULL }, "NODE:PAGESIZE:SIZE:COUNT" },
                { { "stock", "set", "0:2M:4G:2", "0:2M:4G:1", NULL }, "same node, page size and size" },
                { { "stock", "set", "0:2M:4G:2", "0:2048kB:4G:1", NULL }, "same node, page size and size" },
                { { "stock", "clear", "0:2M:4G:2", NULL }, "no arguments" },
                { { "stock", "show", "x", NULL }, "unexpected" },
                { { "stock", "refill", NULL }, "show, set, clear or nova-config" },
                { { "stock", "--size", "1G", NULL }, "stock does not take --size" },
                { { "fleet", "--hosts", "f", "nodes", "--verbose", NULL }, "--verbose" },
                { { "health", "--verbose", NULL }, "health does not take --verbose" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char *argv[8] = { (char *)"hpwarm" };
                int argc = 1;

                for (size_t j = 0; bad[i].w[j]; j++)
                        argv[argc++] = (char *)bad[i].w[j];
                errbuf[0] = '\0';
                CHECK_INT(cli_parse(argc, argv, NULL, NULL, &c, errbuf, sizeof(errbuf)), ==, -EINVAL);
                if (!strstr(errbuf, bad[i].why))
                        fprintf(stderr, "stock case %zu: '%s' lacks '%s'\n", i, errbuf, bad[i].why);
                CHECK(strstr(errbuf, bad[i].why) != NULL);
        }

}

/* 64 targets are the limit (the server's too); 65 are refused here. */
TEST(parse_stock_at_most_64_targets)
{
        struct cli c;
        static char specs[HPW_STOCK_MAX_TARGETS + 1][32];
        char *argv[HPW_STOCK_MAX_TARGETS + 4] = { (char *)"hpwarm", (char *)"stock", (char *)"set" };
        for (int i = 0; i <= HPW_STOCK_MAX_TARGETS; i++) {
                snprintf(specs[i], sizeof(specs[i]), "0:2M:%dM:1", 2 * (i + 1));
                argv[3 + i] = specs[i];
        }
        CHECK_INT(cli_parse(3 + HPW_STOCK_MAX_TARGETS, argv, NULL, NULL, &c, errbuf, sizeof(errbuf)), ==, 0);
        CHECK_U64(c.n_stock, ==, HPW_STOCK_MAX_TARGETS);
        CHECK_INT(cli_parse(4 + HPW_STOCK_MAX_TARGETS, argv, NULL, NULL, &c, errbuf, sizeof(errbuf)), ==, -EINVAL);
        CHECK(strstr(errbuf, "at most 64") != NULL);
}

TEST(hosts_file_skips_comments_and_blanks)
{
        char path[] = "/tmp/hpwarm-hosts-XXXXXX";
        int fd = mkstemp(path);
        char **h = NULL;
        size_t n = 0;
        FILE *f;

        CHECK(fd >= 0);
        test_defer(unlink_path, path, sizeof(path));
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
}

/* Columns as wide as their widest cell; short rows padded. */
TEST(table_pads_columns)
{
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

TEST_MAIN()
