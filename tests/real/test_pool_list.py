"""GET /v1/pools paging and filters on the real kernel: one-page pools of
2 MiB, created through the API, then listed the way clients list them.

- limit/after walk every pool once, in name order, "next" naming the last
  pool of each page and absent on the last;
- the filters (state, node, page_size) pick the pools they name, paged the
  same way;
- without limit, every pool, as before paging;
- `hpwarm pools` (the client library's list call) pages through and shows
  all of them;
- /metrics sums their bytes by node, page size and state;
- the journal's log holds the creates as records (no whole-file rewrite per
  pool) and a restart brings every pool back.
Bad values are checked against the fixture daemon (test_fixture_api.py)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from hpwtest import main  # noqa: E402
from hpwreal import RealKernelCase, pool_files  # noqa: E402
import hpwjournal  # noqa: E402

N = 7
HPWARM = os.environ.get("HPWARM_CLI", "")


class PoolList(RealKernelCase):
    POOL_DIR = "hpwarm-list"
    STATE_PREFIX = "hpwarm-list-state-"

    def setUp(self):
        super().setUp()
        self.start_with_pages(N + 2)
        self.names = sorted("vm-%02d" % i for i in (5, 1, 6, 0, 3, 2, 4))
        for n in reversed(self.names):     # created out of name order
            r = self.d.put("/v1/pools/" + n, {"node": 0, "size": "2M"})
            self.assertEqual(r.status, 201, r)
        for n in self.names:
            self.wait_ready(n)

    def pages(self, query, after=None):
        """Follow "next" from AFTER (None: the first name); every name and
        the number of pages."""
        got, pages = [], 0
        while True:
            q = query + ("&after=" + after if after else "")
            r = self.d.get("/v1/pools?" + q)
            self.assertEqual(r.status, 200, r)
            names = [p["name"] for p in r.json["pools"]]
            got += names
            pages += 1
            if "next" not in r.json:
                return got, pages
            self.assertEqual(r.json["next"], names[-1], r.json)
            self.assertLess(pages, 100, "paging does not end")
            after = r.json["next"]

    def test_pages_walk_every_pool_in_order(self):
        everyone = self.names
        for limit in (1, 2, 3, N, 1000):
            got, pages = self.pages("limit=%d" % limit)
            self.assertEqual(got, everyone, limit)
            self.assertEqual(pages, max(1, -(-len(everyone) // limit)), limit)
        r = self.d.get("/v1/pools")
        self.assertEqual(sorted(p["name"] for p in r.json["pools"]), everyone)
        self.assertNotIn("next", r.json)
        # After a name that is not a pool: the names after it.
        got, _ = self.pages("limit=2", after="vm-025")
        self.assertEqual(got, [n for n in everyone if n > "vm-025"])

    def test_filters(self):
        got, _ = self.pages("limit=2&state=ready")
        self.assertEqual(got, self.names)
        got, _ = self.pages("limit=3&node=0&page_size=2M")
        self.assertEqual(got, self.names)
        got, _ = self.pages("state=warming")
        self.assertEqual(got, [])
        got, _ = self.pages("limit=5&state=cancelled")
        self.assertEqual(got, [])

    def test_metrics_pool_bytes(self):
        """/metrics sums the pools by node, page size and state (one walk of
        the registry, no views)."""
        r = self.d.get("/metrics")
        self.assertEqual(r.status, 200, r)
        got = {}
        for line in r.body.decode().splitlines():
            if line.startswith("hpwarmd_pool_bytes{"):
                labels, value = line.rsplit(" ", 1)
                got[labels] = float(value)
        key = 'hpwarmd_pool_bytes{numa_node="0",page_size_bytes="2097152",state="%s"}'
        self.assertEqual(got.get(key % "ready"), N * 2 * 1024 * 1024, got)
        self.assertEqual(got.get(key % "warming"), 0, got)
        self.assertEqual(got.get(key % "failed"), 0, got)

    def test_cli_pages_through(self):
        if not HPWARM:
            self.skipTest("HPWARM_CLI not set")
        url = "http://127.0.0.1:%d" % self.d.port
        p = subprocess.run([HPWARM, "pools", "--json", "--url", url], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = [x["name"] for x in json.loads(p.stdout)["pools"]]
        self.assertEqual(got, self.names)

    def test_creates_are_log_records_and_survive_restart(self):
        j = hpwjournal.read(self.state)
        self.assertFalse(j["_log"]["torn"])
        self.assertGreaterEqual(j["_log"]["records"], N)
        self.assertEqual(sorted(p["name"] for p in j["pools"]), self.names)
        self.restart()
        got, _ = self.pages("limit=4&state=ready")
        self.assertEqual(got, self.names)


class JournalKill9(RealKernelCase):
    """kill -9 of the real daemon at random moments of a stream of changes
    (create, warm, delete of one-page pools, one record each in the log,
    and, past the log's bound, compactions; the kill lands in either), then
    a restart: every change
    that was answered is there, the one in flight may or may not be, the
    journal reads (hpwjournal: CRCs, replay), and the pool files are the
    listed pools.  Timings pick where the kills land, never the verdict."""
    POOL_DIR = "hpwarm-jkill"
    STATE_PREFIX = "hpwarm-jkill-state-"
    ROUNDS = 6

    def test_kill9_during_appends_and_compactions(self):
        import random
        import signal
        import threading
        seed = int(os.environ.get("HPW_CRASH_SEED", "0")) or random.randrange(1, 1 << 31)
        print("journal kill -9: seed %d (rerun with HPW_CRASH_SEED=%d)" % (seed, seed))
        rng = random.Random(seed)
        self.start_with_pages(12)
        keep = ["k-%02d" % i for i in range(5)]          # always there
        for n in keep:
            self.assertEqual(self.d.put("/v1/pools/" + n, {"node": 0, "size": "2M"}).status, 201)
            self.wait_ready(n)
        present, log_max, changes = set(keep), 0, 0
        for rnd in range(self.ROUNDS):
            proc = self.d.proc
            killed = threading.Event()

            def kill(proc=proc, killed=killed):
                killed.set()
                proc.send_signal(signal.SIGKILL)
            timer = threading.Timer(rng.uniform(0.2, 2.5), kill)
            timer.start()
            inflight = None
            try:
                for i in range(100000):
                    name = "c-%d" % (i % 3)
                    if name in present:
                        inflight = ("delete", name)
                        r = self.d.request("DELETE", "/v1/pools/" + name, timeout=10)
                        self.assertEqual(r.status, 204, r)
                        present.discard(name)
                    else:
                        inflight = ("put", name)
                        r = self.d.put("/v1/pools/" + name, {"node": 0, "size": "2M"}, timeout=10)
                        self.assertEqual(r.status, 201, r)
                        present.add(name)
                        inflight = ("ready", name)
                        self.wait_ready(name, timeout=10)
                    changes += 1
                    inflight = None
            except (OSError, ConnectionError, AssertionError) as e:
                if not killed.is_set():
                    raise AssertionError("round %d: %s before the kill" % (rnd, e))
            timer.join()
            proc.wait()
            self.d.__exit__()
            # Restart on the same state and pools.
            j = hpwjournal.read(self.state)
            log_max = max(log_max, os.path.getsize(os.path.join(self.state, "state.log")))
            self.d = self.daemon()
            self.d.start()
            listed = {p["name"] for p in self.d.get("/v1/pools").json["pools"]}
            maybe = {inflight[1]} if inflight else set()
            self.assertEqual(listed - maybe, present - maybe, "round %d, in flight %s" % (rnd, inflight))
            present = listed
            files = set(pool_files(self.pool_dir))
            self.assertEqual({f for f in files if not f.startswith("~")}, listed, "round %d: files" % rnd)
        print("journal kill -9: %d rounds, %d answered changes, largest log at a kill %d bytes"
              % (self.ROUNDS, changes, log_max))


if __name__ == "__main__":
    main()
