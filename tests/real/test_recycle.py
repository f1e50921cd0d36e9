"""Recycling on this machine's real kernel: a released pool of a
stocked size comes back to the stock zeroed in place, never while a process
maps it, and a daemon killed while zeroing hands out nothing dirty and leaks
nothing.

Run under tests/real/guard.sh (host-wide lock, nr_hugepages restored,
private hugetlbfs unmounted afterwards); every test removes what it created
and kills the processes it started.  The daemon and its helpers are
in tests/integration/hpwreal.py (RealKernelCase)."""
import mmap
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from hpwtest import main  # noqa: E402
from hpwreal import RealKernelCase, file_path, node0, pool_files  # noqa: E402
import hpwjournal  # noqa: E402

MIB = 1 << 20
CHUNK = 64 * MIB

# A stand-in VM: maps the file shared, writes a pattern over every byte (as
# a guest would), says so, sleeps until killed.
GUEST = r"""
import ctypes, mmap, os, sys
ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: never outlive the test
if os.getppid() != int(sys.argv[2]):
    sys.exit(0)
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED)
f.close()
page = bytes([0x5a]) * (2 << 20)
for off in range(0, len(m), len(page)):
    m[off:off + len(page)] = page
print("mapped", flush=True)
sys.stdin.read()
"""


def fill(path, size, byte):
    """Write BYTE over every byte of the file through a shared mapping."""
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), size, mmap.MAP_SHARED)
        try:
            block = bytes([byte]) * CHUNK
            for off in range(0, size, CHUNK):
                n = min(CHUNK, size - off)
                m[off:off + n] = block[:n]
        finally:
            m.close()


def all_bytes(path, size, byte):
    """Whether every byte of the file is BYTE (read(2): no mapping)."""
    with open(path, "rb", buffering=0) as f:
        left = size
        while left:
            b = f.read(min(CHUNK, left))
            if not b or b.count(byte) != len(b):
                return False
            left -= len(b)
    return True


class Recycle(RealKernelCase):
    def tearDown(self):
        for g in getattr(self, "guests", []):
            if g.poll() is None:
                g.kill()
                g.wait()
        if self.d.proc and self.d.proc.poll() is None:
            self.d.put("/v1/stock", {"targets": []})
        super().tearDown()

    def target(self, size, count=1):
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": size, "count": count}]})
        self.assertEqual(r.status, 200, r)

    def take(self, name, size):
        r = self.d.put("/v1/pools/" + name, {"node": 0, "size": size})
        self.assertEqual(r.status, 201, r)
        self.assertEqual((r.json["state"], r.json["from_stock"]), ("ready", "full"), r)
        return r.json["path"]

    def vm_from_stock(self, size):
        """The daemon on 32 pages, a stock target of one SIZE file, and pool
        vm handed out from it: node 0's free pages before, its path, its
        inode."""
        self.start_with_pages(32)
        free0 = node0("free_hugepages")
        self.target(size)
        self.wait_stock_ready(1)
        path = self.take("vm", size)
        return free0, path, os.stat(path).st_ino

    def rows(self):
        return [p for p in hpwjournal.read(self.state)["pools"] if p["name"].startswith("~")]

    def metric(self, series):
        for line in self.d.get("/metrics").body.decode().splitlines():
            if line.startswith(series + " "):
                return float(line.split()[1])
        self.fail("no series " + series)

    def guest(self, path):
        g = subprocess.Popen([sys.executable, "-c", GUEST, path, str(os.getpid())], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.guests = getattr(self, "guests", []) + [g]
        self.assertEqual(g.stdout.readline().strip(), "mapped")
        return g

    def clean_up(self, free0):
        """Targets dropped and pools deleted: no file, every page free."""
        self.assertEqual(self.d.put("/v1/stock", {"targets": []}).status, 200)
        for p in self.d.get("/v1/pools").json["pools"]:
            self.assertEqual(self.d.request("DELETE", "/v1/pools/%s?recycle=false" % p["name"]).status, 204)
        self.assertEqual(pool_files(self.pool_dir), [])
        self.assertEqual(node0("free_hugepages"), free0)

    def test_zeroing_proof(self):
        """A guest fills every page of a stock-served pool; DELETE recycles
        it (the node has no page for a refill); the next pool of that size
        is the same inode, served from stock, and reads all zero.  Then
        ?recycle=false removes the file although the target is short, and
        the pages it frees refill the stock at once (not at the next
        sweep, a minute away)."""
        size = 64 * MIB
        free0, path, ino = self.vm_from_stock("64M")
        fill(path, size, 0xA5)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        self.assertEqual(self.d.get("/v1/pools/vm").status, 404)
        t = self.stock()[0]
        self.assertEqual((t["recycling"] + t["ready"], t["deficit"]), (1, 0), t)
        self.wait_stock_ready(1, timeout=30)
        self.assertEqual(self.metric("hpwarmd_stock_recycled_bytes_total"), size)
        self.assertEqual(self.metric('hpwarmd_stock_recycles_total{result="recycled"}'), 1)
        self.assertEqual(node0("free_hugepages"), 0)    # never given back to the kernel
        path = self.take("vm2", "64M")
        self.assertEqual(os.stat(path).st_ino, ino)
        self.assertTrue(all_bytes(path, size, 0), "a recycled file handed out with non-zero bytes")

        r = self.d.request("DELETE", "/v1/pools/vm2?recycle=false")
        self.assertEqual(r.status, 204, r)
        self.assertNotIn("vm2", pool_files(self.pool_dir))
        self.assertEqual(self.stock()[0]["recycling"], 0)
        self.wait_stock_ready(1, timeout=30)
        self.clean_up(free0)

    def test_mapped_file_waits(self):
        """A released file a live process still maps stays dirty and
        untouched (its bytes are the guest's), and is recycled once that
        process exits."""
        size = 64 * MIB
        free0, path, ino = self.vm_from_stock("64M")
        g = self.guest(path)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        files = pool_files(self.pool_dir)
        self.assertEqual(len(files), 1, files)
        dirty = file_path(self.pool_dir, files[0])
        self.assertEqual(os.stat(dirty).st_ino, ino)
        time.sleep(3.5)                         # three mapped checks (1 s apart)
        t = self.stock()[0]
        self.assertEqual((t["ready"], t["recycling"]), (0, 1), t)
        self.assertEqual([r["state"] for r in self.rows()], ["dirty"])
        self.assertTrue(all_bytes(dirty, size, 0x5A), "a mapped file was touched")

        g.kill()
        g.wait()
        self.wait_stock_ready(1, timeout=30)
        self.assertEqual([r["state"] for r in self.rows()], ["stock"])
        self.assertEqual(os.stat(dirty).st_ino, ino)
        self.assertTrue(all_bytes(dirty, size, 0))
        self.clean_up(free0)

    def test_kill9_during_recycle(self):
        """kill -9 while a recycle zeroes: at restart the file is not handed
        out before it is zeroed again (a PUT of that size right away gets a
        fresh warm or an all-zero file), no file and no page leak."""
        size = 1024 * MIB
        self.start_with_pages(512)
        free0 = node0("free_hugepages")
        meminfo0 = self.meminfo()
        self.target("1G")
        self.wait_stock_ready(1, timeout=120)
        caught = False
        for attempt in range(5):
            path = self.take("vm", "1G")
            fill(path, size, 0xA5)
            self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
            end = time.monotonic() + 30
            state = None
            while time.monotonic() < end:
                state = [r["state"] for r in self.rows()]
                if state == ["recycling"]:
                    self.d.kill()               # SIGKILL, mid-zeroing
                    caught = True
                    break
                if state == ["stock"]:
                    break                       # too quick: again
                time.sleep(0.0005)
            if caught:
                break
            self.assertEqual(state, ["stock"])
            self.wait_stock_ready(1, timeout=30)
        self.assertTrue(caught, "never saw the recycle running in 5 attempts")
        self.assertEqual(len(pool_files(self.pool_dir)), 1)

        self.d.start()
        r = self.d.put("/v1/pools/after", {"node": 0, "size": "1G"})
        self.assertEqual(r.status, 201, r)
        self.assertIn(r.json["from_stock"], ("none", "full"), r)
        after = self.wait_ready("after") if r.json["state"] == "warming" else r.json
        self.assertEqual(after["state"], "ready", after)
        self.assertTrue(all_bytes(after["path"], size, 0), "handed out a file whose recycle was not complete")
        self.clean_up(free0)
        self.assertEqual(self.meminfo(), meminfo0)

    def meminfo(self):
        with open("/proc/meminfo") as f:
            return {k: v for k, v in (line.split(":", 1) for line in f)
                    if k in ("HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp")}


if __name__ == "__main__":
    main()
