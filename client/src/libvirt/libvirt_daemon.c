/* libvirt_daemon: the hook's requests to hpwarmd through libhpwarm (the
 * real side of struct lv_daemon, libvirt_hook.h).
 *
 * Each request gets the CLI's semantics, so the hook's rules read the same
 * exit codes the shell hook read from `hpwarm`: warm is PUT then a wait
 * under one deadline (warm --wait --timeout), release with ignore_missing
 * accepts a pool that is gone, and a failure's message is the line the CLI
 * would print (hpwarm: WHAT: ERROR (server's message) [slug]). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "hpwarm.h"
#include "libvirt_daemon.h"

static uint64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static const char *const verbs[] = { [LV_WARM] = "warm", [LV_STATUS] = "status", [LV_CLAIM] = "claim",
                                     [LV_RELEASE] = "release" };

/* The answer to a failed call: the CLI's exit code and its message. */
static void failed(struct hpw *h, const struct lv_call *c, enum hpw_error err, struct lv_answer *a)
{
        const struct hpw_problem *p = hpw_last_problem(h);
        const char *m = hpw_last_message(h);
        size_t n;

        a->rc = cli_exit_for(err, hpw_last_slug(h));
        n = (size_t)snprintf(a->out, sizeof(a->out), "hpwarm: %s %s: %s", verbs[c->kind], c->pool, hpw_strerror(err));
        if (n < sizeof(a->out) && m && m[0])
                n += (size_t)snprintf(a->out + n, sizeof(a->out) - n, " (%s)", m);
        if (n < sizeof(a->out) && p && p->slug[0])
                snprintf(a->out + n, sizeof(a->out) - n, " [%s]", p->slug);
}

static void take_pool(const struct hpw_pool *p, struct lv_answer *a)
{
        snprintf(a->path, sizeof(a->path), "%s", p->path);
        snprintf(a->label, sizeof(a->label), "%s", p->label);
        a->claimed = p->claimed;
}

static int open_handle(struct lv_hpw *d, const struct lv_settings *s, char *why, size_t len)
{
        char u[2048];
        enum hpw_error e;

        if (cli_url_normalize(s->url[0] ? s->url : CLI_DEFAULT_URL, u, sizeof(u), why, len) < 0)
                return -1;
        if ((e = hpw_new(u, &d->h))) {
                snprintf(why, len, "HPWARM_URL=%s: %s", u, hpw_strerror(e));
                return -1;
        }
        if (s->token_file[0] && (e = hpw_set_token_file(d->h, s->token_file))) {
                snprintf(why, len, "HPWARM_TOKEN_FILE=%s: %s", s->token_file, hpw_strerror(e));
                hpw_free(d->h);
                d->h = NULL;
                return -1;
        }
        return 0;
}

static void call(void *ud, const struct lv_settings *s, const struct lv_call *c, struct lv_answer *a)
{
        struct lv_hpw *d = ud;
        struct hpw_pool *p = NULL;
        enum hpw_error err = HPW_OK;
        uint64_t start = now_ms(), total = (uint64_t)c->timeout_s * 1000;

        /* The handle is made at the first request: the settings name it,
         * and a domain the hook leaves alone never needs one. */
        if (!d->h && open_handle(d, s, a->out, sizeof(a->out)) < 0) {
                a->rc = CLI_EXIT_USAGE;
                return;
        }

        hpw_set_timeouts(d->h, CLI_DEFAULT_CONNECT_MS, total);
        switch (c->kind) {
        case LV_WARM: {
                struct hpw_warm_request req = HPW_WARM_REQUEST_INIT;
                uint64_t ps = 0, spent;

                if (cli_parse_page_size(c->page_size, &ps) < 0) {
                        a->rc = CLI_EXIT_USAGE;
                        snprintf(a->out, sizeof(a->out), "hpwarm: --page-size %s: not a page size", c->page_size);
                        return;
                }
                req.node = atoi(c->node);
                req.size_bytes = c->size;
                req.page_size = ps;
                req.ttl_seconds = c->ttl ? c->ttl_s : 0;
                req.reserve = true;
                req.label = c->label;
                req.file_owned = c->file_owned;
                req.file_uid = (uint32_t)c->uid;
                req.file_gid = (uint32_t)c->gid;
                err = hpw_warm(d->h, c->pool, &req, &p, NULL);
                hpw_pool_free(p);
                p = NULL;
                if (err)
                        break;
                /* One deadline for the whole warm, as the CLI's --timeout. */
                spent = now_ms() - start;
                err = hpw_wait(d->h, c->pool, spent < total ? total - spent : 1, NULL, NULL, &p);
                break;
        }
        case LV_STATUS:
                err = hpw_pool(d->h, c->pool, &p);
                if (!err)
                        take_pool(p, a);
                break;
        case LV_CLAIM:
                err = c->pid > 0 ? hpw_claim_pid(d->h, c->pool, (int)c->pid, &p) : hpw_claim(d->h, c->pool, &p);
                break;
        case LV_RELEASE:
                err = hpw_release(d->h, c->pool);
                if (err == HPW_E_NOT_FOUND && c->ignore_missing)
                        err = HPW_OK;
                break;
        }
        hpw_pool_free(p);
        if (err)
                failed(d->h, c, err, a);
}

void lv_hpw_init(struct lv_hpw *d)
{
        d->h = NULL;
        d->daemon.call = call;
        d->daemon.ud = d;
}

void lv_hpw_close(struct lv_hpw *d)
{
        hpw_free(d->h);
        d->h = NULL;
}

int lv_cli_main(int argc, char **argv)
{
        struct lv_hpw d;
        int i = 1, rc;

        /* Global options before the word are the CLI's; the hook takes its
         * settings from its defaults file, as the shell hook did. */
        while (i < argc && strcmp(argv[i], "libvirt-hook") != 0)
                i++;
        for (int j = i + 1; j < argc; j++) {
                if (strcmp(argv[j], "--help") == 0 || strcmp(argv[j], "-h") == 0) {
                        cli_help(CMD_LIBVIRT_HOOK, stdout);
                        return 0;
                }
        }
        if (argc - i < 4 || argc - i > 5) {
                fprintf(stderr, "hpwarm: libvirt-hook takes DOMAIN OPERATION SUB-OPERATION [EXTRA] "
                                "(the domain XML on stdin)\n");
                return CLI_EXIT_USAGE;
        }
        lv_hpw_init(&d);
        rc = lv_hook_main(argc - i, argv + i, &d.daemon);
        lv_hpw_close(&d);
        return rc;
}
