/* cli_options.h: the hpwarm command line's tables, shared by the parser
 * (cli_parse.c) and the help printed from them (cli_options.c), so an
 * option cannot be accepted without being documented. */
#pragma once
#include <getopt.h>
#include <stddef.h>

#include "cli.h"

/* enum opt_id: O_NAME per option of client/cli_options.json, generated
 * from it (getopt's id: the short letter, else 256 up). */
#include "cli_option_ids.h"

struct optdef {
        const char *name;
        int has_arg;       /* no_argument / required_argument */
        int id;
        unsigned cmds;     /* commands that accept it; GLOBAL = all, also before the command */
        const char *arg;   /* value name in help */
        const char *help;
};

struct cmddef {
        const char *name;
        enum cli_cmd cmd;
        int min_args, max_args;
        const char *args;      /* positional arguments, for the synopsis */
        const char *summary;   /* one line for the command list */
        const char *more;      /* extra paragraph of the command's own help, or NULL */
        bool sizes;            /* its help ends with the size grammar */
};

/* Most options the table holds (cli_options.c asserts it), so a getopt
 * table can be sized without counting at run time. */
#define CLI_N_OPTS_MAX 64

/* The option with getopt id ID; NULL when none. */
const struct optdef *cli_opt_by_id(int id);
/* The option a word names ("--node", "--node=1"), in any command. */
const struct optdef *cli_opt_by_word(const char *w);
/* The command named NAME; NULL when none. */
const struct cmddef *cli_find_cmd(const char *name);
/* The long-option table getopt_long gets for CMD (CMD_NONE: before the
 * command, globals only); LO holds CLI_N_OPTS_MAX + 1 entries. */
void cli_longopts(enum cli_cmd cmd, struct option *lo);
