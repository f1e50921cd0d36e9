"""guestboot: boot a tiny Linux guest under QEMU (TCG) and look at it from
outside, for tests/qemu/handoff_boot.py and tests/bench/bench.py (the
guest boot row, tests/bench/hpwbench/qemu.py).

- fetch(): Debian's kernel and busybox through prepare.sh --fetch-only (the
  same cache as qemu.numa; nothing is installed on the host);
- build_initramfs(): busybox plus an /init that prints a marker, the
  guest's MemTotal, each NUMA node's MemTotal and present memory, then
  sleeps until QEMU is told to quit (or another /init and extra programs,
  as tests/qemu/migrate.py gives);
- Guest: QEMU with the serial console on a pipe and QMP on a unix socket;
  wait_ready() waits for init's lines, qmp() speaks QMP, ramblocks() parses
  HMP `info ramblock`, stop() quits (and kills if it must);
- ram_problems(): why guest RAM is not the given pools, judged from the
  ramblock list (a block per pool named mem-NAME on 2 MiB pages, or the
  page size given, of the pool's size, and no anonymous pc.ram).

Python 3 standard library only."""
import ctypes
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MARK_INIT = "HPWARM-GUEST-INIT"
MARK_READY = "HPWARM-GUEST-READY"

INIT = r"""#!/bin/busybox sh
# /init of the handoff guest: report what memory the guest sees, then idle.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
echo "HPWARM-GUEST-INIT"
echo "HPWARM-GUEST-MEMTOTAL $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
for n in /sys/devices/system/node/node[0-9]*; do
        [ -d "$n" ] || continue
        echo "HPWARM-GUEST-NODE ${n##*/} $(awk '/MemTotal:/ { print $4 }' "$n/meminfo")"
done
# Physical memory per node as the kernel's zones hold it (present pages,
# before the kernel's own reservations, which MemTotal leaves out).
awk '/^Node/ { n = $2; sub(",", "", n) }
     $1 == "present" { p[n] += $2 }
     END { for (n in p) printf "HPWARM-GUEST-PRESENT node%s %d\n", n, p[n] * 4 }' /proc/zoneinfo
echo "HPWARM-GUEST-READY"
while :; do sleep 3600; done
"""

# /init of a guest with a known pattern in memory: guest_pattern fills MIB
# MiB with SEED's stream and prints its sum each second (migrate.py and the
# migration bench read the sums off the console).
PATTERN_INIT = r"""#!/bin/busybox sh
# /init of the migration guest: a known pattern in memory, its sum each second.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
echo "HPWARM-GUEST-INIT"
exec /bin/guest_pattern %d %d
"""


# What the guest tests under guard.sh share (tests/qemu/CMakeLists.txt sets it).
HPWARMD = os.environ.get("HPWARMD", "")
HPWARM = os.environ.get("HPWARM_CLI", "")
MNT = os.environ.get("HPW_TEST_HUGETLBFS", "")
GUEST_DIR = os.environ.get("HPW_GUEST_DIR", "")
BOOT_TIMEOUT = int(os.environ.get("HPW_BOOT_TIMEOUT", "240"))

MIB = 1 << 20
PAGE = 2 * MIB
NODE0 = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/"

# The names of the checks that failed, in order (a script exits 1 if any).
failures = []


def check(name, ok, detail=""):
    """Print PASS or FAIL for the check NAME; a failed one goes into failures."""
    if ok:
        print("PASS %s" % name, flush=True)
    else:
        print("FAIL %s: %s" % (name, detail), flush=True)
        failures.append(name)
    return ok


def verdict(test, t_start):
    """Print TEST's outcome (the failed checks' names, or all passed) and its
    time since T_START (time.monotonic()); the exit code, 1 if any failed."""
    print("%s: %s in %.0f s" % (test, "FAIL " + ", ".join(failures) if failures else "all passed",
                                time.monotonic() - t_start), flush=True)
    return 1 if failures else 0


def tear_down(guests, daemons, pools, tmp, empty_stock=False):
    """A guest test's way out, however it ends: stop GUESTS; on each of
    DAEMONS still running, empty the stock (EMPTY_STOCK) and delete POOLS;
    stop the daemons and remove TMP."""
    for g in guests:
        g.stop()
    for d in daemons:
        if d.proc and d.proc.poll() is None:
            if empty_stock:
                d.request("PUT", "/v1/stock", {"targets": []})
            for name in pools:
                d.request("DELETE", "/v1/pools/" + name)
        d.__exit__()
    shutil.rmtree(tmp, ignore_errors=True)


def read_int(path):
    with open(path) as f:
        return int(f.read().strip())


def host_free():
    """(node 0 free 2 MiB pages, HugePages_Free from /proc/meminfo)."""
    with open("/proc/meminfo") as f:
        meminfo = dict(l.split(":", 1) for l in f if ":" in l)
    return read_int(NODE0 + "free_hugepages"), int(meminfo["HugePages_Free"].split()[0])


class Skip(Exception):
    """QEMU or the guest kernel cannot be had here: exit 77."""


class Fail(Exception):
    pass


def find_qemu():
    qemu = shutil.which("qemu-system-x86_64")
    if not qemu:
        raise Skip("qemu-system-x86_64 not installed")
    r = subprocess.run([qemu, "-machine", "help"], capture_output=True, timeout=60)
    if r.returncode != 0:
        raise Skip("%s cannot run: %s" % (qemu, r.stderr.decode(errors="replace")[-300:]))
    return qemu


def fetch(guest_dir):
    """(vmlinuz, busybox) from prepare.sh --fetch-only GUEST_DIR."""
    os.makedirs(guest_dir, exist_ok=True)
    r = subprocess.run(["sh", os.path.join(HERE, "prepare.sh"), "--fetch-only", guest_dir],
                       capture_output=True, text=True, timeout=600)
    if r.returncode == 77:
        raise Skip("guest kernel: " + r.stderr.strip()[-300:])
    if r.returncode != 0:
        raise Fail("prepare.sh --fetch-only failed (%d): %s" % (r.returncode, r.stderr[-500:]))
    guest_dir = os.path.abspath(guest_dir)
    return os.path.join(guest_dir, "vmlinuz"), os.path.join(guest_dir, "busybox")


def qemu_and_guest(guest_dir, work_dir):
    """(QEMU's binary, the guest kernel, busybox) with WORK_DIR made, or
    None with a SKIP line printed where QEMU or the guest cannot be had."""
    try:
        qemu = find_qemu()
        kernel, busybox = fetch(guest_dir)
    except Skip as e:
        print("SKIP:", e)
        return None
    os.makedirs(work_dir, exist_ok=True)
    return qemu, kernel, busybox


def build_initramfs(busybox, out_path, init=INIT, extra=None):
    """A gzip'd newc archive: busybox, INIT as /init, and EXTRA ({path in
    the guest: host file}, e.g. a static test program) made executable."""
    root = out_path + ".d"
    shutil.rmtree(root, ignore_errors=True)
    for d in ("bin", "proc", "sys", "dev"):
        os.makedirs(os.path.join(root, d))
    shutil.copy(busybox, os.path.join(root, "bin", "busybox"))
    with open(os.path.join(root, "init"), "w") as f:
        f.write(init)
    os.chmod(os.path.join(root, "init"), 0o755)
    os.chmod(os.path.join(root, "bin", "busybox"), 0o755)
    for guest_path, host_path in (extra or {}).items():
        dst = os.path.join(root, guest_path.lstrip("/"))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy(host_path, dst)
        os.chmod(dst, 0o755)
    # busybox's own cpio writes newc; -R 0:0 makes every file root's.  Each
    # step is checked: an empty archive would boot to a kernel panic.
    names = subprocess.run(["find", "."], cwd=root, capture_output=True, check=True).stdout
    cpio = subprocess.run([os.path.abspath(busybox), "cpio", "-o", "-H", "newc", "-R", "0:0"], cwd=root,
                          input=names, capture_output=True)
    shutil.rmtree(root, ignore_errors=True)
    if cpio.returncode != 0 or b"TRAILER!!!" not in cpio.stdout or init.encode() not in cpio.stdout:
        raise Fail("cannot build the initramfs: busybox cpio exited %d: %s"
                   % (cpio.returncode, cpio.stderr.decode(errors="replace")[-300:]))
    with gzip.open(out_path + ".tmp", "wb", compresslevel=1) as f:
        f.write(cpio.stdout)
    os.replace(out_path + ".tmp", out_path)
    return out_path


def build_pattern_initramfs(busybox, out_path, guest_pattern, mib, seed):
    """An initramfs whose /init is PATTERN_INIT for MIB and SEED, with the
    static GUEST_PATTERN binary as /bin/guest_pattern."""
    return build_initramfs(busybox, out_path, init=PATTERN_INIT % (mib, seed),
                           extra={"/bin/guest_pattern": guest_pattern})


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def parse_ramblocks(text):
    """HMP `info ramblock` -> [{name, psize, used, total}]."""
    blocks = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 6 or parts[0] == "Block":
            continue
        try:
            blocks.append({"name": parts[0], "psize": parts[1] + " " + parts[2],
                           "used": int(parts[4], 16), "total": int(parts[5], 16)})
        except ValueError:
            continue
    return blocks


def ram_problems(blocks, pools, psize="2 MiB"):
    """Why guest RAM is not exactly POOLS ([(name, size_bytes)]) on pages of
    PSIZE (as `info ramblock` writes it: "2 MiB", "1 GiB"): [] when it is."""
    why = []
    by_name = {b["name"]: b for b in blocks}
    if "pc.ram" in by_name:
        why.append("anonymous pc.ram (%d bytes, %s pages) is guest RAM: the pool backend is not"
                   % (by_name["pc.ram"]["used"], by_name["pc.ram"]["psize"]))
    for name, size in pools:
        b = by_name.get("mem-" + name)
        if not b:
            why.append("no RAM block mem-%s (blocks: %s)" % (name, ", ".join(sorted(by_name))))
            continue
        if b["psize"] != psize:
            why.append("mem-%s is on %s pages, not %s" % (name, b["psize"], psize))
        if b["used"] != size:
            why.append("mem-%s maps %d bytes, the pool has %d" % (name, b["used"], size))
    return why


def _die_with_parent():
    """In the child before exec: SIGKILL when the test process dies, however
    it dies (kill -9 or a ctest timeout included), so no QEMU outlives it."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Guest:
    """One QEMU process: serial on a pipe (lines kept), QMP on a unix socket."""

    def __init__(self, argv, workdir, shell=None):
        """ARGV: the command without QMP; SHELL: a /bin/sh command line to run
        instead (its words after the fixed part come from the handoff string)."""
        self.qmp_path = os.path.join(workdir, "qmp-%d.sock" % id(self))
        qmp = ["-qmp", "unix:%s,server=on,wait=off" % self.qmp_path]
        if shell is not None:
            cmd = ["sh", "-c", "exec %s %s" % (shell, " ".join(sh_quote(w) for w in qmp))]
        else:
            cmd = argv + qmp
        self.cmd = cmd
        self.lines = []
        self.cond = threading.Condition()
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        self.sock = None
        self.rfile = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\r\n")
            with self.cond:
                self.lines.append((time.monotonic() - self.t0, line))
                self.cond.notify_all()
        with self.cond:
            self.lines.append((time.monotonic() - self.t0, None))
            self.cond.notify_all()

    def output(self):
        with self.cond:
            return "\n".join(l for _, l in self.lines if l is not None)

    def wait_line(self, prefix, timeout):
        """(seconds since start, line) of the first line holding PREFIX (the
        firmware's terminal escapes may precede it on the same line)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, l in self.lines:
                    if l is not None and prefix in l:
                        return t, l
                if self.lines and self.lines[-1][1] is None:
                    raise Fail("QEMU exited (%s) before %r:\n%s" % (self.proc.poll(), prefix,
                                                                    self.output()[-2000:]))
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Fail("no %r within %d s:\n%s" % (prefix, timeout, self.output()[-2000:]))
                self.cond.wait(left)

    def wait_ready(self, timeout):
        """Guest init ran: {"memtotal_kb": N, "nodes": {"node0": MemTotal kB, ...},
        "present_kb": {"node0": kB of present pages, ...}, "init_s": t,
        "firmware_s": t of the firmware's first line}, t in seconds since spawn."""
        t_init, _ = self.wait_line(MARK_INIT, timeout)
        self.wait_line(MARK_READY, timeout)
        # The firmware's banner comes once QEMU has set up (and preallocated)
        # guest RAM and starts the vCPU: the VMM's share of the start.
        t_fw = next((t for t, l in self.lines if l is not None and "SeaBIOS" in l), None)
        info = {"nodes": {}, "init_s": t_init, "firmware_s": t_fw}
        for _, l in list(self.lines):
            if l is None:
                continue
            m = re.search(r"HPWARM-GUEST-MEMTOTAL (\d+)$", l)
            if m:
                info["memtotal_kb"] = int(m.group(1))
            m = re.search(r"HPWARM-GUEST-NODE (node\d+) (\d+)$", l)
            if m:
                info["nodes"][m.group(1)] = int(m.group(2))
            m = re.search(r"HPWARM-GUEST-PRESENT (node\d+) (\d+)$", l)
            if m:
                info.setdefault("present_kb", {})[m.group(1)] = int(m.group(2))
        return info

    def qmp(self, command, timeout=60, **arguments):
        if self.sock is None:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.connect(self.qmp_path)
                    break
                except OSError:
                    s.close()
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise Fail("no QMP socket (QEMU %s):\n%s" % (self.proc.poll(), self.output()[-2000:]))
                    time.sleep(0.05)
            s.settimeout(timeout)
            self.sock = s
            self.rfile = s.makefile("rb")
            json.loads(self.rfile.readline())          # greeting
            self.qmp("qmp_capabilities")
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            line = self.rfile.readline()
            if not line:
                raise Fail("QMP closed during %s" % command)
            ans = json.loads(line)
            if "return" in ans:
                return ans["return"]
            if "error" in ans:
                raise Fail("QMP %s: %s" % (command, ans["error"]))

    def hmp(self, line):
        return self.qmp("human-monitor-command", **{"command-line": line})

    def ramblocks(self):
        return parse_ramblocks(self.hmp("info ramblock"))

    def stop(self, timeout=30):
        """Quit through QMP, else kill; returns QEMU's exit status."""
        if self.proc.poll() is None:
            try:
                if self.sock is not None or os.path.exists(self.qmp_path):
                    self.qmp("quit", timeout=10)
            except (Fail, OSError, ValueError):
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        try:
            os.unlink(self.qmp_path)
        except OSError:
            pass
        return self.proc.returncode
