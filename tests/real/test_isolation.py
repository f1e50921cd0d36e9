"""Isolation on this machine's real kernel, attacked as the QEMU user: a
process running as libvirt-qemu (group kvm, the daemon's --pool-group) can
neither read nor write a stock file, a released file waiting to be zeroed,
nor a pool handed to another user; a second hard link or an O_PATH
descriptor held across a DELETE never gets that file handed out again, and
the O_PATH descriptor cannot be reopened onto it.

Each attack runs in a child under setpriv(1) with that user's ids and no
other groups, the way QEMU runs under libvirt.  Run under tests/real/guard.sh
(host-wide lock, nr_hugepages restored, private hugetlbfs unmounted
afterwards); every test removes what it created and kills the processes it
started.  The daemon and its helpers are in tests/integration/hpwreal.py."""
import grp
import mmap
import os
import pwd
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from hpwtest import main  # noqa: E402
from hpwreal import MNT, QEMU_GROUP, QEMU_USER, RealKernelCase, ScriptChild, file_path, node0, pool_files  # noqa: E402

MIB = 1 << 20
SIZE = 4 * MIB

# The attacker: one command per line on stdin, one answer per line.
#   open PATH          open O_RDWR, map, write a byte, read it back: "ok" or the errno name
#   opath PATH         keep an O_PATH descriptor of PATH: "ok" or the errno name
#   reopen             open the kept descriptor again through /proc/self/fd: as open
#   link PATH DEST     link(2): "ok" or the errno name
#   byte PATH          the first byte read through PATH, as a number, or the errno name
#   list DIR           the names in DIR, or the errno name
#   under NAME         O_PATH of NAME looked up from the kept descriptor (a directory's):
#                      "ok" or the errno name
ATTACKER = r"""
import ctypes, errno, mmap, os, sys
ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL: never outlive the test
kept = None
def name(e):
    return errno.errorcode.get(e.errno, str(e.errno))
def rw(path):
    # hugetlbfs has no write(2): through a shared mapping, as a VMM does.
    fd = os.open(path, os.O_RDWR)
    try:
        m = mmap.mmap(fd, 2 << 20, mmap.MAP_SHARED)
        m[0] = 0x66
        ok = m[0] == 0x66
        m.close()
        return "ok" if ok else "mismatch"
    finally:
        os.close(fd)
print("ready", flush=True)
for line in sys.stdin:
    w = line.split()
    try:
        if w[0] == "open":
            out = rw(w[1])
        elif w[0] == "opath":
            kept = os.open(w[1], os.O_PATH)
            out = "ok"
        elif w[0] == "reopen":
            out = rw("/proc/self/fd/%d" % kept)
        elif w[0] == "link":
            os.link(w[1], w[2])
            out = "ok"
        elif w[0] == "list":
            out = " ".join(sorted(os.listdir(w[1]))) or "-"
        elif w[0] == "under":
            os.close(os.open(w[1], os.O_PATH, dir_fd=kept))
            out = "ok"
        elif w[0] == "byte":
            fd = os.open(w[1], os.O_RDONLY)
            out = str(os.pread(fd, 1, 0)[0])
            os.close(fd)
        else:
            out = "?"
    except OSError as e:
        out = name(e)
    print(out, flush=True)
"""


def fill(path, byte):
    with open(path, "r+b") as f:
        m = mmap.mmap(f.fileno(), 0, mmap.MAP_SHARED)
        m[:] = bytes([byte]) * len(m)
        m.close()


class Isolation(RealKernelCase):
    def setUp(self):
        try:
            self.qemu_uid = pwd.getpwnam(QEMU_USER).pw_uid
            self.kvm_gid = grp.getgrnam(QEMU_GROUP).gr_gid
        except KeyError:
            self.skipTest("no %s user or %s group (libvirt-daemon-system)" % (QEMU_USER, QEMU_GROUP))
        if not shutil.which("setpriv"):
            self.skipTest("no setpriv")
        super().setUp()
        self.attackers = []
        self.guests = []
        # The QEMU user reaches the pool directory as QEMU does (the mount's
        # root is searchable); a directory of its own on the same mount
        # stands in for libvirt's /dev/hugepages/libvirt/qemu.
        os.chmod(MNT, 0o755)
        self.scratch = os.path.join(MNT, "qemu-%d" % os.getpid())
        os.mkdir(self.scratch, 0o700)
        os.chown(self.scratch, self.qemu_uid, self.kvm_gid)

    def daemon(self, *extra):
        return super().daemon("--pool-group", QEMU_GROUP, *extra)

    def tearDown(self):
        for a in self.attackers:
            a.stop()
        for g in self.guests:
            if g.poll() is None:
                g.kill()
            g.wait()
        shutil.rmtree(self.scratch, ignore_errors=True)   # a link holds pages
        if self.d.proc and self.d.proc.poll() is None:
            self.d.put("/v1/stock", {"targets": []})
        super().tearDown()

    def attacker(self):
        a = ScriptChild(ATTACKER)
        self.attackers.append(a)
        return a

    def target(self, count):
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": "4M", "count": count}]})
        self.assertEqual(r.status, 200, r)

    def put(self, name, **extra):
        r = self.d.put("/v1/pools/" + name, dict({"node": 0, "size": "4M"}, **extra))
        self.assertEqual(r.status, 201, r)
        return r.json

    def stock_names(self):
        return sorted(f for f in pool_files(self.pool_dir) if f.startswith("~"))

    def guest(self, path):
        """A stand-in VM (root, as the daemon's VMM would be): maps PATH."""
        g = subprocess.Popen([sys.executable, "-c", "import mmap,sys\nf=open(sys.argv[1],'r+b')\n"
                              "m=mmap.mmap(f.fileno(),0,mmap.MAP_SHARED)\nf.close()\nprint('mapped',flush=True)\n"
                              "sys.stdin.read()", path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.guests.append(g)
        self.assertEqual(g.stdout.readline().strip(), "mapped")
        return g

    def test_stock_file_closed_to_the_qemu_user(self):
        """A ready stock file is out of the QEMU user's reach: it can
        neither open it nor take an O_PATH descriptor of it (by its path,
        or from a descriptor of the stock directory), nor list the stock
        directory; the hand-out is then the file itself, and the pool
        group opens its pool."""
        self.start_with_pages(4)
        self.target(1)
        self.wait_stock_ready(1)
        [name] = self.stock_names()
        path = file_path(self.pool_dir, name)
        st, dst = os.stat(path), os.stat(os.path.dirname(path))
        self.assertEqual((st.st_mode & 0o777, st.st_uid), (0o600, 0))
        self.assertEqual((dst.st_mode & 0o7777, dst.st_uid), (0o700, 0), "the stock directory")
        a = self.attacker()
        self.assertEqual(a("open", path), "EACCES", "the QEMU user wrote into a stock file")
        self.assertEqual(a("opath", path), "EACCES", "the QEMU user took an O_PATH descriptor of a stock file")
        self.assertEqual(a("list", os.path.dirname(path)), "EACCES", "the QEMU user listed the stock")
        self.assertEqual(a("opath", os.path.dirname(path)), "ok")  # the directory itself: a name is enough
        self.assertEqual(a("under", name), "EACCES", "the QEMU user reached a stock file from its directory")
        p = self.put("vm")
        self.assertEqual(p["from_stock"], "full")
        self.assertEqual(os.stat(p["path"]).st_ino, st.st_ino)
        self.assertEqual(a("open", p["path"]), "ok", "the pool group opens its pool")

    def test_root_holder_keeps_stock_file(self):
        """What can still reach a stock file is root's: a root process that
        maps one keeps it from being handed out (its write lease is
        refused); the PUT warms a fresh file; free, the next is handed
        out."""
        self.start_with_pages(4)
        self.target(1)
        self.wait_stock_ready(1)
        [name] = self.stock_names()
        path = file_path(self.pool_dir, name)
        ino = os.stat(path).st_ino
        g = self.guest(path)
        p = self.put("vm")
        self.assertEqual(p["from_stock"], "none", "a stock file some process maps was handed out")
        self.assertNotEqual(os.stat(p["path"]).st_ino, ino)
        g.kill()
        g.wait()
        self.wait_stock_ready(1)
        p = self.put("vm2")
        self.assertEqual(p["from_stock"], "full")

    def test_released_file_closed_to_the_qemu_user(self):
        """A released pool a VM still maps waits dirty: 0600, the daemon's;
        the QEMU user cannot open it (it could open the pool a moment
        before)."""
        self.start_with_pages(2)
        self.target(1)
        self.wait_stock_ready(1)
        p = self.put("vm")
        self.assertEqual(p["from_stock"], "full")
        a = self.attacker()
        self.assertEqual(a("open", p["path"]), "ok")
        g = self.guest(p["path"])
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        [name] = self.stock_names()
        dirty = file_path(self.pool_dir, name)
        self.assertEqual(os.stat(dirty).st_mode & 0o777, 0o600)
        self.assertEqual(a("open", dirty), "EACCES", "the QEMU user opened a released file")
        self.assertEqual(self.stock()[0]["recycling"], 1)
        g.kill()
        g.wait()
        self.wait_stock_ready(1, timeout=30)
        self.assertEqual(a("open", dirty), "EACCES", "the QEMU user opened a recycled stock file")

    def test_another_users_pool_closed(self):
        """A pool handed to one user (file_uid/file_gid) opens for that user
        only: the QEMU user is refused another VM's pool and gets its own."""
        self.start_with_pages(4)
        other = self.put("vm-a", file_uid=65534, file_gid=65534)
        own = self.put("vm-b", file_uid=self.qemu_uid, file_gid=self.kvm_gid)
        self.assertEqual((other["file_uid"], own["file_uid"]), (65534, self.qemu_uid))
        self.wait_ready("vm-a")
        self.wait_ready("vm-b")
        a = self.attacker()
        self.assertEqual(a("open", other["path"]), "EACCES", "the QEMU user opened another VM's pool")
        self.assertEqual(a("open", own["path"]), "ok")
        r = self.d.put("/v1/pools/vm-a", {"node": 0, "size": "4M"})
        self.assertEqual(r.status, 409, r)         # no taking it over by asking without the owner

    def test_hard_link_never_handed_out(self):
        """A link the QEMU user made while the pool was its own: released,
        the file is not recycled (removed); the next PUT of that shape gets
        another file, and the link no longer opens for the QEMU user (its
        file, still the old VM's bytes, is the daemon's alone)."""
        self.start_with_pages(4)
        self.target(2)
        self.wait_stock_ready(2)
        p = self.put("vm")
        self.assertEqual(p["from_stock"], "full")
        a = self.attacker()
        keep = os.path.join(self.scratch, "keep")
        self.assertEqual(a("link", p["path"], keep), "ok")
        fill(p["path"], 0xA5)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        end = time.monotonic() + 10
        while time.monotonic() < end and self.stock()[0]["recycling"]:
            time.sleep(0.05)
        self.assertEqual(self.stock()[0]["recycling"], 0, "the linked file still waits to be recycled")
        p2 = self.put("vm2")
        self.assertNotEqual(os.stat(p2["path"]).st_ino, os.stat(keep).st_ino, "the linked file was handed out")
        fill(p2["path"], 0x3C)
        # Released, the inode became the daemon's alone: the link opens no more.
        self.assertEqual(a("byte", keep), "EACCES", "the QEMU user reads a released file through its link")
        with open(keep, "rb") as f:
            self.assertEqual(f.read(1), b"\xa5", "the link's file is not the old VM's")

    def test_opath_held_across_delete_never_handed_out(self):
        """An O_PATH descriptor the QEMU user keeps across the DELETE: the
        file waits (dirty) while it is held, the next PUT gets another
        file, and the descriptor cannot be reopened; once it is closed the
        file is zeroed and joins the stock."""
        self.start_with_pages(4)
        self.target(2)
        self.wait_stock_ready(2)
        p = self.put("vm")
        ino = os.stat(p["path"]).st_ino
        a = self.attacker()
        self.assertEqual(a("opath", p["path"]), "ok")
        fill(p["path"], 0xA5)
        self.assertEqual(self.d.request("DELETE", "/v1/pools/vm").status, 204)
        time.sleep(2.5)                             # two recycle checks, a second apart
        t = self.stock()[0]
        self.assertEqual((t["ready"], t["recycling"]), (1, 1), t)
        p2 = self.put("vm2")
        self.assertNotEqual(os.stat(p2["path"]).st_ino, ino, "a held file was handed out")
        fill(p2["path"], 0x3C)
        self.assertEqual(a("reopen"), "EACCES", "the O_PATH descriptor reopened a released file")
        a.stop()
        self.wait_stock_ready(1, timeout=30)
        p3 = self.put("vm3")
        self.assertEqual(os.stat(p3["path"]).st_ino, ino)
        with open(p3["path"], "rb") as f:
            self.assertEqual(f.read(SIZE), bytes(SIZE), "the recycled file is not all zero")


if __name__ == "__main__":
    main()
