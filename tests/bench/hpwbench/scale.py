"""The scale mode (--scale [N]): the daemon's own cost per operation
against the number of pools, on two hosts at once, one of 10 and one of N
one-page pools (default 1000), their rounds interleaved: PUT, DELETE and
stock hand-out medians and p99, GET of one pool, of one page of the list,
of /metrics and of the whole list, bytes written per change (from
/proc/PID/io write_bytes), RSS, restart time, with the ratios N/10 and
PASS/MISS against the targets (SCALE_TARGETS at 1000; SCALE_LARGE_TARGETS
beyond, e.g. --scale 3000: 6 GiB of hugepages, refused up front unless the
machine's available memory covers them and 2 GiB more).
HPW_BENCH_PIDDIR=DIR writes each daemon's pid to DIR/hpwarmd-N.pid once
both hosts are full, for `perf record -g -p PID`."""
import os
import shutil
import time

from .harness import (GIB, PAGE, STOCK_SETTLE_S, BenchError, Daemon, log, median, node0, pctl,
                      reserve_beyond_use)

# The small host; the large one holds --scale N pools (1000 by default).
SCALE_SMALL = 10
SCALE_DEFAULT = 1000
SCALE_TARGETS = {
    "put_ratio": 1.5,             # PUT median at N pools / at 10
    "delete_ratio": 1.5,
    "handout_ms": 5.0,            # stock hand-out median at 1000 pools
    "bytes_per_change": 16 << 10,
    "rss_bytes": 16 << 20,
    "restart_s": 1.0,
}
# Beyond 1000 pools (--scale 3000): every per-request cost within 1.5x of
# the small host's, the journal's bytes per change the small host's (within
# a tenth: the same page-sized appends), and a larger RSS bound.
SCALE_LARGE_TARGETS = {
    "put_ratio": 1.5,
    "get_ratio": 1.5,
    "delete_ratio": 1.5,
    "handout_ratio": 1.5,
    "bytes_ratio": 1.1,
    "rss_bytes": 24 << 20,
    "restart_s": 1.0,
}


def scale_hosts(args):
    return (SCALE_SMALL, args.scale)


def scale_memory_check(args):
    """The large host's pages must fit beside what the machine's other
    users hold: refuse to start (BenchError) unless node 0's free memory,
    hugepages already free counted in, covers them with a margin."""
    need = (sum(scale_hosts(args)) + 16) * PAGE
    with open("/proc/meminfo") as f:
        info = {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in f) if v.split()}
    have = info.get("MemAvailable", 0) + node0("free_hugepages") * PAGE
    if need + (2 << 30) > have:
        raise BenchError("--scale %d needs %.1f GiB of hugepages and 2 GiB beside them; %.1f GiB available"
                         % (args.scale, need / GIB, have / GIB))


def read_io(pid):
    with open("/proc/%d/io" % pid) as f:
        return {k: int(v) for k, v in (line.split(":") for line in f)}


class ScaleHost:
    """A daemon holding N one-page pools (plus, for hand-outs, one stock
    file of one page), and the operations the scale phase times on it, each
    over one keep-alive connection made before its clock, each on a quiet
    daemon (nothing warming)."""

    def __init__(self, args, mnt, n):
        self.args, self.n = args, n
        self.pool_dir = os.path.join(mnt, "scale-%d" % n)
        self.d = Daemon(args.hpwarmd, self.pool_dir, 1, extra=self.daemon_extra())
        self.conn = self.d.connect()
        self.out = {"pools": n, "put": [], "delete": [], "handout": [], "list": [], "page": [], "metrics": [], "get": []}
        log("scale: %d pools: creating them" % n)
        self.names = ["host-%05d" % i for i in range(n)]
        for name in self.names:
            self.put(name)
        for name in self.names:
            self.ready(name)

    def daemon_extra(self):
        """Room for the pools and the bench's own (the default limit is
        1024), and a pid file a profiler can attach by
        (HPW_BENCH_PIDDIR/hpwarmd-N.pid, when set)."""
        extra = ["--max-pools", str(self.n + 16)]
        self.pid_file = None
        if os.environ.get("HPW_BENCH_PIDDIR"):
            self.pid_file = os.path.join(os.environ["HPW_BENCH_PIDDIR"], "hpwarmd-%d.pid" % self.n)
        return extra

    def note_pid(self):
        if self.pid_file:
            with open(self.pid_file, "w") as f:
                f.write("%d\n" % self.d.proc.pid)

    def call(self, method, path, body=None):
        return self.d.request(method, path, body, conn=self.conn)

    def timed(self, method, path, body=None, want=(200,)):
        t0 = time.perf_counter()
        st, b = self.call(method, path, body)
        dt = time.perf_counter() - t0
        if st not in want:
            raise BenchError("%s %s: %d %s" % (method, path, st, b))
        return dt, b

    def put(self, name):
        return self.timed("PUT", "/v1/pools/" + name,
                          {"node": 0, "size_bytes": PAGE, "page_size": "2M", "threads": 1}, want=(201,))

    def ready(self, name):
        self.d.wait_ready(name, conn=self.conn)

    def set_stock(self, count):
        self.d.set_stock(PAGE, count, conn=self.conn)

    def stock_ready(self):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            st, b = self.call("GET", "/v1/stock")
            if st == 200 and b["targets"] and b["targets"][0]["ready"] == 1 and b["targets"][0]["warming"] == 0:
                time.sleep(STOCK_SETTLE_S)
                return
            time.sleep(0.002)
        raise BenchError("the stock did not settle")

    def io(self):
        return read_io(self.d.proc.pid)["write_bytes"]

    # -- one round of each --
    def put_delete_round(self):
        """PUT of one more pool, no stock (a cold warm: PUT answers
        "warming"), its warm, then its DELETE."""
        dt, _b = self.put("bench-x")
        self.out["put"].append(dt)
        self.ready("bench-x")
        time.sleep(STOCK_SETTLE_S)
        dt, _b = self.timed("DELETE", "/v1/pools/bench-x", want=(204,))
        self.out["delete"].append(dt)
        time.sleep(STOCK_SETTLE_S)

    def handout_round(self):
        """A ready one-page stock file renamed into place, then removed."""
        self.stock_ready()
        dt, b = self.put("bench-s")
        if b.get("from_stock") != "full":
            raise BenchError("hand-out: from_stock %s" % b.get("from_stock"))
        self.out["handout"].append(dt)
        self.timed("DELETE", "/v1/pools/bench-s", want=(204,))

    def read_round(self):
        """GET of one pool, one page of the list and /metrics: each answer
        a small one, timed before any full list (whose 5 MiB at 3000 pools
        the daemon spends a while freeing afterwards)."""
        self.out["get"].append(self.timed("GET", "/v1/pools/" + self.names[len(self.names) // 2])[0])
        self.out["page"].append(self.timed("GET", "/v1/pools?limit=100&after=" + self.names[len(self.names) // 2])[0])
        self.out["metrics"].append(self.timed("GET", "/metrics")[0])

    def list_round(self):
        """The unpaged list: every pool in one answer."""
        t0 = time.perf_counter()
        self.conn.request("GET", "/v1/pools")
        r = self.conn.getresponse()
        body = r.read()
        self.out["list"].append(time.perf_counter() - t0)
        self.out["list_bytes"] = len(body)
        time.sleep(STOCK_SETTLE_S)

    def finish(self):
        """RSS and state size now, then the restart (SIGTERM, and a new
        daemon on the same state and pools, from its spawn until it answers
        the list with every pool), then every pool removed."""
        d = self.d
        self.out["rss_bytes"] = d.status()["VmRSS"]
        self.out["state_bytes"] = sum(os.path.getsize(os.path.join(d.state, f)) for f in os.listdir(d.state))
        self.conn.close()
        d.keep_state = True
        d.stop()
        t0 = time.perf_counter()
        self.d = Daemon(self.args.hpwarmd, self.pool_dir, 1, state=d.state, extra=self.daemon_extra())
        self.d.keep_state = False
        st, b = self.d.request("GET", "/v1/pools")
        self.out["restart_s"] = time.perf_counter() - t0
        if st != 200 or len(b["pools"]) != self.n:
            raise BenchError("after the restart: %d, %s pools" % (st, len(b.get("pools", []))))
        log("scale: %d pools: removing them" % self.n)
        self.conn = self.d.connect()
        for name in self.names:
            self.d.delete(name, conn=self.conn)
        self.conn.close()

    def close(self):
        self.d.stop()
        shutil.rmtree(self.pool_dir, ignore_errors=True)


def scale_phase(args, mnt, res):
    """Both hosts live at once, their rounds interleaved (the order swaps
    every round) so that the machine's noise hits both alike: the ratios
    compare like with like."""
    rounds = args.scale_rounds
    if args.scale > SCALE_DEFAULT:
        scale_memory_check(args)
    reserve_beyond_use(sum(scale_hosts(args)) + 16)
    hosts = []
    try:
        for n in scale_hosts(args):
            hosts.append(ScaleHost(args, mnt, n))
        for h in hosts:
            # The first host's connection idled while the second filled up
            # (past the daemon's idle timeout at 3000 pools): a new one,
            # before any clock.
            h.conn.close()
            h.conn = h.d.connect()
            h.note_pid()

        def interleave(fn):
            for i in range(rounds):
                for h in (hosts if i % 2 == 0 else hosts[::-1]):
                    fn(h)

        io0 = [h.io() for h in hosts]
        interleave(ScaleHost.put_delete_round)
        for h, before in zip(hosts, io0):
            # Each round: the create, its warming -> ready, and the removal.
            h.out["changes"] = 3 * rounds
            h.out["bytes_per_change"] = (h.io() - before) / h.out["changes"]
        for h in hosts:
            h.set_stock(1)
        interleave(ScaleHost.handout_round)
        for h in hosts:
            h.set_stock(0)
        interleave(ScaleHost.read_round)
        interleave(ScaleHost.list_round)
        for h in hosts:
            h.finish()
        res["scale"] = [h.out for h in hosts]
    finally:
        for h in hosts:
            h.close()


def size_text(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return "%.1f %s" % (n / (1 << shift), unit)
    return "%d B" % n


def scale_checks_default(small, big):
    """The 1000-pool targets (SCALE_TARGETS)."""
    t = SCALE_TARGETS
    n = big["pools"]
    return [
        ("PUT median %d/10 <= %.1f" % (n, t["put_ratio"]), median(big["put"]) / median(small["put"]) <= t["put_ratio"]),
        ("DELETE median %d/10 <= %.1f" % (n, t["delete_ratio"]),
         median(big["delete"]) / median(small["delete"]) <= t["delete_ratio"]),
        ("stock hand-out median at %d <= %.0f ms" % (n, t["handout_ms"]), median(big["handout"]) * 1e3 <= t["handout_ms"]),
        ("bytes per change at %d <= %s" % (n, size_text(t["bytes_per_change"])),
         big["bytes_per_change"] <= t["bytes_per_change"]),
        ("RSS at %d <= %s" % (n, size_text(t["rss_bytes"])), big["rss_bytes"] <= t["rss_bytes"]),
        ("restart at %d <= %.0f s" % (n, t["restart_s"]), big["restart_s"] <= t["restart_s"]),
    ]


def scale_checks_large(small, big):
    """The targets beyond 1000 pools (SCALE_LARGE_TARGETS): every
    per-request median within its ratio of the small host's."""
    t = SCALE_LARGE_TARGETS
    n = big["pools"]
    ratio = lambda k: median(big[k]) / median(small[k])
    out = [("%s median %d/10 <= %.1f" % (label, n, t[key + "_ratio"]), ratio(key) <= t[key + "_ratio"])
           for label, key in (("PUT", "put"), ("GET one pool", "get"), ("DELETE", "delete"),
                              ("stock hand-out", "handout"))]
    out += [
        ("bytes per change %d/10 <= %.1f" % (n, t["bytes_ratio"]),
         big["bytes_per_change"] <= t["bytes_ratio"] * small["bytes_per_change"]),
        ("RSS at %d <= %s" % (n, size_text(t["rss_bytes"])), big["rss_bytes"] <= t["rss_bytes"]),
        ("restart at %d <= %.0f s" % (n, t["restart_s"]), big["restart_s"] <= t["restart_s"]),
    ]
    return out


def scale_report(args, res):
    small, big = res["scale"]
    n = big["pools"]
    ms = lambda v: "%.2f ms" % (v * 1e3)

    def row(label, key, fmt, pct=True):
        a, b = small[key], big[key]
        if pct:
            ma, mb = median(a), median(b)
            return (label, "%s / %s" % (fmt(ma), fmt(pctl(a, 0.99))), "%s / %s" % (fmt(mb), fmt(pctl(b, 0.99))),
                    "%.2f" % (mb / ma if ma else float("nan")))
        return (label, fmt(a), fmt(b), "%.2f" % (b / a if a else float("nan")))

    rows = [
        row("PUT (cold, answers warming): median / p99", "put", ms),
        row("DELETE: median / p99", "delete", ms),
        row("stock hand-out PUT: median / p99", "handout", ms),
        row("GET /v1/pools/{name}: median / p99", "get", ms),
        row("GET /v1/pools (all): median / p99", "list", ms),
        row("GET /v1/pools?limit=100 (one page): median / p99", "page", ms),
        row("GET /metrics: median / p99", "metrics", ms),
        row("list size", "list_bytes", size_text, pct=False),
        row("bytes written per change (/proc/PID/io)", "bytes_per_change", size_text, pct=False),
        row("state dir size", "state_bytes", size_text, pct=False),
        row("daemon RSS (VmRSS)", "rss_bytes", size_text, pct=False),
        row("restart to a full list", "restart_s", lambda v: "%.3f s" % v, pct=False),
    ]
    checks = scale_checks_default(small, big) if n <= SCALE_DEFAULT else scale_checks_large(small, big)
    w = max(len(r[0]) for r in rows)
    print()
    print("Scale: one-page 2 MiB pools, %d rounds of each, interleaved between the two hosts, one keep-alive "
          "client each" % args.scale_rounds)
    print("%-*s  %-24s  %-24s  %s" % (w, "", "%d pools" % small["pools"], "%d pools" % n, "%d/%d" % (n, small["pools"])))
    for r in rows:
        print("%-*s  %-24s  %-24s  %s" % (w, r[0], r[1], r[2], r[3]))
    print()
    for label, ok in checks:
        print("%-44s %s" % (label, "PASS" if ok else "MISS"))
    res["scale_checks"] = {label: ok for label, ok in checks}


def run(args, mnt, res, cmdline):
    scale_phase(args, mnt, res)
    scale_report(args, res)
