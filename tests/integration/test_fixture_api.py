"""hpwarmd against sysfs fixture trees: every node report, reserve and their
error classes, driven over HTTP on a loopback port."""
import os
import re
import time

import hpwjournal
from hpwtest import Daemon, TestCase, main, node_hp

M2 = 2048
G1 = 1048576


def meminfo(d, node):
    out = {}
    with open(d.sysfs_path("devices/system/node/node%d/meminfo" % node)) as f:
        for line in f:
            m = re.match(r"Node \d+ (\w+):\s+(\d+)", line)
            if m:
                out[m.group(1)] = int(m.group(2))
    return out


class Report(TestCase):
    def test_health(self):
        with Daemon() as d:
            r = d.get("/v1/health")
            self.assertEqual(r.status, 200)
            self.assertEqual(r.json["status"], "ok")
            self.assertRegex(r.json["version"], r"^\d+\.\d+\.\d+")

    def test_start_line(self):
        with Daemon() as d:
            line = d.wait_log(r"listening on")
            self.assertIn("hpwarmd ", line)
            self.assertRegex(line, r"nodes 0\(cpus 0-1\),1\(cpus 2-3\)")
            self.assertRegex(line, r"page sizes 2M,1G")
            self.assertRegex(line, r"; zeroing routine (clzero|avx512|avx2|sse2|erms|memset)$")

    def check_nodes_match_files(self, d, ids, sizes):
        r = d.get("/v1/nodes")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([n["id"] for n in r.json["nodes"]], ids)
        for n in r.json["nodes"]:
            with open(d.sysfs_path("devices/system/node/node%d/cpulist" % n["id"])) as f:
                self.assertEqual(n["cpus"], f.read().strip())
            mi = meminfo(d, n["id"])
            self.assertEqual(n["memory"]["total_bytes"], mi["MemTotal"] * 1024)
            self.assertEqual(n["memory"]["free_bytes"], mi["MemFree"] * 1024)
            got = {h["page_size_bytes"]: h for h in n["hugepages"]}
            self.assertEqual(sorted(got), sorted(kb * 1024 for kb in sizes))
            for kb in sizes:
                h = got[kb * 1024]
                self.assertEqual(h["total"], d.read_u64(node_hp(n["id"], kb, "nr_hugepages")))
                self.assertEqual(h["free"], d.read_u64(node_hp(n["id"], kb, "free_hugepages")))
                self.assertEqual(h["surplus"], d.read_u64(node_hp(n["id"], kb, "surplus_hugepages")))
                self.assertEqual(h["warm"], 0)
                self.assertEqual(h["warming"], 0)
            one = d.get("/v1/nodes/%d" % n["id"])
            self.assertEqual(one.status, 200)
            self.assertEqual(one.json, n)
        glob = {g["page_size_bytes"]: g for g in r.json["hugepages"]}
        for kb in sizes:
            self.assertEqual(glob[kb * 1024]["reserved"],
                             d.read_u64("kernel/mm/hugepages/hugepages-%dkB/resv_hugepages" % kb))
        return r.json

    def test_two_node_exact(self):
        with Daemon("two-node") as d:
            j = self.check_nodes_match_files(d, [0, 1], [M2, G1])
            # Spot-check against the fixture's README table, not only the files.
            self.assertEqual(j["nodes"][1]["cpu_count"], 2)
            self.assertEqual(j["nodes"][0]["hugepages"][0],
                             {"page_size_bytes": 2097152, "total": 16, "free": 12, "available": 9,
                              "surplus": 0, "warm": 0, "warming": 0, "runtime_growth": "reliable",
                              "elastic": None})
            self.assertEqual(j["hugepages"][0]["reserved"], 3)

    def test_available_takes_foreign_reservations_off_every_node(self):
        """resv_hugepages (3 on two-node, no pool warming, so all of it
        belongs to other mappings) is global: each node's `available` is
        its free less all 3, and follows the counter when it changes."""
        with Daemon("two-node") as d:
            hp = {n["id"]: n["hugepages"][0] for n in d.get("/v1/nodes").json["nodes"]}
            self.assertEqual((hp[0]["free"], hp[0]["available"]), (12, 9))
            self.assertEqual((hp[1]["free"], hp[1]["available"]), (7, 4))
            self.assertEqual(d.get("/v1/nodes/1").json["hugepages"][0]["available"], 4)
            d.write_file("kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "10\n")
            hp = {n["id"]: n["hugepages"][0] for n in d.get("/v1/nodes").json["nodes"]}
            self.assertEqual((hp[0]["available"], hp[1]["available"]), (2, 0))
            text = d.get("/metrics").body.decode()
            self.assertIn('hpwarmd_hugepages_bytes{numa_node="0",page_size_bytes="2097152",state="available"} %d'
                          % (2 * 2097152), text)
            self.assertIn('hpwarmd_hugepages_bytes{numa_node="1",page_size_bytes="2097152",state="available"} 0',
                          text)

    def test_four_node(self):
        with Daemon("four-node") as d:
            self.check_nodes_match_files(d, [0, 1, 2, 3], [M2])

    def test_sparse_ids(self):
        with Daemon("sparse") as d:
            self.check_nodes_match_files(d, [0, 2], [M2, G1])
            self.assertProblem(d.get("/v1/nodes/1"), 404, "unknown-node")

    def test_memory_only_node(self):
        with Daemon("memory-only") as d:
            j = self.check_nodes_match_files(d, [0, 1], [M2])
            self.assertEqual(j["nodes"][1]["cpus"], "")
            self.assertEqual(j["nodes"][1]["cpu_count"], 0)

    def test_metrics(self):
        with Daemon("two-node") as d:
            d.get("/v1/nodes")
            r = d.get("/metrics")
            self.assertEqual(r.status, 200)
            self.assertTrue(r.headers["content-type"].startswith("text/plain; version=0.0.4"))
            text = r.body.decode()
            self.assertIn('hpwarmd_hugepages_bytes{numa_node="1",page_size_bytes="2097152",state="total"} %d'
                          % (8 * 2097152), text)
            self.assertIn('hpwarmd_hugepages_bytes{numa_node="1",page_size_bytes="1073741824",state="free"} 0',
                          text)
            self.assertRegex(text, r'hpwarmd_http_requests_total\{route="/v1/nodes",method="GET",code="200"\} 1\b')
            self.assertRegex(text, r'hpwarmd_build_info\{version="[^"]+"\} 1')
            self.assertIn("# TYPE hpwarmd_reservations_total counter", text)
            # Every sample line is NAME{labels} VALUE or NAME VALUE.
            for line in text.splitlines():
                if line and not line.startswith("#"):
                    self.assertRegex(line, r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eE]+$', line)
                    name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
                    if name.endswith("_total"):
                        self.assertIn("# TYPE %s counter" % name, text)

    def test_sigterm_exits_zero(self):
        with Daemon() as d:
            self.assertEqual(d.stop(), 0)


class TwoNodeDaemonCase(TestCase):
    """One daemon on the two-node fixture for the whole class (self.d)."""
    @classmethod
    def setUpClass(cls):
        cls.d = Daemon("two-node").start()

    @classmethod
    def tearDownClass(cls):
        cls.d.__exit__()


class BadInput(TwoNodeDaemonCase):
    def unchanged(self):
        self.assertEqual(self.d.read_u64(node_hp(0, M2, "nr_hugepages")), 16)
        self.assertEqual(self.d.read_u64(node_hp(1, M2, "nr_hugepages")), 8)

    def put(self, body, path="/v1/nodes/0/hugepages/2M", **kw):
        return self.d.put(path, body, **kw)

    def test_malformed_json(self):
        for body in ['{"count": 1', "nope", '{"count": 1} trailing', "", '{"count":}']:
            self.assertProblem(self.put(body), 400, "malformed-json")
        self.unchanged()

    def test_field_errors_422(self):
        bodies = [
            '{"count": 4, "extra": 1}',          # unknown field
            '{"Count": 4}',                      # keys are case-sensitive
            '{"count": "4"}',                    # wrong type
            '{"count": -1}',                     # negative
            '{"count": 1.5}',                    # fractional
            '{"count": 1e300}',                  # huge
            '{"count": 9007199254740993}',       # > 2^53
            '{"count": 4, "count": 5}',          # duplicate key
            '{"count": 4, "allow_partial": 1}',  # wrong type
            '[4]',                               # not an object
            '{}',                                # missing count
            '{"count": {"deep": [[[[1]]]]}}',
        ]
        for body in bodies:
            with self.subTest(body=body):
                self.assertProblem(self.put(body), 422, "invalid-field")
        self.unchanged()

    def test_unknown_node_and_size(self):
        for path in ["/v1/nodes/7/hugepages/2M", "/v1/nodes/01/hugepages/2M", "/v1/nodes/-1/hugepages/2M",
                     "/v1/nodes/x/hugepages/2M"]:
            self.assertProblem(self.put('{"count": 1}', path), 404, "unknown-node")
        # Page sizes this host lacks are 404; what is no page size at all is 422.
        for size in ["4M", "16G", "4K"]:
            self.assertProblem(self.put('{"count": 1}', "/v1/nodes/0/hugepages/" + size), 404, "unknown-page-size")
        self.assertProblem(self.d.get("/v1/nodes/9"), 404, "unknown-node")
        self.assertProblem(self.d.get("/v1/nope"), 404)
        self.unchanged()

    def test_page_size_grammar_error_is_422_with_the_grammar_hint(self):
        """`2MB`, `2m`, `1.5G`, `3M` are not page sizes in the shared size
        grammar: 422 whose detail is the grammar's own hint, in the path
        and in a pool's `page_size`, and nothing changes."""
        cases = {"2MB": "2M", "2m": "2M", "1.5G": None, "3M": None, "2": None, "abc": None}
        for size, fix in cases.items():
            with self.subTest(where="path", size=size):
                r = self.put('{"count": 1}', "/v1/nodes/0/hugepages/" + size)
                self.assertProblem(r, 422, "invalid-field")
                self.assertIn("'%s'" % size, r.json["detail"], r)
                if fix:
                    self.assertIn("write " + fix, r.json["detail"], r)
            with self.subTest(where="body", size=size):
                r = self.d.put("/v1/pools/x", {"node": 0, "size": "2M", "page_size": size})
                self.assertProblem(r, 422, "invalid-field")
                if fix:
                    self.assertIn("write " + fix, r.json["detail"], r)
        self.unchanged()

    def test_bad_pool_input_is_422_before_the_missing_pool_directory(self):
        """This daemon has no pool directory (every create would be 503
        no-hugetlbfs): input the schema refuses is 422 all the same."""
        bad = [{"node": 0, "size": "2M", "threads": 0},
               {"node": 0, "size": "2M", "threads": 4097},
               {"node": 0, "size": "2M", "ttl_seconds": 0},
               {"node": 0, "size": "2M", "ttl_seconds": 10 * 366 * 24 * 3600 + 1},
               {"node": 0, "size": "3M"},
               {"node": 0, "size": "2M", "page_size": "2MB"}]
        for body in bad:
            with self.subTest(body=body):
                self.assertProblem(self.d.put("/v1/pools/x", body), 422, "invalid-field")
        r = self.d.put("/v1/pools/x", {"node": 0, "size": "2M", "threads": 1, "ttl_seconds": 1})
        self.assertProblem(r, 503, "no-hugetlbfs")
        self.assertEqual(self.d.get("/v1/pools").json["pools"], [])

    def test_no_hugetlbfs_carries_retry_after(self):
        """Every 503 carries Retry-After (the contract declares it on every
        503); for no-hugetlbfs it is long, and the slug is not retryable."""
        r = self.d.put("/v1/pools/x", {"node": 0, "size": "2M"})
        self.assertProblem(r, 503, "no-hugetlbfs")
        self.assertGreater(int(r.headers.get("retry-after", "0")), 0, r.headers)
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "size": "2M", "count": 1}]})
        self.assertProblem(r, 503, "no-hugetlbfs")
        self.assertGreater(int(r.headers.get("retry-after", "0")), 0, r.headers)

    def test_node_and_page_size_refusals_have_one_wording(self):
        """Create, stock, policy, reservation and the node view refuse an
        unknown node or page size in the core's words; a node past an int
        gets the same answer as any node the host lacks."""
        for node in (9, 2147483647, 2147483648, 4294967296):
            with self.subTest(node=node):
                r = self.d.put("/v1/pools/x", {"node": node, "size": "2M"})
                self.assertProblem(r, 404, "unknown-node")
                self.assertEqual(r.json["detail"], "there is no NUMA node %d" % node, r.json)
        r = self.d.put("/v1/stock", {"targets": [{"node": 9, "size": "2M", "count": 1}]})
        self.assertProblem(r, 404, "unknown-node")
        self.assertEqual(r.json["detail"], "target 0: there is no NUMA node 9", r.json)
        for path in ("/v1/nodes/9", "/v1/nodes/9/hugepages/2M/policy"):
            with self.subTest(path=path):
                r = self.d.get(path)
                self.assertProblem(r, 404, "unknown-node")
                self.assertEqual(r.json["detail"], "there is no NUMA node 9", r.json)
        want = "the kernel offers no hugepage size 4M (this host has 2M and 1G)"
        r = self.d.put("/v1/pools/x", {"node": 0, "size": "4M", "page_size": "4M"})
        self.assertProblem(r, 404, "unknown-page-size")
        self.assertEqual(r.json["detail"], want, r.json)
        r = self.d.get("/v1/nodes/0/hugepages/4M/policy")
        self.assertProblem(r, 404, "unknown-page-size")
        self.assertEqual(r.json["detail"], want, r.json)
        r = self.d.get("/v1/pools?node=9")
        self.assertProblem(r, 422, "invalid-field")
        self.assertEqual(r.json["detail"], "node filter: there is no NUMA node 9", r.json)
        self.assertEqual(self.d.get("/v1/pools/x").status, 404)
        # A reservation or a policy with a bad path and a bad body: the
        # path's answer, in the rule's words (the handler checks the path
        # before it reads the body; the core checks again, the same way).
        for path in ("/v1/nodes/9/hugepages/2M", "/v1/nodes/9/hugepages/2M/policy"):
            for body in ('{"count": 1}', '{"min": 1', '{"count": "x"}'):
                with self.subTest(path=path, body=body):
                    r = self.put(body, path)
                    self.assertProblem(r, 404, "unknown-node")
                    self.assertEqual(r.json["detail"], "there is no NUMA node 9", r.json)
        for path in ("/v1/nodes/0/hugepages/4M", "/v1/nodes/0/hugepages/4M/policy"):
            for body in ('{"count": 1}', '{"min": 1', '{"count": "x"}'):
                with self.subTest(path=path, body=body):
                    r = self.put(body, path)
                    self.assertProblem(r, 404, "unknown-page-size")
                    self.assertEqual(r.json["detail"], want, r.json)

    def test_page_size_hint_names_only_sizes_the_host_has(self):
        r = self.put('{"count": 1}', "/v1/nodes/0/hugepages/4M")
        self.assertProblem(r, 404, "unknown-page-size")
        self.assertIn("this host has 2M and 1G", r.json["detail"], r)
        with Daemon("four-node") as d:           # 2 MiB pages only
            r = d.put("/v1/nodes/0/hugepages/1G", {"count": 1})
            self.assertProblem(r, 404, "unknown-page-size")
            self.assertIn("this host has 2M)", r.json["detail"], r)
            self.assertNotIn("1G or", r.json["detail"], r)
            self.assertNotIn("or 1G", r.json["detail"], r)

    def test_pool_size_shared_grammar(self):
        # The kernel's kB spelling is a size like any other (it was 422)...
        r = self.put({"node": 0, "size": "2048kB"}, "/v1/pools/kb")
        self.assertNotEqual(r.status, 422, r)
        self.d.request("DELETE", "/v1/pools/kb")
        # ... while a unit in the wrong case says what to write.
        r = self.put({"node": 0, "size": "2m"}, "/v1/pools/lower")
        self.assertProblem(r, 422, "invalid-field")
        self.assertIn("write 2M", r.json["detail"], r)
        r = self.put({"node": 0, "size": "2MB"}, "/v1/pools/decimal")
        self.assertProblem(r, 422, "invalid-field")
        self.assertIn("write 2M", r.json["detail"], r)
        self.unchanged()

    def test_size_spellings(self):
        for size in ["2M", "2MiB", "2048kB"]:
            r = self.put('{"count": 16}', "/v1/nodes/0/hugepages/" + size)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["page_size_bytes"], 2097152)
        for size in ["1G", "1GiB", "1048576kB"]:
            r = self.put('{"count": 1}', "/v1/nodes/0/hugepages/" + size)
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["page_size_bytes"], 1073741824)

    def test_wrong_method(self):
        r = self.d.request("POST", "/v1/nodes")
        self.assertProblem(r, 405, "method-not-allowed")
        self.assertEqual(r.headers["allow"], "GET, HEAD")
        r = self.d.request("DELETE", "/v1/nodes/0/hugepages/2M")
        self.assertEqual(r.headers["allow"], "PUT")
        r = self.d.request("PATCH", "/v1/pools/x")
        self.assertEqual(r.headers["allow"], "GET, HEAD, PUT, DELETE")

    def test_body_too_large(self):
        big = '{"count": 1, "pad": "' + "x" * (70 * 1024) + '"}'
        self.assertProblem(self.put(big), 413, "body-too-large")
        self.unchanged()

    def test_content_type(self):
        self.assertProblem(self.put('{"count": 1}', ctype="text/plain"), 415, "unsupported-media-type")
        self.assertProblem(self.put('{"count": 1}', ctype=None), 415, "unsupported-media-type")
        self.assertEqual(self.put('{"count": 16}', ctype="application/json; charset=utf-8").status, 200)
        self.unchanged()

    def test_hostile_paths(self):
        for path in ["/v1/nodes/0%2f..", "/v1/nodes/%00", "/v1/nodes/0/hugepages/2M%00", "/v1//nodes",
                     "/v1/nodes/" + "9" * 5000]:
            r = self.d.get(path)
            self.assertIn(r.status, (404, 405, 414), (path, r))
        self.assertEqual(self.d.get("/v1/health").status, 200)


class Reserve(TestCase):
    def test_grow_and_shrink(self):
        with Daemon("two-node") as d:
            r = d.put("/v1/nodes/1/hugepages/2M", {"count": 20})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["node"], 1)
            self.assertEqual(r.json["requested"], 20)
            self.assertEqual(r.json["total"], 20)
            self.assertTrue(r.json["complete"])
            self.assertEqual(d.read_u64(node_hp(1, M2, "nr_hugepages")), 20)
            self.assertEqual(d.read_u64(node_hp(0, M2, "nr_hugepages")), 16)  # only node 1 changed
            self.assertEqual(d.get("/v1/nodes/1").json["hugepages"][0]["total"], 20)
            r = d.put("/v1/nodes/1/hugepages/2M", {"count": 2})
            self.assertEqual(r.status, 200, r)
            self.assertEqual(d.read_u64(node_hp(1, M2, "nr_hugepages")), r.json["total"])

    def test_shortfall_restores(self):
        with Daemon("two-node") as d:
            d.write_file(node_hp(0, M2, "nr_hugepages.cap"), "20\n")
            r = d.put("/v1/nodes/0/hugepages/2M", {"count": 40})
            self.assertProblem(r, 409, "reserve-shortfall")
            self.assertEqual(r.json["requested"], 40)
            self.assertEqual(r.json["achieved"], 20)
            self.assertEqual(d.read_u64(node_hp(0, M2, "nr_hugepages")), 16)

    def test_partial_keeps(self):
        with Daemon("two-node") as d:
            d.write_file(node_hp(0, M2, "nr_hugepages.cap"), "20\n")
            r = d.put("/v1/nodes/0/hugepages/2M", {"count": 40, "allow_partial": True})
            self.assertEqual(r.status, 200, r)
            self.assertFalse(r.json["complete"])
            self.assertEqual(r.json["total"], 20)
            self.assertEqual(d.read_u64(node_hp(0, M2, "nr_hugepages")), 20)

    def test_floor_refuses_and_writes_nothing(self):
        with Daemon("two-node", args=["--memory-floor", "1G"]) as d:
            # node 0 has ~5 GiB free: 3000 more 2 MiB pages (~5.9 GiB) cannot fit.
            r = d.put("/v1/nodes/0/hugepages/2M", {"count": 3016})
            self.assertProblem(r, 409, "insufficient-memory")
            self.assertEqual(d.read_u64(node_hp(0, M2, "nr_hugepages")), 16)
            # The refusal says the floor and the largest count that fits,
            # in the detail and as extension members ...
            self.assertEqual(r.json["memory_floor_bytes"], 1 << 30, r)
            most = r.json["max_count"]
            self.assertTrue(16 < most < 3016, r)
            self.assertEqual(most, 16 + (r.json["memory_free_bytes"] - (1 << 30)) // (2 << 20), r)
            self.assertIn("floor of 1G", r.json["detail"], r)
            self.assertIn("at most %d pages fit" % most, r.json["detail"], r)
            # ... and that count is exactly the limit: one more is refused, it works.
            self.assertProblem(d.put("/v1/nodes/0/hugepages/2M", {"count": most + 1}), 409, "insufficient-memory")
            self.assertEqual(d.put("/v1/nodes/0/hugepages/2M", {"count": most}).status, 200)
            self.assertEqual(d.read_u64(node_hp(0, M2, "nr_hugepages")), most)
            # Within the floor it works.
            self.assertEqual(d.put("/v1/nodes/0/hugepages/2M", {"count": 116}).status, 200)

    def test_health_fast_while_reserve_blocks(self):
        # A nr_hugepages write that takes 6 s (compaction) must not stall the
        # HTTP thread: health and reads answer meanwhile, each well inside
        # the write's time, which leaves a loaded machine room for all ten.
        import threading
        with Daemon("two-node") as d:
            d.write_file(node_hp(0, G1, "nr_hugepages.delay_ms"), "6000\n")
            out = {}

            def write():
                out["r"] = d.put("/v1/nodes/0/hugepages/1G", {"count": 2}, timeout=30)
                out["t"] = time.monotonic()
            t = threading.Thread(target=write)
            t0 = time.monotonic()
            t.start()
            time.sleep(0.3)   # a head start: the write is under way
            for _ in range(5):
                s = time.monotonic()
                self.assertEqual(d.get("/v1/health").status, 200)
                self.assertEqual(d.get("/v1/nodes/1").status, 200)
                self.assertLess(time.monotonic() - s, 3.0)
            reads_done = time.monotonic()
            t.join(30)
            self.assertEqual(out["r"].status, 200, out["r"])
            # Answered while the write was still running, however long they took.
            self.assertLess(reads_done, out["t"], "the reads waited for the slow write")
            self.assertGreaterEqual(out["t"] - t0, 6.0)

    def _other_boot(self, d):
        # The journal as a daemon of an earlier boot left it.
        j = hpwjournal.read(d.state_dir)
        j["boot_id"] = "00000000-0000-0000-0000-000000000000"
        hpwjournal.write(d.state_dir, j)

    def test_reapplied_after_reboot(self):
        with Daemon("two-node") as d:
            self.assertEqual(d.put("/v1/nodes/1/hugepages/2M", {"count": 30}).status, 200)
            self.assertEqual(d.stop(), 0)
            # A reboot empties the runtime pool; the daemon puts it back.
            self._other_boot(d)
            d.write_file(node_hp(1, M2, "nr_hugepages"), "8\n")
            d.start()
            self.assertIsNotNone(d.wait_log(r"(?i)re-applied reservation.*node 1", timeout=10), "\n".join(d.log))
            self.assertEqual(d.read_u64(node_hp(1, M2, "nr_hugepages")), 30)

    def test_same_boot_adopts_kernel_count(self):
        # Another tool changed the count while the daemon was down: within
        # the same boot the daemon keeps it, says so, and records it.
        with Daemon("two-node") as d:
            self.assertEqual(d.put("/v1/nodes/1/hugepages/2M", {"count": 30}).status, 200)
            self.assertEqual(d.stop(), 0)
            d.write_file(node_hp(1, M2, "nr_hugepages"), "8\n")
            d.start()
            line = d.wait_log(r"node 1, 2097152-byte pages: the kernel holds 8, not the 30 recorded", timeout=10)
            self.assertIsNotNone(line, "\n".join(d.log))
            self.assertEqual(d.read_u64(node_hp(1, M2, "nr_hugepages")), 8)
            self.assertEqual(d.stop(), 0)
            res = hpwjournal.read(d.state_dir)["reservations"]
            self.assertEqual([(r["node"], r["count"]) for r in res], [(1, 8)])



class PoolListQuery(TwoNodeDaemonCase):
    """GET /v1/pools query parameters: each bad value is a 422 problem whose
    detail names the parameter; good ones answer a (here empty) page.  The
    pages themselves, over real pools, are tests/real/test_pool_list.py's."""

    BAD = {
        "limit": ["0", "1001", "-1", "", "x", "1.5", "1e3", "99999999999999999999999", "%201"],
        "after": ["", "-a", "a/b", "x" * 65, "~stock", "a%20b"],
        "state": ["", "Ready", "stock", "dirty", "bogus"],
        "node": ["", "-1", "2", "x", "01x", "4294967296"],
        "page_size": ["", "3M", "2m", "0", "4K", "bogus"],
    }

    def test_bad_values_name_the_parameter(self):
        for key, values in self.BAD.items():
            for v in values:
                with self.subTest(key=key, value=v):
                    r = self.d.get("/v1/pools?%s=%s" % (key, v))
                    self.assertProblem(r, 422, "invalid-field")
                    self.assertTrue(r.json["detail"].startswith(key + " "), r.json)

    def test_good_values(self):
        for q in ("limit=1", "limit=1000", "after=vm-1", "state=ready", "state=warming", "state=failed",
                  "state=cancelled", "node=0", "node=1", "page_size=2M", "page_size=1G",
                  "limit=5&after=a&state=ready&node=1&page_size=2M", "unknown=1"):
            with self.subTest(q=q):
                r = self.d.get("/v1/pools?" + q)
                self.assertEqual(r.status, 200, r)
                self.assertEqual(r.json, {"pools": []})


class Stock(TestCase):
    """PUT/GET /v1/stock over HTTP: shapes and every refusal (nothing
    changes on a refusal).  Pools and refills are unit.stock's and the real
    kernel tests' business: this daemon has no hugetlbfs."""

    def put_stock(self, d, targets):
        return d.put("/v1/stock", {"targets": targets})

    def assert_problem(self, r, status, slug):
        self.assertEqual(r.status, status, r)
        self.assertEqual(r.headers.get("content-type"), "application/problem+json")
        self.assertEqual(r.json["type"].rsplit(":", 1)[-1], slug, r.json)

    def test_empty(self):
        with Daemon() as d:
            r = d.get("/v1/stock")
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["targets"], [])
            self.assertEqual(set(r.json), {"generation", "targets"})
            r = self.put_stock(d, [])
            self.assertEqual(r.status, 200, r)
            self.assertEqual(r.json["targets"], [])
            m = d.get("/metrics").body.decode()
            for series in ('hpwarmd_stock_requests_total{result="hit"} 0',
                           'hpwarmd_stock_requests_total{result="miss"} 0',
                           "hpwarmd_stock_given_way_total 0",
                           "hpwarmd_stock_refill_duration_seconds_count 0"):
                self.assertIn(series, m)

    def test_delete_recycle_query(self):
        """DELETE ?recycle= takes true or false; anything else is 422 and
        nothing changes (the value is checked before the pool is looked
        up).  The recycle metrics are there from the start."""
        with Daemon() as d:
            for bad in ("maybe", "", "TRUE", "0", "false,true"):
                r = d.request("DELETE", "/v1/pools/nope?recycle=" + bad)
                self.assert_problem(r, 422, "invalid-field")
                self.assertIn("recycle", r.json["detail"])
            for good in ("true", "false"):
                r = d.request("DELETE", "/v1/pools/nope?recycle=" + good)
                self.assert_problem(r, 404, "pool-not-found")
            m = d.get("/metrics").body.decode()
            for series in ("hpwarmd_stock_recycled_bytes_total 0",
                           'hpwarmd_stock_recycles_total{result="recycled"} 0',
                           "hpwarmd_stock_recycle_duration_seconds_count 0"):
                self.assertIn(series, m)

    def test_refusals(self):
        one = {"node": 0, "page_size": "2M", "size": "4M", "count": 1}
        cases = [
            ([dict(one, node=9)], 404, "unknown-node"),
            ([dict(one, page_size="64K")], 404, "unknown-page-size"),
            ([dict(one, size="lots")], 422, "invalid-field"),
            ([dict(one, size="3M")], 422, "invalid-field"),
            ([dict(one, count=0)], 422, "invalid-field"),
            ([dict(one, count=1.5)], 422, "invalid-field"),
            ([one, dict(one, count=2)], 422, "invalid-field"),
            ([dict(one, size="4611686018427387904", count=1024)], 422, "invalid-field"),
            ([{"node": 0, "count": 1}], 422, "invalid-field"),
            # Hostile numbers: a count past the cap or past 2^53,
            # size x count past 64 bits within the cap, sizes that are no
            # multiple of the page size, nodes that cannot be.
            ([dict(one, count=1025)], 422, "invalid-field"),
            ([dict(one, count=2 ** 53)], 422, "invalid-field"),
            ([dict(one, count=2 ** 64)], 422, "invalid-field"),
            ([dict(one, count=-1)], 422, "invalid-field"),
            ([dict(one, size="8E", count=2)], 422, "invalid-field"),
            ([dict(one, size="16E")], 422, "invalid-field"),
            ([dict(one, size="4E", count=1024)], 422, "invalid-field"),
            ([{"node": 0, "size_bytes": 2097153, "count": 1}], 422, "invalid-field"),
            ([dict(one, page_size="1G", size="2M")], 422, "invalid-field"),
            ([dict(one, size="0")], 422, "invalid-field"),
            ([dict(one, node=-1)], 422, "invalid-field"),
            ([dict(one, node=2 ** 31)], 422, "invalid-field"),
            # Duplicates however they are written.
            ([{"node": 0, "size": "4M", "count": 1}, {"node": 0, "page_size": "2M", "size_bytes": 4194304,
                                                     "count": 3}], 422, "invalid-field"),
            ([one, dict(one, node=1), dict(one, size="4096K")], 422, "invalid-field"),
            ([one] * 65, 422, "invalid-field"),
            ([one], 503, "no-hugetlbfs"),
        ]
        with Daemon() as d:
            for targets, status, slug in cases:
                with self.subTest(targets=targets):
                    self.assert_problem(self.put_stock(d, targets), status, slug)
                    self.assertEqual(d.get("/v1/stock").json["targets"], [])
            self.assert_problem(d.put("/v1/stock", {"targets": {}}), 422, "invalid-field")
            r = d.request("PUT", "/v1/stock", body=b"{\"targets\": [", ctype="application/json")
            self.assert_problem(r, 400, "malformed-json")

    def test_unknown_keys(self):
        """Unknown keys, in a target or beside "targets", are refused with
        422 naming the key (as a pool's body refuses them), before anything
        else is looked at: even with a target this daemon could not take."""
        one = {"node": 0, "page_size": "2M", "size": "4M", "count": 1}
        cases = [
            ({"targets": [dict(one, cuont=2)]}, '"cuont" in targets[0]'),
            ({"targets": [one, dict(one, node=1, Count=2)]}, '"Count" in targets[1]'),
            ({"targets": [dict(one, ttl_seconds=5)]}, '"ttl_seconds" in targets[0]'),
            ({"targets": [one], "replace": False}, 'unknown field "replace"'),
            ({"targets": [], "Targets": []}, 'unknown field "Targets"'),
            ({"targets": [{"node": 0, "count": 1, "size": "4M", "x" * 100: 1}]}, '"' + "x" * 64 + '"...'),
        ]
        with Daemon() as d:
            for body, detail in cases:
                with self.subTest(body=body):
                    r = d.put("/v1/stock", body)
                    self.assert_problem(r, 422, "invalid-field")
                    self.assertIn(detail, r.json["detail"])
                    self.assertEqual(d.get("/v1/stock").json["targets"], [])
            # The known keys alone, every one of them, are accepted as far as
            # this daemon goes (no hugetlbfs).
            r = d.put("/v1/stock", {"targets": [one, {"node": 0, "page_size": "2M", "size_bytes": 8 << 20,
                                                      "count": 1}]})
            self.assert_problem(r, 503, "no-hugetlbfs")
            # A pool's body refuses them the same way.
            r = d.put("/v1/pools/vm", {"node": 0, "size": "2M", "cuont": 1})
            self.assert_problem(r, 422, "invalid-field")
            self.assertIn('"cuont"', r.json["detail"])

    def test_stock_like_pool_names(self):
        """A pool name shaped like a stock file's (a leading "~", also
        percent-encoded) is refused by the name rule on every pool route:
        422, never a stock file shown, claimed or deleted."""
        with Daemon() as d:
            for name in ("~n0-2048k-0", "%7En0-2048k-0", "~x"):
                path = "/v1/pools/" + name
                for method, body in (("PUT", b'{"node": 0, "size": "2M"}'), ("GET", None), ("DELETE", None)):
                    with self.subTest(method=method, name=name):
                        r = d.request(method, path, body=body, ctype="application/json")
                        self.assert_problem(r, 422, "invalid-field")
                with self.subTest(method="POST claim", name=name):
                    r = d.request("POST", path + "/claim", body=b"{}", ctype="application/json")
                    self.assert_problem(r, 422, "invalid-field")
            self.assertEqual(d.get("/v1/pools").json["pools"], [])

    def test_bad_flag(self):
        """Every malformed --stock is refused with a message naming it (a
        fifth field or text after COUNT too); one the stock refuses says
        why, and nothing about the pool state, which is fine."""
        for arg, says in (("0:2M:4M", "--stock wants"), ("x:2M:4M:1", "--stock wants"),
                          ("0:2M:4M:0", "--stock wants"), ("0:3M:4M:1", "--stock wants"),
                          ("0:2M:64M:1:1", "--stock wants"), ("0:2M:64M:2junk", "--stock wants"),
                          ("0:2M:3M:1", "--stock refused")):
            with self.subTest(arg=arg):
                d = Daemon(args=("--stock", arg))
                try:
                    d.start(expect_ok=False)
                    rc = d.proc.wait(15)
                    log = d.read_all_log()
                finally:
                    d.__exit__()
                self.assertNotEqual(rc, 0, log)
                self.assertIn(says, log)
                self.assertNotIn("cannot load pool state", log)

if __name__ == "__main__":
    main()
