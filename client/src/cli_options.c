/* cli_options: the hpwarm command line's words, and the help made of them.
 *
 * One table of options (generated at build time from
 * client/cli_options.json by gen_cli_options.cmake), each saying which
 * commands take it (GLOBAL: all, also before the command), and one of
 * commands with their arguments' bounds and help paragraphs.  The parser (cli_parse.c) reads getopt's
 * table and its error hints from them and the help below prints them, so
 * an option cannot be accepted without being documented.  Pure: no I/O
 * but the FILE the help is written to. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "internal.h"

#define C(x) (1u << (x))
#define GLOBAL 0xffffffffu

/* One row per option, generated from client/cli_options.json: the options
 * are data, kept where the parser, this help and the manual page check
 * read them. */
static const struct optdef optdefs[] = {
#include "cli_options_table.h"
};

/* The parser sizes its getopt table by this bound. */
_Static_assert(sizeof(optdefs) / sizeof(optdefs[0]) <= CLI_N_OPTS_MAX, "raise CLI_N_OPTS_MAX");

static const struct cmddef cmddefs[] = {
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
        { "stock", CMD_STOCK, 0, 2 + HPW_STOCK_MAX_TARGETS, "[show | set SPEC... | clear | nova-config]",
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
          "node or page size, invalid), 5 (the targets do not fit the node).\n"
          "stock nova-config: the lines for nova.conf that leave the stock's pages\n"
          "out of Nova's own hugepage count (reserved_huge_pages, one per node and\n"
          "page size: every target's COUNT x SIZE in pages); nova-compute reads\n"
          "them at start (docs/OPENSTACK.md section 4).\n" },
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

const struct cmddef *cli_find_cmd(const char *name)
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

const struct optdef *cli_opt_by_id(int id)
{
        for (size_t i = 0; i < sizeof(optdefs) / sizeof(optdefs[0]); i++)
                if (optdefs[i].id == id)
                        return &optdefs[i];
        return NULL;
}

const struct optdef *cli_opt_by_word(const char *w)
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

void cli_longopts(enum cli_cmd cmd, struct option *lo)
{
        size_t n = 0;

        for (size_t i = 0; i < sizeof(optdefs) / sizeof(optdefs[0]); i++)
                if (optdefs[i].cmds == GLOBAL || (cmd != CMD_NONE && (optdefs[i].cmds & C(cmd))))
                        lo[n++] = (struct option){ optdefs[i].name, optdefs[i].has_arg, NULL, optdefs[i].id };
        lo[n] = (struct option){ 0 };
}
