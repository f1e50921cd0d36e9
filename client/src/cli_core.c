/* cli_core: the pure half of the hpwarm command line.
 *
 * Argument parsing is a table of options, each saying which commands may use
 * it (global options: all).  Options are collected wherever they appear on
 * the line, so "hpwarm warm x --size 1G --wait --timeout 60" and "hpwarm
 * --timeout 60 warm x ..." mean the same; positional words fill the command
 * and its arguments in order.  Only after the whole line is read are the
 * per-command requirements checked, so error messages name what is missing. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "internal.h"

const char cli_usage[] =
"Usage: hpwarm [OPTIONS] COMMAND [ARGS] [OPTIONS]\n"
"\n"
"Talk to hpwarmd, the hugepage pool warming service.\n"
"\n"
"Commands:\n"
"  health                          server health and version\n"
"  nodes [NODE]                    NUMA nodes and their hugepages\n"
"  reserve NODE PAGE_SIZE COUNT [--allow-partial]\n"
"                                  set NODE's persistent pool to COUNT pages\n"
"  warm NAME --node N --size SIZE [--page-size 2M] [--threads N] [--ttl S]\n"
"       [--reserve] [--wait]       create pool NAME and prefault it\n"
"  status NAME                     one pool\n"
"  wait NAME                       until NAME is ready (or failed, or --timeout)\n"
"  pools                           all pools\n"
"  claim NAME                      mark NAME as taken by a VM (clears its TTL)\n"
"  release NAME                    cancel/delete NAME, returning its hugepages\n"
"  handoff NAME [NAME...] --vmm qemu|cloud-hypervisor|libvirt [--argv]\n"
"                                  print the VMM arguments that make the pools\n"
"                                  the guest's RAM (several: guest NUMA node i\n"
"                                  = i-th NAME); --argv: one word per line.\n"
"                                  QEMU also needs -m equal to the pools' total\n"
"  fleet --hosts FILE nodes|pools  ask every host in FILE (one URL per line)\n"
"  fleet --hosts FILE place --size SIZE [--page-size P] [--warm NAME]\n"
"                                  pick the host and node with most free pages\n"
"                                  that fit (ties: file order, then node id)\n"
"\n"
"Options (accepted before or after the command):\n"
"  --url URL           http://HOST:PORT, https://HOST:PORT or unix:///PATH\n"
"                      (env HPWARM_URL; default " CLI_DEFAULT_URL ");\n"
"                      always direct: http_proxy etc. are ignored\n"
"  --token-file F      bearer token file (env HPWARM_TOKEN_FILE)\n"
"  --cacert F          CA bundle to verify the server\n"
"  --cert F --key F    client certificate and key (mutual TLS)\n"
"  --timeout S         deadline in seconds, retries included (default 30;\n"
"                      600 for wait and --wait; 0 = none).  For fleet: per host\n"
"                      (default 1.5; 0 = 1.5); with place --warm it also bounds\n"
"                      the warm on the chosen host as for warm (PUT 30, --wait 600)\n"
"  --connect-timeout S per connection attempt (default 5)\n"
"  --json              print the server's JSON instead of tables\n"
"  -h, --help          this text;  --version  client version\n"
"\n"
"Sizes: 1G, 512M, 64GiB, 2048kB, plain bytes (binary units).\n"
"\n"
"Exit codes:\n"
"  0  success\n"
"  1  operation failed (pool failed or cancelled, reserve incomplete, other errors)\n"
"  2  usage error\n"
"  3  server unreachable\n"
"  4  timed out\n"
"  5  conflict or insufficient hugepages (HTTP 409)\n"
"  6  unauthorized or forbidden (HTTP 401/403)\n";

enum opt_id {
        O_URL, O_TOKEN_FILE, O_CACERT, O_CERT, O_KEY, O_TIMEOUT, O_CONNECT_TIMEOUT, O_JSON,
        O_HELP, O_VERSION, O_NODE, O_SIZE, O_PAGE_SIZE, O_THREADS, O_TTL, O_RESERVE, O_WAIT,
        O_ALLOW_PARTIAL, O_VMM, O_HOSTS, O_WARM, O_ARGV,
};

#define C(x) (1u << (x))
#define ALL 0xffffffffu

static const struct opt {
        const char *name;
        bool has_arg;
        enum opt_id id;
        unsigned cmds;   /* commands that accept it */
} opts[] = {
        { "url", true, O_URL, ALL },
        { "token-file", true, O_TOKEN_FILE, ALL },
        { "cacert", true, O_CACERT, ALL },
        { "cert", true, O_CERT, ALL },
        { "key", true, O_KEY, ALL },
        { "timeout", true, O_TIMEOUT, ALL },
        { "connect-timeout", true, O_CONNECT_TIMEOUT, ALL },
        { "json", false, O_JSON, ALL },
        { "help", false, O_HELP, ALL },
        { "version", false, O_VERSION, ALL },
        { "node", true, O_NODE, C(CMD_WARM) },
        { "size", true, O_SIZE, C(CMD_WARM) | C(CMD_FLEET) },
        { "page-size", true, O_PAGE_SIZE, C(CMD_WARM) | C(CMD_FLEET) },
        { "threads", true, O_THREADS, C(CMD_WARM) },
        { "ttl", true, O_TTL, C(CMD_WARM) },
        { "reserve", false, O_RESERVE, C(CMD_WARM) },
        { "wait", false, O_WAIT, C(CMD_WARM) | C(CMD_FLEET) },
        { "allow-partial", false, O_ALLOW_PARTIAL, C(CMD_RESERVE) },
        { "vmm", true, O_VMM, C(CMD_HANDOFF) },
        { "hosts", true, O_HOSTS, C(CMD_FLEET) },
        { "warm", true, O_WARM, C(CMD_FLEET) },
        { "argv", false, O_ARGV, C(CMD_HANDOFF) },
};

static const struct {
        const char *name;
        enum cli_cmd cmd;
        int min_args, max_args;
} cmds[] = {
        { "health", CMD_HEALTH, 0, 0 },
        { "nodes", CMD_NODES, 0, 1 },
        { "reserve", CMD_RESERVE, 3, 3 },
        { "warm", CMD_WARM, 1, 1 },
        { "status", CMD_STATUS, 1, 1 },
        { "wait", CMD_WAIT, 1, 1 },
        { "pools", CMD_POOLS, 0, 0 },
        { "claim", CMD_CLAIM, 1, 1 },
        { "release", CMD_RELEASE, 1, 1 },
        { "handoff", CMD_HANDOFF, 1, HPW_HANDOFF_MAX_POOLS },
        { "fleet", CMD_FLEET, 1, 1 },
};

static int usage_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int usage_err(char *err, size_t errlen, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

int cli_parse_size(const char *s, uint64_t *ret)
{
        static const struct { const char *suffix; unsigned shift; } units[] = {
                { "", 0 }, { "b", 0 },
                { "k", 10 }, { "kb", 10 }, { "kib", 10 },
                { "m", 20 }, { "mb", 20 }, { "mib", 20 },
                { "g", 30 }, { "gb", 30 }, { "gib", 30 },
                { "t", 40 }, { "tb", 40 }, { "tib", 40 },
        };
        uint64_t v = 0;
        const char *p = s;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t)(*p - '0');
        }
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (strcasecmp(p, units[i].suffix) != 0)
                        continue;
                if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
                        return -ERANGE;
                *ret = v << units[i].shift;
                return 0;
        }
        return -EINVAL;
}

int cli_parse_page_size(const char *s, uint64_t *ret)
{
        uint64_t v;
        int r = cli_parse_size(s, &v);

        if (r < 0)
                return r;
        if (v < 4096 || (v & (v - 1)) != 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

int cli_parse_seconds(const char *s, uint64_t *ret_ms)
{
        uint64_t whole = 0, frac = 0;
        int digits = 0;
        const char *p = s;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                whole = whole * 10 + (uint64_t)(*p - '0');
                if (whole > 100000000ull)   /* over three years: a typo */
                        return -ERANGE;
        }
        if (*p == '.') {
                for (p++; *p >= '0' && *p <= '9'; p++) {
                        if (++digits > 3)
                                return -EINVAL;
                        frac = frac * 10 + (uint64_t)(*p - '0');
                }
                if (digits == 0)
                        return -EINVAL;
                while (digits++ < 3)
                        frac *= 10;
        }
        if (*p)
                return -EINVAL;
        *ret_ms = whole * 1000 + frac;
        return 0;
}

static int parse_uint(const char *s, uint64_t max, uint64_t *ret)
{
        uint64_t v = 0;

        if (!s || !*s)
                return -EINVAL;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (uint64_t)(*p - '0');
                if (v > max)
                        return -ERANGE;
        }
        *ret = v;
        return 0;
}

static const struct opt *find_opt(const char *name, size_t len)
{
        for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
                if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
                        return &opts[i];
        return NULL;
}

static int apply_opt(struct cli *c, const struct opt *o, const char *v, char *err, size_t errlen)
{
        uint64_t n;

        switch (o->id) {
        case O_URL: c->url = v; break;
        case O_TOKEN_FILE: c->token_file = v; break;
        case O_CACERT: c->cacert = v; break;
        case O_CERT: c->cert = v; break;
        case O_KEY: c->key = v; break;
        case O_TIMEOUT:
                if (cli_parse_seconds(v, &c->timeout_ms) < 0)
                        return usage_err(err, errlen, "--timeout: not a number of seconds: '%s'", v);
                c->timeout_set = true;
                break;
        case O_CONNECT_TIMEOUT:
                if (cli_parse_seconds(v, &c->connect_timeout_ms) < 0)
                        return usage_err(err, errlen, "--connect-timeout: not a number of seconds: '%s'", v);
                break;
        case O_JSON: c->json = true; break;
        case O_HELP: c->help = true; break;
        case O_VERSION: c->version = true; break;
        case O_NODE:
                if (parse_uint(v, 65535, &n) < 0)
                        return usage_err(err, errlen, "--node: not a node id: '%s'", v);
                c->node = (int)n;
                break;
        case O_SIZE:
                if (cli_parse_size(v, &c->size) < 0 || c->size == 0)
                        return usage_err(err, errlen, "--size: not a size: '%s'", v);
                break;
        case O_PAGE_SIZE:
                if (cli_parse_page_size(v, &c->page_size) < 0)
                        return usage_err(err, errlen, "--page-size: not a page size: '%s'", v);
                break;
        case O_THREADS:
                if (parse_uint(v, 4096, &n) < 0 || n == 0)
                        return usage_err(err, errlen, "--threads: not a thread count: '%s'", v);
                c->threads = (unsigned)n;
                break;
        case O_TTL:
                if (parse_uint(v, UINT32_MAX, &c->ttl_seconds) < 0)
                        return usage_err(err, errlen, "--ttl: not a number of seconds: '%s'", v);
                break;
        case O_RESERVE: c->reserve = true; break;
        case O_WAIT: c->wait = true; break;
        case O_ALLOW_PARTIAL: c->allow_partial = true; break;
        case O_VMM:
                if (strcmp(v, "qemu") == 0)
                        c->vmm = VMM_QEMU;
                else if (strcmp(v, "cloud-hypervisor") == 0 || strcmp(v, "ch") == 0)
                        c->vmm = VMM_CLOUD_HYPERVISOR;
                else if (strcmp(v, "libvirt") == 0)
                        c->vmm = VMM_LIBVIRT;
                else
                        return usage_err(err, errlen, "--vmm: expected qemu, cloud-hypervisor or libvirt, not '%s'",
                                         v);
                break;
        case O_HOSTS: c->hosts = v; break;
        case O_WARM: c->warm_name = v; break;
        case O_ARGV: c->argv_words = true; break;
        }
        return 0;
}

int cli_parse(int argc, char *const *argv, const char *env_url, const char *env_token_file,
              struct cli *ret, char *err, size_t errlen)
{
        struct cli c = {
                .node = -1,
                .connect_timeout_ms = CLI_DEFAULT_CONNECT_MS,
                .url = env_url && env_url[0] ? env_url : CLI_DEFAULT_URL,
                .token_file = env_token_file && env_token_file[0] ? env_token_file : NULL,
        };
        const char *pos[2 + HPW_HANDOFF_MAX_POOLS];
        size_t npos = 0;
        const struct opt *seen[64];
        size_t nseen = 0;
        bool only_pos = false;
        int r, min_args = 0, max_args = 0;

        err[0] = '\0';
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *v = NULL, *eq;
                const struct opt *o;

                if (only_pos || a[0] != '-' || a[1] == '\0') {
                        if (npos == sizeof(pos) / sizeof(pos[0]))
                                return usage_err(err, errlen, "too many arguments");
                        pos[npos++] = a;
                        continue;
                }
                if (strcmp(a, "--") == 0) {
                        only_pos = true;
                        continue;
                }
                if (strcmp(a, "-h") == 0) {
                        c.help = true;
                        continue;
                }
                if (a[1] != '-')
                        return usage_err(err, errlen, "unknown option '%s'", a);
                eq = strchr(a + 2, '=');
                o = find_opt(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
                if (!o)
                        return usage_err(err, errlen, "unknown option '%s'", a);
                if (o->has_arg) {
                        if (eq)
                                v = eq + 1;
                        else if (i + 1 < argc)
                                v = argv[++i];
                        else
                                return usage_err(err, errlen, "option '--%s' needs a value", o->name);
                } else if (eq) {
                        return usage_err(err, errlen, "option '--%s' takes no value", o->name);
                }
                r = apply_opt(&c, o, v, err, errlen);
                if (r < 0)
                        return r;
                if (nseen < sizeof(seen) / sizeof(seen[0]))
                        seen[nseen++] = o;
        }
        if (c.help || c.version) {
                *ret = c;
                return 0;
        }
        if (npos == 0)
                return usage_err(err, errlen, "no command given (try --help)");
        for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
                if (strcmp(pos[0], cmds[i].name) == 0) {
                        c.cmd = cmds[i].cmd;
                        min_args = cmds[i].min_args;
                        max_args = cmds[i].max_args;
                }
        if (c.cmd == CMD_NONE)
                return usage_err(err, errlen, "unknown command '%s' (try --help)", pos[0]);
        if ((int)npos - 1 < min_args)
                return usage_err(err, errlen, "%s: missing arguments (try --help)", pos[0]);
        if ((int)npos - 1 > max_args)
                return usage_err(err, errlen, "%s: unexpected argument '%s'", pos[0], pos[1 + max_args]);
        for (size_t i = 0; i < nseen; i++)
                if (!(seen[i]->cmds & C(c.cmd)))
                        return usage_err(err, errlen, "%s does not take --%s", pos[0], seen[i]->name);

        switch (c.cmd) {
        case CMD_NODES:
                if (npos == 2) {
                        uint64_t n;
                        if (parse_uint(pos[1], 65535, &n) < 0)
                                return usage_err(err, errlen, "nodes: not a node id: '%s'", pos[1]);
                        c.node = (int)n;
                }
                break;
        case CMD_RESERVE: {
                uint64_t n;
                if (parse_uint(pos[1], 65535, &n) < 0)
                        return usage_err(err, errlen, "reserve: not a node id: '%s'", pos[1]);
                c.node = (int)n;
                if (cli_parse_page_size(pos[2], &c.page_size) < 0)
                        return usage_err(err, errlen, "reserve: not a page size: '%s'", pos[2]);
                if (parse_uint(pos[3], UINT32_MAX, &c.count) < 0)
                        return usage_err(err, errlen, "reserve: not a page count: '%s'", pos[3]);
                break;
        }
        case CMD_WARM:
        case CMD_STATUS:
        case CMD_WAIT:
        case CMD_CLAIM:
        case CMD_RELEASE:
        case CMD_HANDOFF:
                c.name = pos[1];
                if (!hpw_name_valid(c.name))
                        return usage_err(err, errlen,
                                         "%s: invalid pool name '%s' ([A-Za-z0-9][A-Za-z0-9._-]{0,63})",
                                         pos[0], c.name);
                if (c.cmd == CMD_WARM && c.node < 0)
                        return usage_err(err, errlen, "warm: --node is required");
                if (c.cmd == CMD_WARM && c.size == 0)
                        return usage_err(err, errlen, "warm: --size is required");
                if (c.cmd == CMD_WARM && c.page_size && c.size % c.page_size)
                        return usage_err(err, errlen, "warm: --size must be a multiple of --page-size");
                if (c.cmd == CMD_HANDOFF && c.vmm == VMM_NONE)
                        return usage_err(err, errlen, "handoff: --vmm qemu|cloud-hypervisor|libvirt is required");
                if (c.cmd == CMD_HANDOFF) {
                        for (size_t i = 1; i < npos; i++) {
                                if (!hpw_name_valid(pos[i]))
                                        return usage_err(err, errlen, "handoff: invalid pool name '%s'", pos[i]);
                                for (size_t j = 1; j < i; j++)
                                        if (strcmp(pos[j], pos[i]) == 0)
                                                return usage_err(err, errlen,
                                                                 "handoff: '%s' named twice (one pool per guest node)",
                                                                 pos[i]);
                                c.names[c.n_names++] = pos[i];
                        }
                }
                break;
        case CMD_FLEET:
                if (!c.hosts)
                        return usage_err(err, errlen, "fleet: --hosts FILE is required");
                if (strcmp(pos[1], "nodes") == 0)
                        c.fleet = FLEET_NODES;
                else if (strcmp(pos[1], "pools") == 0)
                        c.fleet = FLEET_POOLS;
                else if (strcmp(pos[1], "place") == 0)
                        c.fleet = FLEET_PLACE;
                else
                        return usage_err(err, errlen, "fleet: expected nodes, pools or place, not '%s'", pos[1]);
                if (c.fleet != FLEET_PLACE && (c.size || c.page_size || c.warm_name || c.wait))
                        return usage_err(err, errlen, "fleet %s takes no --size, --page-size, --warm or --wait",
                                         pos[1]);
                if (c.fleet == FLEET_PLACE) {
                        if (c.size == 0)
                                return usage_err(err, errlen, "fleet place: --size is required");
                        if (!c.page_size)
                                c.page_size = CLI_DEFAULT_PAGE_SIZE;
                        if (c.size % c.page_size)
                                return usage_err(err, errlen, "fleet place: --size must be a multiple of --page-size");
                        if (c.warm_name && !hpw_name_valid(c.warm_name))
                                return usage_err(err, errlen, "fleet place: invalid pool name '%s'", c.warm_name);
                        if (c.wait && !c.warm_name)
                                return usage_err(err, errlen, "fleet place: --wait needs --warm NAME");
                }
                break;
        default:
                break;
        }
        if ((c.cert && !c.key) || (!c.cert && c.key))
                return usage_err(err, errlen, "--cert and --key go together");
        *ret = c;
        return 0;
}

int cli_exit_code(enum hpw_error err)
{
        switch (err) {
        case HPW_OK:
                return CLI_EXIT_OK;
        case HPW_E_INVALID:
                return CLI_EXIT_USAGE;
        case HPW_E_UNREACHABLE:
        case HPW_E_TLS:
                return CLI_EXIT_UNREACHABLE;
        case HPW_E_TIMEOUT:
                return CLI_EXIT_TIMEOUT;
        case HPW_E_CONFLICT:
        case HPW_E_INSUFFICIENT:
                return CLI_EXIT_CONFLICT;
        case HPW_E_UNAUTHORIZED:
        case HPW_E_FORBIDDEN:
                return CLI_EXIT_AUTH;
        default:
                return CLI_EXIT_FAILED;
        }
}

uint64_t cli_timeout_ms(const struct cli *c, bool fleet_query)
{
        if (fleet_query)
                return c->timeout_set && c->timeout_ms ? c->timeout_ms : CLI_DEFAULT_FLEET_TIMEOUT_MS;
        return c->timeout_set ? c->timeout_ms : CLI_DEFAULT_TIMEOUT_MS;
}

int cli_fleet_exit(const struct hpw_fleet *f)
{
        int code = -1;

        for (size_t i = 0; i < f->n; i++) {
                int c;

                if (f->hosts[i].err == HPW_OK)
                        return CLI_EXIT_OK;
                c = cli_exit_code(f->hosts[i].err);
                if (code >= 0 && c != code)
                        code = CLI_EXIT_UNREACHABLE;
                else if (code < 0)
                        code = c;
        }
        return code < 0 ? CLI_EXIT_UNREACHABLE : code;
}

void cli_format_bytes(uint64_t bytes, char *buf, size_t len)
{
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
        double v = (double)bytes;
        size_t u = 0;

        while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
                v /= 1024;
                u++;
        }
        if (u == 0)
                snprintf(buf, len, "%llu B", (unsigned long long)bytes);
        else if (v == (double)(uint64_t)v)
                snprintf(buf, len, "%llu %s", (unsigned long long)v, units[u]);
        else
                snprintf(buf, len, "%.1f %s", v, units[u]);
}

int cli_place(const struct place_cand *c, size_t n, uint64_t size, uint64_t page_size, size_t *ret_index)
{
        uint64_t need;
        size_t best = SIZE_MAX;

        if (page_size == 0)
                return -EINVAL;
        need = size / page_size + (size % page_size ? 1 : 0);
        for (size_t i = 0; i < n; i++) {
                if (c[i].page_size != page_size || c[i].free < need)
                        continue;
                if (best == SIZE_MAX || c[i].free > c[best].free ||
                    (c[i].free == c[best].free &&
                     (c[i].host < c[best].host || (c[i].host == c[best].host && c[i].node < c[best].node))))
                        best = i;
        }
        if (best == SIZE_MAX)
                return -ENOENT;
        *ret_index = best;
        return 0;
}

void cli_hosts_free(char **hosts, size_t n)
{
        for (size_t i = 0; hosts && i < n; i++)
                free(hosts[i]);
        free(hosts);
}

int cli_read_hosts(const char *path, char ***ret, size_t *ret_n)
{
        FILE *f = fopen(path, "re");
        char *line = NULL, **v = NULL;
        size_t cap = 0, n = 0, alloc = 0;
        ssize_t len;
        int r = 0;

        if (!f)
                return -errno;
        while ((len = getline(&line, &cap, f)) >= 0) {
                char *s = line, *e;

                while (*s == ' ' || *s == '\t')
                        s++;
                e = s + strlen(s);
                while (e > s && strchr(" \t\r\n", e[-1]))
                        *--e = '\0';
                if (!*s || *s == '#')
                        continue;
                if (n == alloc) {
                        size_t na = alloc ? alloc * 2 : 16;
                        char **nv = realloc(v, na * sizeof(*nv));
                        if (!nv) {
                                r = -ENOMEM;
                                break;
                        }
                        v = nv;
                        alloc = na;
                }
                if (!(v[n] = strdup(s))) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        if (r == 0 && ferror(f))
                r = -EIO;
        free(line);
        fclose(f);
        if (r < 0) {
                cli_hosts_free(v, n);
                return r;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

/* ---- tables ---- */

struct table {
        size_t ncols, nrows, cap;
        char **cells;   /* nrows * ncols, row 0 the header */
};

static void table_add_tsv(struct table *t, const char *tsv)
{
        char **cells;
        const char *p = tsv;

        if (!t)
                return;
        if (t->nrows == t->cap) {
                size_t nc = t->cap ? t->cap * 2 : 16;
                cells = realloc(t->cells, nc * t->ncols * sizeof(*cells));
                if (!cells)
                        return;
                t->cells = cells;
                t->cap = nc;
        }
        cells = &t->cells[t->nrows * t->ncols];
        for (size_t i = 0; i < t->ncols; i++) {
                const char *tab = p ? strchr(p, '\t') : NULL;
                size_t len = p ? (tab ? (size_t)(tab - p) : strlen(p)) : 0;
                cells[i] = strndup(p ? p : "", len);
                p = tab ? tab + 1 : NULL;
        }
        t->nrows++;
}

struct table *table_new(const char *header_tsv)
{
        struct table *t = calloc(1, sizeof(*t));

        if (!t)
                return NULL;
        t->ncols = 1;
        for (const char *p = header_tsv; *p; p++)
                t->ncols += *p == '\t';
        table_add_tsv(t, header_tsv);
        return t;
}

void table_addf(struct table *t, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (s)
                table_add_tsv(t, s);
        free(s);
}

void table_print(const struct table *t, FILE *f)
{
        size_t *w;

        if (!t || !(w = calloc(t->ncols, sizeof(*w))))
                return;
        for (size_t r = 0; r < t->nrows; r++)
                for (size_t c = 0; c < t->ncols; c++) {
                        const char *s = t->cells[r * t->ncols + c];
                        size_t l = s ? strlen(s) : 0;
                        if (l > w[c])
                                w[c] = l;
                }
        for (size_t r = 0; r < t->nrows; r++) {
                for (size_t c = 0; c < t->ncols; c++) {
                        const char *s = t->cells[r * t->ncols + c];
                        if (c + 1 == t->ncols)
                                fprintf(f, "%s\n", s ? s : "");
                        else
                                fprintf(f, "%-*s  ", (int)w[c], s ? s : "");
                }
        }
        free(w);
}

void table_free(struct table *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < t->nrows * t->ncols; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
}
