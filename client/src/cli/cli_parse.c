/* cli_parse: the hpwarm command line's words -> struct cli.
 *
 * Argument parsing is getopt_long over the option table (cli_options.c),
 * each option saying which commands take it; global options are accepted
 * before the command and after it, a command's own options only after it.
 * So "hpwarm warm x --size 1G --wait --timeout 60" and "hpwarm --timeout 60
 * warm x ..." mean the same, while "hpwarm --node 0 warm x" is refused with
 * a hint.  Only after the whole line is read are the per-command
 * requirements checked, so error messages name what is missing.  Pure: no
 * I/O. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_options.h"
#include "internal.h"
#include "size.h"

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

/* stock [show] | set SPEC... | clear | nova-config: POS[0..N) are the
 * words after "stock".  Every SPEC is checked here, so a bad one sends
 * nothing. */
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
        if (strcmp(pos[0], "nova-config") == 0) {
                c->stock_op = STOCK_NOVA_CONFIG;
                if (n > 1)
                        return cli_usage_err(err, errlen, "stock nova-config: takes no arguments (got '%s')", pos[1]);
                return 0;
        }
        if (strcmp(pos[0], "set") != 0)
                return cli_usage_err(err, errlen, "stock: expected show, set, clear or nova-config, not '%s'", pos[0]);
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
                struct hpw_elastic_policy *e = &c->elastic_policy;
                uint64_t *out = id == O_MIN ? &e->min : id == O_MAX ? &e->max : id == O_HEADROOM ? &e->headroom
                                                                                                : &e->idle_seconds;
                if (parse_uint(v, UINT32_MAX, out) < 0)
                        return cli_usage_err(err, errlen, "--%s: not a number of %s: '%s'", cli_opt_by_id(id)->name,
                                             id == O_IDLE ? "seconds" : "pages", v);
                if (id == O_MAX)
                        c->elastic_max_set = true;
                if (id == O_IDLE)
                        c->elastic_idle_set = true;
                c->elastic_opts = true;
                break;
        }
        case O_VMM:
                if (!(c->vmm = hpw_vmm_find(v, true))) {
                        char names[256];
                        hpw_vmm_names(names, sizeof(names), ", ", " or ", false);
                        return cli_usage_err(err, errlen, "--vmm: expected %s, not '%s'", names, v);
                }
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


/* getopt_long said '?' or ':' for the word before OPTIND: say why, and
 * what would work. */
static int opt_error(int rc, const char *word, const char *cmdname, char *err, size_t errlen)
{
        const struct optdef *o = cli_opt_by_word(word);
        const struct optdef *id = cli_opt_by_id(optopt);

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
        struct option lo[CLI_N_OPTS_MAX + 1];
        /* handoff: up to 64 names; stock set: "set" and up to 64 specs (one
         * more is read, to say "at most 64"). */
        const char *pos[2 + (HPW_HANDOFF_MAX_POOLS > HPW_STOCK_MAX_TARGETS ? HPW_HANDOFF_MAX_POOLS
                                                                            : HPW_STOCK_MAX_TARGETS)];
        size_t npos = 0;
        const struct cmddef *d;
        char *sub[256];          /* the command's words; more is a usage error */
        int subc, r, o;

        err[0] = '\0';
        cli_longopts(CMD_NONE, lo);
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
        d = cli_find_cmd(argv[optind]);
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
        cli_longopts(d->cmd, lo);
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
                const struct cmddef *h = npos ? cli_find_cmd(pos[0]) : NULL;
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
                if (c.cmd == CMD_HANDOFF && !c.vmm) {
                        char names[256];
                        hpw_vmm_names(names, sizeof(names), "|", "|", false);
                        return cli_usage_err(err, errlen, "handoff: --vmm %s is required", names);
                }
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
                        if (c.n_as && c.vmm->as_refused) {
                                char names[256];
                                hpw_vmm_names(names, sizeof(names), ", ", " and ", true);
                                return cli_usage_err(err, errlen, "handoff: --as is for %s; %s", names,
                                                     c.vmm->as_refused);
                        }
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

