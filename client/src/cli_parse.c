/* cli_parse: the hpwarm command line's words -> struct cli, and its help.
 *
 * Argument parsing is getopt_long over one table of options, each saying
 * which commands take it; global options are accepted before the command and
 * after it, a command's own options only after it.  So "hpwarm warm x --size
 * 1G --wait --timeout 60" and "hpwarm --timeout 60 warm x ..." mean the same,
 * while "hpwarm --node 0 warm x" is refused with a hint.  The same tables
 * produce the per-command help, so an option cannot be accepted without
 * being documented.  Only after the whole line is read are the per-command
 * requirements checked, so error messages name what is missing.  Pure: no
 * I/O but the FILE the help is written to. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"
#include "size.h"

enum opt_id {
        O_HELP = 'h',
        O_URL = 256, O_TOKEN_FILE, O_CACERT, O_CERT, O_KEY, O_TIMEOUT, O_CONNECT_TIMEOUT, O_JSON,
        O_VERSION, O_NODE, O_SIZE, O_PAGE_SIZE, O_THREADS, O_TTL, O_RESERVE, O_LABEL, O_FILE_OWNER, O_WAIT,
        O_ALLOW_PARTIAL, O_VMM, O_HOSTS, O_WARM, O_PID, O_IGNORE_MISSING, O_ARGV, O_VERBOSE,
        O_PROMETHEUS, O_HOST_LABEL, O_URL_TEMPLATE, O_MAX_AGE,
        O_ELASTIC, O_MIN, O_MAX, O_HEADROOM, O_IDLE, O_ALLOW_BEST_EFFORT, O_AS, O_SOURCE_URL,
};

#define C(x) (1u << (x))
#define GLOBAL 0xffffffffu

static const struct optdef {
        const char *name;
        int has_arg;       /* no_argument / required_argument */
        int id;
        unsigned cmds;     /* commands that accept it; GLOBAL = all, also before the command */
        const char *arg;   /* value name in help */
        const char *help;
} optdefs[] = {
        { "url", required_argument, O_URL, GLOBAL, "URL",
          "http://HOST:PORT, https://HOST:PORT or unix:///PATH; a bare\n"
          "HOST:PORT means http://, a bare /PATH a unix socket (env\n"
          "HPWARM_URL; default " CLI_DEFAULT_URL ").\n"
          "Always direct: http_proxy etc. are ignored" },
        { "token-file", required_argument, O_TOKEN_FILE, GLOBAL, "F", "bearer token file (env HPWARM_TOKEN_FILE)" },
        { "cacert", required_argument, O_CACERT, GLOBAL, "F", "CA bundle to verify the server" },
        { "cert", required_argument, O_CERT, GLOBAL, "F", "client certificate (mutual TLS; with --key)" },
        { "key", required_argument, O_KEY, GLOBAL, "F", "client key (mutual TLS; with --cert)" },
        { "timeout", required_argument, O_TIMEOUT, GLOBAL, "S",
          "deadline in seconds, retries included (default 30;\n"
          "600 for wait and --wait; 0 = none).  fleet: per host\n"
          "(default 1.5; 0 = 1.5)" },
        { "connect-timeout", required_argument, O_CONNECT_TIMEOUT, GLOBAL, "S",
          "per connection attempt (default 5)" },
        { "json", no_argument, O_JSON, GLOBAL, NULL, "print the server's JSON instead of tables" },
        { "help", no_argument, O_HELP, GLOBAL, NULL, "help (hpwarm COMMAND --help: one command)" },
        { "version", no_argument, O_VERSION, GLOBAL, NULL, "client version" },
        { "node", required_argument, O_NODE, C(CMD_WARM), "N", "NUMA node to warm on (required)" },
        { "size", required_argument, O_SIZE, C(CMD_WARM) | C(CMD_FLEET), "SIZE",
          "pool size, a multiple of the page size (required)" },
        { "page-size", required_argument, O_PAGE_SIZE, C(CMD_WARM) | C(CMD_FLEET), "P",
          "hugepage size, e.g. 2M or 1G (default 2M)" },
        { "threads", required_argument, O_THREADS, C(CMD_WARM), "N", "prefault threads (default: the server's)" },
        { "ttl", required_argument, O_TTL, C(CMD_WARM), "S",
          "release the pool if nobody claims it within S seconds" },
        { "reserve", no_argument, O_RESERVE, C(CMD_WARM), NULL,
          "grow the node's hugepage pool first if it has too\n"
          "few free pages (needs free memory above the floor)" },
        { "label", required_argument, O_LABEL, C(CMD_WARM), "L",
          "whom the pool is for (e.g. libvirt:UUID); a warm\n"
          "of the pool with another label is refused" },
        { "file-owner", required_argument, O_FILE_OWNER, C(CMD_WARM), "UID:GID",
          "hand the pool's file to this user and group alone\n"
          "(mode 0600): the one VMM that runs as them" },
        { "wait", no_argument, O_WAIT, C(CMD_WARM) | C(CMD_FLEET), NULL,
          "wait until the pool is ready (progress on a terminal)" },
        { "allow-partial", no_argument, O_ALLOW_PARTIAL, C(CMD_RESERVE), NULL,
          "keep what the kernel gave when it gives fewer\n"
          "pages (exit 1)" },
        { "elastic", no_argument, O_ELASTIC, C(CMD_RESERVE), NULL,
          "make the pool elastic instead of setting COUNT: grown\n"
          "on demand up to --max, free pages beyond --headroom\n"
          "given back after --idle seconds, never below --min" },
        { "min", required_argument, O_MIN, C(CMD_RESERVE), "N", "--elastic: pages never given back (default 0)" },
        { "max", required_argument, O_MAX, C(CMD_RESERVE), "M", "--elastic: most pages the pool grows to (required)" },
        { "headroom", required_argument, O_HEADROOM, C(CMD_RESERVE), "H",
          "--elastic: free pages kept beyond those in use (default 0)" },
        { "idle", required_argument, O_IDLE, C(CMD_RESERVE), "S",
          "--elastic: seconds surplus pages stay free before\n"
          "they go (required)" },
        { "allow-best-effort", no_argument, O_ALLOW_BEST_EFFORT, C(CMD_RESERVE), NULL,
          "--elastic: accept 1G pages without a hugetlb_cma area\n"
          "(a page given back may not come back)" },
        { "vmm", required_argument, O_VMM, C(CMD_HANDOFF), "VMM", "qemu, cloud-hypervisor or libvirt (required)" },
        { "argv", no_argument, O_ARGV, C(CMD_HANDOFF), NULL,
          "one word per line (qemu, cloud-hypervisor), for callers\n"
          "that exec the VMM themselves" },
        { "as", required_argument, O_AS, C(CMD_HANDOFF), "SRC",
          "migration destination: map the i-th NAME under source\n"
          "pool SRC's id (mem-SRC); repeat, or SRC,SRC, once per\n"
          "NAME; refused when sizes or page sizes differ" },
        { "source-url", required_argument, O_SOURCE_URL, C(CMD_HANDOFF), "URL",
          "--as: the source host's daemon; its SRC pools are\n"
          "compared with NAME (same --token-file and TLS options)" },
        { "hosts", required_argument, O_HOSTS, C(CMD_FLEET), "FILE",
          "one URL per line; blank lines and # comments\n"
          "skipped (required, or place --prometheus)" },
        { "prometheus", required_argument, O_PROMETHEUS, C(CMD_FLEET), "URL",
          "place: find the hosts through this Prometheus\n"
          "(http(s)://HOST:PORT[/PREFIX]) instead of --hosts" },
        { "host-label", required_argument, O_HOST_LABEL, C(CMD_FLEET), "LABEL",
          "place --prometheus: the label naming a host's\n"
          "hpwarmd (default instance)" },
        { "url-template", required_argument, O_URL_TEMPLATE, C(CMD_FLEET), "T",
          "place --prometheus: the host's URL, {LABEL} replaced\n"
          "by the label's value (default http://{instance})" },
        { "max-age", required_argument, O_MAX_AGE, C(CMD_FLEET), "S",
          "place --prometheus: skip hosts whose newest sample\n"
          "is older than S seconds (default 60)" },
        { "warm", required_argument, O_WARM, C(CMD_FLEET), "NAME", "place: also warm pool NAME where it fits" },
        { "verbose", no_argument, O_VERBOSE, C(CMD_FLEET), NULL,
          "place: say on stderr which hosts' stock could not be\n"
          "read (older daemons: free pages only there)" },
        { "pid", required_argument, O_PID, C(CMD_CLAIM), "PID",
          "the VMM process that maps the pool: the daemon\n"
          "releases the pool when that process exits" },
        { "ignore-missing", no_argument, O_IGNORE_MISSING, C(CMD_RELEASE), NULL,
          "exit 0 when there is no such pool (already released)" },
};

static const struct cmddef {
        const char *name;
        enum cli_cmd cmd;
        int min_args, max_args;
        const char *args;      /* positional arguments, for the synopsis */
        const char *summary;   /* one line for the command list */
        const char *more;      /* extra paragraph of the command's own help, or NULL */
} cmddefs[] = {
        { "health", CMD_HEALTH, 0, 0, "", "server health and version", NULL },
        { "nodes", CMD_NODES, 0, 1, "[NODE]", "NUMA nodes and their hugepages", NULL },
        { "reserve", CMD_RESERVE, 2, 3, "NODE PAGE_SIZE COUNT | NODE PAGE_SIZE --elastic --max M --idle S",
          "set NODE's persistent pool to COUNT pages, or make it elastic",
          "Refused with exit 5 when the kernel gives fewer pages (unless\n"
          "--allow-partial) or when the pool would eat into the node's memory floor\n"
          "(the message says the floor and the largest COUNT that fits).\n"
          "With --elastic (no COUNT) the pool follows demand within --min and --max;\n"
          "hpwarm nodes shows the bounds.  See docs/ELASTIC.md.\n" },
        { "warm", CMD_WARM, 1, 1, "NAME --node N --size SIZE", "create pool NAME and prefault it",
          "Exit 5 when the node has too few free hugepages: add --reserve to grow\n"
          "its pool, or run hpwarm reserve first.\n" },
        { "status", CMD_STATUS, 1, 1, "NAME", "one pool", NULL },
        { "wait", CMD_WAIT, 1, 1, "NAME", "until NAME is ready (or failed, or --timeout)",
          "Exit 0 ready, 1 failed or cancelled, 4 still warming at the deadline.\n" },
        { "pools", CMD_POOLS, 0, 0, "", "all pools", NULL },
        { "claim", CMD_CLAIM, 1, 1, "NAME", "mark NAME as taken by a VM (clears its TTL)", NULL },
        { "release", CMD_RELEASE, 1, 1, "NAME", "cancel/delete NAME, returning its hugepages",
          "Without --ignore-missing a pool that does not exist is exit 1.\n" },
        { "handoff", CMD_HANDOFF, 1, HPW_HANDOFF_MAX_POOLS, "NAME [NAME...] --vmm VMM",
          "print the VMM arguments: the pools as guest RAM",
          "Several pools: guest NUMA node i is the i-th NAME.  QEMU also needs -m\n"
          "equal to the pools' total.  Pools must exist (else exit 1) and be ready\n"
          "(else exit 5).\n" },
        { "fleet", CMD_FLEET, 1, 1, "--hosts FILE nodes|pools|place",
          "ask every host in FILE at once",
          "nodes, pools: one table of every host's answer.  place --size SIZE: a\n"
          "host and node with a ready stock file of exactly SIZE and --page-size\n"
          "(default 2M) first (\"stock hit\": the pool is ready at once; most ready\n"
          "files, then most available pages); else the one with most available\n"
          "pages that fit (\"available pages\": free minus what warming pools and\n"
          "unfaulted mappings still take; free on daemons that do not say); ties:\n"
          "file order, then node id.  The line printed says which and why.  Hosts\n"
          "whose stock cannot be read (a daemon without stock) count by available\n"
          "pages (--verbose names them).  With --warm NAME also warm it there\n"
          "(--json: one object, the pool as its \"pool\" member).\n"
          "Hosts that did not answer are listed on stderr.\n"
          "place --prometheus URL instead of --hosts: one PromQL query for the\n"
          "hosts whose last scrape worked (up == 1) within --max-age that show a\n"
          "ready stock file of SIZE or enough available (else free) pages, ranked\n"
          "the same way; the best three are then asked directly (then the next\n"
          "three, ...) and the host's own answer decides; with --warm, a host\n"
          "answering 409 passes to the next.  Exit 5 when nothing fits.\n"
          "Exit codes: 0 every host answered; 7 some hosts did not answer (the\n"
          "output covers those that did); when none answered, the code their\n"
          "errors share (3 unreachable, 4 timed out, 6 unauthorized).  place:\n"
          "5 when nothing fits; with --warm, the warm's own exit code.\n" },
        { "stock", CMD_STOCK, 0, 2 + HPW_STOCK_MAX_TARGETS, "[show | set SPEC... | clear]",
          "show or replace the daemon's stock targets",
          "hpwarm stock (or stock show): each target with how many files are ready,\n"
          "warming and recycling, and the deficit.  stock set SPEC...: replace ALL\n"
          "targets by these (a target left out is dropped and its files deleted).\n"
          "SPEC is NODE:PAGESIZE:SIZE:COUNT as for hpwarmd --stock, e.g. 0:2M:4G:2\n"
          "(keep 2 ready 4G files of 2M pages on node 0); at most 64.  stock clear:\n"
          "remove every target (set with no SPEC is a usage error, so nothing is\n"
          "wiped by a script that lost its arguments).  A warm of exactly a target's\n"
          "node, page size and size is then ready at once (from stock: full).\n"
          "A bad SPEC exits 2 with nothing sent; the daemon's refusals: 1 (unknown\n"
          "node or page size, invalid), 5 (the targets do not fit the node).\n" },
        { "placement", CMD_PLACEMENT, 1, 1, "sync --placement URL --compute-node NAME", "warm pages as OpenStack Placement inventory", NULL },
        { "help", CMD_NONE, 0, 1, "[COMMAND]", "this text, or one command's", NULL },
};

static const char exit_codes_text[] =
"Exit codes:\n"
"  0  success\n"
"  1  operation failed (pool failed or cancelled, reserve incomplete, not found)\n"
"  2  usage error\n"
"  3  server unreachable\n"
"  4  timed out\n"
"  5  conflict or insufficient hugepages or memory (HTTP 409)\n"
"  6  unauthorized or forbidden (HTTP 401/403)\n"
"  7  fleet: some hosts did not answer\n"
"  8  try again later: rate limited or unavailable (HTTP 429/503) after the\n"
"     retries; a permanent refusal (e.g. no-hugetlbfs) is 1\n";

static void print_opt(FILE *f, const struct optdef *o)
{
        char head[64];
        const char *h = o->help;

        snprintf(head, sizeof(head), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        if (o->id == O_HELP)
                snprintf(head, sizeof(head), "-h, --help");
        fprintf(f, "  %-20s", head);
        if (strlen(head) > 20)
                fprintf(f, "\n  %-20s", "");
        /* Continuation lines of the help text line up under its first. */
        for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
                fprintf(f, "%.*s\n  %-20s", (int)(nl - h), h, "");
        fprintf(f, "%s\n", h);
}

static const struct cmddef *find_cmd(const char *name)
{
        for (size_t i = 0; i < sizeof(cmddefs) / sizeof(cmddefs[0]); i++)
                if (strcmp(cmddefs[i].name, name) == 0)
                        return &cmddefs[i];
        return NULL;
}

static const struct cmddef *cmd_def(enum cli_cmd cmd)
{
        for (size_t i = 0; i < sizeof(cmddefs) / sizeof(cmddefs[0]); i++)
                if (cmddefs[i].cmd == cmd && cmd != CMD_NONE)
                        return &cmddefs[i];
        return NULL;
}

void cli_help(enum cli_cmd cmd, FILE *f)
{
        const struct cmddef *d = cmd_def(cmd);
        bool any = false;

        if (cmd == CMD_PLACEMENT) {
                cli_placement_help(f);   /* its options are its own (cli_placement.c) */
                return;
        }
        if (!d) {
                fputs("Usage: hpwarm [GLOBAL OPTIONS] COMMAND [ARGS] [OPTIONS]\n"
                      "\n"
                      "Talk to hpwarmd, the hugepage pool warming service.\n"
                      "\n"
                      "Commands (hpwarm COMMAND --help or hpwarm help COMMAND for one):\n", f);
                for (size_t i = 0; i < sizeof(cmddefs) / sizeof(cmddefs[0]); i++) {
                        char head[64];
                        snprintf(head, sizeof(head), "%s %s", cmddefs[i].name, cmddefs[i].args);
                        if (strlen(head) < 32)
                                fprintf(f, "  %-32s%s\n", head, cmddefs[i].summary);
                        else
                                fprintf(f, "  %s\n  %-32s%s\n", head, "", cmddefs[i].summary);
                }
                fputs("\nGlobal options (before the command, or after it):\n", f);
                for (size_t i = 0; i < sizeof(optdefs) / sizeof(optdefs[0]); i++)
                        if (optdefs[i].cmds == GLOBAL)
                                print_opt(f, &optdefs[i]);
                fputs("\n" CLI_SIZE_HELP "\n\n", f);
                fputs(exit_codes_text, f);
                return;
        }
        fprintf(f, "Usage: hpwarm [GLOBAL OPTIONS] %s%s%s [OPTIONS]\n\n%c%s.\n", d->name, d->args[0] ? " " : "",
                d->args, toupper((unsigned char)d->summary[0]), d->summary + 1);
        if (d->more)
                fprintf(f, "\n%s", d->more);
        for (size_t i = 0; i < sizeof(optdefs) / sizeof(optdefs[0]); i++) {
                if (optdefs[i].cmds == GLOBAL || !(optdefs[i].cmds & C(cmd)))
                        continue;
                if (!any)
                        fputs("\nOptions:\n", f);
                any = true;
                print_opt(f, &optdefs[i]);
        }
        if (cmd == CMD_WARM || cmd == CMD_FLEET || cmd == CMD_RESERVE || cmd == CMD_STOCK)
                fputs("\n" CLI_SIZE_HELP "\n", f);
        fputs("\nGlobal options (--url, --token-file, --timeout, --json, ...): hpwarm --help\n", f);
}

int cli_parse_size(const char *s, uint64_t *ret)
{
        return hpw_size_parse(s, ret);
}

int cli_parse_page_size(const char *s, uint64_t *ret)
{
        return hpw_page_size_parse(s, ret);
}

void cli_size_explain(const char *s, bool page, char *buf, size_t len)
{
        hpw_size_explain(s, page, buf, len);
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

int cli_parse_stock_spec(const char *s, struct hpw_stock_target *ret, char *err, size_t errlen)
{
        char part[4][64], why[160];
        const char *p = s;
        uint64_t node, ps, size, count;
        size_t i;

        /* Exactly four non-empty fields split at ':'. */
        for (i = 0; i < 4; i++) {
                const char *e = i < 3 ? strchr(p, ':') : p + strlen(p);

                if (!e || e == p || (size_t)(e - p) >= sizeof(part[i]) || (i == 3 && strchr(p, ':')))
                        return cli_usage_err(err, errlen, "'%s' is not NODE:PAGESIZE:SIZE:COUNT (e.g. 0:2M:4G:2)", s);
                memcpy(part[i], p, (size_t)(e - p));
                part[i][e - p] = '\0';
                p = e + 1;
        }
        if (parse_uint(part[0], 65535, &node) < 0)
                return cli_usage_err(err, errlen, "'%s': NODE: not a node id: '%s'", s, part[0]);
        if (cli_parse_page_size(part[1], &ps) < 0) {
                cli_size_explain(part[1], true, why, sizeof(why));
                return cli_usage_err(err, errlen, "'%s': PAGESIZE: %s", s, why);
        }
        if (cli_parse_size(part[2], &size) < 0) {
                cli_size_explain(part[2], false, why, sizeof(why));
                return cli_usage_err(err, errlen, "'%s': SIZE: %s", s, why);
        }
        if (size == 0 || size % ps)
                return cli_usage_err(err, errlen, "'%s': SIZE must be a positive multiple of PAGESIZE", s);
        if (parse_uint(part[3], UINT32_MAX, &count) < 0 || count == 0)
                return cli_usage_err(err, errlen, "'%s': COUNT: want a whole number of files, at least 1, not '%s'", s,
                                     part[3]);
        *ret = (struct hpw_stock_target){ .size = sizeof(*ret), .node = (int)node, .page_size_bytes = ps, .size_bytes = size,
                                          .count = count };
        return 0;
}

/* stock [show] | set SPEC... | clear: POS[0..N) are the words after
 * "stock".  Every SPEC is checked here, so a bad one sends nothing. */
static int parse_stock_args(struct cli *c, const char *const *pos, size_t n, char *err, size_t errlen)
{
        if (n == 0 || strcmp(pos[0], "show") == 0) {
                c->stock_op = STOCK_SHOW;
                if (n > 1)
                        return cli_usage_err(err, errlen, "stock show: unexpected argument '%s'", pos[1]);
                return 0;
        }
        if (strcmp(pos[0], "clear") == 0) {
                c->stock_op = STOCK_CLEAR;
                if (n > 1)
                        return cli_usage_err(err, errlen, "stock clear: takes no arguments (got '%s')", pos[1]);
                return 0;
        }
        if (strcmp(pos[0], "set") != 0)
                return cli_usage_err(err, errlen, "stock: expected show, set or clear, not '%s'", pos[0]);
        c->stock_op = STOCK_SET;
        /* An empty set would remove every target: say so by name instead. */
        if (n == 1)
                return cli_usage_err(err, errlen, "stock set: give at least one NODE:PAGESIZE:SIZE:COUNT (e.g. "
                                     "0:2M:4G:2); to remove every target: hpwarm stock clear");
        if (n - 1 > HPW_STOCK_MAX_TARGETS)
                return cli_usage_err(err, errlen, "stock set: at most %d targets", HPW_STOCK_MAX_TARGETS);
        for (size_t i = 1; i < n; i++) {
                struct hpw_stock_target *t = &c->stock[c->n_stock];
                char why[200];

                if (cli_parse_stock_spec(pos[i], t, why, sizeof(why)) < 0)
                        return cli_usage_err(err, errlen, "stock set: %s", why);
                for (size_t j = 0; j < c->n_stock; j++) {
                        const struct hpw_stock_target *o = &c->stock[j];

                        if (o->node == t->node && o->page_size_bytes == t->page_size_bytes &&
                            o->size_bytes == t->size_bytes)
                                return cli_usage_err(err, errlen, "stock set: '%s' names the same node, page size "
                                                     "and size as '%s' (one target each)", pos[i], pos[j + 1]);
                }
                c->n_stock++;
        }
        return 0;
}

static const struct optdef *opt_by_id(int id)
{
        for (size_t i = 0; i < sizeof(optdefs) / sizeof(optdefs[0]); i++)
                if (optdefs[i].id == id)
                        return &optdefs[i];
        return NULL;
}

/* The option a word names ("--node", "--node=1"), in any command. */
static const struct optdef *opt_by_word(const char *w)
{
        size_t len;

        if (strncmp(w, "--", 2) != 0)
                return NULL;
        w += 2;
        len = strcspn(w, "=");
        for (size_t i = 0; i < sizeof(optdefs) / sizeof(optdefs[0]); i++)
                if (strlen(optdefs[i].name) == len && strncmp(optdefs[i].name, w, len) == 0)
                        return &optdefs[i];
        return NULL;
}

static int apply_opt(struct cli *c, int id, const char *v, char *err, size_t errlen)
{
        uint64_t n;

        switch (id) {
        case O_URL: c->url = v; break;
        case O_TOKEN_FILE: c->token_file = v; break;
        case O_CACERT: c->cacert = v; break;
        case O_CERT: c->cert = v; break;
        case O_KEY: c->key = v; break;
        case O_TIMEOUT:
                if (cli_parse_seconds(v, &c->timeout_ms) < 0)
                        return cli_usage_err(err, errlen, "--timeout: not a number of seconds: '%s'", v);
                c->timeout_set = true;
                break;
        case O_CONNECT_TIMEOUT:
                if (cli_parse_seconds(v, &c->connect_timeout_ms) < 0)
                        return cli_usage_err(err, errlen, "--connect-timeout: not a number of seconds: '%s'", v);
                break;
        case O_JSON: c->json = true; break;
        case O_HELP: c->help = true; break;
        case O_VERSION: c->version = true; break;
        case O_NODE:
                if (parse_uint(v, 65535, &n) < 0)
                        return cli_usage_err(err, errlen, "--node: not a node id: '%s'", v);
                c->node = (int)n;
                break;
        case O_SIZE: {
                char why[160];
                if (cli_parse_size(v, &c->size) < 0) {
                        cli_size_explain(v, false, why, sizeof(why));
                        return cli_usage_err(err, errlen, "--size: %s", why);
                }
                if (c->size == 0)
                        return cli_usage_err(err, errlen, "--size: must be more than 0");
                break;
        }
        case O_PAGE_SIZE: {
                char why[160];
                if (cli_parse_page_size(v, &c->page_size) < 0) {
                        cli_size_explain(v, true, why, sizeof(why));
                        return cli_usage_err(err, errlen, "--page-size: %s", why);
                }
                break;
        }
        case O_THREADS:
                if (parse_uint(v, 4096, &n) < 0 || n == 0)
                        return cli_usage_err(err, errlen, "--threads: not a thread count: '%s'", v);
                c->threads = (unsigned)n;
                break;
        case O_TTL:
                if (parse_uint(v, UINT32_MAX, &c->ttl_seconds) < 0)
                        return cli_usage_err(err, errlen, "--ttl: not a number of seconds: '%s'", v);
                break;
        case O_RESERVE: c->reserve = true; break;
        case O_LABEL: c->label = v; break;
        case O_FILE_OWNER: {
                uint64_t uid, gid;
                const char *colon = strchr(v, ':');
                char u[16];
                if (!colon || (size_t)(colon - v) >= sizeof(u))
                        return cli_usage_err(err, errlen, "--file-owner: not UID:GID: '%s'", v);
                memcpy(u, v, (size_t)(colon - v));
                u[colon - v] = '\0';
                if (parse_uint(u, UINT32_MAX - 1, &uid) < 0 || parse_uint(colon + 1, UINT32_MAX - 1, &gid) < 0)
                        return cli_usage_err(err, errlen, "--file-owner: not UID:GID (numbers): '%s'", v);
                c->file_owned = true;
                c->file_uid = (uint32_t)uid;
                c->file_gid = (uint32_t)gid;
                break;
        }
        case O_WAIT: c->wait = true; break;
        case O_ALLOW_PARTIAL: c->allow_partial = true; break;
        case O_ELASTIC: c->elastic = true; break;
        case O_ALLOW_BEST_EFFORT: c->elastic_policy.allow_best_effort = true; c->elastic_opts = true; break;
        case O_MIN:
        case O_MAX:
        case O_HEADROOM:
        case O_IDLE: {
                static const char *names[] = { "--min", "--max", "--headroom", "--idle" };
                uint64_t *out[] = { &c->elastic_policy.min, &c->elastic_policy.max, &c->elastic_policy.headroom,
                                    &c->elastic_policy.idle_seconds };
                int k = id - O_MIN;
                if (parse_uint(v, UINT32_MAX, out[k]) < 0)
                        return cli_usage_err(err, errlen, "%s: not a number of %s: '%s'", names[k],
                                             id == O_IDLE ? "seconds" : "pages", v);
                if (id == O_MAX)
                        c->elastic_max_set = true;
                if (id == O_IDLE)
                        c->elastic_idle_set = true;
                c->elastic_opts = true;
                break;
        }
        case O_VMM:
                if (strcmp(v, "qemu") == 0)
                        c->vmm = VMM_QEMU;
                else if (strcmp(v, "cloud-hypervisor") == 0 || strcmp(v, "ch") == 0)
                        c->vmm = VMM_CLOUD_HYPERVISOR;
                else if (strcmp(v, "libvirt") == 0)
                        c->vmm = VMM_LIBVIRT;
                else
                        return cli_usage_err(err, errlen, "--vmm: expected qemu, cloud-hypervisor or libvirt, not '%s'",
                                             v);
                break;
        case O_AS:
                /* Repeated or comma-separated: SRC names in guest node order. */
                for (const char *p = v;;) {
                        size_t len = strcspn(p, ",");
                        if (c->n_as == HPW_HANDOFF_MAX_POOLS)
                                return cli_usage_err(err, errlen, "--as: at most %d source pools", HPW_HANDOFF_MAX_POOLS);
                        if (len == 0 || len > 64)
                                return cli_usage_err(err, errlen, "--as: '%s' is not a list of pool names", v);
                        memcpy(c->as[c->n_as], p, len);
                        c->as[c->n_as][len] = '\0';
                        if (!hpw_name_valid(c->as[c->n_as]))
                                return cli_usage_err(err, errlen, "--as: invalid pool name '%s'", c->as[c->n_as]);
                        for (size_t j = 0; j < c->n_as; j++)
                                if (strcmp(c->as[j], c->as[c->n_as]) == 0)
                                        return cli_usage_err(err, errlen, "--as: '%s' named twice (one source per pool)",
                                                             c->as[j]);
                        c->n_as++;
                        if (!p[len])
                                break;
                        p += len + 1;
                }
                break;
        case O_SOURCE_URL: c->source_url = v; break;
        case O_HOSTS: c->hosts = v; break;
        case O_WARM: c->warm_name = v; break;
        case O_PID:
                if (parse_uint(v, INT32_MAX, &n) < 0 || n == 0)
                        return cli_usage_err(err, errlen, "--pid: not a process id: '%s'", v);
                c->pid = (int)n;
                break;
        case O_IGNORE_MISSING: c->ignore_missing = true; break;
        case O_ARGV: c->argv_words = true; break;
        case O_VERBOSE: c->verbose = true; break;
        case O_PROMETHEUS: c->prometheus = v; break;
        case O_HOST_LABEL:
                if (!hpw_prom_label_valid(v))
                        return cli_usage_err(err, errlen, "--host-label: not a Prometheus label name: '%s'", v);
                c->host_label = v;
                break;
        case O_URL_TEMPLATE: c->url_template = v; break;
        case O_MAX_AGE:
                if (parse_uint(v, 86400, &n) < 0 || n == 0)
                        return cli_usage_err(err, errlen, "--max-age: whole seconds from 1 to 86400, not '%s'", v);
                c->max_age_s = (unsigned)n;
                break;
        default:
                return cli_usage_err(err, errlen, "internal: option %d not handled", id);
        }
        return 0;
}

/* The long-option table getopt_long gets for CMD (CMD_NONE: before the
 * command, globals only). */
static void build_longopts(enum cli_cmd cmd, struct option *lo)
{
        size_t n = 0;

        for (size_t i = 0; i < sizeof(optdefs) / sizeof(optdefs[0]); i++)
                if (optdefs[i].cmds == GLOBAL || (cmd != CMD_NONE && (optdefs[i].cmds & C(cmd))))
                        lo[n++] = (struct option){ optdefs[i].name, optdefs[i].has_arg, NULL, optdefs[i].id };
        lo[n] = (struct option){ 0 };
}

/* getopt_long said '?' or ':' for the word before OPTIND: say why, and
 * what would work. */
static int opt_error(int rc, const char *word, const char *cmdname, char *err, size_t errlen)
{
        const struct optdef *o = opt_by_word(word);
        const struct optdef *id = opt_by_id(optopt);

        if (rc == ':')
                return cli_usage_err(err, errlen, "option '--%s' needs a value", id ? id->name : word);
        if (id && strchr(word, '='))
                return cli_usage_err(err, errlen, "option '--%s' takes no value", id->name);
        if (o && !cmdname)
                return cli_usage_err(err, errlen, "--%s is an option of a command: put it after the command "
                                     "(hpwarm COMMAND ... --%s)", o->name, o->name);
        if (o)
                return cli_usage_err(err, errlen, "%s does not take --%s (try hpwarm %s --help)", cmdname, o->name,
                                     cmdname);
        if (cmdname)
                return cli_usage_err(err, errlen, "%s: unknown option '%s' (try hpwarm %s --help)", cmdname, word,
                                     cmdname);
        return cli_usage_err(err, errlen, "unknown option '%s' (try hpwarm --help)", word);
}

/* Two passes of getopt_long.  The first reads global options up to the
 * first word that is not one ("+": stop there): that word is the command.
 * The second reads the rest with the command's options and the globals,
 * returning positional words in order ("-"), so options and arguments may
 * mix after the command whatever POSIXLY_CORRECT says.  opterr is off and
 * every error is worded here. */
int cli_parse(int argc, char *const *argv, const char *env_url, const char *env_token_file,
              struct cli *ret, char *err, size_t errlen)
{
        struct cli c = {
                .node = -1,
                .connect_timeout_ms = CLI_DEFAULT_CONNECT_MS,
                .url = env_url && env_url[0] ? env_url : CLI_DEFAULT_URL,
                .token_file = env_token_file && env_token_file[0] ? env_token_file : NULL,
        };
        struct option lo[sizeof(optdefs) / sizeof(optdefs[0]) + 1];
        /* handoff: up to 64 names; stock set: "set" and up to 64 specs (one
         * more is read, to say "at most 64"). */
        const char *pos[2 + (HPW_HANDOFF_MAX_POOLS > HPW_STOCK_MAX_TARGETS ? HPW_HANDOFF_MAX_POOLS
                                                                            : HPW_STOCK_MAX_TARGETS)];
        size_t npos = 0;
        const struct cmddef *d;
        char *sub[256];          /* the command's words; more is a usage error */
        int subc, r, o;

        err[0] = '\0';
        build_longopts(CMD_NONE, lo);
        opterr = 0;
        optind = 0;   /* glibc: start afresh (tests parse many lines) */
        while ((o = getopt_long(argc, argv, "+:h", lo, NULL)) != -1) {
                if (o == '?' || o == ':')
                        return opt_error(o, argv[optind - 1], NULL, err, errlen);
                if ((r = apply_opt(&c, o, optarg, err, errlen)) < 0)
                        return r;
        }
        if (optind >= argc) {
                if (c.help || c.version) {
                        *ret = c;
                        return 0;
                }
                return cli_usage_err(err, errlen, "no command given (try hpwarm --help)");
        }
        d = find_cmd(argv[optind]);
        if (!d) {
                if (c.version) {
                        *ret = c;
                        return 0;
                }
                return cli_usage_err(err, errlen, "unknown command '%s' (try hpwarm --help)", argv[optind]);
        }
        c.cmd = d->cmd;

        /* The command's words, with the command as argv[0]. */
        subc = argc - optind;
        if (subc > (int)(sizeof(sub) / sizeof(sub[0])) - 1)
                return cli_usage_err(err, errlen, "too many arguments");
        for (int i = 0; i < subc; i++)
                sub[i] = argv[optind + i];
        sub[subc] = NULL;
        build_longopts(d->cmd, lo);
        optind = 0;
        while ((o = getopt_long(subc, sub, "-:h", lo, NULL)) != -1) {
                if (o == '?' || o == ':')
                        return opt_error(o, sub[optind - 1], d->name, err, errlen);
                if (o == 1) {
                        if (npos == sizeof(pos) / sizeof(pos[0]))
                                return cli_usage_err(err, errlen, "too many arguments");
                        pos[npos++] = optarg;
                        continue;
                }
                if ((r = apply_opt(&c, o, optarg, err, errlen)) < 0)
                        return r;
        }
        /* After "--" getopt leaves the rest for us. */
        for (; optind < subc; optind++) {
                if (npos == sizeof(pos) / sizeof(pos[0]))
                        return cli_usage_err(err, errlen, "too many arguments");
                pos[npos++] = sub[optind];
        }

        if (strcmp(d->name, "help") == 0) {
                /* hpwarm help [COMMAND] */
                const struct cmddef *h = npos ? find_cmd(pos[0]) : NULL;
                if (npos > 1)
                        return cli_usage_err(err, errlen, "help: one command at a time");
                if (npos && !h)
                        return cli_usage_err(err, errlen, "help: unknown command '%s' (try hpwarm --help)", pos[0]);
                c.help = true;
                c.cmd = h ? h->cmd : CMD_NONE;
                *ret = c;
                return 0;
        }
        if (c.help || c.version) {
                *ret = c;
                return 0;
        }
        if ((int)npos < d->min_args)
                return cli_usage_err(err, errlen, "%s: missing arguments: hpwarm %s %s (try hpwarm %s --help)",
                                     d->name, d->name, d->args, d->name);
        if ((int)npos > d->max_args)
                return cli_usage_err(err, errlen, "%s: unexpected argument '%s'", d->name, pos[d->max_args]);

        switch (c.cmd) {
        case CMD_NODES:
                if (npos == 1) {
                        uint64_t n;
                        if (parse_uint(pos[0], 65535, &n) < 0)
                                return cli_usage_err(err, errlen, "nodes: not a node id: '%s'", pos[0]);
                        c.node = (int)n;
                }
                break;
        case CMD_RESERVE: {
                uint64_t n;
                char why[160];
                if (parse_uint(pos[0], 65535, &n) < 0)
                        return cli_usage_err(err, errlen, "reserve: not a node id: '%s'", pos[0]);
                c.node = (int)n;
                if (cli_parse_page_size(pos[1], &c.page_size) < 0) {
                        cli_size_explain(pos[1], true, why, sizeof(why));
                        return cli_usage_err(err, errlen, "reserve: PAGE_SIZE: %s", why);
                }
                if (c.elastic) {
                        if (npos == 3)
                                return cli_usage_err(err, errlen, "reserve --elastic takes no COUNT ('%s'): the pool "
                                                     "follows demand within --min and --max", pos[2]);
                        if (!c.elastic_max_set || !c.elastic_idle_set)
                                return cli_usage_err(err, errlen, "reserve --elastic: --max and --idle are required");
                        if (c.elastic_policy.min > c.elastic_policy.max)
                                return cli_usage_err(err, errlen, "reserve --elastic: --min %llu is above --max %llu",
                                                     (unsigned long long)c.elastic_policy.min,
                                                     (unsigned long long)c.elastic_policy.max);
                        break;
                }
                if (c.elastic_opts)
                        return cli_usage_err(err, errlen, "reserve: --min, --max, --headroom, --idle and "
                                             "--allow-best-effort go with --elastic");
                if (npos < 3)
                        return cli_usage_err(err, errlen, "reserve: missing arguments: hpwarm reserve NODE PAGE_SIZE "
                                             "COUNT (or --elastic; try hpwarm reserve --help)");
                if (parse_uint(pos[2], UINT32_MAX, &c.count) < 0)
                        return cli_usage_err(err, errlen, "reserve: not a page count: '%s'", pos[2]);
                break;
        }
        case CMD_WARM:
        case CMD_STATUS:
        case CMD_WAIT:
        case CMD_CLAIM:
        case CMD_RELEASE:
        case CMD_HANDOFF:
                c.name = pos[0];
                if (!hpw_name_valid(c.name))
                        return cli_usage_err(err, errlen,
                                             "%s: invalid pool name '%s' ([A-Za-z0-9][A-Za-z0-9._-]{0,63})",
                                             d->name, c.name);
                if (c.cmd == CMD_WARM && c.node < 0)
                        return cli_usage_err(err, errlen, "warm: --node is required");
                if (c.cmd == CMD_WARM && c.size == 0)
                        return cli_usage_err(err, errlen, "warm: --size is required");
                if (c.cmd == CMD_WARM && c.page_size && c.size % c.page_size)
                        return cli_usage_err(err, errlen, "warm: --size must be a multiple of --page-size");
                if (c.cmd == CMD_HANDOFF && c.vmm == VMM_NONE)
                        return cli_usage_err(err, errlen, "handoff: --vmm qemu|cloud-hypervisor|libvirt is required");
                if (c.cmd == CMD_HANDOFF) {
                        /* Guest node i is the i-th name: each once. */
                        for (size_t i = 0; i < npos; i++) {
                                if (!hpw_name_valid(pos[i]))
                                        return cli_usage_err(err, errlen, "handoff: invalid pool name '%s'", pos[i]);
                                for (size_t j = 0; j < i; j++)
                                        if (strcmp(pos[j], pos[i]) == 0)
                                                return cli_usage_err(err, errlen,
                                                                     "handoff: '%s' named twice (one pool per guest node)",
                                                                     pos[i]);
                                c.names[c.n_names++] = pos[i];
                        }
                        if (c.n_as && c.n_as != c.n_names)
                                return cli_usage_err(err, errlen, "handoff: %zu --as sources for %zu pools; give one "
                                                     "source per pool, in the same order", c.n_as, c.n_names);
                        if (c.source_url && !c.n_as)
                                return cli_usage_err(err, errlen, "handoff: --source-url goes with --as");
                        if (c.n_as && c.vmm == VMM_CLOUD_HYPERVISOR)
                                return cli_usage_err(err, errlen,
                                                     "handoff: --as is for qemu and libvirt; cloud-hypervisor's restore "
                                                     "and receive-migration take the zones from the source (warm the "
                                                     "destination pool under the source's name instead)");
                }
                break;
        case CMD_FLEET:
                if (!c.hosts && !(c.prometheus && strcmp(pos[0], "place") == 0))
                        return cli_usage_err(err, errlen, c.prometheus ? "fleet %s: --prometheus is for place; use --hosts FILE"
                                                                       : "fleet: --hosts FILE is required", pos[0]);
                if (c.hosts && c.prometheus)
                        return cli_usage_err(err, errlen, "fleet place: --hosts or --prometheus, not both");
                if (!c.prometheus && (c.host_label || c.url_template || c.max_age_s))
                        return cli_usage_err(err, errlen, "fleet: --host-label, --url-template and --max-age go with "
                                             "place --prometheus");
                if (c.url_template) {
                        char probe[1024];
                        const char *label = c.host_label ? c.host_label : "instance";
                        if (hpw_prom_url(c.url_template, label, "h", probe, sizeof(probe)) < 0)
                                return cli_usage_err(err, errlen, "--url-template: '%s' does not contain {%s}",
                                                     c.url_template, label);
                        if (strncmp(probe, "http://", 7) && strncmp(probe, "https://", 8))
                                return cli_usage_err(err, errlen, "--url-template: '%s' must start with http:// or "
                                                     "https://", c.url_template);
                }
                if (strcmp(pos[0], "nodes") == 0)
                        c.fleet = FLEET_NODES;
                else if (strcmp(pos[0], "pools") == 0)
                        c.fleet = FLEET_POOLS;
                else if (strcmp(pos[0], "place") == 0)
                        c.fleet = FLEET_PLACE;
                else
                        return cli_usage_err(err, errlen, "fleet: expected nodes, pools or place, not '%s'", pos[0]);
                if (c.fleet != FLEET_PLACE && (c.size || c.page_size || c.warm_name || c.wait || c.verbose))
                        return cli_usage_err(err, errlen,
                                             "fleet %s takes no --size, --page-size, --warm, --wait or --verbose", pos[0]);
                if (c.fleet == FLEET_PLACE) {
                        if (c.size == 0)
                                return cli_usage_err(err, errlen, "fleet place: --size is required");
                        if (!c.page_size)
                                c.page_size = CLI_DEFAULT_PAGE_SIZE;
                        if (c.size % c.page_size)
                                return cli_usage_err(err, errlen, "fleet place: --size must be a multiple of --page-size");
                        if (c.warm_name && !hpw_name_valid(c.warm_name))
                                return cli_usage_err(err, errlen, "fleet place: invalid pool name '%s'", c.warm_name);
                        if (c.wait && !c.warm_name)
                                return cli_usage_err(err, errlen, "fleet place: --wait needs --warm NAME");
                }
                break;
        case CMD_STOCK:
                if ((r = parse_stock_args(&c, pos, npos, err, errlen)) < 0)
                        return r;
                break;
        default:
                break;
        }
        if ((c.cert && !c.key) || (!c.cert && c.key))
                return cli_usage_err(err, errlen, "--cert and --key go together");
        *ret = c;
        return 0;
}
