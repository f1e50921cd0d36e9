/* cli_cmd: what the command half of hpwarm (main.c, cli_warm.c, cli_fleet.c,
 * and cli_out.c below them) shares and nothing else sees: the per-run
 * context and the helpers that print results and failures.  Output rules:
 * results on stdout, one diagnostic line per failure on stderr, printed
 * where the failure is handled.  Calls point down: main.c dispatches to the
 * command files, cli_fleet.c uses cli_warm.c, and all of them cli_out.c. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "cli.h"

struct ctx {
        const struct cli *cli;
        struct hpw *h;
        const char *url;
        uint64_t start_ms;      /* --timeout is one deadline for the whole command */
        /* --json prints one document per invocation.  json_nested: the
         * document is already open (fleet place --warm) and what this
         * context prints goes in as its member; json_done: printed. */
        bool json_nested, json_done;
};

/* ---- cli_out.c ---- */

uint64_t cli_now_ms(void);
/* What connect(2) says about the unix socket PATH: 0 when it connects. */
int cli_probe_unix(const char *path);
/* One line on stderr for a failed call WHAT (for an unreachable server, the
 * socket or URL tried and the likely cause). */
void cli_fail_msg(struct hpw *h, const char *url, const char *what, enum hpw_error err);
/* cli_fail_msg, and with --json the server's problem body on stdout; returns
 * the exit code for ERR. */
int cli_fail(struct ctx *x, const char *what, enum hpw_error err);
/* JSON as received, with a newline. */
void cli_print_json(const char *json);
/* The --json document of this command: JSON (a server's object) as the one
 * document, or with json_nested as member MEMBER of the open one; later
 * calls print nothing, so an invocation never prints two documents. */
void cli_emit_json(struct ctx *x, const char *member, const char *json);

#define POOLS_HEADER "NAME\tNODE\tPAGE\tSIZE\tSTATE\tDONE\tRATE\tCLAIMED\tEXPIRES"
/* Table rows of a node (one per page size) and of a pool; HOST, when not
 * NULL, is a first column (fleet tables, whose node rows are shorter). */
void cli_add_node_rows(struct table *t, const char *host, const struct hpw_node *n);
void cli_add_pool_row(struct table *t, const char *host, const struct hpw_pool *p);

/* T as "2026-12-01T21:09:00Z" (UTC) into BUF; "-" when not set. */
void cli_format_time(int64_t t, char *buf, size_t len);
/* A refusal by the node's memory floor carries the largest count that fits:
 * say it on stderr as the command that would work. */
void cli_floor_hint(const struct ctx *x, const struct hpw_problem *p, int node, uint64_t page_size);

/* ---- cli_warm.c ---- */

/* hpwarm warm with these values (fleet place --warm uses it on the chosen
 * host's handle); prints the outcome and returns the exit code. */
int cli_warm_at(struct ctx *x, const char *name, int node, uint64_t size, uint64_t page_size);

/* hpwarm wait's loop on X's handle, from INITIAL (the pool as the warm
 * answered); returns the exit code. */
int cli_wait_at(struct ctx *x, const char *name, const struct hpw_pool *initial);

/* hpwarm warm and hpwarm wait. */
int cli_cmd_warm(struct ctx *x);
int cli_cmd_wait(struct ctx *x);

/* ---- cli_fleet.c ---- */

/* hpwarm fleet. */
int cli_cmd_fleet(struct ctx *x);
