"""Elastic policies through the API and the command line, against the
fixture daemon: hostile bodies change nothing (no policy, no journal row,
the counters as they were), a policy survives a restart, --elastic is
checked at start, concurrent policy changes and pool creations all get a
documented answer, and the metrics show what a policy says.

Growing and giving back real pages is tests/real/elastic_real.py's; the
planner's rules are tests/unit/test_elastic.c's."""
import json
import os
import shutil
import subprocess
import tempfile
import threading

import hpwjournal
from hpwtest import HPWARMD, Daemon, TestCase, main

POLICY = "/v1/nodes/0/hugepages/2M/policy"
GOOD = {"min": 0, "max": 12, "headroom": 2, "idle_seconds": 30}
NR0 = "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"


def journal(d):
    """The state dir's journal, snapshot and log together."""
    return hpwjournal.read(d.state_dir)


class Hostile(TestCase):
    def test_bad_bodies_change_nothing(self):
        cases = [
            ("min above max", dict(GOOD, min=13), 422),
            ("headroom above max", dict(GOOD, headroom=13), 422),
            ("max zero", dict(GOOD, max=0), 422),
            ("idle zero", dict(GOOD, idle_seconds=0), 422),
            ("negative min", dict(GOOD, min=-1), 422),
            ("fractional max", dict(GOOD, max=1.5), 422),
            ("max past 2^53", dict(GOOD, max=2 ** 64), 422),
            ("max past 2^32 pages", dict(GOOD, max=2 ** 33), 422),
            ("a string", dict(GOOD, max="12"), 422),
            ("no idle_seconds", {"min": 0, "max": 12, "headroom": 0}, 422),
            ("an unknown key", dict(GOOD, mx=1), 422),
            ("best effort not a bool", dict(GOOD, allow_best_effort=1), 422),
            ("an array", [GOOD], 422),
            ("max past the memory floor", dict(GOOD, max=4000), 409),
        ]
        with Daemon("two-node") as d:
            before = d.read_u64(NR0)
            for what, body, status in cases:
                with self.subTest(what):
                    r = d.put(POLICY, body)
                    self.assertEqual(r.status, status, (what, r))
                    self.assertEqual(d.get(POLICY).status, 404)
                    self.assertEqual(d.read_u64(NR0), before)
            r = d.put(POLICY, '{"min":0,"max":12,"max":13,"headroom":0,"idle_seconds":1}')
            self.assertEqual(r.status, 422, r)
            for path, slug in (("/v1/nodes/7/hugepages/2M/policy", "unknown-node"),
                               ("/v1/nodes/0/hugepages/4M/policy", "unknown-page-size")):
                self.assertProblem(d.put(path, GOOD), 404, slug)
                self.assertProblem(d.get(path), 404, slug)
            self.assertProblem(d.request("DELETE", POLICY), 404, "policy-not-found")
            self.assertFalse(journal(d).get("elastic_policies"))  # none left (a log record says so with [])

    def test_gigantic_without_cma_says_why(self):
        with open("/proc/cmdline") as f:
            if "hugetlb_cma=" in f.read():
                self.skipTest("this host has a hugetlb_cma area")
        with Daemon("two-node") as d:
            r = d.put("/v1/nodes/0/hugepages/1G/policy", {"min": 0, "max": 1, "headroom": 0, "idle_seconds": 60})
            self.assertProblem(r, 409, "growth-not-reliable")
            self.assertIn("hugetlb_cma", r.json["detail"])
            hp = [h for h in d.get("/v1/nodes/0").json["hugepages"] if h["page_size_bytes"] == 1 << 30][0]
            self.assertEqual(hp["runtime_growth"], "best-effort")


class Lifecycle(TestCase):
    def test_policy_survives_a_restart_and_shows_in_metrics(self):
        state = self.tmpdir()
        with Daemon("two-node", state_dir=state) as d:
            r = d.put(POLICY, GOOD)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(journal(d)["elastic_policies"][0]["max"], 12)
            text = d.get("/metrics").body.decode()
            self.assertIn('hpwarmd_elastic_bound_bytes{numa_node="0",page_size_bytes="2097152",bound="max"} %d'
                          % (12 * 2097152), text)
            self.assertIn('hpwarmd_elastic_pages_total{numa_node="0",page_size_bytes="2097152",direction="returned"}',
                          text)
            self.assertEqual(d.stop(), 0)
            d.start()
            r = d.get(POLICY)
            self.assertEqual((r.status, r.json["max"], r.json["headroom"]), (200, 12, 2), r)
            node = d.get("/v1/nodes/0").json["hugepages"][0]
            self.assertEqual(node["elastic"]["max"], 12)
            self.assertEqual(d.request("DELETE", POLICY).status, 204)
            self.assertEqual(d.get(POLICY).status, 404)
            self.assertFalse(journal(d).get("elastic_policies"))  # none left (a log record says so with [])

    def test_elastic_flag_at_start(self):
        for spec, words in (("0:2M:5:4:0:1", "\"min\" (5) is above \"max\" (4)"),
                            ("0:2M:0:4:0", "--elastic wants"),
                            ("0:2M:0:4:0:0", "\"idle_seconds\" must be"),
                            ("0:3M:0:4:0:1", "--elastic wants")):
            with self.subTest(spec):
                p = subprocess.run([HPWARMD, "--elastic", spec, "--version"], capture_output=True, text=True)
                self.assertEqual(p.returncode, 2, p)
                self.assertIn(words, p.stderr)
        d = Daemon("two-node", args=["--elastic", "9:2M:0:4:0:1"])
        try:
            d.start(expect_ok=False)
            self.assertNotEqual(d.proc.wait(20), 0)
            d.read_all_log()
            self.assertTrue(any("no NUMA node 9" in l for l in d.log), d.log)
        finally:
            d.__exit__()
        with Daemon("two-node", args=["--elastic", "0:2M:0:10:1:5"]) as d:
            r = d.get(POLICY)
            self.assertEqual((r.status, r.json["max"], r.json["idle_seconds"]), (200, 10, 5), r)


class Concurrent(TestCase):
    def test_policy_changes_and_creations_at_once(self):
        shm = tempfile.mkdtemp(prefix="hpwarm-elastic-", dir="/dev/shm")
        self.addCleanup(shutil.rmtree, shm, True)
        with Daemon("two-node", env={"HPW_FAKE_HUGETLBFS_2M": shm},
                    args=["--hugetlbfs", "2M=" + os.path.join(shm, "pools")]) as d:
            seen, lock = [], threading.Lock()

            def policies():
                for i in range(40):
                    r = d.request("DELETE", POLICY) if i % 3 == 2 else d.put(POLICY, dict(GOOD, max=8 + i % 5))
                    with lock:
                        seen.append(("policy", r.status, r.body[:300]))

            def creates(k):
                for i in range(15):
                    r = d.put("/v1/pools/c%d-%d" % (k, i), {"node": 0, "size": "2M"})
                    with lock:
                        seen.append(("create", r.status, r.body[:300]))
                    if r.status == 201:
                        d.get("/v1/pools/c%d-%d?wait=ready&timeout=30" % (k, i))
                        d.request("DELETE", "/v1/pools/c%d-%d" % (k, i))

            ts = [threading.Thread(target=policies)] + [threading.Thread(target=creates, args=(k,)) for k in (1, 2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            allowed = {"policy": {200, 204, 404}, "create": {201, 409}}
            self.assertIn(201, [st for k, st, _ in seen if k == "create"])
            for kind, status, body in seen:
                self.assertIn(status, allowed[kind], (kind, status, body))
            self.assertEqual(d.get("/v1/health").status, 200)
            self.assertEqual(d.get("/v1/pools").json["pools"], [])


if __name__ == "__main__":
    main()
