"""The core mode, bench.py with no mode option: one machine, one size and
one thread count for every contender.

  (a) hpwarmd warm: client-observed wall time from PUT /v1/pools/NAME to the
      answer of GET ...?wait=ready (the long-poll), then DELETE (not timed);
      both requests over one keep-alive connection made before the clock,
      as libhpwarm (the hpwarm CLI) talks to the daemon;
 (a0) the same with a new connection per request, made inside the clock (a
      row for comparison: the daemon's HTTP library maps and unmaps a
      buffer per connection, and mid-warm that waits for the populates'
      mmap lock and stalls them);
  (b) populate_ideal: the same MADV_POPULATE_WRITE over a file of the same
      size with the same threads and nothing else (its own mmap..munmap
      clock), the threads created and parked on a barrier before the clock
      starts -- the strongest known form;
 (b0) the older populate_ideal --spawn (threads created inside the clock,
      which convoy on the mmap lock with the populates already running),
      an extra row for comparison;
  (c) QEMU -machine none (no guest, no guest RAM: the memory object only)
      with a memory-backend-file prealloc=on prealloc-threads=N on a fresh
      file in the same hugetlbfs;
  (d) the same -machine none QEMU with the object of a pool hpwarmd has just
      warmed (its handoff.qemu_argv object word, prealloc-threads=N added):
      the VMM's memory phase alone;
  (e) a real guest: QEMU (TCG) from spawn to the guest's /init, its RAM the
      warm pool through the complete handoff (-object ... -machine
      memory-backend=...), against the same guest whose RAM is a cold file
      of the same size (prealloc=on, same threads), side by side with their
      ratio (tests/qemu/guestboot.py; --boot-size, --boot-rounds, --no-boot).
      Under TCG the guest's own boot dominates both;
  plus GET /v1/pools/NAME latency from a keep-alive client loop and the
  daemon's RSS while a warm of SIZE runs;
  and two phases for the stock of warm files (after the daemon has stopped):
  recycle_bench, (r1) against (r2) (recycle.py), and prio_bench, (p0) to
  (p2) and (z) (prio.py).

QEMU timing method.  QEMU's prealloc time is its spawn-to-exit wall time
(stdin "quit") minus the median spawn-to-exit time of the same command with a
2 MiB backend (one page: startup, monitor and exit, with a negligible
prealloc), measured in the same rounds.  For a warm pool that difference is
close to the baseline's noise (its median absolute deviation), so when it
falls below that the ratio (c)/(d) is given as a lower bound, cold/noise.  It
is cross-checked by a second, independent method: the same QEMU runs under
`strace --seccomp-bpf -f -T -e madvise`, taking the window from the first
MADV_POPULATE_WRITE call's start to the last one's end.  (QEMU 7.2 populates
with one MADV_POPULATE_WRITE per prealloc thread, and below 64 MiB per thread
it uses fewer threads.)

Rounds interleave the contenders (the order rotates every round) so that noise
hits all alike; the table gives medians.  Before measuring, every reserved
hugepage is touched once (twice by default) through a throwaway file, because
the first touch of memory on these virtual machines is many times slower."""
import http.client
import json
import os
import shutil
import threading
import time

from . import prio, recycle
from .harness import (GIB, PAGE, TARGET_A_OVER_B, BenchError, Daemon, check_lines, human, log, median, node0,
                      paired, per_round_line, reserve_node0, rm, run_ideal, warm_a, warmups)
from .qemu import BASELINE_RUNS, boot_phase, qemu_obj, run_qemu

# The targets README "Measured" states, on this 2-core machine.
TARGET_A_OVER_C = 1.0
TARGET_D_SPEEDUP = 20.0
TARGET_P99_S = 0.010
TARGET_RSS_BYTES = 16 << 20


def latency_phase(d, size, threads, want, max_warms):
    """GET /v1/pools/NAME over one keep-alive connection while pools of SIZE
    warm back to back, until WANT samples were taken during warming.  A
    sampler thread reads the daemon's VmRSS meanwhile."""
    samples, rss = [], [0]
    stop = threading.Event()

    def sampler():
        while not stop.is_set():
            try:
                rss[0] = max(rss[0], d.status()["VmRSS"])
            except (OSError, KeyError):
                pass
            stop.wait(0.005)
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    warms = reconnects = 0
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    try:
        while len(samples) < want and warms < max_warms:
            name = "bench-lat-%d" % warms
            warms += 1
            d.put_pool(name, size, threads)
            while True:
                t0 = time.perf_counter()
                try:
                    conn.request("GET", "/v1/pools/" + name)
                    r = conn.getresponse()
                    body = r.read()
                except (http.client.HTTPException, OSError):
                    conn.close()
                    reconnects += 1
                    continue
                dt = time.perf_counter() - t0
                if r.status != 200:
                    raise BenchError("GET %s during warm: %d" % (name, r.status))
                if json.loads(body)["state"] != "warming":
                    break
                samples.append(dt)
                if len(samples) >= want:
                    break
            d.wait_ready(name)
            d.delete(name)
    finally:
        conn.close()
        stop.set()
        th.join()
    st = d.status()
    samples.sort()

    def pct(q):
        return samples[min(len(samples) - 1, int(q * len(samples)))] if samples else None
    return {"samples": len(samples), "warms": warms, "reconnects": reconnects,
            "p50_s": pct(0.50), "p99_s": pct(0.99), "max_s": samples[-1] if samples else None,
            "rss_max_bytes": max(rss[0], st.get("VmRSS", 0)), "hwm_bytes": st.get("VmHWM")}


def measure(args, mnt, res):
    size, threads = args.size, args.threads
    pool_dir = os.path.join(mnt, "pools")
    scratch = os.path.join(mnt, "bench-file")
    base_file = os.path.join(mnt, "bench-base")
    qemu = None if args.no_qemu else shutil.which(args.qemu)
    if not args.no_qemu and not qemu:
        raise BenchError("%s not found (use --no-qemu to leave QEMU out)" % args.qemu)
    strace = qemu and not args.no_strace and shutil.which("strace")

    # Hugepages: the size (1.5 x for prio_bench: a populate beside a zero
    # job of half the size), plus headroom, on top of pages in use elsewhere.
    in_use = node0("nr_hugepages") - node0("free_hugepages")
    boot = bool(qemu) and not args.no_boot
    need = size + (size // 2 // PAGE * PAGE if not args.no_prio else 0)
    want = max(need, args.boot_size if boot else 0) // PAGE + args.headroom_pages + in_use
    got = reserve_node0(want)
    log("node0 nr_hugepages=%d (asked %d), free=%d" % (got, want, node0("free_hugepages")))
    if got < want:
        raise BenchError("kernel gave only %d of %d 2 MiB pages on node 0" % (got, want))
    res["reserved_pages"] = got

    # First touch on this VM is slow: zero every free hugepage once (or more).
    warmups(args, scratch, node0("free_hugepages") * PAGE, res)

    d = Daemon(args.hpwarmd, pool_dir, threads)
    try:
        r = {k: [] for k in ("a", "a_server", "a0", "b", "b_wall", "b0", "c_wall", "d_wall", "base",
                                "c_strace", "d_strace", "delete")}

        def do_a(rnd):
            # (a0) first: fresh connections per request, its own pool.
            name = "bench-a0-%d" % rnd
            wall, _ = warm_a(d, name, size, threads, keepalive=False)
            r["a0"].append(wall)
            d.delete(name)
            name = "bench-a-%d" % rnd
            wall, p = warm_a(d, name, size, threads)
            r["a"].append(wall)
            r["a_server"].append(p.get("elapsed_seconds"))
            res["handoff_qemu"] = p["handoff"]["qemu"]
            if p.get("threads") != threads:
                note = "hpwarmd's plan used %s worker thread(s) for this size (asked %d)" % (p.get("threads"), threads)
                if note not in res["notes"]:
                    res["notes"].append(note)
            if qemu:
                obj = p["handoff"]["qemu_argv"][1]         # the -object word alone
                if "prealloc-threads=" not in obj:
                    obj += ",prealloc-threads=%d" % threads
                free = node0("free_hugepages")
                r["d_wall"].append(run_qemu(qemu, obj))
                if strace:
                    r["d_strace"].append(run_qemu(qemu, obj, strace=True))
                if node0("free_hugepages") != free:
                    raise BenchError("QEMU on the warm pool took %d fresh pages"
                                     % (free - node0("free_hugepages")))
            t0 = time.perf_counter()
            d.delete(name)
            r["delete"].append(time.perf_counter() - t0)

        def do_b(rnd):
            # Parked and spawn alternate which goes first.
            for spawn in ((False, True) if rnd % 2 == 0 else (True, False)):
                el, wall = run_ideal(args.ideal, scratch, size, threads, spawn=spawn)
                rm(scratch)
                if spawn:
                    r["b0"].append(el)
                else:
                    r["b"].append(el)
                    r["b_wall"].append(wall)

        def do_c(rnd):
            if not qemu:
                return
            for _ in range(BASELINE_RUNS):
                r["base"].append(run_qemu(qemu, qemu_obj(base_file, PAGE, threads)))
                rm(base_file)
            r["c_wall"].append(run_qemu(qemu, qemu_obj(scratch, size, threads)))
            rm(scratch)
            if strace:
                r["c_strace"].append(run_qemu(qemu, qemu_obj(scratch, size, threads), strace=True))
                rm(scratch)

        order = [do_a, do_b, do_c]
        for rnd in range(args.rounds):
            for fn in order[rnd % 3:] + order[:rnd % 3]:
                fn(rnd)
            log("round %d/%d: a %.3fs  b %.3fs%s" % (
                rnd + 1, args.rounds, r["a"][-1], r["b"][-1],
                "  c %.3fs  d %.3fs (walls)" % (r["c_wall"][-1], r["d_wall"][-1]) if qemu else ""))
        res["raw"] = r
        if boot:
            res["boot"] = boot_phase(args, d, qemu, mnt, threads)
        if not args.no_latency:
            res["latency"] = latency_phase(d, args.latency_size or size, threads,
                                           args.latency_requests, args.latency_max_warms)
        if d.proc.poll() is not None:
            raise BenchError("hpwarmd exited with %s" % d.proc.returncode)
    finally:
        d.stop()
        for f in (scratch, base_file):
            rm(f)
        shutil.rmtree(pool_dir, ignore_errors=True)

    # The stock phases, with the daemon gone: each helper interleaves its own
    # contenders over ROUNDS rounds after an untimed warm-up round.
    if not args.no_recycle:
        res["recycle"] = recycle.in_place(args, os.path.join(mnt, "bench-recycle"), size)
    if not args.no_prio:
        res["prio"] = prio.measure(args, mnt)


def qemu_boot_skipped(args):
    return args.no_boot or args.no_qemu


def report(args, res, cmdline):
    size, r = args.size, res["raw"]

    def rate(s):
        return size / GIB / s if s and s > 0 else None
    a, b = median(r["a"]), median(r["b"])
    rows, checks, notes = [], [], list(res.get("notes", []))
    rows.append(("(a) hpwarmd PUT->ready (client wall)", a))
    rows.append(("    hpwarmd elapsed_seconds (server)", median(r["a_server"])))
    if r.get("a0"):
        rows.append(("(a0) the same, a new connection per request", median(r["a0"])))
    rows.append(("(b) populate_ideal, threads parked (mmap..munmap)", b))
    rows.append(("    populate_ideal (process wall)", median(r["b_wall"])))
    rows.append(("(b0) populate_ideal --spawn (threads made in clock)", median(r["b0"])))
    checks.append(("(a)/(b) throughput", b / a, TARGET_A_OVER_B, ">="))
    checks.append(("(a)/(b) median of per-round ratios", paired(r["a"], r["b"]), TARGET_A_OVER_B, ">="))
    base = median(r["base"])
    if base is not None:
        # Noise floor: the baseline's median absolute deviation (at least 1 ms).
        noise = max(median([abs(x - base) for x in r["base"]]), 0.001)
        c = median(r["c_wall"]) - base
        dn = median(r["d_wall"]) - base
        rows.append(("    QEMU -machine none baseline (2 MiB backend)", base))
        rows.append(("(c) QEMU -machine none, object prealloc cold", c))
        rows.append(("(d) QEMU -machine none, object on warm pool", dn))
        checks.append(("(a)/(c) throughput", c / a, TARGET_A_OVER_C, ">="))
        if dn < noise:
            checks.append(("(d) cold/warm, wall (warm < noise %.1f ms: lower bound)" % (noise * 1e3),
                           c / noise, TARGET_D_SPEEDUP, ">="))
        else:
            checks.append(("(d) cold/warm, wall - baseline", c / dn, TARGET_D_SPEEDUP, ">="))
        if r["c_strace"]:
            cs, ds = median(r["c_strace"]), median(r["d_strace"])
            rows.append(("(c') QEMU cold, strace madvise window", cs))
            rows.append(("(d') QEMU warm, strace madvise window", ds))
            checks.append(("(d') cold/warm, strace madvise window", cs / ds, TARGET_D_SPEEDUP, ">="))
        else:
            notes.append("no strace cross-check (strace not installed or --no-strace)")
    else:
        notes.append("QEMU left out (--no-qemu)")
    rows.append(("    DELETE of a ready pool (not in (a))", median(r["delete"])))
    bt = res.get("boot")
    if not (bt and bt["warm"]) and qemu_boot_skipped(args):
        notes.append("(e) guest boot row left out (--no-boot or --no-qemu)")
    extra = []  # (name, seconds, bytes) rows of other sizes
    rc = res.get("recycle")
    if rc:
        rows += recycle.rows(rc, streaming_note=True)
        by_medians, by_rounds = recycle.ratios(rc)
        checks.append(("(r2)/(r1) recycle vs kernel path", by_medians, recycle.TARGET_RECYCLE, ">="))
        checks.append(("(r2)/(r1) median of per-round ratios", by_rounds, recycle.TARGET_RECYCLE, ">="))
    pr = res.get("prio")
    if pr:
        prio.report(pr, rows, extra, checks, notes)
    lat = res.get("latency")
    if lat and lat["samples"]:
        checks.append(("GET pool p99 during warm (p50 %.2f, max %.2f ms)" % (lat["p50_s"] * 1e3, lat["max_s"] * 1e3),
                       lat["p99_s"] * 1e3, TARGET_P99_S * 1e3, "<", "ms"))
        checks.append(("daemon VmRSS max during warms (VmHWM %.1f MiB)" % (lat["hwm_bytes"] / 2**20),
                       lat["rss_max_bytes"] / 2**20, TARGET_RSS_BYTES / 2**20, "<", "MiB"))
        notes.append("latency: %d GETs on one keep-alive connection while %d warm(s) of %s ran back to back, "
                     "%d reconnects" % (lat["samples"], lat["warms"], human(args.latency_size or size), lat["reconnects"]))

    out = ["hpwarm warm benchmark: size %s, threads %d, %d rounds (medians), %d CPUs, kernel %s"
           % (human(size), args.threads, args.rounds, os.cpu_count(), os.uname().release),
           "command: " + cmdline, "",
           "%-52s %10s %9s" % ("contender", "seconds", "GiB/s")]
    for name, s in rows:
        g = rate(s)
        out.append("%-52s %10s %9s" % (name, "%.4f" % s if s is not None else "-",
                                        "%.2f" % g if g is not None and "baseline (" not in name
                                        and "DELETE" not in name else "-"))
    for name, s, nbytes in extra:
        out.append("%-52s %10s %9s" % (name + " [%s]" % human(nbytes), "%.4f" % s, "%.2f" % (nbytes / GIB / s)))
    if bt and bt["warm"]:
        out += ["", "(e) a real guest (TCG, q35, 1 vCPU, -m %s), %d rounds, medians:"
                % (human(bt["size_bytes"]), len(bt["warm"])),
                "    %-34s %-14s %-14s %-10s %s" % ("QEMU spawn ->", "warm pool", "cold file", "cold/warm",
                                                    "cold - warm")]
        for what, kw, kc in (("guest /init", "warm", "cold"), ("firmware banner (RAM set up)", "warm_fw", "cold_fw")):
            ew, ec = median(bt[kw]), median(bt[kc])
            out.append("    %-34s %-14s %-14s %-10s %s" % (what, "%.3f s" % ew, "%.3f s" % ec, "%.3fx" % (ec / ew),
                                                          "%+.3f s" % (ec - ew)))
        notes.append("(e) per round, seconds to /init: warm %s, cold %s; to the firmware banner: warm %s, cold %s. "
                     "The guest's own TCG boot dominates spawn -> /init; spawn -> firmware is QEMU's start with "
                     "guest RAM set up (cold: its prealloc, compare (c))"
                     % tuple([round(x, 2) for x in bt[k]] for k in ("warm", "cold", "warm_fw", "cold_fw")))
    out += [""] + check_lines(checks)
    out.append("")
    notes.append("warm-up (first touch) passes, GiB/s: " + ", ".join("%.2f" % x for x in res["warmup_gib_s"]))
    out += ["note: " + n for n in notes]
    out.append(per_round_line("", {k: v for k, v in r.items() if v}))
    print("\n".join(out + recycle.per_round(rc) + prio.per_round(pr)), flush=True)


def run(args, mnt, res, cmdline):
    measure(args, mnt, res)
    report(args, res, cmdline)
