"""Failed system calls on the daemon's own plumbing, injected with strace
(`-e inject=write:error=ENOSPC:when=N`) into the fixture daemon: a failed
write must never leave a request unanswered.

strace counts a call's occurrences per thread, so `when=2` fails the second
write of every thread: the main thread's second log line, and a work
thread's wake-up of libmicrohttpd after its first job (the first is the
nr_hugepages write).  libmicrohttpd ignores a failed wake-up; before
http.c woke its polling thread another way, the answer was never sent.
tests/real/fault_sweep.py sweeps every syscall on real pages; these are
its findings pinned as regressions, on the fixture so they run in seconds.

Skips (77) without strace or where ptrace is refused."""
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hpwtest import FAKEKERNEL, HPWARMD, Daemon, TestCase, node_hp  # noqa: E402

ANSWER_S = 10          # far above any answer's time; a lost one never comes
# LeakSanitizer cannot run under ptrace (it aborts at exit): off for a
# sanitized daemon under strace; ASan's other checks stay on.
TRACED_ENV = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0:detect_leaks=0"}


def strace_usable():
    if not shutil.which("strace"):
        return "no strace (scripts/deps.sh --test installs it)"
    r = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=none", "true"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return None if r.returncode == 0 else "strace cannot trace here: %s" % r.stderr.decode()[-200:]


def injecting(spec, *extra):
    """A Daemon.wrapper running the daemon under strace with the fault SPEC
    (`write:error=ENOSPC:when=2`) and strace's EXTRA arguments.  The fake
    kernel is passed to the daemon alone (strace -E), not preloaded into
    strace."""
    w = ["env", "-u", "LD_PRELOAD", "strace", "-f", "-qq", "-o", "/dev/null", *extra,
         "-e", "trace=" + spec.split(":")[0], "-e", "inject=" + spec]
    if FAKEKERNEL:
        w += ["-E", "LD_PRELOAD=" + FAKEKERNEL]
    return w


class LostWakeup(TestCase):
    def setUp(self):
        why = strace_usable()
        if why:
            self.skipTest(why)

    def assertAnswered(self, r):
        """A success, or a problem+json with its detail (the injected write
        may be the nr_hugepages write itself: 500 sysfs-error)."""
        if not 200 <= r.status < 300:
            self.assertProblem(r, r.status)

    def test_reserve_answered_when_its_wakeup_write_fails(self):
        """Four node count changes in a row (deferred to the work threads):
        each is answered, though the wake-up after each work thread's first
        job fails."""
        with Daemon(env=TRACED_ENV, wrapper=injecting("write:error=ENOSPC:when=2")) as d:
            base = d.read_u64(node_hp(0, 2048, "nr_hugepages"))
            for i in range(4):
                self.assertAnswered(d.put("/v1/nodes/0/hugepages/2M", {"count": base + 1 + i}, timeout=ANSWER_S))
            r = d.get("/v1/health", timeout=ANSWER_S)
            self.assertEqual(r.status, 200, r)
            self.assertIsNotNone(d.wait_log(r"could not wake its http-tcp thread", timeout=1), d.log[-10:])

    def test_reserve_answered_when_every_wakeup_write_fails(self):
        """Every write to an eventfd fails (strace's path filter names them
        anon_inode:[eventfd]), every other write succeeds: each answer still
        comes, each through the listening socket."""
        with Daemon(env=TRACED_ENV, wrapper=injecting("write:error=ENOSPC:when=1+", "-P", "anon_inode:[eventfd]")) as d:
            base = d.read_u64(node_hp(0, 2048, "nr_hugepages"))
            for i in range(4):
                r = d.put("/v1/nodes/0/hugepages/2M", {"count": base + 1 + i}, timeout=ANSWER_S)
                self.assertEqual(r.status, 200, r)
            self.assertEqual(d.get("/v1/health", timeout=ANSWER_S).status, 200)


class ThreadStart(TestCase):
    """pthread_create failing (clone3 EAGAIN, as under a pids cgroup limit)
    at the daemon's Nth thread, for every thread it starts: it either runs
    (the thread was optional) or exits non-zero with an error line saying
    why, never silently."""
    THREADS = 14       # more than the fixture daemon starts (its runs past the last start listen)

    def setUp(self):
        why = strace_usable()
        if why:
            self.skipTest(why)

    def test_each_failed_thread_start_said_why(self):
        for n in range(1, self.THREADS + 1):
            with self.subTest(thread=n):
                d = Daemon(env=TRACED_ENV, wrapper=injecting("clone3:error=EAGAIN:when=%d" % n))
                try:
                    d.start(expect_ok=False)
                    line = d.wait_log(r"listening on ", timeout=ANSWER_S)
                    if line is not None:
                        continue
                    self.assertIsNotNone(d.proc.poll(), "neither listening nor exited")
                    self.assertGreater(d.proc.returncode, 0, d.log)
                    log = d.read_all_log()
                    self.assertRegex(log, r"(^|\n)\S+ error: ", log)
                finally:
                    d.__exit__()


if __name__ == "__main__":
    if not HPWARMD:
        print("HPWARMD is not set", file=sys.stderr)
        sys.exit(2)
    unittest.main(verbosity=2)
