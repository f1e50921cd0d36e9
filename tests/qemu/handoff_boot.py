#!/usr/bin/env python3
"""qemu.handoff: a guest kernel boots with its RAM on warm pools, using
nothing but what `hpwarm handoff` printed.

Runs under tests/real/guard.sh (host-wide lock, nr_hugepages restored, a
private 2 MiB hugetlbfs mount in HPW_TEST_HUGETLBFS).  On this host's kernel:

 1. hpwarmd (the real daemon) with its pool directory in the private mount,
    under a name with a comma, a blank and a quote, so QEMU's option
    escaping and the shell quoting are exercised for real;
 2. `hpwarm reserve`, then README's recipe: `hpwarm warm vm-one --size 256M
    --ttl 600 --wait`, `hpwarm handoff vm-one --vmm qemu`, `hpwarm claim`;
 3. QEMU (TCG, q35) started by /bin/sh from a command line that ends with
    the `hpwarm handoff vm-one --vmm qemu` string verbatim; added only: -m
    equal to the pool size, -smp, -kernel/-initrd/-append, -nographic,
    -no-reboot and a QMP socket;
 4. while the guest runs: QMP `info ramblock` shows mem-vm-one on 2 MiB pages
    with the pool's size and no pc.ram; `query-memdev` says share, prealloc,
    host-nodes [0], policy bind; the host's free hugepages did not move; the
    guest's init ran and its one node holds the pool's size (present pages
    from /proc/zoneinfo, less at most 4 MiB of firmware holes; QEMU's
    default would be 128 MiB);
 5. the old handoff (the -object without -machine memory-backend) is shown to
    fail the same ramblock check: pc.ram appears;
 6. two pools (160 MiB and 96 MiB) composed with `hpwarm handoff vm-a vm-b
    --vmm qemu --argv` (vm-a claimed first: claimed pools are handed off
    too) into a two-node guest, exec'd from the argv words: both blocks, no
    pc.ram, free pages unchanged, the guest sees exactly node0 and node1
    holding vm-a's and vm-b's size, in that order;
 7. the API view of the same: GET /v1/handoff for each VMM, each pool's
    handoff strings; 404 for an unknown pool; 409 pool-not-ready (CLI exit
    5) for a pool made failed by deleting its file while the daemon was
    down, ready pools surviving that restart;
 8. QEMU quits, the pools are released;
 9. a stock target of 256 MiB fills; `hpwarm warm vm-stock --size 256M` is
    answered from it (`from_stock: full`, the stock file's inode) and a
    guest boots on it from the handoff string with the same checks as 3-4;
    then the stock is cleared and the pool released: every hugepage is free
    again and the pool directory is empty; hpwarmd stops with status 0.

Every QEMU and the daemon are stopped in `finally`, also on failure.
Exit 0 pass, 1 fail, 77 skip (QEMU cannot run, or no kernel can be had, or
not under guard.sh)."""
import json
import os
import shlex
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

WORK_DIR = os.environ.get("HPW_HANDOFF_DIR", "")

ONE = ("vm-one", 256 * MIB)
TWO = [("vm-a", 160 * MIB), ("vm-b", 96 * MIB)]
STOCKED = ("vm-stock", 256 * MIB)  # section 9: handed out from a stock file of its size
# A guest node's present memory (its zones' present pages) is its RAM less
# the firmware's holes (the legacy 640 KiB-1 MiB hole, ACPI tables): at most
# this much below the pool's size.
FIRMWARE_HOLES = 4 * MIB


class Cli:
    def __init__(self, url):
        self.url = url

    def run(self, *args, timeout=180):
        return subprocess.run([HPWARM, *args, "--url", self.url], capture_output=True, text=True,
                              timeout=timeout)

    def ok(self, *args, **kw):
        r = self.run(*args, **kw)
        if r.returncode != 0:
            raise gb.Fail("hpwarm %s: exit %d\n%s%s" % (" ".join(args), r.returncode, r.stdout, r.stderr))
        return r.stdout


def http_get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def machine(kernel, initrd, mem, smp):
    """What the caller adds around the handoff words: everything but memory."""
    return ["-machine", "q35", "-accel", "tcg,thread=multi" if smp > 1 else "tcg", "-cpu", "max",
            "-smp", str(smp), "-m", "%dM" % (mem // MIB),
            "-nographic", "-no-reboot", "-nic", "none",
            "-kernel", kernel, "-initrd", initrd,
            "-append", "console=ttyS0 panic=-1 loglevel=3"]


def check_running_guest(tag, g, pools, free_before, info):
    blocks = g.ramblocks()
    why = gb.ram_problems(blocks, pools)
    check(tag + "-ram-is-the-pools", not why, "; ".join(why) + "\n" + g.hmp("info ramblock"))
    devs = {d.get("id"): d for d in g.qmp("query-memdev")}
    for name, size in pools:
        d = devs.get("mem-" + name, {})
        check("%s-memdev-%s" % (tag, name),
              d.get("size") == size and d.get("share") is True and d.get("prealloc") is True and
              d.get("host-nodes") == [0] and d.get("policy") == "bind",
              "query-memdev: %s" % d)
    free_now = host_free()
    check(tag + "-host-free-unchanged", free_now == free_before,
          "free 2 MiB pages (node0, meminfo) were %s before QEMU, %s with the guest running: "
          "the guest did not run on the warm pages" % (free_before, free_now))
    present = info.get("present_kb", {})
    for i, (name, size) in enumerate(pools):
        got = present.get("node%d" % i, 0) * 1024
        check("%s-guest-node%d-is-%s" % (tag, i, name), size - FIRMWARE_HOLES < got <= size,
              "guest node%d has %d bytes present, pool %s has %d (all nodes: %s)" % (i, got, name, size, present))
    check(tag + "-guest-node-count", sorted(present) == ["node%d" % i for i in range(len(pools))],
          "guest nodes %s for %d pools" % (sorted(present), len(pools)))
    return blocks


def boot_shell_string(tag, pool, args, qemu, kernel, initrd, tmp, guests):
    """Boot QEMU from the fixed machine words and the handoff's shell string
    ARGS, verbatim: the guest reaches init on POOL's pages, and QEMU quits.
    The host's free pages before the boot."""
    free_before = host_free()
    fixed = " ".join(gb.sh_quote(w) for w in [qemu] + machine(kernel, initrd, pool[1], 1))
    g = gb.Guest(None, tmp, shell=fixed + " " + args)
    guests.append(g)
    info = g.wait_ready(BOOT_TIMEOUT)
    print("guest: init after %.1f s, %s" % (info["init_s"], info), flush=True)
    check(tag + "-guest-reached-init", "memtotal_kb" in info, g.output()[-1000:])
    check_running_guest(tag, g, [pool], free_before, info)
    check(tag + "-qemu-quits", g.stop() == 0, g.output()[-1000:])
    return free_before


def main():
    # guard.sh (and a ctest timeout through it) ends us with SIGTERM: unwind
    # through `finally` so QEMU and the daemon are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not (MNT and HPWARMD and HPWARM and GUEST_DIR and WORK_DIR):
        print("SKIP: run under tests/real/guard.sh with HPWARMD, HPWARM_CLI, HPW_GUEST_DIR, HPW_HANDOFF_DIR")
        return 77
    got = gb.qemu_and_guest(GUEST_DIR, WORK_DIR)
    if not got:
        return 77
    qemu, kernel, busybox = got
    initrd = gb.build_initramfs(busybox, os.path.join(WORK_DIR, "initramfs.gz"))
    tmp = tempfile.mkdtemp(prefix="hpwarm-handoff-")
    pool_dir = os.path.join(MNT, "hpwarm, handoff 'q'")
    guests = []
    d = Daemon(sysfs_root="/sys", preload=False, state_dir=os.path.join(tmp, "state"),
               args=["--hugetlbfs", "2M=" + pool_dir])
    t_start = time.monotonic()
    try:
        # -- 1, 2: daemon, reserve, one warm pool --------------------------
        d.start()
        cli = Cli("http://127.0.0.1:%d" % d.port)
        nr, free = read_int(NODE0 + "nr_hugepages"), read_int(NODE0 + "free_hugepages")
        want = nr - free + 256 * MIB // PAGE + 1      # pages others hold + ours (+ vm-gone's)
        cli.ok("reserve", "0", "2M", str(want))
        free_start = host_free()
        check("reserved", free_start[0] >= 256 * MIB // PAGE, "node0 free %s" % (free_start,))
        # The README's recipe: warm --wait, handoff, claim, QEMU with -m = the pool size.
        cli.ok("warm", ONE[0], "--node", "0", "--size", "256M", "--ttl", "600", "--wait", "--timeout", "120")
        args = cli.ok("handoff", ONE[0], "--vmm", "qemu").rstrip("\n")
        words = cli.ok("handoff", ONE[0], "--vmm", "qemu", "--argv").splitlines()
        print("handoff:", args, flush=True)
        check("one-shell-string-is-the-argv", shlex.split(args) == words, "%r vs %r" % (args, words))
        check("one-handoff-names-the-backend", words[-2:] == ["-machine", "memory-backend=mem-vm-one"], words)
        cli.ok("claim", ONE[0])

        # -- 3, 4: boot from the shell string, verbatim ---------------------
        free_before = boot_shell_string("one", ONE, args, qemu, kernel, initrd, tmp, guests)
        check("one-pool-pages-kept-after-qemu", host_free() == free_before,
              "free %s after QEMU exit, %s before (discard-data would punch them out)" % (host_free(), free_before))

        # -- 5: the old handoff (object only) fails the same check ----------
        old = [w for w in words if w not in ("-machine", "memory-backend=mem-vm-one")]
        g = gb.Guest([qemu, "-machine", "q35", "-accel", "tcg", "-m", "256M", "-nodefaults", "-display", "none",
                      "-S"] + old, tmp)
        guests.append(g)
        why = gb.ram_problems(g.ramblocks(), [ONE])
        check("old-object-only-handoff-is-caught", any("pc.ram" in w for w in why),
              "the ramblock check did not flag the -object-only handoff: %s" % why)
        g.stop()
        cli.ok("release", ONE[0])

        # -- 6: two pools, two guest nodes, from the argv words -------------
        for name, size in TWO:
            cli.ok("warm", name, "--node", "0", "--size", "%dM" % (size // MIB), "--wait", "--timeout", "120")
        cli.ok("claim", TWO[0][0])
        words2 = cli.ok("handoff", TWO[0][0], TWO[1][0], "--vmm", "qemu", "--argv").splitlines()
        print("handoff:", words2, flush=True)
        total = sum(s for _, s in TWO)
        free_before = host_free()
        g = gb.Guest([qemu] + machine(kernel, initrd, total, 2) + words2, tmp)
        guests.append(g)
        info = g.wait_ready(BOOT_TIMEOUT)
        print("guest: init after %.1f s, %s" % (info["init_s"], info), flush=True)
        check_running_guest("two", g, TWO, free_before, info)

        # -- 7: the API's view of the same pools ----------------------------
        st, ans = http_get(d.port, "/v1/handoff?vmm=qemu&pools=vm-a,vm-b")
        check("api-handoff-qemu", st == 200 and ans["argv"] == words2 and ans["memory_bytes"] == total and
              shlex.split(ans["args"]) == words2 and [p["guest_node"] for p in ans["pools"]] == [0, 1],
              "%d %s" % (st, ans))
        st, ans = http_get(d.port, "/v1/handoff?vmm=libvirt&pools=vm-a,vm-b")
        check("api-handoff-libvirt", st == 200 and ans["argv"] == words2 and
              ans["namespace"] == 'xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0"' and
              "<qemu:arg value=\"node,nodeid=1,memdev=mem-vm-b\"/>" in ans["xml"] and "args" not in ans,
              "%d %s" % (st, ans))
        st, ans = http_get(d.port, "/v1/handoff?vmm=cloud-hypervisor&pools=vm-b")
        check("api-handoff-cloud-hypervisor", st == 200 and ans["argv"][:3] == ["--memory", "size=0", "--memory-zone"]
              and ans["argv"][3].endswith(",hugepage_size=2M") and "host_numa_node" not in ans["argv"][3], "%d %s" % (st, ans))
        st, p = http_get(d.port, "/v1/pools/vm-b")
        st1, one = http_get(d.port, "/v1/handoff?vmm=qemu&pools=vm-b")
        h = p["handoff"]
        check("api-pool-handoff-is-one-pool-composition",
              h["qemu_argv"] == one["argv"] and h["qemu"] == one["args"] and
              h["cloud_hypervisor_argv"][0] == "--memory" and h["libvirt"].startswith("<qemu:commandline>"),
              "%s vs %s" % (h, one))
        st, ans = http_get(d.port, "/v1/handoff?vmm=qemu&pools=vm-a,vm-none")
        check("api-handoff-unknown-pool-404", st == 404 and ans["type"].endswith("pool-not-found"), ans)
        check("two-qemu-quits", g.stop() == 0, g.output()[-1000:])
        check("two-pool-pages-kept-after-qemu", host_free() == free_before, "%s vs %s" % (host_free(), free_before))

        # A pool that is not ready: its file vanished while the daemon was
        # down, so the restart marks it failed (and keeps the record).
        cli.ok("warm", "vm-gone", "--node", "0", "--size", "2M", "--wait", "--timeout", "60")
        check("daemon-stops-for-restart", d.stop() == 0, "\n".join(d.log[-20:]))
        os.unlink(os.path.join(pool_dir, "vm-gone"))
        d.start()
        cli = Cli("http://127.0.0.1:%d" % d.port)
        st, ans = http_get(d.port, "/v1/handoff?vmm=qemu&pools=vm-a,vm-gone")
        check("api-handoff-not-ready-409", st == 409 and ans["type"].endswith("pool-not-ready") and
              "vm-gone" in ans["detail"], "%d %s" % (st, ans))
        r = cli.run("handoff", "vm-a", "vm-gone", "--vmm", "qemu")
        check("cli-handoff-not-ready-exit-5", r.returncode == 5 and r.stdout == "" and
              "pool-not-ready" in r.stderr, "exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))
        check("ready-pools-survive-restart", cli.run("handoff", "vm-a", "vm-b", "--vmm", "qemu", "--argv")
              .stdout.splitlines() == words2, "handoff after the restart differs")

        # -- 8: give everything back ---------------------------------------
        for name in ("vm-a", "vm-b", "vm-gone"):
            check("release-" + name, cli.run("release", name).returncode == 0)

        # -- 9: a pool handed out from stock boots the same way -------------
        cli.ok("stock", "set", "0:2M:256M:1")
        st, stock = 0, {}
        for _ in range(1200):
            st, stock = http_get(d.port, "/v1/stock")
            if st == 200 and stock["targets"] and stock["targets"][0]["ready"] == 1:
                break
            time.sleep(0.1)
        stock_dir = os.path.join(pool_dir, ".stock")     # pools.h POOLS_STOCK_DIR
        stock_files = [f for f in os.listdir(stock_dir) if f.startswith("~")]
        check("stock-filled", st == 200 and stock["targets"][0]["ready"] == 1 and len(stock_files) == 1,
              "%d %s, files %s" % (st, stock, stock_files))
        stock_ino = os.stat(os.path.join(stock_dir, stock_files[0])).st_ino if stock_files else None
        cli.ok("warm", STOCKED[0], "--node", "0", "--size", "256M", "--wait", "--timeout", "60")
        st, p = http_get(d.port, "/v1/pools/" + STOCKED[0])
        check("stock-hand-out-is-the-stock-file",
              st == 200 and p["from_stock"] == "full" and
              os.stat(os.path.join(pool_dir, STOCKED[0])).st_ino == stock_ino, "%d %s" % (st, p))
        args = cli.ok("handoff", STOCKED[0], "--vmm", "qemu").rstrip("\n")
        cli.ok("claim", STOCKED[0])
        boot_shell_string("stock", STOCKED, args, qemu, kernel, initrd, tmp, guests)
        cli.ok("stock", "clear")
        check("release-" + STOCKED[0], cli.run("release", STOCKED[0]).returncode == 0)
        check("every-page-back", host_free() == free_start, "free %s, at the start %s" % (host_free(), free_start))
        left = [f for f in os.listdir(pool_dir) if not f.startswith(".")] + os.listdir(stock_dir)
        check("pool-dir-empty", left == [], left)
        check("daemon-stops-cleanly", d.stop() == 0, "\n".join(d.log[-20:]))
    except gb.Fail as e:
        check("run", False, str(e))
    finally:
        gb.tear_down(guests, [d], ("vm-one", "vm-a", "vm-b", "vm-gone", STOCKED[0]), tmp, empty_stock=True)
    return gb.verdict("qemu.handoff", t_start)


if __name__ == "__main__":
    sys.exit(main())
