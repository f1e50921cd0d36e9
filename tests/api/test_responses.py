#!/usr/bin/env python3
"""api.responses: real answers of the daemon validate against api/openapi.yaml.

The real hpwarmd runs on a copy of the two-node sysfs fixture under the
fakekernel shim, whose HPW_FAKE_HUGETLBFS_2M makes a tmpfs directory pass
for a 2 MiB hugetlbfs (tests/fakekernel/README.md), so pools warm, are
claimed, handed off and deleted for real.  Every request below is sent over
loopback TCP with bearer tokens; each answer is checked against the
operation the document gives for its method and path:

- its status is declared for that operation;
- its Content-Type is one the response declares, and a response that
  declares no content (204) has no body and no Content-Type;
- its body validates, with jsonschema's Draft 2020-12 validator (OpenAPI 3.1
  schemas are JSON Schema 2020-12), against the declared schema, made strict:
  an object whose schema lists `properties` may have no member it does not
  list (a field the server sends must be documented);
- a problem's slug is in components/x-problem-types with the same status
  and title;
- every response header the document marks `required` is present, and
  every declared header sent validates against its schema.

The test fails when a documented (method, path) got no validated success
answer or no validated error answer, so a new path cannot go unchecked.

And the contract is checked both ways, status by status: every status an
operation lists must have been answered by it here (the transport's
refusals are sent to every operation, whether it lists them or not, so one
it answers but does not list fails too), except the few in NOT_DRIVEN,
each with the reason it cannot be provoked on this fixture and the test
that provokes it elsewhere.

Usage: test_responses.py API_YAML   (HPWARMD, HPW_FIXTURES, HPW_FAKEKERNEL
from ctest's environment)."""
import copy
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from hpwtest import Daemon, FAKEKERNEL, HPWARMD  # noqa: E402

ADMIN = "responses-admin-token-0001"
READER = "responses-read-token-0001"
METHODS = ("get", "put", "post", "delete")
PROBLEM_URN = "urn:hpwarm:problem:"


def load(path):
    import yaml
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def strict(node):
    """A copy of a schema tree in which every object schema that lists
    `properties` and says nothing of additional ones refuses members it does
    not list (unevaluatedProperties, so allOf/oneOf branches count)."""
    if isinstance(node, list):
        return [strict(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict(v) for k, v in node.items()}
    if "properties" in out and "additionalProperties" not in out and "unevaluatedProperties" not in out:
        out["unevaluatedProperties"] = False
    return out


class Contract:
    def __init__(self, doc):
        import jsonschema
        self.jsonschema = jsonschema
        self.doc = doc
        self.strict_doc = copy.deepcopy(doc)
        self.strict_doc["components"]["schemas"] = strict(doc["components"]["schemas"])
        self.problems = doc["components"]["x-problem-types"]
        self.templates = []
        for template, item in doc["paths"].items():
            rx = "^" + re.sub(r"\{[^}/]+\}", "[^/]+", template) + "$"
            self.templates.append((re.compile(rx), template, item))
        self.ops = {(m.upper(), t) for _, t, item in self.templates for m in METHODS if m in item}
        self.seen = {}   # (METHOD, template) -> set of "ok"/"error"
        self.statuses = {}   # (METHOD, template) -> the statuses it answered, validated
        self.failures = []
        self.checked = 0

    def deref(self, node):
        while isinstance(node, dict) and "$ref" in node:
            node = self.resolve(node["$ref"])
        return node

    def resolve(self, ref):
        node = self.doc
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    def operation(self, method, path):
        """The path's template and the operation for METHOD; a method the
        path does not define is answered 405 as each of its operations
        declares it (the first one's stands for all)."""
        bare = path.split("?", 1)[0]
        for rx, template, item in self.templates:
            if rx.match(bare):
                op = item.get(method.lower())
                if op is None:
                    op = next(({"responses": {"405": item[m]["responses"]["405"]}, "undefined": True}
                               for m in METHODS if m in item and "405" in item[m]["responses"]), None)
                return template, op
        return None, None

    def item(self, template):
        return next(item for _, t, item in self.templates if t == template)

    def fail(self, what):
        self.failures.append(what)
        print("FAIL:", what)

    def validate(self, instance, schema, where):
        resolver = self.jsonschema.RefResolver(base_uri="", referrer=self.strict_doc)
        v = self.jsonschema.Draft202012Validator(strict(schema), resolver=resolver,
                                                 format_checker=self.jsonschema.FormatChecker())
        errors = sorted(v.iter_errors(instance), key=lambda e: list(e.absolute_path))
        for e in errors[:5]:
            self.fail("%s: %s at %s" % (where, e.message, "/".join(map(str, e.absolute_path)) or "the top"))
        return not errors

    def check(self, method, path, r, label):
        where = "%s %s -> %d (%s)" % (method, path, r.status, label)
        template, op = self.operation(method, path)
        if op is None:
            self.fail("%s: no such operation in the document" % where)
            return
        self.checked += 1
        responses = op["responses"]
        declared = responses.get(str(r.status))
        if declared is None:
            self.fail("%s: status %d is not declared (declared: %s)" % (where, r.status, ", ".join(responses)))
            return
        declared = self.deref(declared)
        ok = True
        for name, h in (declared.get("headers") or {}).items():
            h = self.deref(h)
            value = r.headers.get(name.lower())
            if value is None:
                if h.get("required"):
                    ok = self.fail("%s: required header %s missing" % (where, name)) or False
                continue
            schema = h.get("schema", {})
            if schema.get("type") == "integer":
                if not re.fullmatch(r"[0-9]+", value):
                    ok = self.fail("%s: header %s is %r, not an integer" % (where, name, value)) or False
                    continue
                value = int(value)
            ok = self.validate(value, schema, "%s header %s" % (where, name)) and ok
        content = declared.get("content")
        ctype = r.headers.get("content-type")
        if not content:
            if r.body or ctype is not None:
                ok = self.fail("%s: declares no content but got Content-Type %r and %d bytes"
                               % (where, ctype, len(r.body))) or False
        else:
            media = next((m for m in content if ctype and ctype.split(";")[0].strip() == m.split(";")[0].strip()),
                         None)
            if media is None:
                ok = self.fail("%s: Content-Type %r is not one of %s" % (where, ctype, list(content))) or False
            elif "json" in media:
                try:
                    body = json.loads(r.body)
                except ValueError as e:
                    self.fail("%s: body is not JSON: %s" % (where, e))
                    return
                ok = self.validate(body, content[media].get("schema", {}), where) and ok
                if r.status >= 400:
                    ok = self.check_problem(body, r.status, where) and ok
            else:
                ok = self.validate(r.body.decode(), content[media].get("schema", {}), where) and ok
        if ok and not op.get("undefined"):
            self.seen.setdefault((method, template), set()).add("ok" if r.status < 400 else "error")
            self.statuses.setdefault((method, template), set()).add(str(r.status))
        elif ok:
            # A method the path lacks: the 405 counts for each operation
            # of the path, which all declare it.
            for m in METHODS:
                if m in self.item(template):
                    self.statuses.setdefault((m.upper(), template), set()).add(str(r.status))

    def check_problem(self, body, status, where):
        slug = body.get("type", "")[len(PROBLEM_URN):]
        row = self.problems.get(slug)
        if row is None:
            self.fail("%s: problem type %r is not in x-problem-types" % (where, body.get("type")))
            return False
        if (row["status"], row["title"]) != (status, body.get("title")):
            self.fail("%s: %s is %d %r, the catalog says %d %r"
                      % (where, slug, status, body.get("title"), row["status"], row["title"]))
            return False
        return True


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    if not HPWARMD or not FAKEKERNEL:
        print("FAIL: HPWARMD and HPW_FAKEKERNEL must name the daemon and the fakekernel shim")
        return 1
    c = Contract(load(sys.argv[1]))
    tmp = tempfile.mkdtemp(prefix="hpwarm-responses-")
    shm = tempfile.mkdtemp(prefix="hpwarm-responses-", dir="/dev/shm")
    try:
        for name, token in (("admin", ADMIN), ("read", READER)):
            fd = os.open(os.path.join(tmp, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(token + "\n")
        d = Daemon("two-node", env={"HPW_FAKE_HUGETLBFS_2M": shm},
                   args=["--hugetlbfs", "2M=" + os.path.join(shm, "pools"), "--max-pools", "3",
                         "--token-file", os.path.join(tmp, "admin"),
                         "--read-token-file", os.path.join(tmp, "read")])
        with d:
            run(c, d)
        # A daemon that never changes a hugepage count: its refusals and
        # the nodes' hugepages_fixed validate too.
        d = Daemon("two-node", env={"HPW_FAKE_HUGETLBFS_2M": shm},
                   args=["--hugetlbfs", "2M=" + os.path.join(shm, "fixed"), "--fixed-hugepages",
                         "--token-file", os.path.join(tmp, "admin"),
                         "--read-token-file", os.path.join(tmp, "read")])
        with d:
            run_fixed(c, d)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)

    missing = []
    for op in sorted(c.ops):
        got = c.seen.get(op, set())
        for kind in ("ok", "error"):
            if kind not in got:
                missing.append("%s %s: no validated %s answer" % (op[0], op[1], "success" if kind == "ok" else "error"))
    for op in sorted(c.ops):
        listed = set(c.item(op[1])[op[0].lower()]["responses"])
        for status in sorted(listed - c.statuses.get(op, set())):
            if status not in NOT_DRIVEN.get(op, {}) and status not in NOT_DRIVEN["*"]:
                missing.append("%s %s: lists %s, which it never answered here (drive it, or say in "
                               "NOT_DRIVEN why it cannot be)" % (op[0], op[1], status))
    for m in missing:
        c.fail(m)
    print("%d answers checked; %d operations, each with a validated success and error answer; %d failures"
          % (c.checked, len(c.ops), len(c.failures)))
    return 1 if c.failures else 0


def run(c, d):
    admin = {"Authorization": "Bearer " + ADMIN}
    reader = {"Authorization": "Bearer " + READER}

    def send(label, method, path, body=None, headers=admin, ctype="application/json", want=None):
        r = d.request(method, path, body=body, headers=headers, ctype=ctype)
        if want is not None and r.status != want:
            c.fail("%s %s (%s): wanted %d, got %r" % (method, path, label, want, r))
        c.check(method, path, r, label)
        return r

    big = json.dumps({"node": 0, "size": "2M", "pad": "x" * 70000})
    # Service.
    send("health", "GET", "/v1/health", headers={}, want=200)
    send("health, wrong method", "POST", "/v1/health", want=405)
    send("health, with a body", "GET", "/v1/health", {"x": 1}, headers={}, want=400)
    many = "?" + "&".join("a%d=1" % i for i in range(40))
    send("health, 40 query arguments", "GET", "/v1/health" + many, headers={}, want=414)
    send("nodes, 70 header fields", "GET", "/v1/nodes",
         headers=dict(admin, **{"X-Pad-%d" % i: "x" for i in range(70)}), want=431)
    # Every bodyless operation: a body is 400 unexpected-body.
    for path in ("/metrics", "/v1/nodes", "/v1/nodes/0", "/v1/pools", "/v1/pools/a", "/v1/stock",
                 "/v1/handoff?vmm=qemu&pools=a"):
        send("with a body", "GET", path, {"x": 1}, want=400)
    send("with a body", "DELETE", "/v1/pools/a", {"x": 1}, want=400)
    send("metrics", "GET", "/metrics", want=200)
    send("metrics, no token", "GET", "/metrics", headers={}, want=401)
    # Nodes.
    send("nodes", "GET", "/v1/nodes", headers=reader, want=200)
    send("nodes, no token", "GET", "/v1/nodes", headers={}, want=401)
    send("node", "GET", "/v1/nodes/0", want=200)
    send("unknown node", "GET", "/v1/nodes/9", want=404)
    send("reserve", "PUT", "/v1/nodes/0/hugepages/2M", {"count": 16}, want=200)
    send("reserve, read-only token", "PUT", "/v1/nodes/0/hugepages/2M", {"count": 16}, headers=reader, want=403)
    send("reserve, bad page size", "PUT", "/v1/nodes/0/hugepages/2MB", {"count": 16}, want=422)
    send("reserve, unknown page size", "PUT", "/v1/nodes/0/hugepages/4M", {"count": 16}, want=404)
    send("reserve, malformed", "PUT", "/v1/nodes/0/hugepages/2M", "{", want=400)
    send("reserve, text/plain", "PUT", "/v1/nodes/0/hugepages/2M", '{"count": 1}', ctype="text/plain", want=415)
    send("reserve, too large a body", "PUT", "/v1/nodes/0/hugepages/2M", big, want=413)
    send("reserve, past the memory floor", "PUT", "/v1/nodes/0/hugepages/2M", {"count": 1 << 30}, want=409)
    send("reserve, wrong method", "DELETE", "/v1/nodes/0/hugepages/2M", want=405)
    # Elastic policies.
    pol = "/v1/nodes/0/hugepages/2M/policy"
    elastic = {"min": 0, "max": 64, "headroom": 4, "idle_seconds": 3600}
    send("policy, none", "GET", pol, want=404)
    send("policy, set", "PUT", pol, elastic, want=200)
    send("policy", "GET", pol, want=200)
    send("node, elastic", "GET", "/v1/nodes/0", want=200)
    send("policy, with a body", "GET", pol, {"x": 1}, want=400)
    send("policy, read-only", "PUT", pol, elastic, headers=reader, want=403)
    send("policy, min above max", "PUT", pol, dict(elastic, min=65), want=422)
    send("policy, negative", "PUT", pol, dict(elastic, headroom=-1), want=422)
    send("policy, max past the memory floor", "PUT", pol, dict(elastic, max=1 << 30), want=409)
    send("policy, 1G without CMA", "PUT", "/v1/nodes/0/hugepages/1G/policy", dict(elastic, max=1, headroom=0), want=409)
    send("policy, unknown node", "PUT", "/v1/nodes/9/hugepages/2M/policy", elastic, want=404)
    send("policy, malformed", "PUT", pol, "{", want=400)
    send("policy, text/plain", "PUT", pol, "{}", ctype="text/plain", want=415)
    send("policy, too large a body", "PUT", pol, big, want=413)
    send("policy, wrong method", "POST", pol, want=405)
    send("policy, bad page size", "GET", "/v1/nodes/0/hugepages/2MB/policy", want=422)
    send("policy, removed", "DELETE", pol, want=204)
    send("policy, removed again", "DELETE", pol, want=404)
    send("policy, remove read-only", "DELETE", pol, headers=reader, want=403)
    # Pools.
    send("pools", "GET", "/v1/pools", want=200)
    send("pools, no token", "GET", "/v1/pools", headers={}, want=401)
    send("create", "PUT", "/v1/pools/a", {"node": 0, "size": "8M", "ttl_seconds": 600}, want=201)
    send("create again", "PUT", "/v1/pools/a", {"node": 0, "size": "8M", "ttl_seconds": 600}, want=200)
    send("create, differs", "PUT", "/v1/pools/a", {"node": 0, "size": "4M"}, want=409)
    send("create, threads 0", "PUT", "/v1/pools/b", {"node": 0, "size": "4M", "threads": 0}, want=422)
    send("create, unknown node", "PUT", "/v1/pools/b", {"node": 7, "size": "4M"}, want=404)
    send("create, no hugetlbfs for 1G", "PUT", "/v1/pools/b", {"node": 0, "size": "1G", "page_size": "1G"},
         want=503)
    send("create, more than node 1 has", "PUT", "/v1/pools/b", {"node": 1, "size": "64M"}, want=409)
    send("create, malformed", "PUT", "/v1/pools/b", "[", want=400)
    send("create, text/plain", "PUT", "/v1/pools/b", "{}", ctype="text/plain", want=415)
    send("create, too large a body", "PUT", "/v1/pools/b", big, want=413)
    send("create b", "PUT", "/v1/pools/b", {"node": 0, "size": "4M"}, want=201)
    send("create c", "PUT", "/v1/pools/c", {"node": 0, "size": "2M"}, want=201)
    send("create, over --max-pools", "PUT", "/v1/pools/d", {"node": 0, "size": "2M"}, want=429)
    send("get, waiting", "GET", "/v1/pools/a?wait=ready&timeout=30", want=200)
    send("get", "GET", "/v1/pools/b?wait=ready&timeout=30", want=200)
    send("get, bad timeout", "GET", "/v1/pools/a?wait=ready&timeout=x", want=422)
    send("get, unknown", "GET", "/v1/pools/nope", want=404)
    send("pools, with some", "GET", "/v1/pools", want=200)
    send("claim", "POST", "/v1/pools/a/claim", want=200)
    send("claim, bad pid", "POST", "/v1/pools/b/claim", {"pid": 0}, want=422)
    # A thread's id and a zombie's pid name no live process: 422 naming
    # the pid, and the pool stays unclaimed (not released at once).
    stop = threading.Event()
    tids = []
    t = threading.Thread(target=lambda: (tids.append(threading.get_native_id()), stop.wait()), daemon=True)
    t.start()
    while not tids:
        time.sleep(0.001)
    r = send("claim, a thread's id", "POST", "/v1/pools/b/claim", {"pid": tids[0]}, want=422)
    detail = (r.json or {}).get("detail", "")
    if ("%d" % tids[0]) not in detail or "thread" not in detail:
        c.fail("claim with a thread's id: the detail names neither the id nor a thread: %r" % r)
    stop.set()
    t.join()
    zombie = os.fork()
    if zombie == 0:
        os._exit(0)
    os.waitid(os.P_PID, zombie, os.WEXITED | os.WNOWAIT)
    r = send("claim, a zombie", "POST", "/v1/pools/b/claim", {"pid": zombie}, want=422)
    if ("%d" % zombie) not in (r.json or {}).get("detail", ""):
        c.fail("claim with a zombie's pid: the detail does not name it: %r" % r)
    os.waitpid(zombie, 0)
    r = send("not claimed", "GET", "/v1/pools/b", want=200)
    if (r.json or {}).get("claimed"):
        c.fail("pool b claimed after refused claims: %r" % r)
    send("claim, unknown", "POST", "/v1/pools/nope/claim", want=404)
    send("claim, read-only", "POST", "/v1/pools/b/claim", headers=reader, want=403)
    send("claimed", "GET", "/v1/pools/a", want=200)
    for label, query, want in (("handoff", "vmm=qemu&pools=a,b", 200),
                               ("handoff, libvirt", "vmm=libvirt&pools=a", 200),
                               ("handoff, unknown vmm", "vmm=xen&pools=a", 422),
                               ("handoff, unknown pool", "vmm=qemu&pools=nope", 404)):
        send(label, "GET", "/v1/handoff?" + query, want=want)
    # Stock.
    send("stock", "GET", "/v1/stock", want=200)
    send("stock, no token", "GET", "/v1/stock", headers={}, want=401)
    send("stock, set", "PUT", "/v1/stock", {"targets": [{"node": 0, "size": "2M", "count": 1}]}, want=200)
    send("stock, filled", "GET", "/v1/stock", want=200)
    g = d.get("/v1/stock", headers=admin).json["generation"]
    send("stock, wait timed out", "GET", "/v1/stock?wait=change&after=%d&timeout=1" % g, want=200)
    send("stock, wait answered at once", "GET", "/v1/stock?wait=change&after=%d" % (g + 1), want=200)
    send("stock, bad after", "GET", "/v1/stock?wait=change&after=x", want=422)
    send("stock, 1G without hugetlbfs", "PUT", "/v1/stock",
         {"targets": [{"node": 0, "page_size": "1G", "size": "1G", "count": 1}]}, want=503)
    send("stock, larger than the node", "PUT", "/v1/stock",
         {"targets": [{"node": 1, "size": "2M", "count": 1000}]}, want=409)
    send("stock, unknown key", "PUT", "/v1/stock", {"targets": [], "x": 1}, want=422)
    send("stock, cleared", "PUT", "/v1/stock", {"targets": []}, want=200)
    malformed_segments(c, send)
    transport_refusals(c, send, admin, reader, big)
    send("pools, bad state filter", "GET", "/v1/pools?state=bogus", want=422)
    send("stock, unknown node", "PUT", "/v1/stock", {"targets": [{"node": 9, "size": "2M", "count": 1}]},
         want=404)
    send("claim, bound to this process", "POST", "/v1/pools/c/claim", {"pid": os.getpid()}, want=200)
    parent = os.getppid()
    send("claim, another live process", "POST", "/v1/pools/c/claim", {"pid": parent}, want=409)
    # Delete.
    send("delete, bad recycle", "DELETE", "/v1/pools/a?recycle=maybe", want=422)
    for name in ("a", "b", "c"):
        send("delete", "DELETE", "/v1/pools/" + name, want=204)
    send("delete, gone", "DELETE", "/v1/pools/a", want=404)
    send("delete, read-only", "DELETE", "/v1/pools/b", headers=reader, want=403)


# Statuses an operation lists that this fixture cannot provoke, with why and
# where they are provoked.  "*" holds for every operation.
NOT_DRIVEN = {
    "*": {"500": "internal-error: an allocation or a read the fixture does not fail",
          "503": "stopping: a request during shutdown (integration.lifecycle), busy: a full work "
                 "queue (load tests), state-write-failed: a journal write failing "
                 "(integration.faults)"},
    ("GET", "/v1/stock"): {"429": "too-many-waits: --max-waits-per-caller full (integration.stock_watch)"},
    ("GET", "/v1/pools/{name}"): {"429": "too-many-waits: --max-waits-per-caller full (integration.stock_watch)"},
    ("GET", "/v1/handoff"): {"409": "pool-not-ready: a pool caught warming (integration.handoff_api)"},
}


def transport_refusals(c, send, admin, reader, big):
    """What the transport answers before any handler, sent to every
    operation: no token (401), a read-only token on a mutation (403), 40
    query arguments (414), 70 header fields (431), a body where none is
    taken (400), and where one is: a malformed one (400), text/plain (415)
    and one over the limit (413).  Each answer must be one the operation
    lists (check()); GET /v1/health takes no token."""
    for template, item in c.doc["paths"].items():
        path = template
        for q, v in GOOD_SEGMENTS.items():
            path = path.replace("{%s}" % q, v)
        if template == "/v1/handoff":
            path += "?vmm=qemu&pools=a"
        many = ("&" if "?" in path else "?") + "&".join("a%d=1" % i for i in range(40))
        for method in METHODS:
            if method not in item:
                continue
            m = method.upper()
            takes_body = "requestBody" in item[method]
            body = SEGMENT_BODIES.get((m, template), {} if takes_body else None)
            if template != "/v1/health":
                send("transport, no token", m, path, body, headers={}, want=401)
            if m != "GET":
                send("transport, read-only token", m, path, body, headers=reader, want=403)
            send("transport, 40 query arguments", m, path + many, body, want=414)
            send("transport, 70 header fields", m, path, body,
                 headers=dict(admin, **{"X-Pad-%d" % i: "x" for i in range(70)}), want=431)
            if not takes_body:
                send("transport, a body where none is taken", m, path, {"x": 1}, want=400)
                continue
            send("transport, malformed body", m, path, "{", want=400)
            send("transport, text/plain", m, path, "{}", ctype="text/plain", want=415)
            send("transport, too large a body", m, path, big, want=413)
        other = next(x for x in ("post", "put", "delete", "get") if x not in item)
        send("transport, a method the path lacks", other.upper(), path, want=405)


def run_fixed(c, d):
    """--fixed-hugepages: the refusals are 409 hugepages-fixed (and
    insufficient-hugepages for a create \"reserve\" cannot help), and every
    node says hugepages_fixed."""
    admin = {"Authorization": "Bearer " + ADMIN}

    def send(label, method, path, body=None, want=None, slug=None):
        r = d.request(method, path, body=body, headers=admin)
        if want is not None and r.status != want:
            c.fail("%s %s (%s): wanted %d, got %r" % (method, path, label, want, r))
        if slug and not (r.json or {}).get("type", "").endswith(":" + slug):
            c.fail("%s %s (%s): wanted %s, got %r" % (method, path, label, slug, r))
        c.check(method, path, r, label)
        return r

    r = send("nodes, fixed", "GET", "/v1/nodes", want=200)
    if not all(n.get("hugepages_fixed") is True for n in (r.json or {}).get("nodes", [])):
        c.fail("GET /v1/nodes under --fixed-hugepages: hugepages_fixed is not true on every node: %r" % r)
    send("node, fixed", "GET", "/v1/nodes/0", want=200)
    send("reserve, fixed", "PUT", "/v1/nodes/0/hugepages/2M", {"count": 16}, want=409, slug="hugepages-fixed")
    send("policy, fixed", "PUT", "/v1/nodes/0/hugepages/2M/policy",
         {"min": 0, "max": 64, "headroom": 4, "idle_seconds": 3600}, want=409, slug="hugepages-fixed")
    send("create with reserve beyond free, fixed", "PUT", "/v1/pools/big", {"node": 0, "size": "1G", "reserve": True},
         want=409, slug="insufficient-hugepages")


# Path segments that name nothing, per parameter: (value, the status it
# gets, why).  A node id is a name: anything but a node's canonical decimal
# id is 404.  A page size (a power of two of at least 4 KiB, with a unit)
# the host lacks is 404 `unknown-page-size`; anything else is 422
# `invalid-field`, 3M included (no kernel has it: the shared grammar refuses
# it, as it does in a body's page_size).  A pool name outside PoolName is
# 422.
BAD_SEGMENTS = {
    "id": [("9", 404, "no such node"), ("x", 404, "not a number"), ("01", 404, "leading zero"),
           ("-1", 404, "negative"), ("99999999999", 404, "too long")],
    "size": [("4M", 404, "a page size this host lacks"),
             ("3M", 422, "not a power of two"), ("0K", 422, "zero"), ("2K", 422, "below 4 KiB"),
             ("99999999999999999999T", 422, "too large for 64 bits"), ("2MB", 422, "a decimal-looking unit"),
             ("2m", 422, "lower case"), ("2048", 422, "no unit"), ("x", 422, "not a size")],
    "name": [("-a", 422, "starts with a dash"), (".a", 422, "starts with a dot"), ("a" * 65, 422, "65 characters"),
             ("a%20b", 422, "a space"), ("a%3Ab", 422, "a colon")],
}
GOOD_SEGMENTS = {"id": "0", "size": "2M", "name": "a"}
# A body each operation would take, so only the segment is wrong.
SEGMENT_BODIES = {
    ("PUT", "/v1/nodes/{id}/hugepages/{size}"): {"count": 16},
    ("PUT", "/v1/nodes/{id}/hugepages/{size}/policy"): {"min": 0, "max": 64, "headroom": 4, "idle_seconds": 3600},
    ("PUT", "/v1/pools/{name}"): {"node": 0, "size": "2M"},
}


def malformed_segments(c, send):
    """Every documented operation with a path parameter gets each bad
    value in each of its segments (the others good), and each answer is
    validated against the contract; the status must be the one its case
    names, and a problem's detail must be there."""
    sent = 0
    for template, item in c.doc["paths"].items():
        params = re.findall(r"\{([^}/]+)\}", template)
        if not params:
            continue
        for method in METHODS:
            if method not in item:
                continue
            m = method.upper()
            for param in params:
                for value, want, why in BAD_SEGMENTS[param]:
                    path = template
                    for q in params:
                        path = path.replace("{%s}" % q, value if q == param else GOOD_SEGMENTS[q])
                    r = send("malformed %s (%s)" % (param, why), m, path, SEGMENT_BODIES.get((m, template)),
                             want=want)
                    sent += 1
                    if r.status >= 400 and not (r.json or {}).get("detail"):
                        c.fail("%s %s: no detail in %r" % (m, path, r))
    # Nothing was made of any of them.
    r = send("pools after malformed segments", "GET", "/v1/pools", want=200)
    names = sorted(p["name"] for p in (r.json or {}).get("pools", []))
    if names != ["a", "b", "c"]:
        c.fail("malformed segments changed the pools: %s" % names)
    print("%d requests with a malformed path segment" % sent)


if __name__ == "__main__":
    sys.exit(main())
