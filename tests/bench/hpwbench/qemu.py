"""QEMU as a contender of the core mode: (c) and (d), QEMU -machine none
with one memory backend, timed spawn to exit or by its MADV_POPULATE_WRITE
window under strace; and (e), a real guest booted on a warm pool against
the same guest on a cold file (tests/qemu/guestboot.py).

madvise_window() is also tests/bench/migrate_bench.py's: it reads strace's
lines and needs nothing else from the bench."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from .harness import REPO, BenchError, log, node0, rm, warm_a

sys.path.insert(0, os.path.join(REPO, "tests", "qemu"))
import guestboot  # noqa: E402

# QEMU baseline runs per round: cheap, and their spread is the noise floor.
BASELINE_RUNS = 3


def madvise_window(trace):
    """First MADV_POPULATE_WRITE start to last end, from strace -f -tt -T -o
    lines "PID HH:MM:SS.us madvise(...)"; calls that overlap another thread's
    come split into "<unfinished ...>" and "<... madvise resumed>" lines."""
    line_rx = re.compile(r"^(\d+)\s+(\d+):(\d+):(\d+\.\d+) (.*)$")
    dur_rx = re.compile(r"= 0 <(\d+\.\d+)>$")
    first = last = None
    pending = set()
    for line in trace.splitlines():
        m = line_rx.match(line)
        if not m:
            continue
        pid, rest = m.group(1), m.group(5)
        t = int(m.group(2)) * 3600 + int(m.group(3)) * 60 + float(m.group(4))
        if rest.startswith("madvise(") and "MADV_POPULATE_WRITE" in rest:
            first = t if first is None else min(first, t)
            d = dur_rx.search(rest)
            if d:
                last = max(last or t, t + float(d.group(1)))
            elif rest.endswith("<unfinished ...>"):
                pending.add(pid)
        elif rest.startswith("<... madvise resumed>") and pid in pending:
            pending.discard(pid)
            last = max(last or t, t)
    return None if first is None else last - first


def run_qemu(qemu, obj, strace=False):
    """Spawn-to-exit seconds of QEMU with one memory backend OBJ; with
    STRACE, the MADV_POPULATE_WRITE window instead."""
    cmd = [qemu, "-machine", "none", "-nodefaults", "-display", "none", "-S",
           "-object", obj, "-monitor", "stdio"]
    tracefile = None
    if strace:
        fd, tracefile = tempfile.mkstemp(prefix="hpwarm-bench-strace-")
        os.close(fd)
        cmd = ["strace", "--seccomp-bpf", "-f", "-tt", "-T", "-e", "trace=madvise", "-o", tracefile] + cmd
    try:
        t0 = time.perf_counter()
        p = subprocess.run(cmd, input=b"quit\n", capture_output=True, timeout=900)
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise BenchError("qemu exited %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-400:]))
        if not strace:
            return wall
        with open(tracefile) as f:
            win = madvise_window(f.read())
        if win is None:
            raise BenchError("strace saw no MADV_POPULATE_WRITE from qemu")
        return win
    finally:
        if tracefile:
            os.unlink(tracefile)


def qemu_obj(path, size, threads, ident="m"):
    return ("memory-backend-file,id=%s,mem-path=%s,size=%d,share=on,prealloc=on,prealloc-threads=%d"
            % (ident, path, size, threads))


def boot_once(qemu, kernel, initrd, size, words, workdir, pools):
    """(seconds from QEMU's spawn to the guest's /init marker, to the
    firmware's banner), with WORDS as its memory; checks that guest RAM is
    POOLS ([(backend suffix, size)])."""
    g = guestboot.Guest([qemu, "-machine", "q35", "-accel", "tcg", "-cpu", "max", "-smp", "1",
                         "-m", "%dM" % (size >> 20), "-nographic", "-no-reboot", "-nic", "none",
                         "-kernel", kernel, "-initrd", initrd,
                         "-append", "console=ttyS0 panic=-1 loglevel=3"] + words, workdir)
    try:
        info = g.wait_ready(600)
        why = guestboot.ram_problems(g.ramblocks(), pools)
        if why:
            raise BenchError("guest RAM is not the file: " + "; ".join(why))
        if info["firmware_s"] is None:
            raise BenchError("no firmware banner on the serial console")
        return info["init_s"], info["firmware_s"]
    except guestboot.Fail as e:
        raise BenchError(str(e))
    finally:
        g.stop()


def boot_phase(args, d, qemu, mnt, threads):
    """(e): QEMU spawn -> guest /init on a warm pool vs on a cold file, same
    size, same prealloc threads; rounds alternate which goes first."""
    size = args.boot_size
    guest_dir = os.environ.get("HPW_GUEST_DIR") or os.path.join(args.build, "tests", "qemu", "guest")
    try:
        kernel, busybox = guestboot.fetch(guest_dir)
    except (guestboot.Skip, guestboot.Fail) as e:
        raise BenchError("guest kernel for the boot row: %s" % e)
    work = tempfile.mkdtemp(prefix="hpwarm-bench-boot-")
    cold_file = os.path.join(mnt, "bench-boot-cold")
    out = {"size_bytes": size, "warm": [], "cold": [], "warm_fw": [], "cold_fw": []}
    try:
        initrd = guestboot.build_initramfs(busybox, os.path.join(work, "initramfs.gz"))

        def warm():
            name = "bench-boot"
            _, p = warm_a(d, name, size, threads)
            words = list(p["handoff"]["qemu_argv"])
            words[1] += ",prealloc-threads=%d" % threads
            free = node0("free_hugepages")
            try:
                t_init, t_fw = boot_once(qemu, kernel, initrd, size, words, work, [(name, size)])
                out["warm"].append(t_init)
                out["warm_fw"].append(t_fw)
                if node0("free_hugepages") != free:
                    raise BenchError("the guest on the warm pool took %d fresh pages" % (free - node0("free_hugepages")))
            finally:
                d.delete(name)

        def cold():
            words = ["-object", "memory-backend-file,id=mem-cold,mem-path=%s,size=%d,share=on,prealloc=on,"
                     "prealloc-threads=%d,host-nodes=0,policy=bind" % (cold_file, size, threads),
                     "-machine", "memory-backend=mem-cold"]
            try:
                t_init, t_fw = boot_once(qemu, kernel, initrd, size, words, work, [("cold", size)])
                out["cold"].append(t_init)
                out["cold_fw"].append(t_fw)
            finally:
                rm(cold_file)

        for rnd in range(args.boot_rounds):
            for fn in ((warm, cold) if rnd % 2 == 0 else (cold, warm)):
                fn()
            log("boot round %d/%d: warm pool %.2fs (firmware %.2fs)  cold file %.2fs (firmware %.2fs) to guest init"
                % (rnd + 1, args.boot_rounds, out["warm"][-1], out["warm_fw"][-1], out["cold"][-1],
                   out["cold_fw"][-1]))
    finally:
        rm(cold_file)
        shutil.rmtree(work, ignore_errors=True)
    return out
