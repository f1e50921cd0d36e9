#!/usr/bin/env python3
"""qemu.migrate: a running guest is live-migrated onto a warm pool, with the
destination started from nothing but `hpwarm handoff DST --vmm qemu --as SRC`.

Runs under tests/real/guard.sh (host-wide lock, nr_hugepages restored, a
private 2 MiB hugetlbfs mount in HPW_TEST_HUGETLBFS).  On this host's kernel:

 1. two hpwarmd, "src-host" and "dst-host", each with its own state and pool
    directory (two hosts' daemons, on one machine); hugepages reserved for
    every pool below;
 2. one guest node, across the two daemons: vm-src warmed on src-host, the
    source QEMU (TCG) boots on it from `hpwarm handoff vm-src --vmm qemu
    --argv`; its /init runs guest_pattern, which fills 16 MiB with a seeded
    stream and prints its sum (checked against the sum computed here), then
    the sum of the same memory every second;
 3. vm-dst warmed on dst-host; `hpwarm handoff vm-dst --vmm qemu --as vm-src
    --source-url SRC-HOST` (the CLI compares the sizes with src-host's
    vm-src: dst-host does not hold it) gives words with id=mem-vm-src and
    vm-dst's file; the destination QEMU starts from them, the source's
    machine words and -incoming defer;
 3b. first, why: a destination on vm-dst's plain handoff (id=mem-vm-dst)
    is started and migrated to; QEMU fails the migration (the stream's
    block mem-vm-src is unknown there) and the source runs on;
 4. the host's free hugepages are the same before the destination starts,
    once it waits for the stream, and after the migration; the destination
    maps vm-dst's file (its inode in /proc/PID/maps) and has a RAM block
    mem-vm-src of the pool's size on 2 MiB pages, and no pc.ram;
 5. QMP migrate-incoming on the destination, migrate on the source (a unix
    socket), query-migrate polled until "completed"; the destination runs,
    the source is postmigrate; the destination's serial console goes on
    printing the pattern's sum, the same as before and as computed, with
    later ticks than the source printed;
 6. two guest nodes on one host: vm-s0/vm-s1 (64 MiB each) and vm-d0/vm-d1
    all on src-host; `hpwarm handoff vm-d0 vm-d1 --vmm qemu --as vm-s0,vm-s1`
    (the daemon compares with its own vm-s0/vm-s1: "as_checked": true) ->
    -numa memdev=mem-vm-s0/mem-vm-s1 on the destination's files; the same
    checks as 4 and 5 for both blocks and both files;
 7. refusals that change nothing: a source of another size on the same
    daemon (422 invalid-field, CLI exit 1), on --source-url's daemon (CLI
    exit 1, both sizes named), a missing source there (exit 1), a count
    that differs (exit 2); cloud-hypervisor with --as (exit 2; API 422);
 8. every QEMU quits, the pools are released, every hugepage is free again
    and both pool directories are empty; both daemons stop with status 0.

Every QEMU and both daemons are stopped in `finally`, also on failure.
Bounded: each wait has its own limit (boot, migration); the whole run takes
about a minute here.  Exit 0 pass, 1 fail, 77 skip (QEMU cannot run, no
kernel can be had, or not under guard.sh)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import guestboot as gb  # noqa: E402
from hpwtest import Daemon  # noqa: E402
from guestboot import BOOT_TIMEOUT, GUEST_DIR, HPWARM, HPWARMD, MIB, MNT, NODE0, PAGE, check, host_free, read_int  # noqa: E402,E501

PATTERN_BIN = os.environ.get("HPW_GUEST_PATTERN", "")
WORK_DIR = os.environ.get("HPW_MIGRATE_DIR", "")
MIGRATE_TIMEOUT = 120

PATTERN_MIB, SEED = 16, 2026120131
ONE_SRC, ONE_DST = ("vm-src", 128 * MIB), ("vm-dst", 128 * MIB)
TWO_SRC = [("vm-s0", 64 * MIB), ("vm-s1", 64 * MIB)]
TWO_DST = [("vm-d0", 64 * MIB), ("vm-d1", 64 * MIB)]
ODD = ("vm-odd", 96 * MIB)     # section 7: a destination of another size


def pattern_sum(mib, seed):
    """guest_pattern.c's sum of its stream, computed here."""
    m = (1 << 64) - 1
    x, h = seed, 0xcbf29ce484222325
    for _ in range(mib * MIB // 8):
        x ^= (x << 13) & m
        x ^= x >> 7
        x ^= (x << 17) & m
        h = ((h ^ x) * 0x100000001b3) & m
    return "%016x" % h


def cli(url, *args, timeout=180):
    return subprocess.run([HPWARM, *args, "--url", url], capture_output=True, text=True, timeout=timeout)


def cli_ok(url, *args, **kw):
    r = cli(url, *args, **kw)
    if r.returncode != 0:
        raise gb.Fail("hpwarm %s: exit %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
    return r


def http_get(url, path):
    try:
        with urllib.request.urlopen(url + path, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def machine(kernel, initrd, mem):
    """Everything but memory, the same on both sides (a migration needs the
    same machine: the kernel and initramfs are ROM the stream carries)."""
    return ["-machine", "q35", "-accel", "tcg", "-cpu", "max", "-smp", "1", "-m", "%dM" % (mem // MIB),
            "-nographic", "-no-reboot", "-nic", "none",
            "-kernel", kernel, "-initrd", initrd,
            "-append", "console=ttyS0 panic=-1 loglevel=3"]


def pattern_lines(g):
    """[(tick, sum)] the guest printed on G's console so far."""
    out = []
    for line in g.output().splitlines():
        i = line.find("HPWARM-PATTERN ")
        if i >= 0:
            parts = line[i:].split()
            if len(parts) == 3:
                out.append((int(parts[1]), parts[2]))
    return out


def wait_pattern(g, after_tick, timeout):
    """The first (tick, sum) on G's console with a tick above AFTER_TICK."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        later = [p for p in pattern_lines(g) if p[0] > after_tick]
        if later:
            return later[0]
        if g.proc.poll() is not None:
            raise gb.Fail("QEMU exited (%s) waiting for the pattern:\n%s" % (g.proc.poll(), g.output()[-2000:]))
        time.sleep(0.2)
    raise gb.Fail("no pattern line after tick %d within %d s:\n%s" % (after_tick, timeout, g.output()[-2000:]))


def maps_inodes(pid):
    inodes = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6:
                inodes.add(int(parts[4]))
    return inodes


def migrate(tag, src, dst, sock, want="completed"):
    """QMP migrate-incoming on DST, migrate on SRC, poll until WANT
    ("completed", or "failed" for a destination that must refuse)."""
    dst.qmp("migrate-incoming", uri="unix:" + sock)
    src.qmp("migrate", uri="unix:" + sock)
    deadline = time.monotonic() + MIGRATE_TIMEOUT
    t0 = time.monotonic()
    while True:
        st = src.qmp("query-migrate")
        if st.get("status") == want:
            break
        if st.get("status") in ("completed", "failed", "cancelled") or time.monotonic() > deadline:
            raise gb.Fail("%s: migration %s: %s\n%s" % (tag, st.get("status"), st, dst.output()[-2000:]))
        time.sleep(0.1)
    if want != "completed":
        return st
    print("%s: migration completed in %.2f s (QEMU: %s ms total, %s ms downtime, %s bytes)"
          % (tag, time.monotonic() - t0, st.get("total-time"), st.get("downtime"),
             st.get("ram", {}).get("transferred")), flush=True)
    # The destination resumes once the stream is in.
    deadline = time.monotonic() + 30
    while dst.qmp("query-status").get("status") != "running" and time.monotonic() < deadline:
        time.sleep(0.1)
    return st


def run_migration(tag, src_url, src_pools, dst_url, dst_pools, handoff_args, kernel, initrd, qemu, tmp, pool_dirs,
                  guests, expect_sum, prove_identity=False):
    """Boot the source on SRC_POOLS, start the destination from the handoff
    HANDOFF_ARGS gives, migrate, and check it all (sections 2-5).  With
    PROVE_IDENTITY, first show why --as exists: a destination on the plain
    handoff (id=mem-DST) cannot take the stream, and the source runs on."""
    total = sum(s for _, s in src_pools)
    src_words = cli_ok(src_url, "handoff", *[n for n, _ in src_pools], "--vmm", "qemu", "--argv").stdout.splitlines()
    src = gb.Guest([qemu] + machine(kernel, initrd, total) + src_words, tmp)
    guests.append(src)
    src.wait_line("HPWARM-GUEST-INIT", BOOT_TIMEOUT)
    _, set_line = src.wait_line("HPWARM-PATTERN-SET", BOOT_TIMEOUT)
    set_sum = set_line.split()[-1]
    check(tag + "-source-pattern-is-the-seeded-stream", set_sum == expect_sum,
          "guest wrote %s, the stream sums to %s" % (set_sum, expect_sum))
    wait_pattern(src, 1, 60)

    r = cli_ok(dst_url, "handoff", *[n for n, _ in dst_pools], "--vmm", "qemu", "--argv", *handoff_args)
    dst_words = r.stdout.splitlines()
    print("%s: destination handoff: %s" % (tag, dst_words), flush=True)
    for (sname, _), (dname, _) in zip(src_pools, dst_pools):
        check("%s-handoff-%s-as-%s" % (tag, dname, sname),
              any(w.startswith("memory-backend-file,id=mem-%s," % sname) and
                  "mem-path=%s" % os.path.join(pool_dirs[dst_url], dname) in w for w in dst_words),
              dst_words)
    check(tag + "-handoff-names-the-source-ids",
          (len(src_pools) == 1 and dst_words[-2:] == ["-machine", "memory-backend=mem-" + src_pools[0][0]]) or
          (len(src_pools) > 1 and [w for w in dst_words if w.startswith("node,")] ==
           ["node,nodeid=%d,memdev=mem-%s" % (i, n) for i, (n, _) in enumerate(src_pools)]), dst_words)

    if prove_identity:
        plain = cli_ok(dst_url, "handoff", *[n for n, _ in dst_pools], "--vmm", "qemu", "--argv").stdout.splitlines()
        wrong = gb.Guest([qemu] + machine(kernel, initrd, total) + plain + ["-incoming", "defer"], tmp)
        guests.append(wrong)
        st = migrate(tag + "-plain", src, wrong, os.path.join(tmp, tag + "-plain.sock"), want="failed")
        check(tag + "-plain-handoff-destination-refuses-the-stream", st.get("status") == "failed", st)
        wrong.stop()
        check(tag + "-source-runs-on-after-refusal", src.qmp("query-status").get("status") == "running",
              src.qmp("query-status"))

    free_before = host_free()
    dst = gb.Guest([qemu] + machine(kernel, initrd, total) + dst_words + ["-incoming", "defer"], tmp)
    guests.append(dst)
    st = dst.qmp("query-status", timeout=60)
    check(tag + "-destination-waits", st.get("status") == "inmigrate", st)
    free_waiting = host_free()
    check(tag + "-free-unchanged-destination-started", free_waiting == free_before,
          "free 2 MiB pages (node0, meminfo) %s before the destination, %s once it waits: it did not map the "
          "warm pool" % (free_before, free_waiting))
    inodes = maps_inodes(dst.proc.pid)
    for dname, _ in dst_pools:
        ino = os.stat(os.path.join(pool_dirs[dst_url], dname)).st_ino
        check("%s-destination-maps-%s" % (tag, dname), ino in inodes,
              "inode %d of %s not in /proc/%d/maps" % (ino, dname, dst.proc.pid))
    why = gb.ram_problems(dst.ramblocks(), src_pools)
    check(tag + "-destination-ram-under-source-ids", not why, "; ".join(why))

    last_src_tick = pattern_lines(src)[-1][0]
    migrate(tag, src, dst, os.path.join(tmp, tag + "-migrate.sock"))
    check(tag + "-destination-running", dst.qmp("query-status").get("status") == "running",
          dst.qmp("query-status"))
    check(tag + "-source-postmigrate", src.qmp("query-status").get("status") == "postmigrate",
          src.qmp("query-status"))
    tick, now_sum = wait_pattern(dst, 0, 60)
    check(tag + "-guest-continues-on-destination", tick > last_src_tick,
          "destination's first tick %d, the source had printed %d" % (tick, last_src_tick))
    check(tag + "-memory-intact-after-migration", now_sum == set_sum == expect_sum,
          "destination sums %s, source set %s, stream %s" % (now_sum, set_sum, expect_sum))
    tick2, sum2 = wait_pattern(dst, tick, 30)
    check(tag + "-guest-keeps-running", sum2 == expect_sum, "tick %d: %s" % (tick2, sum2))
    free_after = host_free()
    check(tag + "-free-unchanged-after-migration", free_after == free_before,
          "free %s before the destination, %s after the migration" % (free_before, free_after))
    check(tag + "-source-quits", src.stop() == 0, src.output()[-1000:])
    check(tag + "-destination-quits", dst.stop() == 0, dst.output()[-1000:])


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not (MNT and HPWARMD and HPWARM and GUEST_DIR and WORK_DIR and PATTERN_BIN):
        print("SKIP: run under tests/real/guard.sh with HPWARMD, HPWARM_CLI, HPW_GUEST_PATTERN, HPW_GUEST_DIR, "
              "HPW_MIGRATE_DIR")
        return 77
    got = gb.qemu_and_guest(GUEST_DIR, WORK_DIR)
    if not got:
        return 77
    qemu, kernel, busybox = got
    initrd = gb.build_pattern_initramfs(busybox, os.path.join(WORK_DIR, "initramfs-migrate.gz"), PATTERN_BIN,
                                        PATTERN_MIB, SEED)
    expect_sum = pattern_sum(PATTERN_MIB, SEED)
    tmp = tempfile.mkdtemp(prefix="hpwarm-migrate-")
    dirs = {"src": os.path.join(MNT, "src-host"), "dst": os.path.join(MNT, "dst-host")}
    daemons = {k: Daemon(sysfs_root="/sys", preload=False, state_dir=os.path.join(tmp, "state-" + k),
                         args=["--hugetlbfs", "2M=" + dirs[k]]) for k in dirs}
    guests = []
    t_start = time.monotonic()
    try:
        # -- 1: two daemons, pages for every pool ---------------------------
        for d in daemons.values():
            d.start()
        src_url = "http://127.0.0.1:%d" % daemons["src"].port
        dst_url = "http://127.0.0.1:%d" % daemons["dst"].port
        pool_dirs = {src_url: dirs["src"], dst_url: dirs["dst"]}
        all_pools = [ONE_SRC, ONE_DST, ODD] + TWO_SRC + TWO_DST
        nr, free = read_int(NODE0 + "nr_hugepages"), read_int(NODE0 + "free_hugepages")
        cli_ok(src_url, "reserve", "0", "2M", str(nr - free + sum(s for _, s in all_pools) // PAGE))
        free_start = host_free()

        # -- 2-5: one node, source and destination on two daemons -----------
        cli_ok(src_url, "warm", ONE_SRC[0], "--node", "0", "--size", "128M", "--wait", "--timeout", "120")
        cli_ok(dst_url, "warm", ONE_DST[0], "--node", "0", "--size", "128M", "--wait", "--timeout", "120")
        cli_ok(src_url, "claim", ONE_SRC[0])
        cli_ok(dst_url, "claim", ONE_DST[0])
        st, ans = http_get(dst_url, "/v1/handoff?vmm=qemu&pools=vm-dst&as=vm-src")
        check("api-as-unchecked-across-daemons", st == 200 and ans["pools"][0]["as"] == "vm-src" and
              ans["pools"][0]["as_checked"] is False, "%d %s" % (st, ans))
        r = cli(dst_url, "handoff", ONE_DST[0], "--vmm", "qemu", "--as", ONE_SRC[0])
        check("cli-warns-unchecked-source", r.returncode == 0 and "--source-url" in r.stderr and
              "mem-vm-src" in r.stdout, "exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))
        run_migration("one", src_url, [ONE_SRC], dst_url, [ONE_DST], ["--as", ONE_SRC[0], "--source-url", src_url],
                      kernel, initrd, qemu, tmp, pool_dirs, guests, expect_sum, prove_identity=True)

        # -- 6: two nodes, all four pools on one daemon ----------------------
        for name, size in TWO_SRC + TWO_DST:
            cli_ok(src_url, "warm", name, "--node", "0", "--size", "%dM" % (size // MIB), "--wait", "--timeout", "120")
        st, ans = http_get(src_url, "/v1/handoff?vmm=qemu&pools=vm-d0,vm-d1&as=vm-s0,vm-s1")
        check("api-as-checked-on-one-daemon", st == 200 and [p["as_checked"] for p in ans["pools"]] == [True, True]
              and [p["as"] for p in ans["pools"]] == ["vm-s0", "vm-s1"], "%d %s" % (st, ans))
        run_migration("two", src_url, TWO_SRC, src_url, TWO_DST, ["--as", "vm-s0,vm-s1"],
                      kernel, initrd, qemu, tmp, pool_dirs, guests, expect_sum)

        # -- 7: refusals ------------------------------------------------------
        cli_ok(src_url, "warm", ODD[0], "--node", "0", "--size", "96M", "--wait", "--timeout", "120")
        before = (http_get(src_url, "/v1/pools"), http_get(dst_url, "/v1/pools"))
        st, ans = http_get(src_url, "/v1/handoff?vmm=qemu&pools=vm-odd&as=vm-s0")
        check("api-size-mismatch-422", st == 422 and ans["type"].endswith("invalid-field") and
              "100663296" in ans["detail"] and "67108864" in ans["detail"], "%d %s" % (st, ans))
        r = cli(src_url, "handoff", ODD[0], "--vmm", "qemu", "--as", "vm-s0")
        check("cli-size-mismatch-same-host-exit-1", r.returncode == 1 and r.stdout == "" and
              "same size" in r.stderr, "exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))
        r = cli(dst_url, "handoff", ONE_DST[0], "--vmm", "qemu", "--as", "vm-odd", "--source-url", src_url)
        check("cli-size-mismatch-source-url-exit-1", r.returncode == 1 and r.stdout == "" and
              "96 MiB" in r.stderr and "128 MiB" in r.stderr, "exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))
        r = cli(dst_url, "handoff", ONE_DST[0], "--vmm", "qemu", "--as", "vm-none", "--source-url", src_url)
        check("cli-missing-source-exit-1", r.returncode == 1 and r.stdout == "" and "vm-none" in r.stderr,
              "exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))
        r = cli(src_url, "handoff", "vm-d0", "vm-d1", "--vmm", "qemu", "--as", "vm-s0")
        check("cli-count-mismatch-exit-2", r.returncode == 2 and "one source per pool" in r.stderr,
              "exit %d: %s" % (r.returncode, r.stderr))
        r = cli(src_url, "handoff", "vm-d0", "--vmm", "cloud-hypervisor", "--as", "vm-s0")
        check("cli-cloud-hypervisor-as-exit-2", r.returncode == 2, "exit %d: %s" % (r.returncode, r.stderr))
        check("refusals-change-nothing",
              (http_get(src_url, "/v1/pools"), http_get(dst_url, "/v1/pools")) == before, "pools changed")

        # -- 8: give everything back ----------------------------------------
        for url, names in ((src_url, [ONE_SRC[0], ODD[0]] + [n for n, _ in TWO_SRC + TWO_DST]),
                           (dst_url, [ONE_DST[0]])):
            for name in names:
                check("release-" + name, cli(url, "release", name).returncode == 0)
        check("every-page-back", host_free() == free_start, "free %s, at the start %s" % (host_free(), free_start))
        for k, d in dirs.items():
            left = [f for f in os.listdir(d) if not f.startswith(".")]
            check("pool-dir-empty-" + k, left == [], left)
        for k, d in daemons.items():
            check("daemon-stops-cleanly-" + k, d.stop() == 0, "\n".join(d.log[-20:]))
    except gb.Fail as e:
        check("run", False, str(e))
    finally:
        gb.tear_down(guests, daemons.values(), [name for name, _ in [ONE_SRC, ONE_DST, ODD] + TWO_SRC + TWO_DST], tmp)
    return gb.verdict("qemu.migrate", t_start)


if __name__ == "__main__":
    sys.exit(main())
