"""Pools bound to their VM's life, on this machine's real kernel: a real
process maps a pool file shared (as a VMM does) and is named in the claim;
when it dies the pool is released and its pages are back in the node's free
pool, also across daemon restarts, and never because another process now has
its pid.  Claimed pools without a pid: the /proc sweep reports them once no
process maps them, and --release-unmapped-after releases them.

Run under tests/real/guard.sh (host-wide lock, nr_hugepages restored, private
hugetlbfs unmounted afterwards); every test removes what it created and
kills the processes it started."""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
import hpwjournal  # noqa: E402
from hpwreal import RealKernelCase, node0, real_daemon, set_node0_pages  # noqa: E402
from hpwtest import main  # noqa: E402

SWEEP_MS = "100"
# How long a pool whose owner is gone may take to go: it tells "released"
# from "kept" (a kept pool never goes), with room for a loaded machine.
RELEASE_BOUND = 10.0

# A stand-in VMM: maps the file shared, touches every page, says so, sleeps.
MAPPER = r"""
import ctypes, mmap, os, sys, time
ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: never outlive the test
if os.getppid() != int(sys.argv[2]):
    sys.exit(0)                # the test was gone before prctl took effect
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED)
f.close()
for off in range(0, len(m), 2 << 20):
    m[off] = 1
print("mapped", flush=True)
time.sleep(3600)
"""


class OwnerBound(RealKernelCase):
    POOL_DIR = "hpwarm-owner"
    STATE_PREFIX = "hpwarm-owner-state-"

    def setUp(self):
        self.mappers = []
        super().setUp()
        got = set_node0_pages(32)
        if got < 32:
            self.skipTest("kernel gave only %d of 32 2 MiB pages" % got)

    def daemon(self, *extra):
        return real_daemon(self.pool_dir, self.state, *extra, env={"HPWARMD_TEST_UNMAPPED_SWEEP_MS": SWEEP_MS})

    def tearDown(self):
        try:
            for m in self.mappers:
                if m.poll() is None:
                    m.kill()
                    m.wait()
        finally:
            super().tearDown()

    # -- helpers --
    def ready_pool(self, name, size="8M"):
        r = self.d.put("/v1/pools/" + name, {"node": 0, "size": size})
        self.assertEqual(r.status, 201, r)
        r = self.d.get("/v1/pools/%s?wait=ready&timeout=60" % name, timeout=70)
        self.assertEqual(r.json["state"], "ready", r)
        return r.json

    def start_mapped(self):
        """Start the daemon, warm pool vm and map it from a child process:
        node 0's free pages before, the pool, the child."""
        self.d.start()
        free0 = node0("free_hugepages")
        p = self.ready_pool("vm")
        return free0, p, self.mapper(p["path"])

    def start_again(self):
        """A new daemon on the same pool directory and journal, once the
        old one has stopped."""
        self.d.__exit__()
        self.d = self.daemon()
        self.d.start()

    def mapper(self, path):
        m = subprocess.Popen([sys.executable, "-c", MAPPER, path, str(os.getpid())], stdout=subprocess.PIPE,
                             text=True)
        self.mappers.append(m)
        self.assertEqual(m.stdout.readline().strip(), "mapped")
        return m

    def claim(self, name, body=None, raw=None):
        if raw is not None:
            return self.d.request("POST", "/v1/pools/%s/claim" % name, body=raw)
        if body is None:
            return self.d.request("POST", "/v1/pools/%s/claim" % name)
        return self.d.request("POST", "/v1/pools/%s/claim" % name, body=json.dumps(body).encode())

    def gone_within(self, name, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.d.get("/v1/pools/" + name).status == 404:
                return True
            time.sleep(0.02)
        return self.d.get("/v1/pools/" + name).status == 404

    def metric(self, name, labels=""):
        text = self.d.get("/metrics").body.decode()
        m = re.search(r"^%s%s (\d+)$" % (re.escape(name), re.escape(labels)), text, re.M)
        self.assertIsNotNone(m, name + labels)
        return int(m.group(1))

    # -- tests --
    def test_claim_body_is_strict_and_changes_nothing(self):
        self.d.start()
        p = self.ready_pool("vm")
        m = self.mapper(p["path"])
        dead = subprocess.Popen(["true"])
        dead.wait()
        for bad in ({"pid": 0}, {"pid": -1}, {"pid": "1"}, {"pid": 1.5}, {"pid": None},
                    {"pid": 1 << 40}, {"pidd": m.pid}, {"pid": m.pid, "x": 1}, [m.pid]):
            self.assertProblem(self.claim("vm", bad), 422, "invalid-field")
        r = self.claim("vm", {"pid": dead.pid})
        self.assertProblem(r, 422, "invalid-field")
        self.assertIn("no process %d" % dead.pid, r.json["detail"])
        self.assertProblem(self.claim("vm", raw=b"{\"pid\":"), 400, "malformed-json")
        r = self.d.request("POST", "/v1/pools/vm/claim", body=b"{}", ctype="text/plain")
        self.assertEqual(r.status, 415, r)
        v = self.d.get("/v1/pools/vm").json
        self.assertFalse(v["claimed"])
        self.assertIsNone(v["owner_pid"])
        self.assertIsNone(v["unmapped_since"])
        # No body and {} claim as before; a pid binds it later.
        self.assertEqual(self.claim("vm").json["owner_pid"], None)
        self.assertEqual(self.claim("vm", {}).status, 200)
        r = self.claim("vm", {"pid": m.pid})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["owner_pid"], m.pid)
        # Another live process cannot take it.
        self.assertProblem(self.claim("vm", {"pid": os.getpid()}), 409, "pool-owned")
        self.assertEqual(self.d.get("/v1/pools/vm").json["owner_pid"], m.pid)

    def test_owner_killed_releases_pool(self):
        free0, p, m = self.start_mapped()
        r = self.claim("vm", {"pid": m.pid})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json["owner_pid"], m.pid)
        self.assertEqual(node0("free_hugepages"), free0 - 4)
        time.sleep(0.5)
        self.assertEqual(self.d.get("/v1/pools/vm").status, 200)   # alive: kept
        m.kill()
        m.wait()
        self.assertTrue(self.gone_within("vm", RELEASE_BOUND))
        self.assertFalse(os.path.exists(p["path"]))
        self.assertEqual(node0("free_hugepages"), free0)
        self.assertEqual(self.metric("hpwarmd_pools_released_total", '{reason="owner-exited"}'), 1)
        self.assertEqual(self.metric("hpwarmd_pools_released_total", '{reason="delete"}'), 0)
        self.assertIsNotNone(self.d.wait_log(r"releasing pool vm .*owner process exited", timeout=5))

    def test_restart_while_owner_lives_then_dies(self):
        free0, p, m = self.start_mapped()
        self.assertEqual(self.claim("vm", {"pid": m.pid}).status, 200)
        self.restart()
        v = self.d.get("/v1/pools/vm").json
        self.assertTrue(v["claimed"])
        self.assertEqual(v["owner_pid"], m.pid)
        time.sleep(0.5)
        self.assertEqual(self.d.get("/v1/pools/vm").status, 200)
        m.kill()
        m.wait()
        self.assertTrue(self.gone_within("vm", RELEASE_BOUND))
        self.assertEqual(node0("free_hugepages"), free0)

    def test_restart_after_owner_died(self):
        free0, p, m = self.start_mapped()
        self.assertEqual(self.claim("vm", {"pid": m.pid}).status, 200)
        self.assertEqual(self.d.stop(), 0)
        m.kill()
        m.wait()
        self.start_again()
        self.assertTrue(self.gone_within("vm", RELEASE_BOUND))
        self.assertFalse(os.path.exists(p["path"]))
        self.assertEqual(node0("free_hugepages"), free0)

    def test_reused_pid_releases(self):
        # The journal's start time for the owner no longer matches the
        # process with that pid: as after pid reuse.  That process is a
        # stranger: the pool goes, the process is left alone.
        free0, p, m = self.start_mapped()
        self.assertEqual(self.claim("vm", {"pid": m.pid}).status, 200)
        self.assertEqual(self.d.stop(), 0)
        doc = hpwjournal.read(self.state)
        self.assertEqual(doc["pools"][0]["owner_pid"], m.pid)
        doc["pools"][0]["owner_start_time"] += 1
        hpwjournal.write(self.state, doc)
        self.start_again()
        self.assertTrue(self.gone_within("vm", RELEASE_BOUND))
        self.assertIsNone(m.poll())
        m.kill()
        m.wait()
        self.assertEqual(node0("free_hugepages"), free0)

    def test_unmapped_sweep_and_release(self):
        free0, p, m = self.start_mapped()
        self.assertEqual(self.claim("vm").status, 200)
        time.sleep(0.5)
        self.assertIsNone(self.d.get("/v1/pools/vm").json["unmapped_since"])
        self.assertEqual(self.metric("hpwarmd_pools_unmapped"), 0)
        m.kill()
        m.wait()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and self.d.get("/v1/pools/vm").json["unmapped_since"] is None:
            time.sleep(0.05)
        self.assertRegex(self.d.get("/v1/pools/vm").json["unmapped_since"] or "",
                         r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual(self.metric("hpwarmd_pools_unmapped"), 1)
        time.sleep(1.5)   # only reported without the flag
        self.assertEqual(self.d.get("/v1/pools/vm").status, 200)
        self.restart("--release-unmapped-after", "1")
        self.assertTrue(self.gone_within("vm", RELEASE_BOUND))
        self.assertFalse(os.path.exists(p["path"]))
        self.assertEqual(node0("free_hugepages"), free0)
        self.assertEqual(self.metric("hpwarmd_pools_released_total", '{reason="unmapped"}'), 1)

    def test_release_unmapped_after_is_checked(self):
        for bad in ("-1", "x", "99999999999"):
            d = real_daemon(self.pool_dir, self.state, "--release-unmapped-after", bad)
            d.start(expect_ok=False)
            self.assertEqual(d.proc.wait(timeout=10), 2)
            d.__exit__()


if __name__ == "__main__":
    main()
