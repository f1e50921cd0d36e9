"""placement.keystone: `hpwarm placement sync` authenticating as OpenStack
services do, through a real Keystone 22 (sqlite, keystone-manage
bootstrap) and a real Placement 8.0 with auth_strategy = keystone
(keystonemiddleware), both started here (openstack.py); and every refusal
of bad input, each a clear message and a non-zero exit within seconds that
creates nothing.  The daemon is a fixture daemon (its counts are all this
needs; warm stock on real pages is placement.real's).

- OS_AUTH_URL + OS_USERNAME/OS_PASSWORD/OS_PROJECT_NAME/..._DOMAIN_NAME,
  no --placement: the token from Keystone, the endpoint from its catalog;
- an application credential (OS_APPLICATION_CREDENTIAL_ID/_SECRET);
- --token-file with a token Keystone issued;
- a token Keystone refuses (--token-file): exit 6, nothing created;
- a wrong password: exit 6, the password never printed;
- an unknown compute node: exit 1, nothing created;
- an unreachable Placement: exit 3 within seconds;
- usage errors (no --compute-node, a bad URL, no endpoint at all): exit 2."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openstack  # noqa: E402
from hpwtest import Daemon  # noqa: E402

HPWARM = os.environ.get("HPWARM_CLI", "")
# Bad input must be refused within this (it is seconds on any machine: one
# request, or none).
PROMPT_S = 20


class PlacementKeystone(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = openstack.available()
        if why:
            raise unittest.SkipTest(why)
        if not HPWARM:
            raise unittest.SkipTest("HPWARM_CLI (the CLI) not set")
        cls.d = None
        cls.stack = openstack.Stack(keystone=True, prefix="hpwarm-placement-ks-").__enter__()
        try:
            cls.pl, cls.ks = cls.stack.pl, cls.stack.ks
            cls.d = Daemon("two-node")
            cls.d.start()
            cls.tmp = tempfile.mkdtemp(prefix="hpwarm-placement-ks-tok-")
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.d:
            cls.d.__exit__()
        cls.stack.__exit__()
        if getattr(cls, "tmp", None):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def clean_env(self, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(extra)
        return env

    def run_sync(self, *args, env=None):
        t0 = time.monotonic()
        r = subprocess.run([HPWARM, "placement", "sync", "--url", "http://127.0.0.1:%d" % self.d.port, *args],
                           capture_output=True, text=True, timeout=60, env=env or self.clean_env())
        r.elapsed = time.monotonic() - t0
        return r

    def token_file(self, token):
        path = os.path.join(self.tmp, uuid.uuid4().hex)
        with open(path, "w") as f:
            f.write(token + "\n")
        return path

    def children(self, name):
        return [rp for rp in self.pl.ok("GET", "/resource_providers")["resource_providers"]
                if rp["name"].startswith(name + "_hpwarm_")]

    def host(self):
        name = "ks-%s" % uuid.uuid4().hex[:8]
        return name, self.pl.compute_node(name)

    def test_password_from_os_variables_and_endpoint_from_the_catalog(self):
        name, cn = self.host()
        r = self.run_sync("--compute-node", name, env=self.clean_env(**self.ks.os_env()))
        self.assertEqual(r.returncode, 0, r.stderr)
        kids = self.children(name)
        self.assertEqual(sorted(k["name"] for k in kids), [name + "_hpwarm_numa0", name + "_hpwarm_numa1"])
        self.assertTrue(all(k["parent_provider_uuid"] == cn for k in kids))
        self.assertNotIn(self.ks.ADMIN_PASSWORD, r.stdout + r.stderr)

    def test_application_credential(self):
        tok = self.ks.token()
        uid = openstack.http("GET", self.ks.url + "/v3/auth/tokens",
                             headers={"X-Auth-Token": tok, "X-Subject-Token": tok})[1]["token"]["user"]["id"]
        st, doc, _ = openstack.http("POST", self.ks.url + "/v3/users/%s/application_credentials" % uid,
                                    {"application_credential": {"name": "hpwarm-" + uuid.uuid4().hex[:6]}},
                                    headers={"X-Auth-Token": tok})
        self.assertEqual(st, 201, doc)
        ac = doc["application_credential"]
        name, _ = self.host()
        env = self.clean_env(OS_AUTH_URL=self.ks.url + "/v3", OS_APPLICATION_CREDENTIAL_ID=ac["id"],
                             OS_APPLICATION_CREDENTIAL_SECRET=ac["secret"])
        r = self.run_sync("--compute-node", name, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.children(name)), 2)
        self.assertNotIn(ac["secret"], r.stdout + r.stderr)

    def test_token_file_with_a_keystone_token(self):
        name, _ = self.host()
        r = self.run_sync("--placement", self.pl.url, "--compute-node", name,
                          "--token-file", self.token_file(self.ks.token()))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(self.children(name)), 2)

    def test_a_token_keystone_refuses(self):
        name, _ = self.host()
        bogus = "gAAAAAB" + uuid.uuid4().hex * 3
        r = self.run_sync("--placement", self.pl.url, "--compute-node", name, "--token-file", self.token_file(bogus))
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertIn("HTTP 401", r.stderr)
        self.assertIn("the token is not valid", r.stderr)
        self.assertNotIn(bogus, r.stdout + r.stderr)
        self.assertLess(r.elapsed, PROMPT_S)
        self.assertEqual(self.children(name), [])

    def test_a_wrong_password(self):
        name, _ = self.host()
        env = self.clean_env(**dict(self.ks.os_env(), OS_PASSWORD="not-the-password-4711"))
        r = self.run_sync("--compute-node", name, env=env)
        self.assertEqual(r.returncode, 6, r.stderr)
        self.assertRegex(r.stderr, r"Keystone .* refused the credentials: HTTP 401")
        self.assertNotIn("not-the-password-4711", r.stdout + r.stderr)
        self.assertLess(r.elapsed, PROMPT_S)
        self.assertEqual(self.children(name), [])

    def test_an_unknown_compute_node(self):
        name = "no-such-host-%s" % uuid.uuid4().hex[:6]
        r = self.run_sync("--compute-node", name, env=self.clean_env(**self.ks.os_env()))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("has no resource provider named '%s'" % name, r.stderr)
        self.assertIn("nothing created", r.stderr)
        self.assertLess(r.elapsed, PROMPT_S)
        self.assertEqual(self.children(name), [])
        # Nor the resource classes, if this was the first sync of all.
        self.assertIsNone(self.pl.provider(name))

    def test_an_unreachable_placement(self):
        # A port bound and not listening: connections are refused.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        try:
            r = self.run_sync("--placement", "http://127.0.0.1:%d" % port, "--compute-node", "x",
                              "--token-file", self.token_file("admin"))
        finally:
            s.close()
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("Placement http://127.0.0.1:%d" % port, r.stderr)
        self.assertLess(r.elapsed, PROMPT_S)

    def test_an_unreachable_keystone(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        try:
            env = self.clean_env(**dict(self.ks.os_env(), OS_AUTH_URL="http://127.0.0.1:%d/v3" % port))
            r = self.run_sync("--compute-node", "x", env=env)
        finally:
            s.close()
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("Keystone http://127.0.0.1:%d/v3" % port, r.stderr)
        self.assertLess(r.elapsed, PROMPT_S)

    def test_watch_retries_an_unreachable_placement_and_logs_it_once(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        try:
            w = subprocess.Popen([HPWARM, "placement", "sync", "--watch", "--url", "http://127.0.0.1:%d" % self.d.port,
                                  "--placement", "http://127.0.0.1:%d" % port, "--compute-node", "x",
                                  "--token-file", self.token_file("admin")],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.clean_env())
            try:
                # Attempts at 0, 1, 3 and 7 s (backoff 1 s, doubling): the
                # outage is logged once, and the watch keeps going.
                time.sleep(5)
                self.assertIsNone(w.poll(), "the watch gave up")
                w.send_signal(signal.SIGTERM)
                out, err = w.communicate(timeout=15)
            finally:
                if w.poll() is None:
                    w.kill()
                    w.wait(10)
        finally:
            s.close()
        self.assertEqual(w.returncode, 0, err)
        self.assertEqual(err.count("retrying with backoff"), 1, err)
        self.assertIn("Placement http://127.0.0.1:%d" % port, err)

    def test_usage_errors(self):
        for args, env, want in (
                ((), None, "--compute-node NAME is required"),
                (("--compute-node", "x"), None, "no Placement endpoint"),
                (("--compute-node", "x", "--placement", "ftp://h"), None, "not an http:// or https:// URL"),
                (("--compute-node", "x", "--placement", self.pl.url, "--token-file", "/nonexistent/t"), None,
                 "--token-file"),
                (("--compute-node", "x"), self.clean_env(OS_AUTH_URL=self.ks.url), "OS_USERNAME and OS_PASSWORD"),
                (("--compute-node", "x", "--bogus"), None, "unknown option"),
                (("--compute-node", "x" * 300, "--placement", self.pl.url), None, "must be 1 to"),
        ):
            r = self.run_sync(*args, env=env)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(want, r.stderr, args)
        r = subprocess.run([HPWARM, "placement"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("expected 'placement sync'", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
