/* cli_placement: `hpwarm placement sync`, this host's warm hugepages as
 * OpenStack Placement inventory (hpw_placement_sync does the work).
 *
 * Its own small parser rather than rows in cli_parse.c's tables, because
 * its --token-file is Placement's (Keystone's) token, not hpwarmd's: the
 * daemon is reached as the other commands reach it (--url, HPWARM_URL,
 * HPWARM_TOKEN_FILE), and the OpenStack credentials come from the OS_*
 * variables every OpenStack service and client reads.  Secrets are never
 * printed: messages name the variable or the file, not what it holds.
 *
 * --watch keeps Placement current until SIGTERM or SIGINT: it reads the
 * daemon's change generation, syncs, and parks in the daemon's long poll
 * (GET /v1/stock?wait=change&after=G) until the generation moves, then syncs
 * again, so between changes it makes one request every WATCH_PARK_S and
 * a change reaches Placement within a second plus one sync.  Placement is
 * read again every minute even when nothing moved, to catch other writers
 * (the park ends for it).  A daemon without the generation (older) is
 * asked once a second instead, said once.  An outage of Placement or of
 * the daemon is retried with a doubling backoff and logged once when it
 * starts and once when it ends. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* Each wait parked in the daemon's long poll (GET /v1/stock?wait=change)
 * lasts at most this: the daemon answers within a second of a change, so
 * this only bounds how long a connection sits idle, not the latency. */
#define WATCH_PARK_S 30
/* A daemon without the change generation (older) is asked this often
 * instead: a change reaches Placement within it plus one sync. */
#define WATCH_INTERVAL_MS 1000
/* Placement (and the daemon) are read again this often even when the
 * counts stand still: another writer may have changed the inventory. */
#define WATCH_REREAD_MS 60000
/* Backoff of a failing sync: from 1 s, doubling, at most this. */
#define WATCH_BACKOFF_MAX_MS 30000
/* One request's bound (connect included) unless --timeout says. */
#define PL_DEFAULT_TIMEOUT_MS 10000

enum { O_PLACEMENT = 256, O_COMPUTE_NODE, O_TOKEN_FILE, O_WATCH, O_URL, O_TIMEOUT, O_HELP };

static const struct option longopts[] = {
        { "placement", required_argument, NULL, O_PLACEMENT },
        { "compute-node", required_argument, NULL, O_COMPUTE_NODE },
        { "token-file", required_argument, NULL, O_TOKEN_FILE },
        { "watch", no_argument, NULL, O_WATCH },
        { "url", required_argument, NULL, O_URL },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "help", no_argument, NULL, O_HELP },
        { 0 },
};

void cli_placement_help(FILE *f)
{
        fputs("Usage: hpwarm placement sync --placement URL --compute-node NAME [--token-file FILE] [--watch]\n"
              "\n"
              "Publish this host's warm hugepages as OpenStack Placement inventory.\n"
              "\n"
              "One child resource provider per NUMA node, NAME_hpwarm_numaN, under the\n"
              "compute node's provider NAME (the one nova-compute made; without it the\n"
              "command exits 1 and creates nothing), with CUSTOM_HPWARM_<SIZE> per page\n"
              "size (2M, 1G, ...) in pages: total = ready stock pages + pages of pools\n"
              "handed out from stock + reserved; reserved = stock still warming or\n"
              "recycling.  A capacity below what allocations use is held at the usage\n"
              "(logged).  Nothing is written when Placement already holds the counts;\n"
              "a 409 generation conflict is retried after re-reading.  See\n"
              "docs/OPENSTACK.md.\n"
              "\n"
              "Options:\n"
              "  --placement URL      Placement's endpoint (default: Keystone's catalog)\n"
              "  --compute-node NAME  the compute node's provider name\n"
              "  --token-file FILE    a Keystone token for Placement (hpwarmd's token-file\n"
              "                       format); else Keystone v3 through OS_AUTH_URL with\n"
              "                       OS_USERNAME, OS_PASSWORD, OS_PROJECT_NAME,\n"
              "                       OS_USER_DOMAIN_NAME, OS_PROJECT_DOMAIN_NAME or\n"
              "                       OS_APPLICATION_CREDENTIAL_ID/_SECRET (OS_INTERFACE,\n"
              "                       OS_REGION_NAME pick the endpoint); else no token\n"
              "  --watch              keep it current until SIGTERM: a change of the stock\n"
              "                       or pools reaches Placement within 2 s; failures are\n"
              "                       retried with backoff and logged once per outage\n"
              "  --url URL            hpwarmd (env HPWARM_URL; token: HPWARM_TOKEN_FILE)\n"
              "  --timeout S          bound of each request, seconds (default 10)\n"
              "  --help               this text\n"
              "\n"
              "Exit codes: 0 synced; 1 failed (no such compute node, ...); 2 usage;\n"
              "3 unreachable; 4 timed out; 5 conflicts outlasted the retries;\n"
              "6 Keystone or Placement refused the credentials.  --watch exits 0 on\n"
              "SIGTERM.\n",
              f);
}

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

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
        va_list ap;

        fputs("hpwarm placement: ", stderr);
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

/* What a sync did: one line per class with inventory or a write, and a
 * warning for every class held at its usage.  WATCH: only what changed. */
static void report(const struct hpw_placement_sync *r, bool watch)
{
        for (size_t i = 0; i < r->n; i++) {
                const struct hpw_placement_provider *v = r->providers[i];
                if (v->created)
                        logf_("created %s (%s) under the compute node's provider %s", v->name, v->uuid,
                              r->compute_node_uuid);
                for (size_t j = 0; j < v->n; j++) {
                        const struct hpw_placement_class *k = v->classes[j];
                        /* Watching: said once, when the write that kept it went out. */
                        if (k->kept && (!watch || v->written))
                                logf_("warning: %s %s: %llu warm pages (ready %llu + in use %llu) are fewer than "
                                      "the %u pages allocations use: capacity kept at %u (total %u, reserved %u)",
                                      v->name, k->resource_class,
                                      (unsigned long long)(k->ready + k->in_use), (unsigned long long)k->ready,
                                      (unsigned long long)k->in_use, k->used, k->total - k->reserved, k->total,
                                      k->reserved);
                        if (watch && !v->written)
                                continue;
                        if (!watch && !k->total && !v->written)
                                continue;
                        printf("%s\t%s\ttotal %u\treserved %u\tused %u\t%s\n", v->name, k->resource_class, k->total,
                               k->reserved, k->used, v->written ? "written" : "unchanged");
                }
                if (!watch && v->n && !v->written) {
                        bool any = false;
                        for (size_t j = 0; j < v->n; j++)
                                any = any || v->classes[j]->total;
                        if (!any)
                                printf("%s\t-\tno warm pages\t\t\tunchanged\n", v->name);
                }
        }
        if (r->conflicts)
                logf_("%u generation conflicts retried after re-reading", r->conflicts);
        fflush(stdout);
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
 * change: sync now), Placement is due to be read again (WATCH_REREAD_MS
 * after LAST_READ), or a signal.  A failed wait returns too: the sync that
 * follows finds the outage and backs off. */
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

int cli_placement_main(int argc, char **argv)
{
        struct hpw_openstack_auth auth = { 0 };
        struct hpw_placement_opts o = HPW_PLACEMENT_OPTS_INIT;
        struct hpw_placement *p = NULL;
        struct hpw *h = NULL;
        const char *url = env("HPWARM_URL"), *dtoken = env("HPWARM_TOKEN_FILE");
        char nurl[1024], err[256];
        uint64_t timeout_ms = PL_DEFAULT_TIMEOUT_MS;
        bool watch = false;
        enum hpw_error e;
        int c, rc;

        opterr = 0;
        optind = 1;
        /* GNU getopt moves the words after the options: options may come
         * before "placement", between it and "sync", or after. */
        while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
                switch (c) {
                case O_PLACEMENT: o.placement_url = optarg; break;
                case O_COMPUTE_NODE: o.compute_node = optarg; break;
                case O_TOKEN_FILE: o.token_file = optarg; break;
                case O_WATCH: watch = true; break;
                case O_URL: url = optarg; break;
                case O_TIMEOUT: {
                        char *end;
                        unsigned long s;
                        errno = 0;
                        s = strtoul(optarg, &end, 10);
                        if (errno || end == optarg || *end || s == 0 || s > 3600 || optarg[0] == '-') {
                                fprintf(stderr, "hpwarm: placement: --timeout takes whole seconds, 1 to 3600\n");
                                return CLI_EXIT_USAGE;
                        }
                        timeout_ms = s * 1000;
                        break;
                }
                case 'h':
                case O_HELP:
                        cli_placement_help(stdout);
                        return CLI_EXIT_OK;
                default:
                        fprintf(stderr, "hpwarm: placement: unknown option or missing value: '%s' (hpwarm placement --help)\n",
                                argv[optind - 1]);
                        return CLI_EXIT_USAGE;
                }
        }
        if (argc - optind != 2 || strcmp(argv[optind], "placement") != 0 || strcmp(argv[optind + 1], "sync") != 0) {
                fprintf(stderr, "hpwarm: placement: expected 'placement sync' (hpwarm placement --help)\n");
                return CLI_EXIT_USAGE;
        }
        if (!o.compute_node) {
                fprintf(stderr, "hpwarm: placement sync: --compute-node NAME is required\n");
                return CLI_EXIT_USAGE;
        }
        auth.auth_url = env("OS_AUTH_URL");
        auth.username = env("OS_USERNAME");
        auth.password = env("OS_PASSWORD");
        auth.project_name = env("OS_PROJECT_NAME");
        auth.user_domain_name = env("OS_USER_DOMAIN_NAME");
        auth.project_domain_name = env("OS_PROJECT_DOMAIN_NAME");
        auth.app_cred_id = env("OS_APPLICATION_CREDENTIAL_ID");
        auth.app_cred_secret = env("OS_APPLICATION_CREDENTIAL_SECRET");
        auth.interface = env("OS_INTERFACE");
        auth.region = env("OS_REGION_NAME");
        o.auth = &auth;

        if (cli_url_normalize(url ? url : CLI_DEFAULT_URL, nurl, sizeof(nurl), err, sizeof(err)) < 0) {
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
        /* One attempt per request: --watch has its own backoff, and a
         * one-shot sync must fail within seconds. */
        hpw_set_retry(h, 1, 100, 100);
        if ((e = hpw_placement_new(h, &o, &p)) != HPW_OK) {
                fprintf(stderr, "hpwarm: placement sync: %s\n", hpw_last_message(h)[0] ? hpw_last_message(h)
                                                                                       : hpw_strerror(e));
                hpw_free(h);
                return e == HPW_E_IO ? CLI_EXIT_USAGE : cli_exit_code(e);
        }

        if (!watch) {
                struct hpw_placement_sync *r = NULL;
                e = hpw_placement_sync(p, true, &r);
                if (e == HPW_OK)
                        report(r, false);
                else
                        fprintf(stderr, "hpwarm: placement sync: %s\n",
                                hpw_last_message(h)[0] ? hpw_last_message(h) : hpw_strerror(e));
                rc = cli_exit_code(e);
                hpw_placement_sync_free(r);
                hpw_placement_free(p);
                hpw_free(h);
                return rc;
        }

        {
                struct sigaction sa = { .sa_handler = on_stop };
                uint64_t backoff = 0, last_read = 0, gen = 0;
                bool polling = false;     /* an older daemon: no change generation */
                char outage[512] = "";
                sigemptyset(&sa.sa_mask);
                watched = h;
                sigaction(SIGTERM, &sa, NULL);
                sigaction(SIGINT, &sa, NULL);
                logf_("watching hpwarmd %s for compute node %s", nurl, o.compute_node);
                while (!stop_signal) {
                        struct hpw_placement_sync *r = NULL;
                        bool parked = false;
                        /* The generation first, the sync's reads after: a
                         * change after this read moves it past GEN, and the
                         * wait below answers at once. */
                        e = polling ? HPW_OK : read_generation(h, &gen, &parked);
                        if (e == HPW_OK && !polling && !parked) {
                                polling = true;
                                logf_("hpwarmd %s says no change generation (older than it): asking it every %d ms",
                                      nurl, WATCH_INTERVAL_MS);
                        }
                        uint64_t now = mono_ms();
                        bool reread = last_read == 0 || now - last_read >= WATCH_REREAD_MS;
                        if (e == HPW_OK)
                                e = hpw_placement_sync(p, reread, &r);
                        if (e == HPW_OK) {
                                if (outage[0])
                                        logf_("synced again after: %s", outage);
                                outage[0] = '\0';
                                backoff = 0;
                                if (reread)
                                        last_read = now;
                                report(r, true);
                                hpw_placement_sync_free(r);
                                if (polling)
                                        nap(WATCH_INTERVAL_MS);
                                else
                                        park_until_change(h, gen, last_read);
                                continue;
                        }
                        if (stop_signal)
                                break;
                        /* Logged once per outage: a new message is a new
                         * outage (or a new cause of the same one). */
                        const char *why = hpw_last_message(h)[0] ? hpw_last_message(h) : hpw_strerror(e);
                        if (strcmp(outage, why) != 0) {
                                snprintf(outage, sizeof(outage), "%s", why);
                                logf_("%s; retrying with backoff until it succeeds", outage);
                        }
                        backoff = backoff ? backoff * 2 : 1000;
                        if (backoff > WATCH_BACKOFF_MAX_MS)
                                backoff = WATCH_BACKOFF_MAX_MS;
                        last_read = 0;   /* after an outage, read Placement afresh */
                        nap(backoff);
                }
                logf_("stopped by signal %d", (int)stop_signal);
        }
        hpw_placement_free(p);
        hpw_free(h);
        return CLI_EXIT_OK;
}
