"""hpwarmd on this machine's real kernel: reserve 2 MiB pages on node 0 and warm
pools in a real hugetlbfs, checking /sys and /proc/meminfo after every step.

Run under tests/real/guard.sh, which holds the host-wide lock, restores every
nr_hugepages value and unmounts its hugetlbfs afterwards, even on failure.
Each test also removes what it created.  Skips (77) where guard.sh does."""
import json
import mmap
import os
import shutil
import subprocess
import time

from hpwreal import RealKernelCase, file_path, node0, pool_files
from hpwtest import main

QEMU = shutil.which("qemu-system-x86_64")


class RealKernel(RealKernelCase):
    def test_stock_kill9_during_refill(self):
        """kill -9 while refills run: at restart every stock file is whole
        (or refilled), none is leaked, the hand-out reads zero and dropping
        the targets gives every page back."""
        self.start_with_pages(300)
        free0 = node0("free_hugepages")
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": "256M", "count": 2}]})
        self.assertEqual(r.status, 200, r)
        self.d.kill()                       # at once: the refills are running
        self.d.start()
        self.wait_stock_ready(2)
        files = [f for f in pool_files(self.pool_dir)]
        self.assertEqual(len(files), 2, files)
        for f in files:
            self.assertTrue(f.startswith("~"), f)
            self.assertEqual(os.stat(file_path(self.pool_dir, f)).st_blocks * 512, 256 << 20)
        self.assertEqual(node0("free_hugepages"), free0 - 256)
        r = self.d.put("/v1/pools/vm", {"node": 0, "size": "256M"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual((r.json["state"], r.json["from_stock"]), ("ready", "full"))
        with open(r.json["path"], "rb") as f:
            m = mmap.mmap(f.fileno(), 256 << 20, mmap.MAP_SHARED, mmap.PROT_READ)
            try:
                self.assertEqual(m[:].count(0), 256 << 20)
            finally:
                m.close()
        self.assertEqual(self.d.put("/v1/stock", {"targets": []}).status, 200)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        self.assertEqual(pool_files(self.pool_dir), [])
        self.assertEqual(node0("free_hugepages"), free0)

    # -- reserve: PUT /v1/nodes/{id}/hugepages/{size} --
    def test_reserve_node0(self):
        self.start_with_pages(0)
        r = self.d.put("/v1/nodes/0/hugepages/2M", {"count": 24})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(node0("nr_hugepages"), r.json["total"])
        if r.json["complete"]:
            self.assertEqual(node0("nr_hugepages"), 24)
        api = self.d.get("/v1/nodes/0").json["hugepages"][0]
        self.assertEqual(api["total"], node0("nr_hugepages"))
        self.assertEqual(api["free"], node0("free_hugepages"))
        r = self.d.put("/v1/nodes/0/hugepages/2M", {"count": 0})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(node0("nr_hugepages"), 0)

    # -- pools: warm, ready, release --
    def test_warm_ready_zero_and_release(self):
        self.start_with_pages(32)
        free0 = node0("free_hugepages")
        r = self.d.put("/v1/pools/vm-1", {"node": 0, "size": "32M", "page_size": "2M"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.headers.get("location"), "/v1/pools/vm-1")
        p = self.wait_ready("vm-1")
        self.assertEqual(p["state"], "ready", p)
        self.assertEqual(p["bytes_done"], 32 << 20)
        self.assertEqual(p["placement"], {"verified": True, "pages_off_node": 0})
        self.assertEqual(node0("free_hugepages"), free0 - 16)
        self.assertIn("mem-path=%s" % p["path"], p["handoff"]["qemu"])
        self.assertIn("share=on", p["handoff"]["qemu"])
        # cloud-hypervisor refuses host_numa_node on a shared file zone; the
        # daemon placed the pages itself (placement verified above).
        self.assertNotIn("host_numa_node", p["handoff"]["cloud_hypervisor"])
        self.assertIn("file=%s,shared=on,hugepages=on,hugepage_size=2M" % p["path"], p["handoff"]["cloud_hypervisor"])
        self.assertEqual(os.stat(p["path"]).st_blocks * 512, 32 << 20)
        self.assertEqual(oct(os.stat(p["path"]).st_mode & 0o777), "0o660")
        with open(p["path"], "r+b") as f:
            m = mmap.mmap(f.fileno(), 32 << 20, mmap.MAP_SHARED)
            self.assertEqual(m[:], bytes(32 << 20))
            m.close()
        nodes = self.d.get("/v1/nodes/0").json["hugepages"][0]
        self.assertEqual(nodes["warm"], 16)
        # Idempotent retry: same spec -> 200 and the same pool; other spec -> 409.
        again = self.d.put("/v1/pools/vm-1", {"node": 0, "size_bytes": 32 << 20, "page_size": "2MiB"})
        self.assertEqual(again.status, 200, again)
        self.assertEqual(again.json["path"], p["path"])
        self.assertProblem(self.d.put("/v1/pools/vm-1", {"node": 0, "size": "16M"}), 409, "pool-conflict")
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm-1").status, 204)
        self.assertFalse(os.path.exists(p["path"]))
        self.assertEqual(node0("free_hugepages"), free0)
        self.assertProblem(self.d.get("/v1/pools/vm-1"), 404, "pool-not-found")

    def test_exhaustion_409_leaves_nothing(self):
        self.start_with_pages(8)
        free0 = node0("free_hugepages")
        r = self.d.put("/v1/pools/big", {"node": 0, "size": "64M"})
        self.assertProblem(r, 409, "insufficient-hugepages")
        self.assertEqual(node0("free_hugepages"), free0)
        self.assertEqual(pool_files(self.pool_dir), [])
        self.assertProblem(self.d.get("/v1/pools/big"), 404)

    def test_reserve_true_grows_pool(self):
        self.start_with_pages(4)
        r = self.d.put("/v1/pools/grow", {"node": 0, "size": "32M", "reserve": True})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(self.wait_ready("grow")["state"], "ready")
        self.assertGreaterEqual(node0("nr_hugepages"), 16)

    def test_two_pools_at_once_and_cancel(self):
        self.start_with_pages(48)
        free0 = node0("free_hugepages")
        a = self.d.put("/v1/pools/a", {"node": 0, "size": "32M"})
        b = self.d.put("/v1/pools/b", {"node": 0, "size": "32M"})
        self.assertEqual((a.status, b.status), (201, 201))
        self.assertEqual(self.wait_ready("a")["state"], "ready")
        self.assertEqual(self.wait_ready("b")["state"], "ready")
        self.assertEqual(node0("free_hugepages"), free0 - 32)
        # Cancel: delete while warming (or just after); either way nothing stays.
        c = self.d.put("/v1/pools/c", {"node": 0, "size": "32M"})
        self.assertEqual(c.status, 201)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/c").status, 204)
        self.assertFalse(os.path.exists(os.path.join(self.pool_dir, "c")))
        for n in ("a", "b"):
            self.assertEqual(self.d.request("DELETE", "/v1/pools/" + n).status, 204)
        self.assertEqual(node0("free_hugepages"), free0)

    def test_ttl_expiry_and_claim(self):
        self.start_with_pages(16)
        free0 = node0("free_hugepages")
        self.assertEqual(self.d.put("/v1/pools/t", {"node": 0, "size": "8M", "ttl_seconds": 1}).status, 201)
        self.assertEqual(self.d.put("/v1/pools/k", {"node": 0, "size": "8M", "ttl_seconds": 1}).status, 201)
        self.assertEqual(self.wait_ready("t")["state"], "ready")
        self.assertEqual(self.wait_ready("k")["state"], "ready")
        r = self.d.request("POST", "/v1/pools/k/claim")
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json["claimed"])
        self.assertIsNone(r.json["expires_at"])
        deadline = time.time() + 10
        while time.time() < deadline and self.d.get("/v1/pools/t").status == 200:
            time.sleep(0.2)
        self.assertEqual(self.d.get("/v1/pools/t").status, 404)
        self.assertEqual(self.d.get("/v1/pools/k").json["state"], "ready")
        self.assertEqual(node0("free_hugepages"), free0 - 4)

    def test_restart_keeps_ready_and_resumes_warming(self):
        self.start_with_pages(48)
        free0 = node0("free_hugepages")
        self.assertEqual(self.d.put("/v1/pools/r", {"node": 0, "size": "16M"}).status, 201)
        self.assertEqual(self.wait_ready("r")["state"], "ready")
        self.assertEqual(self.d.put("/v1/pools/w", {"node": 0, "size": "64M", "threads": 1}).status, 201)
        self.assertEqual(self.d.stop(), 0)
        # An orphan file: in our directory, in no record.
        fd = os.open(os.path.join(self.pool_dir, "orphan"), os.O_CREAT | os.O_RDWR, 0o600)
        os.close(fd)
        self.d.start()
        self.assertEqual(self.d.get("/v1/pools/r").json["state"], "ready")
        self.assertEqual(self.wait_ready("w")["state"], "ready")
        self.assertFalse(os.path.exists(os.path.join(self.pool_dir, "orphan")))
        self.assertIn("hpwarmd_orphan_files_removed_total 1", self.d.get("/metrics").body.decode())
        self.assertEqual(node0("free_hugepages"), free0 - 40)

    def test_cli_hook_recipe(self):
        # The README's handoff recipe: warm --wait, then handoff, with exit codes a script trusts.
        cli = os.environ.get("HPWARM_CLI")
        if not cli:
            self.skipTest("CLI not built")
        self.start_with_pages(16)
        url = ["--url", "http://127.0.0.1:%d" % self.d.port]
        run = lambda *a: subprocess.run([cli, *a, *url], capture_output=True, text=True, timeout=90)
        r = run("warm", "vm-42", "--node", "0", "--size", "16M", "--wait", "--timeout", "60")
        self.assertEqual(r.returncode, 0, r.stderr + r.stdout)
        r = run("handoff", "vm-42", "--vmm", "qemu")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout.strip(), r"^-object memory-backend-file,id=mem-vm-42,mem-path=\S+/vm-42,"
                                           r"size=16777216,share=on,prealloc=on,host-nodes=0,policy=bind "
                                           r"-machine memory-backend=mem-vm-42$")
        # Too big for the node: exit 5 (insufficient hugepages), nothing left.
        r = run("warm", "vm-big", "--node", "0", "--size", "1G", "--wait", "--timeout", "30")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertEqual(run("release", "vm-42").returncode, 0)
        self.assertEqual(run("status", "vm-42").returncode, 1)
        self.assertEqual(pool_files(self.pool_dir), [])

    def test_cli_stock_round_trip(self):
        # hpwarm stock set / stock / warm from stock / stock clear against the
        # real daemon and kernel: what the CLI sends is what hpwarmd takes.
        cli = os.environ.get("HPWARM_CLI")
        if not cli:
            self.skipTest("CLI not built")
        self.start_with_pages(16)
        free0 = node0("free_hugepages")
        url = ["--url", "http://127.0.0.1:%d" % self.d.port]
        run = lambda *a: subprocess.run([cli, *a, *url], capture_output=True, text=True, timeout=90)
        r = run("stock", "set", "0:2M:8M:1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[1].split()[:5], ["0", "2M", "8", "MiB", "1"], r.stdout)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            r = run("stock", "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            t = json.loads(r.stdout)["targets"]
            if t[0]["ready"] == 1:
                break
            time.sleep(0.02)
        self.assertEqual((t[0]["node"], t[0]["page_size_bytes"], t[0]["size_bytes"], t[0]["count"], t[0]["ready"]),
                         (0, 2 << 20, 8 << 20, 1, 1), t)
        r = run("warm", "vm-s", "--node", "0", "--size", "8M")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("created on node 0 (ready, from stock: full)", r.stdout)
        r = run("status", "vm-s")
        self.assertIn("from stock: full", r.stdout)
        # Refused by the daemon: more than node 0 has -> 5, its detail shown, nothing changed.
        r = run("stock", "set", "0:2M:1G:1")
        self.assertEqual(r.returncode, 5, r.stderr)
        self.assertIn("[stock-too-large]", r.stderr)
        before = json.loads(run("stock", "--json").stdout)
        self.assertEqual(before["targets"][0]["size_bytes"], 8 << 20)
        r = run("stock", "clear")
        self.assertEqual(r.returncode, 0, r.stderr)
        after = json.loads(run("stock", "--json").stdout)
        self.assertEqual(after["targets"], [])
        self.assertEqual(sorted(after), ["generation", "targets"])
        self.assertGreater(after["generation"], before["generation"])   # the clear is a change
        self.assertEqual(run("release", "vm-s").returncode, 0)
        end = time.monotonic() + 30
        while pool_files(self.pool_dir) and time.monotonic() < end:
            time.sleep(0.02)
        self.assertEqual(pool_files(self.pool_dir), [])
        self.assertEqual(node0("free_hugepages"), free0)

    def test_handoff_to_qemu_uses_warm_pages(self):
        if not QEMU:
            self.skipTest("qemu-system-x86_64 not installed")
        self.start_with_pages(16)
        self.assertEqual(self.d.put("/v1/pools/vm-q", {"node": 0, "size": "16M"}).status, 201)
        p = self.wait_ready("vm-q")
        free_before = node0("free_hugepages")
        # QEMU maps the pool shared and preallocates: the pages are already there.
        # The object alone (no guest RAM under -machine none); tests/qemu/handoff_boot.py boots a guest on it.
        obj = p["handoff"]["qemu_argv"][1]
        out = subprocess.run([QEMU, "-machine", "none", "-nodefaults", "-display", "none", "-S",
                              "-object", obj, "-monitor", "stdio"], input=b"info memdev\nquit\n",
                             capture_output=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(node0("free_hugepages"), free_before)


if __name__ == "__main__":
    main()
