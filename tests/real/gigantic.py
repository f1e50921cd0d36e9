"""real.gigantic: 1 GiB pages on this host's kernel, as users run them.

hpwarmd on /sys with a pool directory in each of guard.sh --gigantic's
private mounts (2 MiB and 1 GiB pages), one daemon per test:

- reserve and give back 1 GiB pages through the API and the CLI, each
  answer equal to node 0's counts in /sys; a count beyond the node's
  memory floor is refused and writes nothing; a count the kernel cuts
  short (its gigantic allocator finds no more free gigabytes) is answered
  409 reserve-shortfall with requested and achieved, and rolled back;
- a 2 GiB pool of 1 GiB pages warms to ready, takes exactly its 2 pages
  off node 0's free_hugepages and gives them back on DELETE (the 2 MiB
  counts never move); a ready one survives a restart;
- stock (set with `hpwarm stock set 0:1G:1G:2`, seen only through the
  API and the CLI, never by stock file paths): 1 GiB files handed out
  ready; one filled with a pattern as a guest would and released comes
  back to the stock zeroed in place (the next hand-out is that inode and
  reads all zero) while node 0's free 1 GiB pages do not move;
- elastic: a 1 GiB policy is refused without allow_best_effort where the
  node has no CMA area (runtime_growth "best-effort"); with it, a pool
  grows the node on demand and idle pages go back; a growth the kernel
  cuts short is refused with the counts, put back, and the policy's
  `last` says so.

Exits 77 with the reason printed where the host has no 1 GiB pages (no
hugepages-1048576kB, no pdpe1gb) or cannot reserve 2 of them; the two
checks of a kernel short read-back skip alone where the kernel gives every
page they ask (they ask at most 3 GiB).  Every test deletes its pools,
stock targets and policy, stops its daemon and puts node 0's 1 GiB count
back, also when it fails (policies keep `min` at the count the host had, so
no page of the host's own is given back: it might not come back); guard.sh restores every count and unmounts both
mounts after, however the run ends."""
import json
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from hpwreal import GIG, GIG_PAGES, MNT, MNT_1G, gig0, gigantic_skip_reason, node0, set_gig0  # noqa: E402
from hpwtest import HPWARMD, Daemon, TestCase  # noqa: E402

CLI = os.environ.get("HPWARM_CLI", "")
NODE = "/v1/nodes/0/hugepages/1G"
POLICY = NODE + "/policy"
CHUNK = 64 << 20
# What the checks of a short read-back ask beyond node 0's count: one page
# more than the tests need, so where the kernel could give only GIG_PAGES
# it gives fewer; at most this much memory is taken for a moment.
SHORT_ASK = GIG_PAGES + 1


def wait_for(what, fn, bound=120):
    """FN's first true value, polled; a failure naming WHAT after BOUND s."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("never within %d s: %s" % (bound, what))


def fill(path, size, byte):
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), size, mmap.MAP_SHARED)
        try:
            block = bytes([byte]) * CHUNK
            for off in range(0, size, CHUNK):
                m[off:off + CHUNK] = block
        finally:
            m.close()


def zero_bytes(path):
    """How many bytes of the file read zero (read(2), no mapping)."""
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                return n
            n += b.count(0)


class Gigantic(TestCase):
    def setUp(self):
        self.base = gig0("nr_hugepages")          # node 0's 1 GiB count before the test
        self.base_free = gig0("free_hugepages")
        self.small = (node0("nr_hugepages"), node0("free_hugepages"))   # the 2 MiB counts
        self.dir2m = os.path.join(MNT, "hpwarm-gig-%d" % os.getpid())
        self.dir1g = os.path.join(MNT_1G, "hpwarm-gig-%d" % os.getpid())
        self.state = tempfile.mkdtemp(prefix="hpwarm-gig-state-")
        self.d = None

    def start(self, *extra):
        self.d = Daemon(sysfs_root="/sys", preload=False, state_dir=self.state,
                        args=["--hugetlbfs", "2M=" + self.dir2m, "--hugetlbfs", "1G=" + self.dir1g, *extra])
        self.d.start()
        return self.d

    def tearDown(self):
        try:
            if self.d and self.d.proc and self.d.proc.poll() is None:
                self.d.put("/v1/stock", {"targets": []})
                self.d.request("DELETE", POLICY)
                for p in (self.d.get("/v1/pools").json or {}).get("pools", []):
                    self.d.request("DELETE", "/v1/pools/%s?recycle=false" % p["name"])
        finally:
            if self.d:
                self.d.__exit__()
                if self.d.proc and self.d.proc.stderr:
                    self.d.proc.stderr.close()      # its reader thread ends on it
            set_gig0(self.base)
            for d in (self.dir2m, self.dir1g, self.state):
                shutil.rmtree(d, ignore_errors=True)
        self.assertEqual(gig0("nr_hugepages"), self.base, "node 0's 1 GiB count not back")
        self.assertEqual((node0("nr_hugepages"), node0("free_hugepages")), self.small,
                         "the 2 MiB counts moved")

    # -- helpers --
    def reserve(self, count, **extra):
        return self.d.put(NODE, dict({"count": count}, **extra))

    def reserve_grown(self, count):
        """reserve(COUNT) through the API, grown as grown() says."""
        return self.grown(count, lambda: self.reserve(count),
                          lambda r: r.status == 409 and (r.json or {}).get("type", "").endswith(":reserve-shortfall"),
                          lambda r: r.json.get("detail"))

    def grown(self, count, ask, short, why):
        """ASK() for node 0's 1 GiB pool at COUNT, where the kernel must
        find COUNT - base free, contiguous GiB: on a busy machine it may
        find fewer for a moment (the daemon then refuses with
        reserve-shortfall, SHORT(answer), and restores the count, which is
        right).  Memory is compacted first, as an operator would, and ASK
        tried up to 3 times; a kernel still short skips the test with
        WHY(answer)."""
        for _ in range(3):
            try:
                with open("/proc/sys/vm/compact_memory", "w") as f:
                    f.write("1\n")
            except OSError:
                pass
            r = ask()
            if not short(r):
                return r
            self.assertEqual(gig0("nr_hugepages"), self.base, "a short reservation was not rolled back")
            time.sleep(1)
        self.skipTest("the kernel found fewer than %d free GiB-contiguous blocks three times: %s"
                      % (count - self.base, why(r)))

    def reserve_ours(self):
        """Node 0 grown by GIG_PAGES pages through the API."""
        r = self.reserve_grown(self.base + GIG_PAGES)
        self.assertEqual((r.status, r.json.get("complete")), (200, True), r)
        self.assertEqual(gig0("free_hugepages"), self.base_free + GIG_PAGES)

    def gig_view(self):
        hp = self.d.get("/v1/nodes/0").json["hugepages"]
        return next(h for h in hp if h["page_size_bytes"] == GIG)

    def cli(self, *args):
        if not CLI:
            self.skipTest("the CLI is not built (HPWARM_CLI)")
        return subprocess.run([CLI, "--url", "http://127.0.0.1:%d" % self.d.port, *args],
                              capture_output=True, text=True, timeout=120)

    def metric(self, series):
        for line in self.d.get("/metrics").body.decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[1])
        self.fail("no series " + series)

    def stock(self):
        r = self.d.get("/v1/stock")
        self.assertEqual(r.status, 200, r)
        return r.json["targets"][0]

    def wait_ready(self, name):
        r = self.d.get("/v1/pools/%s?wait=ready&timeout=120" % name, timeout=130)
        self.assertEqual((r.status, r.json["state"]), (200, "ready"), r)
        return r.json

    # -- reserve --
    def test_reserve_and_give_back_through_the_api(self):
        self.start()
        self.assertEqual(self.gig_view()["total"], self.base)
        r = self.reserve_grown(self.base + GIG_PAGES)
        self.assertEqual(r.status, 200, r)
        self.assertEqual((r.json["requested"], r.json["previous"], r.json["total"], r.json["complete"]),
                         (self.base + GIG_PAGES, self.base, self.base + GIG_PAGES, True), r.json)
        self.assertEqual((gig0("nr_hugepages"), gig0("free_hugepages")),
                         (self.base + GIG_PAGES, self.base_free + GIG_PAGES))
        v = self.gig_view()
        self.assertEqual((v["total"], v["free"]), (gig0("nr_hugepages"), gig0("free_hugepages")), v)
        r = self.reserve(self.base)
        self.assertEqual((r.status, r.json["total"]), (200, self.base), r)
        self.assertEqual((gig0("nr_hugepages"), gig0("free_hugepages")), (self.base, self.base_free))

    def test_reserve_and_give_back_through_the_cli(self):
        self.start()
        want = self.base + GIG_PAGES
        p = self.grown(want, lambda: self.cli("reserve", "0", "1G", str(want)),
                       lambda p: p.returncode == 5 and "[reserve-shortfall]" in p.stderr, lambda p: p.stderr.strip())
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("node 0 1G: requested %d, total %d" % (want, want), p.stdout)
        self.assertEqual(gig0("nr_hugepages"), want)
        p = self.cli("nodes")
        row = [l.split() for l in p.stdout.splitlines() if l.split()[:1] == ["0"] and "1G" in l.split()]
        self.assertEqual(row[0][1:4], ["1G", str(want), str(gig0("free_hugepages"))], p.stdout)
        p = self.cli("reserve", "0", "1G", str(self.base))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(gig0("nr_hugepages"), self.base)

    def test_reserve_beyond_the_memory_floor_writes_nothing(self):
        self.start()
        r = self.reserve(self.base + (1 << 20))        # a PiB of 1 GiB pages
        self.assertProblem(r, 409, "insufficient-memory")
        self.assertLess(r.json["max_count"], self.base + (1 << 20), r.json)
        self.assertEqual(gig0("nr_hugepages"), self.base)

    def test_reserve_the_kernel_cuts_short_is_rolled_back(self):
        """The gigantic allocator failing: SHORT_ASK more pages than node 0
        has, with no memory floor in the way; where the kernel gives fewer
        it is 409 reserve-shortfall with both counts and the count put
        back; with allow_partial the pages it gave are kept."""
        self.start("--memory-floor", "0")
        ask = self.base + SHORT_ASK
        r = self.reserve(ask)
        if r.status == 409 and r.json["type"].endswith(":insufficient-memory"):
            self.skipTest("node 0's free memory holds fewer than %d GiB: %s" % (SHORT_ASK, r.json["detail"]))
        if r.status == 200:
            self.skipTest("the kernel gave all %d pages of 1 GiB asked: no short read-back here" % SHORT_ASK)
        self.assertProblem(r, 409, "reserve-shortfall")
        self.assertEqual(r.json["requested"], ask, r.json)
        self.assertLess(r.json["achieved"], ask, r.json)
        self.assertIn("restored the previous %d" % self.base, r.json["detail"])
        self.assertEqual(gig0("nr_hugepages"), self.base)
        self.assertEqual(self.gig_view()["total"], self.base)
        got = r.json["achieved"]
        r = self.reserve(ask, allow_partial=True)
        self.assertEqual((r.status, r.json["complete"]), (200, False), r)
        self.assertLessEqual(gig0("nr_hugepages"), ask)
        self.assertEqual(r.json["total"], gig0("nr_hugepages"))
        print("the kernel gave %d then %d of %d pages of 1 GiB" % (got - self.base, r.json["total"] - self.base,
                                                                  SHORT_ASK))
        self.assertEqual(self.reserve(self.base).status, 200)
        self.assertEqual(gig0("nr_hugepages"), self.base)

    # -- pools --
    def test_warm_2g_pool_takes_exactly_its_pages(self):
        self.start()
        self.reserve_ours()
        free = gig0("free_hugepages")
        r = self.d.put("/v1/pools/vm", {"node": 0, "size": "2G", "page_size": "1G"})
        self.assertEqual(r.status, 201, r)
        p = self.wait_ready("vm")
        self.assertEqual((p["page_size_bytes"], p["size_bytes"], p["bytes_done"]), (GIG, 2 * GIG, 2 * GIG), p)
        self.assertEqual(p["placement"], {"verified": True, "pages_off_node": 0})
        self.assertEqual(os.stat(p["path"]).st_blocks * 512, 2 * GIG)
        self.assertEqual(gig0("free_hugepages"), free - 2)
        self.assertEqual(gig0("nr_hugepages"), self.base + GIG_PAGES)
        v = self.gig_view()
        self.assertEqual((v["free"], v["warm"], v["warming"]), (free - 2, 2, 0), v)
        self.assertEqual(self.metric('hpwarmd_pool_bytes{numa_node="0",page_size_bytes="%d",state="ready"}' % GIG),
                         2 * GIG)
        self.assertIn("size=%d,share=on" % (2 * GIG), p["handoff"]["qemu"])
        self.assertIn("hugepage_size=1G", p["handoff"]["cloud_hypervisor"])
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        self.assertFalse(os.path.exists(p["path"]))
        self.assertEqual(gig0("free_hugepages"), free)

    def test_ready_pool_survives_a_restart(self):
        self.start()
        self.reserve_ours()
        self.assertEqual(self.d.put("/v1/pools/vm", {"node": 0, "size": "1G", "page_size": "1G"}).status, 201)
        path = self.wait_ready("vm")["path"]
        free = gig0("free_hugepages")
        self.assertEqual(self.d.stop(), 0)
        self.d.__exit__()
        self.start()
        p = self.d.get("/v1/pools/vm").json
        self.assertEqual((p["state"], p["bytes_done"], p["path"]), ("ready", GIG, path), p)
        self.assertEqual(gig0("free_hugepages"), free)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        self.assertEqual(gig0("free_hugepages"), free + 1)

    # -- stock --
    def test_stock_hands_out_a_1g_file_and_recycles_it_in_place(self):
        self.start()
        self.reserve_ours()
        free0 = gig0("free_hugepages")
        p = self.cli("stock", "set", "0:1G:1G:2")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.splitlines()[1].split()[:5], ["0", "1G", "1", "GiB", "2"], p.stdout)

        def cli_ready():
            t = json.loads(self.cli("stock", "--json").stdout)["targets"][0]
            return t["ready"] == 2 and t
        t = wait_for("two 1 GiB stock files ready", cli_ready)
        self.assertEqual((t["page_size_bytes"], t["size_bytes"], t["warming"]), (GIG, GIG, 0), t)
        self.assertEqual(gig0("free_hugepages"), free0 - 2)
        held = free0 - 2                         # from here on the free count must not move

        pools = {}
        for name in ("a", "b"):
            r = self.d.put("/v1/pools/" + name, {"node": 0, "size": "1G", "page_size": "1G"})
            self.assertEqual((r.status, r.json["state"], r.json["from_stock"]), (201, "ready", "full"), r)
            pools[name] = r.json["path"]
        t = self.stock()
        self.assertEqual((t["ready"], t["deficit"]), (0, 2), t)
        self.assertEqual(gig0("free_hugepages"), held)

        fill(pools["a"], GIG, 0x5a)              # as a guest would
        ino = os.stat(pools["a"]).st_ino
        self.assertEqual(self.d.request("DELETE", "/v1/pools/a").status, 204)
        t = wait_for("the released file back in the stock",
                     lambda: (lambda t: t["ready"] == 1 and t["recycling"] == 0 and t)(self.stock()))
        self.assertEqual(t["deficit"], 1, t)
        self.assertEqual(gig0("free_hugepages"), held, "the recycle moved pages")
        self.assertEqual(self.metric('hpwarmd_stock_recycles_total{result="recycled"}'), 1)
        self.assertEqual(self.metric("hpwarmd_stock_recycled_bytes_total"), GIG)

        r = self.d.put("/v1/pools/c", {"node": 0, "size": "1G", "page_size": "1G"})
        self.assertEqual((r.status, r.json["state"], r.json["from_stock"]), (201, "ready", "full"), r)
        self.assertEqual(os.stat(r.json["path"]).st_ino, ino, "the hand-out is not the released file")
        self.assertEqual(zero_bytes(r.json["path"]), GIG, "the recycled file is not all zero")
        self.assertEqual(gig0("free_hugepages"), held)

        p = self.cli("stock", "clear")
        self.assertEqual(p.returncode, 0, p.stderr)
        for name in ("b", "c"):
            self.assertEqual(self.d.request("DELETE", "/v1/pools/%s?recycle=false" % name).status, 204)
        wait_for("every 1 GiB page free again", lambda: gig0("free_hugepages") == free0)

    # -- elastic --
    def test_elastic_policy_needs_allow_best_effort_without_cma(self):
        self.start()
        growth = self.gig_view()["runtime_growth"]
        if growth == "reliable":
            self.skipTest("node 0 has a hugetlb_cma area: 1 GiB growth is reliable here")
        self.assertEqual(growth, "best-effort")
        pol = {"min": self.base, "max": self.base + GIG_PAGES, "headroom": 0, "idle_seconds": 1}
        r = self.d.put(POLICY, pol)
        self.assertProblem(r, 409, "growth-not-reliable")
        self.assertIn("allow_best_effort", r.json["detail"])
        self.assertProblem(self.d.get(POLICY), 404, "policy-not-found")
        p = self.cli("reserve", "0", "1G", "--elastic", "--min", str(self.base), "--max", str(self.base + GIG_PAGES),
                     "--idle", "1")
        self.assertEqual(p.returncode, 5, p.stdout + p.stderr)
        self.assertIn("growth-not-reliable", p.stderr)
        p = self.cli("reserve", "0", "1G", "--elastic", "--min", str(self.base), "--max", str(self.base + GIG_PAGES),
                     "--idle", "1", "--allow-best-effort")
        self.assertEqual(p.returncode, 0, p.stderr)
        r = self.d.get(POLICY)
        self.assertEqual((r.status, r.json["allow_best_effort"], r.json["runtime_growth"], r.json["cma_total_bytes"]),
                         (200, True, "best-effort", 0), r)
        self.assertEqual(gig0("nr_hugepages"), self.base)

    def test_elastic_grows_on_demand_and_gives_back(self):
        self.start()
        r = self.d.put(POLICY, {"min": self.base, "max": self.base + GIG_PAGES, "headroom": 0, "idle_seconds": 1,
                                "allow_best_effort": True})
        self.assertEqual(r.status, 200, r)
        # The growth is the kernel's to cut short on a busy machine (the
        # daemon then refuses and puts the count back): as reserve_grown.
        r = self.grown(self.base + GIG_PAGES,
                       lambda: self.d.put("/v1/pools/vm", {"node": 0, "size": "%dG" % GIG_PAGES, "page_size": "1G"}),
                       lambda r: r.status == 409 and (r.json or {}).get("type", "").endswith(":insufficient-hugepages"),
                       lambda r: r.json.get("detail"))
        self.assertEqual(r.status, 201, r)
        self.assertEqual(gig0("nr_hugepages"), self.base + GIG_PAGES, "node 0 did not grow on demand")
        self.wait_ready("vm")
        pol = self.d.get(POLICY).json
        self.assertEqual((pol["last"]["action"], pol["last"]["pages"], pol["grown_pages"]),
                         ("grown", GIG_PAGES, GIG_PAGES), pol)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        pol = wait_for("the idle pages given back",
                       lambda: gig0("nr_hugepages") == self.base and
                       (lambda j: (j["last"] or {}).get("action") == "returned" and j)(self.d.get(POLICY).json))
        self.assertEqual((pol["last"]["pages"], pol["returned_pages"]), (GIG_PAGES, GIG_PAGES), pol)
        self.assertEqual(gig0("free_hugepages"), self.base_free)
        self.assertEqual(self.metric('hpwarmd_elastic_pages_total{numa_node="0",page_size_bytes="%d",'
                                     'direction="returned"}' % GIG), GIG_PAGES)

    def test_elastic_growth_the_kernel_cuts_short_is_refused_and_shown(self):
        """A pool SHORT_ASK pages large on an empty elastic 1 GiB pool: where
        the kernel gives fewer, 409 insufficient-hugepages with requested
        and achieved, the count put back, no pool, and GET policy's `last`
        says the growth failed and how many pages the kernel gave."""
        self.start("--memory-floor", "0")
        r = self.d.put(POLICY, {"min": self.base, "max": self.base + SHORT_ASK, "headroom": 0, "idle_seconds": 1,
                                "allow_best_effort": True})
        if r.status == 409 and r.json["type"].endswith(":insufficient-memory"):
            self.skipTest("node 0's free memory holds fewer than %d GiB: %s" % (SHORT_ASK, r.json["detail"]))
        self.assertEqual(r.status, 200, r)
        r = self.d.put("/v1/pools/big", {"node": 0, "size": "%dG" % SHORT_ASK, "page_size": "1G"})
        if r.status == 201:
            self.skipTest("the kernel gave all %d pages of 1 GiB asked: no failed growth here" % SHORT_ASK)
        self.assertProblem(r, 409, "insufficient-hugepages")
        self.assertIn("the kernel gave fewer pages (count restored)", r.json["detail"])
        self.assertEqual(r.json["requested"], self.base + SHORT_ASK, r.json)
        self.assertLess(r.json["achieved"], self.base + SHORT_ASK, r.json)
        self.assertEqual(gig0("nr_hugepages"), self.base)
        self.assertProblem(self.d.get("/v1/pools/big"), 404, "pool-not-found")
        pol = self.d.get(POLICY).json
        self.assertEqual((pol["last"]["action"], pol["last"]["pages"], pol["grown_pages"]),
                         ("refused", SHORT_ASK, 0), pol)
        self.assertIn("the kernel gave %d of %d pages" % (r.json["achieved"] - self.base, SHORT_ASK),
                      pol["last"]["why"])
        self.assertTrue(self.d.wait_log("could not grow by %d pages" % SHORT_ASK, timeout=5), self.d.log[-5:])
        # What the kernel can hold still grows.
        r = self.d.put("/v1/pools/vm", {"node": 0, "size": "1G", "page_size": "1G"})
        self.assertEqual(r.status, 201, r)
        self.wait_ready("vm")
        self.assertEqual(self.d.get(POLICY).json["last"]["action"], "grown")


def main():
    why = gigantic_skip_reason()
    if why:
        print("SKIP: " + why, flush=True)
        return 77
    if not HPWARMD or not os.path.exists(HPWARMD):
        print("HPWARMD is not set to the daemon binary", file=sys.stderr)
        return 2
    print("1 GiB pages: node 0 has %d, %d free; %s" % (gig0("nr_hugepages"), gig0("free_hugepages"), MNT_1G),
          flush=True)
    r = unittest.main(verbosity=2, exit=False).result
    return 0 if r.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
