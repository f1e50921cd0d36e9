"""Crash safety of stock hand-outs on the real kernel: a pool answered 201
from stock survives a kill -9 that lands right after the answer (the journal
holds it before it is shown), and a kill during a hand-out or during the
refill it starts leaves nothing unaccounted for.

Each round starts the daemon on the same state dir and pool dir, checks the
invariants, waits until the stock target (2 files of 16 MiB) is met, hands
out one or two pools from it (sometimes killing the daemon while a hand-out
is in flight), then kills the daemon with SIGKILL after a random short
delay: at once, within the refill's start (file, job, save), or later.  After
every restart:

- state.json parses as JSON;
- every pool answered 201 is there, ready, from_stock "full", and its path
  is the very file the answer named (same inode, so the hand-out was a
  rename, not a new warm);
- every file in the pool dir belongs to a pool or a stock file the daemon
  lists, and every warming or ready pool has its file;
- a hand-out cut short by the kill left either a ready pool or nothing.

At the end the stock is refilled to its target, every pool is deleted and the
target cleared: the pool dir is empty and node 0's free_hugepages is back
where it started.

Runs under tests/real/guard.sh (lock, restore counts, private hugetlbfs in
$HPW_TEST_HUGETLBFS); skips (77) outside it or when the kernel will not give
the pages.  Random choices come from one seed, printed first; rerun a failure
with HPW_CRASH_SEED=<seed>."""
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import hpwjournal  # noqa: E402
from hpwreal import STOCK_PREFIX, CrashLoop, Failure, check, run_crash_loop  # noqa: E402

PAGES = 80                        # reserved on node 0 for the test (160 MiB)
FILE_MIB = 16
STOCK_COUNT = 2
MAX_POOLS = 2                     # alive at once: 2 pools + 2 stock files + 2 refills = 96 MiB
ITERATIONS = 40
TIME_BUDGET_S = 90
SETTLE_TIMEOUT_S = 30


class Loop(CrashLoop):
    STATE_PREFIX = "hpwarm-stockcrash-state-"

    def __init__(self, mnt, seed):
        super().__init__(mnt, seed)
        self.answered = {}        # pool name -> inode of the file its 201 named
        self.maybe = set()        # hand-outs cut by the kill: a ready pool or nothing
        self.handed = self.cut = 0

    def pool_body(self):
        return {"node": 0, "size": "%dM" % FILE_MIB, "page_size": "2M", "threads": 1}

    def stock(self):
        r = self.d.get("/v1/stock")
        check(r.status == 200, "GET /v1/stock: %r" % r)
        return r.json["targets"]

    def check_consistent(self, when):
        self.check_journal(when)
        pools = self.pools()
        for name, ino in self.answered.items():
            p = pools.get(name)
            check(p is not None, "%s: pool %s was answered 201 from stock and is gone (pools: %s)"
                  % (when, name, sorted(pools)))
            check(p["state"] == "ready" and p.get("from_stock") == "full",
                  "%s: pool %s is %s, from_stock %s" % (when, name, p["state"], p.get("from_stock")))
            check(os.path.exists(p["path"]) and os.stat(p["path"]).st_ino == ino,
                  "%s: pool %s's file %s is not the file its 201 named" % (when, name, p["path"]))
        recorded = {os.path.basename(p["path"]) for p in pools.values()}
        for f in self.files():
            if not f.startswith(STOCK_PREFIX):
                check(f in recorded, "%s: %s is in the pool dir but no pool owns it (pools: %s)"
                      % (when, f, sorted(pools)))
        for p in pools.values():
            if p["state"] in ("warming", "ready"):
                check(os.path.exists(p["path"]), "%s: %s pool %s has no file" % (when, p["state"], p["name"]))
        return pools

    def check_stock_files(self, when):
        """The stock at its target and quiet: its files are exactly the
        journal's stock rows (none leaked by a kill, none recorded without
        its file)."""
        rows = {r["name"] for r in hpwjournal.read(self.state)["pools"] if r["name"].startswith(STOCK_PREFIX)}
        files = {f for f in self.files() if f.startswith(STOCK_PREFIX)}
        check(files == rows and len(rows) == STOCK_COUNT,
              "%s: stock files %s, journal stock rows %s" % (when, sorted(files), sorted(rows)))

    def wait_stock(self, when):
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while time.monotonic() < deadline:
            t = self.stock()
            if t and t[0]["ready"] == STOCK_COUNT and t[0]["warming"] == 0:
                self.check_stock_files(when)
                return
            time.sleep(0.01)
        raise Failure("%s: the stock did not reach %d ready files: %s" % (when, STOCK_COUNT, self.stock()))

    def hand_out(self, name, when):
        r = self.d.put("/v1/pools/" + name, self.pool_body())
        check(r.status == 201 and r.json["state"] == "ready" and r.json.get("from_stock") == "full",
              "%s: PUT %s from stock: %r" % (when, name, r))
        self.answered[name] = os.stat(r.json["path"]).st_ino
        self.handed += 1

    def hand_out_killed(self, name, when):
        """PUT NAME and kill -9 the daemon while it may still be answering."""
        got = {}

        def put():
            try:
                got["r"] = self.d.put("/v1/pools/" + name, self.pool_body(), timeout=10)
            except Exception as e:  # the kill cuts the connection
                got["e"] = e
        t = threading.Thread(target=put)
        t.start()
        time.sleep(self.rng.uniform(0, 0.004))
        self.kill9()
        t.join()
        r = got.get("r")
        if r is not None and r.status == 201:
            # Answered before the kill: it must survive like any other.
            try:
                self.answered[name] = os.stat(r.json["path"]).st_ino
            except OSError:
                raise Failure("%s: %s answered 201 but its file %s is gone" % (when, name, r.json["path"]))
            self.handed += 1
        else:
            self.cut += 1
            self.maybe.add(name)

    def round(self, i):
        self.start()
        when = "round %d after restart" % i
        pools = self.check_consistent(when)
        for name in sorted(self.maybe):
            p = pools.get(name)
            check(p is None or (p["state"] == "ready" and p.get("from_stock") == "full"),
                  "%s: a hand-out cut by kill -9 left pool %s %r" % (when, name, p))
            if p is not None:
                self.answered[name] = os.stat(p["path"]).st_ino
            self.maybe.discard(name)
        if i == 0:
            r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": "%dM" % FILE_MIB,
                                                      "count": STOCK_COUNT}]})
            check(r.status == 200, "PUT /v1/stock: %r" % r)
        # Room for the hand-outs of this round.
        names = list(self.answered)
        self.rng.shuffle(names)
        want = self.rng.randint(1, 2)
        while len(self.answered) > MAX_POOLS - want:
            name = names.pop()
            # Not recycled: this test is about hand-outs (real.stock_recycle
            # kills recycles), and the stock stays at its target.
            r = self.d.request("DELETE", "/v1/pools/%s?recycle=false" % name)
            check(r.status == 204, "%s: DELETE %s: %r" % (when, name, r))
            del self.answered[name]
        self.wait_stock(when)
        for k in range(want):
            name = "s%d-%d" % (i, k)
            if k == want - 1 and self.rng.random() < 0.3:
                self.hand_out_killed(name, "round %d" % i)
                return
            self.hand_out(name, "round %d" % i)
        time.sleep(self.rng.choice([0, self.rng.uniform(0, 0.002), self.rng.uniform(0, 0.02),
                                    self.rng.uniform(0, 0.2)]))
        self.kill9()


def rounds(loop, free0, t0):
    n = 0
    for i in range(ITERATIONS):
        if time.monotonic() - t0 > TIME_BUDGET_S:
            break
        loop.round(i)
        n += 1
    # Final: restart, everything is there, the stock comes back; then
    # remove it all and count the pages.
    loop.start()
    pools = loop.check_consistent("final restart")
    for name in loop.maybe:
        p = pools.get(name)
        check(p is None or p["state"] == "ready", "final: cut hand-out left %s %r" % (name, p))
    loop.wait_stock("final")
    for name in pools:
        r = loop.d.request("DELETE", "/v1/pools/%s?recycle=false" % name)
        check(r.status == 204, "final DELETE %s: %r" % (name, r))
    r = loop.d.put("/v1/stock", {"targets": []})
    check(r.status == 200, "final PUT /v1/stock []: %r" % r)
    loop.check_all_gone(free0, "removing everything")
    check(loop.handed > 0, "no hand-out was answered 201: the test tested nothing")
    return ("%d rounds, %d kill -9, %d hand-outs answered and kept, %d cut by the kill"
            % (n, loop.kills, loop.handed, loop.cut))


def main():
    return run_crash_loop("stock_crash", PAGES, Loop, rounds)


if __name__ == "__main__":
    sys.exit(main())
