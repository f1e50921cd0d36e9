"""The holder check's argument, step by step, on this machine's kernel and a
real hugetlbfs file (docs/ARCHITECTURE.md, "Holder check"):

  1. a write lease (F_SETLEASE F_WRLCK) is granted while no other open file
     description of the file exists, and refused (EAGAIN) while another
     process has it open, or maps it after closing its descriptor (a mapping
     keeps its file open);
  2. an O_PATH descriptor is no open file for the lease: granted beside it;
  3. st_nlink tells a second link;
  4. an O_PATH descriptor the QEMU user took while the file was its pool's
     (0660, group kvm) cannot be reopened for reading or writing through
     /proc/PID/fd once the file is 0600 and root's, nor linked to a new
     name; root (CAP_DAC_OVERRIDE) still can reopen it;
  5. an open of the file while the lease is held waits for the lease to be
     dropped, and the holder, SIGIO ignored, is not killed by the break.

Every step runs in a private hugetlbfs under tests/real/guard.sh; each test
removes its files and kills the processes it started."""
import errno
import fcntl
import grp
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from hpwtest import TestCase, main  # noqa: E402
from hpwreal import MNT, QEMU_GROUP, QEMU_USER, ScriptChild, set_node0_pages  # noqa: E402

PAGE = 2 << 20
F_SETLEASE, F_GETLEASE = 1024, 1025

# A helper process: one command per line, one answer per line (as
# test_isolation.py's attacker).
#   open PATH     keep an O_RDONLY descriptor
#   map PATH      map it shared, touch it, close the descriptor, keep the mapping
#   opath PATH    keep an O_PATH descriptor
#   reopen MODE   open the kept O_PATH descriptor again through /proc/self/fd (r or rw)
#   link DEST     link the kept O_PATH descriptor's file to DEST (through /proc/self/fd)
#   fd            the number of the kept descriptor
HELPER = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(1, 9)
libc.mmap.restype = ctypes.c_void_p
kept, maps = None, []
print("ready", flush=True)
for line in sys.stdin:
    w = line.split()
    try:
        if w[0] == "open":
            kept = os.open(w[1], os.O_RDONLY); out = "ok"
        elif w[0] == "map":
            # libc's mmap: Python's keeps a duplicate of the descriptor.
            fd = os.open(w[1], os.O_RDWR)
            a = libc.mmap(None, ctypes.c_size_t(2 << 20), 3, 1, fd, ctypes.c_long(0))
            os.close(fd)
            if a in (None, ctypes.c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), "mmap")
            ctypes.c_char.from_address(a).value = b"x"; maps.append(a); out = "ok"
        elif w[0] == "opath":
            kept = os.open(w[1], os.O_PATH); out = "ok"
        elif w[0] == "reopen":
            fd = os.open("/proc/self/fd/%d" % kept, os.O_RDONLY if w[1] == "r" else os.O_RDWR)
            os.close(fd); out = "ok"
        elif w[0] == "link":
            # linkat(AT_SYMLINK_FOLLOW): os.link would link the magic link itself.
            if libc.linkat(-100, b"/proc/self/fd/%d" % kept, -100, w[1].encode(), 0x400) < 0:
                raise OSError(ctypes.get_errno(), "linkat")
            out = "ok"
        elif w[0] == "fd":
            out = str(kept)
        else:
            out = "?"
    except OSError as e:
        out = errno.errorcode.get(e.errno, str(e.errno))
    print(out, flush=True)
"""


def lease(fd):
    """0 granted (and dropped at once), or the errno name."""
    try:
        fcntl.fcntl(fd, F_SETLEASE, fcntl.F_WRLCK)
    except OSError as e:
        return errno.errorcode[e.errno]
    fcntl.fcntl(fd, F_SETLEASE, fcntl.F_UNLCK)
    return 0


class Holder(TestCase):
    def setUp(self):
        if not MNT:
            self.skipTest("not under tests/real/guard.sh")
        with open("/proc/sys/fs/leases-enable") as f:
            if f.read().strip() == "0":
                self.skipTest("fs.leases-enable is 0")
        if set_node0_pages(2) < 2:
            self.skipTest("no 2 MiB pages")
        self.dir = os.path.join(MNT, "holder-%d" % os.getpid())
        os.mkdir(self.dir, 0o755)
        os.chmod(MNT, 0o755)
        self.path = os.path.join(self.dir, "pool")
        fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.ftruncate(fd, PAGE)
        os.close(fd)
        self.fd = os.open(self.path, os.O_RDONLY)
        self.helpers = []

    def tearDown(self):
        if not MNT:
            return
        for h in self.helpers:
            h.stop()
        os.close(self.fd)
        shutil.rmtree(self.dir, ignore_errors=True)

    def helper(self, user=None):
        h = ScriptChild(HELPER, as_qemu=bool(user))
        self.helpers.append(h)
        return h

    def qemu_ids(self):
        try:
            return pwd.getpwnam(QEMU_USER).pw_uid, grp.getgrnam(QEMU_GROUP).gr_gid
        except KeyError:
            self.skipTest("no %s user or %s group" % (QEMU_USER, QEMU_GROUP))

    def test_lease_granted_alone(self):
        self.assertEqual(lease(self.fd), 0, "a write lease on a hugetlbfs file nobody else opened")
        self.assertEqual(fcntl.fcntl(self.fd, F_GETLEASE), fcntl.F_UNLCK, "the lease was not dropped")

    def test_lease_refused_while_another_process_opens_it(self):
        h = self.helper()
        self.assertEqual(h("open", self.path), "ok")
        self.assertEqual(lease(self.fd), "EAGAIN")
        h.stop()
        self.assertEqual(lease(self.fd), 0)

    def test_lease_refused_while_mapped_after_close(self):
        h = self.helper()
        self.assertEqual(h("map", self.path), "ok")
        st = os.stat(self.path)
        fds = [os.stat("/proc/%d/fd/%s" % (h.p.pid, n)) for n in os.listdir("/proc/%d/fd" % h.p.pid)]
        self.assertFalse([s for s in fds if (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino)],
                         "the helper still has a descriptor of the file")
        with open("/proc/%d/maps" % h.p.pid) as f:
            self.assertIn(self.path, f.read(), "the helper does not map the file")
        self.assertEqual(lease(self.fd), "EAGAIN", "a mapping alone did not keep the file open")
        h.stop()
        self.assertEqual(lease(self.fd), 0)

    def test_lease_granted_beside_opath(self):
        h = self.helper()
        self.assertEqual(h("opath", self.path), "ok")
        self.assertEqual(lease(self.fd), 0, "the lease saw an O_PATH descriptor")

    def test_nlink_tells_a_second_link(self):
        self.assertEqual(os.fstat(self.fd).st_nlink, 1)
        os.link(self.path, self.path + ".2")
        self.assertEqual(os.fstat(self.fd).st_nlink, 2)
        os.unlink(self.path + ".2")
        self.assertEqual(os.fstat(self.fd).st_nlink, 1)

    def test_opath_from_use_not_reopened_once_private(self):
        uid, gid = self.qemu_ids()
        scratch = os.path.join(self.dir, "qemu")
        os.mkdir(scratch, 0o700)
        os.chown(scratch, uid, gid)
        # In the VM's hands: 0660, group kvm.
        os.chown(self.path, 0, gid)
        os.chmod(self.path, 0o660)
        a = self.helper(user=True)
        self.assertEqual(a("opath", self.path), "ok")
        self.assertEqual(a("reopen", "rw"), "ok", "the pool group reopens its pool")
        # Released: 0600 and root's.
        os.chown(self.path, 0, 0)
        os.chmod(self.path, 0o600)
        self.assertEqual(a("reopen", "r"), "EACCES", "reopened for reading once private")
        self.assertEqual(a("reopen", "rw"), "EACCES", "reopened for writing once private")
        self.assertEqual(a("link", os.path.join(scratch, "keep")), "EPERM",
                         "linked through the O_PATH descriptor once private (fs.protected_hardlinks)")
        self.assertEqual(os.fstat(self.fd).st_nlink, 1)
        # Root can: CAP_DAC_OVERRIDE passes the mode.
        fd = os.open("/proc/%d/fd/%s" % (a.p.pid, a("fd")), os.O_RDWR)
        os.close(fd)

    def test_open_during_lease_waits_and_holder_survives(self):
        old = signal.signal(signal.SIGIO, signal.SIG_IGN)
        try:
            fcntl.fcntl(self.fd, F_SETLEASE, fcntl.F_WRLCK)
            opener = subprocess.Popen([sys.executable, "-c", "import os,sys; os.open(sys.argv[1], os.O_RDONLY);"
                                       " print('opened', flush=True)", self.path], stdout=subprocess.PIPE, text=True)
            try:
                time.sleep(0.3)
                self.assertIsNone(opener.poll(), "the open did not wait for the lease")
                # The break downgrades nothing yet: the lease is still ours
                # (being broken) until we drop it.
                self.assertIn(fcntl.fcntl(self.fd, F_GETLEASE), (fcntl.F_WRLCK, fcntl.F_RDLCK, fcntl.F_UNLCK))
                fcntl.fcntl(self.fd, F_SETLEASE, fcntl.F_UNLCK)
                self.assertEqual(opener.communicate(timeout=30)[0].strip(), "opened")
            finally:
                if opener.poll() is None:
                    opener.kill()
                opener.wait()
        finally:
            signal.signal(signal.SIGIO, old)


if __name__ == "__main__":
    main()
