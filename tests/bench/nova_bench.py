#!/usr/bin/env python3
"""A Nova server on warm memory against the same server booted cold, side
by side in one cloud (tests/openstack/nova_cloud.py: Debian's Nova,
Placement, Glance, RabbitMQ, two compute hosts with private libvirtds).

Two flavors of SIZE RAM on 2 MiB pages (hw:mem_page_size=2MB):
  warm  with resources:CUSTOM_HPWARM_2M=SIZE/2MiB: Placement sends it to
        host "warm", whose hpwarmd keeps one stock file of SIZE and whose
        libvirt hook (policy hugepages) hands it the file;
  cold  the same flavor without the resource, on host "cold" (an admin's
        choice of host), whose hook leaves Nova's domains alone (policy
        metadata): libvirt starts QEMU with prealloc=on and QEMU faults in
        (the kernel zeroes) all of SIZE before the guest runs: Nova's own
        hugepage boot, the strongest reference there is without hpwarm.
Each round boots one of each (alternating which goes first) and measures,
from POST /servers: ACTIVE (the first GET that says so, polled every
50 ms) and the guest's first console line (console.log, which libvirt's
virtlogd writes as the guest prints; the guest's /init prints one line at
once).  Then both servers are deleted and the run waits until the warm
host's stock is whole again and every page is back, so each boot finds
the host as the last one did.  A first round of each is a warm-up, not
counted (the first touch of memory on these virtual machines is many times
slower than later ones).

Prints per round, then the medians and the ratios cold / warm.  Exit 0 when
every server booted, 1 when one did not, 2 on bad usage, 77 without the
packages, QEMU or the guest kernel, or not under tests/real/guard.sh (run it
as `tests/real/guard.sh /usr/bin/python3 THIS ...`).  The figures and the
command are in docs/PERFORMANCE.md."""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from hpwbench.harness import BenchError, parse_size, reserve_beyond_use  # noqa: E402

MIB = 1 << 20


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=parse_size, default=parse_size("2G"), help="guest RAM (default 2G)")
    ap.add_argument("--rounds", type=int, default=3, help="counted rounds (default 3)")
    ap.add_argument("--hpwarmd", required=True)
    ap.add_argument("--hpwarm", required=True)
    ap.add_argument("--guest-dir", required=True, help="tests/qemu's guest cache (build/tests/qemu/guest)")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds at least 1")
    if not os.environ.get("HPW_TEST_HUGETLBFS"):
        print("SKIP: run under tests/real/guard.sh", file=sys.stderr)
        return 77
    # The fixture reads these when it is imported.
    os.environ.update(HPWARMD=os.path.abspath(a.hpwarmd), HPWARM_CLI=os.path.abspath(a.hpwarm))
    sys.path.insert(0, os.path.join(HERE, "..", "openstack"))
    sys.path.insert(0, os.path.join(HERE, "..", "qemu"))
    import guestboot as gb
    import nova_cloud as nc
    tl = nc.tl
    why = nc.available()
    if why:
        print("SKIP: " + why, file=sys.stderr)
        return 77
    try:
        kernel, busybox = gb.fetch(a.guest_dir)
    except gb.Skip as e:
        print("SKIP: %s" % e, file=sys.stderr)
        return 77
    pages = a.size // tl.PAGE
    mib = a.size // MIB
    # The stock file, its refill while the warm guest runs, the cold guest,
    # and slack; set before the nova-computes start (they read it once).
    try:
        reserve_beyond_use(3 * pages + 16)
    except BenchError as e:
        print("SKIP: %s" % e, file=sys.stderr)
        return 77
    stock = "0:2M:%dM:1" % mib
    t_up = time.monotonic()
    with nc.Cloud(["warm", "cold"], stock={"warm": [stock]}, policy={"cold": "metadata"},
                  prefix="hpwarm-nova-bench-") as cloud:
        print("cloud up in %.0f s (Nova %s, two compute hosts)" % (time.monotonic() - t_up, nc.nova_version()))
        init = open(os.path.join(HERE, "..", "libvirt", "guest-init.sh")).read()
        initrd = gb.build_initramfs(busybox, os.path.join(cloud.tmp, "initrd.gz"), init=init)
        image = cloud.guest_image(os.path.realpath(kernel), initrd)
        flavors = {"warm": cloud.flavor("b.warm", mib, {"hw:mem_page_size": "2MB",
                                                        "resources:CUSTOM_HPWARM_2M": str(pages)}),
                   "cold": cloud.flavor("b.cold", mib, {"hw:mem_page_size": "2MB"})}
        warm_host = cloud.hosts["warm"]

        def settled():
            st = warm_host.env.daemon.get("/v1/stock").json["targets"]
            pools = warm_host.env.daemon.get("/v1/pools").json["pools"]
            return all(t["ready"] == t["count"] and t["warming"] == 0 and t["recycling"] == 0
                       for t in st) and not pools

        def boot(kind):
            t0 = time.monotonic()
            sid = cloud.create("bench-" + kind, image, flavors[kind], host=None if kind == "warm" else "cold")
            active = console = None
            s = None
            deadline = t0 + 300
            while (active is None or console is None) and time.monotonic() < deadline:
                now = time.monotonic()
                if active is None:
                    s = cloud.server(sid)
                    if s and s["status"] == "ERROR":
                        raise RuntimeError("%s server went to ERROR: %s" % (kind, s.get("fault")))
                    if s and s["status"] == "ACTIVE":
                        active = now - t0
                if s and s.get("OS-EXT-SRV-ATTR:host") and console is None and "\n" in cloud.console(s):
                    console = now - t0
                time.sleep(0.05)
            if active is None or console is None:
                raise RuntimeError("%s server: ACTIVE %s, console %s within 300 s" % (kind, active, console))
            if kind == "warm":
                p = warm_host.env.daemon.get("/v1/pools/" + s["OS-EXT-SRV-ATTR:instance_name"]).json
                if s["OS-EXT-SRV-ATTR:host"] != "warm" or p.get("from_stock") != "full":
                    raise RuntimeError("the warm server did not take the stock file: %s %s" % (
                        s["OS-EXT-SRV-ATTR:host"], p))
            return sid, active, console

        res = {"warm": [], "cold": []}
        ok = True
        try:
            for r in range(a.rounds + 1):
                order = ("warm", "cold") if r % 2 == 0 else ("cold", "warm")
                line = []
                for kind in order:
                    deadline = time.monotonic() + 120
                    while not settled() and time.monotonic() < deadline:
                        time.sleep(0.2)
                    sid, active, console = boot(kind)
                    cloud.delete(sid)
                    if r > 0:
                        res[kind].append((active, console))
                    line.append("%s ACTIVE %.2f s, console %.2f s" % (kind, active, console))
                print("%s %s" % ("warm-up" if r == 0 else "round %d" % r, "; ".join(line)), flush=True)
        except (RuntimeError, AssertionError) as e:
            print("FAILED: %s" % e, file=sys.stderr)
            ok = False
        if ok:
            med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
                   for k, v in res.items()}
            print("\nNova server of %d MiB on 2 MiB pages, medians of %d rounds:" % (mib, a.rounds))
            print("%-34s %10s %10s %8s" % ("", "warm", "cold", "cold/warm"))
            for i, what in enumerate(("create -> ACTIVE (s)", "create -> first console line (s)")):
                print("%-34s %10.2f %10.2f %7.2fx" % (what, med["warm"][i], med["cold"][i],
                                                       med["cold"][i] / med["warm"][i]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
