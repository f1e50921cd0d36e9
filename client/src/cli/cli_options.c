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

/* One row per command, generated from client/cli_options.json like the
 * options: the command list exists there only. */
static const struct cmddef cmddefs[] = {
#include "cli_commands_table.h"
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
        /* "{VMMS}" stands for the VMM formats' names (the library's table),
         * so the help lists what --vmm takes without spelling it. */
        const char *vmms = strstr(h, "{VMMS}");
        char expanded[512];
        if (vmms) {
                char names[256];
                hpw_vmm_names(names, sizeof(names), ", ", " or ", false);
                snprintf(expanded, sizeof(expanded), "%.*s%s%s", (int)(vmms - h), h, names, vmms + strlen("{VMMS}"));
                h = expanded;
        }
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
        if (d->sizes)
                fputs("\n" CLI_SIZE_HELP "\n", f);
        fputs("\nGlobal options (--url, --token-file, --timeout, --json, ...): hpwarm --help\n", f);
}

enum cli_cmd cli_cmd_word(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                const struct optdef *o;
                if (argv[i][0] != '-') {
                        const struct cmddef *d = cli_find_cmd(argv[i]);
                        return d ? d->cmd : CMD_NONE;
                }
                /* "--url URL": the value is the next word ("--url=URL" is one). */
                o = cli_opt_by_word(argv[i]);
                if (o && o->cmds == GLOBAL && o->has_arg == required_argument && !strchr(argv[i], '='))
                        i++;
        }
        return CMD_NONE;
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
