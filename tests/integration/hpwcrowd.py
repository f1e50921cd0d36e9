"""A crowd of processes, as on a busy hypervisor host: N processes, each
holding D descriptors of a small file and M mappings of it (each its own
VMA: one mmap call per mapping, never merged since their offsets do not
follow on), optionally as another user (setpriv).  Used by
tests/real/test_crowd.py (isolation among a crowd) and tests/bench/bench.py
--busy-host N (tests/bench/hpwbench/busy.py).

One leader process forks the crowd; the leader and every member die with
whoever started them (PR_SET_PDEATHSIG, set again after any change of ids),
and Crowd.stop() kills the leader's whole process group, which holds only
the crowd: nothing outlives the test or the benchmark, on any exit path."""
import os
import select
import signal
import subprocess
import sys
import tempfile

LEADER = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.prctl(1, 9)                       # PR_SET_PDEATHSIG SIGKILL
if os.getppid() != int(sys.argv[5]):
    sys.exit(0)
os.setpgrp()
n, nfds, nmaps, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
r, w = os.pipe()
leader = os.getpid()
for i in range(n):
    if os.fork() == 0:
        libc.prctl(1, 9)
        if os.getppid() != leader:
            os._exit(0)
        os.close(r)
        fds = [os.open(path, os.O_RDONLY) for _ in range(nfds)]
        # libc's mmap: Python's would dup the descriptor for each mapping.
        for _ in range(nmaps):
            if libc.mmap(None, ctypes.c_size_t(4096), 1, 1, fds[0], ctypes.c_long(0)) in (None, -1):
                os._exit(1)
        os.write(w, b"x")
        while True:
            signal.pause()
os.close(w)
got = 0
while got < n:
    b = os.read(r, n - got)
    if not b:
        break
    got += len(b)
print("ready %d" % got, flush=True)
sys.stdin.read()                       # until the starter closes it (or dies)
os.killpg(0, signal.SIGKILL)
"""


class Crowd:
    """N processes x NFDS descriptors x NMAPS mappings, as USER:GROUP (None:
    as we are).  Raises RuntimeError if the crowd did not come up whole."""

    def __init__(self, n, nfds, nmaps, user=None, group=None, timeout=300):
        self.dir = tempfile.mkdtemp(prefix="hpwarm-busy-crowd-")
        os.chmod(self.dir, 0o755)
        self.path = os.path.join(self.dir, "small")
        with open(self.path, "wb") as f:
            f.write(b"\0" * 4096)
        os.chmod(self.path, 0o644)
        pre = []
        if user:
            pre = ["setpriv", "--reuid=" + user, "--regid=" + (group or user), "--clear-groups"]
        self.n = n
        self.p = subprocess.Popen(pre + [sys.executable, "-c", LEADER, str(n), str(nfds), str(nmaps), self.path,
                                         str(os.getpid())],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            if not select.select([self.p.stdout], [], [], timeout)[0]:
                raise RuntimeError("crowd of %d: not up after %d s" % (n, timeout))
            line = self.p.stdout.readline().strip()
            if line != "ready %d" % n:
                raise RuntimeError("crowd of %d: the leader said %r" % (n, line))
        except BaseException:
            self.stop()
            raise

    def pids(self):
        """The members' pids (the leader's children)."""
        with open("/proc/%d/task/%d/children" % (self.p.pid, self.p.pid)) as f:
            return [int(x) for x in f.read().split()]

    def stop(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.p.kill()
        self.p.wait()
        for stream in (self.p.stdin, self.p.stdout):
            try:
                stream.close()
            except OSError:
                pass
        try:
            os.unlink(self.path)
            os.rmdir(self.dir)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
