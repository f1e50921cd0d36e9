/* authz: the access decision as a table.  Each row names the rule it checks;
 * every row runs, a failing row prints its name and both decisions, and the
 * test that reads the table fails at the end if any did.  The rows'
 * decisions and authenticated flags, and the status of each decision, are
 * two registered tests (check.h), each in a process of its own, so a crash
 * in one fails that one and the other still runs. */
#include <stdio.h>

#include "authz.h"
#include "check.h"

#define U AUTHZ_UNIX
#define T AUTHZ_TCP
#define NR AUTHZ_CERT_NOT_REQUIRED
#define OK AUTHZ_CERT_OK
#define MISS AUTHZ_CERT_MISSING
#define BAD AUTHZ_CERT_INVALID

struct row {
        const char *rule;
        struct authz_input in;
        enum authz_decision want;
        bool authenticated;
};

/* in: listener, cert, tokens_configured, token_sent, token_role, open_route, mutation, stopping */
static const struct row rows[] = {
        { "unix socket: trusted for reads", { U, NR, false, false, AUTH_NONE, false, false, false }, AUTHZ_ALLOW, true },
        { "unix socket: trusted for mutations", { U, NR, false, false, AUTH_NONE, false, true, false }, AUTHZ_ALLOW, true },
        { "unix socket: tokens configured do not apply",
          { U, NR, true, false, AUTH_NONE, false, true, false },
          AUTHZ_ALLOW,
          true },
        { "unix socket: no mutation while stopping",
          { U, NR, false, false, AUTH_NONE, false, true, true },
          AUTHZ_STOPPING,
          true },
        { "unix socket: reads while stopping", { U, NR, false, false, AUTH_NONE, false, false, true }, AUTHZ_ALLOW, true },
        { "tcp, nothing configured: allowed, not authenticated",
          { T, NR, false, false, AUTH_NONE, false, true, false },
          AUTHZ_ALLOW,
          false },
        { "tcp: health open without token", { T, NR, true, false, AUTH_NONE, true, false, false }, AUTHZ_ALLOW, false },
        { "tcp: health open without certificate",
          { T, MISS, false, false, AUTH_NONE, true, false, false },
          AUTHZ_ALLOW,
          false },
        { "tcp: health open with a wrong token", { T, NR, true, true, AUTH_NONE, true, false, false }, AUTHZ_ALLOW, false },
        { "tcp: no token -> 401 token required",
          { T, NR, true, false, AUTH_NONE, false, false, false },
          AUTHZ_TOKEN_REQUIRED,
          false },
        { "tcp: wrong token -> 401 invalid token",
          { T, NR, true, true, AUTH_NONE, false, false, false },
          AUTHZ_TOKEN_REJECTED,
          false },
        { "tcp: read token reads", { T, NR, true, true, AUTH_READ, false, false, false }, AUTHZ_ALLOW, true },
        { "tcp: read token may not mutate", { T, NR, true, true, AUTH_READ, false, true, false }, AUTHZ_READ_ONLY, true },
        { "tcp: admin token mutates", { T, NR, true, true, AUTH_ADMIN, false, true, false }, AUTHZ_ALLOW, true },
        { "tcp: admin token, stopping -> 503", { T, NR, true, true, AUTH_ADMIN, false, true, true }, AUTHZ_STOPPING, true },
        { "tcp: read token while stopping is 403 first",
          { T, NR, true, true, AUTH_READ, false, true, true },
          AUTHZ_READ_ONLY,
          true },
        { "tcp: unauthenticated listener, stopping -> 503",
          { T, NR, false, false, AUTH_NONE, false, true, true },
          AUTHZ_STOPPING,
          false },
        { "mtls: no certificate -> 401",
          { T, MISS, false, false, AUTH_NONE, false, false, false },
          AUTHZ_CERT_REQUIRED,
          false },
        { "mtls: bad certificate -> 401",
          { T, BAD, false, false, AUTH_NONE, false, false, false },
          AUTHZ_CERT_REJECTED,
          false },
        { "mtls: certificate checked before the token",
          { T, MISS, true, true, AUTH_ADMIN, false, true, false },
          AUTHZ_CERT_REQUIRED,
          false },
        { "mtls: good certificate, no tokens: admin",
          { T, OK, false, false, AUTH_NONE, false, true, false },
          AUTHZ_ALLOW,
          true },
        { "mtls: good certificate still needs a configured token",
          { T, OK, true, false, AUTH_NONE, false, false, false },
          AUTHZ_TOKEN_REQUIRED,
          false },
        { "mtls: good certificate and read token cannot mutate",
          { T, OK, true, true, AUTH_READ, false, true, false },
          AUTHZ_READ_ONLY,
          true },
        { "mtls: good certificate and admin token", { T, OK, true, true, AUTH_ADMIN, false, true, false }, AUTHZ_ALLOW, true },
};

struct status_row {
        enum authz_decision d;
        int status;
};

static const struct status_row statuses[] = {
        { AUTHZ_ALLOW, 0 },
        { AUTHZ_CERT_REQUIRED, 401 },
        { AUTHZ_CERT_REJECTED, 401 },
        { AUTHZ_TOKEN_REQUIRED, 401 },
        { AUTHZ_TOKEN_REJECTED, 401 },
        { AUTHZ_READ_ONLY, 403 },
        { AUTHZ_STOPPING, 503 },
};

#define N_(a) (sizeof(a) / sizeof((a)[0]))

TEST(decision_and_authenticated_of_each_row)
{
        int failed = 0;
        for (size_t i = 0; i < N_(rows); i++) {
                const struct row *r = &rows[i];
                enum authz_decision got = authz_decide(&r->in);
                if (got != r->want) {
                        fprintf(stderr, "FAIL %s: decision %d, want %d\n", r->rule, (int)got, (int)r->want);
                        failed++;
                }
                bool auth = authz_authenticated(&r->in);
                if (auth != r->authenticated) {
                        fprintf(stderr, "FAIL %s: authenticated %d, want %d\n", r->rule, auth, r->authenticated);
                        failed++;
                }
        }
        CHECK_INT(failed, ==, 0);
}

TEST(status_of_each_decision)
{
        int failed = 0;
        for (size_t i = 0; i < N_(statuses); i++)
                if (authz_status(statuses[i].d) != statuses[i].status) {
                        fprintf(stderr, "FAIL status of decision %d: %d, want %d\n", (int)statuses[i].d,
                                authz_status(statuses[i].d), statuses[i].status);
                        failed++;
                }
        CHECK_INT(failed, ==, 0);
}

TEST_MAIN()
