/* cli_options.h: the hpwarm command line's tables, shared by the parser
 * (cli_parse.c) and the help printed from them (cli_options.c), so an
 * option cannot be accepted without being documented. */
#pragma once
#include <getopt.h>
#include <stddef.h>

#include "cli.h"

enum opt_id {
        O_HELP = 'h',
        O_URL = 256, O_TOKEN_FILE, O_CACERT, O_CERT, O_KEY, O_TIMEOUT, O_CONNECT_TIMEOUT, O_JSON,
        O_VERSION, O_NODE, O_SIZE, O_PAGE_SIZE, O_THREADS, O_TTL, O_RESERVE, O_LABEL, O_FILE_OWNER, O_WAIT,
        O_ALLOW_PARTIAL, O_VMM, O_HOSTS, O_WARM, O_PID, O_IGNORE_MISSING, O_ARGV, O_VERBOSE,
        O_PROMETHEUS, O_HOST_LABEL, O_URL_TEMPLATE, O_MAX_AGE,
        O_ELASTIC, O_MIN, O_MAX, O_HEADROOM, O_IDLE, O_ALLOW_BEST_EFFORT, O_AS, O_SOURCE_URL,
};

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
