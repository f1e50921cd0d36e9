#!/usr/bin/env python3
"""The warm benchmark (README "Measured"): one command, one machine, one size and one
thread count for every contender.

This file is the command line alone: it parses the options, checks them,
re-runs itself under guard.sh and hands the run to the mode the options
pick (MODES).  Each mode is one module of tests/bench/hpwbench, whose
docstring says what it measures:

  (no mode option)  hpwbench/core.py: hpwarmd's warm against populate_ideal
                    and QEMU, rows (a) to (e) (hpwbench/qemu.py), latency
                    and RSS, then recycle_bench (hpwbench/recycle.py) and
                    prio_bench (hpwbench/prio.py)
  --stock-only      hpwbench/stock.py: time to ready from stock against a
                    cold warm, then recycling through the daemon
  --page-size 1G    hpwbench/gigantic.py: the warm and recycle_bench at
                    1 GiB pages
  --scale [N]       hpwbench/scale.py: cost per operation at 10 and N pools
  --busy-host N     hpwbench/busy.py: the stock hand-out among a crowd
  --soak, --faults  hpwbench/longrun.py: tests/real/soak.py and
                    tests/real/fault_sweep.py --full under guard.sh

Setup and cleanup: the script re-runs itself under tests/real/guard.sh (the
host-wide lock, nr_hugepages restored afterwards, a private 2 MiB hugetlbfs
mount in $HPW_TEST_HUGETLBFS), writes node 0's nr_hugepages itself and reads
it back, and removes every file, process and directory it made.

Timings never fail it: exit 0 with PASS/MISS in the table; exit 1 when a
contender is broken (error, wrong state, QEMU failing), 2 on bad usage,
77 where guard.sh skips (no root, no hugetlbfs)."""
import argparse
import os
import shlex
import signal
import subprocess
import sys

from hpwbench import busy, core, gigantic, longrun, scale, stock
from hpwbench.harness import GUARD, REPO, BenchError, log, parse_size, save_json

# Which mode runs, the first row whose test holds: each mode module has
# run(args, mnt, res, cmdline), which measures and prints its report.
MODES = (
    (lambda args: args.busy_host is not None, busy),
    (lambda args: args.scale, scale),
    (lambda args: args.page_size == "1G", gigantic),
    (lambda args: args.stock_only, stock),
    (lambda args: True, core),
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, help="pool/file size (default 4G; 2G with --page-size 1G)")
    ap.add_argument("--page-size", choices=("2M", "1G"), default="2M",
                    help="1G: only the 1 GiB-page phase: hpwarmd's warm against populate_ideal (parked threads) "
                         "and recycle_bench, with the per-page time beside published figures")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                    help="threads for every contender (default: usable CPUs)")
    ap.add_argument("--rounds", type=int, default=11,
                    help="rounds (default 11: one 4 GiB warm takes ~0.2 s here, and the host is noisy)")
    ap.add_argument("--warmups", type=int, default=2, help="first-touch passes before measuring")
    ap.add_argument("--headroom-pages", type=int, default=16)
    ap.add_argument("--build", default=os.environ.get("HPW_BUILD_DIR", os.path.join(REPO, "build-bench")),
                    help="build dir holding server/hpwarmd and tests/bench/populate_ideal")
    ap.add_argument("--hpwarmd")
    ap.add_argument("--ideal")
    ap.add_argument("--recycle-bench")
    ap.add_argument("--prio-bench")
    ap.add_argument("--no-recycle", action="store_true", help="leave out the recycle phase (stock)")
    ap.add_argument("--no-prio", action="store_true", help="leave out the priority phase (stock)")
    ap.add_argument("--recycle-routines", type=lambda t: [x for x in t.split(",") if x], default=[],
                    help="zero routines for (r1), comma-separated, best first (default: the best one here and "
                         "memset); nopop:NAME zeroes without populating first")
    ap.add_argument("--qemu", default="qemu-system-x86_64")
    ap.add_argument("--no-qemu", action="store_true")
    ap.add_argument("--no-strace", action="store_true", help="skip the strace cross-check of QEMU")
    ap.add_argument("--no-boot", action="store_true", help="leave out (e), the guest boot row")
    ap.add_argument("--boot-size", type=parse_size, help="guest RAM for (e) (default --size)")
    ap.add_argument("--boot-rounds", type=int, default=5, help="rounds of (e), each one warm and one cold boot")
    ap.add_argument("--no-latency", action="store_true")
    ap.add_argument("--stock-only", action="store_true",
                    help="only the stock phases: time to ready from stock vs a cold warm, and recycling "
                         "through the daemon vs truncate + populate")
    ap.add_argument("--no-recycle-daemon", action="store_true",
                    help="with --stock-only: leave out recycling through the daemon")
    ap.add_argument("--stock-rounds", type=int, default=100,
                    help="timed hand-outs and cold warms of the stock phase, each (default 100: a p99 "
                         "of fewer rounds is just their maximum)")
    ap.add_argument("--latency-requests", type=int, default=2000)
    ap.add_argument("--latency-max-warms", type=int, default=10)
    ap.add_argument("--latency-size", type=parse_size, help="pool size for the latency phase (default --size)")
    ap.add_argument("--scale", type=int, nargs="?", const=scale.SCALE_DEFAULT, default=None, metavar="N",
                    help="only the scale phase: PUT, DELETE, stock hand-out, GET, list, metrics, RSS, bytes "
                         "written per change and restart on hosts of 10 and N one-page pools (default 1000), "
                         "with their ratios; N over 1000 checks the 1.5x targets of every request")
    ap.add_argument("--scale-rounds", type=int, default=50, help="timed operations of each kind per host")
    ap.add_argument("--busy-host", type=int, metavar="N",
                    help="only the busy-host phase: stock hand-out median and p99 on the quiet host and with N "
                         "processes each holding --busy-fds descriptors and --busy-maps mappings, with the ratios")
    ap.add_argument("--busy-fds", type=int, default=128, help="descriptors per busy process (default 128)")
    ap.add_argument("--busy-maps", type=int, default=300, help="mappings per busy process (default 300)")
    ap.add_argument("--busy-user", default="nobody",
                    help="the busy processes' user (default nobody, outside the pool group; '' for root; "
                         "libvirt-qemu: the hypervisor's case, the crowd in the daemon's --pool-group)")
    ap.add_argument("--busy-group",
                    help="their group (default: the user's primary group: nogroup for nobody, kvm for "
                         "libvirt-qemu); with --busy-user libvirt-qemu also the daemon's --pool-group")
    ap.add_argument("--busy-rounds", type=int, default=100,
                    help="timed hand-outs among the crowd, and as many on the quiet host, half before and "
                         "half after it (default 100, at least %d)" % busy.BUSY_MIN_ROUNDS)
    ap.add_argument("--busy-recycles", type=int, default=20,
                    help="rounds of the recycle phase among the crowd, each two released files recycled and "
                         "one hand-out while one recycles (default 20; 0 leaves the phase out)")
    ap.add_argument("--json", help="also write all results to this file")
    ap.add_argument("--soak", type=float, metavar="MINUTES",
                    help="instead of timing: the randomized churn with kill -9 restarts and its invariant "
                         "checks (tests/real/soak.py) for MINUTES; its seed is printed, replay with "
                         "HPW_CRASH_SEED")
    ap.add_argument("--faults", action="store_true",
                    help="instead of timing: the full fault-injection sweep (tests/real/fault_sweep.py --full: "
                         "every syscall of its census failed at each of its first 12 occurrences, kill -9, "
                         "restart, checks); prints its tally of runs and violations")
    args = ap.parse_args()
    args.size = args.size or (2 << 30 if args.page_size == "1G" else 4 << 30)
    args.hpwarmd = args.hpwarmd or os.path.join(args.build, "server", "hpwarmd")
    if args.faults:
        longrun.faults(ap, args)
    if args.soak is not None:
        longrun.soak(ap, args)
    args.ideal = args.ideal or os.path.join(args.build, "tests", "bench", "populate_ideal")
    args.recycle_bench = args.recycle_bench or os.path.join(args.build, "tests", "bench", "recycle_bench")
    args.prio_bench = args.prio_bench or os.path.join(args.build, "tests", "bench", "prio_bench")
    if args.stock_only:
        args.no_recycle = args.no_prio = True
    if args.page_size == "1G":
        args.no_prio = True
    if args.scale or args.busy_host is not None:
        args.no_recycle = args.no_prio = True
    if args.busy_host is not None:
        if args.busy_host < 1 or args.busy_fds < 1 or args.busy_maps < 1 or args.busy_recycles < 0:
            ap.error("--busy-host, --busy-fds and --busy-maps must be >= 1, --busy-recycles >= 0")
        if args.busy_rounds < busy.BUSY_MIN_ROUNDS:
            ap.error("--busy-rounds must be >= %d (the p99 of fewer is their maximum)" % busy.BUSY_MIN_ROUNDS)
        err = busy.busy_identity(args)
        if err:
            log(err)
            return 2
    for exe in [args.hpwarmd] + ([] if args.scale or args.busy_host is not None else [args.ideal]) + (
            [] if args.no_recycle else [args.recycle_bench]) + ([] if args.no_prio else [args.prio_bench]):
        if not os.access(exe, os.X_OK):
            ap.error("%s is not built (cmake --build %s)" % (exe, args.build))
    if args.threads < 1 or args.rounds < 1 or args.stock_rounds < 1:
        ap.error("--threads, --rounds and --stock-rounds must be >= 1")
    args.boot_size = args.boot_size or args.size
    if args.boot_rounds < 1:
        ap.error("--boot-rounds must be >= 1")
    if args.scale:
        if args.scale_rounds < 2:
            ap.error("--scale-rounds must be >= 2")
        if args.scale <= scale.SCALE_SMALL:
            ap.error("--scale N wants N > %d" % scale.SCALE_SMALL)

    cmdline = os.environ.get("HPW_BENCH_CMDLINE") or " ".join(shlex.quote(a) for a in sys.argv)
    mnt = os.environ.get("HPW_TEST_HUGETLBFS")
    if not mnt:
        os.environ["HPW_BENCH_CMDLINE"] = cmdline
        os.execv(GUARD, [GUARD] + (["--gigantic"] if args.page_size == "1G" else []) +
                 [sys.executable, os.path.abspath(__file__)] + sys.argv[1:])

    # guard.sh ends us with SIGTERM on Ctrl-C: unwind so the daemon is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    res = {"size_bytes": args.size, "threads": args.threads, "rounds": args.rounds, "command": cmdline,
           "notes": []}
    mode = next(m for asked, m in MODES if asked(args))
    try:
        mode.run(args, mnt, res, cmdline)
    except (BenchError, subprocess.TimeoutExpired, OSError) as e:
        log("FAILED: %s" % e)
        return 1
    save_json(args, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
