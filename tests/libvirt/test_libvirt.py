"""libvirt.boot: domains that libvirt starts boot on a warm pool through
deploy/libvirt/hpwarm-libvirt-hook, and give it back when they stop.

Run under tests/real/guard.sh (host-wide lock, nr_hugepages restored, private
hugetlbfs in HPW_TEST_HUGETLBFS).  What it starts, it stops, also on failure:

- hpwarmd on a unix socket in a temp dir, pool files group-owned by kvm (as
  the packaged defaults do), pool directory inside the guard's hugetlbfs;
- virtlogd and libvirtd as plain processes inside a private mount namespace
  (unshare -m) in which /run, /etc/libvirt, /etc/default, /var/lib/libvirt,
  /var/log/libvirt and /var/cache/libvirt are bind mounts of temp
  directories: libvirt reads its hooks only from /etc/libvirt/hooks and its
  state from those fixed paths, so this is how the host's libvirt (if any)
  stays undisturbed.  The hook goes into the private hooks/qemu.d/, its
  settings into the private /etc/default/hpwarm-libvirt;
- QEMU (TCG, domain type "qemu"), started by libvirtd as libvirt-qemu with
  Debian's packaged defaults, booting the kernel tests/qemu uses (fetched by
  tests/qemu/prepare.sh into its cache) with a busybox initramfs whose /init
  prints a marker and MemTotal to the serial console, which libvirt writes
  to a file.

Each test uses its own domain and asserts on what the host shows: the pool
object, the monitor's `info ramblock`, HugePages counts, QEMU's groups, the
hook's message in virsh's error."""
import atexit
import glob
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from hpwtest import Daemon, TestCase  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", ".."))
HOOK = os.path.join(SRC, "deploy", "libvirt", "hpwarm-libvirt-hook")
HPWARMD = os.environ.get("HPWARMD", "")
CLI = os.environ.get("HPWARM_CLI", "")
PREPARE = os.path.join(SRC, "tests", "qemu", "prepare.sh")
CHECKER = os.environ.get("HPW_QEMU_CHECK", "")
GUEST_DIR = os.environ.get("HPW_LIBVIRT_GUEST", "")     # build/tests/libvirt/guest
QEMU_CACHE = os.environ.get("HPW_QEMU_CACHE", "")       # build/tests/qemu/guest/cache (shared)
MNT = os.environ.get("HPW_TEST_HUGETLBFS", "")
NODE0 = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/"
PAGE = 2 << 20
MIB = 1 << 20
GUEST_MIB = 256            # every domain's <memory>, and its pool
POOL_PAGES = GUEST_MIB * MIB // PAGE
BOOT_TIMEOUT = 120         # TCG on a loaded 2-core machine
QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
HPW_NS = "urn:hpwarm:libvirt:1"


def skip(why):
    print("SKIP: " + why, file=sys.stderr)
    sys.exit(77)


def read_int(path):
    with open(path) as f:
        return int(f.read().strip())


def meminfo(key):
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, **kw)


class Env:
    """hpwarmd + a private libvirtd/virtlogd, and the guest's kernel and initrd."""

    def __init__(self, tag="", pool_dir=None, host_uuid=None, pool_bind=None, hostname=None):
        """TAG, POOL_DIR, HOST_UUID, POOL_BIND: for a second "host" on this
        machine (tests/libvirt/test_migrate.py): its own hpwarmd pool
        directory, libvirtd's host_uuid (libvirt refuses a migration to a
        host of the same UUID), and a directory bound over another inside
        its namespace, (what, where), so that its pools are at the path the
        other host's are.  HOSTNAME: libvirtd runs in a UTS namespace of
        its own with that hostname (Nova names a compute node after
        libvirt's hostname: tests/openstack/nova.py)."""
        self.tmp = tempfile.mkdtemp(prefix="hpwarm-libvirt-%s" % (tag + "-" if tag else ""))
        os.chmod(self.tmp, 0o755)   # QEMU (libvirt-qemu) reads the kernel and initrd here
        self.ns = os.path.join(self.tmp, "ns")
        self.pool_dir = pool_dir or os.path.join(MNT, "hpwarm")
        self.host_uuid = host_uuid
        self.pool_bind = pool_bind
        self.hostname = hostname
        self.mem_dir = os.path.join(MNT, "libvirt-mem" + ("-" + tag if tag else ""))
        self.sock = os.path.join(self.tmp, "api.sock")
        self.calls = os.path.join(self.tmp, "hpwarm-calls.log")
        self.notes = os.path.join(self.tmp, "hook-notes.log")
        self.daemon = None
        self.libvirtd = None
        self.virtlogd_pid = None
        self.qemu_pids = set()
        self.domains = set()

    # -- hpwarmd --
    def start_daemon(self, extra_args=()):
        self.daemon = Daemon(sysfs_root="/sys", preload=False, listen=False, socket_path=self.sock,
                             state_dir=os.path.join(self.tmp, "state"),
                             args=["--hugetlbfs", "2M=" + self.pool_dir, "--pool-group", "kvm"] + list(extra_args))
        self.daemon.start()

    def stop_daemon(self):
        if self.daemon:
            d, self.daemon = self.daemon, None
            try:
                return d.stop()
            finally:
                d.__exit__()

    # -- private libvirt --
    def start_libvirt(self):
        d = {k: os.path.join(self.ns, k) for k in ("run", "etc", "default", "lib", "log", "cache")}
        for p in d.values():
            os.makedirs(p)
        shutil.copytree("/etc/libvirt", d["etc"], dirs_exist_ok=True, symlinks=True)
        shutil.copytree("/etc/default", d["default"], dirs_exist_ok=True, symlinks=True)
        hooks = os.path.join(d["etc"], "hooks", "qemu.d")
        os.makedirs(hooks, exist_ok=True)
        for f in os.listdir(os.path.join(d["etc"], "hooks")):
            if f != "qemu.d":   # only our hook runs here
                os.remove(os.path.join(d["etc"], "hooks", f))
        shutil.copy(HOOK, os.path.join(hooks, "hpwarm"))
        os.chmod(os.path.join(hooks, "hpwarm"), 0o755)
        # The CLI the hook runs is the real one; it notes each request it
        # makes of hpwarmd in self.calls, in the CLI's words
        # (HPWARM_LIBVIRT_CALLS, write_hook_config).
        # File-backed NUMA cells (hook's cell mode): libvirt's memory files on
        # the same hugetlbfs mount as hpwarmd's pool directory.
        os.makedirs(self.mem_dir, exist_ok=True)
        with open(os.path.join(d["etc"], "qemu.conf"), "a") as f:
            f.write('\nmemory_backing_dir = "%s"\n' % self.mem_dir)
            # Hugepage domains: only the guard's mount, never the host's.
            f.write('hugetlbfs_mount = "%s"\n' % MNT)
        self.write_hook_config()
        if self.host_uuid:
            with open(os.path.join(d["etc"], "libvirtd.conf"), "a") as f:
                f.write('\nhost_uuid = "%s"\n' % self.host_uuid)
        kvm_fix = self.kvm_as_packaged(d["run"])
        if self.pool_bind:
            kvm_fix += '\nmount --bind "%s" "%s"' % self.pool_bind
        if self.hostname:
            kvm_fix += '\nhostname "%s"' % self.hostname
        script = """set -e
%s
mount --bind "$1/run" /run
mount --bind "$1/etc" /etc/libvirt
mount --bind "$1/default" /etc/default
mount --bind "$1/lib" /var/lib/libvirt
mount --bind "$1/log" /var/log/libvirt
mount --bind "$1/cache" /var/cache/libvirt
mkdir -p /run/libvirt
virtlogd -p "$1/virtlogd.pid" >"$1/virtlogd.out" 2>&1 &
echo $! > "$1/virtlogd.child"
exec libvirtd -p "$1/libvirtd.pid" >"$1/libvirtd.out" 2>&1
""" % kvm_fix
        # unshare without --fork execs the shell, which execs libvirtd: Popen's pid is libvirtd's.
        uts = ["--uts"] if self.hostname else []
        self.libvirtd = subprocess.Popen(["unshare", "--mount", "--propagation", "private"] + uts +
                                         ["sh", "-c", script, "sh", self.ns])
        self.uri = "qemu+unix:///system?socket=%s/libvirt/libvirt-sock" % d["run"]
        deadline = time.monotonic() + 60
        while True:
            self.note_virtlogd()
            if self.libvirtd.poll() is not None:
                raise AssertionError("libvirtd exited: " + self.read_ns("libvirtd.out"))
            if run(["virsh", "-c", self.uri, "version"], timeout=30).returncode == 0:
                self.note_virtlogd()   # the shell wrote it before it became libvirtd
                return
            if time.monotonic() > deadline:
                raise AssertionError("libvirtd did not answer within 60 s: " + self.read_ns("libvirtd.out"))
            time.sleep(0.5)

    def kvm_as_packaged(self, where):
        """libvirt re-probes QEMU's capabilities at every lookup (each
        define and start: about 50 s here) when the cached ones say KVM
        while /dev/kvm is not usable by QEMU's user (qemu_capabilities.c
        virQEMUCapsIsValid: "KVM was enabled when probing ..., but it is not
        available now").  That happens on machines whose /dev/kvm is
        root-only, as CI machines without udev's rule have it.  Inside the
        private namespace, give /dev/kvm the packaged owner and mode (root:kvm
        0660, Debian's udev rule): a node of the same device bound over it.
        The domains stay TCG (type "qemu"); nothing outside the namespace
        changes.  Returns the shell line for the namespace script."""
        try:
            st = os.stat("/dev/kvm")
        except OSError:
            return ":"   # no KVM at all: the caches agree already
        kvm = int(run(["getent", "group", "kvm"]).stdout.split(":")[2])
        if stat.S_IMODE(st.st_mode) & 0o060 == 0o060 and st.st_gid == kvm:
            return ":"
        node_dir = os.path.join(where, "kvm-node")
        os.makedirs(node_dir, mode=0o700)
        node = os.path.join(node_dir, "kvm")
        os.mknod(node, 0o660 | stat.S_IFCHR, st.st_rdev)
        os.chown(node, 0, kvm)
        os.chmod(node, 0o660)
        return 'mount --bind "%s" /dev/kvm' % node

    def note_virtlogd(self):
        """virtlogd's pid, as the namespace's shell noted it ($!) or, failing
        that, from virtlogd's own pid file: virtlogd outlives libvirtd."""
        for f in ("virtlogd.child", "virtlogd.pid"):
            if self.virtlogd_pid is None:
                txt = self.read_ns(f).strip()
                self.virtlogd_pid = int(txt) if txt.isdigit() else None

    def read_ns(self, name):
        try:
            with open(os.path.join(self.ns, name), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def write_hook_config(self, url=None, policy="metadata"):
        with open(os.path.join(self.ns, "default", "hpwarm-libvirt"), "w") as f:
            f.write("HPWARM=%s\nHPWARM_URL=%s\nHPWARM_LIBVIRT_TIMEOUT=60\n"
                    "HPWARM_LIBVIRT_MEMORY_BACKING_DIR=%s\nHPWARM_LIBVIRT_POLICY=%s\n"
                    "HPWARM_LIBVIRT_LOG=%s\nHPWARM_LIBVIRT_CALLS=%s\n"
                    % (CLI, url or "unix://" + self.sock, self.mem_dir, policy, self.notes, self.calls))

    def virsh(self, *args, timeout=120):
        return run(["virsh", "-c", self.uri] + list(args), timeout=timeout)

    def qemu_pid(self, dom):
        p = os.path.join(self.ns, "run", "libvirt", "qemu", dom + ".pid")
        try:
            pid = read_int(p)
        except (OSError, ValueError):
            return None
        self.qemu_pids.add(pid)
        return pid

    def stop_libvirt(self):
        # QEMU outlives a libvirtd that dies: note every domain's pid first.
        for f in glob.glob(os.path.join(self.ns, "run", "libvirt", "qemu", "*.pid")):
            self.qemu_pid(os.path.basename(f)[:-4])
        for dom in list(self.domains):
            self.virsh("destroy", dom, timeout=60)
            self.virsh("undefine", dom, timeout=60)
        if self.libvirtd and self.libvirtd.poll() is None:
            self.libvirtd.terminate()
            try:
                self.libvirtd.wait(30)
            except subprocess.TimeoutExpired:
                self.libvirtd.kill()
                self.libvirtd.wait()
        self.note_virtlogd()
        pids = set(self.qemu_pids)
        if self.virtlogd_pid:
            pids.add(self.virtlogd_pid)
        for pid in pids:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    argv0 = f.read().split(b"\0")[0]
                if not argv0.endswith((b"qemu-system-x86_64", b"virtlogd")):
                    continue   # gone, and the pid maybe reused by another process
                os.kill(pid, signal.SIGTERM)
            except (OSError, ProcessLookupError):
                continue
            for _ in range(50):
                if not os.path.exists("/proc/%d" % pid):
                    break
                time.sleep(0.1)
            else:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def close(self):
        try:
            self.stop_libvirt()
        finally:
            if self.daemon:
                try:
                    if self.daemon.proc and self.daemon.proc.poll() is None:
                        for p in (self.daemon.get("/v1/pools").json or {}).get("pools", []):
                            self.daemon.request("DELETE", "/v1/pools/" + p["name"])
                finally:
                    self.daemon.__exit__()
            shutil.rmtree(self.tmp, ignore_errors=True)


ENV = None


def cleanup():
    global ENV
    if ENV is not None:
        env, ENV = ENV, None
        env.close()


def on_sigterm(*_):
    """guard.sh (or ctest through it) stops us with SIGTERM: stop everything
    now, before guard restores nr_hugepages, and run no further test."""
    try:
        cleanup()
    finally:
        os._exit(143)


def build_guest(dest):
    """Kernel (via tests/qemu/prepare.sh and its cache) and our own initramfs."""
    os.makedirs(GUEST_DIR, exist_ok=True)
    cache = os.path.join(GUEST_DIR, "cache")
    if QEMU_CACHE and not os.path.lexists(cache):
        os.makedirs(QEMU_CACHE, exist_ok=True)
        os.symlink(QEMU_CACHE, cache)   # one download for qemu.numa and this test
    r = run([PREPARE, GUEST_DIR, CHECKER, HPWARMD], timeout=600)
    if r.returncode == 77:
        skip("no guest kernel: " + r.stderr.strip())
    if r.returncode != 0:
        raise AssertionError("prepare.sh failed: " + r.stderr)
    bb = sorted(glob.glob(os.path.join(cache, "busybox-static-*", "busybox")))[-1]
    root = os.path.join(dest, "initrd.d")
    os.makedirs(os.path.join(root, "bin"))
    os.makedirs(os.path.join(root, "proc"))
    shutil.copy(bb, os.path.join(root, "bin", "busybox"))
    shutil.copy(os.path.join(HERE, "guest-init.sh"), os.path.join(root, "init"))
    os.chmod(os.path.join(root, "init"), 0o755)
    initrd = os.path.join(dest, "initrd.gz")
    subprocess.run("cd '%s' && find . | '%s' cpio -o -H newc -R 0:0 2>/dev/null | gzip -1 > '%s'"
                   % (root, bb, initrd), shell=True, check=True)
    shutil.rmtree(root)
    kernel = os.path.join(dest, "vmlinuz")
    shutil.copy(os.path.realpath(os.path.join(GUEST_DIR, "vmlinuz")), kernel)
    for f in (kernel, initrd):
        os.chmod(f, 0o644)
    return kernel, initrd


def domain_xml(name, kernel, initrd, serial, metadata=None, fragment="", memory_mib=GUEST_MIB):
    meta = "<metadata>%s</metadata>" % metadata if metadata else ""
    return """<domain type='qemu' xmlns:qemu='%s'>
  <name>%s</name>
  <memory unit='MiB'>%d</memory>
  <vcpu>1</vcpu>
  %s
  <os>
    <type arch='x86_64' machine='q35'>hvm</type>
    <kernel>%s</kernel>
    <initrd>%s</initrd>
    <cmdline>console=ttyS0 panic=-1 quiet</cmdline>
  </os>
  <on_poweroff>destroy</on_poweroff><on_reboot>destroy</on_reboot><on_crash>destroy</on_crash>
  <devices>
    <serial type='file'><source path='%s'/><target port='0'/></serial>
    <memballoon model='none'/>
  </devices>
  %s
</domain>
""" % (QEMU_NS, name, memory_mib, meta, kernel, initrd, serial, fragment)


def pool_meta(size="256M", node=0, required=None):
    req = " required='%s'" % required if required else ""
    return "<hpwarm:pool xmlns:hpwarm='%s' node='%d' size='%s'%s/>" % (HPW_NS, node, size, req)


def hugetlbfs_maps(pid):
    """Process PID's mappings of files on the guard's hugetlbfs, as (inode, bytes, path)."""
    dev = os.stat(MNT).st_dev
    want = "%02x:%02x" % (os.major(dev), os.minor(dev))
    out = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) >= 5 and parts[3] == want and parts[4] != "0":
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((int(parts[4]), hi - lo, parts[5].strip() if len(parts) > 5 else ""))
    return out


def ramblocks(text):
    """`info ramblock` rows as {name: (psize, used_bytes)}; unnamed rows get ''."""
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(\S*)\s+(\d+ [KMG]iB)\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s*$", line)
        if m:
            rows[m.group(1)] = (m.group(2), int(m.group(3), 16))
    return rows


class LibvirtBoot(TestCase):
    @classmethod
    def setUpClass(cls):
        global ENV
        cls.env = ENV = Env()
        cls.kernel, cls.initrd = build_guest(ENV.tmp)
        # Enough pages for one pool and one cold start at a time, plus slack.
        want = POOL_PAGES + 64
        with open(NODE0 + "nr_hugepages", "w") as f:
            f.write("%d\n" % want)
        if read_int(NODE0 + "nr_hugepages") < want:
            skip("kernel gave fewer than %d 2 MiB pages" % want)
        ENV.start_daemon()
        ENV.start_libvirt()

    @classmethod
    def tearDownClass(cls):
        cleanup()

    # -- helpers --
    def define(self, name, keep_pool=False, **kw):
        """Define domain NAME; with metadata, its <qemu:commandline> is what
        `hpwarm handoff NAME --vmm libvirt` prints, as README's recipe says.
        The handoff describes a ready pool, so the pool is warmed first and,
        unless KEEP_POOL, released again so that the hook warms it itself."""
        serial = os.path.join(self.env.tmp, name + ".serial.log")
        path = os.path.join(self.env.pool_dir, name)
        frag = ""
        # The domain's UUID chosen up front, as the recipe does: a pool warmed
        # before the domain exists carries the label its hook will ask for.
        dom_uuid = str(uuid.uuid4())
        if kw.get("metadata"):
            url = "unix://" + self.env.sock
            r = run([CLI, "--url", url, "warm", name, "--node", "0", "--size", "%dM" % GUEST_MIB,
                     "--ttl", "600", "--wait", "--timeout", "60", "--label", "libvirt:" + dom_uuid])
            self.assertEqual(r.returncode, 0, r.stderr)
            h = run([CLI, "--url", url, "handoff", name, "--vmm", "libvirt"])
            if not keep_pool:
                r = run([CLI, "--url", url, "release", name])
                self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(h.returncode, 0, h.stderr)
            frag = h.stdout
            self.assertIn("mem-path=%s," % path, frag)
        xml = domain_xml(name, self.kernel, self.initrd, serial, fragment=frag, **kw).replace(
            "</name>", "</name>\n  <uuid>%s</uuid>" % dom_uuid, 1)
        self.frags = getattr(self, "frags", {})
        self.frags[name] = frag
        self.define_xml(name, xml)
        return serial, path

    def undefine(self, name):
        self.env.virsh("destroy", name, timeout=60)
        self.env.virsh("undefine", name, timeout=60)
        self.env.domains.discard(name)

    def pool(self, name):
        return self.env.daemon.get("/v1/pools/" + name)

    def wait_serial(self, serial, pattern, timeout=BOOT_TIMEOUT):
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            try:
                with open(serial, errors="replace") as f:
                    text = f.read()
            except OSError:
                text = ""
            m = re.search(pattern, text)
            if m:
                return m
            time.sleep(0.5)
        self.fail("guest never printed /%s/ within %ds; serial tail:\n%s" % (pattern, timeout, text[-2000:]))

    def calls(self):
        try:
            with open(self.env.calls) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def free_pages(self):
        return read_int(NODE0 + "free_hugepages")

    # -- the tests --
    def test_warm_boot_claim_release(self):
        """Opted in: prepare warms, started claims with QEMU's pid, the guest's
        RAM is the pool on 2 MiB pages, free pages do not drop while it runs,
        destroy releases the pool and every page comes back."""
        name = "hpw-lv-warm"
        serial, path = self.define(name, metadata=pool_meta())
        self.assertEqual(self.pool(name).status, 404, "no pool before the start")
        total0 = read_int(NODE0 + "nr_hugepages")
        free0 = self.free_pages()
        r = self.env.virsh("start", name)
        self.assertEqual(r.returncode, 0, r.stderr + self.env.read_ns("log/qemu/%s.log" % name))
        qpid = self.env.qemu_pid(name)
        self.assertIsNotNone(qpid, "libvirt wrote no pid file")

        p = self.pool(name)
        self.assertEqual(p.status, 200, p)
        self.assertEqual(p.json["state"], "ready", p.json)
        self.assertEqual(p.json["size_bytes"], GUEST_MIB * MIB)
        self.assertEqual(p.json["node"], 0)
        self.assertEqual(p.json["path"], path)
        self.assertTrue(p.json["claimed"], "started begin claims the pool")
        claims = [c for c in self.calls() if c.startswith("claim %s" % name)]
        self.assertTrue(claims, self.calls())
        self.assertIn("--pid %d" % qpid, claims[0], "the claim names QEMU's pid")
        self.assertEqual(p.json["owner_pid"], qpid, "the daemon binds the pool to QEMU")

        # Pool file: group kvm, 0660; QEMU runs as libvirt-qemu with kvm among its groups.
        st = os.stat(path)
        kvm = int(run(["getent", "group", "kvm"]).stdout.split(":")[2])
        self.assertEqual(st.st_gid, kvm)
        self.assertEqual(st.st_mode & 0o777, 0o660)
        with open("/proc/%d/status" % qpid) as f:
            status = f.read()
        uid = int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1))
        groups = [int(g) for g in re.search(r"^Groups:\s*(.*)$", status, re.M).group(1).split()]
        self.assertNotEqual(uid, 0, "QEMU runs unprivileged, as under a packaged libvirt")
        self.assertIn(kvm, groups)

        m = self.wait_serial(serial, r"HPWARM-LIBVIRT-MEM MemTotal:\s+(\d+) kB")
        with open(serial, errors="replace") as f:
            self.assertIn("HPWARM-LIBVIRT-INIT reached", f.read())
        mem_kb = int(m.group(1))
        self.assertTrue(GUEST_MIB * 1024 * 0.6 < mem_kb <= GUEST_MIB * 1024, mem_kb)

        r = self.env.virsh("qemu-monitor-command", name, "--hmp", "info ramblock")
        self.assertEqual(r.returncode, 0, r.stderr)
        print(r.stdout, file=sys.stderr)
        rows = ramblocks(r.stdout)
        self.assertIn("mem-" + name, rows, r.stdout)
        self.assertEqual(rows["mem-" + name], ("2 MiB", GUEST_MIB * MIB), r.stdout)
        # Every 2 MiB page was the pool's: the node lost exactly the pool's
        # pages, when it was warmed, and none more while QEMU booted the guest.
        self.assertEqual(read_int(NODE0 + "nr_hugepages"), total0, "enough pages: --reserve grew nothing")
        self.assertEqual(self.free_pages(), free0 - POOL_PAGES)
        # libvirt's own RAM object (the unnamed row) exists but is never
        # touched: QEMU's anonymous memory stays well below the guest's size.
        with open("/proc/%d/status" % qpid) as f:
            rss_anon_kb = int(re.search(r"^RssAnon:\s+(\d+) kB", f.read(), re.M).group(1))
        self.assertLess(rss_anon_kb, GUEST_MIB * 1024 // 2, "guest RAM is not anonymous memory")

        r = self.env.virsh("destroy", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.pool(name).status, 404, "release end released the pool")
        self.assertFalse(os.path.exists(path))
        self.assertEqual(self.free_pages(), free0, "every page is back")
        self.assertEqual(meminfo("HugePages_Free"), meminfo("HugePages_Total"))

    def test_two_cells_boot_on_two_pools(self):
        """A two-cell domain (file-backed, shared cells): each cell gets its
        own pool, linked by the hook as libvirt's ram-node<i> file; both are
        2 MiB-page RAM in info ramblock; free pages do not drop while the
        guest boots; destroy releases both and every page is back."""
        name = "hpw-lv-cells"
        half = GUEST_MIB // 2
        cells = ("<cpu><numa><cell id='0' cpus='0' memory='%d' unit='MiB' memAccess='shared'/>"
                 "<cell id='1' cpus='1' memory='%d' unit='MiB' memAccess='shared'/></numa></cpu>"
                 "<memoryBacking><source type='file'/><access mode='shared'/></memoryBacking>" % (half, half))
        meta = ("<hpwarm:pools xmlns:hpwarm='%s'>" % HPW_NS
                + "".join("<hpwarm:pool cell='%d' node='0' size='%dM'/>" % (c, half) for c in (0, 1))
                + "</hpwarm:pools>")
        serial = os.path.join(self.env.tmp, name + ".serial.log")
        xml = domain_xml(name, self.kernel, self.initrd, serial, metadata=meta).replace(
            "<vcpu>1</vcpu>", "<vcpu>2</vcpu>" + cells)
        self.define_xml(name, xml)
        free0 = self.free_pages()
        r = self.env.virsh("start", name)
        self.assertEqual(r.returncode, 0, r.stderr + self.env.read_ns("log/qemu/%s.log" % name))
        qpid = self.env.qemu_pid(name)
        pools = ["%s-cell%d" % (name, c) for c in (0, 1)]
        for c, pname in enumerate(pools):
            p = self.pool(pname)
            self.assertEqual(p.status, 200, p)
            self.assertEqual((p.json["state"], p.json["size_bytes"], p.json["claimed"], p.json["owner_pid"]),
                             ("ready", half * MIB, True, qpid), p.json)
            links = glob.glob(os.path.join(self.env.mem_dir, "libvirt", "qemu", "*-" + name, "ram-node%d" % c))
            self.assertEqual(len(links), 1, links)
            self.assertEqual(os.stat(links[0]).st_ino, os.stat(p.json["path"]).st_ino,
                             "cell %d's file is the pool" % c)
        # One claim per pool naming QEMU's pid (a CLI without --pid is then
        # asked again without it).
        claims = [c for c in self.calls() if c.startswith("claim %s-cell" % name) and "--pid" in c]
        self.assertEqual(sorted(c.split()[1] for c in claims), pools, self.calls())
        self.assertTrue(all("--pid %d " % qpid in c for c in claims), claims)
        self.wait_serial(serial, r"HPWARM-LIBVIRT-MEM MemTotal:\s+(\d+) kB")
        r = self.env.virsh("qemu-monitor-command", name, "--hmp", "info ramblock")
        print(r.stdout, file=sys.stderr)
        rows = ramblocks(r.stdout)
        for c in (0, 1):
            self.assertEqual(rows.get("ram-node%d" % c), ("2 MiB", half * MIB), r.stdout)
        self.assertEqual(self.free_pages(), free0 - POOL_PAGES, "the pools' pages and no others")
        r = self.env.virsh("destroy", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        for pname in pools:
            self.assertEqual(self.pool(pname).status, 404)
        self.assertEqual(self.free_pages(), free0, "every page is back")

    def test_prewarmed_pool_taken_as_is(self):
        """README's recipe: the pool is warmed first (hpwarm warm ... --wait),
        then the domain starts: the hook takes that ready pool, warms nothing
        new, claims it; destroy releases it."""
        name = "hpw-lv-prewarmed"
        free0 = self.free_pages()
        # README: warm, handoff, define with it, start.
        _, path = self.define(name, keep_pool=True, metadata=pool_meta())
        before = self.pool(name).json
        self.assertEqual(before["state"], "ready", before)
        r = self.env.virsh("start", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.env.qemu_pid(name)
        after = self.pool(name).json
        self.assertEqual(after["started_at"], before["started_at"], "the same pool, not a new one")
        self.assertEqual(after["path"], path)
        self.assertTrue(after["claimed"])
        self.assertEqual(self.free_pages(), free0 - POOL_PAGES, "no second set of pages")
        r = self.env.virsh("destroy", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.pool(name).status, 404)
        self.assertEqual(self.free_pages(), free0)

    def test_other_domains_pool_refused_and_kept(self):
        """A second domain whose metadata names a running domain's pool (same
        size, the same <qemu:commandline>): virsh start fails naming the
        other domain's pool, and the release libvirt runs after that failed
        prepare leaves the running domain's pool in place, claimed."""
        a, b = "hpw-lv-owner", "hpw-lv-intruder"
        self.define(a, metadata=pool_meta())
        r = self.env.virsh("start", a)
        self.assertEqual(r.returncode, 0, r.stderr)
        qpid = self.env.qemu_pid(a)
        serial = os.path.join(self.env.tmp, b + ".serial.log")
        meta = "<hpwarm:pool xmlns:hpwarm='%s' node='0' size='256M' pool='%s'/>" % (HPW_NS, a)
        xml = domain_xml(b, self.kernel, self.initrd, serial, metadata=meta, fragment=self.frags[a])
        self.define_xml(b, xml)
        r = self.env.virsh("start", b)
        self.assertNotEqual(r.returncode, 0, "a second domain started on a running domain's pool")
        self.assertIn("pool '%s' exists for another domain" % a, r.stderr)
        p = self.pool(a)
        self.assertEqual(p.status, 200, "the other domain's release deleted the running domain's pool")
        self.assertEqual((p.json["claimed"], p.json["owner_pid"]), (True, qpid), p.json)
        self.assertEqual(self.env.virsh("destroy", a).returncode, 0)
        self.assertEqual(self.pool(a).status, 404)

    def test_no_metadata_untouched(self):
        """A domain without <hpwarm:pool> starts on libvirt's own RAM; the hook
        never calls hpwarm and no pool appears."""
        name = "hpw-lv-plain"
        self.define(name)
        before = len(self.calls())
        free0 = self.free_pages()
        r = self.env.virsh("start", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.env.qemu_pid(name)
        self.assertEqual(self.calls()[before:], [], "the hook ran hpwarm for a domain that did not opt in")
        self.assertEqual(self.env.daemon.get("/v1/pools").json["pools"], [])
        self.assertEqual(self.free_pages(), free0)
        r = self.env.virsh("destroy", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[before:], [])

    def test_size_mismatch_refused(self):
        """<hpwarm:pool size> other than <memory>: the start fails with the
        hook's message in virsh's error, and nothing is warmed."""
        name = "hpw-lv-mismatch"
        self.define(name, metadata=pool_meta(size="512M"))
        before = len(self.calls())
        r = self.env.virsh("start", name)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        print("virsh start said: " + r.stderr.strip(), file=sys.stderr)
        self.assertIn("differs from the domain's <memory>", r.stderr)
        self.assertIn("hpwarm hook: domain '%s'" % name, r.stderr)
        self.assertEqual(self.calls()[before:], [])
        self.assertEqual(self.pool(name).status, 404)
        self.assertIn("shut off", self.env.virsh("domstate", name).stdout)

    def test_daemon_down_required_fails(self):
        """hpwarmd down and required (the default): the start fails and says
        the daemon is unreachable; no QEMU runs."""
        name = "hpw-lv-down"
        self.define(name, metadata=pool_meta())
        self.env.stop_daemon()
        try:
            r = self.env.virsh("start", name)
            self.assertNotEqual(r.returncode, 0, r.stdout)
            print("virsh start said: " + r.stderr.strip(), file=sys.stderr)
            self.assertIn("hpwarmd is unreachable", r.stderr)
            self.assertIn("refusing to start", r.stderr)
            self.assertIn("shut off", self.env.virsh("domstate", name).stdout)
        finally:
            self.env.start_daemon()

    def test_daemon_down_not_required_starts_cold(self):
        """hpwarmd down and required="no": the domain starts cold on a file
        the hook made (QEMU preallocates it), and release removes it."""
        name = "hpw-lv-cold"
        serial, path = self.define(name, metadata=pool_meta(required="no"))
        # The pool directory must exist (hpwarmd made it at its first start).
        self.assertTrue(os.path.exists(os.path.join(self.env.pool_dir, ".hpwarm-pool-dir")))
        free0 = self.free_pages()
        self.env.stop_daemon()
        try:
            r = self.env.virsh("start", name)
            self.assertEqual(r.returncode, 0, r.stderr + self.env.read_ns("log/qemu/%s.log" % name))
            self.env.qemu_pid(name)
            self.wait_serial(serial, r"HPWARM-LIBVIRT-INIT reached")
            r = self.env.virsh("qemu-monitor-command", name, "--hmp", "info ramblock")
            self.assertEqual(ramblocks(r.stdout).get("mem-" + name), ("2 MiB", GUEST_MIB * MIB), r.stdout)
            # Cold: QEMU faulted the pages itself.
            self.assertEqual(self.free_pages(), free0 - POOL_PAGES)
            r = self.env.virsh("destroy", name)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertFalse(os.path.exists(path), "release end removes the cold file")
            self.assertEqual(self.free_pages(), free0)
        finally:
            self.env.start_daemon()

    # -- host policy: hugepage domains as OpenStack Nova writes them --
    def nova_xml(self, name, serial, cells=1, shared=True):
        """A domain the way Nova's libvirt driver writes a hugepage flavor
        (hw:mem_page_size=2MB on a one-node host): <hugepages> with a page
        per cell, shared access, <numatune> strict with one memnode per
        cell, the cells in <cpu><numa>, <nova:instance> metadata; no hpwarm
        element, no <qemu:commandline>."""
        kib = GUEST_MIB * 1024 // max(cells, 1)
        acc = " memAccess='shared'" if shared else ""
        nodes = ",".join(str(c) for c in range(cells))
        cellxml = "".join("<cell id='%d' cpus='%d' memory='%d' unit='KiB'%s/>" % (c, c, kib, acc)
                          for c in range(cells))
        memnodes = "".join("<memnode cellid='%d' mode='strict' nodeset='0'/>" % c for c in range(cells))
        meta = ("<nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'>"
                "<nova:package version='27.1.0'/><nova:name>%s</nova:name>"
                "<nova:flavor name='hp.small'><nova:memory>%d</nova:memory><nova:vcpus>%d</nova:vcpus>"
                "</nova:flavor><nova:owner><nova:user uuid='u1'>demo</nova:user>"
                "<nova:project uuid='p1'>demo</nova:project></nova:owner></nova:instance>"
                % (name, GUEST_MIB, cells))
        backing = ("<memoryBacking><hugepages><page size='2048' unit='KiB'%s/></hugepages>%s"
                   "</memoryBacking>" % (" nodeset='%s'" % nodes if cells else "",
                                         "<access mode='shared'/>" if shared else ""))
        numa = "<numatune><memory mode='strict' nodeset='0'/>%s</numatune>" % memnodes
        if cells:
            numa += "<cpu><numa>%s</numa></cpu>" % cellxml
        return domain_xml(name, self.kernel, self.initrd, serial, metadata=meta).replace(
            "<vcpu>1</vcpu>", "<vcpu>%d</vcpu>%s%s" % (max(cells, 1), backing, numa))

    def define_xml(self, name, xml):
        """Define domain NAME from XML (written beside the env's files);
        undefined when the test ends."""
        f = os.path.join(self.env.tmp, name + ".xml")
        with open(f, "w") as out:
            out.write(xml)
        r = self.env.virsh("define", f)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.env.domains.add(name)
        self.addCleanup(self.undefine, name)

    def use_policy(self):
        self.env.write_hook_config(policy="hugepages")
        self.addCleanup(self.env.write_hook_config)

    def notes(self, name):
        try:
            with open(self.env.notes) as f:
                return [ln for ln in f.read().splitlines() if "domain '%s'" % name in ln]
        except FileNotFoundError:
            return []

    def hugetlbfs_maps(self, pid):
        return hugetlbfs_maps(pid)

    def mapped_anywhere(self, ino):
        """Processes mapping inode INO of the guard's hugetlbfs."""
        dev = os.stat(MNT).st_dev
        want = "%02x:%02x" % (os.major(dev), os.minor(dev))
        pids = []
        for maps in glob.glob("/proc/[0-9]*/maps"):
            try:
                with open(maps) as f:
                    for line in f:
                        parts = line.split(None, 5)
                        if len(parts) >= 5 and parts[3] == want and parts[4] == str(ino):
                            pids.append(maps.split("/")[2])
                            break
            except OSError:
                continue
        return pids

    def domain_dir(self, dom_id, name):
        return os.path.join(MNT, "libvirt", "qemu", "%d-%s" % (dom_id, name[:20]))

    def test_policy_nova_domain_boots_on_warm_pool(self):
        """hugepages policy: a Nova-shaped one-cell domain, no hpwarm XML,
        boots on a warm pool.  QEMU's mapping of guest RAM is the pool's
        inode, the node's free hugepages do not move while QEMU starts, the
        domain is not tainted; destroy leaves nothing holding the pool and
        every page is back."""
        self.boot_warm("instance-0000002a", 1, "ram-node0")

    def test_policy_domain_without_cells_boots_on_warm_pool(self):
        """hugepages policy: the same without <numa> cells (libvirt's pc.ram
        backend, a <page> without nodeset, <numatune><memory> only)."""
        self.boot_warm("hpw-lv-hp-nocells", 0, "pc.ram")

    def boot_warm(self, name, cells, ramblock):
        serial = os.path.join(self.env.tmp, name + ".serial.log")
        self.use_policy()
        self.define_xml(name, self.nova_xml(name, serial, cells=cells))
        total0, free0 = read_int(NODE0 + "nr_hugepages"), self.free_pages()
        r = self.env.virsh("start", name)
        self.assertEqual(r.returncode, 0, r.stderr + self.env.read_ns("log/qemu/%s.log" % name))
        qpid = self.env.qemu_pid(name)
        p = self.pool(name)
        self.assertEqual(p.status, 200, p)
        self.assertEqual((p.json["state"], p.json["size_bytes"], p.json["node"], p.json["claimed"],
                          p.json["owner_pid"]), ("ready", GUEST_MIB * MIB, 0, True, qpid), p.json)
        pool_ino = os.stat(p.json["path"]).st_ino
        maps = self.hugetlbfs_maps(qpid)
        print("QEMU's hugetlbfs mappings: %s; pool inode %d" % (maps, pool_ino), file=sys.stderr)
        self.assertEqual([(i, n) for i, n, _ in maps], [(pool_ino, GUEST_MIB * MIB)],
                         "guest RAM is the pool file, and nothing else on hugetlbfs")
        # The warm pages were the pool's before QEMU ran; QEMU took none.
        self.assertEqual(read_int(NODE0 + "nr_hugepages"), total0)
        self.assertEqual(self.free_pages(), free0 - POOL_PAGES, "QEMU's start allocated no hugepage")
        self.wait_serial(serial, r"HPWARM-LIBVIRT-MEM MemTotal:\s+(\d+) kB")
        # Before the monitor command below, which taints it (custom-monitor) itself.
        log = self.env.read_ns("log/qemu/%s.log" % name)
        self.assertIn("starting up libvirt", log)
        self.assertNotIn("taint", log.lower(), "libvirt marked the domain tainted")
        r = self.env.virsh("qemu-monitor-command", name, "--hmp", "info ramblock")
        self.assertEqual(ramblocks(r.stdout).get(ramblock), ("2 MiB", GUEST_MIB * MIB), r.stdout)
        self.assertEqual(self.free_pages(), free0 - POOL_PAGES, "the booted guest touched only pool pages")
        dom_id = int(self.env.virsh("domid", name).stdout.strip())
        d = self.domain_dir(dom_id, name)
        self.assertTrue(os.path.isdir(d) and os.listdir(d) == [], "libvirt's directory is back, empty")
        self.assertNotIn("qemu:commandline", self.env.virsh("dumpxml", name).stdout)
        self.assertEqual(self.notes(name), [])
        r = self.env.virsh("destroy", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.pool(name).status, 404, "release end gave the pool back")
        self.assertEqual(self.mapped_anywhere(pool_ino), [], "nothing maps the pool's inode")
        self.assertFalse(os.path.exists(d), "libvirt cleaned its directory as it expects to")
        self.assertEqual(self.free_pages(), free0, "every page is back")

    def boot_cold(self, name, cells, shared, why):
        serial = os.path.join(self.env.tmp, name + ".serial.log")
        self.use_policy()
        self.define_xml(name, self.nova_xml(name, serial, cells=cells, shared=shared))
        before = len(self.calls())
        free0 = self.free_pages()
        r = self.env.virsh("start", name)
        self.assertEqual(r.returncode, 0, r.stderr + self.env.read_ns("log/qemu/%s.log" % name))
        qpid = self.env.qemu_pid(name)
        self.wait_serial(serial, r"HPWARM-LIBVIRT-INIT reached")
        notes = self.notes(name)
        print("hook said: %s" % notes, file=sys.stderr)
        self.assertEqual(len(notes), 1, notes)
        self.assertIn(why, notes[0])
        self.assertEqual(self.calls()[before:], [], "no pool was warmed")
        self.assertEqual(self.env.daemon.get("/v1/pools").json["pools"], [])
        maps = self.hugetlbfs_maps(qpid)
        print("QEMU's hugetlbfs mappings: %s" % maps, file=sys.stderr)
        self.assertEqual(len({i for i, _, _ in maps}), cells, "one file of QEMU's own per cell")
        self.assertTrue(all(path.startswith(os.path.join(MNT, "libvirt", "qemu") + "/") and
                            path.endswith("(deleted)") for _, _, path in maps),
                        "QEMU's temporary files in libvirt's directory, not a pool file")
        self.assertEqual(sum(n for _, n, _ in maps), GUEST_MIB * MIB)
        self.assertEqual(self.free_pages(), free0 - POOL_PAGES, "cold: QEMU faulted the pages itself")
        r = self.env.virsh("destroy", name)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.free_pages(), free0)

    def test_policy_private_domain_starts_cold(self):
        """hugepages policy: without shared access QEMU would map a pool
        copy-on-write; the domain boots cold on QEMU's own file, one line
        says why."""
        self.boot_cold("hpw-lv-private", 1, False, "memory access is private")

    def test_policy_two_cells_start_cold(self):
        """hugepages policy: libvirt gives both cells' backends the same
        path; the domain boots cold, each cell on its own file."""
        self.boot_cold("hpw-lv-nova2", 2, True, "2 NUMA cells")


def main():
    if not MNT:
        skip("not under tests/real/guard.sh")
    for tool in ("virsh", "libvirtd", "virtlogd", "unshare", "qemu-system-x86_64"):
        if not shutil.which(tool):
            skip(tool + " not installed (scripts/deps.sh installs it)")
    for f, what in ((HPWARMD, "HPWARMD"), (CLI, "HPWARM_CLI"), (CHECKER, "HPW_QEMU_CHECK")):
        if not f or not os.path.exists(f):
            raise SystemExit(what + " is not set to a built binary")
    atexit.register(cleanup)
    signal.signal(signal.SIGTERM, on_sigterm)
    unittest.main(verbosity=2)


if __name__ == "__main__":
    main()
