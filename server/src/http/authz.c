/* authz: the access decision (see authz.h). */
#include "authz.h"

enum authz_decision authz_decide(const struct authz_input *in)
{
        enum auth_role role = AUTH_ADMIN;

        if (in->listener == AUTHZ_TCP) {
                if (in->open_route)
                        return AUTHZ_ALLOW;
                if (in->cert == AUTHZ_CERT_MISSING)
                        return AUTHZ_CERT_REQUIRED;
                if (in->cert == AUTHZ_CERT_INVALID)
                        return AUTHZ_CERT_REJECTED;
                if (in->tokens_configured) {
                        role = in->token_role;
                        if (role == AUTH_NONE)
                                return in->token_sent ? AUTHZ_TOKEN_REJECTED : AUTHZ_TOKEN_REQUIRED;
                }
        }
        if (in->mutation && role != AUTH_ADMIN)
                return AUTHZ_READ_ONLY;
        if (in->mutation && in->stopping)
                return AUTHZ_STOPPING;
        return AUTHZ_ALLOW;
}

int authz_status(enum authz_decision d)
{
        switch (d) {
        case AUTHZ_ALLOW:
                return 0;
        case AUTHZ_CERT_REQUIRED:
        case AUTHZ_CERT_REJECTED:
        case AUTHZ_TOKEN_REQUIRED:
        case AUTHZ_TOKEN_REJECTED:
                return 401;
        case AUTHZ_READ_ONLY:
                return 403;
        case AUTHZ_STOPPING:
                return 503;
        }
        return 500;
}

bool authz_authenticated(const struct authz_input *in)
{
        if (in->listener == AUTHZ_UNIX)
                return true;
        if (in->cert == AUTHZ_CERT_MISSING || in->cert == AUTHZ_CERT_INVALID)
                return false;
        if (in->tokens_configured)
                return in->token_role != AUTH_NONE;
        return in->cert == AUTHZ_CERT_OK;
}
