"""Lifecycle of hpwarmd: one instance per state
directory, clean SIGTERM, the service manager protocol (READY, STATUS,
WATCHDOG, STOPPING through a fake NOTIFY_SOCKET) and socket activation
(LISTEN_FDS), all without systemd."""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from hpwtest import FIXTURES, HPWARMD, Daemon, TestCase, UnixHTTPConnection, main


class FakeNotify:
    """An AF_UNIX datagram socket standing in for systemd's notify socket."""

    def __init__(self, tmp):
        self.path = os.path.join(tmp, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages = []
        self.cond = threading.Condition()
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            with self.cond:
                self.messages.append((time.monotonic(), data.decode()))
                self.cond.notify_all()

    def wait_for(self, pred, timeout=10, n=1):
        """The (time, message) pairs that PRED holds for, once there are N
        of them, or [] at TIMEOUT."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                hits = [m for m in self.messages if pred(m[1])]
                if len(hits) >= n:
                    return hits
                left = deadline - time.monotonic()
                if left <= 0:
                    return []
                self.cond.wait(left)

    def count(self, line):
        with self.cond:
            return sum(1 for _, m in self.messages if line in m.split("\n"))

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


class Lock(TestCase):
    def test_second_instance_refused(self):
        with Daemon() as first:
            second = Daemon(state_dir=first.state_dir)
            try:
                second.start(expect_ok=False)
                rc = second.proc.wait(15)
                line = second.wait_log(r"another hpwarmd", timeout=10)
            finally:
                second.__exit__()
            self.assertEqual(rc, 1)
            self.assertIsNotNone(line, second.log)
            self.assertIn("(pid %d)" % first.proc.pid, line)
            self.assertIn(first.state_dir, line)
            # The first one is unharmed.
            self.assertEqual(first.get("/v1/health").status, 200)
            self.assertEqual(first.stop(), 0)
            # Once it is gone, a new one starts on the same state dir.
            third = Daemon(state_dir=first.state_dir)
            try:
                third.start()
                self.assertEqual(third.get("/v1/health").status, 200)
                self.assertEqual(third.stop(), 0)
            finally:
                third.__exit__()

    def test_lock_survives_kill(self):
        # flock is released by the kernel: a SIGKILLed daemon does not block
        # its successor.
        with Daemon() as d:
            d.kill()
            nxt = Daemon(state_dir=d.state_dir)
            try:
                nxt.start()
                self.assertEqual(nxt.stop(), 0)
            finally:
                nxt.__exit__()


class BadJournal(TestCase):
    """A journal that cannot be read stops the start, names the file and the
    cause and changes nothing; --reset-state moves it aside and starts."""

    CASES = {
        "garbage": (b"\x8fnot json{{", "not a valid journal"),
        "truncated": (b'{"version":1,"boot_id":"x","reservations":[],"po', "not a valid journal"),
        "future version": (b'{"version":9,"boot_id":"x","reservations":[],"pools":[]}', "newer hpwarmd"),
    }

    def test_refused_then_reset(self):
        for name, (text, cause) in self.CASES.items():
            with self.subTest(name):
                d = Daemon()
                try:
                    os.makedirs(d.state_dir, mode=0o700)
                    path = os.path.join(d.state_dir, "state.json")
                    with open(path, "wb") as f:
                        f.write(text)
                    d.start(expect_ok=False)
                    rc = d.proc.wait(15)
                    line = d.wait_log(r"cannot use .*state\.json", timeout=10)
                    self.assertNotEqual(rc, 0)
                    self.assertIsNotNone(line, d.log)
                    self.assertIn(path, line)
                    self.assertIn(cause, line)
                    self.assertIn("--reset-state", line)
                    with open(path, "rb") as f:
                        self.assertEqual(f.read(), text)
                    d.args = ["--reset-state"]
                    d.start()
                    self.assertEqual(d.get("/v1/health").status, 200)
                    aside = [n for n in os.listdir(d.state_dir) if n.startswith("state.json.corrupt-")]
                    self.assertEqual(len(aside), 1, os.listdir(d.state_dir))
                    self.assertEqual(d.stop(), 0)
                finally:
                    d.__exit__(None, None, None)


class Stop(TestCase):
    def test_sigterm_fast_and_clean(self):
        tmp = tempfile.mkdtemp(prefix="hpwarm-life-")
        try:
            path = os.path.join(tmp, "api.sock")
            with Daemon(socket_path=path) as d:
                # A keep-alive client that stays connected must not delay the stop.
                s = socket.create_connection(("127.0.0.1", d.port))
                s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                s.recv(1000)
                t0 = time.monotonic()
                self.assertEqual(d.stop(), 0)
                self.assertLess(time.monotonic() - t0, 5)
                s.close()
                self.assertIsNotNone(d.wait_log(r"received SIGTERM"))
                self.assertIsNotNone(d.wait_log(r"notice: stopped$"))
            self.assertFalse(os.path.exists(path))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


    def test_draining_refuses_mutations(self):
        # While SIGTERM drains a slow reserve, a mutation on a connection that
        # is still open gets 503 "stopping", the slow reserve finishes and is
        # answered, and the exit is 0.  The reserve's nr_hugepages write is
        # held (fakekernel's nr_hugepages.hold) until the refused mutation has
        # been answered, so the window cannot close early under load; every
        # step waits for its condition, never for a guessed time.
        import http.client
        import json
        from hpwtest import node_hp

        def wait_until(cond, what, timeout=30):
            deadline = time.monotonic() + timeout
            while not cond():
                if time.monotonic() > deadline:
                    self.fail("timed out waiting for " + what)
                time.sleep(0.01)

        with Daemon("two-node") as d:
            hold = d.sysfs_path(node_hp(0, 1048576, "nr_hugepages.hold"))
            held = d.sysfs_path(node_hp(0, 1048576, "nr_hugepages.held"))
            open(hold, "w").close()
            try:
                keep = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
                keep.request("GET", "/v1/health")
                keep.getresponse().read()
                out = {}

                def slow_put():
                    try:
                        out["r"] = d.put("/v1/nodes/0/hugepages/1G", {"count": 2})
                    except Exception as e:  # shown by the assertion below
                        out["e"] = e
                slow = threading.Thread(target=slow_put)
                slow.start()
                # The reserve is inside its nr_hugepages write: accepted, and
                # in flight when the signal comes.
                wait_until(lambda: os.path.exists(held), "the reserve's write to start")
                d.proc.send_signal(signal.SIGTERM)
                self.assertIsNotNone(d.wait_log(r"received SIGTERM", timeout=30))

                # The log line comes just before the daemon refuses
                # mutations; /v1/health on the open connection says when.
                def stopping():
                    keep.request("GET", "/v1/health")
                    return json.loads(keep.getresponse().read())["status"] == "stopping"
                wait_until(stopping, "health to say stopping")
                keep.request("PUT", "/v1/nodes/1/hugepages/2M", body=b'{"count": 9}',
                             headers={"Content-Type": "application/json"})
                r = keep.getresponse()
                body = r.read()
                self.assertEqual(r.status, 503, body)
                self.assertIn(b"urn:hpwarm:problem:stopping", body)
                self.assertEqual(r.getheader("Retry-After"), "1")
                keep.close()
                # The drain is waiting for the held reserve, not done without it.
                self.assertTrue(slow.is_alive(), out)
                self.assertIsNone(d.proc.poll())
            finally:
                os.unlink(hold)
            slow.join(30)
            self.assertFalse(slow.is_alive())
            self.assertIn("r", out, out)
            self.assertEqual(out["r"].status, 200, out["r"])
            self.assertEqual(d.proc.wait(30), 0)
            self.assertFalse(os.path.exists(held))
            self.assertEqual(d.read_u64(node_hp(1, 2048, "nr_hugepages")), 8)  # refused PUT changed nothing
            self.assertEqual(d.read_u64(node_hp(0, 1048576, "nr_hugepages")), 2)  # the drained one landed


class Notify(TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hpwarm-life-")
        self.n = FakeNotify(self.tmp)

    def tearDown(self):
        self.n.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_ready_watchdog_stopping(self):
        env = {"NOTIFY_SOCKET": self.n.path, "WATCHDOG_USEC": "300000"}
        with Daemon(env=env) as d:
            ready = self.n.wait_for(lambda m: "READY=1" in m.split("\n"))
            self.assertTrue(ready, self.n.messages)
            msg = ready[0][1]
            self.assertRegex(msg, r"STATUS=Serving on http://127\.0\.0\.1:%d" % d.port)
            # Listeners are up by the time READY=1 is sent.
            self.assertEqual(d.get("/v1/health").status, 200)
            # Pings at half the period (150 ms).  Counted by their spacing,
            # not in a fixed second a loaded machine could steal from the
            # daemon: most gaps are shorter than the period itself.
            pings = self.n.wait_for(lambda m: "WATCHDOG=1" in m.split("\n"), n=7)
            self.assertEqual(len(pings), 7, self.n.messages)
            gaps = sorted(b[0] - a[0] for a, b in zip(pings, pings[1:]))
            self.assertLess(gaps[len(gaps) // 2], 0.3, gaps)
            self.assertEqual(d.stop(), 0)
            stopping = self.n.wait_for(lambda m: "STOPPING=1" in m.split("\n"))
            self.assertTrue(stopping, self.n.messages)
            ready_t = ready[0][0]
            self.assertGreater(stopping[0][0], ready_t)
            # READY exactly once, even across the stop.
            self.assertEqual(self.n.count("READY=1"), 1)

    def test_watchdog_for_another_pid_is_ignored(self):
        env = {"NOTIFY_SOCKET": self.n.path, "WATCHDOG_USEC": "200000", "WATCHDOG_PID": "1"}
        with Daemon(env=env) as d:
            self.assertTrue(self.n.wait_for(lambda m: "READY=1" in m.split("\n")))
            time.sleep(0.6)
            self.assertEqual(self.n.count("WATCHDOG=1"), 0)
            self.assertEqual(d.stop(), 0)

    def test_without_notify_socket(self):
        # Not under systemd: nothing is sent anywhere, everything works.
        with Daemon(env={"WATCHDOG_USEC": "200000"}) as d:
            self.assertEqual(d.get("/v1/health").status, 200)
            self.assertEqual(d.stop(), 0)
        self.assertEqual(self.n.messages, [])


class SocketActivation(TestCase):
    """LISTEN_FDS/LISTEN_PID as systemd sets them: fds from 3 on."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hpwarm-life-")
        self.sysfs = os.path.join(self.tmp, "sys")
        shutil.copytree(os.path.join(FIXTURES, "two-node"), self.sysfs)
        self.procs = []

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def spawn(self, socks, args=()):
        fds = [s.fileno() for s in socks]
        n = len(fds)

        def child():
            # Move the sockets to 3, 4, ... (via high numbers, so no dup2
            # overwrites a socket not yet moved), then name ourselves.
            tmp = [os.dup2(fd, 100 + i) for i, fd in enumerate(fds)]
            for i, fd in enumerate(tmp):
                os.dup2(fd, 3 + i)
                os.close(fd)
            os.environ["LISTEN_PID"] = str(os.getpid())
            os.environ["LISTEN_FDS"] = str(n)

        cmd = [HPWARMD, "--sysfs-root", self.sysfs, "--state-dir", os.path.join(self.tmp, "state")] + list(args)
        # close_fds=False: Popen would close 3.. after preexec_fn; every other
        # descriptor of ours is close-on-exec anyway (PEP 446).
        p = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=child,
                             close_fds=False, env=None)
        self.procs.append(p)
        return p

    def read_until(self, p, rx, timeout=20):
        lines = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = p.stderr.readline().decode(errors="replace")
            if not line:
                break
            lines.append(line.rstrip("\n"))
            if re.search(rx, line):
                return line, lines
        return None, lines

    def test_tcp_and_unix(self):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(16)
        port = tcp.getsockname()[1]
        path = os.path.join(self.tmp, "api.sock")
        ux = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ux.bind(path)
        ux.listen(16)
        p = self.spawn([tcp, ux], args=["--allow-unauthenticated-tcp"])
        line, lines = self.read_until(p, r"listening on")
        self.assertIsNotNone(line, lines)
        self.assertIn("2 socket(s) from the service manager (TCP port %d, http)" % port, line)
        tcp.close()
        ux.close()
        import http.client
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/v1/health")
        self.assertEqual(c.getresponse().status, 200)
        c.close()
        u = UnixHTTPConnection(path)
        u.request("GET", "/v1/nodes")
        self.assertEqual(u.getresponse().status, 200)
        u.close()
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(15), 0)
        p.stderr.close()
        # The socket belongs to the service manager: left in place.
        self.assertTrue(os.path.exists(path))

    def test_passed_non_loopback_refused(self):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("0.0.0.0", 0))
        tcp.listen(16)
        p = self.spawn([tcp])
        tcp.close()
        rc = p.wait(15)
        err = p.stderr.read().decode()
        p.stderr.close()
        self.assertEqual(rc, 2, err)
        self.assertIn("refusing to listen on passed socket 3 without authentication", err)


if __name__ == "__main__":
    main()
