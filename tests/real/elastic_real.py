"""Elastic pools on the real kernel, 2 MiB pages on node 0.

This process first maps OWN pages of its own (MAP_HUGETLB, written: in use
by the kernel's count) with a pattern in each.  hpwarmd starts with
`--elastic 0:2M:0:MAX:HEADROOM:IDLE` and then:

- a pool created beyond what is free grows node 0's pool by itself (no
  "reserve"), and warms to ready;
- a stock target's refill grows it too, and its file keeps its pages;
- a pool that needs more than max is 409 insufficient-hugepages naming the
  max, and nr_hugepages does not move; a max beyond the memory floor is 409
  insufficient-memory;
- after the pool is deleted and idle_seconds pass, nr_hugepages falls back
  to what is in use (our pages, the stock file) + headroom, and a warm
  admitted right after the delete, while the give-back is due, still warms
  to ready;
- our own pages keep their data through every shrink;
- the policy survives a restart (without --elastic), and DELETE makes the
  pool static; `hpwarm reserve --elastic` and `hpwarm nodes` do the same
  through the CLI.

Every wait polls with a generous bound; the verdicts are counts, not times.
Runs under tests/real/guard.sh (lock, counts restored, private hugetlbfs)."""
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from hpwtest import Daemon  # noqa: E402

PAGE = 2 << 20
NODE0 = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/"
OWN = 4
MAX = 64
HEADROOM = 2
IDLE = 2
MAP_HUGETLB = 0x40000
MAP_HUGE_2MB = 21 << 26
POLICY = "/v1/nodes/0/hugepages/2M/policy"


def read(path):
    with open(path) as f:
        return int(f.read())


def nr():
    return read(NODE0 + "nr_hugepages")


def in_use():
    return nr() - read(NODE0 + "free_hugepages")


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok", what, flush=True)


def poll(fn, what, bound=120):
    end = time.monotonic() + bound
    while time.monotonic() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("never: " + what)


def own_intact(m):
    return all(m[i * PAGE:i * PAGE + 8] == b"own-%04d" % i for i in range(OWN))


def main():
    mnt = os.environ.get("HPW_TEST_HUGETLBFS")
    cli = os.environ.get("HPWARM_CLI")
    if not mnt:
        print("SKIP: not under tests/real/guard.sh")
        return 77
    # Only our own pages to start with: nothing else in the pool.
    with open(NODE0 + "nr_hugepages", "w") as f:
        f.write("%d\n" % OWN)
    if nr() != OWN or in_use() != 0:
        print("SKIP: node 0 has %d pages, %d in use; wanted %d free" % (nr(), in_use(), OWN))
        return 77
    own = mmap.mmap(-1, OWN * PAGE, flags=mmap.MAP_SHARED | MAP_HUGETLB | MAP_HUGE_2MB)
    for i in range(OWN):
        own[i * PAGE:i * PAGE + 8] = b"own-%04d" % i
    check(in_use() == OWN and nr() == OWN, "our %d MAP_HUGETLB pages are in use" % OWN)

    pool_dir = os.path.join(mnt, "hpwarm-elastic-%d" % os.getpid())
    state = tempfile.mkdtemp(prefix="hpwarm-elastic-state-")
    base = ["--hugetlbfs", "2M=" + pool_dir]
    d = Daemon(sysfs_root="/sys", preload=False, state_dir=state,
               args=base + ["--elastic", "0:2M:0:%d:%d:%d" % (MAX, HEADROOM, IDLE)])
    try:
        d.start()
        r = d.get(POLICY)
        check(r.status == 200 and r.json["max"] == MAX and r.json["runtime_growth"] == "reliable",
              "--elastic set the policy: %s" % r.json)

        # Grow on demand.
        r = d.put("/v1/pools/a", {"node": 0, "size": "32M"})
        check(r.status == 201, "a pool of 16 pages beyond the %d free: %d %s" % (0, r.status, r.json))
        check(nr() >= OWN + 16, "node 0 grew by itself: nr_hugepages %d" % nr())
        w = d.get("/v1/pools/a?wait=ready&timeout=120", timeout=130)
        check(w.json["state"] == "ready", "it warms to ready (%s)" % w.json.get("state"))
        r = d.get(POLICY)
        check(r.json["last"]["action"] == "grown" and r.json["grown_pages"] >= 16,
              "GET policy says it grew: %s" % r.json["last"])

        # A stock refill grows the pool as well; its file keeps its pages.
        r = d.put("/v1/stock", {"targets": [{"node": 0, "size": "4M", "count": 1}]})
        check(r.status == 200, "a stock target of one 4M file: %d" % r.status)
        poll(lambda: d.get("/v1/stock").json["targets"][0]["ready"] == 1, "the stock file is ready")
        check(True, "the stock file is ready (nr_hugepages %d)" % nr())

        # Beyond max: a clear 409, nothing written.
        before = nr()
        r = d.put("/v1/pools/big", {"node": 0, "size": "%dM" % (2 * (MAX + 1))})
        check(r.status == 409 and r.json["type"].endswith(":insufficient-hugepages") and
              "max of %d pages" % MAX in r.json["detail"], "a pool beyond max: %d %s" % (r.status, r.json))
        check(nr() == before, "nr_hugepages unchanged by the refusal (%d)" % nr())
        r = d.put(POLICY, {"min": 0, "max": 1 << 30, "headroom": 0, "idle_seconds": 1})
        check(r.status == 409 and r.json["type"].endswith(":insufficient-memory") and "max_count" in r.json,
              "a max beyond the memory floor: %d %s" % (r.status, r.json.get("type")))
        check(d.get(POLICY).json["max"] == MAX, "the refused policy changed nothing")

        # Delete, and warm again at once while a give-back may be due.
        check(d.request("DELETE", "/v1/pools/a").status == 204, "DELETE a")
        r = d.put("/v1/pools/w", {"node": 0, "size": "8M"})
        check(r.status == 201, "a warm admitted right after the delete: %d" % r.status)
        w = d.get("/v1/pools/w?wait=ready&timeout=120", timeout=130)
        check(w.json["state"] == "ready", "it is not starved by the give-back: %s %s"
              % (w.json.get("state"), w.json.get("error")))
        check(d.request("DELETE", "/v1/pools/w").status == 204, "DELETE w")
        want = OWN + 2 + HEADROOM   # our pages, the stock file's, the headroom
        # The daemon records a give-back once its last step is written, so
        # sysfs can show the new count a moment before GET policy says why:
        # wait for both, as an operator reading the API would.
        poll(lambda: nr() == want and (d.get(POLICY).json["last"] or {}).get("action") == "returned",
             "nr_hugepages falls back to %d and GET policy records the give-back" % want)
        check(in_use() == OWN + 2, "in use after the give-back: our %d pages and the stock file's 2 (%d)"
              % (OWN, in_use()))
        check(own_intact(own), "our own pages kept their data through the shrinks")
        st = d.get("/v1/stock").json["targets"][0]
        check(st["ready"] == 1, "the stock target keeps its file: %s" % st)
        r = d.get(POLICY).json
        check(r["last"]["action"] == "returned" and r["returned_pages"] > 0,
              "GET policy says what it gave back and why: %s" % r["last"])
        time.sleep(IDLE * 2)
        check(nr() == want, "no further give-back below in use + headroom (%d)" % nr())

        # Restart without --elastic: the journal keeps the policy.
        check(d.stop() == 0, "stop")
        d.args = base
        d.start()
        r = d.get(POLICY)
        check(r.status == 200 and r.json["max"] == MAX and r.json["headroom"] == HEADROOM,
              "the policy survived a restart: %s" % r.json)
        check(d.request("DELETE", POLICY).status == 204, "DELETE the policy")
        check(d.get(POLICY).status == 404, "the pool is static")
        if cli:
            u = ["--url", "http://127.0.0.1:%d" % d.port]
            p = subprocess.run([cli, *u, "reserve", "0", "2M", "--elastic", "--max", "32", "--idle", "5"],
                               capture_output=True, text=True)
            check(p.returncode == 0 and "elastic, 0..32 pages" in p.stdout, "hpwarm reserve --elastic: %s%s"
                  % (p.stdout, p.stderr))
            p = subprocess.run([cli, *u, "nodes"], capture_output=True, text=True)
            check("0..32" in p.stdout, "hpwarm nodes shows the bounds:\n" + p.stdout)
        check(d.put("/v1/stock", {"targets": []}).status == 200, "stock cleared")
        check(own_intact(own), "our own pages still hold their data")
    finally:
        d.__exit__()
        own.close()
        shutil.rmtree(pool_dir, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
