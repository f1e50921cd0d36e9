#!/usr/bin/env python3
"""deploy.prometheus_live: placement through a real Prometheus, and the alert
rules evaluated by it against live daemons.

Three hpwarmd on copies of the two-node fixture with different free
hugepages (A: 100 pages on node 0, none on node 1; B: 600 on node 1; C: 1200
on node 0), scraped every second by Debian's prometheus started here as a
plain process on loopback (temp config and storage dir, stopped by pid),
with deploy/prometheus/alerts.yaml as its rule file.  Then, as a scheduler
would, `hpwarm fleet place --prometheus URL`:
  - chooses the host with the most free pages that fit, confirmed on it;
  - refuses a size nothing fits with exit 5 and a message;
  - after C is stopped (Prometheus sees up == 0), never chooses C, also for
    a size only C fitted (refused);
  - refuses a bad --url-template (exit 2) and an unreachable Prometheus (3);
and Prometheus itself evaluated every rule of alerts.yaml without error, and
the rules fire where the live daemons say they should: HpwarmdDown pending
for C, HpwarmdNoFreeHugepages pending for A's node 1 (no free pages of
its reservation) and for no other node.

Exits 77 where the prometheus binary is missing (scripts/deps.sh installs it).
Environment as for the integration tests (HPWARMD, HPW_FIXTURES,
HPWARM_CLI, HPW_FAKEKERNEL).
Usage: prometheus_live.py DEPLOY_PROMETHEUS_DIR
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "integration"))
import hpwtest  # noqa: E402
from hpwtest import Daemon, node_hp  # noqa: E402

CLI = os.environ.get("HPWARM_CLI", "")
RULES_DIR = ""
MIB = 1 << 20
# How long to wait for Prometheus to see what the daemons did: generous,
# since nothing here races it (each wait polls for a state, then goes on).
SETTLE_S = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def set_free(d, node, total, free):
    """A fixture node's 2 MiB pool: TOTAL pages, FREE of them free."""
    d.write_file(node_hp(node, 2048, "nr_hugepages"), "%d\n" % total)
    d.write_file(node_hp(node, 2048, "free_hugepages"), "%d\n" % free)
    d.write_file(node_hp(node, 2048, "surplus_hugepages"), "0\n")


class Prometheus:
    def __init__(self, targets, rule_file):
        self.tmp = tempfile.mkdtemp(prefix="hpwarm-prom-")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        cfg = os.path.join(self.tmp, "prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}\n"
                    "rule_files: [%s]\n"
                    "scrape_configs:\n"
                    "  - job_name: hpwarmd\n"
                    "    static_configs:\n"
                    "      - targets: [%s]\n" % (json.dumps(rule_file), ", ".join('"%s"' % t for t in targets)))
        self.log = open(os.path.join(self.tmp, "prometheus.log"), "w")
        self.proc = subprocess.Popen(
            ["prometheus", "--config.file", cfg, "--storage.tsdb.path", os.path.join(self.tmp, "data"),
             "--web.listen-address", "127.0.0.1:%d" % self.port, "--storage.tsdb.retention.time", "1h"],
            stdout=self.log, stderr=subprocess.STDOUT, cwd=self.tmp)

    def api(self, path, **params):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=10) as r:
            return json.load(r)

    def query(self, q):
        return self.api("/api/v1/query", query=q)["data"]["result"]

    def wait_for(self, what, pred):
        deadline = time.monotonic() + SETTLE_S
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("prometheus exited: " + self.tail())
            try:
                last = pred()
                if last:
                    return last
            except OSError as e:   # not listening yet
                last = e
            time.sleep(0.25)
        raise AssertionError("Prometheus never showed %s (last: %r)\n%s" % (what, last, self.tail()))

    def tail(self):
        self.log.flush()
        with open(os.path.join(self.tmp, "prometheus.log")) as f:
            return "".join(f.readlines()[-20:])

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def place(prom_url, *args):
    cmd = [CLI, "fleet", "place", "--prometheus", prom_url] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


class PrometheusPlacement(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemons = {}
        capacity = {"A": ((0, 100, 100), (1, 8, 0)), "B": ((0, 16, 0), (1, 600, 600)), "C": ((0, 1200, 1200), (1, 8, 0))}
        try:
            for name, nodes in capacity.items():
                d = Daemon()
                for node, total, free in nodes:
                    set_free(d, node, total, free)
                # No mapping holds a reservation, so available = free and
                # the capacities above are what placement sees.
                d.write_file("kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "0\n")
                cls.daemons[name] = d.start()
            cls.inst = {n: "127.0.0.1:%d" % d.port for n, d in cls.daemons.items()}
            cls.prom = Prometheus(list(cls.inst.values()), os.path.join(RULES_DIR, "alerts.yaml"))
            cls.prom.wait_for("every target up with hugepage metrics", lambda: len(cls.prom.query(
                'count by (instance) (hpwarmd_hugepages_bytes and on (instance) (up == 1))')) == 3)
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "prom", None):
            cls.prom.stop()
        for d in cls.daemons.values():
            d.stop()
            d.__exit__()

    def url(self, name):
        return "http://" + self.inst[name]

    # The order of the tests matters: test_z stops C.
    def test_a_most_free_pages_first(self):
        rc, out, err = place(self.prom.url, "--size", "1G")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "%s node 0 (available pages: 1200 available 2M pages, 1200 free)\n" % self.url("C"), out)

    def test_b_json_names_the_host_and_what_was_asked(self):
        rc, out, err = place(self.prom.url, "--size", "1000M", "--json", "--host-label", "instance",
                             "--url-template", "http://{instance}")
        self.assertEqual(rc, 0, err)
        j = json.loads(out)
        self.assertEqual((j["url"], j["host"], j["node"], j["why"], j["available"]),
                         (self.url("C"), self.inst["C"], 0, "available", 1200), j)
        # C and B cover 1000M (500 pages); A does not: two offered, C asked first.
        self.assertEqual(j["offered"], 2, j)
        self.assertGreaterEqual(j["asked"], 1, j)

    def test_c_only_the_host_that_fits(self):
        rc, out, err = place(self.prom.url, "--size", "190M")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith(self.url("C") + " node 0"), out)
        rc, out, err = place(self.prom.url, "--size", "2G")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith(self.url("C") + " node 0"), out)

    def test_d_nothing_fits_is_refused(self):
        rc, out, err = place(self.prom.url, "--size", "4G")
        self.assertEqual(rc, 5, (out, err))
        self.assertEqual(out, "")
        self.assertIn("nothing fits 4 GiB in 2M pages", err)
        self.assertIn("Prometheus knows no up-to-date host", err)

    def test_e_bad_template_and_dead_prometheus(self):
        rc, out, err = place(self.prom.url, "--size", "1G", "--url-template", "http://{host}")
        self.assertEqual(rc, 2, err)
        self.assertIn("does not contain {instance}", err)
        rc, out, err = place(self.prom.url, "--size", "1G", "--host-label", "__name__")
        self.assertEqual(rc, 2, err)
        rc, out, err = place("http://127.0.0.1:%d" % free_port(), "--size", "1G")
        self.assertEqual(rc, 3, err)
        self.assertIn("Prometheus", err)

    def test_f_rules_evaluated_live(self):
        def evaluated():
            groups = self.prom.api("/api/v1/rules")["data"]["groups"]
            rules = [r for g in groups for r in g["rules"]]
            return rules if rules and all(r.get("lastEvaluation", "").startswith("20") and
                                          r.get("evaluationTime") is not None for r in rules) else None
        rules = self.prom.wait_for("every rule evaluated", evaluated)
        with open(os.path.join(RULES_DIR, "alerts.yaml")) as f:
            n_rules = f.read().count("- alert:")
        self.assertEqual(len(rules), n_rules)
        for r in rules:
            self.assertEqual(r["health"], "ok", r)

        # 2 MiB pages (the fixture's 1 GiB pool of node 1 is full too): A's
        # node 1, B's node 0 and C's node 1 have none free of their 8/16.
        want = sorted([(self.inst["A"], "1", "pending"), (self.inst["B"], "0", "pending"),
                       (self.inst["C"], "1", "pending")])

        def no_free_alerts():
            return sorted((a["labels"]["instance"], a["labels"]["numa_node"], a["state"])
                          for a in self.prom.api("/api/v1/alerts")["data"]["alerts"]
                          if a["labels"]["alertname"] == "HpwarmdNoFreeHugepages" and
                          a["labels"]["page_size_bytes"] == str(2 * MIB))
        # Each evaluation sees every target's last scrape: once all three
        # were scraped, the set is exactly these (waited for, then checked).
        try:
            self.prom.wait_for("HpwarmdNoFreeHugepages pending for exactly those", lambda: no_free_alerts() == want)
        except AssertionError:
            pass
        self.assertEqual(no_free_alerts(), want)

    def test_z_stopped_host_never_chosen(self):
        self.assertEqual(self.daemons["C"].stop(), 0)
        self.prom.wait_for("C down", lambda: self.prom.query('up{instance="%s"} == 0' % self.inst["C"]))
        for _ in range(3):
            rc, out, err = place(self.prom.url, "--size", "1G", "--json")
            self.assertEqual(rc, 0, err)
            self.assertEqual(json.loads(out)["url"], self.url("B"), out)
        # Only C had 2G: refused, not C.
        rc, out, err = place(self.prom.url, "--size", "2G")
        self.assertEqual(rc, 5, (out, err))
        self.assertNotIn(self.inst["C"], out)
        # The down alert is pending for C (its `for` is 5 minutes) and for no one else.
        down = self.prom.wait_for("HpwarmdDown pending", lambda: [
            a for a in self.prom.api("/api/v1/alerts")["data"]["alerts"] if a["labels"]["alertname"] == "HpwarmdDown"])
        self.assertEqual([(a["labels"]["instance"], a["state"]) for a in down], [(self.inst["C"], "pending")])


if __name__ == "__main__":
    if shutil.which("prometheus") is None:
        print("SKIP: prometheus not installed (apt-get install prometheus)")
        sys.exit(77)
    if not CLI or not os.path.exists(CLI):
        raise SystemExit("HPWARM_CLI is not set to the hpwarm binary")
    RULES_DIR = os.path.abspath(sys.argv.pop(1))
    hpwtest.main()
