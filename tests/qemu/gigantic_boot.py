#!/usr/bin/env python3
"""qemu.gigantic: a guest kernel boots with its RAM on a pool of 1 GiB pages,
from nothing but what `hpwarm handoff` printed.

Runs under tests/real/guard.sh --gigantic (host-wide lock, every count
restored, private hugetlbfs mounts of 2 MiB pages in HPW_TEST_HUGETLBFS and
of 1 GiB pages in HPW_TEST_HUGETLBFS_1G).  On this host's kernel:

 1. hpwarmd with a pool directory of 1 GiB pages; `hpwarm reserve 0 1G`
    one page more than node 0 has; `hpwarm warm vm-1g --size 1G
    --page-size 1G --wait`; `hpwarm handoff vm-1g --vmm qemu`; `hpwarm
    claim`;
 2. QEMU (TCG, q35, -m 1G) started by /bin/sh from a command line that ends
    with the handoff string verbatim (added only: machine, -m, -kernel,
    -initrd, -append, -nographic, a QMP socket);
 3. while the guest runs: QMP `info ramblock` shows mem-vm-1g on 1 GiB
    pages, 1 GiB used, and no pc.ram; `query-memdev` says share, prealloc,
    host-nodes [0], policy bind; QEMU maps the pool's file; node 0's free
    1 GiB pages (and its 2 MiB counts) did not move; the guest's init ran
    and its one node holds the pool's 1 GiB (less at most 4 MiB of firmware
    holes);
 4. QEMU quits, the page stays in the pool (no discard-data), the pool is
    released: the page is free again, the pool directory empty, and the
    count goes back with `hpwarm reserve`; hpwarmd stops with status 0.

Every QEMU and the daemon are stopped in `finally`, also on failure.  Exit 0
pass, 1 fail, 77 skip (no 1 GiB pages or fewer than 2 reservable, QEMU
cannot run, no guest kernel, not under guard.sh --gigantic)."""
import json
import os
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import guestboot as gb  # noqa: E402
from guestboot import BOOT_TIMEOUT, GUEST_DIR, HPWARM, HPWARMD, MIB, MNT, check, host_free  # noqa: E402
from hpwreal import GIG, MNT_1G, gig0, gigantic_skip_reason  # noqa: E402
from hpwtest import Daemon  # noqa: E402
from handoff_boot import FIRMWARE_HOLES, Cli, machine  # noqa: E402

WORK_DIR = os.environ.get("HPW_GIGANTIC_DIR", "")
POOL = ("vm-1g", GIG)


def maps_file(pid, path):
    """Whether process PID maps PATH (its /proc/PID/maps)."""
    try:
        with open("/proc/%d/maps" % pid) as f:
            return any(line.rstrip("\n").endswith(" " + path) for line in f)
    except OSError:
        return False


def main():
    # guard.sh (and a ctest timeout through it) ends us with SIGTERM: unwind
    # through `finally` so QEMU and the daemon are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not (MNT and HPWARMD and HPWARM and GUEST_DIR and WORK_DIR):
        print("SKIP: run under tests/real/guard.sh --gigantic with HPWARMD, HPWARM_CLI, HPW_GUEST_DIR, "
              "HPW_GIGANTIC_DIR")
        return 77
    why = gigantic_skip_reason()
    if why:
        print("SKIP: " + why)
        return 77
    got = gb.qemu_and_guest(GUEST_DIR, WORK_DIR)
    if not got:
        return 77
    qemu, kernel, busybox = got
    initrd = gb.build_initramfs(busybox, os.path.join(WORK_DIR, "initramfs.gz"))
    tmp = tempfile.mkdtemp(prefix="hpwarm-gigantic-")
    base = gig0("nr_hugepages")
    guests = []
    d = Daemon(sysfs_root="/sys", preload=False, state_dir=os.path.join(tmp, "state"),
               args=["--hugetlbfs", "2M=" + os.path.join(MNT, "hpwarm-gig"),
                     "--hugetlbfs", "1G=" + os.path.join(MNT_1G, "hpwarm-gig")])
    t_start = time.monotonic()
    try:
        # -- 1: reserve, warm, handoff, claim ---------------------------------
        d.start()
        cli = Cli("http://127.0.0.1:%d" % d.port)
        cli.ok("reserve", "0", "1G", str(base + 1))
        free_start = gig0("free_hugepages")
        cli.ok("warm", POOL[0], "--node", "0", "--size", "1G", "--page-size", "1G", "--wait", "--timeout", "120")
        check("warm-took-one-1g-page", gig0("free_hugepages") == free_start - 1,
              "node 0 free 1 GiB pages %d, %d before the warm" % (gig0("free_hugepages"), free_start))
        args = cli.ok("handoff", POOL[0], "--vmm", "qemu").rstrip("\n")
        print("handoff:", args, flush=True)
        check("handoff-is-the-1g-file", "size=%d,share=on,prealloc=on" % GIG in args and
              "-machine memory-backend=mem-%s" % POOL[0] in args, args)
        cli.ok("claim", POOL[0])
        path = json.loads(cli.ok("status", POOL[0], "--json"))["path"]

        # -- 2, 3: boot from the shell string, verbatim -----------------------
        free_before = (gig0("free_hugepages"), host_free())
        fixed = " ".join(gb.sh_quote(w) for w in [qemu] + machine(kernel, initrd, GIG, 1))
        g = gb.Guest(None, tmp, shell=fixed + " " + args)
        guests.append(g)
        info = g.wait_ready(BOOT_TIMEOUT)
        print("guest: init after %.1f s, %s" % (info["init_s"], info), flush=True)
        check("guest-reached-init", "memtotal_kb" in info, g.output()[-1000:])
        blocks = g.ramblocks()
        print("ramblocks:", blocks, flush=True)
        why = gb.ram_problems(blocks, [POOL], psize="1 GiB")
        check("ram-is-the-pool-on-1g-pages", not why, "; ".join(why) + "\n" + g.hmp("info ramblock"))
        devs = {m.get("id"): m for m in g.qmp("query-memdev")}
        m = devs.get("mem-" + POOL[0], {})
        check("memdev-share-prealloc-bound", m.get("size") == GIG and m.get("share") is True and
              m.get("prealloc") is True and m.get("host-nodes") == [0] and m.get("policy") == "bind",
              "query-memdev: %s" % m)
        check("qemu-maps-the-pool-file", maps_file(g.proc.pid, path), "QEMU (pid %d) does not map %s"
              % (g.proc.pid, path))
        now = (gig0("free_hugepages"), host_free())
        check("host-free-unchanged", now == free_before,
              "free (1 GiB pages, (2 MiB node0, meminfo)) were %s before QEMU, %s with the guest running: the "
              "guest did not run on the warm page" % (free_before, now))
        present = info.get("present_kb", {})
        check("guest-node0-is-the-pool", sorted(present) == ["node0"] and
              GIG - FIRMWARE_HOLES < present["node0"] * 1024 <= GIG,
              "guest nodes' present memory %s, the pool has %d MiB" % (present, GIG // MIB))
        check("qemu-quits", g.stop() == 0, g.output()[-1000:])
        check("page-kept-after-qemu", gig0("free_hugepages") == free_before[0],
              "free 1 GiB pages %d after QEMU exit, %d before (discard-data would punch the page out)"
              % (gig0("free_hugepages"), free_before[0]))

        # -- 4: give everything back ------------------------------------------
        check("release", cli.run("release", POOL[0]).returncode == 0)
        check("page-free-again", gig0("free_hugepages") == free_start,
              "free 1 GiB pages %d, %d at the start" % (gig0("free_hugepages"), free_start))
        pool_dir = os.path.join(MNT_1G, "hpwarm-gig")
        left = [f for f in os.listdir(pool_dir) if not f.startswith(".")]
        check("pool-dir-empty", left == [], left)
        cli.ok("reserve", "0", "1G", str(base))
        check("count-back", gig0("nr_hugepages") == base, "node 0 has %d pages of 1 GiB, %d before"
              % (gig0("nr_hugepages"), base))
        check("daemon-stops-cleanly", d.stop() == 0, "\n".join(d.log[-20:]))
    except gb.Fail as e:
        check("run", False, str(e))
    finally:
        gb.tear_down(guests, [d], (POOL[0],), tmp)
    return gb.verdict("qemu.gigantic", t_start)


if __name__ == "__main__":
    sys.exit(main())
