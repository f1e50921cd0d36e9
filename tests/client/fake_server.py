"""A tiny stand-in for hpwarmd, for testing the client and CLI.

Python 3 standard library only.  It speaks the node and pool API (api/openapi.yaml) with
canned data and scripted misbehaviour chosen by the pool name:

  flaky503      GET answers 503 once, then the pool (retry test)
  ratelimited   GET answers 429 with Retry-After: 1 once, then the pool
  ratelimited-long  GET answers 429 with Retry-After: 60, always
  hang          GET never answers (well, not for 60 s): timeout test
  flakyclaim    POST .../claim answers 503 once (retried: a claim is idempotent)
  busy          GET answers 503 busy (Retry-After: 0) always: try-later exit
  nohugetlbfs   PUT answers 503 no-hugetlbfs, a permanent refusal: never retried
  weirdstate    GET answers a pool in state "frobbing"
  hangput       PUT never answers (not for 60 s)
  dropdelete    the first DELETE deletes, then closes without answering
  conflict      PUT answers 409 pool-conflict
  doomed        PUT succeeds, warming ends "failed"
  stuck, slow, hook-slow
                PUT succeeds, warming never ends (deadline tests: a warm
                that outlasts any deadline, however loaded the machine)
  State.full    every pool PUT answers 409 insufficient-hugepages
  size > 1 TiB  PUT answers 409 insufficient-hugepages (naming "reserve": true
                unless the request had it, as hpwarmd does)
  reserve >= 5000 pages  409 insufficient-memory with memory_floor_bytes
                and max_count, as hpwarmd's memory floor answers
  claim bodies  recorded in state.claims; {"pid": N} with no such process
                answers 422, as hpwarmd does
  /v1/stock     GET and PUT as hpwarmd validates them (404 unknown node or
                page size, 422 bad numbers or duplicates, 409 stock-too-large
                past the node's hugepages); targets fill at once (ready =
                count).  A pool PUT of a stocked node, page size and size is
                ready at once with "from_stock": "full", others "none".
                State(stock=None) is a daemon without stock: 404, and pools
                carry no from_stock.  PUT bodies are kept in state.stock_puts;
                state.stock_503 = N answers the next N PUTs 503 (retry test).

A bearer token is required when the server is given one (401 otherwise;
token "readonly" gets 403 on writes).  Every request is logged in
server.log as (method, path) so tests can count attempts.  FakeFleet starts
many such servers on loopback ports (one thread each) with per-host node
data, plus "dead" ports (nothing listening) and "silent" ones (accept, never
answer)."""

import json
import os
import socket
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

M2 = 2 << 20
G1 = 1 << 30
PROBLEM = "urn:hpwarm:problem:"


def problem(status, slug, title, detail, **extra):
    body = {"type": PROBLEM + slug, "title": title, "status": status, "detail": detail}
    body.update(extra)
    return status, body


def default_nodes():
    return [
        {"id": 0, "cpus": "0-1", "cpu_count": 2,
         "memory": {"total_bytes": 8 * G1, "free_bytes": 4 * G1},
         "hugepages": [{"page_size_bytes": M2, "total": 64, "free": 60, "available": 60, "surplus": 0,
                        "warm": 4, "warming": 0}]},
        {"id": 1, "cpus": "", "cpu_count": 0,
         "memory": {"total_bytes": 4 * G1, "free_bytes": 2 * G1},
         "hugepages": [{"page_size_bytes": M2, "total": 32, "free": 32, "surplus": 0,
                        "warm": 0, "warming": 0},
                       {"page_size_bytes": G1, "total": 0, "free": 0, "surplus": 0,
                        "warm": 0, "warming": 0}]},
    ]


NEVER_READY = ("stuck", "slow", "hook-slow")


class Pool:
    WARM_SECONDS = 0.8   # how long a fake warm takes

    def __init__(self, name, node, size, page_size, threads, ttl, from_stock=None):
        self.name, self.node, self.size, self.page_size = name, node, size, page_size
        self.threads, self.ttl = threads or 2, ttl
        self.from_stock = from_stock
        # A stock hit is ready at once: its warm happened before.
        self.started = time.time() - (self.WARM_SECONDS if from_stock == "full" else 0)
        self.claimed = False
        self.cancelled = False
        self.doomed = name == "doomed"
        self.label, self.file_uid, self.file_gid = None, None, None

    def state(self):
        if self.cancelled:
            return "cancelled"
        if self.name in NEVER_READY or time.time() - self.started < self.WARM_SECONDS:
            return "warming"
        return "failed" if self.doomed else "ready"

    def to_json(self):
        st = self.state()
        el = min(time.time() - self.started, self.WARM_SECONDS)
        done = self.size if st == "ready" else int(self.size * el / self.WARM_SECONDS) // self.page_size * self.page_size
        if self.doomed and st == "failed":
            done = self.size // 2
        path = "/dev/hugepages/hpwarm/" + self.name
        err = None
        if st == "failed":
            err = problem(409, "insufficient-hugepages", "Not enough free hugepages",
                          "node %d ran out of free hugepages" % self.node)[1]
        extra = {"from_stock": self.from_stock} if self.from_stock else {}
        if self.label is not None or self.file_uid is not None:
            extra |= {"label": self.label, "file_uid": self.file_uid, "file_gid": self.file_gid}
        return extra | {
            "name": self.name, "node": self.node, "page_size_bytes": self.page_size,
            "size_bytes": self.size, "state": st, "bytes_done": done,
            "rate_bytes_per_second": self.size / self.WARM_SECONDS, "threads": self.threads,
            "started_at": int(self.started),
            "finished_at": int(self.started + self.WARM_SECONDS) if st != "warming" else None,
            "elapsed_seconds": round(el, 3), "error": err,
            "path": path if st in ("warming", "ready") else "",
            "placement": {"verified": st == "ready", "pages_off_node": 0},
            "claimed": self.claimed,
            "expires_at": int(self.started + self.ttl) if self.ttl and not self.claimed else None,
            "handoff": {
                "qemu": " ".join(qemu_words([self])),
                "qemu_argv": qemu_words([self]),
                "cloud_hypervisor": " ".join(ch_words([self])),
                "cloud_hypervisor_argv": ch_words([self]),
                "libvirt": "<qemu:commandline>\n%s\n</qemu:commandline>" % "\n".join(
                    '  <qemu:arg value="%s"/>' % w for w in qemu_words([self])),
            } if st == "ready" else {"qemu": "", "qemu_argv": [], "cloud_hypervisor": "",
                                     "cloud_hypervisor_argv": [], "libvirt": ""},
        }


def pool_path(name):
    return "/dev/hugepages/hpwarm/" + name


def qemu_words(pools):
    """What hpwarmd composes (server/src/api/handoff.c), for plain names and paths."""
    w = []
    for p in pools:
        w += ["-object", "memory-backend-file,id=mem-%s,mem-path=%s,size=%d,share=on,prealloc=on,"
                         "host-nodes=%d,policy=bind" % (p.name, pool_path(p.name), p.size, p.node)]
    if len(pools) == 1:
        return w + ["-machine", "memory-backend=mem-" + pools[0].name]
    for i, p in enumerate(pools):
        w += ["-numa", "node,nodeid=%d,memdev=mem-%s" % (i, p.name)]
    return w


def ch_words(pools):
    w = ["--memory", "size=0"]
    for p in pools:
        # As handoff.c: no host_numa_node (cloud-hypervisor refuses it on a
        # shared file zone); the page size in the largest unit that divides.
        ps = "%dG" % (p.page_size >> 30) if p.page_size % (1 << 30) == 0 else "%dM" % (p.page_size >> 20)
        w += ["--memory-zone", "id=%s,size=%d,file=%s,shared=on,hugepages=on,hugepage_size=%s"
                               % (p.name, p.size, pool_path(p.name), ps)]
    if len(pools) > 1:
        for i, p in enumerate(pools):
            w += ["--numa", "guest_numa_id=%d,memory_zones=%s" % (i, p.name)]
    return w


class State:
    def __init__(self, token=None, nodes=None, stock=()):
        self.token = token
        self.nodes = nodes if nodes is not None else default_nodes()
        # Stock targets as GET /v1/stock lists them; None: no stock support.
        self.stock = [] if stock == () else stock
        self.stock_puts = []
        self.stock_503 = 0     # PUT /v1/stock answers 503 this many times first
        self.raw = {}          # path -> bytes answered verbatim with 200 (hostile hosts)
        self.full = False      # every pool PUT answers 409 insufficient-hugepages (a host that filled up)
        self.pools = {}
        self.claims = []       # (name, parsed body or None) of every claim
        self.log = []
        self.bodies = []       # (path, body as compact JSON) of every PUT with a JSON object
        self.log_file = None   # also append "METHOD PATH" lines here, before answering
        self.counts = {}
        self.lock = threading.Lock()

    def once(self, key):
        """True the first time KEY is seen."""
        with self.lock:
            n = self.counts.get(key, 0)
            self.counts[key] = n + 1
            return n == 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-hpwarmd/0"

    def log_message(self, *args):
        pass

    def address_string(self):
        return "fake"

    # ---- plumbing ----
    def send(self, status, body=None, headers=None):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        ctype = "application/problem+json" if status >= 400 else "application/json"
        if body is not None:
            self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data:
            self.wfile.write(data)

    def send_raw(self, data):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return "malformed"

    def handle_any(self, method):
        st = self.server.state
        path, _, query = self.path.partition("?")
        # A host URL with a path (http://h:p/prefix) reaches us as /prefix/v1/...
        if "/v1/" in path and not path.startswith("/v1/"):
            path = path[path.index("/v1/"):]
        q = dict(kv.split("=", 1) for kv in query.split("&") if "=" in kv)
        with st.lock:
            st.log.append((method, self.path))
            if st.log_file:
                with open(st.log_file, "a") as f:
                    f.write("%s %s\n" % (method, self.path))
        ctype = self.headers.get("Content-Type")
        if ctype is not None and ctype.split(";")[0].strip() != "application/json":
            return self.send(*problem(415, "unsupported-media-type", "Unsupported media type", ctype))
        body = self.body() if method in ("PUT", "POST") else None
        if method == "PUT" and isinstance(body, dict):
            with st.lock:
                st.bodies.append((self.path, json.dumps(body, separators=(",", ":"))))
        if st.token is not None:
            auth = self.headers.get("Authorization", "")
            if auth == "Bearer readonly":
                if method != "GET":
                    return self.send(*problem(403, "forbidden", "Forbidden", "read-only token"))
            elif auth != "Bearer " + st.token:
                return self.send(*problem(401, "unauthorized", "Unauthorized", "missing or wrong token"),
                                 headers={"WWW-Authenticate": "Bearer"})
        if body == "malformed":
            return self.send(*problem(400, "malformed-json", "Malformed JSON", "cannot parse"))
        parts = [p for p in path.split("/") if p]
        if path in st.raw:
            return self.send_raw(st.raw[path])
        try:
            return self.route(method, parts, q, body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def route(self, method, parts, q, body):
        st = self.server.state
        if parts == ["v1", "health"] and method == "GET":
            return self.send(200, {"status": "ok", "version": "fake-1"})
        if parts == ["v1", "nodes"] and method == "GET":
            return self.send(200, {"nodes": st.nodes, "reserved": [{"page_size_bytes": M2, "pages": 0}]})
        if len(parts) == 3 and parts[:2] == ["v1", "nodes"] and method == "GET":
            for n in st.nodes:
                if str(n["id"]) == parts[2]:
                    return self.send(200, n)
            return self.send(*problem(404, "unknown-node", "Unknown node", "there is no NUMA node " + parts[2]))
        if len(parts) == 6 and parts[:2] == ["v1", "nodes"] and parts[3] == "hugepages" and parts[5] == "policy" \
                and method == "PUT":
            return self.policy_put(parts[2], parts[4], body)
        if len(parts) == 5 and parts[:2] == ["v1", "nodes"] and parts[3] == "hugepages" and method == "PUT":
            return self.reserve(parts[2], parts[4], body)
        if parts == ["v1", "pools"] and method == "GET":
            with st.lock:
                pools = sorted((p.to_json() for p in st.pools.values()), key=lambda p: p["name"])
            if "limit" not in q:
                return self.send(200, {"pools": pools})
            # Paged as the daemon pages, but at most two a page whatever the
            # limit, so a client's paging loop runs with a few pools.
            if "after" in q:
                pools = [p for p in pools if p["name"] > q["after"]]
            page = pools[:min(int(q["limit"]), 2)]
            ans = {"pools": page}
            if len(pools) > len(page):
                ans["next"] = page[-1]["name"]
            return self.send(200, ans)
        if len(parts) == 3 and parts[:2] == ["v1", "pools"]:
            return self.pool(method, parts[2], q, body)
        if parts == ["v1", "stock"] and method in ("GET", "PUT"):
            if st.stock is None:
                return self.send(*problem(404, "not-found", "Not found", self.path))
            if method == "PUT":
                with st.lock:
                    busy, st.stock_503 = st.stock_503 > 0, max(st.stock_503 - 1, 0)
                if busy:
                    return self.send(*problem(503, "unavailable", "Unavailable", "restarting"),
                                     headers={"Retry-After": "0"})
                return self.stock_put(body)
            return self.send(200, {"targets": st.stock})
        if parts == ["v1", "handoff"] and method == "GET":
            return self.handoff(q)
        if len(parts) == 4 and parts[:2] == ["v1", "pools"] and parts[3] == "claim" and method == "POST":
            name = parts[2]
            if name == "flakyclaim" and st.once("claim-" + name):
                return self.send(*problem(503, "unavailable", "Unavailable", "try later"))
            with st.lock:
                p = st.pools.get(name)
                st.claims.append((name, body))
            if body is not None and (not isinstance(body, dict) or set(body) - {"pid"} or
                                     not isinstance(body.get("pid"), int) or isinstance(body.get("pid"), bool)):
                return self.send(*problem(422, "invalid-field", "Invalid field", repr(body)))
            if isinstance(body, dict) and not os.path.exists("/proc/%d" % body["pid"]):
                return self.send(*problem(422, "invalid-field", "Invalid field",
                                          "no process %d" % body["pid"]))
            if not p:
                return self.send(*problem(404, "unknown-pool", "Unknown pool", name))
            if p.state() != "ready":
                return self.send(*problem(409, "pool-not-ready", "Pool not ready", p.state()))
            p.claimed = True
            return self.send(200, p.to_json())
        return self.send(*problem(404, "not-found", "Not found", self.path))

    def handoff(self, q):
        st = self.server.state
        vmm, names = q.get("vmm"), [n for n in q.get("pools", "").split(",")]
        if vmm not in ("qemu", "cloud-hypervisor", "libvirt"):
            return self.send(*problem(422, "invalid-field", "Invalid request", "vmm"))
        if not q.get("pools") or "" in names or len(set(names)) != len(names) or len(names) > 64:
            return self.send(*problem(422, "invalid-field", "Invalid request", "pools"))
        pools = []
        for n in names:
            with st.lock:
                p = st.pools.get(n)
            if not p:
                return self.send(*problem(404, "pool-not-found", "No such pool", n))
            if p.state() != "ready":
                return self.send(*problem(409, "pool-not-ready", "Pool not ready", "%s is %s" % (n, p.state())))
            pools.append(p)
        words = ch_words(pools) if vmm == "cloud-hypervisor" else qemu_words(pools)
        total = sum(p.size for p in pools)
        ans = {"vmm": vmm, "pools": [{"name": p.name, "guest_node": i, "node": p.node, "size_bytes": p.size,
                                      "page_size_bytes": p.page_size, "path": pool_path(p.name)}
                                     for i, p in enumerate(pools)],
               "memory_bytes": total, "argv": words, "note": "add -m %dM" % (total >> 20)}
        if vmm == "libvirt":
            ans["xml"] = "<qemu:commandline>\n%s\n</qemu:commandline>" % "\n".join(
                '  <qemu:arg value="%s"/>' % w for w in words)
            ans["namespace"] = 'xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0"'
        else:
            ans["args"] = " ".join(words)
        return self.send(200, ans)

    def stock_put(self, body):
        """hpwarmd's checks (server/src/api/api_stock.c, pools/pools_stock.c), in its order."""
        st = self.server.state
        with st.lock:
            st.stock_puts.append(body)
        if not isinstance(body, dict) or not isinstance(body.get("targets"), list):
            return self.send(*problem(422, "invalid-field", "Invalid field", 'the body must be {"targets": [...]}'))
        if len(body["targets"]) > 64:
            return self.send(*problem(422, "invalid-field", "Invalid field", "too many stock targets"))
        sizes = {"2M": M2, "1G": G1}
        out = []
        for i, t in enumerate(body["targets"]):
            if not isinstance(t, dict) or not isinstance(t.get("node"), int) or not isinstance(t.get("count"), int) \
                    or ("size" in t) == ("size_bytes" in t) or set(t) - {"node", "page_size", "size", "size_bytes",
                                                                        "count"}:
                return self.send(*problem(422, "invalid-field", "Invalid field", "targets[%d] is malformed" % i))
            ps = sizes.get(t.get("page_size", "2M"))
            try:
                size = t["size_bytes"] if "size_bytes" in t else \
                    int(t["size"][:-1]) * {"M": 1 << 20, "G": G1}[t["size"][-1]]
            except (ValueError, KeyError, TypeError, IndexError):
                size = -1
            node = [n for n in st.nodes if n["id"] == t["node"]]
            if not node:
                return self.send(*problem(404, "unknown-node", "Unknown node",
                                          "target %d: there is no NUMA node %d" % (i, t["node"])))
            if ps is None:
                return self.send(*problem(404, "unknown-page-size", "Unknown page size",
                                          "target %d: the kernel offers no hugepage size %s (this host has 2M and 1G)"
                                          % (i, t["page_size"])))
            if not isinstance(size, int) or isinstance(size, bool) or size <= 0 or size % ps:
                return self.send(*problem(422, "invalid-field", "Invalid field",
                                          "target %d: size must be a positive multiple of the page size" % i))
            if not 1 <= t["count"] <= 1024:
                return self.send(*problem(422, "invalid-field", "Invalid field", "target %d: count must be 1 to 1024"
                                          % i))
            for k, o in enumerate(out):
                if (o["node"], o["page_size_bytes"], o["size_bytes"]) == (t["node"], ps, size):
                    return self.send(*problem(422, "invalid-field", "Invalid field",
                                              "targets %d and %d name the same node, page size and size" % (k, i)))
            out.append({"node": t["node"], "page_size_bytes": ps, "size_bytes": size, "count": t["count"],
                        "ready": t["count"], "warming": 0, "recycling": 0, "deficit": 0})
        for node, ps in {(o["node"], o["page_size_bytes"]) for o in out}:
            n = [n for n in st.nodes if n["id"] == node][0]
            total = sum(hp["total"] for hp in n["hugepages"] if hp["page_size_bytes"] == ps)
            need = sum(o["size_bytes"] // ps * o["count"] for o in out
                       if (o["node"], o["page_size_bytes"]) == (node, ps))
            if need > total:
                return self.send(*problem(409, "stock-too-large", "Stock targets do not fit the node",
                                          "node %d has %d pages of %d bytes; the targets need %d"
                                          % (node, total, ps, need)))
        with st.lock:
            st.stock = out
        return self.send(200, {"targets": out})

    def stock_hit(self, node, size, ps):
        """"full" when a ready stock file matches (the fake refills at once),
        "none" otherwise, None for a daemon without stock."""
        st = self.server.state
        if st.stock is None:
            return None
        for t in st.stock:
            if (t["node"], t["size_bytes"], t["page_size_bytes"]) == (node, size, ps) and t["ready"] > 0:
                return "full"
        return "none"

    def reserve(self, node, size, body):
        if not isinstance(body, dict) or set(body) - {"count", "allow_partial"} or \
                not isinstance(body.get("count"), int):
            return self.send(*problem(422, "invalid-field", "Invalid field", repr(body)))
        if node not in ("0", "1"):
            return self.send(*problem(404, "unknown-node", "Unknown node", "there is no NUMA node " + node))
        if size not in ("2M", "2MiB", "2048kB"):
            return self.send(*problem(404, "unknown-page-size", "Unknown page size",
                                      "the kernel offers no hugepage size %s (this host has 2M)" % size))
        want, limit = body["count"], 100
        if want >= 5000:
            # hpwarmd's memory-floor refusal, with what would work.
            return self.send(*problem(409, "insufficient-memory", "Not enough free memory on the node",
                                      "growing node %s from 0 to %d pages of 2M would leave less free memory "
                                      "than the floor of 256M (4096 MiB free now); at most 1920 pages fit; "
                                      "nothing was changed" % (node, want),
                                      memory_floor_bytes=256 << 20, memory_free_bytes=4 << 30, max_count=1920))
        res = {"node": int(node), "page_size_bytes": M2, "requested": want}
        if want <= limit:
            res.update(total=want, free=want, complete=True)
            return self.send(200, res)
        if body.get("allow_partial"):
            res.update(total=limit, free=limit, complete=False)
            return self.send(200, res)
        return self.send(*problem(409, "reserve-shortfall", "Reservation short",
                                  "kernel gave %d of %d pages" % (limit, want),
                                  requested=want, achieved=limit))

    def policy_put(self, node, size, body):
        """hpwarmd's PUT .../policy: 422 for bad numbers, 409 for 1G (no CMA
        here), else the pool of node 0 or 1 becomes elastic in GET /v1/nodes."""
        keys = {"min", "max", "headroom", "idle_seconds", "allow_best_effort"}
        if not isinstance(body, dict) or set(body) - keys or \
                any(not isinstance(body.get(k), int) for k in ("min", "max", "headroom", "idle_seconds")):
            return self.send(*problem(422, "invalid-field", "Invalid field", repr(body)))
        if body["min"] > body["max"] or body["headroom"] > body["max"] or body["idle_seconds"] < 1:
            return self.send(*problem(422, "invalid-field", "Invalid field", "bounds"))
        if node not in ("0", "1"):
            return self.send(*problem(404, "unknown-node", "Unknown node", "there is no NUMA node " + node))
        if size == "1G" and not body.get("allow_best_effort"):
            return self.send(*problem(409, "growth-not-reliable", "Runtime growth of these pages is not reliable",
                                      "node %s has no hugetlb_cma area" % node))
        ps = G1 if size == "1G" else M2
        pol = dict(body, node=int(node), page_size_bytes=ps, allow_best_effort=bool(body.get("allow_best_effort")),
                   runtime_growth="reliable" if ps == M2 else "best-effort", cma_total_bytes=0, cma_free_bytes=0,
                   grown_pages=0, returned_pages=0, decision=None, last=None)
        st = self.server.state
        with st.lock:
            for n in st.nodes:
                if n["id"] == int(node):
                    for h in n["hugepages"]:
                        if h["page_size_bytes"] == ps:
                            h["elastic"] = pol
        return self.send(200, pol)

    def pool(self, method, name, q, body):
        st = self.server.state
        if method == "GET":
            if name == "flaky503" and st.once("get-" + name):
                return self.send(*problem(503, "unavailable", "Unavailable", "restarting"),
                                 headers={"Retry-After": "0"})
            if name == "ratelimited" and st.once("get-" + name):
                return self.send(*problem(429, "rate-limited", "Too many requests", "slow down"),
                                 headers={"Retry-After": "1"})
            if name == "ratelimited-long":
                return self.send(*problem(429, "rate-limited", "Too many requests", "slow down"),
                                 headers={"Retry-After": "60"})
            if name == "hang":
                time.sleep(60)
                return
            if name == "busy":
                return self.send(*problem(503, "busy", "Too busy", "work queue full"),
                                 headers={"Retry-After": "0"})
            if name == "weirdstate":
                return self.send(200, Pool(name, 0, M2, M2, 1, 0).to_json() | {"state": "frobbing"})
            if name in ("flaky503", "ratelimited"):
                return self.send(200, Pool(name, 0, M2, M2, 1, 0).to_json() | {"state": "ready"})
            with st.lock:
                p = st.pools.get(name)
            if not p:
                return self.send(*problem(404, "unknown-pool", "Unknown pool", name))
            if q.get("wait") == "ready":
                deadline = time.time() + float(q.get("timeout", "30"))
                while p.state() == "warming" and time.time() < deadline:
                    time.sleep(0.02)
            return self.send(200, p.to_json())
        if method == "PUT":
            allowed = {"node", "size", "size_bytes", "page_size", "threads", "ttl_seconds", "reserve", "label",
                       "file_uid", "file_gid"}
            if not isinstance(body, dict) or set(body) - allowed or not isinstance(body.get("node"), int) \
                    or not isinstance(body.get("size_bytes"), int):
                return self.send(*problem(422, "invalid-field", "Invalid field", repr(body)))
            if name == "hangput":
                time.sleep(60)
                return
            if name == "nohugetlbfs":
                return self.send(*problem(503, "no-hugetlbfs", "No hugetlbfs for that page size",
                                          "no hugetlbfs mount for 2M pages"), headers={"Retry-After": "0"})
            if name == "conflict":
                return self.send(*problem(409, "pool-conflict", "Pool exists", "different pool named " + name))
            if st.full:
                return self.send(*problem(409, "insufficient-hugepages", "Not enough free hugepages",
                                          "node %d has 0 free pages" % body["node"]))
            if body["size_bytes"] > (1 << 40):
                # hpwarmd's own wording, which names the API field.
                return self.send(*problem(409, "insufficient-hugepages", "Not enough free hugepages",
                                          "node %d has 60 free pages%s" % (
                                              body["node"], "" if body.get("reserve") else
                                              '; retry with "reserve": true to grow the pool')))
            ps = {"2M": M2, "1G": G1, None: M2}.get(body.get("page_size"))
            if ps is None:
                return self.send(*problem(404, "unknown-page-size", "Unknown page size",
                                          "the kernel offers no hugepage size %s (this host has 2M and 1G)"
                                          % body["page_size"]))
            with st.lock:
                old = st.pools.get(name)
                who = (body.get("label"), body.get("file_uid"), body.get("file_gid"))
                if old and (old.node, old.size, old.page_size) == (body["node"], body["size_bytes"], ps) and \
                        (old.label, old.file_uid, old.file_gid) == who:
                    return self.send(200, old.to_json())
                if old:
                    return self.send(*problem(409, "pool-conflict", "Pool exists", "different pool"))
                p = Pool(name, body["node"], body["size_bytes"], ps, body.get("threads"),
                         body.get("ttl_seconds", 0), self.stock_hit(body["node"], body["size_bytes"], ps))
                p.label, p.file_uid, p.file_gid = who
                st.pools[name] = p
            return self.send(201, p.to_json())
        if method == "DELETE":
            with st.lock:
                p = st.pools.pop(name, None)
            if name == "dropdelete" and st.once("delete-" + name):
                # Done, but the answer is lost: close without a word.
                self.close_connection = True
                return
            if not p:
                return self.send(*problem(404, "unknown-pool", "Unknown pool", name))
            return self.send(204)
        return self.send(*problem(405, "method-not-allowed", "Method not allowed", method),
                         headers={"Allow": "GET, PUT, DELETE"})

    def do_GET(self):
        self.handle_any("GET")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_POST(self):
        self.handle_any("POST")

    def do_DELETE(self):
        self.handle_any("DELETE")


class TCPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def _serve(srv):
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    t.start()
    return srv


def start_tcp(token=None, nodes=None, stock=()):
    srv = TCPServer(("127.0.0.1", 0), Handler)
    srv.state = State(token, nodes, stock)
    srv.url = "http://127.0.0.1:%d" % srv.server_address[1]
    return _serve(srv)


def start_tls(certfile, keyfile, client_ca=None, token=None):
    """HTTPS; with CLIENT_CA, a client certificate signed by it is required."""
    import ssl
    srv = TCPServer(("127.0.0.1", 0), Handler)
    srv.state = State(token)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certfile, keyfile)
    if client_ca:
        ctx.verify_mode = ssl.CERT_REQUIRED
        ctx.load_verify_locations(client_ca)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    srv.url = "https://127.0.0.1:%d" % srv.server_address[1]
    return _serve(srv)


def start_unix(path, token=None):
    if os.path.exists(path):
        os.unlink(path)
    srv = UnixServer(path, Handler)
    srv.state = State(token)
    srv.url = "unix://" + path
    return _serve(srv)


def dead_port():
    """A loopback port with nothing listening (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class FakeFleet:
    """N fake daemons on loopback ports, plus dead and silent ports."""

    def __init__(self, n, dead=3, silent=0, nodes_for=None, stock_for=None):
        self.servers = [start_tcp(nodes=nodes_for(i) if nodes_for else None,
                                  stock=stock_for(i) if stock_for else ()) for i in range(n)]
        self.dead = ["http://127.0.0.1:%d" % dead_port() for _ in range(dead)]
        self.silent_socks = []
        for _ in range(silent):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(16)      # never accept(): connections complete, nobody answers
            self.silent_socks.append(s)
        self.silent = ["http://127.0.0.1:%d" % s.getsockname()[1] for s in self.silent_socks]

    def urls(self):
        return [s.url for s in self.servers]

    def close(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()
        for s in self.silent_socks:
            s.close()


if __name__ == "__main__":
    import sys
    srv = start_tcp(token=sys.argv[1] if len(sys.argv) > 1 else None)
    print(srv.url, flush=True)
    threading.Event().wait()
