"""Pool mounts that misbehave, on the real kernel:

- a size-limited hugetlbfs mount (size=64M) with a stock target: the mount's
  room, not the node's free pages, is what a pool lacks; stock gives way to
  it when that makes the pool fit, and a pool the mount can never hold is
  refused naming the limit with no stock file destroyed;
- a read-only pool mount: a DELETE whose file can be neither renamed for
  recycling nor removed fails and changes nothing (no dirty row without its
  file, the name still the pool's); after the remount the DELETE recycles.

Runs under tests/real/guard.sh (lock, restore counts); skips (77) outside it
or when the kernel will not give the pages.  Every mount made here is
unmounted on every way out."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from hpwreal import MNT, node0, pool_files, real_daemon, set_node0_pages  # noqa: E402

MIB = 1 << 20


def metric(d, series):
    for line in d.get("/metrics").body.decode().splitlines():
        if line.startswith(series + " "):
            return float(line.split()[1])
    raise AssertionError("no series " + series)


class Mounts(unittest.TestCase):
    def setUp(self):
        if not MNT:
            self.skipTest("not under tests/real/guard.sh")
        self.mounts = []          # unmounted in tearDown, last first
        self.dirs = []            # removed in tearDown
        self.state = tempfile.mkdtemp(prefix="hpwarm-mounts-state-")
        self.d = None

    def tearDown(self):
        try:
            if self.d:
                self.d.kill()
                self.d.__exit__()
        finally:
            for m in reversed(self.mounts):
                subprocess.run(["umount", m], check=False)
            for m in self.dirs:
                shutil.rmtree(m, ignore_errors=True)
            shutil.rmtree(self.state, ignore_errors=True)

    def mount(self, *args):
        subprocess.run(["mount", *args], check=True)

    def stock(self):
        r = self.d.get("/v1/stock")
        self.assertEqual(r.status, 200, r)
        return r.json["targets"][0]

    def wait_stock_ready(self, n, timeout=30):
        end = time.monotonic() + timeout
        while self.stock()["ready"] != n or self.stock()["warming"]:
            self.assertLess(time.monotonic(), end, "stock never had %d ready files: %s" % (n, self.stock()))
            time.sleep(0.01)

    def test_size_limited_mount(self):
        """size=64M (32 pages), two 16 MiB stock files ready (16 pages):
        80 MiB never fits, not even with a stock file grown into it (409
        naming the size= limit, no stock file removed; before, each try
        destroyed the file it grew); 56 MiB fits once the stock gives way,
        and the refills then wait for room in the mount."""
        if set_node0_pages(128) < 128:
            self.skipTest("kernel gave fewer than 128 pages")
        mnt = tempfile.mkdtemp(prefix="hpwarm-lim-")
        self.dirs.append(mnt)
        self.mount("-t", "hugetlbfs", "-o", "pagesize=2M,size=64M", "none", mnt)
        self.mounts.append(mnt)
        pool_dir = os.path.join(mnt, "hpwarm")
        self.d = real_daemon(pool_dir, self.state, "--stock", "0:2M:16M:2")
        self.d.start()
        self.wait_stock_ready(2)

        r = self.d.put("/v1/pools/never", {"node": 0, "size": "80M"})
        self.assertEqual(r.status, 409, r)
        self.assertIn("size= limit", r.json["detail"])
        self.assertEqual(metric(self.d, "hpwarmd_stock_given_way_total"), 0)
        self.assertEqual(self.stock()["ready"], 2)

        r = self.d.put("/v1/pools/never", {"node": 0, "size": "80M"})
        self.assertEqual(r.status, 409, r)
        self.assertEqual(self.stock()["ready"], 2)
        r = self.d.put("/v1/pools/fits", {"node": 0, "size": "56M"})
        self.assertEqual(r.status, 201, r)
        self.assertGreaterEqual(metric(self.d, "hpwarmd_stock_given_way_total"), 1)
        r = self.d.get("/v1/pools/fits?wait=ready&timeout=30", timeout=40)
        self.assertEqual(r.json["state"], "ready", r)
        # 28 of the mount's 32 pages are the pool's: no room for a refill,
        # which waits; nothing fails.
        time.sleep(0.2)
        t = self.stock()
        self.assertEqual((t["ready"], t["warming"]), (0, 0), t)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/fits?recycle=false").status, 204)
        self.wait_stock_ready(2)
        self.assertEqual(self.d.stop(), 0)

    def test_read_only_mount(self):
        """A 4 MiB pool fills node 0 (2 pages), the stock target of its size
        is short; with the pool dir read-only its DELETE fails (500
        pool-file-error) and the pool stays; read-write again, the DELETE
        recycles it and the next PUT of that size is served from stock."""
        if set_node0_pages(2) < 2:
            self.skipTest("kernel gave fewer than 2 pages")
        free0 = node0("free_hugepages")
        if free0 != 2:
            self.skipTest("node 0 has %d free pages, not 2" % free0)
        pool_dir = os.path.join(MNT, "hpwarm-ro-%d" % os.getpid())
        self.dirs.append(pool_dir)
        self.d = real_daemon(pool_dir, self.state)
        self.d.start()
        r = self.d.put("/v1/pools/vm", {"node": 0, "size": "4M"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(self.d.get("/v1/pools/vm?wait=ready&timeout=30", timeout=40).json["state"], "ready")
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "size": "4M", "count": 1}]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.stock()["deficit"], 1)

        self.mount("--bind", pool_dir, pool_dir)
        self.mounts.append(pool_dir)
        self.mount("-o", "remount,bind,ro", pool_dir)
        r = self.d.request("DELETE", "/v1/pools/vm")
        self.assertEqual(r.status, 500, r)
        self.assertEqual(r.json["type"].rsplit(":", 1)[1], "pool-file-error")
        r = self.d.get("/v1/pools/vm")
        self.assertEqual((r.status, r.json["state"]), (200, "ready"), r)
        self.assertEqual(pool_files(pool_dir), ["vm"])
        t = self.stock()
        self.assertEqual((t["recycling"], t["deficit"]), (0, 1), t)

        subprocess.run(["umount", pool_dir], check=True)
        self.mounts.remove(pool_dir)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        self.wait_stock_ready(1)
        r = self.d.put("/v1/pools/vm", {"node": 0, "size": "4M"})
        self.assertEqual((r.status, r.json.get("from_stock")), (201, "full"), r)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm?recycle=false").status, 204)
        self.assertEqual(self.d.put("/v1/stock", {"targets": []}).status, 200)
        self.assertEqual(self.d.stop(), 0)
        self.assertEqual(pool_files(pool_dir), [])
        shutil.rmtree(pool_dir, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
