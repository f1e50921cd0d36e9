"""Access control of hpwarmd (README "Access" and "Limits"):
bearer tokens on TCP, read-only callers, audit lines, unix-socket peer
credentials and group, the refusal of unguarded non-loopback listeners, TLS
and mutual TLS, over-long headers and slow clients.

Certificates are made at test time with openssl(1) in a temporary directory;
no private key is committed."""
import contextlib
import grp
import os
import re
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import tempfile
import time
import unittest

from hpwtest import Daemon, TestCase, main

ADMIN = ["admin-token-0123456789abcdef", "admin-rotated-token-fedcba9876543210"]
READ = ["read-token-0123456789abcdef"]
RESERVE = "/v1/nodes/0/hugepages/2M"


def write_secret(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def token_files(tmp, admin=ADMIN, read=READ):
    a = write_secret(os.path.join(tmp, "admin.tokens"),
                     "# admin tokens, rotated\n\n" + "\n".join("  %s  " % t for t in admin) + "\n")
    r = write_secret(os.path.join(tmp, "read.tokens"), "\n".join(read) + "\n# end\n")
    return a, r


def bearer(tok):
    return {"Authorization": "Bearer " + tok}


@contextlib.contextmanager
def spawned(**kw):
    """A Daemon started without waiting for its start line (its own --listen
    in ARGS, or one expected to fail)."""
    d = Daemon(listen=False, **kw)
    try:
        d.start(expect_ok=False)
        yield d
    finally:
        d.__exit__()


def run_daemon_expect_fail(args, timeout=15):
    """Start hpwarmd with ARGS (sysfs and state dir added), expect it to exit."""
    with spawned(args=args) as d:
        rc = d.proc.wait(timeout)
        return rc, d.read_all_log()


class Tokens(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="hpwarm-sec-")
        a, r = token_files(cls.tmp)
        cls.d = Daemon("two-node", args=["--token-file", a, "--read-token-file", r]).start()

    @classmethod
    def tearDownClass(cls):
        cls.d.__exit__()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert401(self, r, invalid=False):
        self.assertProblem(r, 401, "unauthorized")
        challenge = r.headers.get("www-authenticate", "")
        self.assertTrue(challenge.startswith('Bearer realm="hpwarmd"'), challenge)
        self.assertEqual('error="invalid_token"' in challenge, invalid, challenge)

    def test_no_token(self):
        for path in ["/v1/nodes", "/v1/nodes/0", "/metrics", "/v1/pools", "/v1/no-such-thing"]:
            with self.subTest(path=path):
                self.assert401(self.d.get(path))
        self.assert401(self.d.put(RESERVE, {"count": 1}))
        self.assert401(self.d.request("DELETE", "/v1/pools/x"))

    def test_wrong_token(self):
        for hdr in [bearer("nope"), bearer(ADMIN[0] + "x"), bearer(ADMIN[0][:-1]),
                    {"Authorization": "Basic " + ADMIN[0]}, {"Authorization": ADMIN[0]},
                    bearer("x" * 5000)]:
            with self.subTest(hdr=hdr["Authorization"][:40]):
                r = self.d.get("/v1/nodes", headers=hdr)
                self.assert401(r, invalid=hdr["Authorization"].startswith("Bearer "))

    def test_health_open(self):
        r = self.d.get("/v1/health")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.d.get("/v1/health", headers=bearer("wrong")).status, 200)

    def test_read_token(self):
        h = bearer(READ[0])
        self.assertEqual(self.d.get("/v1/nodes", headers=h).status, 200)
        self.assertEqual(self.d.get("/metrics", headers=h).status, 200)
        before = self.d.read_u64("devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages")
        self.assertProblem(self.d.put(RESERVE, {"count": before + 1}, headers=h), 403, "forbidden")
        self.assertProblem(self.d.request("DELETE", "/v1/pools/x", headers=h), 403, "forbidden")
        self.assertProblem(self.d.request("POST", "/v1/pools/x/claim", headers=h), 403, "forbidden")
        self.assertEqual(self.d.read_u64("devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"),
                         before)

    def test_admin_tokens_all_work(self):
        # Both tokens of the admin file (one per line, around comments, blank
        # lines and surrounding spaces) are valid: rotation.
        for tok in ADMIN:
            with self.subTest(tok=tok[:10]):
                h = bearer(tok)
                self.assertEqual(self.d.get("/v1/nodes", headers=h).status, 200)
                r = self.d.put(RESERVE, {"count": 16}, headers=h)
                self.assertEqual(r.status, 200, r)
        # Scheme is case-insensitive, extra blanks are fine.
        r = self.d.get("/v1/nodes", headers={"Authorization": "bearer   %s " % ADMIN[0]})
        self.assertEqual(r.status, 200, r)

    def test_audit_lines(self):
        self.d.put(RESERVE, {"count": 16}, headers=bearer(ADMIN[1]))
        self.d.put(RESERVE, {"count": 16}, headers=bearer(READ[0]))
        self.d.put(RESERVE, {"count": 16}, headers=bearer("guess-" + ADMIN[0]))
        self.d.put(RESERVE, {"count": 16})
        self.d.request("DELETE", "/v1/pools/a%0a%20b", headers=bearer(ADMIN[0]))
        self.d.get("/v1/nodes", headers=bearer(ADMIN[0]))
        audit = lambda rx: self.d.wait_log(r"audit: .*" + rx, timeout=5)
        ok = audit(r'who="token:[0-9a-f]{8} \(admin\) ip=127\.0\.0\.1" method=PUT path=/v1/nodes/0/hugepages/2M '
                   r'status=200')
        self.assertIsNotNone(ok, "\n".join(self.d.log))
        self.assertIsNotNone(audit(r'who="token:[0-9a-f]{8} \(read\) ip=127\.0\.0\.1" method=PUT .* status=403'))
        self.assertIsNotNone(audit(r'who="bad-token ip=127\.0\.0\.1" method=PUT .* status=401'))
        self.assertIsNotNone(audit(r'who="ip=127\.0\.0\.1" method=PUT .* status=401'))
        # A path cannot break the line or forge fields: it is logged as sent,
        # still percent-escaped (http.c never unescapes the URL as a whole).
        self.assertIsNotNone(audit(r'method=DELETE path=/v1/pools/a%0a%20b status=\d+$'))
        # Two admin tokens, two distinct ids.
        ids = {m for line in self.d.log for m in re.findall(r"token:([0-9a-f]{8}) \(admin\)", line)}
        self.assertGreaterEqual(len(ids), 2, ids)
        # Reads are not audited; no line ever carries a token.
        self.assertFalse([l for l in self.d.log if "audit:" in l and "method=GET" in l])
        for line in self.d.log:
            for tok in ADMIN + READ:
                self.assertNotIn(tok, line)
                self.assertNotIn(tok[:12], line)


class TokenFiles(TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hpwarm-sec-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_world_readable_refused(self):
        a = write_secret(os.path.join(self.tmp, "a"), ADMIN[0] + "\n", 0o644)
        rc, log = run_daemon_expect_fail(["--listen", "127.0.0.1:0", "--token-file", a])
        self.assertEqual(rc, 2, log)
        self.assertIn("accessible to other users", log)
        self.assertNotIn(ADMIN[0], log)

    def test_foreign_owner_refused(self):
        # A 0600 file that another user owns could be rewritten by that user,
        # and SIGHUP would load their tokens.
        a = write_secret(os.path.join(self.tmp, "a"), ADMIN[0] + "\n", 0o600)
        os.chown(a, 65534, 65534)
        rc, log = run_daemon_expect_fail(["--listen", "127.0.0.1:0", "--token-file", a])
        self.assertEqual(rc, 2, log)
        self.assertIn("owned by uid 65534", log)

    def test_group_readable_warns(self):
        a = write_secret(os.path.join(self.tmp, "a"), ADMIN[0] + "\n", 0o640)
        with Daemon(args=["--token-file", a]) as d:
            self.assertIsNotNone(d.wait_log(r"warning: tokens: .*accessible to its group"))
            self.assertEqual(d.get("/v1/nodes", headers=bearer(ADMIN[0])).status, 200)

    def test_bad_files_refused(self):
        cases = {
            "empty": "# nothing here\n\n",
            "space": "two words\n",
            "both": None,
        }
        for name, text in cases.items():
            with self.subTest(name=name):
                a = write_secret(os.path.join(self.tmp, name), text if text is not None else ADMIN[0] + "\n")
                args = ["--listen", "127.0.0.1:0", "--token-file", a]
                if text is None:
                    args += ["--read-token-file", a]
                rc, log = run_daemon_expect_fail(args)
                self.assertEqual(rc, 2, log)
                self.assertIn("cannot load tokens", log)
        rc, log = run_daemon_expect_fail(["--listen", "127.0.0.1:0", "--token-file", os.path.join(self.tmp, "nx")])
        self.assertEqual(rc, 2, log)

    def test_sighup_reload(self):
        a, r = token_files(self.tmp)
        with Daemon(args=["--token-file", a, "--read-token-file", r]) as d:
            self.assertEqual(d.get("/v1/nodes", headers=bearer(ADMIN[0])).status, 200)
            new = "admin-new-token-after-rotation-1"
            write_secret(a, new + "\n")
            d.proc.send_signal(signal.SIGHUP)
            self.assertIsNotNone(d.wait_log(r"tokens reloaded: 1 admin, 1 read-only"), d.log)
            self.assertEqual(d.get("/v1/nodes", headers=bearer(new)).status, 200)
            self.assertEqual(d.get("/v1/nodes", headers=bearer(ADMIN[0])).status, 401)
            # A broken file keeps the old set.
            os.chmod(a, 0o644)
            d.proc.send_signal(signal.SIGHUP)
            self.assertIsNotNone(d.wait_log(r"token reload failed"), d.log)
            self.assertEqual(d.get("/v1/nodes", headers=bearer(new)).status, 200)

    def test_sighup_fifo_does_not_block(self):
        """A FIFO at a token path: the reload is refused at once, and SIGTERM
        still stops the daemon (a blocking open held the signal thread)."""
        a, r = token_files(self.tmp)
        with Daemon(args=["--token-file", a, "--read-token-file", r]) as d:
            os.unlink(r)
            os.mkfifo(r, 0o600)
            d.proc.send_signal(signal.SIGHUP)
            line = d.wait_log(r"token reload failed", timeout=10)
            self.assertIsNotNone(line, d.log)
            self.assertIn("not a regular file", line)
            self.assertEqual(d.get("/v1/nodes", headers=bearer(READ[0])).status, 200)
            t0 = time.monotonic()
            self.assertEqual(d.stop(timeout=15), 0)
            self.assertLess(time.monotonic() - t0, 10)

    def test_sighup_empty_role_refused(self):
        """An emptied admin file would drop all admin access: refused, old set kept, logged."""
        a, r = token_files(self.tmp)
        with Daemon(args=["--token-file", a, "--read-token-file", r]) as d:
            write_secret(a, "# nobody\n")
            d.proc.send_signal(signal.SIGHUP)
            line = d.wait_log(r"token reload failed", timeout=10)
            self.assertIsNotNone(line, d.log)
            self.assertIn("holds no admin token", line)
            self.assertEqual(d.get("/v1/nodes", headers=bearer(ADMIN[0])).status, 200)
            self.assertEqual(d.request("PUT", RESERVE, {"count": 0}, headers=bearer(READ[0])).status, 403)


class Exposure(TestCase):
    """A TCP listener needs tokens or mTLS; without, only on loopback and
    only with --allow-unauthenticated-tcp."""

    def test_refused_without_auth(self):
        for addr in ["0.0.0.0:0", "[::]:0"]:
            for flag in ([], ["--allow-unauthenticated-tcp"]):
                with self.subTest(addr=addr, flag=flag):
                    rc, log = run_daemon_expect_fail(["--listen", addr] + flag)
                    self.assertEqual(rc, 2, log)
                    self.assertIn("refusing to listen on %s without authentication" % addr, log)

    def test_loopback_refused_without_flag(self):
        for addr in ["127.0.0.1:0", "localhost:0", "[::1]:0"]:
            with self.subTest(addr=addr):
                rc, log = run_daemon_expect_fail(["--listen", addr])
                self.assertEqual(rc, 2, log)
                self.assertIn("refusing TCP listener %s without authentication" % addr, log)
                self.assertIn("--allow-unauthenticated-tcp", log)

    def test_loopback_names_allowed_with_flag_and_warned(self):
        for addr in ["localhost:0", "127.0.0.2:0", "[::1]:0"]:
            with self.subTest(addr=addr):
                with spawned(args=["--listen", addr, "--allow-unauthenticated-tcp"]) as d:
                    self.assertIsNotNone(d.wait_log(r"listening on"), d.log)
                    warn = d.wait_log(r"asks for no token or certificate", timeout=10)
                    self.assertIsNotNone(warn, d.log)
                    self.assertIn("--allow-unauthenticated-tcp", warn)

    def assertStartsUnwarned(self, args):
        """The daemon starts with ARGS without the warning that it asks for
        no token."""
        with spawned(args=args) as d:
            self.assertIsNotNone(d.wait_log(r"listening on"), d.log)
            self.assertIsNone(d.wait_log(r"asks for no token", timeout=0.5), d.log)

    def test_unix_socket_needs_no_flag(self):
        self.assertStartsUnwarned(["--socket", os.path.join(self.tmpdir("hpwarm-sec-"), "api.sock")])

    def test_loopback_with_tokens_needs_no_flag(self):
        a, _ = token_files(self.tmpdir("hpwarm-sec-"))
        self.assertStartsUnwarned(["--listen", "127.0.0.1:0", "--token-file", a])

    def test_allowed_with_tokens(self):
        tmp = tempfile.mkdtemp(prefix="hpwarm-sec-")
        try:
            a, _ = token_files(tmp)
            with spawned(args=["--listen", "0.0.0.0:0", "--token-file", a]) as d:
                line = d.wait_log(r"listening on")
                self.assertIsNotNone(line, d.log)
                d.port = int(re.search(r"http://0\.0\.0\.0:(\d+)", line).group(1))
                d.listen = True
                self.assertEqual(d.get("/v1/nodes").status, 401)
                self.assertEqual(d.get("/v1/nodes", headers=bearer(ADMIN[0])).status, 200)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class UnixSocket(TestCase):
    def test_peer_credentials_in_audit(self):
        tmp = tempfile.mkdtemp(prefix="hpwarm-sec-")
        try:
            path = os.path.join(tmp, "api.sock")
            with Daemon(listen=False, socket_path=path) as d:
                st = os.stat(path)
                self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
                r = d.put(RESERVE, {"count": 16})
                self.assertEqual(r.status, 200, r)
                line = d.wait_log(r"audit: who=\"uid=", timeout=5)
                self.assertIsNotNone(line, d.log)
                self.assertIn('who="uid=%d gid=%d pid=%d" method=PUT path=%s status=200'
                              % (os.getuid(), os.getgid(), os.getpid(), RESERVE), line)
                self.assertEqual(d.stop(), 0)
            self.assertFalse(os.path.exists(path), "socket left behind")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_socket_group(self):
        names = [g.gr_name for g in grp.getgrall() if g.gr_gid != os.getgid()]
        if not names:
            raise unittest.SkipTest("no second group on this machine")
        g = grp.getgrnam(names[0])
        tmp = tempfile.mkdtemp(prefix="hpwarm-sec-")
        try:
            path = os.path.join(tmp, "api.sock")
            with Daemon(listen=False, socket_path=path, args=["--socket-group", g.gr_name]) as d:
                st = os.stat(path)
                self.assertEqual(st.st_gid, g.gr_gid)
                self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
                self.assertEqual(d.get("/v1/health").status, 200)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        rc, log = run_daemon_expect_fail(["--socket", "/nonexistent/x.sock", "--socket-group", "no-such-group-x"])
        self.assertEqual(rc, 2, log)


def openssl(*args, cwd):
    subprocess.run(["openssl"] + list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=%s" % name, "-keyout", name + ".key", "-out", name + ".crt",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
            cwd=d)


def make_cert(d, ca, name, client):
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
            "/O=hpwarm test/CN=%s" % name, "-keyout", name + ".key", "-out", name + ".csr", cwd=d)
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\n")
        if client:
            f.write("extendedKeyUsage=clientAuth\n")
        else:
            f.write("extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".crt", "-CAkey", ca + ".key", "-CAcreateserial",
            "-days", "2", "-extfile", ext, "-out", name + ".crt", cwd=d)
    os.chmod(os.path.join(d, name + ".key"), 0o600)


@unittest.skipUnless(shutil.which("openssl"), "openssl(1) not installed (Debian package openssl)")
class TLS(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="hpwarm-tls-")
        make_ca(cls.tmp, "ca")
        make_ca(cls.tmp, "otherca")
        make_cert(cls.tmp, "ca", "server", client=False)
        make_cert(cls.tmp, "ca", "client", client=True)
        make_cert(cls.tmp, "otherca", "intruder", client=True)
        make_cert(cls.tmp, "ca", "server2", client=False)  # right CA, wrong purpose

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def p(self, name):
        return os.path.join(self.tmp, name)

    def ctx(self, client=None):
        c = ssl.create_default_context(cafile=self.p("ca.crt"))
        if client:
            c.load_cert_chain(self.p(client + ".crt"), self.p(client + ".key"))
        return c

    def server_args(self):
        return ["--tls-cert", self.p("server.crt"), "--tls-key", self.p("server.key")]

    def test_tls_round_trip_with_tokens(self):
        a, _ = token_files(self.tmp)
        with Daemon(args=self.server_args() + ["--token-file", a], ssl_context=self.ctx()) as d:
            self.assertIsNotNone(d.wait_log(r"listening on https://127\.0\.0\.1:"))
            self.assertEqual(d.get("/v1/health").status, 200)
            self.assertEqual(d.get("/v1/nodes").status, 401)
            r = d.put(RESERVE, {"count": 16}, headers=bearer(ADMIN[0]))
            self.assertEqual(r.status, 200, r)
            # Plain HTTP on the TLS port gets no answer.
            s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            try:
                data = s.recv(100)
            except OSError:
                data = b""
            s.close()
            self.assertNotIn(b"200 OK", data)

    def test_tls_alone_is_not_authentication(self):
        rc, log = run_daemon_expect_fail(["--listen", "0.0.0.0:0"] + self.server_args())
        self.assertEqual(rc, 2, log)

    def test_mutual_tls(self):
        args = self.server_args() + ["--tls-client-ca", self.p("ca.crt")]
        with spawned(args=["--listen", "0.0.0.0:0"] + args) as d:
            line = d.wait_log(r"listening on")
            self.assertIsNotNone(line, d.log)
            d.port = int(re.search(r"https://0\.0\.0\.0:(\d+)", line).group(1))
            d.listen = True

            d.ssl_context = self.ctx()
            self.assertEqual(d.get("/v1/health").status, 200)
            r = d.get("/v1/nodes")
            self.assertProblem(r, 401, "unauthorized")
            self.assertIn("client certificate", r.json["detail"])
            self.assertEqual(d.put(RESERVE, {"count": 16}).status, 401)

            for bad in ["intruder", "server2"]:
                with self.subTest(cert=bad):
                    d.ssl_context = self.ctx(bad)
                    r = d.get("/v1/nodes")
                    self.assertProblem(r, 401, "unauthorized")
                    self.assertIn("did not verify", r.json["detail"])
                    self.assertProblem(d.put(RESERVE, {"count": 16}), 401, "unauthorized")

            d.ssl_context = self.ctx("client")
            self.assertEqual(d.get("/v1/nodes").status, 200)
            r = d.put(RESERVE, {"count": 16})
            self.assertEqual(r.status, 200, r)
            line = d.wait_log(r'audit: who="cert:.*CN=client.* ip=127\.0\.0\.1" method=PUT .*status=200', timeout=5)
            self.assertIsNotNone(line, d.log)
            self.assertIsNotNone(d.wait_log(r'audit: who="cert:.*CN=intruder.*status=401', timeout=5), d.log)
            self.assertIsNotNone(d.wait_log(r'audit: who="ip=127\.0\.0\.1" method=PUT .*status=401', timeout=5))


class Limits(TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("two-node", args=["--connection-timeout", "2"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.d.__exit__()

    def raw(self, data):
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
        s.close()
        return out

    def test_over_long_headers(self):
        big = self.raw(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n")
        self.assertRegex(big.split(b"\r\n")[0], rb"^HTTP/1\.1 431 ")
        many = self.raw(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + b"X-H: b\r\n" * 5000 + b"\r\n")
        self.assertRegex(many.split(b"\r\n")[0], rb"^HTTP/1\.1 431 ")
        uri = self.raw(b"GET /" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertRegex(uri.split(b"\r\n")[0], rb"^HTTP/1\.1 414 ")
        self.assertEqual(self.d.get("/v1/health").status, 200)

    def test_stalled_client_cut(self):
        # Half a request, then silence: closed after the 2 s timeout while
        # other clients are served.
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=10)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        for _ in range(5):
            self.assertEqual(self.d.get("/v1/health").status, 200)
        try:
            data = s.recv(100)
        except ConnectionResetError:
            data = b""
        took = time.monotonic() - t0
        s.close()
        self.assertEqual(data, b"")
        self.assertLess(took, 6)
        self.assertGreater(took, 1)

    def test_dripping_client_cut(self):
        # Slowloris: one byte of header every 0.5 s keeps a connection alive
        # under a pure idle timeout; the header deadline cuts it anyway.
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=1)
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        closed = False
        while time.monotonic() - t0 < 10:
            try:
                s.sendall(b"X")
                time.sleep(0.5)
            except OSError:
                closed = True
                break
            self.assertEqual(self.d.get("/v1/health").status, 200)
        s.close()
        self.assertTrue(closed, "a dripping client held its connection for 10 s")
        self.assertLess(time.monotonic() - t0, 7)


if __name__ == "__main__":
    main()
