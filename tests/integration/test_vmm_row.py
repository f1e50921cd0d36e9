"""integration.vmm_row: a VMM format is one row and one composer file.

hpwarmd_vmm_row and hpwarm_vmm_row are the shipped daemon and CLI linked
with one row more (tests/vmm_row/row.def: "test-vmm", alias "tv", as=
refused) and its composer (tests/vmm_row/handoff_testvmm.c); nothing else
knows the format (tests/vmm_row/README.md).  On the fixture daemon, whose
pools warm in a tmpfs directory posing as hugetlbfs (fakekernel), the new
format must be composed in every pool object, answered by GET /v1/handoff
and printed by the CLI, with the shipped formats unchanged beside it.

Environment (set by ctest): HPWARMD_VMM_ROW, HPWARM_CLI_VMM_ROW, HPWARM_CLI
(the shipped CLI), HPW_FIXTURES, HPW_FAKEKERNEL."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import hpwtest
from hpwtest import Daemon, TestCase, main

DAEMON = os.environ.get("HPWARMD_VMM_ROW", "")
CLI = os.environ.get("HPWARM_CLI_VMM_ROW", "")
SHIPPED_CLI = os.environ.get("HPWARM_CLI", "")


def words(path, size=4194304, node=0, ident="vm-t"):
    return ["--ram", "id=%s,file=%s,size=%d,node=%d" % (ident, path, size, node)]


class VmmRow(TestCase):
    @classmethod
    def setUpClass(cls):
        if not (DAEMON and CLI and hpwtest.FAKEKERNEL):
            raise unittest.SkipTest("HPWARMD_VMM_ROW, HPWARM_CLI_VMM_ROW and HPW_FAKEKERNEL must be set")
        hpwtest.HPWARMD = DAEMON
        cls.shm = tempfile.mkdtemp(prefix="hpwarm-vmm-row-", dir="/dev/shm")
        cls.d = Daemon("two-node", env={"HPW_FAKE_HUGETLBFS_2M": cls.shm},
                       args=["--hugetlbfs", "2M=" + os.path.join(cls.shm, "pools")]).start()
        for name in ("vm-t", "vm-u"):
            r = cls.d.put("/v1/pools/" + name, {"node": 0, "size": "4M", "page_size": "2M"})
            assert r.status == 201, (r.status, r.body)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pools = cls.d.get("/v1/pools").json["pools"]
            if all(p["state"] == "ready" for p in pools):
                break
            time.sleep(0.05)
        cls.path = cls.d.get("/v1/pools/vm-t").json["path"]
        cls.url = "http://127.0.0.1:%d" % cls.d.port

    @classmethod
    def tearDownClass(cls):
        cls.d.__exit__()
        shutil.rmtree(cls.shm, ignore_errors=True)

    def cli(self, *args, cli=None):
        return subprocess.run([cli or CLI, "--url", self.url] + list(args), capture_output=True, text=True,
                              timeout=30)

    def test_every_pool_object_composes_the_row(self):
        for r in (self.d.get("/v1/pools/vm-t"), self.d.get("/v1/pools")):
            self.assertEqual(r.status, 200)
            pool = r.json if "name" in r.json else r.json["pools"][0]
            ho = pool["handoff"]
            self.assertEqual(ho["testvmm"], " ".join(words(self.path)))
            self.assertEqual(ho["testvmm_argv"], words(self.path))
            # The shipped formats first, in their order, the row after them.
            self.assertEqual(list(ho), ["qemu", "qemu_argv", "cloud_hypervisor", "cloud_hypervisor_argv",
                                        "libvirt", "testvmm", "testvmm_argv"])

    def test_get_handoff_answers_the_row(self):
        r = self.d.get("/v1/handoff?vmm=test-vmm&pools=vm-t,vm-u")
        self.assertEqual(r.status, 200, r.body)
        u = self.d.get("/v1/pools/vm-u").json["path"]
        self.assertEqual(r.json["vmm"], "test-vmm")
        self.assertEqual(r.json["argv"], words(self.path) + words(u, ident="vm-u"))
        self.assertEqual(r.json["note"], "test-vmm: the guest's memory is 8M")
        self.assertNotIn("xml", r.json)

    def test_refusals_name_the_row(self):
        r = self.d.get("/v1/handoff?vmm=xen&pools=vm-t")
        self.assertProblem(r, 422, "invalid-field")
        self.assertEqual(r.json["detail"], "vmm must be qemu, cloud-hypervisor, libvirt or test-vmm")
        r = self.d.get("/v1/handoff?vmm=test-vmm&pools=vm-t&as=vm-u")
        self.assertProblem(r, 422, "invalid-field")
        self.assertEqual(r.json["detail"], "as: test-vmm maps no migration source (test row)")

    def test_cli_prints_the_row(self):
        for vmm in ("test-vmm", "tv"):
            p = self.cli("handoff", "vm-t", "--vmm", vmm)
            self.assertEqual((p.returncode, p.stdout, p.stderr), (0, " ".join(words(self.path)) + "\n", ""))
        p = self.cli("handoff", "vm-t", "--vmm", "test-vmm", "--argv")
        self.assertEqual((p.returncode, p.stdout), (0, "\n".join(words(self.path)) + "\n"))

    def test_cli_messages_name_the_row(self):
        p = self.cli("handoff", "vm-t", "--vmm", "xen")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--vmm: expected qemu, cloud-hypervisor, libvirt or test-vmm, not 'xen'", p.stderr)
        p = self.cli("handoff", "vm-t")
        self.assertEqual(p.returncode, 2)
        self.assertIn("handoff: --vmm qemu|cloud-hypervisor|libvirt|test-vmm is required", p.stderr)
        p = self.cli("handoff", "vm-t", "--vmm", "tv", "--as", "vm-u")
        self.assertEqual(p.returncode, 2)
        self.assertIn("handoff: --as is for qemu and libvirt; test-vmm maps no migration source (test row)",
                      p.stderr)

    def test_cli_help_lists_the_row(self):
        p = self.cli("handoff", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("--vmm VMM           qemu, cloud-hypervisor, libvirt or test-vmm (required)\n", p.stdout)

    def test_shipped_cli_knows_no_such_format(self):
        if not SHIPPED_CLI:
            self.skipTest("HPWARM_CLI not set")
        p = self.cli("handoff", "vm-t", "--vmm", "test-vmm", cli=SHIPPED_CLI)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--vmm: expected qemu, cloud-hypervisor or libvirt, not 'test-vmm'", p.stderr)


if __name__ == "__main__":
    sys.exit(main())
