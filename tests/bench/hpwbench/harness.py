"""What every mode of tests/bench/bench.py stands on: node 0's 2 MiB
hugepages (read, grown and read back), the helper binaries that print one
line of JSON (populate_ideal, recycle_bench, prio_bench), hpwarmd on a
loopback port with its requests, and the few statistics and table lines the
reports share.

A mode module (core, stock, gigantic, scale, busy, longrun) imports from
here, and from the phase modules it runs (qemu, recycle, prio), never from
another mode, so each mode can be read, and changed, on its own: what two
modes need goes here.  Nothing here prints
to stdout: the reports are the modes'; log() writes progress to stderr."""
import argparse
import http.client
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(os.path.dirname(HERE))
GUARD = os.path.join(REPO, "tests", "real", "guard.sh")
NODE0 = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/"
PAGE = 2 << 20
GIB = float(1 << 30)
# The targets README "Measured" states, on this 2-core machine: the warm
# against populate_ideal, at 2 MiB and at 1 GiB pages alike.
TARGET_A_OVER_B = 0.95
# Sleep before each timed stock or cold request, once the daemon is idle
# (the last commit's wake-ups done, the last log line written).
STOCK_SETTLE_S = 0.02
# A hugepage pool that is still growing (this VM adds memory to node 0 as it
# is demanded) gets this long to reach the count we asked for.
RESERVE_TIMEOUT_S = 60


class BenchError(Exception):
    pass


def parse_size(text):
    m = re.fullmatch(r"(\d+)\s*([kKmMgGtT]?)(i?[bB])?", text.strip())
    if not m:
        raise argparse.ArgumentTypeError("bad size %r" % text)
    n = int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[m.group(2).lower()]
    if n <= 0 or n % PAGE:
        raise argparse.ArgumentTypeError("size must be a positive multiple of 2 MiB")
    return n


def human(n):
    for unit, shift in (("GiB", 30), ("MiB", 20)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def log(msg):
    print("bench: " + msg, file=sys.stderr, flush=True)


def median(xs):
    return statistics.median(xs) if xs else None


def pctl(xs, q):
    """The value ranked ceil(q * n) from the lowest (nearest rank): never
    interpolated, so a p99 of fewer than 100 samples is their maximum."""
    xs = sorted(xs)
    return xs[min(len(xs), max(1, math.ceil(q * len(xs)))) - 1]


def paired(xs, ys):
    """The median of the per-round ratios ys / xs (rounds interleave the
    contenders, so a round's pair saw the same noise)."""
    return median([y / x for x, y in zip(xs, ys)])


def metric(text, name, labels=""):
    """The value of the sample NAME{LABELS} in the /metrics text TEXT; None
    when the daemon has no such sample."""
    sel = re.escape(name) + (re.escape("{" + labels + "}") if labels else "")
    m = re.search(r"^%s (\S+)$" % sel, text, re.M)
    return float(m.group(1)) if m else None


def check_lines(checks, miss="MISS"):
    """The "ratio / figure" table: one line per (name, value, target, op[,
    unit]) with PASS or MISS (the word a mode uses for a target not met);
    the unit defaults to "x", a ratio."""
    ops = {">=": lambda v, t: v >= t, "<=": lambda v, t: v <= t,
           "<": lambda v, t: v < t, ">": lambda v, t: v > t}
    out = ["%-58s %10s %10s %5s" % ("ratio / figure", "measured", "target", "")]
    for chk in checks:
        name, val, tgt, op = chk[:4]
        unit = " " + chk[4] if len(chk) > 4 else "x"
        out.append("%-58s %10s %10s %5s" % (name, "%.2f%s" % (val, unit), "%s %g%s" % (op, tgt, unit),
                                             "PASS" if ops[op](val, tgt) else miss))
    return out


def per_round_line(what, series):
    """One "WHAT per-round seconds: {...}" line, each series rounded to
    0.1 ms."""
    return what + "per-round seconds: " + json.dumps({k: [round(x, 4) for x in v] for k, v in series.items()})


def save_json(args, res):
    """The run's results as JSON in --json's file, when it names one."""
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)


# -- hugepages ---------------------------------------------------------------

def node0(leaf):
    with open(NODE0 + leaf) as f:
        return int(f.read().strip())


def reserve_node0(pages):
    """Write nr_hugepages until the kernel gives PAGES (node 0's memory may
    grow while we ask); return what it gave."""
    deadline = time.monotonic() + RESERVE_TIMEOUT_S
    while True:
        with open(NODE0 + "nr_hugepages", "w") as f:
            f.write("%d\n" % pages)
        got = node0("nr_hugepages")
        if got >= pages or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def reserve_beyond_use(pages):
    """Node 0 grown to PAGES more than the pages in use elsewhere; BenchError
    when the kernel gives fewer."""
    want = pages + node0("nr_hugepages") - node0("free_hugepages")
    got = reserve_node0(want)
    if got < want:
        raise BenchError("kernel gave only %d of %d 2 MiB pages on node 0" % (got, want))


# -- processes ---------------------------------------------------------------

def json_line(name, p):
    """The last stdout line of the finished helper P as JSON; BenchError
    when it failed or said "error"."""
    try:
        out = json.loads(p.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        out = {"error": "no JSON: %r %r" % (p.stdout[-200:], p.stderr[-200:])}
    if p.returncode != 0 or "error" in out:
        raise BenchError("%s: %s" % (name, out.get("error")))
    return out


def run_ideal(ideal, path, size, threads, spawn=False):
    t0 = time.perf_counter()
    p = subprocess.run([ideal] + (["--spawn"] if spawn else []) + [path, str(size), str(threads)],
                       capture_output=True, timeout=900)
    wall = time.perf_counter() - t0
    return json_line("populate_ideal", p)["elapsed_seconds"], wall


def run_helper(name, argv):
    """A helper that prints one line of JSON (recycle_bench, prio_bench)."""
    return json_line(name, subprocess.run(argv, capture_output=True, timeout=1800))


def rm(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def warmups(args, path, size, res, what=""):
    """First touch on this VM is slow: args.warmups passes of populate_ideal
    over SIZE at PATH (WHAT: the page size, for the log), their GiB/s in
    res["warmup_gib_s"]."""
    res["warmup_gib_s"] = []
    for i in range(args.warmups):
        el, _ = run_ideal(args.ideal, path, size, args.threads)
        rm(path)
        res["warmup_gib_s"].append(size / GIB / el)
        log("warm-up %d: %s%s at %.2f GiB/s" % (i + 1, human(size), what, size / GIB / el))


# -- the daemon --------------------------------------------------------------

class Daemon:
    def __init__(self, binary, pool_dir, threads, state=None, extra=()):
        """STATE: an existing state dir to start on (a restart), which stop()
        then leaves in place; None: a new one, removed by stop().  EXTRA:
        more hpwarmd options."""
        self.keep_state = state is not None
        self.state = state or tempfile.mkdtemp(prefix="hpwarm-bench-state-")
        cmd = [binary, "--listen", "127.0.0.1:0", "--allow-unauthenticated-tcp", "--state-dir", self.state,
               "--hugetlbfs", "2M=" + pool_dir, "--threads-per-node", str(threads)] + list(extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.log = []
        self.port = None
        ready = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace").rstrip("\n")
                self.log.append(line)
                m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
                if m and self.port is None:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()
        threading.Thread(target=drain, daemon=True).start()
        ready.wait(20)
        if self.port is None:
            self.stop()
            raise BenchError("hpwarmd did not start:\n" + "\n".join(self.log[-20:]))

    def connect(self, timeout=900):
        """A keep-alive connection, connected now (libhpwarm keeps one per
        handle: the PUT and the wait go over it)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        conn.connect()
        return conn

    def request(self, method, path, body=None, timeout=900, conn=None):
        """Over CONN (kept open), or over a connection of its own: the
        status and the JSON body (text for text/plain, None if empty)."""
        own = conn is None
        if own:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            hdrs = {}
            if body is not None:
                body = json.dumps(body).encode()
                hdrs["Content-Type"] = "application/json"
            conn.request(method, path, body=body, headers=hdrs)
            r = conn.getresponse()
            data = r.read()
            if r.getheader("content-type", "").startswith("text/plain"):
                return r.status, data.decode()      # /metrics
            return r.status, (json.loads(data) if data else None)
        finally:
            if own:
                conn.close()

    def put_pool(self, name, size, threads, conn=None, page_size="2M"):
        st, body = self.request("PUT", "/v1/pools/" + name,
                                {"node": 0, "size_bytes": size, "page_size": page_size, "threads": threads},
                                conn=conn)
        if st != 201:
            raise BenchError("PUT %s: %d %s" % (name, st, body))
        return body

    def wait_ready(self, name, conn=None):
        st, body = self.request("GET", "/v1/pools/%s?wait=ready&timeout=300" % name, conn=conn)
        if st != 200 or body.get("state") != "ready":
            raise BenchError("wait %s: %d %s" % (name, st, body))
        return body

    def delete(self, name, conn=None):
        st, body = self.request("DELETE", "/v1/pools/" + name, conn=conn)
        if st != 204:
            raise BenchError("DELETE %s: %d %s" % (name, st, body))

    def set_stock(self, size, count, conn=None):
        """Node 0's one 2 MiB stock target at COUNT files of SIZE (0: no
        target)."""
        targets = [{"node": 0, "page_size": "2M", "size_bytes": size, "count": count}] if count else []
        st, body = self.request("PUT", "/v1/stock", {"targets": targets}, conn=conn)
        if st != 200:
            raise BenchError("PUT /v1/stock: %d %s" % (st, body))

    def status(self):
        """VmRSS and VmHWM in bytes."""
        out = {}
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM"):
                    out[k] = int(v.split()[0]) * 1024
        return out

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.keep_state:
            shutil.rmtree(self.state, ignore_errors=True)


def warm_a(d, name, size, threads, keepalive=True, page_size="2M"):
    """PUT then ?wait=ready, timed.  KEEPALIVE: both over one connection
    made before the clock starts, as libhpwarm (the hpwarm CLI) does; else
    each over a connection of its own, made and closed inside the clock (the
    daemon then maps and unmaps a connection buffer mid-warm, which waits
    for the populates' mmap lock: the (a0) row)."""
    conn = d.connect() if keepalive else None
    try:
        t0 = time.perf_counter()
        d.put_pool(name, size, threads, conn=conn, page_size=page_size)
        p = d.wait_ready(name, conn=conn)
        wall = time.perf_counter() - t0
    finally:
        if conn:
            conn.close()
    if p.get("bytes_done") != size or not (p.get("placement") or {}).get("verified"):
        raise BenchError("pool %s not fully warm/verified: %s" % (name, p))
    return wall, p
