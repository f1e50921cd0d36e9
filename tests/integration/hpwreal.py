"""Shared harness for the real-kernel Python tests (test_real_kernel.py and
tests/real/*.py): node 0's 2 MiB page counts (and its 1 GiB ones, with why a
host cannot test them, for guard.sh --gigantic), the daemon on /sys with a
private pool directory in guard.sh's hugetlbfs, and the skeleton of the
kill -9 loops (tests/real/crash_loop.py, tests/real/stock_crash.py).

Every test using it runs under tests/real/guard.sh, which holds the host-wide
lock, restores every nr_hugepages value and unmounts its hugetlbfs ($MNT)
afterwards, even on failure; what is here removes the daemon, its state dir
and its pool dir on every way out as well."""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import hpwjournal
from hpwtest import HPWARMD, Daemon, TestCase

NODE0 = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/"
PAGE = 2 * 1024 * 1024
MNT = os.environ.get("HPW_TEST_HUGETLBFS", "")
# hpwarmd marks its pool directories with this file (pools.h POOLS_DIR_MARKER).
DIR_MARKER = ".hpwarm-pool-dir"
STOCK_PREFIX = "~"                # pool_state.h POOL_STOCK_PREFIX
# Stock files live in this directory inside the pool directory, the
# daemon's alone (pools.h POOLS_STOCK_DIR).
STOCK_DIR = ".stock"


def pool_files(d):
    """The files of pool directory D: its pools' and its stock directory's."""
    names = [f for f in os.listdir(d) if f not in (DIR_MARKER, STOCK_DIR)]
    s = os.path.join(d, STOCK_DIR)
    return names + (os.listdir(s) if os.path.isdir(s) else [])


def file_path(d, name):
    """Where the file NAME of pool directory D lives: a stock file in the
    stock directory, a pool's in D."""
    return os.path.join(d, STOCK_DIR, name) if name.startswith(STOCK_PREFIX) else os.path.join(d, name)


def node0(leaf):
    with open(NODE0 + leaf) as f:
        return int(f.read().strip())


def set_node0_pages(n):
    """Ask for N pages on node 0; what the kernel gave (may be fewer)."""
    with open(NODE0 + "nr_hugepages", "w") as f:
        f.write("%d\n" % n)
    return node0("nr_hugepages")


def guarded_daemon(total, name):
    """Under tests/real/guard.sh, TOTAL 2 MiB pages on node 0 and an unstarted
    real_daemon on pool dir hpwarm-NAME-<pid> below $MNT and a fresh state
    dir: (pool_dir, state, daemon).  None after saying why the test skips
    (outside guard.sh, or the kernel gave fewer pages)."""
    if not MNT:
        print("SKIP: not under tests/real/guard.sh")
        return None
    with open(NODE0 + "nr_hugepages", "w") as f:
        f.write("%d\n" % total)
    if node0("nr_hugepages") < total or node0("free_hugepages") < total:
        print("SKIP: the kernel gave %d 2 MiB pages (%d free) of %d"
              % (node0("nr_hugepages"), node0("free_hugepages"), total))
        return None
    pool_dir = os.path.join(MNT, "hpwarm-%s-%d" % (name, os.getpid()))
    state = tempfile.mkdtemp(prefix="hpwarm-%s-state-" % name)
    return pool_dir, state, real_daemon(pool_dir, state)


# -- 1 GiB pages (tests/real/gigantic.py, tests/qemu/gigantic_boot.py) --

GIG = 1 << 30
GIG_NODE0 = "/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/"
# guard.sh --gigantic's private hugetlbfs of 1 GiB pages.
MNT_1G = os.environ.get("HPW_TEST_HUGETLBFS_1G", "")
# The 1 GiB pages the tests take at most: a host that can hold them runs
# them, one that cannot skips.
GIG_PAGES = 2


def gig0(leaf):
    with open(GIG_NODE0 + leaf) as f:
        return int(f.read().strip())


def set_gig0(n):
    """Ask for N pages of 1 GiB on node 0; what the kernel gave."""
    with open(GIG_NODE0 + "nr_hugepages", "w") as f:
        f.write("%d\n" % n)
    return gig0("nr_hugepages")


def gigantic_skip_reason():
    """Why 1 GiB pages cannot be tested here, or None: outside guard.sh
    --gigantic, no 1 GiB page size in the kernel or the CPU, or fewer than
    GIG_PAGES pages reservable on node 0 after trying (the count is put back
    either way).  The caller prints it and exits 77."""
    if not MNT:
        return "not under tests/real/guard.sh"
    if not os.path.isdir("/sys/kernel/mm/hugepages/hugepages-1048576kB"):
        return "the kernel has no 1 GiB pages (no /sys/kernel/mm/hugepages/hugepages-1048576kB)"
    if os.uname().machine == "x86_64":
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
        if "pdpe1gb" not in flags:
            return "the CPU has no pdpe1gb flag (no 1 GiB pages)"
    if not os.path.isdir(GIG_NODE0):
        return "node 0 has no hugepages-1048576kB"
    if not MNT_1G:
        return "guard.sh made no 1 GiB hugetlbfs mount (it was run without --gigantic, or its line above says why)"
    base = gig0("nr_hugepages")
    try:
        got = set_gig0(base + GIG_PAGES)
    finally:
        set_gig0(base)
    if got < base + GIG_PAGES:
        return "node 0 could reserve only %d of %d more pages of 1 GiB (the kernel found no more free " \
               "contiguous gigabytes)" % (got - base, GIG_PAGES)
    if gig0("nr_hugepages") != base:
        return "node 0's 1 GiB count did not go back to %d" % base
    return None


def real_daemon(pool_dir, state, *extra, env=None):
    """hpwarmd on /sys, its 2 MiB pools in POOL_DIR, its journal in STATE."""
    return Daemon(sysfs_root="/sys", preload=False, state_dir=state,
                  args=["--hugetlbfs", "2M=" + pool_dir, *extra], env=env)


class RealKernelCase(TestCase):
    """The daemon on the real kernel with a private pool directory and state
    dir, and the helpers its tests share (test_real_kernel.py,
    tests/real/test_recycle.py, tests/real/test_owner.py): no tests of its
    own.  tearDown deletes every pool the daemon still lists, then removes
    the pool dir and the state dir, also when the test failed."""
    POOL_DIR = "hpwarm"               # + "-<pid>" below $MNT
    STATE_PREFIX = "hpwarm-real-state-"

    def setUp(self):
        if not MNT:
            self.skipTest("not under tests/real/guard.sh")
        self.pool_dir = os.path.join(MNT, "%s-%d" % (self.POOL_DIR, os.getpid()))
        self.state = tempfile.mkdtemp(prefix=self.STATE_PREFIX)
        self.d = self.daemon()

    def daemon(self, *extra):
        return real_daemon(self.pool_dir, self.state, *extra)

    def tearDown(self):
        if not MNT:
            return
        try:
            if self.d.proc and self.d.proc.poll() is None:
                for p in (self.d.get("/v1/pools").json or {}).get("pools", []):
                    self.d.request("DELETE", "/v1/pools/" + p["name"])
        finally:
            self.d.__exit__()
            shutil.rmtree(self.pool_dir, ignore_errors=True)
            shutil.rmtree(self.state, ignore_errors=True)

    def start_with_pages(self, n):
        got = set_node0_pages(n)
        if got < n:
            self.skipTest("kernel gave only %d of %d 2 MiB pages" % (got, n))
        self.d.start()

    def restart(self, *extra):
        """SIGTERM (it must exit 0), then a new daemon on the same dirs."""
        self.assertEqual(self.d.stop(), 0)
        self.d.__exit__()
        self.d = self.daemon(*extra)
        self.d.start()

    def wait_ready(self, name, timeout=60):
        r = self.d.get("/v1/pools/%s?wait=ready&timeout=%d" % (name, timeout), timeout=timeout + 10)
        self.assertEqual(r.status, 200, r)
        return r.json

    # -- stock --
    def stock(self):
        r = self.d.get("/v1/stock")
        self.assertEqual(r.status, 200, r)
        return r.json["targets"]

    def wait_stock_ready(self, want, timeout=60):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            t = self.stock()
            if t and t[0]["ready"] == want:
                return
            time.sleep(0.01)
        self.fail("stock never had %d ready files: %s" % (want, self.stock()))


# -- kill -9 loops --

class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def script_cannot_run():
    """A script's exit code when it cannot run here, said on stderr: 77
    outside guard.sh, 2 without the daemon binary; None when it can."""
    if not MNT:
        print("SKIP: not under tests/real/guard.sh", file=sys.stderr)
        return 77
    if not HPWARMD or not os.path.exists(HPWARMD):
        print("HPWARMD is not set to the daemon binary", file=sys.stderr)
        return 2
    return None


def pools_by_name(d, when=""):
    """GET /v1/pools of daemon D (a Failure unless 200), by name; WHEN goes
    into the message."""
    r = d.get("/v1/pools")
    check(r.status == 200, "GET /v1/pools%s: %r" % (when, r))
    return {p["name"]: p for p in r.json["pools"]}


def files_in(pool_dir):
    """The pool files in POOL_DIR and its stock directory (the marker
    aside); none without the dir."""
    return set(pool_files(pool_dir)) if os.path.isdir(pool_dir) else set()


class CrashLoop:
    """One daemon at a time on a state dir and a pool dir that outlive it:
    start, kill -9, restart, and the checks every round shares."""
    STATE_PREFIX = "hpwarm-crash-state-"

    def __init__(self, mnt, seed):
        self.rng = random.Random(seed)
        self.pool_dir = os.path.join(mnt, "hpwarm")
        self.state = tempfile.mkdtemp(prefix=self.STATE_PREFIX)
        self.d = None
        self.kills = 0

    def start(self):
        self.d = real_daemon(self.pool_dir, self.state, "--log-level", "notice")
        self.d.start()

    def kill9(self):
        self.d.proc.send_signal(signal.SIGKILL)
        self.d.proc.wait()
        self.d.__exit__()  # removes only the Daemon's own temp dir
        self.kills += 1

    def pools(self):
        return pools_by_name(self.d)

    def files(self):
        return files_in(self.pool_dir)

    def check_journal(self, when):
        """The journal, where there is one, reads: state.json parses and
        state.log's records check out and replay (a torn last one aside)."""
        if os.path.exists(os.path.join(self.state, "state.json")):
            try:
                return hpwjournal.read(self.state)
            except (ValueError, KeyError) as e:
                raise Failure("%s: the journal does not read: %s" % (when, e))

    def check_all_gone(self, free0, what):
        """Every pool deleted: none listed, no file, node 0's free pages back."""
        check(self.pools() == {}, "pools left after deleting every pool")
        left = sorted(self.files())
        check(left == [], "files left in the pool dir: %s" % left)
        free = node0("free_hugepages")
        check(free == free0, "node 0 free_hugepages %d after %s, was %d" % (free, what, free0))
        check(self.d.stop() == 0, "hpwarmd did not exit 0 on SIGTERM")


def run_crash_loop(name, pages, make_loop, body):
    """The frame of a kill -9 loop: skip (77) outside guard.sh or when node 0
    will not get PAGES pages; one seed (HPW_CRASH_SEED, else random), printed
    first; BODY(loop, free0, t0) runs the rounds and returns the ok line, or
    raises Failure.  The daemon, its state dir and its pool dir are removed
    on every way out (guard.sh also empties its mount)."""
    mnt = MNT
    rc = script_cannot_run()
    if rc is not None:
        return rc
    seed = int(os.environ.get("HPW_CRASH_SEED", "0")) or random.SystemRandom().randrange(1, 2**31)
    print("%s: seed %d (rerun with HPW_CRASH_SEED=%d)" % (name, seed, seed), flush=True)

    got = set_node0_pages(pages)
    if got < pages:
        print("SKIP: kernel gave only %d of %d 2 MiB pages on node 0" % (got, pages), file=sys.stderr)
        return 77
    free0 = node0("free_hugepages")
    loop = make_loop(mnt, seed)
    t0 = time.monotonic()
    rc = 1
    try:
        print("%s: ok: %s, %.1fs" % (name, body(loop, free0, t0), time.monotonic() - t0))
        rc = 0
    except Failure as e:
        print("%s: FAIL (seed %d): %s" % (name, seed, e), file=sys.stderr)
        if loop.d:
            print("daemon log:\n  " + "\n  ".join(loop.d.log[-30:]), file=sys.stderr)
    finally:
        if loop.d:
            loop.d.kill()
            loop.d.__exit__()
        shutil.rmtree(loop.pool_dir, ignore_errors=True)
        shutil.rmtree(loop.state, ignore_errors=True)
    return rc


QEMU_USER, QEMU_GROUP = "libvirt-qemu", "kvm"


class ScriptChild:
    """A Python SCRIPT in a child process, asked one line at a time on its
    stdin and answering one line on its stdout (it prints "ready" first);
    as the QEMU user and group (setpriv, no other groups) when AS_QEMU."""

    def __init__(self, script, as_qemu=True):
        pre = ["setpriv", "--reuid=" + QEMU_USER, "--regid=" + QEMU_GROUP, "--clear-groups"] if as_qemu else []
        self.p = subprocess.Popen(pre + [sys.executable, "-c", script], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "ready"

    def __call__(self, *words):
        self.p.stdin.write(" ".join(words) + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
