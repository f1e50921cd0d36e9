#!/usr/bin/env python3
"""client.scheduler_real: the scheduler of tests/client/consumer.c, built
against the installed libhpwarm with pkg-config (install_check.sh), run
against a real hpwarmd on a copy of the two-node fixture (the fakekernel
shim; a tmpfs directory passes for the 2 MiB hugetlbfs, so pools really
warm).  consumer --exact checks placement by `available` to the page, fresh
error state, and a cancelled wait; this script then reads the daemon's own
request counters: every refusal was asked exactly once (no retry of the
409 nor of the permanent 503), and no pool is left behind.

Usage: run_scheduler_real.py BUILD_CLIENT_DIR SOURCE_TESTS_CLIENT_DIR
(HPWARMD, HPW_FIXTURES and HPW_FAKEKERNEL from ctest's environment)"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from hpwtest import Daemon  # noqa: E402


def requests_seen(d, method, route, status):
    """hpwarmd_http_requests_total for one route template, method and status
    code (0: the daemon has counted none)."""
    series = 'hpwarmd_http_requests_total{route="%s",method="%s",code="%d"} ' % (route, method, status)
    for line in d.request("GET", "/metrics").body.decode().splitlines():
        if line.startswith(series):
            return int(line.split()[-1])
    return 0


def main():
    build, src = sys.argv[1], sys.argv[2]
    shm = tempfile.mkdtemp(prefix="hpwarm-sched-", dir="/dev/shm")
    failures = []
    try:
        d = Daemon("two-node", env={"HPW_FAKE_HUGETLBFS_2M": shm}, args=["--hugetlbfs", "2M=" + os.path.join(shm, "pools")])
        # Node 0: 40 pages free, 3 reserved by a mapping of someone else
        # (global resv_hugepages): 37 available.  Node 1: none free.
        d.write_file("devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages", "64\n")
        d.write_file("devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", "40\n")
        d.write_file("devices/system/node/node1/hugepages/hugepages-2048kB/free_hugepages", "0\n")
        d.write_file("kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "3\n")
        with d:
            url = "127.0.0.1:%d" % d.port     # as an operator types it: hpw_new takes HOST:PORT
            env = dict(os.environ, REAL_URL=url)
            r = subprocess.run(["sh", os.path.join(src, "install_check.sh"), build, src], env=env,
                               capture_output=True, text=True, timeout=240)
            sys.stdout.write(r.stdout)
            sys.stderr.write(r.stderr)
            if r.returncode != 0:
                failures.append("install_check.sh with REAL_URL exited %d" % r.returncode)
            if "37 available pages on node 0" not in r.stdout:
                failures.append("the consumer did not place on node 0's 37 available pages")
            route = "/v1/pools/{name}"
            for status, what in ((409, "the refused pool one page over available"),
                                 (503, "the 1G pool no hugetlbfs serves")):
                n = requests_seen(d, "PUT", route, status)
                if n != 1:
                    failures.append("%s was asked %d times, not once (a permanent refusal is not retried)" % (what, n))
            left = d.request("GET", "/v1/pools").json
            pools = left.get("pools", left) if isinstance(left, dict) else left
            if pools:
                failures.append("pools left behind: %r" % pools)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    print("%s" % ("ok" if not failures else "%d failures" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
