/* cli: the hpwarm command line, split into pure parts (this header;
 * cli_parse.c: argument parsing and help; cli_core.c: exit codes, messages,
 * place selection, tables) and the part that talks to servers and terminals
 * (cli.c).  The pure parts are what tests/client/test_cli.c checks. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hpwarm.h"

/* Exit codes: the contract with scripts, also printed by --help. */
enum {
        CLI_EXIT_OK = 0,
        CLI_EXIT_FAILED = 1,       /* operation failed: pool failed, reserve incomplete, ... */
        CLI_EXIT_USAGE = 2,
        CLI_EXIT_UNREACHABLE = 3,
        CLI_EXIT_TIMEOUT = 4,
        CLI_EXIT_CONFLICT = 5,     /* 409: conflict or insufficient hugepages */
        CLI_EXIT_AUTH = 6,         /* 401/403 */
        CLI_EXIT_PARTIAL = 7,      /* fleet: some hosts did not answer */
        CLI_EXIT_RETRY = 8,        /* try again later: 429/503 the retries did not outlast */
};

#define CLI_DEFAULT_URL "unix:///run/hpwarmd/api.sock"
#define CLI_DEFAULT_TIMEOUT_MS 30000        /* one request, retries included */
#define CLI_DEFAULT_WAIT_TIMEOUT_MS 600000  /* wait / --wait: warming 1 TiB takes minutes */
#define CLI_DEFAULT_FLEET_TIMEOUT_MS 1500   /* per host: a fleet answer must come quickly */
#define CLI_DEFAULT_CONNECT_MS 5000
#define CLI_DEFAULT_PAGE_SIZE (2ull << 20)

/* enum cli_cmd: CMD_NONE and one CMD_NAME per command of
 * client/cli_options.json, generated from it. */
#include "cli_commands.h"
enum cli_fleet { FLEET_NONE, FLEET_NODES, FLEET_POOLS, FLEET_PLACE };
enum cli_stock { STOCK_SHOW, STOCK_SET, STOCK_CLEAR, STOCK_NOVA_CONFIG };
struct hpw_vmm;

struct cli {
        /* global */
        const char *url, *token_file, *cacert, *cert, *key;
        uint64_t timeout_ms;       /* valid when timeout_set; 0 = no limit */
        bool timeout_set;
        uint64_t connect_timeout_ms;
        bool json, help, version;
        /* command */
        enum cli_cmd cmd;
        const char *name;          /* pool name (warm, status, wait, claim, release, handoff) */
        int node;                  /* --node, or reserve's NODE; -1 = not given */
        uint64_t size;             /* --size, bytes */
        uint64_t page_size;        /* --page-size or reserve's PAGE_SIZE, bytes; 0 = not given */
        uint64_t count;            /* reserve COUNT */
        unsigned threads;
        uint64_t ttl_seconds;
        const char *label;         /* --label, NULL = none */
        bool file_owned;           /* --file-owner UID:GID */
        uint32_t file_uid, file_gid;
        bool reserve, wait, allow_partial;
        bool elastic;              /* reserve --elastic */
        struct hpw_elastic_policy elastic_policy; /* --min --max --headroom --idle --allow-best-effort */
        bool elastic_max_set, elastic_idle_set, elastic_opts;
        int pid;                   /* claim --pid; 0 = not given */
        bool ignore_missing;       /* release --ignore-missing */
        const struct hpw_vmm *vmm; /* handoff --vmm: a row of the library's table; NULL = not given */
        const char *names[HPW_HANDOFF_MAX_POOLS]; /* handoff: the pools, guest node order */
        size_t n_names;
        bool argv_words;           /* handoff --argv: one word per line */
        char as[HPW_HANDOFF_MAX_POOLS][65]; /* handoff --as: the i-th pool's source, n_as of them */
        size_t n_as;
        const char *source_url;    /* handoff --source-url: the source pools' daemon */
        const char *hosts;         /* fleet --hosts FILE */
        enum cli_fleet fleet;
        const char *warm_name;     /* fleet place --warm NAME */
        bool verbose;              /* fleet --verbose */
        const char *prometheus;    /* fleet place --prometheus URL */
        const char *host_label;    /* --host-label (NULL = instance) */
        const char *url_template;  /* --url-template (NULL = http://{LABEL}) */
        unsigned max_age_s;        /* --max-age (0 = the library's default) */
        enum cli_stock stock_op;   /* stock [show] | set SPEC... | clear | nova-config */
        struct hpw_stock_target stock[HPW_STOCK_MAX_TARGETS]; /* stock set: the targets */
        size_t n_stock;
};

/* Parse ARGV with getopt_long: global options before the command (only
 * they), then the command, then its arguments mixed with its own options and
 * the global ones; "--opt V" and "--opt=V".  ENV_URL and ENV_TOKEN_FILE are
 * HPWARM_URL and HPWARM_TOKEN_FILE (may be NULL); options override them.
 * -EINVAL with a message in ERR on a usage error.  --help / --version set the
 * flags and skip command checks; with a command (or "help COMMAND"), ret->cmd
 * says whose help. */
int cli_parse(int argc, char *const *argv, const char *env_url, const char *env_token_file,
              struct cli *ret, char *err, size_t errlen);

/* One stock target as hpwarmd's --stock takes it: NODE:PAGESIZE:SIZE:COUNT
 * (e.g. 0:2M:4G:2); SIZE a positive multiple of PAGESIZE, COUNT at least 1.
 * -EINVAL with the reason in ERR (naming the part that is wrong); *ret is
 * written only on success (node, page_size_bytes, size_bytes, count; the
 * counters 0). */
int cli_parse_stock_spec(const char *s, struct hpw_stock_target *ret, char *err, size_t errlen);

/* Sizes: the grammar hpwarmd uses too (common/size.h). */
int cli_parse_size(const char *s, uint64_t *ret);
int cli_parse_page_size(const char *s, uint64_t *ret);
/* Why S is not a size (PAGE: a page size), saying what would work. */
void cli_size_explain(const char *s, bool page, char *buf, size_t len);
#define CLI_SIZE_HELP \
        "Sizes: digits and a binary unit, case as shown: K M G T (also KiB MiB GiB\n" \
        "TiB, and kB as the kernel writes it; all 1024-based): 1G, 512M, 2048kB.\n" \
        "Plain digits are bytes; page sizes need a unit."

/* URL as typed -> URL the library takes: "HOST:PORT" gets http://, "/PATH"
 * becomes unix:///PATH; http://, https:// and unix:// pass unchanged.
 * -EINVAL with the reason in ERR for another scheme or an empty URL. */
int cli_url_normalize(const char *in, char *out, size_t len, char *err, size_t errlen);
/* FMT's text into ERR; returns -EINVAL, so a parser says why and fails in
 * one statement (cli_core.c). */
int cli_usage_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* What to tell someone whose request to URL got no answer.  CONNECT_ERRNO is
 * what connect(2) to a unix socket said (0: not probed); CURL_MSG the
 * library's message.  Writes one line (no newline) naming the socket or URL
 * tried and the likely cause. */
void cli_unreachable_hint(const char *url, int connect_errno, const char *curl_msg, char *buf, size_t len);
/* Seconds, decimal with up to 3 fraction digits ("30", "0.5") -> ms. */
int cli_parse_seconds(const char *s, uint64_t *ret_ms);

int cli_exit_code(enum hpw_error err);
/* cli_exit_code, told by the last problem's slug whether a 429/503 is worth
 * trying again (CLI_EXIT_RETRY) or a permanent refusal the catalog does not
 * mark retryable, such as no-hugetlbfs (CLI_EXIT_FAILED). */
int cli_exit_for(enum hpw_error err, enum hpw_slug slug);

/* The handle's total timeout for C's command.  FLEET_QUERY: the per-host
 * bound of a fleet query, --timeout or CLI_DEFAULT_FLEET_TIMEOUT_MS, also for
 * --timeout 0 (a fleet query never waits without limit).  Otherwise one
 * request's deadline, retries included: --timeout (0 = none) or
 * CLI_DEFAULT_TIMEOUT_MS; this is also what the PUT of `fleet place --warm`
 * gets, exactly as `hpwarm warm` would. */
uint64_t cli_timeout_ms(const struct cli *c, bool fleet_query);

/* Exit code of a fleet query: 0 when every host answered; CLI_EXIT_PARTIAL
 * when some did and some did not; when none did, the code every host's error
 * shares (all 401/403 -> 6, all timed out -> 4), or CLI_EXIT_UNREACHABLE
 * when they differ (or there are no hosts). */
int cli_fleet_exit(const struct hpw_fleet *f);

/* "1.5 GiB", "512 MiB", "4 KiB", "17 B". */
void cli_format_bytes(uint64_t bytes, char *buf, size_t len);

/* One (host, node, page size) a fleet reported. */
struct place_cand {
        size_t host;               /* index in the hosts file */
        int node;
        uint64_t page_size;
        uint64_t available;        /* pages a new pool can get now (free on older daemons) */
        /* Ready stock files on this node of this page size and exactly the
         * requested size (0 when the host has no stock or did not say). */
        uint64_t stock_ready;
};
/* Why cli_place chose its candidate. */
enum place_why {
        PLACE_STOCK,               /* a ready stock file of the size: the pool is ready at once */
        PLACE_FREE,                /* enough free pages: the pool warms */
};
/* Choose where SIZE bytes of PAGE_SIZE pages go.  A candidate of that page
 * size with a ready stock file (stock_ready > 0) wins over any that only has
 * free pages, whatever its available count (the file already holds the
 * pages); among those, the most ready files, then the most available pages.
 * Otherwise the candidate with the most available pages among those with
 * enough: available, not free, since free still counts pages that warming
 * pools and unfaulted mappings will take, and a node chosen by free can
 * answer 409.  Ties go
 * to the earlier host, then the lower node id.  -ENOENT if nothing fits,
 * -EINVAL for a page size of 0.  *ret_index and *ret_why are written only on
 * success. */
int cli_place(const struct place_cand *c, size_t n, uint64_t size, uint64_t page_size, size_t *ret_index,
              enum place_why *ret_why);

/* Read a hosts file: one URL per line, blank lines and '#' comments
 * skipped.  Caller frees with cli_hosts_free. */
int cli_read_hosts(const char *path, char ***ret, size_t *ret_n);
void cli_hosts_free(char **hosts, size_t n);

/* Aligned text tables.  Cells are given as one tab-separated format. */
struct table;
struct table *table_new(const char *header_tsv);
void table_addf(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void table_print(const struct table *t, FILE *f);
void table_free(struct table *t);

/* Help for CMD (CMD_NONE: the overview with every command, the global
 * options and the exit codes). */
void cli_help(enum cli_cmd cmd, FILE *f);

/* The command ARGV names: its first word that is not an option (the values
 * of the global options before it skipped); CMD_NONE when there is none or
 * it names no command.  main() reads it to hand a command with its own
 * parser its ARGV (cli_options.c). */
enum cli_cmd cli_cmd_word(int argc, char **argv);
