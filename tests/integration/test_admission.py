"""Connections before authentication cannot crowd out the authenticated:
over real loopback sockets against the fixture daemon.

- a header must arrive within a few seconds of its connection, however
  long the connection timeout (30 s here);
- a request with 600+ query arguments is answered at once with a problem;
- connections nobody has vouched for (no request allowed by access control
  yet) are bounded on their own and evicted first: a flood of idle
  connections neither keeps an authenticated newcomer out nor closes
  authenticated keep-alive connections;
- the unix socket answers while TCP is flooded.

Bounds separate "answered" from "held for the 30 s connection timeout" on a
loaded machine; they are not latency targets."""
import os
import select
import socket
import tempfile
import time
import shutil
import unittest

from hpwtest import Daemon, TestCase, UnixHTTPConnection, main, read_head

ADMIN = "admission-admin-token-0001"
MAX_CONN = 32
FLOOD = 60
SRC = ["127.0.0.%d" % i for i in range(2, 10)]


def raw(port, data, timeout=10, src=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                 source_address=(src, 0) if src else None)
    try:
        s.sendall(data)
        got = read_head(s)
        return got
    finally:
        s.close()


def keepalive_get(sock, path, token=None):
    """One GET on an open keep-alive socket; the status code, or None if the
    connection was closed."""
    hdr = "GET %s HTTP/1.1\r\nHost: x\r\n" % path
    if token:
        hdr += "Authorization: Bearer %s\r\n" % token
    try:
        sock.sendall((hdr + "\r\n").encode())
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            got += chunk
        head, _, rest = got.partition(b"\r\n\r\n")
        length = 0
        for ln in head.split(b"\r\n"):
            if ln.lower().startswith(b"content-length:"):
                length = int(ln.split(b":")[1])
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                return None
            rest += chunk
        return int(head.split()[1])
    except OSError:
        return None


def count_closed(socks, want, seconds):
    """How many of SOCKS the daemon has closed, once WANT have been or
    SECONDS have passed: a generous bound for a loaded machine, polled, so
    a fast one does not wait for it."""
    closed = set()
    deadline = time.monotonic() + seconds
    while len(closed) < want and time.monotonic() < deadline:
        ready, _, _ = select.select([s for s in socks if s not in closed], [], [], 0.1)
        for s in ready:
            try:
                if s.recv(1) == b"":
                    closed.add(s)
            except OSError:
                closed.add(s)
    return len(closed)


class Admission(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="hpwarm-adm-")
        tok = os.path.join(cls.tmp, "admin.tokens")
        with open(tok, "w") as f:
            f.write(ADMIN + "\n")
        os.chmod(tok, 0o600)
        cls.sock = os.path.join(cls.tmp, "api.sock")
        cls.d = Daemon(args=["--token-file", tok, "--socket", cls.sock, "--max-connections", str(MAX_CONN),
                             "--connection-timeout", "30"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        cls.d.__exit__()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def flood(self, n=FLOOD):
        socks = []
        for i in range(n):
            socks.append(socket.create_connection(("127.0.0.1", self.d.port), timeout=10,
                                                  source_address=(SRC[i % len(SRC)], 0)))
        return socks

    def test_header_deadline(self):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=40)
        t0 = time.monotonic()
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        try:
            while time.monotonic() - t0 < 35:
                s.sendall(b"X")
                time.sleep(0.5)
        except OSError:
            pass
        took = time.monotonic() - t0
        s.close()
        self.assertLess(took, 15, "a trickled header was held %.1f s (connection timeout 30 s)" % took)

    def test_many_query_args_tcp(self):
        q = "&".join("a%d=1" % i for i in range(600))
        t0 = time.monotonic()
        got = raw(self.d.port, ("GET /v1/nodes?%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                                % (q, ADMIN)).encode())
        took = time.monotonic() - t0
        self.assertLess(took, 5, "answered after %.1f s" % took)
        self.assertTrue(got.startswith(b"HTTP/1.1 414"), got[:200])
        self.assertIn(b"application/problem+json", got)

    def test_many_query_args_unix(self):
        q = "&".join("a%d=1" % i for i in range(600))
        c = UnixHTTPConnection(self.sock, timeout=10)
        t0 = time.monotonic()
        c.request("GET", "/v1/pools/x?" + q)
        r = c.getresponse()
        body = r.read()
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(r.status, 414, body)
        self.assertEqual(r.getheader("Content-Type"), "application/problem+json")
        self.assertIn(b"uri-too-long", body)
        # A handful of arguments is fine.
        c = UnixHTTPConnection(self.sock, timeout=10)
        c.request("GET", "/v1/pools/x?wait=ready&timeout=0")
        self.assertEqual(c.getresponse().status, 404)

    def test_unvouched_evicted_first(self):
        # Authenticated keep-alive connections, vouched by one request each.
        authed = [socket.create_connection(("127.0.0.1", self.d.port), timeout=10) for _ in range(8)]
        for s in authed:
            self.assertEqual(keepalive_get(s, "/v1/nodes", ADMIN), 200)
        socks = self.flood()
        try:
            time.sleep(0.5)
            # A newcomer with a token gets in although the listener is full.
            t0 = time.monotonic()
            got = raw(self.d.port, ("GET /v1/nodes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                                    "Connection: close\r\n\r\n" % ADMIN).encode(), src="127.0.0.10")
            self.assertTrue(got.startswith(b"HTTP/1.1 200"), got[:100])
            self.assertLess(time.monotonic() - t0, 5)
            # The oldest idle flood connections were evicted to make room...
            evicted = count_closed(socks[:FLOOD // 2], FLOOD // 4, 10)
            self.assertGreaterEqual(evicted, FLOOD // 4, "only %d of the oldest idle connections evicted" % evicted)
            # ... and the authenticated ones were not.
            for s in authed:
                self.assertEqual(keepalive_get(s, "/v1/nodes", ADMIN), 200)
        finally:
            for s in socks + authed:
                s.close()

    def test_unix_served_while_tcp_flooded(self):
        socks = self.flood(FLOOD)
        # Slow clients too: headers trickling.
        for s in socks[-8:]:
            s.sendall(b"GET /v1/nodes HTTP/1.1\r\n")
        try:
            for _ in range(5):
                c = UnixHTTPConnection(self.sock, timeout=10)
                t0 = time.monotonic()
                c.request("GET", "/v1/health")
                r = c.getresponse()
                r.read()
                self.assertEqual(r.status, 200)
                self.assertLess(time.monotonic() - t0, 3)
        finally:
            for s in socks:
                s.close()


if __name__ == "__main__":
    main()
