"""Isolation among a crowd, on this machine's real kernel, as on a libvirt
host: a few hundred processes of the QEMU user (group kvm, the daemon's
--pool-group) each holding descriptors and mappings of their own.

- No process of the crowd can reach a stock file at all, not even for an
  O_PATH descriptor: stock files live in the stock directory (mode 0700),
  so a hand-out never has to look into the crowd.
- A stock file that a root process holds -- by a mapping (its descriptor
  closed), by a descriptor, or by a second link -- is never handed out:
  the PUT warms a fresh file ("from_stock": "none").  Once the holder lets
  go, the stock is handed out again ("full"), so the check is not simply
  refusing everything.
- A pool's file that a process of the crowd's user keeps an O_PATH
  descriptor of across the DELETE waits, dirty, while it is held (the
  recycle thread's scan finds it among the crowd) and is never handed out
  meanwhile; once closed, it is zeroed into the stock.  The same for a pool
  that was one user's alone (file_uid).

Run under tests/real/guard.sh; the crowd and every holder are killed on
every exit path (tests/integration/hpwcrowd.py)."""
import grp
import os
import pwd
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from hpwcrowd import Crowd  # noqa: E402
from hpwreal import MNT, RealKernelCase, file_path, pool_files, set_node0_pages  # noqa: E402
from hpwtest import main  # noqa: E402

QEMU_USER, QEMU_GROUP = "libvirt-qemu", "kvm"
CROWD, CROWD_FDS, CROWD_MAPS = 300, 32, 64
SIZE = "4M"

# One holder: "map PATH" (map shared, close the descriptor), "open PATH",
# "opath PATH"; answers "ok" or the errno name, then holds until killed.
HOLDER = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, 9)
libc.mmap.restype = ctypes.c_void_p
how, path = sys.argv[1], sys.argv[2]
try:
    if how == "map":
        # libc's mmap (Python's keeps a duplicate descriptor): a mapping alone.
        fd = os.open(path, os.O_RDWR)
        a = libc.mmap(None, ctypes.c_size_t(2 << 20), 3, 1, fd, ctypes.c_long(0))
        os.close(fd)
        if a in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap")
    elif how == "open":
        fd = os.open(path, os.O_RDONLY)
    else:
        fd = os.open(path, os.O_PATH)
    print("ok", flush=True)
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)), flush=True)
sys.stdin.read()
"""


class Crowded(RealKernelCase):
    POOL_DIR = "hpwarm-crowd"

    def setUp(self):
        try:
            pwd.getpwnam(QEMU_USER)
            grp.getgrnam(QEMU_GROUP)
        except KeyError:
            self.skipTest("no %s user or %s group (libvirt-daemon-system)" % (QEMU_USER, QEMU_GROUP))
        if not shutil.which("setpriv"):
            self.skipTest("no setpriv")
        super().setUp()
        os.chmod(MNT, 0o755)
        self.holders = []
        self.crowd = None

    def daemon(self, *extra):
        return super().daemon("--pool-group", QEMU_GROUP, *extra)

    def tearDown(self):
        for h in self.holders:
            if h.poll() is None:
                h.kill()
            h.wait()
        if self.crowd:
            self.crowd.stop()
        if self.d.proc and self.d.proc.poll() is None:
            self.d.put("/v1/stock", {"targets": []})
        super().tearDown()

    def holder(self, how, path, qemu=False, group=QEMU_GROUP, expect="ok"):
        pre = ["setpriv", "--reuid=" + QEMU_USER, "--regid=" + group, "--clear-groups"] if qemu else []
        h = subprocess.Popen(pre + [sys.executable, "-c", HOLDER, how, path], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.holders.append(h)
        self.assertEqual(h.stdout.readline().strip(), expect, "the holder's %s of %s" % (how, path))
        return h

    def let_go(self, h):
        h.kill()
        h.wait()

    def stock_file(self):
        self.wait_stock_ready(1, timeout=60)
        [name] = sorted(f for f in pool_files(self.pool_dir) if f.startswith("~"))
        return file_path(self.pool_dir, name)

    def put(self, name):
        r = self.d.put("/v1/pools/" + name, {"node": 0, "size": SIZE})
        self.assertEqual(r.status, 201, r)
        return r.json

    def delete(self, name):
        self.assertEqual(self.d.request("DELETE", "/v1/pools/" + name).status, 204)

    def test_stock_files_out_of_the_crowds_reach(self):
        """No process of the pool group gets any descriptor of a stock
        file, O_PATH included; the pool it is handed as is its to open."""
        self.start_with_pages(8)
        self.crowd = Crowd(CROWD, CROWD_FDS, CROWD_MAPS, user=QEMU_USER, group=QEMU_GROUP)
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": SIZE, "count": 1}]})
        self.assertEqual(r.status, 200, r)
        path = self.stock_file()
        for how in ("opath", "open", "map"):
            with self.subTest(how=how):
                self.holder(how, path, qemu=True, expect="EACCES")
        st = os.stat(os.path.dirname(path))
        self.assertEqual((st.st_mode & 0o7777, st.st_uid), (0o700, 0), "the stock directory")
        p = self.put("vm")
        self.assertEqual(p["from_stock"], "full")
        self.holder("open", p["path"], qemu=True)
        self.assertEqual(len(self.crowd.pids()), CROWD, "the crowd thinned while the test ran")

    def test_held_stock_file_never_handed_out_among_a_crowd(self):
        """What can still reach a stock file is root's (the crowd cannot):
        a root process's mapping, descriptor or second link keeps it from
        being handed out; free, it is."""
        self.start_with_pages(8)
        self.crowd = Crowd(CROWD, CROWD_FDS, CROWD_MAPS, user=QEMU_USER, group=QEMU_GROUP)
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": SIZE, "count": 1}]})
        self.assertEqual(r.status, 200, r)
        for i, how in enumerate(("map", "open", "link")):
            with self.subTest(held_by=how):
                path = self.stock_file()
                ino = os.stat(path).st_ino
                if how == "link":
                    link = os.path.join(self.pool_dir, "..", "crowd-link-%d" % os.getpid())
                    os.link(path, link)
                else:
                    h = self.holder(how, path)
                p = self.put("held-%d" % i)
                self.assertEqual(p["from_stock"], "none", "a stock file held by %s was handed out" % how)
                self.assertNotEqual(os.stat(p["path"]).st_ino, ino)
                self.delete("held-%d" % i)
                if how == "link":
                    os.unlink(link)
                else:
                    self.let_go(h)
                # Nobody holds the next one: handed out.
                self.stock_file()
                p = self.put("free-%d" % i)
                self.assertEqual(p["from_stock"], "full", "a stock file nobody holds was not handed out")
                self.delete("free-%d" % i)
        self.assertEqual(len(self.crowd.pids()), CROWD, "the crowd thinned while the test ran")

    def test_crowd_users_opath_across_delete_never_handed_out(self):
        """A process of the crowd's user keeps an O_PATH descriptor of its
        pool across the DELETE: among the crowd, the recycle thread's scan
        finds it and the file waits dirty; a PUT of its size meanwhile
        warms a fresh file; once the descriptor is closed the file is
        zeroed and handed out."""
        self.start_with_pages(2)    # one stock file, and no room to refill it once handed out
        self.crowd = Crowd(CROWD, CROWD_FDS, CROWD_MAPS, user=QEMU_USER, group=QEMU_GROUP)
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": SIZE, "count": 1}]})
        self.assertEqual(r.status, 200, r)
        self.wait_stock_ready(1, timeout=60)
        p = self.put("vm")
        self.assertEqual(p["from_stock"], "full")
        ino = os.stat(p["path"]).st_ino
        h = self.holder("opath", p["path"], qemu=True)
        scans0 = self.scans()
        self.delete("vm")
        end = time.monotonic() + 30
        while self.scans() == scans0 and time.monotonic() < end:
            time.sleep(0.05)
        self.assertGreater(self.scans(), scans0, "the released file was never scanned")
        time.sleep(1.5)                             # another look, a second later
        t = self.stock()[0]
        self.assertEqual((t["ready"], t["recycling"]), (0, 1), t)
        # Room for one more file: the PUT warms it, the held one stays.
        self.assertEqual(set_node0_pages(4), 4)
        q = self.put("other")
        self.assertEqual(q["from_stock"], "none", "a held file was handed out")
        self.assertNotEqual(os.stat(q["path"]).st_ino, ino, "a held file was handed out")
        self.delete("other")
        self.let_go(h)
        self.wait_stock_ready(1, timeout=30)
        q = self.put("again")
        self.assertEqual((q["from_stock"], os.stat(q["path"]).st_ino), ("full", ino),
                         "the file, no longer held, did not come back to the stock")

    def scans(self):
        """hpwarmd_stock_holder_scans_total from /metrics."""
        r = self.d.get("/metrics")
        for line in r.body.decode().splitlines():
            if line.startswith("hpwarmd_stock_holder_scans_total "):
                return int(line.split()[1])
        self.fail("no hpwarmd_stock_holder_scans_total in /metrics")

    def test_own_users_opath_across_delete_waits(self):
        """A pool handed to the QEMU user alone (file_uid, and a group it is
        not in, so only its uid could open it), in a directory every user
        may search: an O_PATH descriptor that
        user keeps across the DELETE makes the released file wait, dirty
        and untouched, while it is held (the pool group's processes alone
        would not include it); once closed, the file is zeroed into the
        stock."""
        uid, nogroup = pwd.getpwnam(QEMU_USER).pw_uid, grp.getgrnam("nogroup").gr_gid
        # Two pages: one stock file, and no room to refill it once it is
        # handed out, so the released file is what the target waits for.
        self.start_with_pages(2)
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": SIZE, "count": 1}]})
        self.assertEqual(r.status, 200, r)
        self.wait_stock_ready(1, timeout=60)
        r = self.d.put("/v1/pools/own", {"node": 0, "size": SIZE, "file_uid": uid, "file_gid": nogroup})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json["from_stock"], "full")
        # The daemon makes its directory 0750, the pool group's: here the
        # operator let every user search it, so the QEMU user reaches its
        # pool from outside the pool group.
        os.chmod(self.pool_dir, 0o751)
        h = self.holder("opath", r.json["path"], qemu=True, group="nogroup")
        self.delete("own")
        time.sleep(2.5)                             # two recycle checks, a second apart
        t = self.stock()[0]
        self.assertEqual((t["ready"], t["recycling"]), (0, 1), t)
        self.let_go(h)
        self.wait_stock_ready(1, timeout=30)


if __name__ == "__main__":
    main()
