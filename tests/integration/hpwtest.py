"""Shared harness for the integration tests: start the real hpwarmd on a
loopback port (port 0, read back from its start line) against a private copy
of a sysfs fixture, talk HTTP to it, stop it with SIGTERM.

Environment (set by ctest): HPWARMD (daemon binary), HPW_FIXTURES (fixture
trees), HPW_FAKEKERNEL (LD_PRELOAD shim that makes fixture nr_hugepages
writes behave like the kernel's; optional)."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

HPWARMD = os.environ.get("HPWARMD", "")
FIXTURES = os.environ.get("HPW_FIXTURES", "")
FAKEKERNEL = os.environ.get("HPW_FAKEKERNEL", "")


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body
        self.json = None
        ctype = self.headers.get("content-type", "")
        if body and "json" in ctype:
            self.json = json.loads(body)

    def __repr__(self):
        return "<%d %s>" % (self.status, self.body[:300])


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=10):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Daemon:
    """One hpwarmd process.  Use as a context manager; the temp tree is removed
    on exit, and the process is killed if it is still running."""

    def __init__(self, fixture="two-node", sysfs_root=None, args=(), preload=True, state_dir=None,
                 socket_path=None, listen=True, env=None, ssl_context=None, wrapper=()):
        self.tmp = tempfile.mkdtemp(prefix="hpwarm-it-")
        if sysfs_root is None:
            sysfs_root = os.path.join(self.tmp, "sys")
            shutil.copytree(os.path.join(FIXTURES, fixture), sysfs_root)
        self.sysfs = sysfs_root
        self.state_dir = state_dir or os.path.join(self.tmp, "state")
        self.socket_path = socket_path
        self.listen = listen
        self.args = list(args)
        self.preload = preload
        self.extra_env = env or {}
        self.ssl_context = ssl_context  # ssl.SSLContext: talk HTTPS to the TCP listener
        # A command the daemon runs under (strace for tests/real/fault_sweep.py):
        # then proc is the wrapper's process and the daemon its child.
        self.wrapper = list(wrapper)
        self.proc = None
        self.port = None
        self.log = []
        self._log_cond = threading.Condition()

    # -- lifecycle --
    def start(self, expect_ok=True):
        cmd = self.wrapper + [HPWARMD, "--sysfs-root", self.sysfs, "--state-dir", self.state_dir]
        if self.listen:
            cmd += ["--listen", "127.0.0.1:0"]
            # A loopback TCP listener without tokens or client CA must be
            # asked for explicitly.
            if not any(a in self.args for a in ("--token-file", "--read-token-file", "--tls-client-ca")):
                cmd += ["--allow-unauthenticated-tcp"]
        if self.socket_path:
            cmd += ["--socket", self.socket_path]
        cmd += self.args
        env = dict(os.environ)
        if self.preload and FAKEKERNEL and self.sysfs != "/sys":
            env["LD_PRELOAD"] = FAKEKERNEL
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
        env.update(self.extra_env)
        with self._log_cond:
            self.log = []
            self._stderr_open = True
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env)
        threading.Thread(target=self._drain, daemon=True).start()
        if not expect_ok:
            return self
        line = self.wait_log(r"listening on ", timeout=20)
        if line is None:
            self.kill()
            raise AssertionError("hpwarmd did not start:\n" + "\n".join(self.log))
        m = re.search(r"https?://127\.0\.0\.1:(\d+)", line)
        if self.listen:
            assert m, line
            self.port = int(m.group(1))
        return self

    def _drain(self):
        try:
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                with self._log_cond:
                    self.log.append(line)
                    self._log_cond.notify_all()
        except (ValueError, OSError):  # stderr closed by stop()
            pass
        with self._log_cond:
            self._stderr_open = False
            self._log_cond.notify_all()

    def wait_log(self, pattern, timeout=10):
        """First log line matching PATTERN (regex), waiting up to TIMEOUT."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._log_cond:
            while True:
                for line in self.log:
                    if rx.search(line):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._more_coming()):
                    return None
                self._log_cond.wait(min(left, 0.2))

    def read_all_log(self, timeout=10):
        """The whole log of a daemon that has exited, once its stderr has been
        read to the end (waiting up to TIMEOUT for that)."""
        deadline = time.monotonic() + timeout
        with self._log_cond:
            while self._stderr_open and time.monotonic() < deadline:
                self._log_cond.wait(0.2)
            return "\n".join(self.log)

    def _more_coming(self):
        # An exited daemon's last lines may still be in the pipe: more is
        # coming until the drain thread has read it to the end.
        return self._stderr_open

    def stop(self, timeout=15):
        """SIGTERM; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        # Under a wrapper the signal goes to the daemon, whose exit ends the
        # wrapper (strace exits with its tracee's status).
        for pid in self.wrapped_pids() or [self.proc.pid]:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        try:
            rc = self.proc.wait(timeout)
            self.proc.stderr.close()
            return rc
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("hpwarmd did not stop within %ds of SIGTERM" % timeout)

    def wrapped_pids(self):
        """The processes the wrapper started (the daemon), read from /proc:
        empty without a wrapper or once it is gone."""
        if not self.wrapper or self.proc is None or self.proc.poll() is not None:
            return []
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                return [int(k) for k in f.read().split()]
        except (OSError, ValueError):
            return []

    def kill(self):
        if self.proc and self.proc.poll() is None:
            # A tracer killed lets its tracees go on running: the daemon
            # under strace is killed first, or it outlives the test.
            for pid in self.wrapped_pids():
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- HTTP --
    def request(self, method, path, body=None, ctype="application/json", headers=None, timeout=30):
        if self.listen and self.ssl_context:
            conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=self.ssl_context)
        elif self.listen:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        else:
            conn = UnixHTTPConnection(self.socket_path, timeout=timeout)
        hdrs = dict(headers or {})
        if body is not None:
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode()
            if ctype:
                hdrs["Content-Type"] = ctype
        try:
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            return Response(r.status, r.getheaders(), r.read())
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def put(self, path, body, **kw):
        return self.request("PUT", path, body, **kw)

    # -- fixture files --
    def sysfs_path(self, rel):
        return os.path.join(self.sysfs, rel)

    def read_u64(self, rel):
        with open(self.sysfs_path(rel)) as f:
            return int(f.read().strip())

    def write_file(self, rel, text):
        with open(self.sysfs_path(rel), "w") as f:
            f.write(text)


def read_head(sock):
    """What SOCK sends up to the end of a response's head (the blank line),
    or all it sent before closing; the part of the body read with it is
    kept at the end."""
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def node_hp(node, kb, leaf):
    return "devices/system/node/node%d/hugepages/hugepages-%dkB/%s" % (node, kb, leaf)


class TestCase(unittest.TestCase):
    def assertProblem(self, r, status, slug=None):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.headers.get("content-type"), "application/problem+json", r)
        for k in ("type", "title", "status", "detail"):
            self.assertIn(k, r.json, r)
        self.assertEqual(r.json["status"], status)
        if slug:
            self.assertEqual(r.json["type"], "urn:hpwarm:problem:" + slug, r)

    def tmpdir(self, prefix="hpwarm-test-"):
        """A new temporary directory, removed when the test ends."""
        d = tempfile.mkdtemp(prefix=prefix)
        self.addCleanup(shutil.rmtree, d, True)
        return d


def main():
    if not HPWARMD or not os.path.exists(HPWARMD):
        raise SystemExit("HPWARMD is not set to the daemon binary")
    unittest.main(verbosity=2)
