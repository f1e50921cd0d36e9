"""openstack.nova: a real OpenStack cloud places and boots VMs on warm
memory (tests/openstack/nova_cloud.py: RabbitMQ, Placement, Glance, Nova's
api, conductor and scheduler, and two compute hosts, each a nova-compute
with its own private libvirtd running deploy/libvirt/hpwarm-libvirt-hook
with policy `hugepages`, its own hpwarmd and `hpwarm placement sync
--watch`).  Run under tests/real/guard.sh (host-wide lock, nr_hugepages
restored, private hugetlbfs).

Host "warm" keeps a stock of one 128 MiB file of 2 MiB pages on node 0;
host "cold" keeps none.  Both nova-computes start after the hugepages are
set, and "warm"'s with the reserved_huge_pages line `hpwarm stock
nova-config` printed, as docs/OPENSTACK.md §4 says.  A user asks for warm
memory with a flavor (hw:mem_page_size=2MB, resources:CUSTOM_HPWARM_2M=64)
and for plain hugepages with the same flavor less the resource.

The tests run in the order of their names, each leaving no server behind:
1. the warm flavor lands on "warm", its allocation holds the warm pages on
   warm_hpwarm_numa0, QEMU maps the stock file, the guest boots; deleting
   gives back the allocation, the pool and every page, and Placement's
   capacity comes back;
2. two servers created at once for the last warm file: exactly one gets it;
   a third warm server gets NoValidHost within seconds and no QEMU starts
   anywhere, while the plain hugepage flavor still boots (cold);
3. Nova's NUMA fitting and the host's real pages agree: "warm" takes plain
   hugepage servers until Nova says no, every one boots, and at that point
   the kernel has no room for another either while the stock is whole;
4. pages added to nr_hugepages behind nova-compute's back are not seen by
   Nova until nova-compute restarts (why hpwarm never grows hugepages on a
   Nova host: docs/OPENSTACK.md §4)."""
import os
import signal
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "qemu"))
import guestboot as gb  # noqa: E402
import nova_cloud as nc  # noqa: E402

tl = nc.tl
QEMU_GUEST_DIR = os.environ.get("HPW_QEMU_GUEST_DIR", "")
GUEST_MIB = 128
PAGES = GUEST_MIB * (1 << 20) // tl.PAGE      # 64: one guest, one stock file
STOCK = "0:2M:%dM:1" % GUEST_MIB
# The host's 2 MiB pages on node 0 while the cloud runs, beyond what is in
# use when the test starts: the stock file, three guests and a quarter of a
# fourth (test 3 fills the rest with guests).
HEADROOM = 4 * PAGES + PAGES // 4
MARKER = "HPWARM-LIBVIRT-INIT reached"
CLOUD = None


def free_pages():
    return tl.read_int(tl.NODE0 + "free_hugepages")


def nr_pages():
    return tl.read_int(tl.NODE0 + "nr_hugepages")


def set_nr(n):
    with open(tl.NODE0 + "nr_hugepages", "w") as f:
        f.write("%d\n" % n)
    if nr_pages() != n:
        raise AssertionError("nr_hugepages: wrote %d, reads %d" % (n, nr_pages()))


def qemus():
    """pids of every QEMU on this machine."""
    out = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    if f.read().split(b"\0")[0].endswith(b"qemu-system-x86_64"):
                        out.add(int(pid))
            except OSError:
                pass
    return out


class NovaWarm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global CLOUD
        if not (tl.MNT and tl.HPWARMD and tl.CLI and QEMU_GUEST_DIR):
            tl.skip("run under tests/real/guard.sh with HPWARMD, HPWARM_CLI, HPW_QEMU_GUEST_DIR")
        why = nc.available()
        if why:
            tl.skip(why)
        try:
            kernel, busybox = gb.fetch(QEMU_GUEST_DIR)
        except gb.Skip as e:
            tl.skip(str(e))
        # Before any nova-compute starts: it reads the totals once.
        want = nr_pages() - free_pages() + HEADROOM
        set_nr(want)
        CLOUD = cls.cloud = nc.Cloud(["warm", "cold"], stock={"warm": [STOCK]})
        try:
            cls.cloud.start()
            with open(os.path.join(HERE, "..", "libvirt", "guest-init.sh")) as f:
                init = f.read()
            initrd = gb.build_initramfs(busybox, os.path.join(cls.cloud.tmp, "initrd.gz"), init=init)
            cls.image = cls.cloud.guest_image(os.path.realpath(kernel), initrd)
            cls.f_warm = cls.cloud.flavor("m1.warm", GUEST_MIB, {"hw:mem_page_size": "2MB",
                                                                 "resources:CUSTOM_HPWARM_2M": str(PAGES)})
            cls.f_huge = cls.cloud.flavor("m1.huge", GUEST_MIB, {"hw:mem_page_size": "2MB"})
        except BaseException:
            print(cls.cloud.logs(), file=sys.stderr)
            cls.cloud.__exit__()
            raise
        cls.warm, cls.cold = cls.cloud.hosts["warm"], cls.cloud.hosts["cold"]
        cls.nr = nr_pages()

    # The cloud is stopped by main(), after it printed the services' logs
    # if a test failed.

    def setUp(self):
        self.servers = []

    def tearDown(self):
        for sid in self.servers:
            try:
                self.cloud.delete(sid)
            except AssertionError as e:
                print("tearDown: %s" % e, file=sys.stderr)

    # -- helpers --
    def create(self, flavor, host=None, name="vm"):
        sid = self.cloud.create(name, self.image, flavor, host=host)
        self.servers.append(sid)
        return sid

    def provider(self, name):
        return self.cloud.placement.provider(name)["uuid"]

    def allocations(self, sid):
        return self.cloud.placement.ok("GET", "/allocations/" + sid)["allocations"]

    def warm_capacity(self, host):
        """(capacity, used) of CUSTOM_HPWARM_2M on HOST's node 0 provider."""
        uuid = self.provider(host + "_hpwarm_numa0")
        inv = self.cloud.placement.inventories(uuid)["inventories"].get("CUSTOM_HPWARM_2M")
        use = self.cloud.placement.ok("GET", "/resource_providers/%s/usages" % uuid)["usages"]
        cap = inv["total"] - inv["reserved"] if inv else 0
        return cap, use.get("CUSTOM_HPWARM_2M", 0)

    def stock(self, host):
        return self.cloud.hosts[host].env.daemon.get("/v1/stock").json["targets"]

    def wait(self, what, fn, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            v = fn()
            if v:
                return v
            if time.monotonic() > deadline:
                self.fail("%s: not within %d s" % (what, timeout))
            time.sleep(0.2)

    def stock_whole(self, host="warm"):
        return all(t["ready"] == t["count"] for t in self.stock(host))

    def wait_console(self, server, timeout=tl.BOOT_TIMEOUT):
        return self.wait("guest %s printed %r" % (server["id"], MARKER),
                         lambda: MARKER in self.cloud.console(server), timeout)

    def pool(self, host, name):
        return self.cloud.hosts[host].env.daemon.get("/v1/pools/" + name)

    def hook_calls(self, host):
        try:
            with open(self.cloud.hosts[host].env.calls) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def no_valid_host(self, s):
        self.assertEqual(s["status"], "ERROR", s)
        self.assertIn("No valid host", (s.get("fault") or {}).get("message", ""), s)

    # -- the scenario --
    def test_1_warm_flavor_boots_on_the_stock_file_of_the_warm_host(self):
        self.wait("warm stock whole", self.stock_whole)
        self.assertEqual(self.warm_capacity("warm"), (PAGES, 0))
        self.assertEqual(self.warm_capacity("cold"), (0, 0))
        for h in ("warm", "cold"):
            node = self.cloud.hosts[h].env.daemon.get("/v1/nodes/0").json
            self.assertIs(node.get("hugepages_fixed"), True, node)
        free0, nr0 = free_pages(), nr_pages()
        sid = self.create(self.f_warm)
        s = self.cloud.wait_settled(sid)
        self.assertEqual(s["status"], "ACTIVE", s)
        self.assertEqual(s["OS-EXT-SRV-ATTR:host"], "warm")
        # Placement: the warm pages on warm's node 0 provider, the rest on
        # the compute node.
        alloc = self.allocations(sid)
        self.assertEqual(alloc[self.provider("warm_hpwarm_numa0")]["resources"], {"CUSTOM_HPWARM_2M": PAGES})
        self.assertEqual(alloc[self.provider("warm")]["resources"], {"VCPU": 1, "MEMORY_MB": GUEST_MIB, "DISK_GB": 1})
        # The hook handed the domain the stock file: QEMU maps that inode.
        name = s["OS-EXT-SRV-ATTR:instance_name"]
        p = self.pool("warm", name).json
        qemu = self.warm.env.qemu_pid(name)
        self.assertEqual(p["from_stock"], "full", p)
        self.assertEqual((p["claimed"], p["owner_pid"], p["label"]), (True, qemu, "libvirt:" + sid), p)
        maps = tl.hugetlbfs_maps(qemu)
        self.assertEqual({ino for ino, _, _ in maps}, {os.stat(p["path"]).st_ino}, maps)
        self.assertEqual(sum(n for _, n, _ in maps), GUEST_MIB << 20)
        self.wait_console(s)
        # The host's free pages moved only by the stock's refill.
        self.wait("stock refilled", self.stock_whole)
        self.assertEqual((free0 - free_pages(), nr_pages()), (PAGES, nr0))
        self.assertFalse([c for c in self.hook_calls("cold") if name in c], "the cold host's hook ran")
        # Placement: the refill published, the VM's pages still counted.
        self.wait("capacity of VM + refill", lambda: self.warm_capacity("warm") == (2 * PAGES, PAGES), 15)
        self.cloud.delete(sid)
        self.servers.remove(sid)
        self.assertEqual(self.allocations(sid), {})
        self.assertEqual(self.pool("warm", name).status, 404)
        # The file is recycled into the stock, the surplus file goes, every
        # page is back, and Placement offers the one file again.
        self.wait("pages back", lambda: free_pages() == free0 and self.stock_whole(), 60)
        self.wait("capacity back", lambda: self.warm_capacity("warm") == (PAGES, 0), 15)

    def test_2_the_last_warm_file_goes_to_one_server_then_no_valid_host(self):
        self.wait("warm stock whole", self.stock_whole)
        self.wait("capacity", lambda: self.warm_capacity("warm") == (PAGES, 0), 15)
        # The last file: the host's free pages taken away (behind Nova's
        # back: its totals are cached; the warm flavor's pages are the
        # stock's), so the stock cannot refill.
        spare = free_pages()
        set_nr(nr_pages() - spare)
        try:
            ids = [None, None]

            def go(i):
                ids[i] = self.create(self.f_warm, name="race-%d" % i)
            ts = [threading.Thread(target=go, args=(i,)) for i in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            got = [self.cloud.wait_settled(i) for i in ids]
            active = [s for s in got if s["status"] == "ACTIVE"]
            self.assertEqual(len(active), 1, [(s["status"], s.get("fault")) for s in got])
            self.no_valid_host([s for s in got if s["status"] != "ACTIVE"][0])
            won = active[0]
            self.assertEqual(won["OS-EXT-SRV-ATTR:host"], "warm")
            p = self.pool("warm", won["OS-EXT-SRV-ATTR:instance_name"]).json
            self.assertEqual(p["from_stock"], "full", p)
            self.wait_console(won)
            self.assertEqual([t["ready"] for t in self.stock("warm")], [0])
            # Used up: a warm server is refused at once, nothing started.
            before, calls = qemus(), (len(self.hook_calls("warm")), len(self.hook_calls("cold")))
            t0 = time.monotonic()
            s = self.cloud.wait_settled(self.create(self.f_warm, name="late"))
            took = time.monotonic() - t0
            self.no_valid_host(s)
            self.assertLess(took, 15, "NoValidHost took %.1f s" % took)
            print("NoValidHost after %.1f s" % took, file=sys.stderr)
            self.assertEqual(qemus(), before)
            self.assertEqual((len(self.hook_calls("warm")), len(self.hook_calls("cold"))), calls)
            # Plain hugepages still boot, cold: the stock stays empty (its
            # target dropped first), and the pages come back for the guest.
            self.warm.cli("stock", "clear")
            set_nr(nr_pages() + spare)
            s = self.cloud.wait_settled(self.create(self.f_huge, name="plain"))
            self.assertEqual(s["status"], "ACTIVE", s)
            p = self.pool(s["OS-EXT-SRV-ATTR:host"], s["OS-EXT-SRV-ATTR:instance_name"]).json
            self.assertEqual(p["from_stock"], "none", p)
            self.wait_console(s)
        finally:
            if nr_pages() < self.nr:
                set_nr(nr_pages() + spare)
            try:
                for sid in list(self.servers):
                    self.cloud.delete(sid)
                    self.servers.remove(sid)
            finally:
                r = self.warm.cli("stock", "set", STOCK)
                self.assertEqual(r.returncode, 0, r.stderr)
        self.wait("warm stock whole again", self.stock_whole, 60)

    def fill_warm(self):
        """Plain hugepage guests on "warm" until Nova refuses one; the
        booted ones."""
        if self.nr != HEADROOM:
            self.skipTest("%d 2 MiB pages were in use before the test (someone else's): Nova counts them free"
                          % (self.nr - HEADROOM))
        self.wait("warm stock whole", self.stock_whole)
        booted = []
        while True:
            s = self.cloud.wait_settled(self.create(self.f_huge, host="warm", name="fill-%d" % len(booted)))
            if s["status"] != "ACTIVE":
                self.no_valid_host(s)
                return booted
            booted.append(s)
            self.assertLess(len(booted), 8, "Nova never said no")

    def test_3_nova_fitting_and_the_hosts_pages_agree(self):
        # Nova's view of "warm": its totals at start, less the stock
        # (reserved_huge_pages), less its guests.
        booted = self.fill_warm()
        self.assertEqual(len(booted), (self.nr - PAGES) // PAGES)
        # No double count: every guest Nova admitted got its pages and
        # booted (each took the stock file of its size, the hook's way, and
        # the stock refilled from the host's free pages), and the stock is
        # whole again.
        for s in booted:
            self.wait_console(s)
            p = self.pool("warm", s["OS-EXT-SRV-ATTR:instance_name"]).json
            self.assertEqual((p["from_stock"], p["state"], p["claimed"]), ("full", "ready", True), p)
        self.wait("stock whole", self.stock_whole, 60)
        # Placement offers the one ready file, not the files the plain
        # guests took (they hold no CUSTOM_HPWARM_2M).
        self.wait("capacity", lambda: self.warm_capacity("warm") == (PAGES, 0), 15)
        # No host refused that has pages: the kernel has no room either.
        self.assertLess(free_pages(), PAGES, "Nova refused a guest the host had pages for")

    def test_4_pages_added_behind_nova_are_seen_only_after_a_restart(self):
        self.fill_warm()
        set_nr(nr_pages() + PAGES)
        try:
            s = self.cloud.wait_settled(self.create(self.f_huge, host="warm", name="unseen"))
            self.no_valid_host(s)          # the kernel has the pages; Nova's cached totals do not
            self.assertGreaterEqual(free_pages(), PAGES)
            self.warm.stop_compute()
            self.warm.start_compute()
            s = self.cloud.wait_settled(self.create(self.f_huge, host="warm", name="seen"))
            self.assertEqual(s["status"], "ACTIVE", s)
            self.wait_console(s)
        finally:
            for sid in list(self.servers):
                self.cloud.delete(sid)
                self.servers.remove(sid)
            set_nr(nr_pages() - PAGES)


def stop_cloud():
    global CLOUD
    if CLOUD:
        CLOUD, c = None, CLOUD
        c.__exit__()


def on_sigterm(*_):
    """guard.sh (or ctest through it) stops us with SIGTERM: stop the cloud
    (its QEMUs hold hugepages) before guard restores nr_hugepages."""
    try:
        stop_cloud()
    finally:
        os._exit(143)


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    ok = False
    try:
        prog = unittest.main(verbosity=2, exit=False)
        ok = prog.result.wasSuccessful()
        if not ok and CLOUD:
            print(CLOUD.logs(2500), file=sys.stderr)
    finally:
        stop_cloud()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
