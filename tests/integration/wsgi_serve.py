"""Serve one OpenStack WSGI application (Placement, Keystone, Nova's compute
API or Glance's API as Debian ships them) on 127.0.0.1, on a port the kernel picks, for the Placement
tests (openstack.py).  No apache, no uwsgi: the standard library's wsgiref
with a thread per request, which is all a test's handful of clients need.

Usage: wsgi_serve.py placement|keystone-public|nova-api|glance-api PORT_FILE
The port is written to PORT_FILE (by a rename: whole or not at all) once
the application is built (its configuration parsed, its database opened)
and the socket listens, so the caller reads it back and knows the service
answers.  Not stdout: the services log there."""
import os
import sys
import wsgiref.simple_server


class Server(wsgiref.simple_server.WSGIServer):
    allow_reuse_address = True


class QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))


def app(which):
    if which == "placement":
        from placement import wsgi
        return wsgi.init_application()
    if which == "keystone-public":
        from keystone.server import wsgi
        return wsgi.initialize_public_application()
    if which == "nova-api":
        from nova.api.openstack.compute import wsgi
        return wsgi.init_application()
    if which == "glance-api":
        from glance.common import wsgi_app
        return wsgi_app.init_app()
    raise SystemExit("wsgi_serve.py: unknown application %r" % which)


def main():
    which, port_file = sys.argv[1], sys.argv[2]
    # This script's folder holds the tests' openstack.py, which would hide
    # the openstacksdk package (named openstack too) Glance imports.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    # Keystone's application parses sys.argv as its own command line.
    del sys.argv[1:]
    application = app(which)
    httpd = wsgiref.simple_server.make_server("127.0.0.1", 0, application, server_class=Server,
                                              handler_class=QuietHandler)
    with open(port_file + ".tmp", "w") as f:
        f.write("%d\n" % httpd.server_address[1])
    os.rename(port_file + ".tmp", port_file)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
