"""--fixed-hugepages against the fixture daemon (under the fakekernel shim, so
a write to nr_hugepages would really grow the fixture's pool): no request
changes a node's nr_hugepages -- "reserve": true on a create, PUT
.../hugepages/{size}, PUT .../policy, a policy saved before the flag --
and each refusal says why; --elastic with the flag is a usage error; the
CLI's reserve exits as for any 409 and its nodes says the pages are fixed.  Each case is first run without the
flag, where it does grow the pool, so the test cannot pass by a fixture
that never moves.

The pool core's rules are tests/unit/test_pools_admit.c's and
test_pools_elastic.c's (fixed_*)."""
import os
import shutil
import subprocess
import tempfile
import time

from hpwtest import HPWARMD, Daemon, TestCase, main

HPWARM = os.environ.get("HPWARM_CLI", "")
NR0 = "devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages"
NR1 = "devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages"
FREE0 = "devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages"
RESERVE = "/v1/nodes/0/hugepages/2M"
POLICY = "/v1/nodes/0/hugepages/2M/policy"
ELASTIC = {"min": 0, "max": 64, "headroom": 0, "idle_seconds": 3600}
FIXED_WORDS = "hugepages are fixed on this host"


class FixedHugepages(TestCase):
    def daemon(self, fixed, state_dir=None):
        """The two-node fixture daemon with a 2M pool directory (the
        shim's fake hugetlbfs), with or without --fixed-hugepages."""
        shm = tempfile.mkdtemp(prefix="hpwarm-fixed-", dir="/dev/shm")
        self.addCleanup(shutil.rmtree, shm, True)
        args = ["--hugetlbfs", "2M=" + os.path.join(shm, "pools")] + (["--fixed-hugepages"] if fixed else [])
        return Daemon("two-node", env={"HPW_FAKE_HUGETLBFS_2M": shm}, args=args, state_dir=state_dir)

    def beyond_free(self, d):
        """A create on node 0 one page beyond what is free, with reserve."""
        pages = d.read_u64(FREE0) + 1
        return d.put("/v1/pools/big", {"node": 0, "size_bytes": pages * 2 * 1024 * 1024, "reserve": True})

    def test_without_the_flag_requests_grow_the_pool(self):
        with self.daemon(False) as d:
            before = d.read_u64(NR0)
            r = self.beyond_free(d)
            self.assertEqual(r.status, 201, r)
            self.assertGreater(d.read_u64(NR0), before)
            before = d.read_u64(NR0)
            r = d.put(RESERVE, {"count": before + 4})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(d.read_u64(NR0), before + 4)
            r = d.put(POLICY, dict(ELASTIC, min=before + 8))
            self.assertEqual(r.status, 200, r)
            self.assertEqual(d.read_u64(NR0), before + 8)
            self.assertFalse(d.get("/v1/nodes").json["nodes"][0]["hugepages_fixed"])
            if HPWARM:
                p = subprocess.run([HPWARM, "nodes"], capture_output=True, text=True, timeout=30,
                                   env=dict(os.environ, HPWARM_URL="http://127.0.0.1:%d" % d.port))
                self.assertEqual(p.returncode, 0, p)
                self.assertNotIn("hugepages fixed", p.stdout)

    def test_reserve_on_create_grows_nothing(self):
        with self.daemon(True) as d:
            before = (d.read_u64(NR0), d.read_u64(NR1))
            r = self.beyond_free(d)
            self.assertProblem(r, 409, "insufficient-hugepages")
            self.assertIn(FIXED_WORDS, r.json["detail"])
            self.assertIn("--fixed-hugepages", r.json["detail"])
            self.assertEqual(d.get("/v1/pools/big").status, 404)
            # What the free pages hold is made from them, reserve or not.
            r = d.put("/v1/pools/small", {"node": 0, "size": "2M", "reserve": True})
            self.assertEqual(r.status, 201, r)
            self.assertEqual((d.read_u64(NR0), d.read_u64(NR1)), before)

    def test_reservation_refused(self):
        with self.daemon(True) as d:
            before = d.read_u64(NR0)
            for count in (before + 4, max(before - 1, 0), before):
                with self.subTest(count=count):
                    r = d.put(RESERVE, {"count": count})
                    self.assertProblem(r, 409, "hugepages-fixed")
                    self.assertEqual(r.json["title"], "Hugepages are fixed on this host")
                    self.assertIn("--fixed-hugepages", r.json["detail"])
                    self.assertEqual(d.read_u64(NR0), before)

    def test_elastic_policy_refused(self):
        with self.daemon(True) as d:
            before = d.read_u64(NR0)
            r = d.put(POLICY, dict(ELASTIC, min=before + 8))
            self.assertProblem(r, 409, "hugepages-fixed")
            self.assertIn("elastic", r.json["detail"])
            self.assertEqual(d.get(POLICY).status, 404)
            self.assertEqual(d.read_u64(NR0), before)

    def test_saved_policy_is_dormant(self):
        """A policy set before the flag neither grows the pool for a create
        nor gives free pages back."""
        state = self.tmpdir()
        # Without the flag the policy gives node 0's idle free pages back
        # within about a second.
        with self.daemon(False, state_dir=state) as d:
            before = d.read_u64(NR0)
            self.assertEqual(d.put(POLICY, dict(ELASTIC, idle_seconds=1)).status, 200)
            deadline = time.monotonic() + 15
            while d.read_u64(NR0) == before and time.monotonic() < deadline:
                time.sleep(0.1)
            self.assertLess(d.read_u64(NR0), before)
        # With it (a fresh fixture copy, the same journal): nothing moves.
        with self.daemon(True, state_dir=state) as d:
            before = d.read_u64(NR0)
            d.wait_log(r"pools: .*elastic policies in the journal are kept")
            self.assertEqual(d.get(POLICY).status, 200)
            r = d.put("/v1/pools/big", {"node": 0, "size_bytes": (d.read_u64(NR0) + 1) * 2 * 1024 * 1024})
            self.assertProblem(r, 409, "insufficient-hugepages")
            self.assertIn(FIXED_WORDS, r.json["detail"])
            time.sleep(2.5)  # past idle_seconds and several upkeep looks
            self.assertEqual(d.read_u64(NR0), before)

    def test_nodes_say_fixed(self):
        with self.daemon(True) as d:
            nodes = d.get("/v1/nodes").json["nodes"]
            self.assertTrue(nodes and all(n["hugepages_fixed"] is True for n in nodes), nodes)
            self.assertIs(d.get("/v1/nodes/1").json["hugepages_fixed"], True)

    def test_elastic_flag_is_a_usage_error(self):
        for order in (["--fixed-hugepages", "--elastic", "0:2M:0:4:0:1"],
                      ["--elastic", "0:2M:0:4:0:1", "--fixed-hugepages"]):
            with self.subTest(order=order):
                p = subprocess.run([HPWARMD] + order, capture_output=True, text=True, timeout=20)
                self.assertEqual(p.returncode, 2, p)
                self.assertIn("--elastic and --fixed-hugepages exclude each other", p.stderr)

    def test_cli_reserve_prints_the_refusal(self):
        if not HPWARM:
            self.skipTest("HPWARM_CLI (the CLI) not set")
        with self.daemon(True) as d:
            before = d.read_u64(NR0)
            env = dict(os.environ, HPWARM_URL="http://127.0.0.1:%d" % d.port)
            p = subprocess.run([HPWARM, "reserve", "0", "2M", str(before + 4)], capture_output=True, text=True,
                               env=env, timeout=30)
            self.assertEqual(p.returncode, 5, p)  # conflict (409), docs/CLIENT.md
            self.assertIn("[hugepages-fixed]", p.stderr)
            self.assertIn("--fixed-hugepages", p.stderr)
            p = subprocess.run([HPWARM, "reserve", "0", "2M", "--elastic", "--max", "8", "--idle", "60"],
                               capture_output=True, text=True, env=env, timeout=30)
            self.assertEqual(p.returncode, 5, p)
            self.assertIn("[hugepages-fixed]", p.stderr)
            self.assertEqual(d.read_u64(NR0), before)
            for args in (["nodes"], ["nodes", "1"]):
                p = subprocess.run([HPWARM] + args, capture_output=True, text=True, env=env, timeout=30)
                self.assertEqual(p.returncode, 0, p)
                self.assertIn("hugepages fixed on this host", p.stdout)


if __name__ == "__main__":
    main()
