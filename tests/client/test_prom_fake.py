#!/usr/bin/env python3
"""client.prom_fake: hpwarm fleet place --prometheus against a fake
Prometheus (canned /api/v1/query answers, the query recorded) and fake
daemons (fake_server.py), for what a real Prometheus over fixture daemons
cannot show (deploy.prometheus_live covers that):

  - the query sent: one instant query, up == 1, the --max-age bound, the
    size, page size and host label, topk-bounded;
  - ranking: a ready stock file of the size beats more free pages;
  - the host is the authority: a host Prometheus offers but whose own
    /v1/nodes shows no room is passed over; an unreachable one too;
  - --warm falls down the list on 409 and says how many refused;
  - hostile answers: label values that are not host names are never
    turned into URLs; Prometheus' own error, malformed JSON, a matrix
    instead of a vector and non-numeric values are clear failures.

Usage: test_prom_fake.py PATH/TO/hpwarm"""
import json
import os
import subprocess
import sys
import threading
import unittest
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_server as fs  # noqa: E402

CLI = ""
M2 = 2 << 20
G1 = 1 << 30


class FakeProm(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        u = urllib.parse.urlsplit(self.path)
        self.server.queries.append((u.path, urllib.parse.parse_qs(u.query).get("query", [""])[0]))
        body = self.server.answer
        if not isinstance(body, bytes):
            body = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def start_prom(answer):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), FakeProm)
    srv.answer = answer
    srv.queries = []
    srv.url = "http://127.0.0.1:%d" % srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def sample(instance, kind, node, value, ps=M2, **labels):
    m = {"instance": instance, "job": "hpwarmd", "hpw_kind": kind, "numa_node": str(node),
         "page_size_bytes": str(ps)}
    m.update(labels)
    return {"metric": m, "value": [1796137763.9, str(value)]}


def vector(*samples):
    return {"status": "success", "data": {"resultType": "vector", "result": list(samples)}}


def nodes(free0, free1=0):
    return [{"id": 0, "cpus": "0-1", "cpu_count": 2, "memory": {"total_bytes": 8 * G1, "free_bytes": 4 * G1},
             "hugepages": [{"page_size_bytes": M2, "total": free0, "free": free0, "surplus": 0, "warm": 0,
                            "warming": 0}]},
            {"id": 1, "cpus": "2-3", "cpu_count": 2, "memory": {"total_bytes": 8 * G1, "free_bytes": 4 * G1},
             "hugepages": [{"page_size_bytes": M2, "total": free1 + 4, "free": free1, "surplus": 0, "warm": 0,
                            "warming": 0}]}]


def hostport(srv):
    return srv.url[len("http://"):]


def run(*args):
    p = subprocess.run([CLI, "fleet", "place"] + list(args), capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


class PromPlacement(unittest.TestCase):
    def setUp(self):
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()

    def daemon(self, **kw):
        s = fs.start_tcp(**kw)
        self.servers.append(s)
        return s

    def prom(self, answer):
        s = start_prom(answer)
        self.servers.append(s)
        return s

    def test_query_is_one_bounded_instant_query(self):
        d = self.daemon(nodes=nodes(600))
        p = self.prom(vector(sample(hostport(d), "free", 0, 600 * M2)))
        rc, out, err = run("--prometheus", p.url + "/", "--size", "1G", "--max-age", "7")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(p.queries), 1, p.queries)
        path, q = p.queries[0]
        self.assertEqual(path, "/api/v1/query")
        for part in ('up == 1', 'time() - timestamp(up) <= 7', 'size_bytes="1073741824"',
                     'page_size_bytes="2097152"', 'state="available"', 'or ignoring (state)',
                     'state="free"', '>= 1073741824', 'hpwarmd_stock_bytes{state="ready"', 'topk('):
            self.assertIn(part, q)
        self.assertEqual(out, "%s node 0 (available pages: 600 available 2M pages, 600 free)\n" % d.url)

    def test_stock_file_beats_free_pages(self):
        stocked = self.daemon(nodes=nodes(10, 600), stock=[
            {"node": 1, "page_size_bytes": M2, "size_bytes": G1, "count": 1, "ready": 1}])
        roomy = self.daemon(nodes=nodes(4000))
        p = self.prom(vector(sample(hostport(roomy), "free", 0, 4000 * M2),
                             sample(hostport(stocked), "stock", 1, G1),
                             sample(hostport(stocked), "free", 1, 600 * M2)))
        rc, out, err = run("--prometheus", p.url, "--size", "1G", "--json")
        self.assertEqual(rc, 0, err)
        j = json.loads(out)
        self.assertEqual((j["url"], j["node"], j["why"], j["stock_ready"]), (stocked.url, 1, "stock", 1), j)

    def test_host_is_the_authority(self):
        # Prometheus (seconds old) says A has the most room; A's own answer
        # says it is full now: B is chosen.  A dead host is passed over too.
        a = self.daemon(nodes=nodes(0))
        b = self.daemon(nodes=nodes(700))
        dead = "127.0.0.1:%d" % fs.dead_port()
        p = self.prom(vector(sample(dead, "free", 0, 9000 * M2), sample(hostport(a), "free", 0, 8000 * M2),
                             sample(hostport(b), "free", 0, 700 * M2)))
        rc, out, err = run("--prometheus", p.url, "--size", "1G", "--json")
        self.assertEqual(rc, 0, err)
        j = json.loads(out)
        self.assertEqual((j["url"], j["offered"], j["asked"]), (b.url, 3, 3), j)
        # Every offered host full by its own word: refused, exit 5.
        b.state.nodes = nodes(3)
        rc, out, err = run("--prometheus", p.url, "--size", "1G")
        self.assertEqual(rc, 5, (out, err))
        self.assertIn("nothing fits 1 GiB in 2M pages", err)
        self.assertIn("0 had room", err)

    def test_hosts_available_pages_decide(self):
        # X has more free pages, but most of them are promised to pools
        # still warming (its own "available"): Y, with fewer free, is chosen.
        x_nodes = nodes(900)
        x_nodes[0]["hugepages"][0]["available"] = 100
        x = self.daemon(nodes=x_nodes)
        y = self.daemon(nodes=nodes(600))
        p = self.prom(vector(sample(hostport(x), "free", 0, 900 * M2), sample(hostport(y), "free", 0, 600 * M2)))
        rc, out, err = run("--prometheus", p.url, "--size", "1G", "--json")
        self.assertEqual(rc, 0, err)
        j = json.loads(out)
        self.assertEqual((j["url"], j["available"], j["free"], j["why"]), (y.url, 600, 600, "available"), j)

    def test_warm_falls_down_the_list_on_409(self):
        full = self.daemon(nodes=nodes(900))
        full.state.full = True
        ok = self.daemon(nodes=nodes(800))
        p = self.prom(vector(sample(hostport(full), "free", 0, 900 * M2), sample(hostport(ok), "free", 0, 800 * M2)))
        rc, out, err = run("--prometheus", p.url, "--size", "1G", "--warm", "vm-1", "--json")
        self.assertEqual(rc, 0, err)
        j = json.loads(out)
        self.assertEqual((j["url"], j["refused"], j["created"], j["pool"]["name"]), (ok.url, 1, True, "vm-1"), j)
        self.assertIn(("PUT", "/v1/pools/vm-1"), full.state.log)
        self.assertIn("vm-1", ok.state.pools)
        self.assertNotIn("vm-1", full.state.pools)
        # Both full: refused with exit 5, nothing created anywhere.
        ok.state.full = True
        rc, out, err = run("--prometheus", p.url, "--size", "1G", "--warm", "vm-2")
        self.assertEqual(rc, 5, (out, err))
        self.assertIn("2 refused the warm", err)
        self.assertNotIn("vm-2", ok.state.pools)

    def test_hostile_label_values_never_become_urls(self):
        good = self.daemon(nodes=nodes(600))
        evil = ["attacker.example/steal?x=", "user@127.0.0.1:1", "127.0.0.1:1/../x", "", "a b"]
        p = self.prom(vector(*[sample(e, "free", 0, 9000 * M2) for e in evil],
                             sample(hostport(good), "free", 0, 600 * M2),
                             # Labels placement needs, missing or not numbers: skipped.
                             {"metric": {"instance": "127.0.0.1:2", "hpw_kind": "free", "numa_node": "x",
                                         "page_size_bytes": str(M2)}, "value": [1, "99999999999"]},
                             sample("127.0.0.1:3", "free", 0, "NaN"), sample("127.0.0.1:4", "free", 0, "-5")))
        rc, out, err = run("--prometheus", p.url, "--size", "1G", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["url"], good.url)
        # Only the good host was ever asked.
        self.assertTrue(all(m == "GET" for m, _ in good.state.log), good.state.log)

    def test_custom_label_and_template(self):
        d = self.daemon(nodes=nodes(600))
        s = sample("ignored:1", "free", 0, 600 * M2, hostname=hostport(d))
        p = self.prom(vector(s))
        rc, out, err = run("--prometheus", p.url, "--size", "1G", "--host-label", "hostname",
                           "--url-template", "http://{hostname}")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith(d.url + " node 0"), out)

    def test_bad_prometheus_answers(self):
        cases = [
            ({"status": "error", "errorType": "bad_data", "error": "parse error"}, 1, "bad_data: parse error"),
            (b'{"status":"success","data":', 1, "not a JSON object"),
            ({"status": "success", "data": {"resultType": "matrix", "result": []}}, 1, "not an instant vector"),
            (b'<html>not prometheus</html>', 1, "not a JSON object"),
            ({"data": {}}, 1, "no \"status\""),
            (vector(), 5, "Prometheus knows no up-to-date host"),
        ]
        for answer, want_rc, want_msg in cases:
            with self.subTest(answer=answer):
                p = self.prom(answer)
                rc, out, err = run("--prometheus", p.url, "--size", "1G")
                self.assertEqual(rc, want_rc, (out, err))
                self.assertIn(want_msg, err)
                self.assertEqual(out, "")

    def test_usage_errors_send_nothing(self):
        p = self.prom(vector())
        for args, msg in ((["--size", "1G", "--hosts", "/dev/null"], "not both"),
                          (["--size", "1G", "--url-template", "ftp://{instance}"], "http:// or https://"),
                          (["--size", "1G", "--host-label", "9x"], "not a Prometheus label"),
                          (["--size", "1G", "--max-age", "0"], "--max-age"),
                          (["--size", "3M"], "multiple of --page-size")):
            with self.subTest(args=args):
                rc, out, err = run("--prometheus", p.url, *args)
                self.assertEqual(rc, 2, err)
                self.assertIn(msg, err)
        rc, out, err = run("--prometheus", "unix:///run/x.sock", "--size", "1G")
        self.assertNotEqual(rc, 0)
        p2 = subprocess.run([CLI, "fleet", "nodes", "--prometheus", p.url], capture_output=True, text=True)
        self.assertEqual(p2.returncode, 2, p2.stderr)
        self.assertEqual(p.queries, [])


if __name__ == "__main__":
    CLI = sys.argv.pop(1)
    unittest.main(verbosity=2)
