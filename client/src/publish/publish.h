/* publish.h: the seam a fleet publisher plugs into.
 *
 * A fleet publisher keeps a scheduler's view of this host's warm pages
 * current: OpenStack Placement inventory (cli_placement.c) today, a
 * Kubernetes node agent's extended resources or NodeResourceTopology zones
 * (docs/OPENSTACK.md section 5) tomorrow.  What they share is written once
 * in cli_publish.c: the daemon's handle (--url, --timeout, HPWARM_URL,
 * HPWARM_TOKEN_FILE), one snapshot or --watch (the daemon's change long
 * poll, a reread every minute, backoff and outage logging, SIGTERM), and
 * `hpwarm publish --to NAME`.  What they count is offer.h's.  What differs
 * is a struct publisher: its options, how it opens a session, how it
 * publishes one snapshot.
 *
 * Adding one is one file defining `const struct publisher publisher_ID`
 * and one row HPW_PUBLISHER(ID) in publishers.def; nothing else spells its
 * name.  Calls point down: the runner calls the hooks, and a publisher
 * reaches the runner only through what the hooks are handed (the log). */
#pragma once
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "hpwarm.h"

/* A publisher's own long options take ids from here up (the runner's are
 * below it). */
#define PUBLISH_OPT_MIN 512

struct publisher;
/* The runner's log: one line on stderr, "hpwarm NAME: ...", flushed. */
typedef void publish_log_fn(const struct publisher *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct publisher {
        const char *name;     /* --to NAME; its log lines start "hpwarm NAME: " */
        const char *summary;  /* one line for hpwarm publish --help */
        const char *what;     /* a run, in its messages: "placement sync" */
        /* Its own command's words, NULL-ended ("placement", "sync": a row
         * of cli_options.json whose main is cli_publish_command_main), or
         * NULL: only hpwarm publish --to NAME runs it. */
        const char *const *command;
        /* Its own long options (ids from PUBLISH_OPT_MIN), ended by { 0 }. */
        const struct option *options;
        /* Usage, options (the runner's among them) and exit codes. */
        void (*help)(FILE *f);
        /* A state with no option set; NULL when out of memory. */
        void *(*new)(void);
        /* Option ID with ARG (NULL for a flag): 0, or an exit code after
         * saying why on stderr. */
        int (*option)(void *s, int id, const char *arg);
        /* Every option read: what is required is there?  0, or an exit
         * code after saying why on stderr. */
        int (*check)(void *s);
        /* Open the session on H, the daemon's handle (H outlives S), LOG
         * the runner's log for what it reports: 0, or an exit code after
         * saying why on stderr. */
        int (*open)(void *s, struct hpw *h, publish_log_fn *log);
        /* What the session publishes for, in --watch's first line: "compute
         * node NAME". */
        const char *(*target)(void *s);
        /* One snapshot: read the daemon, publish what differs (REREAD: ask
         * the target again even when the counts did not move) and report
         * it on stdout (WATCH: only what changed).  The error of the call
         * that failed, with hpw_last_message(H) saying why. */
        enum hpw_error (*publish)(void *s, bool reread, bool watch);
        void (*free)(void *s);
};

/* The commands the runner is (cli_publish.c), for main()'s dispatch: hpwarm
 * publish --to NAME, and a publisher's own command (hpwarm placement
 * sync), each with the help of its own options. */
int cli_publish_main(int argc, char **argv);
int cli_publish_command_main(int argc, char **argv);
void cli_publish_help(FILE *f);
/* hpwarm placement's help (cli_placement.c, the Placement publisher): its
 * own options, because its --token-file is Placement's. */
void cli_placement_help(FILE *f);
