"""libvirt.migrate: `virsh migrate --live` of a domain on a warm pool, from
one private libvirtd to another on this machine, each with its own hpwarmd
and deploy/libvirt/hpwarm-libvirt-hook, as two hosts would have them.

Run under tests/real/guard.sh.  The two "hosts" (tests/libvirt/test_libvirt.py's
Env, twice):
- src: hpwarmd with its pools in HPW_TEST_HUGETLBFS/hpwarm, libvirtd in its
  own mount namespace with host_uuid U1;
- dst: hpwarmd with its pools in .../hpwarm-dst, libvirtd in another
  namespace with host_uuid U2 (libvirt refuses a migration to a host of its
  own UUID), where .../hpwarm-dst is bound over .../hpwarm: each host keeps
  its pools in the same directory, so the mem-path in the domain's
  <qemu:commandline> names the local pool on either side.
The domain (TCG, 128 MiB, its <qemu:commandline> what `hpwarm handoff NAME
--vmm libvirt` printed on src) boots on src's warm pool; its /init runs
tests/qemu/guest_pattern.c, which fills 16 MiB with a seeded stream and
prints its sum each second.  Then `virsh migrate --live` (migration stream
on 127.0.0.1).  Checked: on dst the hook served the incoming domain (warm
without a TTL at prepare, claim with dst QEMU's pid at started), dst QEMU
maps dst's pool file (inode in /proc/PID/maps) as mem-NAME on 2 MiB pages,
the guest prints the same sum on after the migration; src's release end
gave src's pool back (404); destroying the domain on dst gives dst's pool
back.  About a minute."""
import os
import re
import socket
import sys
import time
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "qemu"))
import guestboot as gb  # noqa: E402
import test_libvirt as tl  # noqa: E402

PATTERN_BIN = os.environ.get("HPW_GUEST_PATTERN", "")
QEMU_GUEST_DIR = os.environ.get("HPW_QEMU_GUEST_DIR", "")
MIB = 1 << 20
GUEST_MIB = 128
NAME = "hpw-lv-mig"
INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
exec /bin/guest_pattern 16 4242
"""
ENVS = []


def cleanup():
    while ENVS:
        ENVS.pop().close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class LibvirtMigrate(tl.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (tl.MNT and tl.HPWARMD and tl.CLI and PATTERN_BIN and QEMU_GUEST_DIR):
            tl.skip("run under tests/real/guard.sh with HPWARMD, HPWARM_CLI, HPW_GUEST_PATTERN, HPW_QEMU_GUEST_DIR")
        try:
            kernel, busybox = gb.fetch(QEMU_GUEST_DIR)
        except gb.Skip as e:
            tl.skip(str(e))
        cls.src = tl.Env("src", host_uuid="5d1f9b0e-1111-4c2a-9e0f-000000000001")
        ENVS.append(cls.src)
        dst_pools = os.path.join(tl.MNT, "hpwarm-dst")
        cls.dst = tl.Env("dst", pool_dir=dst_pools, host_uuid="5d1f9b0e-2222-4c2a-9e0f-000000000002",
                         pool_bind=(dst_pools, cls.src.pool_dir))
        ENVS.append(cls.dst)
        cls.kernel = os.path.join(cls.src.tmp, "vmlinuz")
        with open(os.path.realpath(kernel), "rb") as f, open(cls.kernel, "wb") as out:
            out.write(f.read())
        cls.initrd = gb.build_initramfs(busybox, os.path.join(cls.src.tmp, "initrd.gz"), init=INIT,
                                        extra={"/bin/guest_pattern": PATTERN_BIN})
        for f in (cls.kernel, cls.initrd):
            os.chmod(f, 0o644)
        # Both pools and slack: the node's count as it is plus what we need.
        nr, free = tl.read_int(tl.NODE0 + "nr_hugepages"), tl.read_int(tl.NODE0 + "free_hugepages")
        want = nr - free + 2 * GUEST_MIB * MIB // tl.PAGE + 16
        with open(tl.NODE0 + "nr_hugepages", "w") as f:
            f.write("%d\n" % want)
        if tl.read_int(tl.NODE0 + "nr_hugepages") < want:
            tl.skip("kernel gave fewer than %d 2 MiB pages" % want)
        for e in (cls.src, cls.dst):
            e.start_daemon()
        for e in (cls.src, cls.dst):
            e.start_libvirt()

    @classmethod
    def tearDownClass(cls):
        cleanup()

    def cli(self, env, *args):
        return tl.run([tl.CLI, "--url", "unix://" + env.sock] + list(args))

    def serial_sums(self, serial):
        try:
            with open(serial, errors="replace") as f:
                text = f.read()
        except OSError:
            return []
        return [(int(t), s) for t, s in re.findall(r"HPWARM-PATTERN (\d+) ([0-9a-f]{16})", text)]

    def wait_sum(self, serial, after=None, timeout=tl.BOOT_TIMEOUT):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.serial_sums(serial)
            if got and (after is None or got[-1][0] > after):
                return got[-1]
            time.sleep(0.5)
        self.fail("no pattern line on %s within %d s (after %s)" % (serial, timeout, after))

    def calls(self, env):
        try:
            with open(env.calls) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def test_live_migration_lands_on_the_destinations_warm_pool(self):
        src, dst = self.src, self.dst
        dom_uuid = str(uuid.uuid4())
        r = self.cli(src, "warm", NAME, "--node", "0", "--size", "%dM" % GUEST_MIB, "--ttl", "600", "--wait",
                     "--timeout", "60", "--label", "libvirt:" + dom_uuid)
        self.assertEqual(r.returncode, 0, r.stderr)
        frag = self.cli(src, "handoff", NAME, "--vmm", "libvirt")
        self.assertEqual(frag.returncode, 0, frag.stderr)
        serial = os.path.join(src.tmp, NAME + ".serial.log")
        xml = tl.domain_xml(NAME, self.kernel, self.initrd, serial, metadata=tl.pool_meta(size="%dM" % GUEST_MIB),
                            fragment=frag.stdout, memory_mib=GUEST_MIB).replace(
            "</name>", "</name>\n  <uuid>%s</uuid>" % dom_uuid, 1)
        path = os.path.join(src.tmp, NAME + ".xml")
        with open(path, "w") as f:
            f.write(xml)
        for e in (src, dst):
            e.domains.add(NAME)
        r = src.virsh("create", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        tick, before = self.wait_sum(serial)
        src_pid = src.qemu_pid(NAME)
        p = src.daemon.get("/v1/pools/" + NAME).json
        self.assertEqual((p["claimed"], p["owner_pid"]), (True, src_pid), p)

        port = free_port()
        t0 = time.monotonic()
        r = src.virsh("migrate", "--live", NAME, dst.uri, "--migrateuri", "tcp://127.0.0.1:%d" % port,
                      timeout=240)
        self.assertEqual(r.returncode, 0, "virsh migrate: %s%s" % (r.stdout, r.stderr))
        print("virsh migrate --live: %.1f s" % (time.monotonic() - t0), flush=True)

        self.assertIn("running", dst.virsh("domstate", NAME).stdout)
        dst_pid = dst.qemu_pid(NAME)
        self.assertIsNotNone(dst_pid)
        ino = os.stat(os.path.join(dst.pool_dir, NAME)).st_ino
        with open("/proc/%d/maps" % dst_pid) as f:
            inodes = {int(l.split()[4]) for l in f if len(l.split()) >= 6}
        self.assertIn(ino, inodes, "dst QEMU does not map dst's pool file")
        blocks = tl.ramblocks(dst.virsh("qemu-monitor-command", NAME, "--hmp", "info ramblock").stdout)
        self.assertEqual(blocks.get("mem-" + NAME), ("2 MiB", GUEST_MIB * MIB), blocks)
        # The destination's hook: an incoming domain, warmed without a TTL, claimed by its QEMU.
        warms = [c for c in self.calls(dst) if c.startswith("warm " + NAME)]
        self.assertEqual(len(warms), 1, self.calls(dst))
        self.assertNotIn("--ttl", warms[0])
        self.assertIn("claim %s --pid %d --timeout 30" % (NAME, dst_pid), self.calls(dst))
        p = dst.daemon.get("/v1/pools/" + NAME).json
        self.assertEqual((p["claimed"], p["owner_pid"]), (True, dst_pid), p)
        # The guest runs on, its memory intact.
        t2, after = self.wait_sum(serial, after=0 if self.serial_sums(serial)[-1][0] < tick else tick, timeout=60)
        self.assertEqual(after, before, "the guest's memory changed in the migration")
        # The source gave its pool back at release end.
        deadline = time.monotonic() + 30
        while src.daemon.get("/v1/pools/" + NAME).status != 404 and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(src.daemon.get("/v1/pools/" + NAME).status, 404, "src's pool kept after the migration")
        self.assertIn("release %s --ignore-missing --timeout 30" % NAME, self.calls(src))
        # Destroyed on dst: dst's pool goes back too.
        r = dst.virsh("destroy", NAME)
        self.assertEqual(r.returncode, 0, r.stderr)
        deadline = time.monotonic() + 30
        while dst.daemon.get("/v1/pools/" + NAME).status != 404 and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertEqual(dst.daemon.get("/v1/pools/" + NAME).status, 404)


if __name__ == "__main__":
    import atexit
    import signal
    atexit.register(cleanup)
    signal.signal(signal.SIGTERM, lambda *_: (cleanup(), os._exit(143)))
    unittest.main(verbosity=2)
