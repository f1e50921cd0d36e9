"""libvirt.hook: deploy/libvirt/hpwarm-libvirt-hook run the way libvirt runs
it (DOMAIN OPERATION SUB-OPERATION -, domain XML on stdin), against a fake
hpwarm CLI that records its arguments and answers with chosen exit codes.
No libvirt, no daemon, no root: every rule of the hook's input handling and
every failure path, in a second.  libvirt.boot proves the same hook with a
real libvirtd, QEMU and hpwarmd.

One test per rule; each also checks the hook printed nothing on stdout
(libvirt reads a hook's stdout as replacement XML for some operations)."""
import os
import shutil
import stat
import subprocess
import tempfile
import unittest

# The installed hook (the few lines of shell libvirt runs), linted below; the
# rules are `hpwarm libvirt-hook`'s, run here as hpw_hook_fake_cli: the same
# code with its requests to hpwarmd made as the fake CLI's command lines.
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "libvirt",
                      "hpwarm-libvirt-hook")
HOOK = os.environ.get("HPW_HOOK_FAKE_CLI", "")
NS = "urn:hpwarm:libvirt:1"
QNS = "http://libvirt.org/schemas/domain/qemu/1.0"
MIB = 1 << 20

FAKE_CLI = r"""#!/bin/sh
echo "$*" >> "$FAKE_LOG"
cmd=$1
case " $* " in *" --pid "*) [ "${FAKE_NO_PID:-}" = 1 ] && { echo "hpwarm: unknown option '--pid'" >&2; exit 2; } ;; esac
case " $* " in *" --ignore-missing "*) [ "${FAKE_NO_IGNORE:-}" = 1 ] && { echo "hpwarm: unknown option '--ignore-missing'" >&2; exit 2; } ;; esac
case $cmd in
warm) prev=
      for a; do [ "$prev" = --label ] && printf '%s\n' "$a" > "$FAKE_LOG.label.$2"; prev=$a; done
      [ -n "${FAKE_WARM_ERR:-}" ] && echo "$FAKE_WARM_ERR" >&2; exit "${FAKE_WARM_RC:-0}" ;;
status) [ -n "${FAKE_PATH:-}" ] && echo "path:       $FAKE_PATH"
        [ -n "${FAKE_POOLDIR:-}" ] && echo "path:       $FAKE_POOLDIR/$2"
        echo "claimed:    ${FAKE_CLAIMED:-no}"
        if [ -n "${FAKE_LABEL+x}" ]; then lab=$FAKE_LABEL; else lab=$(cat "$FAKE_LOG.label.$2" 2>/dev/null); fi
        [ -n "$lab" ] && echo "label:      $lab"
        exit "${FAKE_STATUS_RC:-0}" ;;
claim) exit "${FAKE_CLAIM_RC:-0}" ;;
release) exit "${FAKE_RELEASE_RC:-0}" ;;
esac
exit 99
"""


UUID_A = "6a1c0f3e-2b4d-4e5f-8a9b-0c1d2e3f4a5b"
UUID_B = "7b2d1e4f-3c5e-4f60-9bac-1d2e3f4a5b6c"
NOVA_UUID = "0d3f6a7e-6b0a-4c8e-9a57-2c1b2d3e4f50"


def domain(name="vm1", memory="262144", unit=None, meta=None, pool=None, path=None, extra_meta="", uuid=UUID_A):
    """A domain XML; META is the <hpwarm:pool> attribute string (None: not opted in)."""
    u = " unit='%s'" % unit if unit else ""
    md = ""
    if meta is not None:
        md = "<metadata><other:x xmlns:other='urn:other'/><hpwarm:pool xmlns:hpwarm='%s' %s/>%s</metadata>" % (
            NS, meta, extra_meta)
    frag = ""
    if path is not None:
        p = pool or name
        frag = ("<qemu:commandline><qemu:arg value='-object'/>"
                "<qemu:arg value='memory-backend-file,id=mem-%s,mem-path=%s,size=1,share=on,prealloc=on'/>"
                "<qemu:arg value='-machine'/><qemu:arg value='memory-backend=mem-%s'/></qemu:commandline>"
                % (p, path.replace(",", ",,"), p))
    return ("<domain type='qemu' xmlns:qemu='%s'><name>%s</name><uuid>%s</uuid><memory%s>%s</memory>%s"
            "<os><type>hvm</type></os>%s</domain>" % (QNS, name, uuid, u, memory, md, frag))


class Hook(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="hpwarm-hook-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.cli = os.path.join(self.tmp, "hpwarm")
        with open(self.cli, "w") as f:
            f.write(FAKE_CLI)
        os.chmod(self.cli, 0o755)
        self.log = os.path.join(self.tmp, "calls")
        self.rundir = os.path.join(self.tmp, "run")
        self.statedir = os.path.join(self.tmp, "state")
        self.pooldir = os.path.join(self.tmp, "pools")
        os.makedirs(self.rundir)
        os.makedirs(self.pooldir)
        open(os.path.join(self.pooldir, ".hpwarm-pool-dir"), "w").close()
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HPWARM": self.cli,
                    "HPWARM_LIBVIRT_CONFIG": os.path.join(self.tmp, "no-such-config"),
                    "HPWARM_LIBVIRT_RUNDIR": self.rundir, "HPWARM_LIBVIRT_STATEDIR": self.statedir,
                    "FAKE_LOG": self.log}

    def hook(self, xml, name="vm1", op="prepare", sub="begin", extra="-", **fake):
        if not HOOK:
            self.skipTest("HPW_HOOK_FAKE_CLI not set (ctest sets it)")
        env = dict(self.env)
        env.update({k: str(v) for k, v in fake.items()})
        r = subprocess.run([HOOK, name, op, sub, extra], input=xml, env=env, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        self.assertEqual(r.stdout, "", "the hook printed on stdout (libvirt may read it as XML)")
        return r

    def calls(self):
        try:
            with open(self.log) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def path(self, name="vm1"):
        return os.path.join(self.pooldir, name)

    # -- opting in --
    def test_not_opted_in_is_untouched_for_every_operation(self):
        for op, sub in (("prepare", "begin"), ("start", "begin"), ("started", "begin"), ("stopped", "end"),
                        ("release", "end"), ("migrate", "begin"), ("restore", "begin"), ("reconnect", "begin")):
            r = self.hook(domain(), op=op, sub=sub)
            self.assertEqual((r.returncode, r.stderr), (0, ""), (op, sub))
        self.assertEqual(self.calls(), [])

    def test_other_metadata_namespace_is_not_opting_in(self):
        xml = domain().replace("<os>", "<metadata><hpwarm:pool xmlns:hpwarm='urn:not-hpwarm' node='0'/>"
                               "</metadata><os>")
        r = self.hook(xml)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(self.calls(), [])

    def test_unused_operations_do_nothing_when_opted_in(self):
        xml = domain(meta="node='0' size='256M'", path=self.path())
        for op, sub in (("prepare", "end"), ("start", "begin"), ("stopped", "end"), ("restore", "begin"),
                        ("reconnect", "begin"), ("release", "begin"), ("migrate", "end")):
            self.assertEqual(self.hook(xml, op=op, sub=sub).returncode, 0, (op, sub))
        self.assertEqual(self.calls(), [])
        self.assertFalse(os.path.exists(self.statedir), "nothing noted")

    # -- live migration: libvirt's hooks.rst, "QEMU guest migration" --
    def test_migration_incoming_is_served_like_a_start_without_ttl(self):
        """Destination: migrate begin (XML on stdin, stdout would replace
        it: nothing printed), then prepare warms the domain's pool with no
        TTL (started comes only when the stream is in), started claims it
        with QEMU's pid; the incoming note is gone afterwards."""
        xml = domain(meta="node='0' size='256M'", path=self.path())
        r = self.hook(xml, op="migrate")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(self.calls(), [], "migrate begin asks hpwarmd nothing")
        r = self.hook(xml, FAKE_PATH=self.path())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[0], "warm vm1 --node 0 --size %d --page-size 2M --reserve --wait --timeout 120 "
                                          "--label libvirt:%s" % (256 * MIB, UUID_A))
        self.assertEqual(self.hook(xml, op="start").returncode, 0)
        with open(os.path.join(self.rundir, "vm1.pid"), "w") as f:
            f.write("5150\n")
        self.assertEqual(self.hook(xml, op="started").returncode, 0)
        self.assertEqual(self.calls()[-1], "claim vm1 --pid 5150 --timeout 30")
        self.assertEqual(sorted(os.listdir(os.path.join(self.statedir, UUID_A))), ["vm1.own"])
        # A later plain start of the same domain has its TTL again.
        self.assertEqual(self.hook(xml, op="release", sub="end").returncode, 0)
        self.assertEqual(self.hook(xml, FAKE_PATH=self.path()).returncode, 0)
        self.assertIn(" --ttl 600 ", [c for c in self.calls() if c.startswith("warm ")][-1])

    def test_migration_incoming_that_fails_gives_the_pool_back(self):
        """libvirt runs stopped end and release end on the destination when
        an incoming migration fails: the pool prepare took goes back."""
        xml = domain(meta="node='0'", path=self.path())
        self.assertEqual(self.hook(xml, op="migrate").returncode, 0)
        self.assertEqual(self.hook(xml, FAKE_PATH=self.path()).returncode, 0)
        self.assertEqual(self.hook(xml, op="stopped", sub="end").returncode, 0)
        self.assertNotIn("release", " ".join(self.calls()), "stopped end gives nothing back")
        r = self.hook(xml, op="release", sub="end", extra="failed")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[-1], "release vm1 --ignore-missing --timeout 30")
        self.assertEqual(os.listdir(self.statedir), [])

    def test_migration_incoming_malformed_pool_aborts_it_early(self):
        """migrate begin refuses (exit 1: libvirt cancels the incoming
        migration) what prepare would refuse, before any QEMU exists."""
        for xml, msg in ((domain(meta="node='0' size='512M'", path=self.path()), "differs from the domain's <memory>"),
                         (domain(meta="node='x'", path=self.path()), "not a node number"),
                         (domain(meta="node='0'"), "refusing the migration")):
            r = self.hook(xml, op="migrate")
            self.assertEqual(r.returncode, 1, xml)
            self.assertIn(msg, r.stderr, xml)
        self.assertEqual(self.calls(), [])

    def test_migration_incoming_not_opted_in_untouched(self):
        r = self.hook(domain(), op="migrate")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertFalse(os.path.exists(self.statedir))

    def test_migration_source_gives_its_pool_back_at_release_end(self):
        """Source: the domain started here (prepare, started); when it has
        migrated away libvirt runs stopped end (nothing) and release end
        (libvirt >= 10.5 passes the reason "migrated", older ones "-"):
        the pool goes back."""
        xml = domain(meta="node='0'", path=self.path())
        for extra in ("migrated", "-"):
            self.assertEqual(self.hook(xml, FAKE_PATH=self.path()).returncode, 0)
            with open(os.path.join(self.rundir, "vm1.pid"), "w") as f:
                f.write("4242\n")
            self.assertEqual(self.hook(xml, op="started").returncode, 0)
            n = len(self.calls())
            self.assertEqual(self.hook(xml, op="stopped", sub="end", extra=extra).returncode, 0)
            self.assertEqual(len(self.calls()), n, "stopped end asks nothing")
            r = self.hook(xml, op="release", sub="end", extra=extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.calls()[-1], "release vm1 --ignore-missing --timeout 30", extra)
            self.assertEqual(os.listdir(self.statedir), [])

    # -- prepare --
    def test_prepare_warms_on_node_with_reserve_and_wait(self):
        xml = domain(meta="node='1' size='256M'", path=self.path())
        r = self.hook(xml, FAKE_PATH=self.path())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[0], "warm vm1 --node 1 --size %d --page-size 2M --ttl 600 --reserve "
                                          "--wait --timeout 120 --label libvirt:%s" % (256 * MIB, UUID_A))
        self.assertEqual(self.calls()[1], "status vm1 --timeout 10")

    def test_settings_from_environment(self):
        xml = domain(meta="node='0'", path=self.path())
        r = self.hook(xml, FAKE_PATH=self.path(), HPWARM_LIBVIRT_TIMEOUT=7, HPWARM_LIBVIRT_TTL=30,
                      HPWARM_PAGE_SIZE="1G")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--page-size 1G --ttl 30 --reserve --wait --timeout 7", self.calls()[0])

    def test_settings_from_config_file_and_environment_wins(self):
        conf = os.path.join(self.tmp, "conf")
        with open(conf, "w") as f:
            f.write("HPWARM_LIBVIRT_TIMEOUT=9\nHPWARM_LIBVIRT_TTL=11\n")
        xml = domain(meta="node='0'", path=self.path())
        r = self.hook(xml, FAKE_PATH=self.path(), HPWARM_LIBVIRT_CONFIG=conf, HPWARM_LIBVIRT_TTL=5)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--ttl 5 --reserve --wait --timeout 9", self.calls()[0])

    def test_size_defaults_to_memory(self):
        r = self.hook(domain(memory="1", unit="GiB", meta="node='0'", path=self.path()), FAKE_PATH=self.path())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--size %d " % (1 << 30), self.calls()[0])

    def test_memory_units_match_pool_sizes(self):
        same = [("262144", None, "256M"), ("262144", "KiB", "256MiB"), ("262144", "k", "262144kB"),
                ("268435456", "bytes", "268435456"), ("268435456", "b", "256M"), ("256", "MiB", "256M"),
                ("256", "M", "256M"), ("1", "G", "1024M"), ("1", "GiB", "1G"), ("1", "T", "1024G")]
        for mem, unit, size in same:
            r = self.hook(domain(memory=mem, unit=unit, meta="node='0' size='%s'" % size, path=self.path()),
                          FAKE_PATH=self.path())
            self.assertEqual(r.returncode, 0, (mem, unit, size, r.stderr))

    def test_decimal_memory_units_are_not_binary(self):
        for mem, unit, size in (("256", "MB", "256M"), ("1", "GB", "1G"), ("262144", "KB", "256M")):
            r = self.hook(domain(memory=mem, unit=unit, meta="node='0' size='%s'" % size, path=self.path()))
            self.assertEqual(r.returncode, 1, (mem, unit, size))
            self.assertIn("differs from the domain's <memory>", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_size_mismatch_refused_with_both_sizes(self):
        r = self.hook(domain(meta="node='0' size='512M'", path=self.path()))
        self.assertEqual(r.returncode, 1)
        self.assertIn("hpwarm hook: domain 'vm1': pool size %d bytes" % (512 * MIB), r.stderr)
        self.assertIn("<memory> of %d bytes" % (256 * MIB), r.stderr)
        self.assertEqual(self.calls(), [])

    def test_bad_attributes_refused(self):
        for meta, msg in (("size='256M'", "lacks node="), ("node='x'", "not a node number"),
                          ("node='-1'", "not a node number"), ("node='0' size='lots'", "not a size"),
                          ("node='0' size='256Q'", "not a size"), ("node='0' required='maybe'", "expected yes or no"),
                          ("node='0' size='99999999999999999999G'", "not a size")):
            r = self.hook(domain(meta=meta, path=self.path()))
            self.assertEqual(r.returncode, 1, meta)
            self.assertIn(msg, r.stderr, meta)
        self.assertEqual(self.calls(), [])

    def test_line_break_in_an_attribute_refused(self):
        r = self.hook(domain(meta="node='0&#10;1' size='256M'", path=self.path()))
        self.assertEqual(r.returncode, 1)
        self.assertIn("a line break", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_unparsable_xml_refused(self):
        r = self.hook("<domain><name>vm1</name")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot parse the domain XML", r.stderr)

    def test_doctype_refused(self):
        # libvirt writes no DOCTYPE; one with an entity that would name
        # another pool is refused before any request.
        xml = "<!DOCTYPE domain [<!ENTITY n '1'>]>" + domain(meta="node='&n;'", path=self.path())
        r = self.hook(xml)
        self.assertEqual(r.returncode, 1)
        self.assertIn("a DOCTYPE is refused", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_bad_memory_refused(self):
        r = self.hook(domain(memory="256", unit="parsecs", meta="node='0'", path=self.path()))
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot read <memory", r.stderr)

    def test_domain_name_not_a_pool_name_refused(self):
        for name in ("my vm", "-vm", "vm/1", "a" * 65, "vm$(touch PWNED)", "é"):
            r = self.hook(domain(name="x", meta="node='0'", path=self.path()), name=name)
            self.assertEqual(r.returncode, 1, name)
            self.assertIn("is not a valid pool name", r.stderr, name)
            self.assertIn('set pool="NAME"', r.stderr, name)
        self.assertFalse(os.path.exists("PWNED"))
        self.assertEqual(self.calls(), [])

    def test_pool_attribute_maps_a_domain_name(self):
        xml = domain(name="my vm", meta="node='0' pool='my-vm'", pool="my-vm", path=self.path("my-vm"))
        r = self.hook(xml, name="my vm", FAKE_PATH=self.path("my-vm"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(self.calls()[0].startswith("warm my-vm --node 0"), self.calls())

    def test_longest_pool_name_accepted(self):
        name = "a" * 64
        r = self.hook(domain(name=name, meta="node='0'", path=self.path(name)), name=name, FAKE_PATH=self.path(name))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_several_pools_refused(self):
        extra = "<hpwarm:pool xmlns:hpwarm='%s' node='1'/>" % NS
        r = self.hook(domain(meta="node='0'", path=self.path(), extra_meta=extra))
        self.assertEqual(r.returncode, 1)
        self.assertIn("2 <hpwarm:pool> elements", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_domain_without_the_fragment_refused(self):
        r = self.hook(domain(meta="node='0'"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("has no memory backend id=mem-vm1", r.stderr)
        self.assertIn("hpwarm handoff vm1 --vmm libvirt", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_fragment_of_another_pool_refused(self):
        r = self.hook(domain(meta="node='0'", pool="vm2", path=self.path("vm2")))
        self.assertEqual(r.returncode, 1)
        self.assertIn("has no memory backend id=mem-vm1", r.stderr)

    def test_pool_at_another_path_refused_and_released(self):
        r = self.hook(domain(meta="node='0'", path=self.path()), FAKE_PATH="/elsewhere/vm1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("is at '/elsewhere/vm1'", r.stderr)
        self.assertEqual(self.calls()[-1], "release vm1 --timeout 10")

    def test_pool_at_another_name_of_the_same_file_accepted(self):
        """The daemon's path and the fragment's differ but are one file (the
        pool directory bound where every host keeps it): the same pool."""
        other = os.path.join(self.tmp, "bound")
        os.makedirs(other)
        with open(self.path(), "w") as f:
            f.write("pool")
        os.link(self.path(), os.path.join(other, "vm1"))
        r = self.hook(domain(meta="node='0'", path=self.path()), FAKE_PATH=os.path.join(other, "vm1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("release", " ".join(self.calls()))
        # Two different files are still refused.
        with open(os.path.join(other, "vm2"), "w") as f:
            f.write("another")
        r = self.hook(domain(meta="node='0'", path=self.path()), FAKE_PATH=os.path.join(other, "vm2"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("is at '%s'" % os.path.join(other, "vm2"), r.stderr)

    def test_status_failure_after_a_ready_warm_does_not_fail_the_start(self):
        r = self.hook(domain(meta="node='0'", path=self.path()), FAKE_STATUS_RC=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("release", " ".join(self.calls()))

    def test_stale_cold_note_does_not_stop_the_claim(self):
        xml = domain(meta="node='0' required='no'", path=self.path())
        self.assertEqual(self.hook(xml, FAKE_WARM_RC=3).returncode, 0)   # cold; release never runs
        os.remove(self.path())
        self.assertEqual(self.hook(xml, FAKE_PATH=self.path()).returncode, 0)   # warm works now
        with open(os.path.join(self.rundir, "vm1.pid"), "w") as f:
            f.write("77\n")
        self.assertEqual(self.hook(xml, op="started").returncode, 0)
        self.assertEqual(self.calls()[-1], "claim vm1 --pid 77 --timeout 30")

    def test_comma_in_pool_path_is_unescaped(self):
        d = os.path.join(self.tmp, "a,b")
        os.makedirs(d)
        p = os.path.join(d, "vm1")
        r = self.hook(domain(meta="node='0'", path=p), FAKE_PATH=p)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_warm_failures_fail_the_start_with_the_reason(self):
        for rc, msg in ((3, "hpwarmd is unreachable"), (4, "was not ready within 120s"),
                        (5, "not enough hugepages on node 0"), (6, "refused the credentials"),
                        (1, "warming pool 'vm1' failed (hpwarm exit 1)")):
            r = self.hook(domain(meta="node='0'", path=self.path()), FAKE_WARM_RC=rc, FAKE_WARM_ERR="daemon said no")
            self.assertEqual(r.returncode, 1, rc)
            self.assertIn(msg, r.stderr, rc)
            self.assertIn("daemon said no", r.stderr, rc)
            self.assertIn("refusing to start", r.stderr, rc)
        self.assertFalse(os.path.exists(self.path()))

    # -- required="no" --
    def test_not_required_starts_cold_and_release_removes_the_file(self):
        xml = domain(meta="node='0' required='no'", path=self.path())
        r = self.hook(xml, FAKE_WARM_RC=3)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("starting cold on %s" % self.path(), r.stderr)
        st = os.stat(self.path())
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
        self.assertEqual(st.st_gid, os.stat(self.pooldir).st_gid)
        self.assertEqual(self.calls(), ["warm vm1 --node 0 --size %d --page-size 2M --ttl 600 --reserve --wait "
                                        "--timeout 120 --label libvirt:%s" % (256 * MIB, UUID_A)],
                         "unreachable: nothing to release")
        # started: nothing to claim; release: the file goes, hpwarmd is not asked.
        with open(os.path.join(self.rundir, "vm1.pid"), "w") as f:
            f.write("4242\n")
        self.assertEqual(self.hook(xml, op="started").returncode, 0)
        self.assertEqual(self.hook(xml, op="release", sub="end").returncode, 0)
        self.assertFalse(os.path.exists(self.path()))
        self.assertEqual(len(self.calls()), 1, self.calls())
        self.assertEqual(os.listdir(self.statedir), [])

    def test_not_required_after_a_failed_warm_releases_first(self):
        r = self.hook(domain(meta="node='0' required='no'", path=self.path()), FAKE_WARM_RC=4)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[1:3], ["status vm1 --timeout 10", "release vm1 --timeout 10"])

    # -- pools bound to their domain --
    CONFLICT = ('hpwarm: warm vm-a: pool-conflict: pool vm-a exists and differs: "label": "libvirt:%s" asked, '
                'the pool\'s is "libvirt:%s" (it is for another user)' % (UUID_B, UUID_A))

    def test_prepare_refuses_another_domains_pool_and_release_leaves_it(self):
        """Domain B names vm-a's pool: hpwarmd refuses B's label (409, exit 5);
        virsh start shows why, and the release libvirt runs after the failed
        prepare gives back nothing."""
        xml = domain(name="vm-b", meta="node='0' pool='vm-a'", pool="vm-a", path=self.path("vm-a"), uuid=UUID_B)
        r = self.hook(xml, name="vm-b", FAKE_WARM_RC=5, FAKE_WARM_ERR=self.CONFLICT, FAKE_LABEL="libvirt:" + UUID_A)
        self.assertEqual(r.returncode, 1)
        self.assertIn("pool 'vm-a' exists for another domain", r.stderr)
        self.assertIn(UUID_A, r.stderr)
        self.assertIn("--label libvirt:" + UUID_B, self.calls()[0])
        r = self.hook(xml, name="vm-b", op="release", sub="end", FAKE_LABEL="libvirt:" + UUID_A)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual([c.split()[0] for c in self.calls()], ["warm"], "nothing released")

    def test_not_required_never_releases_nor_boots_on_another_domains_pool(self):
        """required='no' and another size: the failed warm does not release
        vm-a's pool, and its file at the path is no cold start either."""
        open(self.path("vm-a"), "w").close()
        xml = domain(name="vm-b", meta="node='0' pool='vm-a' required='no'", pool="vm-a", path=self.path("vm-a"),
                     uuid=UUID_B, memory="524288")
        r = self.hook(xml, name="vm-b", FAKE_WARM_RC=5, FAKE_WARM_ERR=self.CONFLICT, FAKE_LABEL="libvirt:" + UUID_A)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("exists and is not this domain's", r.stderr)
        self.assertNotIn("release", " ".join(self.calls()))
        self.assertTrue(os.path.exists(self.path("vm-a")))
        self.assertEqual(self.hook(xml, name="vm-b", op="release", sub="end").returncode, 0)
        self.assertNotIn("release", " ".join(self.calls()))
        self.assertTrue(os.path.exists(self.path("vm-a")))

    def test_prepare_refuses_a_claimed_pool(self):
        """A pool of this domain's label that some process claims (this
        domain's QEMU does not run yet): refused, and neither claimed nor
        released by this domain afterwards."""
        xml = domain(meta="node='0'", path=self.path())
        r = self.hook(xml, FAKE_PATH=self.path(), FAKE_CLAIMED="yes")
        self.assertEqual(r.returncode, 1)
        self.assertIn("pool 'vm1' is claimed by another process", r.stderr)
        with open(os.path.join(self.rundir, "vm1.pid"), "w") as f:
            f.write("4242\n")
        self.assertEqual(self.hook(xml, op="started").returncode, 0)
        self.assertEqual(self.hook(xml, op="release", sub="end").returncode, 0)
        self.assertEqual([c.split()[0] for c in self.calls()], ["warm", "status"])

    def test_release_gives_back_only_what_prepare_took(self):
        """A release with no prepare of this domain before it (another
        domain's pool of that name) asks hpwarmd for nothing; notes are kept
        per domain UUID and none is left after the release."""
        xml_a = domain(meta="node='0'", path=self.path())
        xml_b = domain(meta="node='0'", path=self.path(), uuid=UUID_B)
        self.prepared(xml_a)
        self.assertTrue(os.path.exists(os.path.join(self.statedir, UUID_A, "vm1.own")))
        self.assertEqual(self.hook(xml_b, op="release", sub="end").returncode, 0)
        self.assertEqual(self.calls(), [])
        self.assertEqual(self.hook(xml_a, op="release", sub="end").returncode, 0)
        self.assertEqual(self.calls(), ["release vm1 --ignore-missing --timeout 30"])
        self.assertEqual(os.listdir(self.statedir), [])

    def test_cold_notes_are_per_domain(self):
        xml = domain(meta="node='0' required='no'", path=self.path())
        self.assertEqual(self.hook(xml, FAKE_WARM_RC=3).returncode, 0)
        self.assertEqual(os.listdir(os.path.join(self.statedir, UUID_A)), ["vm1.cold"])
        # Another domain's release does not remove this domain's cold file.
        self.assertEqual(self.hook(domain(meta="node='0'", path=self.path(), uuid=UUID_B), op="release",
                                   sub="end").returncode, 0)
        self.assertTrue(os.path.exists(self.path()))

    def test_static_dac_label_hands_the_file_to_that_user(self):
        xml = domain(meta="node='0'", path=self.path()).replace(
            "<os>", "<seclabel type='static' model='dac' relabel='no'><label>+64100:+64101</label></seclabel><os>")
        r = self.hook(xml, FAKE_PATH=self.path())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(self.calls()[0].endswith(" --file-owner 64100:64101"), self.calls())
        # Names, or a dynamic label, leave the pool group's access.
        xml = domain(meta="node='0'", path=self.path()).replace(
            "<os>", "<seclabel type='static' model='dac'><label>qemu:kvm</label></seclabel><os>")
        os.remove(self.log)
        self.assertEqual(self.hook(xml, FAKE_PATH=self.path()).returncode, 0)
        self.assertNotIn("--file-owner", self.calls()[0])

    def test_no_uuid_refused(self):
        xml = domain(meta="node='0'", path=self.path()).replace("<uuid>%s</uuid>" % UUID_A, "")
        r = self.hook(xml)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no <uuid>", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_cold_file_replaced_meanwhile_is_not_removed(self):
        xml = domain(meta="node='0' required='no'", path=self.path())
        self.assertEqual(self.hook(xml, FAKE_WARM_RC=3).returncode, 0)
        # Someone else's file at that path now (the old inode kept alive by a
        # second link, so the new file cannot reuse its number).
        os.link(self.path(), os.path.join(self.tmp, "keep"))
        os.remove(self.path())
        open(self.path(), "w").close()
        self.assertEqual(self.hook(xml, op="release", sub="end").returncode, 0)
        self.assertTrue(os.path.exists(self.path()))

    def test_not_required_outside_a_pool_directory_fails(self):
        other = os.path.join(self.tmp, "plain")
        os.makedirs(other)
        r = self.hook(domain(meta="node='0' required='no'", path=os.path.join(other, "vm1")), FAKE_WARM_RC=3)
        self.assertEqual(r.returncode, 1)
        self.assertIn("is not an hpwarmd pool directory", r.stderr)
        self.assertEqual(os.listdir(other), [])

    def prepared(self, xml):
        """Run prepare (a ready pool at self.path()), then forget its calls."""
        r = self.hook(xml, FAKE_PATH=self.path())
        self.assertEqual(r.returncode, 0, r.stderr)
        os.remove(self.log)

    # -- started --
    def test_started_claims_with_qemus_pid(self):
        with open(os.path.join(self.rundir, "vm1.pid"), "w") as f:
            f.write("4242\n")
        self.prepared(domain(meta="node='0'", path=self.path()))
        r = self.hook(domain(meta="node='0'", path=self.path()), op="started")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls(), ["claim vm1 --pid 4242 --timeout 30"])

    def test_started_claims_without_pid_on_an_older_cli(self):
        with open(os.path.join(self.rundir, "vm1.pid"), "w") as f:
            f.write("4242\n")
        self.prepared(domain(meta="node='0'", path=self.path()))
        r = self.hook(domain(meta="node='0'", path=self.path()), op="started", FAKE_NO_PID=1)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls(), ["claim vm1 --pid 4242 --timeout 30", "claim vm1 --timeout 30"])

    def test_started_without_pid_file_claims_plainly(self):
        self.prepared(domain(meta="node='0'", path=self.path()))
        r = self.hook(domain(meta="node='0'", path=self.path()), op="started")
        self.assertEqual(self.calls(), ["claim vm1 --timeout 30"])
        self.assertEqual(r.returncode, 0)

    def test_failed_claim_does_not_kill_the_guest(self):
        self.prepared(domain(meta="node='0'", path=self.path()))
        r = self.hook(domain(meta="node='0'", path=self.path()), op="started", FAKE_CLAIM_RC=3)
        self.assertEqual(r.returncode, 0)
        self.assertIn("claiming pool 'vm1' failed (hpwarm exit 3)", r.stderr)

    # -- release --
    def test_release_ignores_a_missing_pool(self):
        self.prepared(domain(meta="node='0'", path=self.path()))
        r = self.hook(domain(meta="node='0'", path=self.path()), op="release", sub="end")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls(), ["release vm1 --ignore-missing --timeout 30"])

    def test_release_on_an_older_cli_accepts_gone_but_reports_unreachable(self):
        xml = domain(meta="node='0'", path=self.path())
        self.prepared(xml)
        r = self.hook(xml, op="release", sub="end", FAKE_NO_IGNORE=1, FAKE_RELEASE_RC=1, FAKE_STATUS_RC=1)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(self.calls()[1:], ["release vm1 --timeout 30", "status vm1 --timeout 10"])
        self.prepared(xml)
        r = self.hook(xml, op="release", sub="end", FAKE_NO_IGNORE=1, FAKE_RELEASE_RC=3, FAKE_STATUS_RC=3)
        self.assertEqual(r.returncode, 0)
        self.assertIn("releasing pool 'vm1' failed (hpwarm exit 3)", r.stderr)

    # -- NUMA cells on libvirt's memory files --
    def cells_domain(self, pools, cells=((0, 128), (1, 128)), source="file", access="shared", cell_access="",
                     dom_id="7"):
        cx = "".join("<cell id='%d' cpus='%d' memory='%d' unit='MiB'%s/>" % (
            c, c, m, " memAccess='%s'" % cell_access if cell_access else "") for c, m in cells)
        mb = "<memoryBacking>%s%s</memoryBacking>" % (
            "<source type='%s'/>" % source if source else "", "<access mode='%s'/>" % access if access else "")
        meta = "<metadata><hpwarm:pools xmlns:hpwarm='%s'>%s</hpwarm:pools></metadata>" % (
            NS, "".join("<hpwarm:pool %s/>" % p for p in pools))
        return ("<domain type='qemu' id='%s'><name>vm1</name><uuid>%s</uuid><memory unit='MiB'>256</memory>%s%s"
                "<cpu><numa>%s</numa></cpu><os><type>hvm</type></os></domain>" % (dom_id, UUID_A, mb, meta, cx))

    def cells_env(self):
        mbd = os.path.join(self.tmp, "mbd")
        memdir = os.path.join(mbd, "libvirt", "qemu", "7-vm1")
        os.makedirs(memdir)
        for c in (0, 1):
            with open(os.path.join(self.pooldir, "vm1-cell%d" % c), "w") as f:
                f.write("pool %d" % c)
        return {"HPWARM_LIBVIRT_MEMORY_BACKING_DIR": mbd, "FAKE_POOLDIR": self.pooldir}, memdir

    TWO = ("cell='0' node='0' size='128M'", "cell='1' node='1' size='128M'")

    def test_cells_prepare_warms_one_pool_per_cell(self):
        env, _ = self.cells_env()
        r = self.hook(self.cells_domain(self.TWO), **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        warms = [c for c in self.calls() if c.startswith("warm ")]
        self.assertEqual([c.split()[:5] for c in warms],
                         [["warm", "vm1-cell0", "--node", "0", "--size"], ["warm", "vm1-cell1", "--node", "1", "--size"]])
        self.assertTrue(all("--size %d " % (128 * MIB) in c for c in warms), self.calls())
        self.assertTrue(all(c.endswith(" --label libvirt:" + UUID_A) for c in warms), warms)

    def test_cells_start_links_each_pool_as_its_cells_file(self):
        env, memdir = self.cells_env()
        xml = self.cells_domain(self.TWO)
        self.assertEqual(self.hook(xml, **env).returncode, 0)
        r = self.hook(xml, op="start", **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        for c in (0, 1):
            self.assertEqual(os.stat(os.path.join(memdir, "ram-node%d" % c)).st_ino,
                             os.stat(os.path.join(self.pooldir, "vm1-cell%d" % c)).st_ino)
        with open(os.path.join(self.rundir, "vm1.pid"), "w") as f:
            f.write("99\n")
        self.assertEqual(self.hook(xml, op="started", **env).returncode, 0)
        self.assertEqual(self.hook(xml, op="release", sub="end", **env).returncode, 0)
        self.assertEqual(self.calls()[-4:], ["claim vm1-cell0 --pid 99 --timeout 30", "claim vm1-cell1 --pid 99 --timeout 30",
                                             "release vm1-cell0 --ignore-missing --timeout 30",
                                             "release vm1-cell1 --ignore-missing --timeout 30"])

    def test_cells_start_without_libvirts_directory_fails(self):
        env, memdir = self.cells_env()
        os.rmdir(memdir)
        r = self.hook(self.cells_domain(self.TWO), op="start", **env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("libvirt made no memory directory", r.stderr)

    def test_cells_link_failure_fails_the_start(self):
        env, memdir = self.cells_env()
        open(os.path.join(memdir, "ram-node0"), "w").close()   # ln refuses to replace it
        r = self.hook(self.cells_domain(self.TWO), op="start", **env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot link pool 'vm1-cell0'", r.stderr)

    def test_cells_refusals(self):
        env, _ = self.cells_env()
        cases = [
            (self.cells_domain(self.TWO, source=""), "needs <memoryBacking><source type='file'/>"),
            (self.cells_domain(self.TWO, access=""), "cell 0 is not shared memory"),
            (self.cells_domain(self.TWO, access="private", cell_access="private"), "cell 0 is not shared memory"),
            (self.cells_domain(self.TWO[:1]), "has 2 <numa> cells but 1 <hpwarm:pool>"),
            (self.cells_domain(("cell='0' node='0' size='128M'", "cell='0' node='1' size='128M'")),
             "two <hpwarm:pool> elements for cell 0"),
            (self.cells_domain(("cell='0' node='0' size='128M'", "cell='1' node='1' size='64M'")),
             "differs from cell 1's memory"),
            (self.cells_domain(("cell='0' node='0' size='128M'", "cell='2' node='1' size='128M'")),
             "the domain has no <numa> cell with id 2"),
            (self.cells_domain(("cell='0' node='0' size='128M'", "node='1' size='128M'")), "lacks cell="),
        ]
        for xml, msg in cases:
            r = self.hook(xml, **env)
            self.assertEqual(r.returncode, 1, msg)
            self.assertIn(msg, r.stderr)
        r = self.hook(self.cells_domain(self.TWO), FAKE_POOLDIR=self.pooldir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("needs HPWARM_LIBVIRT_MEMORY_BACKING_DIR", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_cells_shared_by_cell_attribute_is_enough(self):
        env, _ = self.cells_env()
        r = self.hook(self.cells_domain(self.TWO, access="", cell_access="shared"), **env)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_cells_not_required_start_cold_per_cell(self):
        env, memdir = self.cells_env()
        pools = ("cell='0' node='0' size='128M' required='no'", "cell='1' node='1' size='128M' required='no'")
        xml = self.cells_domain(pools)
        r = self.hook(xml, FAKE_WARM_RC=3, **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("cell 0 starts cold", r.stderr)
        self.assertEqual(self.hook(xml, op="start", **env).returncode, 0)
        self.assertEqual(os.listdir(memdir), [], "cold cells: libvirt's QEMU makes its own files")
        self.assertEqual(self.hook(xml, op="started", **env).returncode, 0)
        self.assertEqual(self.hook(xml, op="release", sub="end", **env).returncode, 0)
        self.assertEqual([c.split()[0] for c in self.calls()], ["warm", "warm"])
        self.assertEqual(os.listdir(self.statedir), [])

    # -- host policy: hugepage domains without metadata --
    NOVA_META = ("<metadata><nova:instance xmlns:nova='http://openstack.org/xmlns/libvirt/nova/1.1'>"
                 "<nova:name>web-1</nova:name><nova:flavor name='m1.small'><nova:memory>256</nova:memory>"
                 "</nova:flavor></nova:instance></metadata>")

    def nova_domain(self, name="instance-0000002a", cells=1, access="shared", cell_access="shared",
                    numatune="<numatune><memory mode='strict' nodeset='0'/><memnode cellid='0' mode='strict' "
                             "nodeset='0'/></numatune>",
                    page="<page size='2048' unit='KiB' nodeset='0'/>", extra_backing="", devices="", dom_id="7",
                    meta=None, memory_kib=262144):
        acc = "<access mode='%s'/>" % access if access else ""
        cellxml = "".join("<cell id='%d' cpus='%d' memory='%d' unit='KiB'%s/>"
                          % (i, i, memory_kib // cells, " memAccess='%s'" % cell_access if cell_access else "")
                          for i in range(cells))
        numa = "<cpu><numa>%s</numa></cpu>" % cellxml if cells else ""
        md = self.NOVA_META if meta is None else meta
        return ("<domain type='qemu' id='%s'><name>%s</name><uuid>0d3f6a7e-6b0a-4c8e-9a57-2c1b2d3e4f50</uuid>"
                "<memory unit='KiB'>%d</memory>%s<memoryBacking><hugepages>%s</hugepages>%s%s</memoryBacking>"
                "<vcpu>%d</vcpu>%s%s<os><type>hvm</type></os><devices>%s</devices></domain>"
                % (dom_id, name, memory_kib, md, page, acc, extra_backing, max(cells, 1), numatune, numa, devices))

    def policy_env(self, **over):
        """A hugetlbfs 'mount' (a temp directory, listed in a fake mount
        table with pagesize=2M), the pool directory on it, a note log."""
        self.mnt = os.path.join(self.tmp, "hugepages")
        self.ppool = os.path.join(self.mnt, "hpwarm")
        os.makedirs(self.ppool, exist_ok=True)
        mounts = os.path.join(self.tmp, "mounts")
        with open(mounts, "w") as f:
            f.write("proc /proc proc rw 0 0\nhugetlbfs %s hugetlbfs rw,relatime,pagesize=2M 0 0\n" % self.mnt)
        self.notes = os.path.join(self.tmp, "notes")
        env = {"HPWARM_LIBVIRT_POLICY": "hugepages", "HPWARM_LIBVIRT_MOUNTS": mounts,
               "HPWARM_LIBVIRT_QEMU_CONF": os.path.join(self.tmp, "no-qemu.conf"),
               "HPWARM_LIBVIRT_LOG": self.notes, "FAKE_POOLDIR": self.ppool}
        env.update(over)
        return env

    def note_lines(self):
        try:
            with open(self.notes) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def libvirt_dir(self, short):
        """What libvirt makes before the start hook: MOUNT/libvirt/qemu/ID-NAME, empty, 0700."""
        d = os.path.join(self.mnt, "libvirt", "qemu", short)
        os.makedirs(d)
        os.chmod(d, 0o700)
        return d

    def test_policy_metadata_default_leaves_hugepage_domains_alone(self):
        env = self.policy_env()
        del env["HPWARM_LIBVIRT_POLICY"]
        for op, sub in (("prepare", "begin"), ("start", "begin"), ("started", "begin"), ("release", "end")):
            r = self.hook(self.nova_domain(), name="instance-0000002a", op=op, sub=sub, **env)
            self.assertEqual((r.returncode, r.stderr), (0, ""), op)
        self.assertEqual(self.calls(), [])
        self.assertEqual(self.note_lines(), [])

    def test_policy_nova_domain_warms_links_claims_and_gives_back(self):
        env = self.policy_env()
        name = "instance-0000002a"
        xml = self.nova_domain(name=name)
        pool = os.path.join(self.ppool, name)
        with open(pool, "w") as f:
            f.write("warm")   # what hpwarmd has when warm returns
        r = self.hook(xml, name=name, **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[0], "warm %s --node 0 --size %d --page-size 2048kB --ttl 600 --reserve "
                                          "--wait --timeout 120 --label libvirt:%s" % (name, 256 * MIB, NOVA_UUID))
        d = self.libvirt_dir("7-instance-0000002a")
        r = self.hook(xml, name=name, op="start", **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isfile(d), "libvirt's directory became the pool file")
        self.assertEqual(os.stat(d).st_ino, os.stat(pool).st_ino, "a hard link, the same inode")
        with open(os.path.join(self.rundir, name + ".pid"), "w") as f:
            f.write("4242\n")
        r = self.hook(xml, name=name, op="started", **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("claim %s --pid 4242 --timeout 30" % name, self.calls())
        self.assertTrue(os.path.isdir(d), "started puts libvirt's empty directory back")
        self.assertEqual((os.listdir(d), stat.S_IMODE(os.stat(d).st_mode)), ([], 0o700))
        self.assertTrue(os.path.exists(pool), "the pool file stays the daemon's")
        r = self.hook(xml, name=name, op="release", sub="end", **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[-1], "release %s --ignore-missing --timeout 30" % name)
        self.assertTrue(os.path.isdir(d), "libvirt's own clean-up finds its directory")
        self.assertEqual(os.listdir(self.statedir), [])
        self.assertEqual(self.note_lines(), [], "a served domain leaves no note")

    def test_policy_release_undoes_a_link_started_never_saw(self):
        env = self.policy_env()
        xml = self.nova_domain(name="vm1")
        open(os.path.join(self.ppool, "vm1"), "w").close()
        self.assertEqual(self.hook(xml, **env).returncode, 0)
        d = self.libvirt_dir("7-vm1")
        self.assertEqual(self.hook(xml, op="start", **env).returncode, 0)
        self.assertTrue(os.path.isfile(d))
        self.assertEqual(self.hook(xml, op="release", sub="end", **env).returncode, 0)
        self.assertTrue(os.path.isdir(d), "QEMU died before started: release restores the directory")

    def test_policy_short_name_is_id_and_20_characters(self):
        env = self.policy_env()
        for name, short in (("a-very-long-instance-name-0001", "7-a-very-long-instance"),
                            ("exactly-twenty-chars", "7-exactly-twenty-chars")):
            xml = self.nova_domain(name=name)
            open(os.path.join(self.ppool, name), "w").close()
            self.assertEqual(self.hook(xml, name=name, **env).returncode, 0)
            d = self.libvirt_dir(short)
            decoy = self.libvirt_dir("7-" + name) if len(name) > 20 else None
            r = self.hook(xml, name=name, op="start", **env)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(os.path.isfile(d), (name, short))
            if decoy:
                self.assertTrue(os.path.isdir(decoy), "the untruncated name is not libvirt's")
            self.hook(xml, name=name, op="release", sub="end", **env)

    def test_policy_short_name_non_ascii_in_either_locale(self):
        env = self.policy_env()
        name = "\u00e9" * 25   # 25 characters, 50 bytes
        xml = self.nova_domain(name=name)
        open(os.path.join(self.ppool, "lv-0d3f6a7e-6b0a-4c8e-9a57-2c1b2d3e4f50"), "w").close()
        self.assertEqual(self.hook(xml, name=name, **env).returncode, 0)
        self.assertIn("warm lv-0d3f6a7e-6b0a-4c8e-9a57-2c1b2d3e4f50 ", self.calls()[0],
                      "a name that is no pool name gets one from the UUID")
        # libvirtd in a UTF-8 locale: 20 characters.
        d = self.libvirt_dir("7-" + "\u00e9" * 20)
        r = self.hook(xml, name=name, op="start", **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isfile(d))

    def test_policy_refusals_start_cold_with_one_line(self):
        cases = (
            (dict(cells=2), "2 NUMA cells"),
            (dict(access="", cell_access=""), "memory access is private"),
            (dict(access="shared", cell_access="private"), "memory access is private"),
            (dict(numatune=""), "no <numatune>"),
            (dict(numatune="<numatune><memory mode='interleave' nodeset='0'/></numatune>"), "mode='interleave'"),
            (dict(numatune="<numatune><memory mode='strict' nodeset='0-1'/></numatune>"), "nodeset='0-1' is not one"),
            (dict(numatune="<numatune><memory mode='strict' placement='auto'/></numatune>"), "placement='auto'"),
            (dict(extra_backing="<discard/>"), "<discard/>"),
            (dict(extra_backing="<source type='memfd'/>"), "memfd"),
            (dict(devices="<memory model='dimm'><target><size unit='KiB'>131072</size><node>0</node></target>"
                          "</memory>"), "1 <memory> devices"),
            (dict(page="<page size='1048576' unit='KiB'/>", cells=0), "no hugetlbfs mount of 1048576 KiB"),
        )
        for kw, why in cases:
            with self.subTest(why=why):
                env = self.policy_env()
                if os.path.exists(self.notes):
                    os.remove(self.notes)
                before = len(self.calls())
                xml = self.nova_domain(name="vm1", **kw)
                for op, sub in (("prepare", "begin"), ("start", "begin"), ("started", "begin"), ("release", "end")):
                    r = self.hook(xml, op=op, sub=sub, **env)
                    self.assertEqual(r.returncode, 0, (op, r.stderr))
                self.assertEqual(self.calls()[before:], [], "nothing warmed, claimed or released")
                lines = self.note_lines()
                self.assertEqual(len(lines), 1, lines)
                self.assertIn("hpwarm hook: domain 'vm1': ", lines[0])
                self.assertIn(why, lines[0])
                self.assertIn("starting without a warm pool", lines[0])

    def test_policy_required_yes_refuses_with_the_reason(self):
        env = self.policy_env(HPWARM_LIBVIRT_REQUIRED="yes")
        r = self.hook(self.nova_domain(name="vm1", cells=2), **env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("2 NUMA cells", r.stderr)
        self.assertIn("refusing to start (HPWARM_LIBVIRT_REQUIRED=yes)", r.stderr)
        r = self.hook(self.nova_domain(name="vm1"), FAKE_WARM_RC=3, **env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("hpwarmd is unreachable", r.stderr)

    def test_policy_daemon_down_starts_cold(self):
        env = self.policy_env()
        xml = self.nova_domain(name="vm1")
        r = self.hook(xml, FAKE_WARM_RC=3, FAKE_WARM_ERR="hpwarm: cannot connect", **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.note_lines()), 1)
        self.assertIn("hpwarmd is unreachable", self.note_lines()[0])
        d = self.libvirt_dir("7-vm1")
        self.assertEqual(self.hook(xml, op="start", **env).returncode, 0)
        self.assertTrue(os.path.isdir(d), "cold: libvirt's directory untouched")
        self.hook(xml, op="release", sub="end", **env)
        self.assertEqual([c.split()[0] for c in self.calls()], ["warm"], "no release of a pool never had")

    def test_policy_pool_on_another_mount_given_back(self):
        other = os.path.join(self.tmp, "elsewhere")
        os.makedirs(other)
        env = self.policy_env(FAKE_POOLDIR=other)
        open(os.path.join(other, "vm1"), "w").close()
        # A device number the mount does not have: a bind of /dev/shm-like tmpfs is not at hand,
        # so point the 'mount' at /proc instead (another device than the pool).
        mounts = os.path.join(self.tmp, "mounts")
        with open(mounts, "w") as f:
            f.write("hugetlbfs /proc hugetlbfs rw,pagesize=2M 0 0\n")
        r = self.hook(self.nova_domain(name="vm1"), **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([c.split()[0] for c in self.calls()], ["warm", "status", "status", "release"])
        self.assertIn("is not on libvirt's hugetlbfs mount /proc", self.note_lines()[0])

    def test_policy_metadata_wins(self):
        env = self.policy_env()
        xml = self.nova_domain(name="vm1", meta="<metadata><hpwarm:pool xmlns:hpwarm='%s' node='1' "
                                                "size='256M'/></metadata>" % NS)
        r = self.hook(xml, **env)
        self.assertEqual(r.returncode, 1, "the metadata path's rules apply: it needs its <qemu:commandline>")
        self.assertIn("has no memory backend id=mem-vm1", r.stderr)
        self.assertEqual(self.calls(), [])

    def test_policy_not_hugepage_backed_untouched(self):
        env = self.policy_env()
        for xml in (domain(), self.nova_domain(name="vm1", page="<page size='4' unit='KiB'/>", cells=0),
                    self.nova_domain(name="vm1", page="<page size='2048' unit='KiB' nodeset='1'/>")):
            r = self.hook(xml, **env)
            self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(self.calls(), [])
        self.assertEqual(self.note_lines(), [])

    def test_policy_page_size_and_mount_from_qemu_conf(self):
        env = self.policy_env()
        m1g = os.path.join(self.tmp, "hugepages1G")
        os.makedirs(os.path.join(m1g, "hpwarm"))
        with open(env["HPWARM_LIBVIRT_MOUNTS"], "a") as f:
            f.write("hugetlbfs %s hugetlbfs rw,pagesize=1024M 0 0\n" % m1g)
        conf = os.path.join(self.tmp, "qemu.conf")
        with open(conf, "w") as f:
            f.write('# hugetlbfs_mount = "/nowhere"\nhugetlbfs_mount = ["%s",\n  "%s"]\n' % (self.mnt, m1g))
        env.update(HPWARM_LIBVIRT_QEMU_CONF=conf, FAKE_POOLDIR=os.path.join(m1g, "hpwarm"))
        for n in ("vm1", "vm2"):
            open(os.path.join(m1g, "hpwarm", n), "w").close()
        xml = self.nova_domain(name="vm1", page="<page size='1' unit='GiB'/>", cells=0, memory_kib=1 << 21)
        r = self.hook(xml, **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--size %d --page-size 1048576kB" % (2 << 30), self.calls()[0])
        # <hugepages/> alone: libvirt's default is qemu.conf's second mount (1G here).
        xml = self.nova_domain(name="vm2", page="", cells=0, memory_kib=1 << 21)
        r = self.hook(xml, name="vm2", **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--page-size 1048576kB", self.calls()[-2])

    def test_policy_unknown_value_leaves_domain_alone_and_says_so(self):
        env = self.policy_env(HPWARM_LIBVIRT_POLICY="hugepage")
        r = self.hook(self.nova_domain(name="vm1"), **env)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(self.calls(), [])
        self.assertIn("HPWARM_LIBVIRT_POLICY=hugepage is neither metadata nor hugepages", self.note_lines()[0])

    # -- the script itself --
    def test_migration_cells_incoming_each_pool_without_ttl(self):
        env, _ = self.cells_env()
        xml = self.cells_domain(self.TWO)
        r = self.hook(xml, op="migrate", **env)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(self.hook(xml, **env).returncode, 0)
        warms = [c for c in self.calls() if c.startswith("warm ")]
        self.assertEqual(len(warms), 2)
        self.assertTrue(all("--ttl" not in c for c in warms), warms)
        # A cell domain libvirt cannot back with files is refused up front.
        r = self.hook(self.cells_domain(self.TWO, source=None), op="migrate", **env)
        self.assertEqual(r.returncode, 1)
        self.assertIn("<memoryBacking><source type='file'/>", r.stderr)

    def test_migration_policy_nova_domain_incoming_warms_without_ttl(self):
        env = self.policy_env()
        name = "instance-0000002a"
        xml = self.nova_domain(name=name)
        with open(os.path.join(self.ppool, name), "w") as f:
            f.write("warm")
        r = self.hook(xml, name=name, op="migrate", **env)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(self.calls(), [])
        r = self.hook(xml, name=name, **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[0], "warm %s --node 0 --size %d --page-size 2048kB --reserve --wait "
                                          "--timeout 120 --label libvirt:%s" % (name, 256 * MIB, NOVA_UUID))
        r = self.hook(xml, name=name, op="release", sub="end", extra="failed", **env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.calls()[-1], "release %s --ignore-missing --timeout 30" % name)
        self.assertEqual(os.listdir(self.statedir), [])

    def test_shellcheck_clean(self):
        sc = shutil.which("shellcheck")
        if not sc:
            self.skipTest("shellcheck not installed")
        r = subprocess.run([sc, "-s", "sh", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_runs_under_dash(self):
        # /bin/sh is dash on Debian; bash-only syntax would pass under bash.
        dash = shutil.which("dash")
        if not dash:
            self.skipTest("dash not installed")
        r = subprocess.run([dash, "-n", SCRIPT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(r.returncode, 0, r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
