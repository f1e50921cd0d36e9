"""placement.real: `hpwarm placement sync` against Debian's real Placement
8.0 (sqlite, noauth2; started here, tests/integration/openstack.py) and
the real daemon with a stock of warm files on this host's 2 MiB pages
(under tests/real/guard.sh).  Each point of docs/OPENSTACK.md is shown
with Placement's own answers:

- GET /allocation_candidates for warm pages finds exactly the hosts with
  ready stock (a second compute node, a fixture daemon without hugetlbfs,
  has none);
- an allocation (PUT /allocations/{consumer}, as Nova's scheduler makes)
  consumes them, and Placement refuses the next one;
- a pool handed out from stock stays in the total while the VM holds it;
- the stock emptied under an allocation still syncs: exit 0, the capacity
  held at the usage, a warning in the log;
- a sync that changes nothing writes nothing (generation unchanged);
- --watch reflects a stock change within 2 s of the daemon showing it,
  asking the daemon about once a second (not a tight poll);
- --watch converges after another writer bumped the generation (a trait);
- SIGTERM stops --watch with exit 0.

Compute node providers are made as nova-compute makes them (POST
/resource_providers with the hypervisor's name); every test uses its own
names, so the tests share one Placement and one daemon."""
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openstack  # noqa: E402
from hpwreal import MNT, node0, real_daemon, set_node0_pages  # noqa: E402
from hpwtest import Daemon  # noqa: E402

HPWARM = os.environ.get("HPWARM_CLI", "")
RC = "CUSTOM_HPWARM_2M"
# Stock files of 4 MiB: two 2 MiB pages each.
FILE = 4 << 20
PAGES_PER_FILE = 2
# 2 MiB pages this test asks the kernel for: stock of up to 3 files, one
# pool handed out and its refill, with room to spare.
PAGES = 24


class PlacementReal(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not MNT:
            raise unittest.SkipTest("not under tests/real/guard.sh")
        why = openstack.available()
        if why:
            raise unittest.SkipTest(why)
        if not HPWARM:
            raise unittest.SkipTest("HPWARM_CLI (the CLI) not set")
        cls.tmp = tempfile.mkdtemp(prefix="hpwarm-placement-real-")
        cls.stack = None
        cls.d = cls.cold = None
        try:
            # PAGES free on top of what other processes hold (guard.sh
            # puts the count back afterwards).
            busy = node0("nr_hugepages") - node0("free_hugepages")
            set_node0_pages(busy + PAGES)
            if node0("free_hugepages") < PAGES:
                raise unittest.SkipTest("the kernel gave %d free 2 MiB pages, not %d"
                                        % (node0("free_hugepages"), PAGES))
            cls.pool_dir = os.path.join(MNT, "hpwarm-placement-%d" % os.getpid())
            cls.state = os.path.join(cls.tmp, "state")
            os.mkdir(cls.state)
            cls.d = real_daemon(cls.pool_dir, cls.state)
            cls.d.start()
            # A host without warm memory: a fixture daemon (no hugetlbfs).
            cls.cold = Daemon("two-node")
            cls.cold.start()
            cls.stack = openstack.Stack(prefix="hpwarm-placement-real-os-").__enter__()
            cls.pl = cls.stack.pl
            cls.token_file = os.path.join(cls.tmp, "token")
            with open(cls.token_file, "w") as f:
                f.write("# noauth2 takes any token; 'admin' has the admin role\nadmin\n")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.d and cls.d.proc and cls.d.proc.poll() is None:
                cls.d.put("/v1/stock", {"targets": []})
                for p in (cls.d.get("/v1/pools").json or {}).get("pools", []):
                    cls.d.request("DELETE", "/v1/pools/%s?recycle=false" % p["name"])
        finally:
            for d in (cls.d, cls.cold):
                if d:
                    d.__exit__()
            if cls.stack:
                cls.stack.__exit__()
            if getattr(cls, "pool_dir", None):
                shutil.rmtree(cls.pool_dir, ignore_errors=True)
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.set_stock(0)
        self.watchers = []

    def tearDown(self):
        for w in self.watchers:
            if w.poll() is None:
                w.kill()
                w.wait(10)

    # -- helpers --
    def set_stock(self, files):
        targets = [{"node": 0, "page_size": "2M", "size_bytes": FILE, "count": files}] if files else []
        r = self.d.put("/v1/stock", {"targets": targets})
        self.assertEqual(r.status, 200, r)
        if files:
            self.wait_stock(files)

    def stock(self):
        r = self.d.get("/v1/stock")
        self.assertEqual(r.status, 200, r)
        return r.json["targets"]

    def wait_stock(self, ready, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            t = self.stock()
            if t and t[0]["ready"] == ready and t[0]["warming"] == 0 and t[0]["recycling"] == 0:
                return time.monotonic()
            time.sleep(0.01)
        self.fail("stock never had %d ready files: %s" % (ready, self.stock()))

    def host(self, daemon=None):
        """A compute node as nova-compute makes it: (name, uuid)."""
        name = "cn-%s" % uuid.uuid4().hex[:8]
        return name, self.pl.compute_node(name)

    def sync(self, name, daemon=None, *extra, timeout=30):
        d = daemon or self.d
        t0 = time.monotonic()
        r = subprocess.run([HPWARM, "placement", "sync", "--url", "http://127.0.0.1:%d" % d.port,
                            "--placement", self.pl.url, "--compute-node", name, "--token-file", self.token_file,
                            *extra], capture_output=True, text=True, timeout=timeout)
        r.elapsed = time.monotonic() - t0
        return r

    def synced(self, name, daemon=None):
        r = self.sync(name, daemon)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def watch(self, name, port=None):
        w = subprocess.Popen([HPWARM, "placement", "sync", "--watch", "--url",
                              "http://127.0.0.1:%d" % (port or self.d.port),
                              "--placement", self.pl.url, "--compute-node", name, "--token-file", self.token_file],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.watchers.append(w)
        return w

    def child(self, name, node=0):
        rp = self.pl.provider("%s_hpwarm_numa%d" % (name, node))
        self.assertIsNotNone(rp, "no child provider for node %d of %s" % (node, name))
        return rp

    def inv(self, name, node=0):
        """(total, reserved) of RC on NAME's node provider, None when absent."""
        i = self.pl.inventories(self.child(name, node)["uuid"])["inventories"].get(RC)
        return (i["total"], i["reserved"]) if i else None

    def wait_inv(self, name, want, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            # A watch just started may not have made the provider yet.
            if self.pl.provider("%s_hpwarm_numa0" % name) and self.inv(name) == want:
                return time.monotonic()
            time.sleep(0.02)
        self.fail("inventory of %s stayed %s, not %s" % (name, self.inv(name), want))

    # -- the tests --
    def test_candidates_are_exactly_the_hosts_with_warm_pages(self):
        self.set_stock(2)
        warm, warm_uuid = self.host()
        cold, _ = self.host()
        self.synced(warm)
        self.synced(cold, self.cold)
        # Both hosts have their NUMA node providers under the compute node.
        rp = self.child(warm)
        self.assertEqual(rp["parent_provider_uuid"], warm_uuid)
        self.assertIsNotNone(self.child(cold, 1))
        self.assertEqual(self.inv(warm), (2 * PAGES_PER_FILE, 0))
        self.assertIsNone(self.inv(cold))
        hosts, _ = self.pl.candidates(RC + ":2")
        self.assertIn(warm + "_hpwarm_numa0", hosts)
        self.assertNotIn(cold + "_hpwarm_numa0", hosts)
        self.assertNotIn(cold + "_hpwarm_numa1", hosts)
        # Other tests' hosts may be candidates too; none of ours but the warm one.
        self.assertEqual({h for h in hosts if h.startswith((warm, cold))}, {warm + "_hpwarm_numa0"})
        # More than the warm pages: no candidate on this host.
        hosts, _ = self.pl.candidates(RC + ":%d" % (2 * PAGES_PER_FILE + 1))
        self.assertNotIn(warm + "_hpwarm_numa0", hosts)

    def test_an_allocation_consumes_warm_pages(self):
        self.set_stock(2)
        name, _ = self.host()
        self.synced(name)
        rp = self.child(name)["uuid"]
        vm1, vm2 = str(uuid.uuid4()), str(uuid.uuid4())
        st, doc, _ = self.pl.allocate(vm1, rp, RC, 3)
        self.assertEqual(st, 204, doc)
        usage = self.pl.ok("GET", "/resource_providers/%s/usages" % rp)["usages"]
        self.assertEqual(usage[RC], 3)
        hosts, _ = self.pl.candidates(RC + ":2")
        self.assertNotIn(name + "_hpwarm_numa0", hosts)
        hosts, _ = self.pl.candidates(RC + ":1")
        self.assertIn(name + "_hpwarm_numa0", hosts)
        st, doc, _ = self.pl.allocate(vm2, rp, RC, 2)
        self.assertEqual(st, 409, doc)
        self.pl.ok("DELETE", "/allocations/" + vm1)

    def test_a_pool_handed_out_from_stock_stays_in_the_total(self):
        self.set_stock(2)
        name, _ = self.host()
        self.synced(name)
        rp = self.child(name)["uuid"]
        vm = str(uuid.uuid4())
        st, doc, _ = self.pl.allocate(vm, rp, RC, PAGES_PER_FILE)
        self.assertEqual(st, 204, doc)
        # The VM's host takes a stock file (the libvirt hook's warm).
        r = self.d.put("/v1/pools/vm-" + vm[:8], {"node": 0, "size_bytes": FILE, "page_size": "2M",
                                                  "label": "libvirt:" + vm})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["from_stock"], "full")
        self.wait_stock(2)   # the stock refilled behind it
        r = self.synced(name)
        # 2 ready files + the VM's pool: all warm, the VM's pages still its own.
        self.assertEqual(self.inv(name), (3 * PAGES_PER_FILE, 0), r.stdout)
        hosts, _ = self.pl.candidates(RC + ":%d" % (2 * PAGES_PER_FILE))
        self.assertIn(name + "_hpwarm_numa0", hosts)
        hosts, _ = self.pl.candidates(RC + ":%d" % (2 * PAGES_PER_FILE + 1))
        self.assertNotIn(name + "_hpwarm_numa0", hosts)
        self.d.request("DELETE", "/v1/pools/vm-%s?recycle=false" % vm[:8])
        self.pl.ok("DELETE", "/allocations/" + vm)

    def test_a_stock_file_taken_without_an_allocation_is_not_counted(self):
        """A plain hugepage VM (no CUSTOM_HPWARM_2M in its flavor) that the
        libvirt hook gave a stock file holds no allocation: its pages are
        nobody's warm pages, so only the refilled stock is offered."""
        self.set_stock(2)
        name, _ = self.host()
        self.synced(name)
        r = self.d.put("/v1/pools/plain-vm", {"node": 0, "size_bytes": FILE, "page_size": "2M"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["from_stock"], "full")
        try:
            self.wait_stock(2)
            r = self.synced(name)
            self.assertEqual(self.inv(name), (2 * PAGES_PER_FILE, 0), r.stdout)
            hosts, _ = self.pl.candidates(RC + ":%d" % (2 * PAGES_PER_FILE + 1))
            self.assertNotIn(name + "_hpwarm_numa0", hosts)
        finally:
            self.d.request("DELETE", "/v1/pools/plain-vm?recycle=false")

    def test_stock_emptied_under_an_allocation_still_syncs(self):
        self.set_stock(2)
        name, _ = self.host()
        self.synced(name)
        rp = self.child(name)["uuid"]
        vm = str(uuid.uuid4())
        st, doc, _ = self.pl.allocate(vm, rp, RC, 3)
        self.assertEqual(st, 204, doc)
        self.set_stock(0)
        r = self.sync(name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"warning: %s_hpwarm_numa0 %s: 0 warm pages .* fewer than the 3 pages "
                                   r"allocations use: capacity kept at 3" % (name, RC))
        self.assertEqual(self.inv(name), (3, 0))
        hosts, _ = self.pl.candidates(RC + ":1")
        self.assertNotIn(name + "_hpwarm_numa0", hosts)
        # The allocation gone, the next sync drops the class.
        self.pl.ok("DELETE", "/allocations/" + vm)
        self.synced(name)
        self.assertIsNone(self.inv(name))

    def test_nothing_is_written_when_nothing_changed(self):
        self.set_stock(1)
        name, _ = self.host()
        r = self.synced(name)
        self.assertIn("written", r.stdout)
        gen = self.child(name)["generation"]
        for _ in range(3):
            r = self.synced(name)
            self.assertNotIn("written", r.stdout)
            self.assertIn("unchanged", r.stdout)
        self.assertEqual(self.child(name)["generation"], gen)

    def daemon_requests(self):
        """The daemon's requests so far, by route, but for /metrics (ours)."""
        m = self.d.get("/metrics").body.decode()
        n = {}
        for line in m.splitlines():
            if line.startswith("hpwarmd_http_requests_total{") and 'route="/metrics"' not in line:
                route = re.search(r'route="([^"]*)"', line).group(1)
                n[route] = n.get(route, 0) + int(float(line.rsplit(" ", 1)[1]))
        return n

    def test_watch_reflects_a_stock_change_within_2s(self):
        self.set_stock(1)
        name, _ = self.host()
        w = self.watch(name)
        self.wait_inv(name, (PAGES_PER_FILE, 0))
        time.sleep(1)   # the last sync's aftermath
        # Between changes the watch sits in its parked long poll: over a
        # quiet 5 s at most the one it is in and the next (its 30 s parks
        # end early only for a change); the 1 s poll it replaced made ~5.
        before, t0 = self.daemon_requests(), time.monotonic()
        time.sleep(5)
        after = self.daemon_requests()
        span = time.monotonic() - t0
        asked = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
        print("watch: requests to the daemon over a quiet %.1f s: %r" % (span, asked))
        self.assertLessEqual(sum(asked.values()), 2, "the watch asked the daemon %r in %.1f s" % (asked, span))
        gen = self.child(name)["generation"]
        self.assertEqual(self.child(name)["generation"], gen, "a watch with nothing changed wrote")
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size_bytes": FILE, "count": 3}]})
        self.assertEqual(r.status, 200, r)
        shown = self.wait_stock(3)
        seen = self.wait_inv(name, (3 * PAGES_PER_FILE, 0))
        latency = seen - shown
        print("watch: Placement showed the stock change %.2f s after the daemon did" % latency)
        self.assertLess(latency, 2.0)
        w.send_signal(signal.SIGTERM)
        out, err = w.communicate(timeout=10)
        self.assertEqual(w.returncode, 0, err)
        self.assertIn("stopped by signal %d" % signal.SIGTERM, err)

    def older_daemon(self):
        """A loopback proxy to the daemon that answers as a daemon older
        than the change generation did: /v1/stock without "generation", its
        query ignored (so ?wait=change answers at once).  Returns (server,
        counter of the /v1/stock requests it passed on)."""
        port = self.d.port
        seen = {"stock": 0}

        class Old(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                path = self.path
                if path.split("?")[0] == "/v1/stock":
                    seen["stock"] += 1
                    path = "/v1/stock"
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                c.request("GET", path)
                r = c.getresponse()
                body = r.read()
                if path == "/v1/stock" and r.status == 200:
                    doc = json.loads(body)
                    doc.pop("generation", None)
                    body = json.dumps(doc).encode()
                self.send_response(r.status)
                self.send_header("Content-Type", r.getheader("Content-Type", "application/json"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                c.close()

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Old)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return srv, seen

    def test_watch_polls_an_older_daemon_and_says_so_once(self):
        self.set_stock(1)
        name, _ = self.host()
        srv, seen = self.older_daemon()
        w = self.watch(name, port=srv.server_address[1])
        self.wait_inv(name, (PAGES_PER_FILE, 0))
        before, t0 = seen["stock"], time.monotonic()
        time.sleep(3)
        asked, span = seen["stock"] - before, time.monotonic() - t0
        # About once a second: a poll, not a tight one.
        self.assertGreaterEqual(asked, 1)
        self.assertLessEqual(asked, span + 2, "the watch asked %d times in %.1f s" % (asked, span))
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size_bytes": FILE, "count": 2}]})
        self.assertEqual(r.status, 200, r)
        shown = self.wait_stock(2)
        self.assertLess(self.wait_inv(name, (2 * PAGES_PER_FILE, 0)) - shown, 2.0)
        w.send_signal(signal.SIGTERM)
        out, err = w.communicate(timeout=10)
        self.assertEqual(w.returncode, 0, err)
        self.assertEqual(err.count("says no change generation"), 1, err)

    def test_watch_converges_after_another_writer_bumped_the_generation(self):
        self.set_stock(1)
        name, _ = self.host()
        w = self.watch(name)
        self.wait_inv(name, (PAGES_PER_FILE, 0))
        rp = self.child(name)
        # An operator adds a trait: the provider's generation moves on.
        st, doc, _ = self.pl.req("PUT", "/traits/CUSTOM_HPWARM_TESTED")
        self.assertIn(st, (201, 204), doc)
        doc = self.pl.ok("PUT", "/resource_providers/%s/traits" % rp["uuid"],
                         {"resource_provider_generation": rp["generation"], "traits": ["CUSTOM_HPWARM_TESTED"]})
        self.assertEqual(doc["resource_provider_generation"], rp["generation"] + 1)
        self.set_stock(2)
        self.wait_inv(name, (2 * PAGES_PER_FILE, 0))
        # The trait is still there: the watch re-read, it did not overwrite.
        traits = self.pl.ok("GET", "/resource_providers/%s/traits" % rp["uuid"])["traits"]
        self.assertEqual(traits, ["CUSTOM_HPWARM_TESTED"])
        w.send_signal(signal.SIGTERM)
        out, err = w.communicate(timeout=10)
        self.assertEqual(w.returncode, 0, err)
        self.assertIn("generation conflicts retried after re-reading", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
