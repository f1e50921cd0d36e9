"""Recycling a released warm file, two ways.

In place (recycle_bench, after the daemon of the core or the 1 GiB mode has
stopped): (r1) a dirtied populated file zeroed in place in userspace with
zero.c's streaming stores (and (r1') with memset, or the routines
--recycle-routines names) against (r2) truncate to 0 + ftruncate back +
MADV_POPULATE_WRITE, same file, same threads parked before any clock, its
own interleaved rounds after an untimed warm-up round.  The core mode and
the 1 GiB mode print its rows with their own targets.

Through the daemon (--stock-only, after the stock mode, unless
--no-recycle-daemon): daemon_measure()."""
import os
import time

from .harness import (PAGE, BenchError, Daemon, human, log, median, metric, paired, per_round_line,
                      reserve_beyond_use, rm, run_helper, run_ideal)

# The in-place zeroing against the kernel path, at 2 MiB pages.
TARGET_RECYCLE = 1.2


def in_place(args, path, size, what="recycle"):
    """recycle_bench on a file at PATH of SIZE, args.rounds rounds; its
    results (r1 by routine, the first the one asked first; r2; threads)."""
    try:
        rc = run_helper("recycle_bench", [args.recycle_bench, path, str(size), str(args.threads),
                                          str(args.rounds)] + args.recycle_routines)
    finally:
        rm(path)
    first = next(iter(rc["r1"]))
    log("%s: r1 %s %.3fs, r2 truncate+populate %.3fs (medians)" % (
        what, first, median(rc["r1"][first]), median(rc["r2"])))
    return rc


def rows(rc, streaming_note):
    """The report's (name, median seconds) rows of recycle_bench's results
    RC; (r1) is the first routine asked for (by default the best one here),
    named " streaming stores" when STREAMING_NOTE and it is."""
    best = next(iter(rc["r1"]))
    out = [("(r1) recycle: zero in place, %s%s" % (
        best, " streaming stores" if streaming_note and best == rc["best"] else ""), median(rc["r1"][best]))]
    for name, xs in rc["r1"].items():
        if name != best:
            out.append(("(r1') recycle: zero in place, %s" % name, median(xs)))
    out.append(("(r2) truncate + ftruncate + MADV_POPULATE_WRITE", median(rc["r2"])))
    return out


def ratios(rc):
    """(r2)/(r1): by medians, and the median of the per-round ratios."""
    r1 = rc["r1"][next(iter(rc["r1"]))]
    return median(rc["r2"]) / median(r1), paired(r1, rc["r2"])


def per_round(rc):
    """The report's line of recycle_bench's per-round seconds; none without
    results RC."""
    if not rc:
        return []
    return [per_round_line("recycle ", {"r1 " + k: v for k, v in rc["r1"].items()} | {"r2": rc["r2"]})]


def daemon_measure(args, mnt, res):
    """Recycle through the daemon against truncate + populate of
    the same size with the same threads.  The node holds the stock file's
    pages and no more, so a released pool can only come back by recycling:
    each round takes the stock file as a pool, DELETEs it and times DELETE
    -> GET /v1/stock ready again (client wall: the saved release, the /proc
    maps check, the saved "recycling" step, the zero job, the saved
    completion), with the zero job's own time from
    hpwarmd_stock_recycle_duration_seconds_sum.  Then, the stock dropped,
    populate_ideal (threads parked before the clock) populates a file of the
    same size after truncating it to 0, the kernel path a recycle replaces."""
    size, threads, rounds = args.size, args.threads, args.rounds
    reserve_beyond_use(size // PAGE)
    d = Daemon(args.hpwarmd, os.path.join(mnt, "pools"), threads)
    conn = d.connect()

    def call(method, path, body=None):
        return d.request(method, path, body, conn=conn)

    def stock_ready():
        for _ in range(600000):
            st, body = call("GET", "/v1/stock")
            if st == 200 and body["targets"] and body["targets"][0]["ready"] == 1:
                return
            time.sleep(0.0002)
        raise BenchError("stock never became ready")

    def job_seconds():
        st, text = call("GET", "/metrics")
        v = metric(text, "hpwarmd_stock_recycle_duration_seconds_sum") if st == 200 else None
        if v is None:
            raise BenchError("no hpwarmd_stock_recycle_duration_seconds_sum in /metrics")
        return v

    out = {"daemon_wall": [], "daemon_job": [], "truncate_populate": []}
    path = os.path.join(mnt, "bench-recycle-ref")
    try:
        d.set_stock(size, 1, conn=conn)
        stock_ready()
        pool = {"node": 0, "size_bytes": size, "page_size": "2M"}
        for rnd in range(rounds):
            name = "bench-recycle-%d" % rnd
            st, body = call("PUT", "/v1/pools/" + name, pool)
            if st != 201 or body.get("from_stock") != "full":
                raise BenchError("PUT %s from stock: %d %s" % (name, st, body))
            before = job_seconds()
            t0 = time.perf_counter()
            st, _ = call("DELETE", "/v1/pools/" + name)
            if st != 204:
                raise BenchError("DELETE %s: %d" % (name, st))
            stock_ready()
            out["daemon_wall"].append(time.perf_counter() - t0)
            out["daemon_job"].append(job_seconds() - before)
        d.set_stock(size, 0, conn=conn)
        for rnd in range(rounds):
            with open(path, "wb"):
                pass                            # truncate to 0: its pages go back
            secs, _ = run_ideal(args.ideal, path, size, threads)
            out["truncate_populate"].append(secs)
    finally:
        conn.close()
        d.stop()
        rm(path)
    res["recycle_daemon_s"] = out


def daemon_report(args, res):
    out = res["recycle_daemon_s"]
    w, j, t = median(out["daemon_wall"]), median(out["daemon_job"]), median(out["truncate_populate"])
    print("recycle through the daemon, %s, %d threads, %d rounds:" % (human(args.size), args.threads, args.rounds))
    print("  DELETE -> stock ready (client wall): median %.1f ms" % (w * 1e3))
    print("  zero job (server, metric):           median %.1f ms" % (j * 1e3))
    print("  truncate + populate (parked threads): median %.1f ms" % (t * 1e3))
    print("  truncate+populate / zero job: %.2fx   (target >= 1.2x); / client wall: %.2fx" % (t / j, t / w))
