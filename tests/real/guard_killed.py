"""real.guard_killed: tests/real/guard.sh restores what a guarded test
changed even when the guard itself is killed, as ctest's TIMEOUT does.

A victim runs under guard.sh --gigantic: it grows node 0's nr_hugepages
by GROW pages, creates a file in the guard's hugetlbfs mount and faults a
page of it in (kept mapped), creates a file in the guard's 1 GiB mount
where the host has one, prints a line and waits, ignoring SIGTERM.  Then it is
killed mid-run, one way per case:
  - the guard alone, SIGKILL (the test lives on in its own process group);
  - the guard's whole process group, SIGKILL;
  - the whole process tree, SIGSTOP then SIGKILL, as ctest does on TIMEOUT
    (by parent pid, whatever the groups and sessions);
  - a real ctest, whose TIMEOUT (TIMEOUT_AFTER_MATCH: 1 s after the line)
    kills it;
  - the guard, its keeper and the test all at once: the next guarded run
    (guard.sh true) restores from the record first.
After each, once the lock is free again (taken here, so the check is not
raced by another real test): every nr_hugepages is what it was, both
mounts are gone, no record is left and no process of the victim lives.

Not itself under guard.sh (its victims take the lock); should a case leave
anything behind, the end puts the counts back itself.  Skips (77) without
root or writable nr_hugepages.

With --stand-in (scripts.guard_killed) the same cases run against a
stand-in: guard.sh gets a lock of its own, plain files for the counts and
a tmpfs mount (HPW_GUARD_*), so the kill paths are proven without the
host-wide lock, which other real tests may hold for minutes."""
import fcntl
import glob
import mmap
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GUARD = os.path.join(HERE, "guard.sh")
# The real ones, or a stand-in's (set up by main, passed to the victims
# through the HPW_GUARD_* environment guard.sh reads).
NODES = os.environ.get("HPW_GUARD_NODES", "/sys/devices/system/node")
LOCK = os.environ.get("HPW_GUARD_LOCK", "/run/lock/hpwarm-real-tests.lock")
RECORD = LOCK[:-len(".lock")] + ".restore"
NODE0 = NODES + "/node0/hugepages/hugepages-2048kB/nr_hugepages"
PAGE = 2 << 20 if os.environ.get("HPW_GUARD_FSTYPE") != "tmpfs" else 4096
GROW = 3
LINE = "hpwarm-victim-changed"
# Bounds, not expectations: the lock may be held by another real test for
# minutes (benches), and a restore waits up to 20 s for pages in use.
LOCK_WAIT_S = 1200
GONE_WAIT_S = 60


def counts():
    out = {}
    for f in sorted(glob.glob(NODES + "/node*/hugepages/hugepages-*/nr_hugepages")):
        with open(f) as fh:
            out[f] = int(fh.read())
    return out


def victim(marker):
    """Under guard.sh: change what the guard must restore, then wait."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    mnt = os.environ["HPW_TEST_HUGETLBFS"]
    with open(NODE0) as f:
        before = int(f.read())
    with open(NODE0, "w") as f:
        f.write("%d\n" % (before + GROW))
    fd = os.open(os.path.join(mnt, "victim-pool"), os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(fd, PAGE)
    m = mmap.mmap(fd, PAGE)
    m[0:1] = b"x"  # one page faulted in, and kept mapped
    mnt1g = os.environ.get("HPW_TEST_HUGETLBFS_1G", "-")
    if mnt1g != "-":
        open(os.path.join(mnt1g, "victim-1g"), "w").close()
    with open(marker + ".tmp", "w") as f:
        f.write("%d %d %s %s\n" % (os.getpid(), os.getpgrp(), mnt, mnt1g))
    os.rename(marker + ".tmp", marker)
    print(LINE, flush=True)
    while True:
        signal.pause()


def wait_for(what, cond, bound):
    deadline = time.monotonic() + bound
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("%s: not within %d s" % (what, bound))
        time.sleep(0.05)


class Lock:
    """The guards' host-wide lock, taken here (blocking, as the guards
    wait, so it is not starved by them; bounded by an alarm)."""

    def __enter__(self):
        self.fd = os.open(LOCK, os.O_WRONLY | os.O_CREAT, 0o644)

        def late(*_):
            raise AssertionError("the guards' lock: not within %d s" % LOCK_WAIT_S)
        old = signal.signal(signal.SIGALRM, late)
        signal.alarm(LOCK_WAIT_S)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        return self

    def __exit__(self, *exc):
        os.close(self.fd)


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def descendants(root):
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def keepers_of(guard_pid):
    """The keepers watching GUARD_PID: their argv names its pid and its
    start time (pids wrap around fast on a busy host)."""
    with open("/proc/%d/stat" % guard_pid) as f:
        start = f.read().rsplit(")", 1)[1].split()[19].encode()
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"--keep" in argv and argv[argv.index(b"--keep") + 1:][:2] == [str(guard_pid).encode(), start]:
                out.append(int(d))
    # Not the keeper's own command substitutions (forks of it, same argv),
    # nor setsid(1) itself in the moment before it forks and execs it.
    return [p for p in out if ppid(p) not in out and os.path.basename(argv0(p)) != b"setsid"]


def argv0(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().split(b"\0")[0]
    except OSError:
        return b""


def ppid(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def start_victim(tmp):
    marker = os.path.join(tmp, "marker")
    g = subprocess.Popen([GUARD, "--gigantic", sys.executable, os.path.abspath(__file__), "--victim", marker],
                         stdin=subprocess.DEVNULL, start_new_session=True)
    wait_for("the victim's changes", lambda: os.path.exists(marker) or g.poll() is not None, LOCK_WAIT_S)
    if g.poll() is not None:
        raise AssertionError("guard.sh exited %d before the victim changed anything" % g.returncode)
    with open(marker) as f:
        pid, pgid, *mnts = f.read().split()
    os.unlink(marker)
    return g, int(pid), int(pgid), mnts


def check_restored(case, baseline, victim_pid, mnts, failures):
    wait_for("%s: the victim gone" % case, lambda: not alive(victim_pid), GONE_WAIT_S)
    with Lock():
        now = counts()
        for f, v in baseline.items():
            if now.get(f) != v:
                failures.append("%s: %s is %s, was %d" % (case, f, now.get(f), v))
        mnts = [m for m in mnts if m != "-"]    # "-": the host has no 1 GiB pages
        left = [m for m in mnts if os.path.ismount(m) or os.path.exists(m)]
        for m in left:
            failures.append("%s: the guard's mount %s is still there" % (case, m))
        if os.path.exists(RECORD):
            failures.append("%s: the record %s is left" % (case, RECORD))
    print("%s: counts %s, %d mount(s) %s" % (case, "restored" if now == baseline else "NOT restored",
                                             len(mnts), "LEFT" if left else "gone"), flush=True)


def kill_guard(g, pid, pgid):
    os.kill(g.pid, signal.SIGKILL)
    g.wait()


def kill_group(g, pid, pgid):
    os.killpg(g.pid, signal.SIGKILL)
    g.wait()


def kill_tree(g, pid, pgid):
    tree = descendants(g.pid)
    for p in tree:
        try:
            os.kill(p, signal.SIGSTOP)
        except ProcessLookupError:
            pass
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    g.wait()


def case_killed(name, how, tmp, baseline, failures):
    g, pid, pgid, mnts = start_victim(tmp)
    how(g, pid, pgid)
    check_restored(name, baseline, pid, mnts, failures)


def case_keeper_killed_too(tmp, baseline, failures):
    """Guard, keeper and test killed: the next guard restores first."""
    name = "guard, keeper and test SIGKILL, next guard restores"
    g, pid, pgid, mnts = start_victim(tmp)
    # The guard waits for its keeper's line in the record, but the keeper's
    # own forks come and go: a few tries for the one keeper alone.
    for _ in range(50):
        keepers = keepers_of(g.pid)
        if len(keepers) == 1:
            break
        time.sleep(0.1)
    if len(keepers) != 1:
        failures.append("%s: %d keepers of guard %d" % (name, len(keepers), g.pid))
    for p in [q for k in keepers for q in descendants(k)] + descendants(g.pid):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    g.wait()
    wait_for("%s: the victim gone" % name, lambda: not alive(pid), GONE_WAIT_S)
    if not os.path.exists(RECORD):
        failures.append("%s: no record left for the next guard" % name)
    r = subprocess.run([GUARD, "true"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=LOCK_WAIT_S + 60)
    if r.returncode != 0 or "restoring from" not in r.stderr:
        failures.append("%s: guard.sh true exited %d without saying it restored: %r"
                        % (name, r.returncode, r.stderr))
    check_restored(name, baseline, pid, mnts, failures)


def case_ctest_timeout(tmp, baseline, failures):
    name = "ctest TIMEOUT"
    proj = os.path.join(tmp, "ctest")
    os.makedirs(proj)
    marker = os.path.join(tmp, "marker")
    with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
        f.write("cmake_minimum_required(VERSION 3.20)\nproject(victim NONE)\nenable_testing()\n"
                "add_test(NAME victim COMMAND %s --gigantic %s %s --victim %s)\n"
                "set_tests_properties(victim PROPERTIES TIMEOUT %d TIMEOUT_AFTER_MATCH \"1;%s\")\n"
                % (GUARD, sys.executable, os.path.abspath(__file__), marker, LOCK_WAIT_S, LINE))
    subprocess.run(["cmake", "-S", proj, "-B", os.path.join(proj, "b")], check=True, capture_output=True)
    r = subprocess.run(["ctest", "--test-dir", os.path.join(proj, "b")], capture_output=True, text=True,
                       timeout=LOCK_WAIT_S + 120)
    if "Timeout" not in r.stdout:
        failures.append("%s: the victim did not time out: %s" % (name, r.stdout[-400:]))
        return
    with open(marker) as f:
        pid, pgid, *mnts = f.read().split()
    os.unlink(marker)
    check_restored(name, baseline, int(pid), mnts, failures)


def stand_in(tmp):
    """A lock, a node tree and a mount type of the test's own, for guard.sh
    and the victims (through the environment) and for this process."""
    global NODES, LOCK, RECORD, NODE0, PAGE
    NODES = os.path.join(tmp, "nodes")
    for node, size, count in ((0, "2048kB", 5), (1, "2048kB", 7), (0, "1048576kB", 1)):
        d = os.path.join(NODES, "node%d" % node, "hugepages", "hugepages-" + size)
        os.makedirs(d)
        with open(os.path.join(d, "nr_hugepages"), "w") as f:
            f.write("%d\n" % count)
    LOCK = os.path.join(tmp, "guard.lock")
    RECORD = LOCK[:-len(".lock")] + ".restore"
    NODE0 = NODES + "/node0/hugepages/hugepages-2048kB/nr_hugepages"
    PAGE = 4096
    os.environ.update(HPW_GUARD_NODES=NODES, HPW_GUARD_LOCK=LOCK, HPW_GUARD_FSTYPE="tmpfs")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--victim":
        victim(sys.argv[2])
        return 0
    stand = sys.argv[1:] == ["--stand-in"]
    if os.getuid() != 0 or (not stand and not os.access(NODE0, os.W_OK)):
        print("SKIP: needs root and a writable nr_hugepages", file=sys.stderr)
        return 77
    if not shutil.which("cmake") or not shutil.which("ctest"):
        print("SKIP: needs cmake and ctest", file=sys.stderr)
        return 77
    tmp = tempfile.mkdtemp(prefix="hpwarm-guard-killed-")
    if stand:
        stand_in(tmp)
    failures = []
    with Lock():
        baseline = counts()
    started = time.monotonic()
    try:
        case_killed("guard SIGKILL", kill_guard, tmp, baseline, failures)
        case_killed("guard's process group SIGKILL", kill_group, tmp, baseline, failures)
        case_killed("process tree SIGSTOP+SIGKILL (as ctest)", kill_tree, tmp, baseline, failures)
        case_ctest_timeout(tmp, baseline, failures)
        case_keeper_killed_too(tmp, baseline, failures)
    except AssertionError as e:
        failures.append(str(e))
    finally:
        # Should a case have left anything, put the counts back here.
        with Lock():
            now = counts()
            for f, v in baseline.items():
                if now.get(f) != v:
                    with open(f, "w") as fh:
                        fh.write("%d\n" % v)
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print("ok: 5 ways of killing a guarded test mid-run, each restored%s (%.0f s)"
          % (" (stand-in)" if stand else "", time.monotonic() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
