/* cli_placement: the Placement publisher (publish.h), run by `hpwarm
 * placement sync` and `hpwarm publish --to placement`: this host's warm
 * hugepages as OpenStack Placement inventory (hpw_placement_sync does the
 * work, counting through offer.c).
 *
 * Its options are its own, parsed in the runner's getopt pass
 * (cli_publish.c), because its --token-file is Placement's (Keystone's)
 * token, not hpwarmd's: the daemon is reached as the other commands reach
 * it (--url, HPWARM_URL, HPWARM_TOKEN_FILE), and the OpenStack credentials
 * come from the OS_* variables every OpenStack service and client reads.
 * Secrets are never printed: messages name the variable or the file, not
 * what it holds.  --watch, the backoff and the logging are the runner's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "publish.h"

enum { O_PLACEMENT = PUBLISH_OPT_MIN, O_COMPUTE_NODE, O_TOKEN_FILE };

static const struct option options[] = {
        { "placement", required_argument, NULL, O_PLACEMENT },
        { "compute-node", required_argument, NULL, O_COMPUTE_NODE },
        { "token-file", required_argument, NULL, O_TOKEN_FILE },
        { 0 },
};

/* A run's options, its Keystone credentials and the Placement session. */
struct pl_cli {
        struct hpw_openstack_auth auth;
        struct hpw_placement_opts o;
        struct hpw_placement *p;
        char target[256];                 /* "compute node NAME", for the watch's log */
        publish_log_fn *log;              /* the runner's, as open() was handed it */
};

extern const struct publisher publisher_placement;

#define log_(...) log(&publisher_placement, __VA_ARGS__)

void cli_placement_help(FILE *f)
{
        fputs("Usage: hpwarm placement sync --placement URL --compute-node NAME [--token-file FILE] [--watch]\n"
              "       hpwarm publish --to placement --placement URL --compute-node NAME [...]\n"
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

/* What a sync did: one line per class with inventory or a write, and a
 * warning for every class held at its usage.  WATCH: only what changed. */
static void report(const struct hpw_placement_sync *r, bool watch, publish_log_fn *log)
{
        for (size_t i = 0; i < r->n; i++) {
                const struct hpw_placement_provider *v = r->providers[i];
                if (v->created)
                        log_("created %s (%s) under the compute node's provider %s", v->name, v->uuid,
                                        r->compute_node_uuid);
                for (size_t j = 0; j < v->n; j++) {
                        const struct hpw_placement_class *k = v->classes[j];
                        /* Watching: said once, when the write that kept it went out. */
                        if (k->kept && (!watch || v->written))
                                log_("warning: %s %s: %llu warm pages (ready %llu + in use %llu) are fewer than "
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
                if (!watch && !v->written) {
                        bool any = false;
                        for (size_t j = 0; j < v->n; j++)
                                any = any || v->classes[j]->total;
                        if (!any)
                                printf("%s\t-\tno warm pages\t\t\tunchanged\n", v->name);
                }
        }
        if (r->conflicts)
                log_("%u generation conflicts retried after re-reading", r->conflicts);
        fflush(stdout);
}

static const char *env(const char *name)
{
        const char *v = getenv(name);

        return v && v[0] ? v : NULL;
}

static void *pl_new(void)
{
        struct pl_cli *s = calloc(1, sizeof(*s));

        if (s)
                s->o = (struct hpw_placement_opts)HPW_PLACEMENT_OPTS_INIT;
        return s;
}

static int pl_option(void *s_, int id, const char *arg)
{
        struct pl_cli *s = s_;

        switch (id) {
        case O_PLACEMENT: s->o.placement_url = arg; break;
        case O_COMPUTE_NODE: s->o.compute_node = arg; break;
        case O_TOKEN_FILE: s->o.token_file = arg; break;
        }
        return 0;
}

static int pl_check(void *s_)
{
        struct pl_cli *s = s_;

        if (!s->o.compute_node) {
                fprintf(stderr, "hpwarm: placement sync: --compute-node NAME is required\n");
                return CLI_EXIT_USAGE;
        }
        return 0;
}

static int pl_open(void *s_, struct hpw *h, publish_log_fn *log)
{
        struct pl_cli *s = s_;
        enum hpw_error e;

        s->log = log;
        s->auth.auth_url = env("OS_AUTH_URL");
        s->auth.username = env("OS_USERNAME");
        s->auth.password = env("OS_PASSWORD");
        s->auth.project_name = env("OS_PROJECT_NAME");
        s->auth.user_domain_name = env("OS_USER_DOMAIN_NAME");
        s->auth.project_domain_name = env("OS_PROJECT_DOMAIN_NAME");
        s->auth.app_cred_id = env("OS_APPLICATION_CREDENTIAL_ID");
        s->auth.app_cred_secret = env("OS_APPLICATION_CREDENTIAL_SECRET");
        s->auth.interface = env("OS_INTERFACE");
        s->auth.region = env("OS_REGION_NAME");
        s->o.auth = &s->auth;
        if ((e = hpw_placement_new(h, &s->o, &s->p)) != HPW_OK) {
                fprintf(stderr, "hpwarm: placement sync: %s\n", hpw_last_message(h)[0] ? hpw_last_message(h)
                                                                                       : hpw_strerror(e));
                return e == HPW_E_IO ? CLI_EXIT_USAGE : cli_exit_code(e);
        }
        return 0;
}

static const char *pl_target(void *s_)
{
        struct pl_cli *s = s_;

        snprintf(s->target, sizeof(s->target), "compute node %s", s->o.compute_node);
        return s->target;
}

static enum hpw_error pl_publish(void *s_, bool reread, bool watch)
{
        struct pl_cli *s = s_;
        struct hpw_placement_sync *r = NULL;
        enum hpw_error e = hpw_placement_sync(s->p, reread, &r);

        if (e == HPW_OK)
                report(r, watch, s->log);
        hpw_placement_sync_free(r);
        return e;
}

static void pl_free(void *s_)
{
        struct pl_cli *s = s_;

        if (s)
                hpw_placement_free(s->p);
        free(s);
}

const struct publisher publisher_placement = {
        .name = "placement",
        .summary = "OpenStack Placement inventory, a child provider per NUMA node",
        .what = "placement sync",
        .command = (const char *const[]){ "placement", "sync", NULL },
        .options = options,
        .help = cli_placement_help,
        .new = pl_new,
        .option = pl_option,
        .check = pl_check,
        .open = pl_open,
        .target = pl_target,
        .publish = pl_publish,
        .free = pl_free,
};
