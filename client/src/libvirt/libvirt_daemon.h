/* libvirt_daemon: struct lv_daemon over libhpwarm (libvirt_daemon.c). */
#pragma once
#include <stddef.h>

#include "libvirt_hook.h"

struct hpw;

struct lv_hpw {
        struct lv_daemon daemon;
        struct hpw *h;
};

/* D's daemon asks hpwarmd at the settings' HPWARM_URL (default: the CLI's
 * socket) with HPWARM_TOKEN_FILE; the handle is made at the first request. */
void lv_hpw_init(struct lv_hpw *d);
void lv_hpw_close(struct lv_hpw *d);

/* hpwarm libvirt-hook (its row in client/cli_options.json names it). */
int lv_cli_main(int argc, char **argv);
