"""Concurrent creates with "reserve": true on the real kernel: none refused
while memory is plentiful, and the journal's recorded reservation equal to
the kernel's count afterwards.

Node 0 starts each round with BASE free 2 MiB pages; CONCURRENT PUTs of
POOL_MIB each ask for "reserve": true at once, so each create grows the
node while earlier ones still warm.  A page another warm is zeroing has left
free_hugepages but not yet shown in its file, so a reading just after a
growth may find the pool a page short: the create must grow again, not
answer 409 "even after growing the pool".  And a growth undone (the pool
refused after all) can only go back as far as the pages in use let it: the
journal must record what the kernel holds, not the count from before.
Before those fixes 3-5 PUTs of 40 were refused per round and the journal's
count differed from the kernel's by one or two pages.

A page being zeroed is the window, and a loaded CPU widens it: a worker
preempted while zeroing holds its page out of free_hugepages and out of
its file for milliseconds.  Idle, the race hid (6 of 6 green); with two
busy loops beside it, 3 of 8 runs had a 409.  So the test starts HOGS busy
loops of its own (one per CPU, at least two) for its whole run: each is
bounded by `timeout` and killed at the end, also when the test fails.

After all pools are ready: every PUT was 201, the journal records exactly
node 0's nr_hugepages, which is exactly what the pools hold (a page counted
twice grew the node by one more: seen in 6 of 9 rounds before admission
took the warms' need from resv_hugepages), and (after deleting them) no
pool file is left.

Runs under tests/real/guard.sh (lock, restore counts, private hugetlbfs);
skips (77) outside it or when the host lacks the memory."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import hpwjournal  # noqa: E402
from hpwreal import node0, pool_files, real_daemon, set_node0_pages  # noqa: E402

BASE = 8
CONCURRENT = 40
POOL_MIB = 32
ROUNDS = 3
READY_TIMEOUT_S = 60
# Busy loops beside the daemon: one per CPU, at least two.  Each dies by
# itself after HOG_MAX_S (the test's ctest TIMEOUT), should the test be
# killed before it can stop them.
HOGS = max(2, os.cpu_count() or 1)
HOG_MAX_S = 300


def start_hogs():
    hogs = []
    for _ in range(HOGS):
        hogs.append(subprocess.Popen(
            ["timeout", "-s", "KILL", str(HOG_MAX_S), "sh", "-c", "while :; do :; done"],
            stdin=subprocess.DEVNULL, start_new_session=True))
    return hogs


def stop_hogs(hogs):
    for h in hogs:
        try:
            os.killpg(h.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for h in hogs:
        h.wait()


def meminfo_kib(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def journal_count(state):
    rows = [r for r in hpwjournal.read(state).get("reservations", [])
            if r["node"] == 0 and r["page_size_bytes"] == 2 << 20]
    return rows[0]["count"] if rows else None


def one_round(d, state, rnd, failures):
    if set_node0_pages(BASE) != BASE or node0("free_hugepages") != BASE:
        failures.append("round %d: node 0 could not be set to %d free pages" % (rnd, BASE))
        return
    answers = [None] * CONCURRENT

    def put(i):
        answers[i] = d.put("/v1/pools/r%d-%d" % (rnd, i),
                           {"node": 0, "size": "%dM" % POOL_MIB, "reserve": True, "threads": 1}, timeout=120)
    threads = [threading.Thread(target=put, args=(i,)) for i in range(CONCURRENT)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    refused = [(i, a) for i, a in enumerate(answers) if a is None or a.status != 201]
    for i, a in refused:
        failures.append("round %d: PUT r%d-%d: %r" % (rnd, rnd, i, a))
    for i, a in enumerate(answers):
        if a is not None and a.status == 201:
            r = d.get("/v1/pools/r%d-%d?wait=ready&timeout=%d" % (rnd, i, READY_TIMEOUT_S),
                      timeout=READY_TIMEOUT_S + 10)
            if r.status != 200 or r.json["state"] != "ready":
                failures.append("round %d: r%d-%d not ready: %r" % (rnd, rnd, i, r))
    kernel, recorded = node0("nr_hugepages"), journal_count(state)
    if recorded != kernel:
        failures.append("round %d: the journal records %s pages for node 0, the kernel holds %d"
                        % (rnd, recorded, kernel))
    # Each growth asked for exactly what was missing: a page counted twice
    # (still needed and gone from free) grew the node by one too many.
    held = CONCURRENT * (POOL_MIB // 2)
    if not refused and kernel != max(BASE, held):
        failures.append("round %d: node 0 holds %d pages, its pools %d: grown by more than was missing"
                        % (rnd, kernel, held))
    print("round %d: %d of %d created, node 0 %d pages, journal %s"
          % (rnd, CONCURRENT - len(refused), CONCURRENT, kernel, recorded), flush=True)
    for i, a in enumerate(answers):
        if a is not None and a.status == 201:
            r = d.request("DELETE", "/v1/pools/r%d-%d" % (rnd, i))
            if r.status != 204:
                failures.append("round %d: DELETE r%d-%d: %r" % (rnd, rnd, i, r))


def main():
    mnt = os.environ.get("HPW_TEST_HUGETLBFS", "")
    if not mnt:
        print("SKIP: not under tests/real/guard.sh", file=sys.stderr)
        return 77
    need_kib = (CONCURRENT * POOL_MIB + 512) * 1024
    if meminfo_kib("MemAvailable") < need_kib:
        print("SKIP: needs %d MiB of available memory" % (need_kib // 1024), file=sys.stderr)
        return 77
    pool_dir = os.path.join(mnt, "hpwarm-race-%d" % os.getpid())
    state = tempfile.mkdtemp(prefix="hpwarm-race-state-")
    d = real_daemon(pool_dir, state, "--log-level", "notice")
    failures = []
    hogs = []
    try:
        set_node0_pages(BASE)
        d.start()
        hogs = start_hogs()
        print("%d busy loops beside the daemon" % len(hogs), flush=True)
        for rnd in range(ROUNDS):
            one_round(d, state, rnd, failures)
        left = pool_files(pool_dir)
        if left:
            failures.append("files left after deleting every pool: %s" % sorted(left))
    finally:
        stop_hogs(hogs)
        d.kill()
        d.__exit__()
        shutil.rmtree(pool_dir, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
    if failures:
        print("FAIL:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    print("ok: %d rounds of %d concurrent %d MiB PUTs with reserve beside %d busy loops, none refused, "
          "journal = kernel" % (ROUNDS, CONCURRENT, POOL_MIB, HOGS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
