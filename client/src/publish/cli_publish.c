/* cli_publish: `hpwarm publish --to NAME`, and the runner every fleet
 * publisher (publish.h) goes through, `hpwarm placement sync` included.
 *
 * The runner owns what publishers share: its options (--watch, --url,
 * --timeout, --help; the daemon is reached as the other commands reach it,
 * with HPWARM_URL and HPWARM_TOKEN_FILE), the daemon's handle, and the
 * loop.  A publisher's own options are parsed in the same getopt pass, so
 * they may come anywhere on the line.
 *
 * --watch keeps the target current until SIGTERM or SIGINT: it reads the
 * daemon's change generation, publishes, and parks in the daemon's long
 * poll (GET /v1/stock?wait=change&after=G) until the generation moves, then
 * publishes again, so between changes it makes one request every
 * WATCH_PARK_S and a change reaches the target within a second plus one
 * snapshot.  The target is read again every minute even when nothing
 * moved, to catch other writers (the park ends for it).  A daemon without
 * the generation (older) is asked once a second instead, said once.  An
 * outage of the target or of the daemon is retried with a doubling backoff
 * and logged once when it starts and once when it ends. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli_options.h"
#include "publish.h"

/* Each wait parked in the daemon's long poll (GET /v1/stock?wait=change)
 * lasts at most this: the daemon answers within a second of a change, so
 * this only bounds how long a connection sits idle, not the latency. */
#define WATCH_PARK_S 30
/* A daemon without the change generation (older) is asked this often
 * instead: a change reaches the target within it plus one snapshot. */
#define WATCH_INTERVAL_MS 1000
/* The target (and the daemon) are read again this often even when the
 * counts stand still: another writer may have changed what it holds. */
#define WATCH_REREAD_MS 60000
/* Backoff of a failing snapshot: from 1 s, doubling, at most this. */
#define WATCH_BACKOFF_MAX_MS 30000
/* One request's bound (connect included) unless --timeout says. */
#define PUBLISH_DEFAULT_TIMEOUT_MS 10000
/* The runner's options and a publisher's, in one getopt table. */
#define PUBLISH_MAX_OPTIONS 32

#define HPW_PUBLISHER(id) extern const struct publisher publisher_##id;
#include "publishers.def"
#undef HPW_PUBLISHER

/* The publishers, publishers.def's rows in order. */
static const struct publisher *const publishers[] = {
#define HPW_PUBLISHER(id) &publisher_##id,
#include "publishers.def"
#undef HPW_PUBLISHER
};
#define N_PUBLISHERS (sizeof(publishers) / sizeof(publishers[0]))

/* The runner's option ids (R_: not the other commands' O_ ids). */
enum { R_WATCH = 256, R_URL, R_TIMEOUT, R_HELP, R_TO };

static const struct option runner_options[] = {
        { "watch", no_argument, NULL, R_WATCH },
        { "url", required_argument, NULL, R_URL },
        { "timeout", required_argument, NULL, R_TIMEOUT },
        { "help", no_argument, NULL, R_HELP },
};
static const struct option to_option = { "to", required_argument, NULL, R_TO };

static volatile sig_atomic_t stop_signal;

/* The daemon handle a signal cancels: a parked long poll ends at once
 * (hpw_cancel only sets a flag, which a signal handler may do). */
static struct hpw *watched;

static void on_stop(int sig)
{
        stop_signal = sig;
        if (watched)
                hpw_cancel(watched);
}

static publish_log_fn publish_log;
static void publish_log(const struct publisher *p, const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "hpwarm %s: ", p->name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        fflush(stderr);
}

/* Sleep MS or until a stop signal. */
static void nap(uint64_t ms)
{
        struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

        while (!stop_signal && nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

static uint64_t mono_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *env(const char *name)
{
        const char *v = getenv(name);

        return v && v[0] ? v : NULL;
}

/* The daemon's change generation into *GEN; *HAS false from a daemon
 * that has none (then the watch polls).  A daemon without stock (404) has
 * nothing to wait for either. */
static enum hpw_error read_generation(struct hpw *h, uint64_t *gen, bool *has)
{
        struct hpw_stock *st = NULL;
        enum hpw_error e = hpw_stock_get(h, &st);

        *has = false;
        if (e == HPW_E_NOT_FOUND)
                return HPW_OK;
        if (e != HPW_OK)
                return e;
        *has = st->has_generation;
        *gen = st->generation;
        hpw_stock_free(st);
        return HPW_OK;
}

/* Park in the daemon's long poll until its generation leaves GEN (a
 * change: publish now), the target is due to be read again
 * (WATCH_REREAD_MS after LAST_READ), or a signal.  A failed wait returns
 * too: the snapshot that follows finds the outage and backs off. */
static void park_until_change(struct hpw *h, uint64_t gen, uint64_t last_read)
{
        while (!stop_signal) {
                uint64_t now = mono_ms(), due = last_read + WATCH_REREAD_MS;
                if (now >= due)
                        return;
                uint64_t s = (due - now + 999) / 1000;
                if (s > WATCH_PARK_S)
                        s = WATCH_PARK_S;
                struct hpw_stock *st = NULL;
                if (hpw_stock_wait_change(h, gen, (unsigned)s, &st) != HPW_OK)
                        return;
                bool moved = !st->has_generation || st->generation != gen;
                hpw_stock_free(st);
                if (moved)
                        return;
        }
}

/* Publish until a stop signal; returns the exit code (0). */
static int watch(const struct publisher *p, void *s, struct hpw *h, const char *url)
{
        struct sigaction sa = { .sa_handler = on_stop };
        uint64_t backoff = 0, last_read = 0, gen = 0;
        bool polling = false;     /* an older daemon: no change generation */
        char outage[512] = "";
        enum hpw_error e;

        sigemptyset(&sa.sa_mask);
        watched = h;
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        publish_log(p, "watching hpwarmd %s for %s", url, p->target(s));
        while (!stop_signal) {
                bool parked = false;
                /* The generation first, the snapshot's reads after: a
                 * change after this read moves it past GEN, and the wait
                 * below answers at once. */
                e = polling ? HPW_OK : read_generation(h, &gen, &parked);
                if (e == HPW_OK && !polling && !parked) {
                        polling = true;
                        publish_log(p, "hpwarmd %s says no change generation (older than it): asking it every %d ms",
                                        url, WATCH_INTERVAL_MS);
                }
                uint64_t now = mono_ms();
                bool reread = last_read == 0 || now - last_read >= WATCH_REREAD_MS;
                if (e == HPW_OK)
                        e = p->publish(s, reread, true);
                if (e == HPW_OK) {
                        if (outage[0])
                                publish_log(p, "synced again after: %s", outage);
                        outage[0] = '\0';
                        backoff = 0;
                        if (reread)
                                last_read = now;
                        if (polling)
                                nap(WATCH_INTERVAL_MS);
                        else
                                park_until_change(h, gen, last_read);
                        continue;
                }
                if (stop_signal)
                        break;
                /* Logged once per outage: a new message is a new outage
                 * (or a new cause of the same one). */
                const char *why = hpw_last_message(h)[0] ? hpw_last_message(h) : hpw_strerror(e);
                if (strcmp(outage, why) != 0) {
                        snprintf(outage, sizeof(outage), "%s", why);
                        publish_log(p, "%s; retrying with backoff until it succeeds", outage);
                }
                backoff = backoff ? backoff * 2 : 1000;
                if (backoff > WATCH_BACKOFF_MAX_MS)
                        backoff = WATCH_BACKOFF_MAX_MS;
                last_read = 0;   /* after an outage, read the target afresh */
                nap(backoff);
        }
        publish_log(p, "stopped by signal %d", (int)stop_signal);
        return CLI_EXIT_OK;
}

/* The daemon's handle for URL (NULL: HPWARM_URL, else the default), with
 * HPWARM_TOKEN_FILE and one bound of TIMEOUT_MS per request. */
static int open_daemon(const char *url, uint64_t timeout_ms, char *nurl, size_t nurl_len, struct hpw **ret)
{
        const char *dtoken = env("HPWARM_TOKEN_FILE");
        char err[256];
        struct hpw *h = NULL;
        enum hpw_error e;

        if (cli_url_normalize(url ? url : CLI_DEFAULT_URL, nurl, nurl_len, err, sizeof(err)) < 0) {
                fprintf(stderr, "hpwarm: %s\n", err);
                return CLI_EXIT_USAGE;
        }
        if ((e = hpw_new(nurl, &h)) != HPW_OK) {
                fprintf(stderr, "hpwarm: --url %s: %s\n", nurl, hpw_strerror(e));
                return CLI_EXIT_USAGE;
        }
        if (dtoken && (e = hpw_set_token_file(h, dtoken)) != HPW_OK) {
                fprintf(stderr, "hpwarm: HPWARM_TOKEN_FILE: %s (%s)\n", hpw_strerror(e), hpw_last_message(h));
                hpw_free(h);
                return CLI_EXIT_USAGE;
        }
        hpw_set_timeouts(h, timeout_ms < CLI_DEFAULT_CONNECT_MS ? timeout_ms : CLI_DEFAULT_CONNECT_MS, timeout_ms);
        /* One attempt per request: --watch has its own backoff, and one
         * snapshot must fail within seconds. */
        hpw_set_retry(h, 1, 100, 100);
        *ret = h;
        return CLI_EXIT_OK;
}

/* Options and words of ARGV into S and the runner's settings; -1 when
 * the run is to go on, else the exit code (help printed, or a usage error
 * said). */
static int parse(const struct publisher *p, void *s, const char *cmd, const char *const *words, int argc,
                 char **argv, bool *watch_, const char **url, uint64_t *timeout_ms)
{
        struct option opts[PUBLISH_MAX_OPTIONS + 1];
        size_t n = 0;
        int c, rc;

        for (size_t i = 0; i < sizeof(runner_options) / sizeof(runner_options[0]); i++)
                opts[n++] = runner_options[i];
        if (strcmp(cmd, "publish") == 0)
                opts[n++] = to_option;
        for (const struct option *o = p->options; o && o->name && n < PUBLISH_MAX_OPTIONS; o++)
                opts[n++] = *o;
        opts[n] = (struct option){ 0 };

        opterr = 0;
        optind = 1;
        /* GNU getopt moves the words after the options: options may come
         * before the command's words, between them or after. */
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
                switch (c) {
                case R_WATCH: *watch_ = true; break;
                case R_URL: *url = optarg; break;
                case R_TO: break;   /* cli_publish_main chose P by it */
                case R_TIMEOUT: {
                        char *end;
                        unsigned long sec;
                        errno = 0;
                        sec = strtoul(optarg, &end, 10);
                        if (errno || end == optarg || *end || sec == 0 || sec > 3600 || optarg[0] == '-') {
                                fprintf(stderr, "hpwarm: %s: --timeout takes whole seconds, 1 to 3600\n", cmd);
                                return CLI_EXIT_USAGE;
                        }
                        *timeout_ms = sec * 1000;
                        break;
                }
                case 'h':
                case R_HELP:
                        p->help(stdout);
                        return CLI_EXIT_OK;
                default:
                        if (c >= PUBLISH_OPT_MIN) {
                                if ((rc = p->option(s, c, optarg)) != 0)
                                        return rc;
                                break;
                        }
                        fprintf(stderr, "hpwarm: %s: unknown option or missing value: '%s' (hpwarm %s --help)\n", cmd,
                                argv[optind - 1], cmd);
                        return CLI_EXIT_USAGE;
                }
        }
        for (size_t i = 0; words[i] || optind + (int)i < argc; i++)
                if (!words[i] || optind + (int)i >= argc || strcmp(argv[optind + i], words[i]) != 0) {
                        char want[128] = "";
                        for (size_t j = 0; words[j]; j++)
                                snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s", j ? " " : "",
                                         words[j]);
                        fprintf(stderr, "hpwarm: %s: expected '%s' (hpwarm %s --help)\n", cmd, want, cmd);
                        return CLI_EXIT_USAGE;
                }
        return -1;
}

/* Run P as the command CMD ("publish", or P's own command word), whose
 * words after the options must be WORDS (NULL-ended): options, the
 * daemon's handle, P's session, then one snapshot or --watch.  Returns
 * the exit code. */
static int run(const struct publisher *p, const char *cmd, const char *const *words, int argc, char **argv)
{
        void *s = p->new();
        struct hpw *h = NULL;
        const char *url = env("HPWARM_URL");
        char nurl[1024];
        uint64_t timeout_ms = PUBLISH_DEFAULT_TIMEOUT_MS;
        bool watch_ = false;
        enum hpw_error e;
        int rc;

        if (!s) {
                fprintf(stderr, "hpwarm: %s: %s\n", cmd, hpw_strerror(HPW_E_NOMEM));
                return CLI_EXIT_FAILED;
        }
        if ((rc = parse(p, s, cmd, words, argc, argv, &watch_, &url, &timeout_ms)) >= 0 ||
            (rc = p->check(s)) != 0 || (rc = open_daemon(url, timeout_ms, nurl, sizeof(nurl), &h)) != 0)
                goto out;
        if ((rc = p->open(s, h, publish_log)) != 0)
                goto out;
        if (watch_) {
                rc = watch(p, s, h, nurl);
                goto out;
        }
        e = p->publish(s, true, false);
        if (e != HPW_OK)
                fprintf(stderr, "hpwarm: %s: %s\n", p->what, hpw_last_message(h)[0] ? hpw_last_message(h)
                                                                                      : hpw_strerror(e));
        rc = cli_exit_code(e);
out:
        p->free(s);
        hpw_free(h);
        return rc;
}

void cli_publish_help(FILE *f)
{
        fputs("Usage: hpwarm publish --to NAME [its options] [--watch]\n"
              "\n"
              "Publish this host's warm hugepages to a fleet scheduler: per NUMA node and\n"
              "page size, the pages ready, in use and warming (docs/OPENSTACK.md).\n"
              "\n"
              "Publishers (hpwarm publish --to NAME --help: its options and exit codes):\n",
              f);
        for (size_t i = 0; i < N_PUBLISHERS; i++)
                fprintf(f, "  %-20s %s\n", publishers[i]->name, publishers[i]->summary);
        fputs("\n"
              "Options:\n"
              "  --to NAME            the publisher\n"
              "  --watch              keep it current until SIGTERM: a change of the stock\n"
              "                       or pools is published within 2 s; failures are\n"
              "                       retried with backoff and logged once per outage\n"
              "  --url URL            hpwarmd (env HPWARM_URL; token: HPWARM_TOKEN_FILE)\n"
              "  --timeout S          bound of each request, seconds (default 10)\n"
              "  --help               this text\n"
              "\n"
              "Exit codes: the publisher's; 2 usage.  --watch exits 0 on SIGTERM.\n",
              f);
}

/* The publisher --to names in ARGV (--to NAME or --to=NAME); NULL with
 * *RET_NAME NULL when there is none. */
static const struct publisher *chosen(int argc, char **argv, const char **ret_name)
{
        *ret_name = NULL;
        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--") == 0)
                        break;
                if (strcmp(argv[i], "--to") == 0 && i + 1 < argc)
                        *ret_name = argv[i + 1];
                else if (strncmp(argv[i], "--to=", 5) == 0)
                        *ret_name = argv[i] + 5;
        }
        for (size_t i = 0; *ret_name && i < N_PUBLISHERS; i++)
                if (strcmp(publishers[i]->name, *ret_name) == 0)
                        return publishers[i];
        return NULL;
}

int cli_publish_main(int argc, char **argv)
{
        static const char *const words[] = { "publish", NULL };
        const char *name;
        const struct publisher *p = chosen(argc, argv, &name);

        if (!p) {
                for (int i = 1; !name && i < argc; i++)
                        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                                cli_publish_help(stdout);
                                return CLI_EXIT_OK;
                        }
                fprintf(stderr, "hpwarm: publish: %s%s%s; one of:", name ? "no publisher '" : "--to NAME is required",
                        name ? name : "", name ? "'" : "");
                for (size_t i = 0; i < N_PUBLISHERS; i++)
                        fprintf(stderr, " %s", publishers[i]->name);
                fputs(" (hpwarm publish --help)\n", stderr);
                return CLI_EXIT_USAGE;
        }
        return run(p, "publish", words, argc, argv);
}

int cli_publish_command_main(int argc, char **argv)
{
        enum cli_cmd word = cli_cmd_word(argc, argv);

        for (size_t i = 0; i < N_PUBLISHERS; i++) {
                const struct publisher *p = publishers[i];
                const struct cmddef *d = p->command ? cli_find_cmd(p->command[0]) : NULL;
                if (d && d->cmd == word)
                        return run(p, p->command[0], p->command, argc, argv);
        }
        fprintf(stderr, "hpwarm: no publisher has this command\n");   /* a row of cli_options.json without one */
        return CLI_EXIT_USAGE;
}
