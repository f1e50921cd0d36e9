/* access: who may talk to hpwarmd over TCP, set up before anything listens.
 * Loads the bearer tokens (--token-file, --read-token-file) and the TLS
 * material (--tls-cert, --tls-key, --tls-client-ca), and refuses a TCP
 * listener that nobody guards: off loopback always, on loopback unless
 * --allow-unauthenticated-tcp.  The unix socket is guarded by its file mode
 * and needs none of this. */
#pragma once
#include <stddef.h>

struct auth;
struct options;

/* What main.c hands to http_config (tokens, PEM text) and frees at exit. */
struct access_ctx {
        struct auth *auth;
        char *cert, *key, *client_ca;
};

/* Fill A from O for the listeners: FDS (N_FDS sockets from the service
 * manager) or O's --listen.  0, or -1 after logging why (the daemon then
 * exits as for a usage error).  A holds what was loaded either way. */
int access_setup(const struct options *o, const int *fds, size_t n_fds, struct access_ctx *a);
/* Free what A holds (the key's memory is wiped). */
void access_done(struct access_ctx *a);
