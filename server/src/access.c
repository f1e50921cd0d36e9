/* access: tokens, TLS material and the check that a TCP listener is
 * guarded (see access.h).  Every refusal is logged here, once, with the flag
 * it is about; main.c only turns it into the exit code. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "auth.h"
#include "http.h"
#include "log.h"
#include "options.h"
#include "tls.h"

void access_done(struct access_ctx *a)
{
        auth_free(a->auth);
        free(a->cert);
        tls_free_secret(a->key);
        free(a->client_ca);
}

static int load_pem(const char *flag, const char *path, char **ret)
{
        int r = tls_read_pem(path, ret);
        if (r < 0)
                log_err("%s %s: %s", flag, path,
                        r == -EINVAL ? "not a PEM file" : r == -EFBIG ? "file too large" : strerror(-r));
        return r;
}

int access_setup(const struct options *o, const int *fds, size_t n_fds, struct access_ctx *a)
{
        if (o->token_file || o->read_token_file) {
                char why[1024];
                int r = auth_new(o->token_file, o->read_token_file, &a->auth, why, sizeof(why));
                if (r < 0) {
                        log_err("cannot load tokens: %s", why[0] ? why : strerror(-r));
                        return -1;
                }
                if (why[0])
                        log_warn("tokens: %s", why);
                size_t na, nr;
                auth_count(a->auth, &na, &nr);
                log_info("bearer tokens loaded: %zu admin, %zu read-only", na, nr);
        }
        if (o->tls_cert) {
                if (load_pem("--tls-cert", o->tls_cert, &a->cert) < 0 ||
                    load_pem("--tls-key", o->tls_key, &a->key) < 0)
                        return -1;
        }
        if (o->tls_client_ca && load_pem("--tls-client-ca", o->tls_client_ca, &a->client_ca) < 0)
                return -1;

        if (a->auth || a->client_ca)
                return 0;
        /* Nobody would be asked who they are on TCP: refuse unless the
         * operator said so explicitly, and even then only on loopback. */
        const char *tcp = NULL, *exposed = NULL;
        char desc[64];
        if (n_fds) {
                for (size_t i = 0; i < n_fds; i++) {
                        int is_tcp = http_socket_is_tcp(fds[i]);
                        if (is_tcp == 0)
                                continue;
                        snprintf(desc, sizeof(desc), "passed socket %d", fds[i]);
                        tcp = desc;
                        if (is_tcp < 0 || http_socket_is_loopback(fds[i]) != 1) /* an error counts as exposed */
                                exposed = desc;
                }
        } else if (o->listen) {
                tcp = o->listen;
                int r = http_listen_is_loopback(o->listen);
                if (r < 0) {
                        log_err("--listen %s: %s", o->listen,
                                r == -EINVAL ? "expected HOST:PORT" : "cannot resolve the address");
                        return -1;
                }
                if (r == 0)
                        exposed = o->listen;
        }
        if (exposed) {
                log_err("refusing to listen on %s without authentication: it is not a loopback address; "
                        "give --token-file/--read-token-file or --tls-client-ca, or listen on 127.0.0.1",
                        exposed);
                return -1;
        }
        if (tcp && !o->allow_unauthenticated_tcp) {
                log_err("refusing TCP listener %s without authentication: give --token-file/--read-token-file "
                        "or --tls-client-ca, use the unix socket, or accept the risk with "
                        "--allow-unauthenticated-tcp (loopback only)",
                        tcp);
                return -1;
        }
        if (tcp)
                log_warn("TCP listener %s asks for no token or certificate (--allow-unauthenticated-tcp): "
                         "every local user and every container sharing the host network has admin access",
                         tcp);
        return 0;
}
