"""The fault-injection sweep: every system call the daemon makes on its
durable and pool paths, failed at its Nth occurrence for N = 1, 2, 3, ...,
each time under a short scripted workload against the real daemon on real
2 MiB pages, then kill -9 and a restart without faults, and the checks:

- the daemon never died by a signal and never hung: every request was
  answered within REQ_TIMEOUT_S, with a success or a problem+json that has
  a detail; a start it could not make said why on stderr and exited
  non-zero;
- after the restart, every pool answered 2xx and not deleted since is
  listed; every file in the pool dir has a journal row that holds a file
  (pool, stock or recycling), and every such row has its file;
- deleting everything (pools, stock targets, the count the workload moved)
  gives every hugepage back: node 0's free_hugepages and nr_hugepages are
  where they started and the pool dir is empty.

The faults come from strace (`-e inject=SYSCALL:error=ERRNO:when=N`), so the
daemon carries no injection code: what runs is what ships.  strace counts
occurrences per thread, so `when=N` fails the Nth call of that syscall in
every thread (the Nth log line of the main thread and the Nth wake-up write
of the long-poll thread alike).  Sysfs writes are swept on their own with
strace's path filter (-P), which counts only the calls on that file; mmap
on the pool files alone the same way (the loader's own mmaps before main()
are not the daemon's).  A
control run without a fault comes first: a violation there is the
harness's, not the daemon's.

Runs under tests/real/guard.sh (lock, counts restored, private hugetlbfs in
$HPW_TEST_HUGETLBFS); skips (77) outside it, without strace, or when the
kernel will not give the pages.  Every run has its own state dir and pool
dir, removed however the run ends.  ctest (real.fault_sweep) runs the
default set of syscalls for the first CI_OCCURRENCES occurrences; the full
sweep (more syscalls, more occurrences) is `tests/bench/bench.py --faults`,
or this script with --full.  The last line is the tally:
"sweep: S syscalls, N occurrences, R runs, V violations"."""
import argparse
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import hpwjournal  # noqa: E402
import hpwreal  # noqa: E402
from hpwreal import NODE0, node0, real_daemon, set_node0_pages  # noqa: E402
from hpwtest import Daemon  # noqa: E402

PAGES = 64                        # reserved on node 0 for the sweep (128 MiB)
REQ_TIMEOUT_S = 15                # an answer later than this is a hang
START_TIMEOUT_S = 20              # "listening on" or an exit, under strace
RECHECKS = 6                     # readings of files against rows, half a second apart
SETTLE_TIMEOUT_S = 30             # warms, stock and recycling quiet after the restart
CI_OCCURRENCES = 5
FULL_OCCURRENCES = 12
STOCK = {"node": 0, "page_size": "2M", "size": "4M", "count": 1}
# Row states whose file exists (pool_state.c); the rest hold none.
FILE_STATES = ("warming", "ready", "stock_warming", "stock", "dirty", "recycling")
NR_PATH = NODE0 + "nr_hugepages"
# In a syscall's strace arguments: -P for each file the workload's pools and
# stock live in.  mmap is swept on those alone: the dynamic loader maps the
# daemon's libraries with mmap before main() runs, and a loader that cannot
# (a crash, or exit 127) is not the daemon's failure path.
POOL_FILES = "@pool-files"
POOL_FILE_NAMES = ("w1", "h1", "r1", "~n0-2048k-0", "~n0-2048k-1", "~n0-2048k-2", "~n0-2048k-r0", "~n0-2048k-r1")

# (label, syscalls strace injects, errno, extra strace arguments).  The set
# comes from `strace -f -c` of the workload (--census prints it): the calls
# on the journal (openat, write, fdatasync, fsync, rename, unlink, pwrite64
# for the pid file), on pool files (openat, ftruncate, mmap, madvise, mbind,
# renameat2 for hand-outs, unlink), the node's count in sysfs, and the
# threads' start (clone3).
SYSCALLS = [
    ("write", "write", "ENOSPC", []),
    ("pwrite64", "pwrite64", "ENOSPC", []),
    ("fdatasync", "fdatasync", "EIO", []),
    ("fsync", "fsync", "EIO", []),
    ("rename", "rename", "EIO", []),
    ("renameat2", "renameat2", "EIO", []),
    ("ftruncate", "ftruncate", "EIO", []),
    ("openat", "openat", "EMFILE", []),
    ("mmap", "mmap", "ENOMEM", [POOL_FILES]),
    ("madvise", "madvise", "ENOMEM", []),
    ("mbind", "mbind", "EIO", []),
    ("unlink", "unlink", "EIO", []),
    ("sysfs-write", "write", "EIO", ["-P", NR_PATH]),
    ("clone3", "clone3", "EAGAIN", []),
]
# Only in the full sweep: the rest of what the census shows on these paths,
# and fallocate, which the census shows the daemon never calls (its runs
# inject nothing, and say so).
FULL_EXTRA = [
    ("fallocate", "fallocate", "ENOSPC", []),
    ("move_pages", "move_pages", "ENOMEM", []),
    ("fchmod", "fchmod", "EPERM", []),
    ("set_mempolicy", "set_mempolicy", "EINVAL", []),
    ("sched_setaffinity", "sched_setaffinity", "EINVAL", []),
    ("statfs", "statfs", "EIO", []),
    ("mkdir", "mkdir", "EIO", []),
    ("flock", "flock", "ENOLCK", []),
    ("accept4", "accept4", "EMFILE", []),
    ("eventfd2", "eventfd2", "EMFILE", []),
    ("prctl", "prctl", "EINVAL", []),
]


class Run:
    """One daemon under one fault, the workload, kill -9, the restart and
    the checks.  violations: what broke a rule, one line each."""

    def __init__(self, mnt, label, spec, n):
        self.label, self.spec, self.n = label, spec, n
        tag = "%s-%d" % (label, n) if spec else "control"
        self.pool_dir = os.path.join(mnt, "hpwarm-faults-%s-%d" % (tag, os.getpid()))
        self.state = tempfile.mkdtemp(prefix="hpwarm-faults-state-")
        self.trace = os.path.join(self.state + "-trace")
        self.violations = []
        self.acked = set()
        self.deleted = set()
        self.d = None
        self.hung = False
        self.injected = 0
        self.start_failed = False
        self.census = False
        self.log = []
        self.keep = None          # a directory for the strace output of runs with violations

    def bad(self, what):
        self.violations.append(what)

    # -- the faulty daemon --
    def wrapper(self):
        if self.census:
            return ["strace", "-f", "-c", "-U", "name,calls,errors", "-o", self.trace]
        if not self.spec:
            return []
        syscall, errno, spec_extra = self.spec
        extra = []
        for a in spec_extra:
            if a == POOL_FILES:
                for f in POOL_FILE_NAMES:
                    extra += ["-P", hpwreal.file_path(self.pool_dir, f)]
            else:
                extra.append(a)
        return ["strace", "-f", "-q", "--seccomp-bpf", "-o", self.trace, *extra, "-e", "trace=" + syscall,
                "-e", "inject=%s:error=%s:when=%d" % (syscall, errno, self.n)]

    def daemon_pid(self):
        """The daemon: strace's child (or the process itself in the control)."""
        if not self.spec and not self.census:
            return self.d.proc.pid
        try:
            with open("/proc/%d/task/%d/children" % (self.d.proc.pid, self.d.proc.pid)) as f:
                kids = f.read().split()
            return int(kids[0]) if kids else None
        except (OSError, ValueError):
            return None

    def start_faulty(self):
        # LeakSanitizer cannot run under ptrace (it aborts at exit): off
        # for a sanitized daemon under strace; ASan's other checks stay on.
        env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0"}
        # On a unix socket whose path is known beforehand: the "listening
        # on" line is itself a write the sweep fails, so readiness is the
        # socket answering, not the log saying so.
        self.d = Daemon(sysfs_root="/sys", preload=False, state_dir=self.state, env=env, listen=False,
                        socket_path=self.state + "-api.sock", wrapper=self.wrapper(),
                        args=["--hugetlbfs", "2M=" + self.pool_dir, "--log-level", "info"])
        self.d.start(expect_ok=False)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self.d.proc.poll() is None:
            try:
                if self.d.request("GET", "/v1/health", timeout=REQ_TIMEOUT_S).status == 200:
                    return True
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.02)
        if self.d.proc.poll() is None:
            self.bad("start: neither listening nor exited after %ds" % START_TIMEOUT_S)
            self.hung = True
            return False
        self.start_failed = True
        self.check_exit("start")
        return False

    def check_exit(self, when):
        """The daemon exited on its own: by a signal is a violation; an exit
        code must be non-zero and come with an error line saying why."""
        rc = self.d.proc.returncode
        log = self.d.read_all_log()
        if rc < 0:
            self.bad("%s: the daemon died by signal %d; log:\n    %s"
                     % (when, -rc, "\n    ".join(log.splitlines()[-8:])))
        elif rc == 0:
            self.bad("%s: the daemon exited 0 on its own" % when)
        elif not re.search(r"(^|\n)(<3>|\S+ error: )", log):
            self.bad("%s: the daemon exited %d without an error line; log:\n    %s"
                     % (when, rc, "\n    ".join(log.splitlines()[-8:])))
        if when != "start":
            self.bad("%s: the daemon exited (%d) while serving" % (when, rc))

    def ask(self, method, path, body=None, timeout=REQ_TIMEOUT_S):
        """One request of the workload: None when it got no answer (then the
        daemon exited, which check_exit judges, or it hung: a violation)."""
        if self.hung:
            return None
        try:
            r = self.d.request(method, path, body, timeout=timeout)
        except (OSError, http.client.HTTPException) as e:
            if self.d.proc.poll() is not None:
                return None
            self.bad("%s %s: no answer within %ds (%s)" % (method, path, timeout, e.__class__.__name__))
            self.hung = True
            return None
        if not 200 <= r.status < 300:
            ctype = r.headers.get("content-type", "")
            if ctype != "application/problem+json" or not (r.json or {}).get("detail"):
                self.bad("%s %s: %d is no problem+json with a detail (%s): %r" % (method, path, r.status, ctype, r))
        return r

    def create(self, name, body):
        r = self.ask("PUT", "/v1/pools/" + name, body)
        if r is not None and r.status in (200, 201):
            self.acked.add(name)
        return r

    def workload(self):
        """Warm pools, a stock hand-out, a release, the node's count moved
        and moved back, a list; each answer checked as it comes."""
        self.ask("GET", "/v1/health")
        self.ask("PUT", "/v1/stock", {"targets": [STOCK]})
        self.create("w1", {"node": 0, "size": "8M", "threads": 1})
        self.ask("GET", "/v1/pools/w1?wait=ready&timeout=10", timeout=REQ_TIMEOUT_S)
        end = time.monotonic() + 10
        while time.monotonic() < end and not self.hung:
            r = self.ask("GET", "/v1/stock")
            if r is None or r.status != 200 or not r.json["targets"] or r.json["targets"][0]["ready"] >= 1:
                break
            time.sleep(0.02)
        self.create("h1", {"node": 0, "size": STOCK["size"]})     # the stock's size: a hand-out
        self.ask("GET", "/v1/pools/h1?wait=ready&timeout=10")
        r = self.ask("DELETE", "/v1/pools/h1")                     # recycled into the short stock
        if r is not None and r.status == 204:
            self.acked.discard("h1")
            self.deleted.add("h1")
        self.create("r1", {"node": 0, "size": "4M", "reserve": True})
        nr = node0("nr_hugepages")
        self.ask("PUT", "/v1/nodes/0/hugepages/2M", {"count": nr + 1})
        self.ask("PUT", "/v1/nodes/0/hugepages/2M", {"count": nr})
        self.ask("GET", "/v1/pools/r1?wait=ready&timeout=10")
        self.ask("GET", "/v1/pools")
        self.ask("GET", "/v1/nodes")

    def kill9(self):
        if self.d.proc.poll() is not None:
            self.check_exit("workload")
            return
        pid = self.daemon_pid()
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.d.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.d.proc.kill()      # strace itself, which this run started
            self.d.proc.wait()
        self.log = list(self.d.log)
        self.d.__exit__()

    def count_injected(self):
        if self.census:
            with open(self.trace, errors="replace") as f:
                print(f.read())
            return
        try:
            with open(self.trace, errors="replace") as f:
                self.injected = sum(1 for line in f if "(INJECTED)" in line)
        except OSError:
            self.injected = 0

    # -- after the restart --
    def settle(self, d):
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            pools = d.get("/v1/pools", timeout=REQ_TIMEOUT_S).json["pools"]
            t = d.get("/v1/stock", timeout=REQ_TIMEOUT_S).json["targets"]
            warming = [p["name"] for p in pools if p["state"] == "warming"]
            if not warming and all(x["warming"] == 0 and x["recycling"] == 0 for x in t):
                return {p["name"]: p for p in pools}
            if time.monotonic() > deadline:
                self.bad("restart: not quiet after %ds: warming %s, stock %s" % (SETTLE_TIMEOUT_S, warming, t))
                return {p["name"]: p for p in pools}
            time.sleep(0.02)

    def rows(self):
        """The journal's rows by name ({} before the first save), or None
        (said) when it does not read."""
        if not os.path.exists(os.path.join(self.state, "state.json")):
            return {}
        try:
            return {r["name"]: r for r in hpwjournal.read(self.state)["pools"]}
        except (ValueError, KeyError) as e:
            self.bad("restart: the journal does not read: %s" % e)
            return None

    def files(self):
        return hpwreal.files_in(self.pool_dir)

    def check_restart(self, free0, nr0):
        d = real_daemon(self.pool_dir, self.state, "--log-level", "notice")
        try:
            d.start()
        except AssertionError as e:
            self.bad("restart without faults failed: %s" % str(e)[-600:])
            d.__exit__()
            return
        try:
            self.check_after(d, free0, nr0)
        except (OSError, http.client.HTTPException, KeyError, TypeError, ValueError) as e:
            self.bad("restart: %s: %s" % (e.__class__.__name__, e))
        finally:
            d.kill()
            d.__exit__()

    def check_after(self, d, free0, nr0):
        pools = self.settle(d)
        for name in sorted(self.acked):
            if name not in pools:
                self.bad("restart: pool %s was answered 2xx, never deleted, and is gone" % name)
        for name in sorted(self.deleted):
            if name in pools:
                self.bad("restart: pool %s was deleted (204) and is back" % name)
        # Files and rows must match both ways.  A stock refill the upkeep
        # thread starts after the settle (one held back by its retry after
        # the faulty run) shows its file a moment before its row is saved,
        # so a mismatch counts only if it is still there, the daemon quiet
        # again, a few readings later: a leaked file or a lost row stays.
        for attempt in range(RECHECKS):
            files, rows = self.files(), self.rows()
            if rows is None:
                break
            orphans = [f for f in sorted(files) if f not in rows or rows[f]["state"] not in FILE_STATES]
            missing = [n for n, r in sorted(rows.items()) if r["state"] in FILE_STATES and n not in files]
            if not orphans and not missing:
                break
            if attempt + 1 < RECHECKS:
                time.sleep(0.5)
                pools = self.settle(d)
                continue
            for f in orphans:
                self.bad("restart: file %s belongs to no pool, stock or recycling row (%s)" % (f, rows.get(f)))
            for n in missing:
                self.bad("restart: row %s (%s) has no file" % (n, rows[n]["state"]))
        # Delete everything, the way an operator would.
        r = d.put("/v1/stock", {"targets": []}, timeout=REQ_TIMEOUT_S)
        if r.status != 200:
            self.bad("cleanup: PUT /v1/stock []: %r" % r)
        for name in pools:
            r = d.request("DELETE", "/v1/pools/%s?recycle=false" % name, timeout=REQ_TIMEOUT_S)
            if r.status not in (204, 404):
                self.bad("cleanup: DELETE %s: %r" % (name, r))
        if node0("nr_hugepages") != nr0:
            r = d.put("/v1/nodes/0/hugepages/2M", {"count": nr0}, timeout=REQ_TIMEOUT_S)
            if r.status != 200:
                self.bad("cleanup: PUT count %d: %r" % (nr0, r))
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            left = d.get("/v1/pools", timeout=REQ_TIMEOUT_S).json["pools"]
            files = self.files()
            free, nr = node0("free_hugepages"), node0("nr_hugepages")
            if not left and not files and free == free0 and nr == nr0:
                break
            if time.monotonic() > deadline:
                self.bad("cleanup: after deleting everything: pools %s, files %s, free %d (was %d), nr %d (was %d)"
                         % ([p["name"] for p in left], sorted(files), free, free0, nr, nr0))
                break
            time.sleep(0.02)
        rc = d.stop()
        if rc != 0:
            self.bad("cleanup: SIGTERM exit %s" % rc)

    def run(self, free0, nr0):
        try:
            if self.start_faulty():
                self.workload()
            if self.d.proc.poll() is None or not self.start_failed:
                self.kill9()
            self.count_injected()
            self.check_restart(free0, nr0)
        finally:
            if self.d:
                self.d.kill()
                self.d.__exit__()
            shutil.rmtree(self.pool_dir, ignore_errors=True)
            shutil.rmtree(self.state, ignore_errors=True)
            try:
                os.unlink(self.state + "-api.sock")
            except OSError:
                pass
            try:
                if self.keep and self.violations:
                    shutil.move(self.trace, os.path.join(self.keep, "%s-%d.trace" % (self.label, self.n)))
                else:
                    os.unlink(self.trace)
            except OSError:
                pass
            # A run that failed its cleanup must not leave the next one less.
            if node0("nr_hugepages") != nr0:
                set_node0_pages(nr0)
        return self.violations


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="every syscall, occurrences 1..%d" % FULL_OCCURRENCES)
    ap.add_argument("--occurrences", type=int, help="sweep N = 1..this")
    ap.add_argument("--census", action="store_true",
                    help="print `strace -f -c` of one run of the workload (the syscalls to sweep), no faults")
    ap.add_argument("--verbose", action="store_true", help="print the end of each faulty daemon's log")
    ap.add_argument("--keep-traces", metavar="DIR", help="keep the strace output of runs with violations in DIR")
    ap.add_argument("--only", help="comma-separated labels of the syscalls to sweep")
    args = ap.parse_args()

    mnt = hpwreal.MNT
    rc = hpwreal.script_cannot_run()
    if rc is not None:
        return rc
    if not shutil.which("strace"):
        print("SKIP: no strace (scripts/deps.sh --test installs it)", file=sys.stderr)
        return 77
    sweep = SYSCALLS + (FULL_EXTRA if args.full else [])
    if args.only:
        want = args.only.split(",")
        sweep = [s for s in SYSCALLS + FULL_EXTRA if s[0] in want]
    occ = args.occurrences or (FULL_OCCURRENCES if args.full else CI_OCCURRENCES)

    # PAGES free beside what others hold (a guest outside the guard, say).
    held = node0("nr_hugepages") - node0("free_hugepages")
    got = set_node0_pages(held + PAGES)
    if got < held + PAGES or node0("free_hugepages") < PAGES:
        print("SKIP: the kernel gave %d 2 MiB pages (%d free) of %d"
              % (got, node0("free_hugepages"), PAGES), file=sys.stderr)
        return 77
    free0, nr0 = node0("free_hugepages"), node0("nr_hugepages")
    t0 = time.monotonic()
    runs = violations = injected_runs = failed_starts = 0

    def one(label, spec, n):
        nonlocal runs, violations, injected_runs, failed_starts
        r0 = time.monotonic()
        run = Run(mnt, label, spec, n)
        run.keep = args.keep_traces
        v = run.run(free0, nr0)
        what = "%s:%s:when=%d" % (label, spec[1], n) if spec else "control"
        print("  %-32s %s%s, %.1fs%s" % (what, "injected %d" % run.injected if spec else "no fault",
                                        ", start refused" if run.start_failed else "",
                                        time.monotonic() - r0, "" if not v else ", %d VIOLATIONS" % len(v)),
              flush=True)
        for line in v:
            print("    VIOLATION %s: %s" % (what, line), flush=True)
        if args.verbose and run.log:
            print("    log: " + "\n    log: ".join(run.log[-12:]), flush=True)
        if spec:
            runs += 1
            violations += len(v)
            injected_runs += run.injected > 0
            failed_starts += run.start_failed
        return v

    if args.census:
        run = Run(mnt, "census", None, 0)
        run.census = True
        v = run.run(free0, nr0)
        for line in v:
            print("VIOLATION census: " + line)
        return 1 if v else 0
    if one("control", None, 0):
        print("sweep: the control run without a fault has violations: the harness is broken", file=sys.stderr)
        return 1
    for label, syscall, errno, extra in sweep:
        for n in range(1, occ + 1):
            one(label, (syscall, errno, extra), n)
    print("sweep: %d runs hit their fault, %d starts refused (and said why), %.0fs"
          % (injected_runs, failed_starts, time.monotonic() - t0))
    print("sweep: %d syscalls, %d occurrences, %d runs, %d violations" % (len(sweep), occ, runs, violations))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
