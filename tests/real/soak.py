"""A bounded randomized churn on the real kernel, with kill -9 restarts and
the invariants checked after every restart and at the end:

- no leaked hugepage: once every pool is deleted and the stock emptied,
  node 0's free_hugepages is back where it started and the pool dir holds
  no file;
- the journal equals the files: every journal row that holds a file has
  it, every file in the pool dir has a row;
- every acknowledged pool is present (a 201 survives any kill), and every
  acknowledged DELETE stays deleted;
- no dirty hand-out: a pool answered from_stock "full" reads back all zero,
  although the pools released into the stock were written by their VMs;
- owners' exits honoured: a pool claimed by a process that has exited is
  released (at once, or at the next start if the kill came first).

The churn: creates (some of the stock's size, so hand-outs), deletes, and
claims by short-lived processes that map their pool, write it all, claim
it with their pid and exit; between epochs the daemon is killed with
SIGKILL (now and then SIGTERM), sometimes while warms or zeroing run.

Runs under tests/real/guard.sh (lock, counts restored, private hugetlbfs).
One seed drives every choice; it is printed first and on failure; replay
with HPW_CRASH_SEED=<seed>.  ctest (real.soak) runs it for --seconds 45;
the long run is a bench mode: tests/bench/bench.py --soak MINUTES."""
import argparse
import mmap
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import hpwjournal  # noqa: E402
from hpwreal import PAGE, STOCK_PREFIX, CrashLoop, Failure, check, node0, run_crash_loop  # noqa: E402

PAGES = 192                       # reserved on node 0 for the run (384 MiB)
STOCK_MIB, STOCK_COUNT = 8, 2
SIZES_MIB = (4, 8, 8, 16, 24)     # 8 is the stock's: those PUTs may be hand-outs
MAX_LIVE = 6                      # pools alive at once: 6 * 24 + stock, well inside PAGES
OPS_PER_EPOCH = (5, 40)
SETTLE_TIMEOUT_S = 30
PATTERN = 0xa5
# Row states whose file exists (pool_state.c); the rest hold none.
FILE_STATES = ("warming", "ready", "stock_warming", "stock", "dirty", "recycling")


class Soak(CrashLoop):
    STATE_PREFIX = "hpwarm-soak-state-"

    def __init__(self, mnt, seed):
        super().__init__(mnt, seed)
        self.acked = {}           # name -> size in bytes: answered 201, not deleted since
        self.deleted = set()      # answered 204 (and not created again since)
        self.exited = set()       # claimed by a process that has exited since
        self.seq = 0
        self.n = dict(ops=0, created=0, refused=0, deleted=0, claims=0, handouts=0, zero_checked=0,
                      restarts=0, sigterm=0)

    # -- the daemon --
    def start(self):
        super().start()
        self.n["restarts"] += 1

    def settle(self, when):
        """Warms done and the stock at its target with nothing recycling:
        the daemon is quiet, its files and journal can be compared."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            pools = self.pools()
            r = self.d.get("/v1/stock")
            check(r.status == 200, "%s: GET /v1/stock: %r" % (when, r))
            t = r.json["targets"]
            warming = [p for p in pools.values() if p["state"] == "warming"]
            # The run's pools never fill node 0 (MAX_LIVE), so the stock
            # always has room to reach its target.
            quiet = not t or (t[0]["warming"] == 0 and t[0]["recycling"] == 0 and t[0]["ready"] == STOCK_COUNT)
            gone = [n for n in self.exited if n in pools]
            if not warming and quiet and not gone:
                return pools
            check(time.monotonic() < deadline, "%s: not quiet after %ds: warming %s, stock %s, pools of exited "
                  "owners still there %s" % (when, SETTLE_TIMEOUT_S, [p["name"] for p in warming], t, gone))
            time.sleep(0.02)

    # -- invariants --
    def check_all(self, when):
        self.check_journal(when)
        pools = self.settle(when)
        for name in self.acked:
            p = pools.get(name)
            check(p is not None, "%s: pool %s was answered 201 and is gone" % (when, name))
            check(p["state"] == "ready", "%s: pool %s is %s: %s" % (when, name, p["state"], p.get("error")))
        for name in self.deleted:
            check(name not in pools, "%s: pool %s was deleted (204) and is back" % (when, name))
        for name in self.exited:
            check(name not in pools, "%s: pool %s's owner exited and the pool is still there" % (when, name))
        rows = {r["name"]: r for r in hpwjournal.read(self.state)["pools"]}
        files = self.files()
        for name, r in rows.items():
            if r["state"] in FILE_STATES:
                check(name in files, "%s: journal row %s (%s) has no file" % (when, name, r["state"]))
        for f in files:
            check(f in rows and rows[f]["state"] in FILE_STATES,
                  "%s: file %s has no journal row that holds a file (%s); rows %s, files %s, stock %s, pools %s"
                  % (when, f, rows.get(f), sorted((n, r["state"]) for n, r in rows.items()), sorted(files),
                     self.d.get("/v1/stock").json, sorted((p["name"], p["state"]) for p in self.pools().values())))
        return pools

    # -- operations --
    def create(self, when):
        if len(self.acked) >= MAX_LIVE:
            return
        mib = self.rng.choice(SIZES_MIB)
        name = "s%d" % self.seq
        self.seq += 1
        r = self.d.put("/v1/pools/" + name, {"node": 0, "size": "%dM" % mib, "threads": 1})
        if r.status == 409 and (r.json or {}).get("type", "").endswith(":insufficient-hugepages"):
            self.n["refused"] += 1
            return
        check(r.status == 201, "%s: PUT %s (%d MiB): %r" % (when, name, mib, r))
        self.acked[name] = mib << 20
        self.n["created"] += 1
        if r.json.get("from_stock") == "full":
            self.n["handouts"] += 1
            self.check_zero(r.json["path"], mib << 20, "%s: hand-out %s" % (when, name))

    def check_zero(self, path, size, when):
        fd = os.open(path, os.O_RDONLY)
        try:
            with mmap.mmap(fd, size, prot=mmap.PROT_READ) as m:
                zero = bytes(PAGE)
                for off in range(0, size, PAGE):
                    if m[off:off + PAGE] != zero:
                        raise Failure("%s: %s is not all zero at offset %d" % (when, path, off))
        finally:
            os.close(fd)
        self.n["zero_checked"] += 1

    def delete(self, when):
        if not self.acked:
            return
        name = self.rng.choice(sorted(self.acked))
        r = self.d.request("DELETE", "/v1/pools/" + name)
        check(r.status == 204, "%s: DELETE %s: %r" % (when, name, r))
        del self.acked[name]
        self.deleted.add(name)
        self.n["deleted"] += 1

    def claim_by_process(self, when):
        """A VMM's life: it maps its pool, writes every byte, is bound to
        the pool by a claim with its pid, and exits."""
        if not self.acked:
            return
        name = self.rng.choice(sorted(self.acked))
        r = self.d.get("/v1/pools/%s?wait=ready&timeout=%d" % (name, SETTLE_TIMEOUT_S), timeout=SETTLE_TIMEOUT_S + 10)
        check(r.status == 200 and r.json["state"] == "ready", "%s: pool %s not ready: %r" % (when, name, r))
        if r.json.get("claimed"):
            return
        size, path = self.acked[name], r.json["path"]
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(ready_r)
                os.close(go_w)
                fd = os.open(path, os.O_RDWR)
                m = mmap.mmap(fd, size)
                m.write(bytes([PATTERN]) * size)
                os.write(ready_w, b"x")
                os.read(go_r, 1)
                code = 0
            finally:
                os._exit(code)
        os.close(ready_w)
        os.close(go_r)
        try:
            check(os.read(ready_r, 1) == b"x", "%s: the process for %s could not write its pool" % (when, name))
            r = self.d.request("POST", "/v1/pools/%s/claim" % name, {"pid": pid})
            check(r.status == 200 and r.json.get("owner_pid") == pid, "%s: claim %s by %d: %r" % (when, name, pid, r))
        finally:
            os.close(go_w)            # the VMM exits
            os.close(ready_r)
            _, status = os.waitpid(pid, 0)
        check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
              "%s: the process for %s failed (status %d)" % (when, name, status))
        del self.acked[name]
        self.exited.add(name)
        self.n["claims"] += 1

    def epoch(self, i):
        when = "epoch %d" % i
        self.start()
        self.check_all(when + " after restart")
        # The target set by the first epoch persists in the journal.
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "size": "%dM" % STOCK_MIB, "count": STOCK_COUNT}]})
        check(r.status == 200, "%s: PUT /v1/stock: %r" % (when, r))
        ops = (self.create, self.create, self.delete, self.claim_by_process)
        for _ in range(self.rng.randint(*OPS_PER_EPOCH)):
            self.rng.choice(ops)(when)
            self.n["ops"] += 1
        if self.rng.random() < 0.15:
            check(self.d.stop() == 0, "%s: hpwarmd did not exit 0 on SIGTERM" % when)
            self.d.__exit__()
            self.n["sigterm"] += 1
        else:
            time.sleep(self.rng.choice([0, self.rng.uniform(0, 0.01), self.rng.uniform(0, 0.2)]))
            self.kill9()


def run(seconds):
    def body(loop, free0, t0):
        i = 0
        while time.monotonic() - t0 < seconds:
            loop.epoch(i)
            i += 1
        loop.start()
        loop.check_all("final restart")
        for name in sorted(loop.acked):
            r = loop.d.request("DELETE", "/v1/pools/" + name)
            check(r.status == 204, "final DELETE %s: %r" % (name, r))
        r = loop.d.put("/v1/stock", {"targets": []})
        check(r.status == 200, "emptying the stock: %r" % r)
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while any(f.startswith(STOCK_PREFIX) for f in loop.files()) and time.monotonic() < deadline:
            time.sleep(0.02)
        check(node0("nr_hugepages") == PAGES, "node 0 has %d pages, the run set %d" % (node0("nr_hugepages"), PAGES))
        loop.check_all_gone(free0, "deleting every pool and emptying the stock")
        n = loop.n
        return ("%d epochs, %d operations, %d restarts (%d kill -9, %d SIGTERM); %d pools created, %d refused, "
                "%d deleted, %d claimed by processes that then exited; %d hand-outs from stock, %d read back "
                "all zero; 0 violations" % (i, n["ops"], n["restarts"], loop.kills, n["sigterm"], n["created"],
                                            n["refused"], n["deleted"], n["claims"], n["handouts"],
                                            n["zero_checked"]))
    return run_crash_loop("soak", PAGES, Soak, body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=45, help="churn for this long, then the final checks")
    ap.add_argument("--minutes", type=float, help="the same in minutes (the long run)")
    a = ap.parse_args()
    return run(a.minutes * 60 if a.minutes else a.seconds)


if __name__ == "__main__":
    sys.exit(main())
