"""Hostile requests over real sockets against the fixture daemon (README
"API", bad input): malformed and deeply nested JSON, huge numbers, '..', '/',
%2f and NUL in names and ids, over-long headers, URLs and bodies (declared
and chunked), broken chunked encoding, garbage and HTTP/0.9 request lines,
header floods, pipelining, slow clients, and 50 clients at once.

Every hostile request must get a 4xx or a closed connection; after each one
the daemon still answers GET /v1/health, creates no pool, and the fixture's
counters are byte-for-byte what they were.  One daemon serves the whole
class (starting one per case would dominate the run time); each case uses
fresh connections."""
import errno
import os
import re
import socket
import threading
import time
import http.client
import unittest

from hpwtest import HPWARMD, Daemon, TestCase, main

# How long a hostile case may keep us waiting for the daemon's answer.
ANSWER_TIMEOUT = 5.0
# Connection timeout we ask the daemon for when it has the flag, so slow
# clients are cut off within the test's time budget.
SHORT_CONN_TIMEOUT = 2


def daemon_has_flag(flag):
    import subprocess
    out = subprocess.run([HPWARMD, "--help"], capture_output=True, text=True).stdout
    return flag in out


def snapshot(root):
    """Every file under ROOT -> its bytes."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def exchange(port, data, shut_wr=False, timeout=ANSWER_TIMEOUT, chunks=None, gap=0.0):
    """Send DATA (or CHUNKS with GAP seconds between them) on a new
    connection and read until the daemon closes it, the response is complete,
    or TIMEOUT passes.  Returns (bytes received, how it ended): 'closed',
    'reset', 'timeout' or 'complete'."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    got = b""
    try:
        try:
            for c in (chunks if chunks is not None else [data]):
                s.sendall(c)
                if gap:
                    time.sleep(gap)
            if shut_wr:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            # The daemon gave up on us mid-send; read what it said, if anything.
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                b = s.recv(65536)
            except socket.timeout:
                return got, "timeout"
            except ConnectionResetError:
                return got, "reset"
            if not b:
                return got, "closed"
            got += b
            if response_complete(got):
                return got, "complete"
        return got, "timeout"
    finally:
        s.close()


def response_complete(buf):
    """Whether BUF holds at least one full HTTP response with Content-Length."""
    head, sep, body = buf.partition(b"\r\n\r\n")
    if not sep:
        return False
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return bool(m) and len(body) >= int(m.group(1))


def statuses(buf):
    # Pipelined responses follow each other's bodies with no line break.
    return [int(s) for s in re.findall(rb"HTTP/1\.[01] (\d{3}) ", buf)]


class Hostile(TestCase):
    @classmethod
    def setUpClass(cls):
        args = []
        cls.short_timeout = daemon_has_flag("--connection-timeout")
        if cls.short_timeout:
            args = ["--connection-timeout", str(SHORT_CONN_TIMEOUT)]
        cls.d = Daemon("two-node", args=args)
        cls.d.start()
        cls.before = snapshot(cls.d.sysfs)

    @classmethod
    def tearDownClass(cls):
        rc = cls.d.stop()
        cls.d.__exit__(None, None, None)
        assert rc == 0, "hpwarmd exited %s after the hostile corpus" % rc

    def assertStillServing(self, what):
        self.assertIsNone(self.d.proc.poll(), "daemon died after %s" % what)
        r = self.d.get("/v1/health", timeout=10)
        self.assertEqual(r.status, 200, "health after %s: %r" % (what, r))
        pools = self.d.get("/v1/pools", timeout=10)
        self.assertEqual(pools.status, 200, pools)
        self.assertEqual(pools.json["pools"], [], "a pool appeared after %s" % what)
        self.assertEqual(snapshot(self.d.sysfs), self.before, "fixture changed after %s" % what)

    def assertRefused(self, what, data, allow=(), **kw):
        """DATA must earn a 4xx (or a status in ALLOW) or a closed connection,
        never a 2xx, a 5xx or a hang."""
        got, how = exchange(self.d.port, data, **kw)
        codes = statuses(got)
        if codes:
            for c in codes:
                self.assertTrue(400 <= c < 500 or c in allow,
                                "%s: status %d: %r" % (what, c, got[:300]))
            if codes[0] >= 400:
                self.assertRegex(got, rb"(?i)content-type: application/problem\+json|content-length: 0|\r\n\r\n$|"
                                      rb"<html", "%s: %r" % (what, got[:300]))
        else:
            self.assertIn(how, ("closed", "reset"), "%s: no answer and no close (%s): %r" % (what, how, got[:300]))
        self.assertStillServing(what)
        return codes

    def assertProblemOver(self, what, method, path, body=None, ctype="application/json", statuses_ok=None):
        """A well-formed HTTP request with a hostile payload: a problem 4xx."""
        r = self.d.request(method, path, body, ctype=ctype, timeout=ANSWER_TIMEOUT)
        if statuses_ok:
            self.assertIn(r.status, statuses_ok, "%s: %r" % (what, r))
        self.assertTrue(400 <= r.status < 500, "%s: %r" % (what, r))
        self.assertProblem(r, r.status)
        self.assertStillServing(what)

    # -- bodies --
    def test_malformed_json(self):
        for i, body in enumerate([b"{", b"{\"count\": }", b"}", b"nul", b"{\"count\": 1,}", b"\xff\xfe\x00",
                                  b"{\"count\": 1} trailing", b"", b"\x00", b"[" * 10000, b"{\"a\":" * 10000,
                                  b"[" * 10000 + b"]" * 10000, b"{\"count\": \"\\ud800\"}"]):
            self.assertProblemOver("malformed body %d" % i, "PUT", "/v1/nodes/0/hugepages/2M", body,
                                   statuses_ok=(400, 422))
            self.assertProblemOver("malformed pool body %d" % i, "PUT", "/v1/pools/h", body,
                                   statuses_ok=(400, 422))

    def test_huge_numbers(self):
        for n in ["1e400", "-1e400", "9007199254740993", "18446744073709551616", "1" * 400, "-1", "1.5",
                  "0x10", "NaN", "Infinity", "1e-400", "-0"]:
            body = '{"count": %s}' % n
            self.assertProblemOver("count " + n, "PUT", "/v1/nodes/0/hugepages/2M", body, statuses_ok=(400, 422))
            body = '{"node": 0, "size_bytes": %s}' % n
            self.assertProblemOver("size_bytes " + n, "PUT", "/v1/pools/h", body, statuses_ok=(400, 422))
            body = '{"node": %s, "size": "2M"}' % n
            self.assertProblemOver("node " + n, "PUT", "/v1/pools/h", body, statuses_ok=(400, 404, 422))
        self.assertProblemOver("size string huge", "PUT", "/v1/pools/h",
                               '{"node": 0, "size": "99999999999999999999G"}', statuses_ok=(422,))

    def test_hostile_labels(self):
        for label in ['""', '":x"', '"a b"', '"a/b"', '"a\\u0000b"', '"a\\nb"', '"' + "a" * 129 + '"', "7",
                      "null", '["a"]', '"libvirt:\\u00e9"']:
            body = '{"node": 0, "size": "2M", "label": %s}' % label
            self.assertProblemOver("label " + label[:20], "PUT", "/v1/pools/h", body, statuses_ok=(400, 422))

    def test_duplicate_and_case_keys(self):
        self.assertProblemOver("dup", "PUT", "/v1/nodes/0/hugepages/2M", '{"count": 1, "count": 2}')
        self.assertProblemOver("case", "PUT", "/v1/nodes/0/hugepages/2M", '{"COUNT": 1}')
        self.assertProblemOver("nul in string", "PUT", "/v1/pools/h", '{"node": 0, "size": "2M\\u0000"}')

    # -- names and ids --
    def test_names_and_ids(self):
        body = '{"node": 0, "size": "2M"}'
        for name in ["..", ".", "%2e%2e", "%2E%2E", "a%2fb", "a%2Fb", "a/b", "%2f", "%00", "a%", "%zz",
                     "-a", "_a", "a" * 65, "%c3%a9", "a%20b", "a%0ab", "..%2f..%2fetc%2fpasswd", "a\\b",
                     "%252e%252e",
                     # Stock files' names (a leading ~) are never a pool's.
                     "~x", "~n0-2048k-0", "%7en0-2048k-0", "~"]:
            path = "/v1/pools/" + name
            for method, b in (("PUT", body), ("GET", None), ("DELETE", None)):
                self.assertProblemOver("%s %s" % (method, name), method, path, b)
            self.assertProblemOver("claim " + name, "POST", path + "/claim")
        for nid in ["..", "%2e%2e", "0%2f..", "%00", "-1", "00x", "4294967296", "99999999999999999999",
                    "0/../1", "%30%2f"]:
            self.assertProblemOver("node " + nid, "GET", "/v1/nodes/" + nid)
            self.assertProblemOver("reserve node " + nid, "PUT", "/v1/nodes/%s/hugepages/2M" % nid,
                                   '{"count": 1}')
        for size in ["..", "%2f", "2M%2f", "0", "3M", "-2M", "2M/.."]:
            self.assertProblemOver("size " + size, "PUT", "/v1/nodes/0/hugepages/" + size, '{"count": 1}')

    def test_raw_nul_and_control_bytes_in_url(self):
        for what, line in [("raw NUL", b"GET /v1/pools/a\x00b HTTP/1.1\r\nHost: x\r\n\r\n"),
                           ("raw NUL node", b"GET /v1/nodes/\x00 HTTP/1.1\r\nHost: x\r\n\r\n"),
                           ("raw 0xff", b"GET /v1/pools/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n"),
                           ("raw tab", b"GET /v1/pools/a\tb HTTP/1.1\r\nHost: x\r\n\r\n"),
                           ("NUL in header", b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n")]:
            # A NUL in a header value is harmless for GET /v1/health; 200 is fine there.
            self.assertRefused(what, line, allow=(200,) if "header" in what else ())

    # -- sizes --
    def test_long_header(self):
        big = b"X-Big: " + b"a" * (64 * 1024) + b"\r\n"
        self.assertRefused("64 KiB header", b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")

    def test_many_headers(self):
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(5000))
        self.assertRefused("5000 headers", b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
        # A reasonable number is fine.
        some = b"".join(b"X-H%d: v\r\n" % i for i in range(50))
        got, _ = exchange(self.d.port, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + some + b"\r\n")
        self.assertEqual(statuses(got), [200], got[:200])

    def test_long_url(self):
        for n in (2000, 20000, 100000):
            self.assertRefused("URL of %d" % n, b"GET /v1/pools/" + b"a" * n + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertRefused("query of 100k", b"GET /v1/pools?" + b"a=b&" * 25000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
                           allow=(200,))

    def test_declared_huge_body(self):
        for cl in (b"1000000000", b"18446744073709551615", b"99999999999999999999999"):
            codes = self.assertRefused(
                "Content-Length " + cl.decode(),
                b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                + cl + b"\r\n\r\n{\"node\":0", shut_wr=True)
            if codes:
                self.assertIn(codes[0], (400, 413), codes)

    def test_bad_content_length(self):
        for cl in (b"-1", b"abc", b"1, 2", b" ", b"0x10"):
            self.assertRefused("Content-Length " + repr(cl),
                               b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                               b"Content-Length: " + cl + b"\r\n\r\n{}", shut_wr=True)
        self.assertRefused("two Content-Lengths",
                           b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: 2\r\nContent-Length: 30\r\n\r\n{}", shut_wr=True)

    def test_short_body_then_close(self):
        self.assertRefused("body shorter than declared",
                           b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: 100\r\n\r\n{\"node\"", shut_wr=True)

    def test_chunked_too_large(self):
        chunk = b"x" * 8192
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(12)) + b"0\r\n\r\n"
        codes = self.assertRefused(
            "chunked 96 KiB", b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + body)
        if codes:
            self.assertEqual(codes[0], 413, codes)

    def test_chunked_invalid(self):
        head = b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        for what, body in [("bad size", b"zz\r\n{}\r\n0\r\n\r\n"),
                           ("huge size", b"ffffffffffffffffffff\r\n{}\r\n0\r\n\r\n"),
                           ("negative size", b"-5\r\n{}\r\n0\r\n\r\n"),
                           ("short chunk", b"10\r\n{}\r\n0\r\n\r\n"),
                           ("no CRLF", b"2{}0"),
                           ("NUL size", b"\x00\r\n{}\r\n0\r\n\r\n")]:
            self.assertRefused("chunked " + what, head + body, shut_wr=True)
        self.assertRefused("chunked and Content-Length",
                           b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                           shut_wr=True)
        self.assertRefused("unknown transfer coding",
                           b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Transfer-Encoding: gzip\r\n\r\n{}", shut_wr=True)

    # -- request lines --
    def test_garbage_request_lines(self):
        for what, data in [("binary", bytes(range(256))),
                           ("NULs", b"\x00" * 100 + b"\r\n\r\n"),
                           ("no path", b"GET\r\n\r\n"),
                           ("only CRLF", b"\r\n\r\n\r\n"),
                           ("bad version", b"GET /v1/health HTTP/9.9\r\nHost: x\r\n\r\n"),
                           ("no version", b"GET /v1/health FOO\r\n\r\n"),
                           ("spaces", b"GET  /v1/health  HTTP/1.1\r\nHost: x\r\n\r\n"),
                           ("TLS hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64),
                           ("bare LF", b"GET /v1/nodes/%00 HTTP/1.1\nHost: x\n\n"),
                           ("header without colon", b"GET /v1/health HTTP/1.1\r\nHost x\r\n\r\n"),
                           ("obs-fold", b"GET /v1/health HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n"),
                           ("absolute URI", b"GET http://evil/v1/nodes/%00 HTTP/1.1\r\nHost: x\r\n\r\n"),
                           ("unknown method", b"BREW /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"),
                           ("CONNECT", b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: x\r\n\r\n"),
                           ("TRACE", b"TRACE /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")]:
            # libmicrohttpd is lenient with some of these and answers the
            # health check anyway; what matters is no crash and no mutation.
            self.assertRefused(what, data, shut_wr=True, allow=(200, 505))

    def test_http09(self):
        self.assertRefused("HTTP/0.9", b"GET /v1/health\r\n", shut_wr=True)
        self.assertRefused("HTTP/0.9 PUT", b"PUT /v1/nodes/0/hugepages/2M\r\n{\"count\": 1}\r\n", shut_wr=True)

    def test_http10_without_host(self):
        got, _ = exchange(self.d.port, b"GET /v1/health HTTP/1.0\r\n\r\n")
        self.assertEqual(statuses(got), [200], got[:200])
        # HTTP/1.1 requires Host; either answer is acceptable, a mutation is not.
        self.assertRefused("1.1 without Host", b"GET /v1/health HTTP/1.1\r\n\r\n", allow=(200,))

    def test_pipelined(self):
        one = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=ANSWER_TIMEOUT)
        try:
            s.sendall(one + b"GET /v1/nodes HTTP/1.1\r\nHost: x\r\n\r\n" + one)
            got = b""
            deadline = time.monotonic() + ANSWER_TIMEOUT
            while len(statuses(got)) < 3 and time.monotonic() < deadline:
                b = s.recv(65536)
                if not b:
                    break
                got += b
        finally:
            s.close()
        self.assertEqual(statuses(got), [200, 200, 200], got[:500])
        # Pipelined hostile after valid: the valid one is answered, the rest refused or closed.
        got, _ = exchange(self.d.port, one + b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n"
                          b"Content-Type: application/json\r\n\r\n{" + one, shut_wr=True)
        codes = statuses(got)
        self.assertEqual(codes[0], 200, got[:300])
        for c in codes[1:2]:
            self.assertTrue(400 <= c < 500, codes)
        self.assertStillServing("pipelined")

    def test_expect_continue_too_large(self):
        self.assertRefused("Expect 100-continue with 1 GB",
                           b"PUT /v1/pools/h HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                           b"Content-Length: 1000000000\r\nExpect: 100-continue\r\n\r\n", shut_wr=True)

    # -- slow clients --
    def test_slow_clients_do_not_block_others(self):
        """20 clients dribble a request one byte at a time; the others are
        served meanwhile.  With a short connection timeout the daemon also
        cuts a client off that pauses longer than it."""
        partial = b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: "
        socks = []
        try:
            for _ in range(20):
                s = socket.create_connection(("127.0.0.1", self.d.port), timeout=ANSWER_TIMEOUT)
                socks.append(s)
            start = time.monotonic()
            for i, byte in enumerate(partial[:20]):
                for s in socks:
                    s.sendall(bytes([byte]))
                if i % 4 == 0:
                    t0 = time.monotonic()
                    r = self.d.get("/v1/nodes", timeout=ANSWER_TIMEOUT)
                    self.assertEqual(r.status, 200, r)
                    # Bounded well inside the GET's own timeout, with room for
                    # a loaded machine: one stuck behind the slow clients
                    # would never be answered.
                    self.assertLess(time.monotonic() - t0, ANSWER_TIMEOUT - 1, "a GET waited behind slow clients")
                time.sleep(0.1)
            self.assertLess(time.monotonic() - start, 10)
        finally:
            for s in socks:
                s.close()
        self.assertStillServing("slow clients")

    def test_slowloris_timeout(self):
        if not self.short_timeout:
            self.skipTest("hpwarmd has no --connection-timeout; default 30 s is too long for this test")
        s = socket.create_connection(("127.0.0.1", self.d.port), timeout=SHORT_CONN_TIMEOUT * 4)
        try:
            s.sendall(b"GET /v1/health HTTP/1.1\r\nHo")
            t0 = time.monotonic()
            # Pause past the timeout between bytes: the daemon must close on us.
            try:
                b = s.recv(1024)
            except ConnectionResetError:
                b = b""
            waited = time.monotonic() - t0
            self.assertEqual(b, b"", "the daemon answered an incomplete request: %r" % b)
            self.assertLess(waited, SHORT_CONN_TIMEOUT * 3, "idle connection held %.1fs" % waited)
        finally:
            s.close()
        self.assertStillServing("slowloris")

    def test_many_idle_connections(self):
        """Connections opened and left silent take no request slot from
        others (below the per-IP limit)."""
        socks = [socket.create_connection(("127.0.0.1", self.d.port), timeout=ANSWER_TIMEOUT) for _ in range(40)]
        try:
            r = self.d.get("/v1/nodes", timeout=ANSWER_TIMEOUT)
            self.assertEqual(r.status, 200, r)
        finally:
            for s in socks:
                s.close()
        self.assertStillServing("idle connections")

    # -- load --
    def test_concurrency(self):
        """50 clients hammer GET /v1/nodes for a second: every answer is 200."""
        results = []
        errors = []
        lock = threading.Lock()
        stop = time.monotonic() + 1.0

        def client():
            ok = bad = 0
            conn = http.client.HTTPConnection("127.0.0.1", self.d.port, timeout=10)
            try:
                while time.monotonic() < stop:
                    try:
                        conn.request("GET", "/v1/nodes")
                        r = conn.getresponse()
                        r.read()
                        if r.status == 200:
                            ok += 1
                        else:
                            bad += 1
                            with lock:
                                errors.append("status %d" % r.status)
                    except (OSError, http.client.HTTPException) as e:
                        with lock:
                            errors.append(repr(e))
                        conn.close()
                        conn = http.client.HTTPConnection("127.0.0.1", self.d.port, timeout=10)
            finally:
                conn.close()
            with lock:
                results.append((ok, bad))

        threads = [threading.Thread(target=client) for _ in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(len(results), 50)
        self.assertEqual(errors, [])
        total = sum(ok for ok, _ in results)
        self.assertTrue(all(ok > 0 for ok, _ in results), results)
        print("concurrency: %d requests from 50 clients in 1 s" % total)
        self.assertStillServing("50 clients")


class PercentNul(TestCase):
    """A %00 in a path capture must never end the path early: libmicrohttpd's
    own unescaping would turn "/v1/nodes/0/hugepages/2M%00" into a reserve
    of 2M on node 0 and "/v1/pools/a%00b" into pool "a".  http.c keeps the
    URL escaped and the router refuses a capture that decodes to NUL.  Each
    case runs on its own daemon, so a regression cannot leak into others."""

    def check(self, method, path, body=None):
        with Daemon("two-node") as d:
            before = snapshot(d.sysfs)
            r = d.request(method, path, body, timeout=ANSWER_TIMEOUT)
            self.assertTrue(400 <= r.status < 500, "%s %s: %r" % (method, path, r))
            self.assertProblem(r, r.status)
            self.assertEqual(snapshot(d.sysfs), before)

    def test_reserve_size(self):
        self.check("PUT", "/v1/nodes/0/hugepages/2M%00", '{"count": 1}')

    def test_pool_name(self):
        self.check("PUT", "/v1/pools/a%00b", '{"node": 0, "size": "2M"}')

    def test_node_id(self):
        self.check("GET", "/v1/nodes/0%00")


class ProblemUtf8(TestCase):
    """A problem's detail echoes the decoded path capture; "/v1/nodes/%ff"
    must still answer valid UTF-8 JSON (RFC 8259 8.1), or strict clients
    fail to parse the error (found by fuzz_http)."""

    def test_detail_is_utf8(self):
        with Daemon("two-node") as d:
            # 405: that route is PUT-only; 422: not a valid pool name.
            for path, status in (("/v1/nodes/%ff", 404), ("/v1/nodes/0/hugepages/%ad", 405),
                                 ("/v1/pools/%c3", 422), ("/v1/nodes/%c3%28", 404)):
                r = d.get(path, timeout=ANSWER_TIMEOUT)  # Response() decodes the JSON
                self.assertProblem(r, status)


if __name__ == "__main__":
    main()
