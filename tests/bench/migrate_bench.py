#!/usr/bin/env python3
"""Live migration onto warm memory: the destination's cost, side by side.

One source guest (QEMU, TCG, SIZE of RAM on a warm pool, 2 MiB pages,
running tests/qemu/guest_pattern.c over 16 MiB) is live-migrated over a unix
socket, again and again, to a destination QEMU of four kinds, in rotating
order each round:

  cold+prealloc  a fresh file in the same hugetlbfs, prealloc=on: QEMU
                 faults (and the kernel zeroes) all of SIZE before it can
                 take the stream
  cold           the same file without prealloc: each page is faulted (and
                 zeroed) when its first byte arrives, on the receiving thread
  warm+prealloc  a pool hpwarmd warmed, from `hpwarm handoff DST --vmm qemu
                 --as SRC` verbatim (prealloc=on touches pages that are there)
  warm           the same words with prealloc=off

For each: ready = spawn of the destination QEMU (-incoming defer) to its
first QMP answer "inmigrate" (QEMU builds and preallocates guest RAM before
its monitor answers); migration = QMP migrate on the source to
query-migrate "completed" (QEMU's own total-time is printed beside it);
total = spawn to completed (ready + the gap + migration).  A fifth QEMU,
"baseline", the same command with 2 MiB of RAM, is only started to its
first QMP answer: QEMU's own start, the same for all four.  ready minus the
baseline's median is the destination's memory phase; when the warm one is
within the baseline's spread (its median absolute deviation) the ratio is
given as a lower bound, cold / spread.  QEMU's start varies by tenths of a
second on a shared machine, so the memory phase is also measured the way
bench.py's (d') row is: each prealloc destination once more per round under
`strace --seccomp-bpf -f -tt -T -e trace=madvise`, its window from the
first MADV_POPULATE_WRITE's start to the last one's end (QEMU 7.2
preallocates with that call), started and quit without a migration.  After each
migration the destination quits, its file or pool is dropped, and the
source is resumed (cont: it stayed paused in postmigrate) for the next.
Every warm pool is warmed afresh for its round (not timed), so each
destination gets zeroed pages, as a real one would.

Medians over --rounds, and the ratios cold+prealloc / warm+prealloc and
cold / warm for each time.  Target (docs/PERFORMANCE.md): ready at least 10x
sooner on warm+prealloc than on cold+prealloc at 1 GiB, judged on the
memory phase; the end-to-end ready ratio, QEMU's start included, is printed
beside it.  PASS/MISS is
printed, never an exit status: exit 0 when every contender migrated, 1 when
one broke (QEMU failed, a migration failed, the guest's memory sum changed),
2 on bad usage, 77 without QEMU or a guest kernel, or not under
tests/real/guard.sh (run it as `tests/real/guard.sh python3 THIS ...`).

Before measuring, every hugepage the run uses is touched once through a
throwaway file (the first touch of memory on these virtual machines is many
times slower than later ones)."""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "qemu"))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import guestboot as gb  # noqa: E402
from hpwbench.harness import PAGE, node0  # noqa: E402
from hpwbench.qemu import madvise_window  # noqa: E402
import hpwtest  # noqa: E402
from hpwtest import Daemon  # noqa: E402

MIB = 1 << 20
PATTERN_MIB, SEED = 16, 77
KINDS = ["cold+prealloc", "cold", "warm+prealloc", "warm"]
READY_TARGET = 10.0


def cli(hpwarm, url, *args):
    r = subprocess.run([hpwarm, *args, "--url", url], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise gb.Fail("hpwarm %s: exit %d %s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r.stdout


def machine(kernel, initrd, size):
    return ["-machine", "q35", "-accel", "tcg", "-cpu", "max", "-smp", "1", "-m", "%dM" % (size // MIB),
            "-nographic", "-no-reboot", "-nic", "none", "-kernel", kernel, "-initrd", initrd,
            "-append", "console=ttyS0 panic=-1 loglevel=3"]


def touch_pages(mnt, size):
    """Fault SIZE of hugepages once through a throwaway file, then free them."""
    path = os.path.join(mnt, ".bench-touch")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
    finally:
        os.close(fd)
        os.unlink(path)


def dst_words(kind, args):
    """The destination's memory words for KIND."""
    if kind.startswith("cold"):
        words = ["-object", "memory-backend-file,id=mem-%s,mem-path=%s,size=%d,share=on,prealloc=%s,"
                 "host-nodes=0,policy=bind" % (args["src"], args["cold_path"], args["size"],
                                               "on" if kind.endswith("prealloc") else "off"),
                 "-machine", "memory-backend=mem-" + args["src"]]
    else:
        words = list(args["handoff"])
        if not kind.endswith("prealloc"):
            words = [w.replace(",prealloc=on,", ",prealloc=off,") for w in words]
    return words


def baseline_ready(qemu, kernel, initrd, tmp):
    """QEMU's start alone: the destination's command with 2 MiB of RAM."""
    path = os.path.join(tmp, "baseline-ram")
    words = ["-object", "memory-backend-file,id=mem-b,mem-path=%s,size=%d,share=on,prealloc=on" % (path, PAGE),
             "-machine", "memory-backend=mem-b"]
    t0 = time.monotonic()
    g = gb.Guest([qemu] + machine(kernel, initrd, PAGE) + words + ["-incoming", "defer"], tmp)
    try:
        st = g.qmp("query-status", timeout=120)
        t = time.monotonic() - t0
        if st.get("status") != "inmigrate":
            raise gb.Fail("baseline QEMU is %s" % st)
        return t
    finally:
        g.stop()
        try:
            os.unlink(path)
        except OSError:
            pass


def strace_window(kind, qemu, kernel, initrd, size, tmp, args):
    """KIND's destination under strace until it waits for the stream: the
    seconds its MADV_POPULATE_WRITE calls span."""
    trace = os.path.join(tmp, "strace.out")
    cmd = ["strace", "--seccomp-bpf", "-f", "-tt", "-T", "-e", "trace=madvise", "-o", trace, qemu]
    g = gb.Guest(cmd + machine(kernel, initrd, size) + dst_words(kind, args) + ["-incoming", "defer"], tmp)
    try:
        if g.qmp("query-status", timeout=300).get("status") != "inmigrate":
            raise gb.Fail("%s under strace: not inmigrate" % kind)
    finally:
        g.stop()
    with open(trace) as f:
        w = madvise_window(f.read())
    os.unlink(trace)
    if w is None:
        raise gb.Fail("%s: strace saw no MADV_POPULATE_WRITE from QEMU" % kind)
    return w


def one_migration(kind, src, qemu, kernel, initrd, size, tmp, args, want_sum):
    g = None
    t0 = time.monotonic()
    g = gb.Guest([qemu] + machine(kernel, initrd, size) + dst_words(kind, args) + ["-incoming", "defer"], tmp)
    try:
        st = g.qmp("query-status", timeout=300)
        t_ready = time.monotonic()
        if st.get("status") != "inmigrate":
            raise gb.Fail("%s: destination is %s, not inmigrate" % (kind, st))
        sock = os.path.join(tmp, "m.sock")
        g.qmp("migrate-incoming", uri="unix:" + sock)
        t_mig = time.monotonic()
        src.qmp("migrate", uri="unix:" + sock)
        while True:
            q = src.qmp("query-migrate")
            if q.get("status") == "completed":
                break
            if q.get("status") in ("failed", "cancelled") or time.monotonic() - t_mig > 300:
                raise gb.Fail("%s: migration %s" % (kind, q))
            time.sleep(0.02)
        t_done = time.monotonic()
        # The guest runs on and prints its memory's sum on the destination.
        deadline = time.monotonic() + 60
        while True:
            sums = [l.split()[-1] for l in g.output().splitlines() if "HPWARM-PATTERN " in l]
            if sums:
                break
            if time.monotonic() > deadline:
                raise gb.Fail("%s: the guest printed nothing on the destination:\n%s" % (kind, g.output()[-1000:]))
            time.sleep(0.1)
        if sums[0] != want_sum:
            raise gb.Fail("%s: memory sum %s on the destination, %s on the source" % (kind, sums[0], want_sum))
        return {"ready": t_ready - t0, "migration": t_done - t_mig, "total": t_done - t0,
                "qemu_ms": q.get("total-time")}
    finally:
        g.stop()
        try:
            os.unlink(os.path.join(tmp, "m.sock"))
        except OSError:
            pass
        # The source paused in postmigrate: run it again for the next round.
        if src.qmp("query-status").get("status") != "running":
            src.qmp("cont")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="1G", help="guest RAM (default 1G)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hpwarmd", required=True)
    ap.add_argument("--hpwarm", required=True)
    ap.add_argument("--guest-pattern", required=True, help="the static guest_pattern binary")
    ap.add_argument("--guest-dir", required=True, help="kernel and busybox cache (tests/qemu prepare.sh)")
    a = ap.parse_args()
    units = {"M": MIB, "G": 1 << 30}
    try:
        size = int(a.size[:-1]) * units[a.size[-1]]
    except (KeyError, ValueError):
        print("--size: e.g. 256M or 1G", file=sys.stderr)
        return 2
    hpwtest.HPWARMD = os.path.abspath(a.hpwarmd)
    mnt = os.environ.get("HPW_TEST_HUGETLBFS")
    if not mnt:
        print("SKIP: not under tests/real/guard.sh")
        return 77
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        qemu = gb.find_qemu()
        kernel, busybox = gb.fetch(a.guest_dir)
    except gb.Skip as e:
        print("SKIP:", e)
        return 77
    tmp = tempfile.mkdtemp(prefix="hpwarm-migrate-bench-")
    initrd = gb.build_pattern_initramfs(busybox, os.path.join(tmp, "initramfs.gz"), a.guest_pattern,
                                        PATTERN_MIB, SEED)
    pool_dir = os.path.join(mnt, "bench-migrate")
    d = Daemon(sysfs_root="/sys", preload=False, state_dir=os.path.join(tmp, "state"),
               args=["--hugetlbfs", "2M=" + pool_dir])
    src = None
    results = {k: [] for k in KINDS}
    rc = 0
    try:
        d.start()
        url = "http://127.0.0.1:%d" % d.port
        nr, free = node0("nr_hugepages"), node0("free_hugepages")
        cli(a.hpwarm, url, "reserve", "0", "2M", str(nr - free + 2 * size // PAGE))
        touch_pages(mnt, 2 * size)
        cli(a.hpwarm, url, "warm", "bench-src", "--node", "0", "--size", str(size), "--wait", "--timeout", "300")
        words = cli(a.hpwarm, url, "handoff", "bench-src", "--vmm", "qemu", "--argv").splitlines()
        src = gb.Guest([qemu] + machine(kernel, initrd, size) + words, tmp)
        _, line = src.wait_line("HPWARM-PATTERN-SET", 300)
        want_sum = line.split()[-1]
        args = {"src": "bench-src", "size": size, "cold_path": os.path.join(mnt, "bench-cold")}
        baseline = []
        use_strace = shutil.which("strace") is not None
        windows = {"cold+prealloc": [], "warm+prealloc": []}
        for r in range(a.rounds):
            order = KINDS[r % len(KINDS):] + KINDS[:r % len(KINDS)]
            baseline.append(baseline_ready(qemu, kernel, initrd, tmp))
            print("round %d baseline       ready %7.3f s" % (r + 1, baseline[-1]), flush=True)
            for kind in order:
                if kind.startswith("warm"):
                    cli(a.hpwarm, url, "warm", "bench-dst", "--node", "0", "--size", str(size), "--wait",
                        "--timeout", "300")
                    args["handoff"] = cli(a.hpwarm, url, "handoff", "bench-dst", "--vmm", "qemu", "--argv",
                                          "--as", "bench-src").splitlines()
                if kind.endswith("prealloc") and use_strace:
                    windows[kind].append(strace_window(kind, qemu, kernel, initrd, size, tmp, args))
                    if kind.startswith("cold"):
                        os.unlink(args["cold_path"])   # the next QEMU gets a fresh file
                    else:
                        # The strace run touched the pool: warm it afresh for the timed one.
                        cli(a.hpwarm, url, "release", "bench-dst")
                        cli(a.hpwarm, url, "warm", "bench-dst", "--node", "0", "--size", str(size), "--wait",
                            "--timeout", "300")
                    print("round %d %-14s madvise window %7.4f s (strace)" % (r + 1, kind, windows[kind][-1]),
                          flush=True)
                res = one_migration(kind, src, qemu, kernel, initrd, size, tmp, args, want_sum)
                results[kind].append(res)
                print("round %d %-14s ready %7.3f s  migration %7.3f s (QEMU %s ms)  total %7.3f s"
                      % (r + 1, kind, res["ready"], res["migration"], res["qemu_ms"], res["total"]), flush=True)
                if kind.startswith("warm"):
                    cli(a.hpwarm, url, "release", "bench-dst")
                else:
                    os.unlink(args["cold_path"])
    except gb.Fail as e:
        print("FAIL:", e, flush=True)
        rc = 1
    finally:
        if src:
            src.stop()
        if d.proc and d.proc.poll() is None:
            for name in ("bench-src", "bench-dst"):
                d.request("DELETE", "/v1/pools/" + name)
        d.__exit__()
        try:
            os.unlink(os.path.join(mnt, "bench-cold"))
        except OSError:
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    if rc:
        return rc
    med = {k: {m: statistics.median(x[m] for x in results[k]) for m in ("ready", "migration", "total")}
           for k in KINDS}
    print("\nmigration onto %s (2 MiB pages), medians of %d rounds, seconds:" % (a.size, a.rounds))
    print("%-14s %9s %10s %9s" % ("destination", "ready", "migration", "total"))
    for k in KINDS:
        print("%-14s %9.3f %10.3f %9.3f" % (k, med[k]["ready"], med[k]["migration"], med[k]["total"]))
    for cold, warm in (("cold+prealloc", "warm+prealloc"), ("cold", "warm")):
        print("%s / %s: ready %.1fx  migration %.2fx  total %.2fx" % (
            cold, warm, med[cold]["ready"] / med[warm]["ready"], med[cold]["migration"] / med[warm]["migration"],
            med[cold]["total"] / med[warm]["total"]))
    base = statistics.median(baseline)
    spread = max(statistics.median(abs(b - base) for b in baseline), 0.001)
    print("baseline (QEMU's start, 2 MiB of RAM): %.3f s, spread %.3f s" % (base, spread))
    phase = {k: med[k]["ready"] - base for k in KINDS}
    print("memory phase (ready - baseline): " + ", ".join("%s %.3f s" % (k, phase[k]) for k in KINDS))
    cold, warm = phase["cold+prealloc"], phase["warm+prealloc"]
    if len(baseline) < 3:
        print("memory phase by ready - baseline: not judged (fewer than 3 rounds: no spread to bound it by)")
    else:
        if warm > spread:
            ratio, bound = cold / warm, ""
        else:
            ratio, bound = cold / spread, ">= "
        print("target: ready >= %.0fx sooner on warm+prealloc than cold+prealloc (memory phase): %s%.1fx %s"
              % (READY_TARGET, bound, ratio, "PASS" if ratio >= READY_TARGET else "MISS"))
    if windows["cold+prealloc"]:
        cw, ww = statistics.median(windows["cold+prealloc"]), statistics.median(windows["warm+prealloc"])
        print("memory phase by QEMU's madvise window (strace): cold+prealloc %.4f s, warm+prealloc %.4f s: %.0fx %s"
              % (cw, ww, cw / ww, "PASS" if cw / ww >= READY_TARGET else "MISS"))
    else:
        print("no strace: the madvise window is not measured")
    e2e = med["cold+prealloc"]["ready"] / med["warm+prealloc"]["ready"]
    print("end to end, QEMU's start included: %.1fx %s" % (e2e, "PASS" if e2e >= READY_TARGET else "MISS"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
