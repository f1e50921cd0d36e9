"""A full state directory is survivable: the daemon's journal on a tiny
tmpfs (`mount -t tmpfs -o size=STATE_FS_SIZE`), filled with a file while
the daemon runs, then the file removed.

While the directory is full:
- a change (a pool create, a DELETE, a stock target, a node's count) is
  refused 503 `state-write-failed` with Retry-After, its detail naming the
  state directory, and changes nothing (the refused pool is not listed and
  has no file; the deleted pool is still there and ready; the count is
  back);
- reads answer 200 (health, nodes, pools, a pool, stock, metrics, a
  handoff), and the pool made before keeps working: it stays ready, and
  its file maps, takes a pattern and reads it back.
Once the file is removed: the same changes succeed, and after a restart
every pool answered 201 and not deleted is there, the refused ones are not,
and deleting everything gives node 0's free pages back.

The journal takes what it can while space lasts (a change whose record fits
the log's last page still goes in), so creates are tried until the first
refusal; after a refused save the journal's next save writes a new
snapshot, which a full tmpfs refuses, so from then on every change is
refused until space returns.

Runs under tests/real/guard.sh (real 2 MiB pages, its hugetlbfs); the tmpfs
is mounted in a mount namespace of this test's own (unshare --mount), so it
goes away with the test's last process however it ends, and is unmounted
in a finally as well.  Skips (77) outside guard.sh, without unshare, or
when the kernel will not give the pages."""
import errno
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import hpwreal  # noqa: E402
from hpwreal import PAGE, Failure, check, node0, real_daemon, set_node0_pages  # noqa: E402

PAGES = 48
STATE_FS_SIZE = "256k"            # a journal of a few pools fits; a filler takes the rest
MAX_CREATES = 40                  # creates tried until the journal refuses one
READY_TIMEOUT_S = 30
NS_MARK = "HPW_STATE_FULL_IN_NS"


def fill(path):
    """Write PATH until the file system refuses a single byte."""
    with open(path, "wb", buffering=0) as f:
        for chunk in (65536, 4096, 512, 1):
            buf = b"\xff" * chunk
            while True:
                try:
                    f.write(buf)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break


class StateFull:
    def __init__(self, mnt):
        self.fs = tempfile.mkdtemp(prefix="hpwarm-faults-statefs-")
        self.state = os.path.join(self.fs, "state")
        self.pool_dir = os.path.join(mnt, "hpwarm-faults-statefull-%d" % os.getpid())
        self.filler = os.path.join(self.fs, "filler")
        self.d = None
        self.mounted = False
        self.acked = set()
        self.refused = set()

    def daemon(self):
        self.d = real_daemon(self.pool_dir, self.state, "--log-level", "notice")
        self.d.start()

    def pools(self):
        return hpwreal.pools_by_name(self.d, " while full")

    def files(self):
        return hpwreal.files_in(self.pool_dir)

    def check_refused(self, r, what):
        """R is the retryable refusal of a full state directory."""
        check(r.status == 503, "%s while full: %r" % (what, r))
        check(r.headers.get("content-type") == "application/problem+json", "%s: %r" % (what, r.headers))
        check(r.json["type"] == "urn:hpwarm:problem:state-write-failed", "%s: %r" % (what, r))
        ra = r.headers.get("retry-after", "")
        check(ra.isdigit() and int(ra) > 0, "%s: Retry-After %r" % (what, ra))
        check(self.state in r.json.get("detail", ""), "%s: the detail does not name %s: %r" % (what, self.state, r))

    def wait_ready(self, name):
        r = self.d.get("/v1/pools/%s?wait=ready&timeout=%d" % (name, READY_TIMEOUT_S), timeout=READY_TIMEOUT_S + 10)
        check(r.status == 200 and r.json["state"] == "ready", "pool %s not ready: %r" % (name, r))
        return r.json

    def use_pool(self, path):
        """Map the pool file as a VMM would, write a pattern, read it back."""
        fd = os.open(path, os.O_RDWR)
        try:
            m = mmap.mmap(fd, PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            try:
                m[0:4096] = b"\x5a" * 4096
                check(m[0:4096] == b"\x5a" * 4096, "the pattern written to %s does not read back" % path)
            finally:
                m.close()
        finally:
            os.close(fd)

    def run(self, free0):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0700" % STATE_FS_SIZE, "none", self.fs],
                       check=True)
        self.mounted = True
        self.daemon()
        r = self.d.put("/v1/pools/keep", {"node": 0, "size": "4M"})
        check(r.status == 201, "PUT keep: %r" % r)
        self.acked.add("keep")
        keep = self.wait_ready("keep")

        fill(self.filler)
        # Creates until the journal refuses one (see the top).
        first = None
        for i in range(MAX_CREATES):
            name = "f%d" % i
            r = self.d.put("/v1/pools/" + name, {"node": 0, "size": "2M"})
            if r.status == 201:
                self.acked.add(name)
                continue
            self.check_refused(r, "PUT %s" % name)
            first = name
            break
        check(first is not None, "%d creates in a full state dir all answered 201" % MAX_CREATES)
        self.refused.add(first)
        check(first not in self.pools(), "refused pool %s is listed" % first)
        check(first not in self.files(), "refused pool %s has a file" % first)

        # Every other change is refused now, and changes nothing.
        r = self.d.put("/v1/pools/g0", {"node": 0, "size": "2M"})
        self.check_refused(r, "PUT g0")
        self.refused.add("g0")
        r = self.d.request("DELETE", "/v1/pools/keep")
        self.check_refused(r, "DELETE keep")
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": "2M", "count": 1}]})
        self.check_refused(r, "PUT /v1/stock")
        nr = node0("nr_hugepages")
        r = self.d.put("/v1/nodes/0/hugepages/2M", {"count": nr + 1})
        self.check_refused(r, "PUT /v1/nodes/0/hugepages/2M")
        check(node0("nr_hugepages") == nr, "node 0's count is %d after a refused change, was %d"
              % (node0("nr_hugepages"), nr))

        # Reads answer and the pool made before works.
        for path in ("/v1/health", "/v1/nodes", "/v1/pools", "/v1/pools/keep", "/v1/stock", "/metrics",
                     "/v1/handoff?vmm=qemu&pools=keep"):
            r = self.d.get(path)
            check(r.status == 200, "GET %s while full: %r" % (path, r))
        pools = self.pools()
        check(pools.get("keep", {}).get("state") == "ready", "keep while full: %s" % pools.get("keep"))
        check("g0" not in pools and "g0" not in self.files(), "refused pool g0 is there")
        check(self.d.get("/v1/stock").json["targets"] == [], "a refused stock target was set")
        self.use_pool(keep["path"])

        # Space returns: the same changes work.
        os.unlink(self.filler)
        r = self.d.put("/v1/pools/g0", {"node": 0, "size": "2M"})
        check(r.status == 201, "PUT g0 once space returned: %r" % r)
        self.refused.discard("g0")
        self.acked.add("g0")
        self.wait_ready("g0")
        r = self.d.put("/v1/stock", {"targets": [{"node": 0, "page_size": "2M", "size": "2M", "count": 1}]})
        check(r.status == 200, "PUT /v1/stock once space returned: %r" % r)
        r = self.d.put("/v1/stock", {"targets": []})
        check(r.status == 200, "PUT /v1/stock [] once space returned: %r" % r)
        r = self.d.put("/v1/nodes/0/hugepages/2M", {"count": nr + 1})
        check(r.status == 200, "PUT count %d once space returned: %r" % (nr + 1, r))
        r = self.d.put("/v1/nodes/0/hugepages/2M", {"count": nr})
        check(r.status == 200, "PUT count %d once space returned: %r" % (nr, r))

        # A restart finds what was answered, and only that.
        check(self.d.stop() == 0, "SIGTERM: not exit 0")
        self.d.__exit__()
        self.daemon()
        pools = self.pools()
        for name in sorted(self.acked):
            check(name in pools, "after the restart pool %s (answered 201) is gone" % name)
        for name in sorted(self.refused):
            check(name not in pools, "after the restart refused pool %s is there" % name)
        for name in pools:
            r = self.d.request("DELETE", "/v1/pools/%s?recycle=false" % name)
            check(r.status == 204, "DELETE %s: %r" % (name, r))
        deadline = time.monotonic() + READY_TIMEOUT_S
        while (self.files() or node0("free_hugepages") != free0) and time.monotonic() < deadline:
            time.sleep(0.02)
        check(not self.files(), "files left after deleting every pool: %s" % sorted(self.files()))
        check(node0("free_hugepages") == free0, "node 0 free_hugepages %d after deleting every pool, was %d"
              % (node0("free_hugepages"), free0))
        check(self.d.stop() == 0, "SIGTERM: not exit 0")
        return "%d creates answered 201 before the first refusal, 4 changes refused while full, all back after" % (
            len(self.acked) - 2)

    def cleanup(self):
        if self.d:
            self.d.kill()
            self.d.__exit__()
        if self.mounted:
            subprocess.run(["umount", self.fs])
        shutil.rmtree(self.fs, ignore_errors=True)
        shutil.rmtree(self.pool_dir, ignore_errors=True)


def main():
    mnt = hpwreal.MNT
    rc = hpwreal.script_cannot_run()
    if rc is not None:
        return rc
    if os.environ.get(NS_MARK) != "1":
        if not shutil.which("unshare"):
            print("SKIP: no unshare (util-linux)", file=sys.stderr)
            return 77
        env = dict(os.environ, **{NS_MARK: "1"})
        return subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable,
                               os.path.abspath(__file__)], env=env).returncode
    # PAGES free beside what others hold (a guest outside the guard, say).
    held = node0("nr_hugepages") - node0("free_hugepages")
    got = set_node0_pages(held + PAGES)
    if got < held + PAGES or node0("free_hugepages") < PAGES:
        print("SKIP: the kernel gave %d 2 MiB pages (%d free) of %d" % (got, node0("free_hugepages"), held + PAGES),
              file=sys.stderr)
        return 77
    free0 = node0("free_hugepages")
    t0 = time.monotonic()
    t = StateFull(mnt)
    try:
        print("state_full: ok: %s, %.1fs" % (t.run(free0), time.monotonic() - t0))
        return 0
    except Failure as e:
        print("state_full: FAIL: %s" % e, file=sys.stderr)
        if t.d:
            print("daemon log:\n  " + "\n  ".join(t.d.log[-20:]), file=sys.stderr)
        return 1
    finally:
        t.cleanup()


if __name__ == "__main__":
    sys.exit(main())
