/* authz: may this request go on?  A pure decision, table-tested.
 *
 * The HTTP glue gathers the facts (which listener, what credentials came and
 * what auth.c and tls.c made of them, whether the route changes anything,
 * whether the daemon is stopping) and this decides; it does no I/O, so every
 * combination is cheap to test and the fuzzer reaches it.
 *
 * Rules, in order: unix-socket callers are trusted (the socket's mode and
 * group decide who can connect).  On TCP the open route (GET or HEAD
 * /v1/health) is always allowed; otherwise a configured client CA needs a
 * verified certificate (401), configured tokens need a valid one (401); a
 * read-only token may not mutate (403); no mutation while stopping (503). */
#pragma once
#include <stdbool.h>

#include "auth.h"

enum authz_listener { AUTHZ_UNIX, AUTHZ_TCP };

enum authz_cert {
        AUTHZ_CERT_NOT_REQUIRED, /* no client CA configured */
        AUTHZ_CERT_OK,           /* verified against the client CA */
        AUTHZ_CERT_MISSING,      /* none sent (or no TLS session) */
        AUTHZ_CERT_INVALID,      /* sent, did not verify */
};

struct authz_input {
        enum authz_listener listener;
        enum authz_cert cert;
        bool tokens_configured;
        bool token_sent;          /* an Authorization: Bearer credential came */
        enum auth_role token_role; /* its role; AUTH_NONE when absent or wrong */
        bool open_route;          /* GET/HEAD /v1/health */
        bool mutation;            /* the method changes state */
        bool stopping;            /* SIGTERM seen */
};

enum authz_decision {
        AUTHZ_ALLOW,
        AUTHZ_CERT_REQUIRED,    /* 401: no client certificate */
        AUTHZ_CERT_REJECTED,    /* 401: certificate did not verify */
        AUTHZ_TOKEN_REQUIRED,   /* 401: no bearer token */
        AUTHZ_TOKEN_REJECTED,   /* 401: bearer token not valid */
        AUTHZ_READ_ONLY,        /* 403: read-only token on a mutation */
        AUTHZ_STOPPING,         /* 503: mutation while stopping */
};

enum authz_decision authz_decide(const struct authz_input *in);
/* HTTP status of a decision: 0 for AUTHZ_ALLOW, else 401, 403 or 503. */
int authz_status(enum authz_decision d);
/* Whether the caller proved who it is with every credential the listener
 * asks for (a valid token where tokens are configured, a verified
 * certificate where a client CA is), or came through the unix socket; false
 * where TCP asks for nothing.  Independent of what the request does. */
bool authz_authenticated(const struct authz_input *in);
