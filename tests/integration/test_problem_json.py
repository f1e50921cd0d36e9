"""problem+json everywhere, HEAD wherever GET, over real
sockets against the fixture daemon.

Limits libmicrohttpd would enforce with its own HTML answers (header size,
URI length, body size) are enforced by the daemon first, as problem+json.
What remains libmicrohttpd's (requests it cannot parse) is documented in
README and the OpenAPI description; one case is checked here so the
documentation stays true."""
import json
import os
import shutil
import socket
import tempfile
import unittest

from hpwtest import Daemon, TestCase, main, read_head


def exchange(port, data, timeout=10):
    """Send DATA on a new connection; read one response.  (status, headers
    dict, body bytes)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        got = read_head(s)
        head, _, body = got.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else None
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        want = int(hdrs.get("content-length", "0"))
        is_head = data.startswith(b"HEAD ")
        while not is_head and len(body) < want:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, hdrs, body
    finally:
        s.close()


def request(port, method, path, headers=(), body=b""):
    data = ("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" % (method, path)).encode()
    for h in headers:
        data += h + b"\r\n"
    return exchange(port, data + b"\r\n" + body)


class ProblemJson(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("two-node").start()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()
        cls.d.__exit__()

    def assertProblemRaw(self, got, status, slug):
        st, hdrs, body = got
        self.assertEqual(st, status, got)
        self.assertEqual(hdrs.get("content-type"), "application/problem+json", got)
        doc = json.loads(body)
        self.assertEqual(doc["type"], "urn:hpwarm:problem:" + slug, doc)
        self.assertEqual(doc["status"], status)

    def test_header_too_large(self):
        big = b"X-Big: " + b"a" * (12 * 1024)
        self.assertProblemRaw(request(self.d.port, "GET", "/v1/health", [big]), 431, "headers-too-large")
        big = b"X-Big: " + b"a" * (40 * 1024)
        self.assertProblemRaw(request(self.d.port, "GET", "/v1/health", [big]), 431, "headers-too-large")

    def test_too_many_header_fields(self):
        many = [b"X-H%d: v" % i for i in range(100)]
        self.assertProblemRaw(request(self.d.port, "GET", "/v1/health", many), 431, "headers-too-large")
        some = [b"X-H%d: v" % i for i in range(40)]
        self.assertEqual(request(self.d.port, "GET", "/v1/health", some)[0], 200)

    def test_uri_too_long(self):
        for path in ("/v1/pools/" + "a" * 2000, "/v1/pools/" + "a" * 20000,
                     "/v1/pools?" + "x" * 2000, "/v1/pools?" + "a=1&" * 600):
            with self.subTest(n=len(path)):
                self.assertProblemRaw(request(self.d.port, "GET", path), 414, "uri-too-long")

    def test_body_too_large(self):
        got = request(self.d.port, "PUT", "/v1/pools/p",
                      [b"Content-Type: application/json", b"Content-Length: 1000000"])
        self.assertProblemRaw(got, 413, "body-too-large")
        chunk = b"x" * 8192
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(12)) + b"0\r\n\r\n"
        got = request(self.d.port, "PUT", "/v1/pools/p",
                      [b"Content-Type: application/json", b"Transfer-Encoding: chunked"], body)
        self.assertProblemRaw(got, 413, "body-too-large")

    def test_unparsable_stays_libmicrohttpd(self):
        # Documented exception: a header line without a colon cannot be
        # parsed; libmicrohttpd answers 400 itself and closes.
        st, hdrs, _ = exchange(self.d.port, b"GET /v1/health HTTP/1.1\r\nHost x\r\n\r\n")
        self.assertEqual(st, 400)
        self.assertNotEqual(hdrs.get("content-type"), "application/problem+json")

    def test_head_like_get(self):
        for path in ("/v1/health", "/v1/nodes", "/v1/nodes/0", "/v1/pools", "/metrics"):
            with self.subTest(path=path):
                g = request(self.d.port, "GET", path)
                h = request(self.d.port, "HEAD", path)
                self.assertEqual(h[0], g[0])
                self.assertEqual(h[2], b"")
                self.assertEqual(h[1].get("content-type"), g[1].get("content-type"))
                if path != "/metrics":  # counters move between the two requests
                    self.assertEqual(h[1].get("content-length"), g[1].get("content-length"))

    def test_head_errors_like_get(self):
        h = request(self.d.port, "HEAD", "/v1/pools/nope")
        self.assertEqual(h[0], 404)
        self.assertEqual(h[1].get("content-type"), "application/problem+json")
        self.assertEqual(h[2], b"")

    def test_allow_lists_head(self):
        st, hdrs, _ = request(self.d.port, "HEAD", "/v1/nodes/0/hugepages/2M")
        self.assertEqual(st, 405)
        self.assertEqual(hdrs.get("allow"), "PUT")
        st, hdrs, _ = request(self.d.port, "POST", "/v1/health")
        self.assertEqual(st, 405)
        self.assertEqual(hdrs.get("allow"), "GET, HEAD")


class HeadAccess(TestCase):
    def test_head_health_open_others_need_token(self):
        tmp = tempfile.mkdtemp(prefix="hpwarm-head-")
        try:
            tok = os.path.join(tmp, "admin.tokens")
            with open(tok, "w") as f:
                f.write("head-access-admin-token-01\n")
            os.chmod(tok, 0o600)
            with Daemon(args=["--token-file", tok]) as d:
                self.assertEqual(request(d.port, "HEAD", "/v1/health")[0], 200)
                st, hdrs, _ = request(d.port, "HEAD", "/v1/nodes")
                self.assertEqual(st, 401)
                self.assertIn("Bearer", hdrs.get("www-authenticate", ""))
                st, _, _ = request(d.port, "HEAD", "/v1/nodes",
                                   [b"Authorization: Bearer head-access-admin-token-01"])
                self.assertEqual(st, 200)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
