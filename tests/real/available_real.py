"""`available` on the real kernel: a mapping that reserves hugepages
without faulting them (MAP_HUGETLB, never touched: resv_hugepages rises,
free_hugepages does not) is taken off what a new pool can get.

Node 0 gets TOTAL 2 MiB pages.  With the daemon idle, node 0's `available`
(GET /v1/nodes and the metrics) is free - resv_hugepages; after this process
maps HELD pages it drops by exactly HELD; a pool of exactly `available`
pages is admitted and warms to ready (the kernel gave every page), one page
more is refused 409 `insufficient-hugepages` by admission (its detail
names the HELD reserved pages), not by a failed mmap.  On a host with more
than one node the same numbers hold for node 0, since every node has all
foreign reservations taken off (docs/API-CONTRACT.md).

Runs under tests/real/guard.sh (lock, restore counts, private hugetlbfs);
skips (77) outside it or when the kernel will not give the pages."""
import mmap
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from hpwreal import guarded_daemon  # noqa: E402

PAGE = 2 << 20
GLOBAL = "/sys/kernel/mm/hugepages/hugepages-2048kB/"
TOTAL = 64
HELD = 8
MAP_HUGETLB = 0x40000        # <linux/mman.h>; Python's mmap module does not name it
MAP_HUGE_2MB = 21 << 26      # MAP_HUGE_SHIFT 26: the page size, whatever the default is


def read(path):
    with open(path) as f:
        return int(f.read())


def available(d):
    nodes = d.get("/v1/nodes").json["nodes"]
    hp = [h for h in nodes[0]["hugepages"] if h["page_size_bytes"] == PAGE][0]
    return hp["free"], hp["available"]


def metric_available(d):
    text = d.get("/metrics").body.decode()
    m = re.search(r'hpwarmd_hugepages_bytes\{numa_node="0",page_size_bytes="%d",state="available"\} (\d+)'
                  % PAGE, text)
    if not m:
        raise AssertionError("no available sample for node 0 in /metrics")
    return int(m.group(1)) // PAGE


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok", what)


def main():
    setup = guarded_daemon(TOTAL, "available")
    if not setup:
        return 77
    pool_dir, state, d = setup
    held = None
    try:
        d.start()
        resv0 = read(GLOBAL + "resv_hugepages")
        free0, avail0 = available(d)
        check(avail0 == free0 - resv0, "idle: available %d = free %d - resv_hugepages %d" % (avail0, free0, resv0))

        held = mmap.mmap(-1, HELD * PAGE, flags=mmap.MAP_SHARED | MAP_HUGETLB | MAP_HUGE_2MB)
        resv1 = read(GLOBAL + "resv_hugepages")
        check(resv1 == resv0 + HELD, "an untouched MAP_HUGETLB mapping of %d pages: resv_hugepages %d -> %d"
              % (HELD, resv0, resv1))
        free1, avail1 = available(d)
        check(free1 == free0, "free_hugepages unchanged by the reservation (%d)" % free1)
        check(avail1 == avail0 - HELD, "available drops by the %d reserved pages: %d -> %d"
              % (HELD, avail0, avail1))
        check(metric_available(d) == avail1, "metrics state=\"available\" says %d too" % avail1)

        r = d.put("/v1/pools/over", {"node": 0, "size": "%dM" % (2 * (avail1 + 1))})
        check(r.status == 409 and r.json["type"].endswith(":insufficient-hugepages"),
              "a pool of available + 1 = %d pages: %d %s" % (avail1 + 1, r.status, r.json.get("type")))
        check("%d reserved by mappings not yet faulted" % HELD in r.json["detail"],
              "refused by admission, which names the reserved pages: %s" % r.json["detail"])
        r = d.get("/v1/pools/over")
        check(r.status == 404, "the refused pool does not exist (%d)" % r.status)

        r = d.put("/v1/pools/exact", {"node": 0, "size": "%dM" % (2 * avail1)})
        check(r.status == 201, "a pool of exactly available = %d pages: %d" % (avail1, r.status))
        w = d.get("/v1/pools/exact?wait=ready&timeout=120", timeout=130)
        check(w.status == 200 and w.json["state"] == "ready",
              "it warms to ready (%s, error %s)" % (w.json.get("state"), w.json.get("error")))
        _, avail2 = available(d)
        check(avail2 == 0, "nothing is available after it (%d)" % avail2)
        check(d.request("DELETE", "/v1/pools/exact").status == 204, "DELETE exact")
    finally:
        if held is not None:
            held.close()
        d.__exit__()
        shutil.rmtree(pool_dir, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
    resv_end = read(GLOBAL + "resv_hugepages")
    check(resv_end == resv0, "resv_hugepages back to %d after unmapping (%d)" % (resv0, resv_end))
    return 0


if __name__ == "__main__":
    sys.exit(main())
