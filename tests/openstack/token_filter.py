"""A paste filter for Nova's compute API under auth_strategy = noauth2 (the
openstack tests run no Keystone): noauth2 builds the request context from
the X-Auth-Token header ("user:project") but leaves the context's own token
empty, and Nova hands that token on when it calls Glance and Neutron, whose
client then refuses to send a request without one.  This filter, placed
after noauth2 in the pipeline (tests/openstack/nova.py), copies the header
into the context.  With Keystone (auth_strategy = keystone) the context
carries the user's real token and no such filter is needed."""


class TokenIntoContext:
    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        ctx = environ.get("nova.context")
        token = environ.get("HTTP_X_AUTH_TOKEN")
        if ctx is not None and token and not ctx.auth_token:
            ctx.auth_token = token
        return self.app(environ, start_response)


def factory(global_conf, **local_conf):
    return TokenIntoContext
