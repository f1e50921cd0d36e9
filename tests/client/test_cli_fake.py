#!/usr/bin/env python3
"""Integration test of the hpwarm CLI (and through it libhpwarm) against
fake_server.py: every command, --json parsed back, exit codes 0-6, retries
(503 then 200; 429 with Retry-After), no retry of POST, a hanging server
(timeout -> 4), a dead port (-> 3), a unix socket, fleet over ~50 fake
hosts plus dead and silent ones (fast, dead ones listed, place correct),
hpwarm stock, and fleet place preferring stock.

Usage: test_cli_fake.py PATH/TO/hpwarm"""

import json
import os
import pty
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_server as fs  # noqa: E402

HPWARM = sys.argv[1] if len(sys.argv) > 1 else "build/client/hpwarm"
TMP = tempfile.mkdtemp(prefix="hpwarm-cli-test-")
TOKEN = os.path.join(TMP, "token")
with open(TOKEN, "w") as f:
    f.write("s3cret\n")
BADTOKEN = os.path.join(TMP, "badtoken")
with open(BADTOKEN, "w") as f:
    f.write("wrong")
ROTOKEN = os.path.join(TMP, "rotoken")
with open(ROTOKEN, "w") as f:
    f.write("readonly")

failures = []


def run(*args, env=None, timeout=30):
    e = {k: v for k, v in os.environ.items() if not k.startswith("HPWARM_")}
    e.update(env or {})
    t0 = time.monotonic()
    p = subprocess.run([HPWARM, *args], capture_output=True, text=True, env=e, timeout=timeout)
    p.elapsed = time.monotonic() - t0
    return p


def check(cond, what, p=None):
    if not cond:
        msg = what
        if p is not None:
            msg += "\n  rc=%s elapsed=%.2f\n  stdout=%r\n  stderr=%r" % (
                p.returncode, getattr(p, "elapsed", 0), p.stdout[-800:], p.stderr[-800:])
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)


def expect(p, rc, what):
    check(p.returncode == rc, "%s: want exit %d" % (what, rc), p)


def test_handoff(u):
    """hpwarm handoff NAME [NAME...] --vmm ... [--argv]: GET /v1/handoff, printed as the text to use."""
    p = run("handoff", "vm-42", "--vmm", "qemu", *u)
    expect(p, 0, "handoff qemu")
    words = p.stdout.split()
    check(words[0] == "-object" and words[1].startswith("memory-backend-file,id=mem-vm-42,") and
          "share=on" in words[1] and words[2:] == ["-machine", "memory-backend=mem-vm-42"],
          "qemu args: the object and the -machine that makes it guest RAM", p)
    check(p.stderr == "", "no note on stderr when it is not a terminal", p)
    p = run("handoff", "vm-42", "--vmm", "qemu", "--argv", *u)
    expect(p, 0, "handoff --argv")
    check(p.stdout.splitlines() == words, "--argv: one word per line, the same words", p)
    p = run("handoff", "vm-42", "--vmm", "cloud-hypervisor", *u)
    check(p.stdout.startswith("--memory size=0 --memory-zone ") and p.stdout.rstrip("\n").endswith(",shared=on,hugepages=on,hugepage_size=2M")
          and "host_numa_node" not in p.stdout, "ch args", p)
    p = run("handoff", "vm-42", "--vmm", "libvirt", *u)
    expect(p, 0, "handoff libvirt")
    check(p.stdout.startswith("<qemu:commandline>\n  <qemu:arg value=\"-object\"/>") and
          p.stdout.rstrip().endswith("</qemu:commandline>"), "libvirt fragment", p)
    p = run("handoff", "vm-42", "--vmm", "libvirt", "--json", *u)
    d = json.loads(p.stdout)
    check(d["namespace"] == 'xmlns:qemu="http://libvirt.org/schemas/domain/qemu/1.0"' and d["argv"][0] == "-object",
          "libvirt --json: the server's answer", p)
    # Several pools: one guest node each, in the order named.
    expect(run("warm", "vm-43", "--node", "1", "--size", "32M", "--wait", *u), 0, "warm vm-43")
    p = run("handoff", "vm-43", "vm-42", "--vmm", "qemu", "--argv", *u)
    expect(p, 0, "handoff two pools")
    w = p.stdout.splitlines()
    check(w[-4:] == ["-numa", "node,nodeid=0,memdev=mem-vm-43", "-numa", "node,nodeid=1,memdev=mem-vm-42"] and
          "-machine" not in w, "two pools: -numa per pool in order, no -machine", p)
    p = run("handoff", "vm-43", "vm-42", "--vmm", "qemu", "--json", *u)
    check(json.loads(p.stdout)["memory_bytes"] == 96 << 20, "--json total", p)
    # Refusals: usage (2) before anything is sent, 404 (1), 409 not ready (5).
    for bad in (["handoff", "vm-42", "--vmm", "xen"], ["handoff", "vm-42", "vm-42", "--vmm", "qemu"],
                ["handoff", "../x", "--vmm", "qemu"], ["handoff", "--vmm", "qemu"],
                ["handoff"] + ["p%d" % i for i in range(65)] + ["--vmm", "qemu"],
                ["status", "vm-42", "--argv"]):
        expect(run(*bad, *u), 2, "usage: " + " ".join(bad[:4]))
    p = run("handoff", "vm-42", "nope", "--vmm", "qemu", *u)
    expect(p, 1, "unknown pool")
    check("pool-not-found" in p.stderr and p.stdout == "", "404 says why, prints nothing on stdout", p)
    expect(run("warm", "stuck", "--node", "0", "--size", "8M", *u), 0, "warm stuck")
    p = run("handoff", "vm-42", "stuck", "--vmm", "qemu", *u)
    expect(p, 5, "warming pool -> 5")
    check("pool-not-ready" in p.stderr, "409 slug shown", p)
    expect(run("release", "stuck", *u), 0, "release stuck")
    expect(run("release", "vm-43", *u), 0, "release vm-43")


def test_basic(srv):
    u = ["--url", srv.url, "--token-file", TOKEN]
    p = run("health", *u)
    expect(p, 0, "health")
    check("ok" in p.stdout and "fake-1" in p.stdout, "health output", p)
    p = run("health", "--json", *u)
    expect(p, 0, "health --json")
    check(json.loads(p.stdout) == {"status": "ok", "version": "fake-1"}, "health json", p)

    # Environment instead of options.
    p = run("nodes", env={"HPWARM_URL": srv.url, "HPWARM_TOKEN_FILE": TOKEN})
    expect(p, 0, "nodes via env")
    lines = p.stdout.splitlines()
    check(lines and lines[0].split()[:2] == ["NODE", "CPUS"], "nodes header", p)
    check(len(lines) == 4, "nodes: one row per (node, page size)", p)
    # Aligned: every column starts where the header's does.
    col = lines[0].index("PAGE")
    check(all(len(l) > col and l[col - 2:col] == "  " for l in lines), "nodes table aligned", p)
    p = run("--json", "nodes", *u)
    d = json.loads(p.stdout)
    check([n["id"] for n in d["nodes"]] == [0, 1], "nodes --json ids", p)
    p = run("nodes", "1", *u, "--json")
    check(json.loads(p.stdout)["id"] == 1, "nodes 1 --json", p)
    expect(run("nodes", "9", *u), 1, "unknown node -> 1")

    # Reserve: full, partial (exit 1), refused (409 -> 5).
    p = run("reserve", "0", "2M", "64", *u)
    expect(p, 0, "reserve full")
    p = run("reserve", "0", "2M", "500", "--allow-partial", "--json", *u)
    expect(p, 1, "reserve partial -> 1")
    check(json.loads(p.stdout)["complete"] is False, "reserve partial json", p)
    p = run("reserve", "0", "2M", "500", *u)
    expect(p, 5, "reserve shortfall -> 5")
    check("500" in p.stderr and "100" in p.stderr, "shortfall reports requested/achieved", p)
    # Refused by the memory floor: exit 5, and the command that would work.
    p = run("reserve", "0", "2M", "6000", *u)
    expect(p, 5, "reserve over the memory floor -> 5")
    check("reserve: insufficient memory (" in p.stderr and "insufficient hugepages" not in p.stderr,
          "memory floor refusal is called insufficient memory", p)
    check("at most 1920 2M pages fit: hpwarm reserve 0 2M 1920" in p.stderr and "256 MiB" in p.stderr,
          "memory floor refusal names the floor and the count that fits", p)
    # Elastic pools: reserve --elastic sets the policy, nodes shows its bounds.
    p = run("reserve", "1", "2M", "--elastic", "--min", "2", "--max", "48", "--headroom", "4", "--idle", "60", *u)
    expect(p, 0, "reserve --elastic")
    check("elastic, 2..48 pages, headroom 4, idle 60 s, growth reliable" in p.stdout, "reserve --elastic output", p)
    p = run("nodes", *u)
    lines = p.stdout.splitlines()
    check(lines[0].split()[-1] == "ELASTIC", "nodes: ELASTIC column", p)
    check(any(l.split()[0] == "1" and l.split()[-1] == "2..48" for l in lines[1:]), "nodes: node 1's bounds", p)
    check(any(l.split()[0] == "0" and l.split()[-1] == "-" for l in lines[1:]), "nodes: node 0 static", p)
    p = run("reserve", "1", "1G", "--elastic", "--max", "2", "--idle", "60", *u)
    expect(p, 5, "reserve --elastic 1G without CMA -> 5")
    check("hugetlb_cma" in p.stderr and "[growth-not-reliable]" in p.stderr, "1G refusal says why", p)
    expect(run("reserve", "1", "2M", "--elastic", "--max", "8", *u), 2, "--elastic without --idle -> 2")
    expect(run("reserve", "1", "2M", "--elastic", "--idle", "8", *u), 2, "--elastic without --max -> 2")
    expect(run("reserve", "1", "2M", "--elastic", "--min", "9", "--max", "8", "--idle", "1", *u), 2,
           "--elastic --min above --max -> 2")
    expect(run("reserve", "1", "2M", "8", "--max", "8", *u), 2, "--max without --elastic -> 2")
    expect(run("reserve", "1", "2M", "8", "--elastic", "--max", "8", "--idle", "1", *u), 2,
           "--elastic with a COUNT -> 2")
    expect(run("reserve", "1", "2M", "--elastic", "--max", "-1", "--idle", "1", *u), 2, "negative --max -> 2")
    expect(run("reserve", "1", "2M", *u), 2, "reserve without COUNT -> 2")
    p = run("reserve", "0", "2048kB", "500", "--json", *u)
    check(json.loads(p.stdout or "{}").get("type", "").endswith("reserve-shortfall"),
          "problem body on stdout with --json", p)

    # Auth: no token / wrong token -> 6; read-only token on a write -> 6.
    expect(run("health", "--url", srv.url), 6, "no token -> 6")
    expect(run("health", "--url", srv.url, "--token-file", BADTOKEN), 6, "bad token -> 6")
    expect(run("pools", "--url", srv.url, "--token-file", ROTOKEN), 0, "read-only token can read")
    expect(run("release", "x", "--url", srv.url, "--token-file", ROTOKEN), 6, "read-only token write -> 6")
    expect(run("health", "--url", srv.url, "--token-file", os.path.join(TMP, "missing")), 2,
           "missing token file -> 2")
    # hpwarmd's token-file format: comments and blank lines before the token.
    commented = os.path.join(TMP, "commented-token")
    with open(commented, "w") as f:
        f.write("# admin token\n\n  s3cret  \n# retired: old-token\n")
    expect(run("health", "--url", srv.url, "--token-file", commented), 0, "token file with comments")
    with open(commented, "w") as f:
        f.write("# nothing here\n")
    p = run("health", "--url", srv.url, "--token-file", commented)
    expect(p, 2, "token file without a token -> 2")
    check("no token" in p.stderr, "says why the token file was refused", p)

    # Usage errors -> 2.
    expect(run("warm", "x", "--size", "1G", *u), 2, "warm without --node")
    expect(run("frob", *u), 2, "unknown command")
    p = run("health", "--url", "ftp://x")
    expect(p, 2, "bad url")
    check("unsupported scheme 'ftp'" in p.stderr and "unix:///PATH" in p.stderr, "bad scheme explained", p)
    # TLS to a plain listener: the message says to use http://.
    p = run("health", "--url", "https://" + srv.url[len("http://"):], "--timeout", "3")
    expect(p, 3, "https:// to a plain listener -> 3")
    check("use http://" in p.stderr and srv.url[len("http://"):] in p.stderr,
          "wrong scheme (TLS to plain) explained", p)
    # A URL without a scheme is HOST:PORT over http.
    p = run("health", "--json", "--url", srv.url[len("http://"):], "--token-file", TOKEN)
    expect(p, 0, "--url HOST:PORT means http://")
    p = run("--help")
    expect(p, 0, "--help")
    for code in range(8):
        check("  %d  " % code in p.stdout, "--help documents exit %d" % code, p)

    # Per-command help, two spellings, and usage errors that point at it.
    p = run("warm", "--help")
    expect(p, 0, "warm --help")
    check(p.stdout.startswith("Usage: hpwarm [GLOBAL OPTIONS] warm NAME") and "--reserve" in p.stdout
          and "--ignore-missing" not in p.stdout, "warm --help is warm's own help", p)
    q = run("help", "warm")
    check(q.returncode == 0 and q.stdout == p.stdout, "hpwarm help warm == hpwarm warm --help", q)
    # A command with its own parser has its own help (main's dispatch row),
    # through both spellings.
    for cmd, head in (("placement", "Usage: hpwarm placement sync "), ("publish", "Usage: hpwarm publish --to ")):
        p = run(cmd, "--help")
        q = run("help", cmd)
        check(p.returncode == 0 and p.stdout.startswith(head) and q.returncode == 0 and q.stdout == p.stdout,
              "hpwarm help %s == hpwarm %s --help, its own options" % (cmd, cmd), q)
    p = run("release", "--help")
    check("--ignore-missing" in p.stdout and "Usage: hpwarm [GLOBAL OPTIONS] release NAME" in p.stdout,
          "release --help", p)
    p = run("--node", "0", "warm", "x", "--size", "1G", *u)
    expect(p, 2, "command option before the command")
    check("put it after the command" in p.stderr, "says where the option goes", p)
    p = run("claim", "x", "--ignore-missing", *u)
    expect(p, 2, "another command's option")
    check("claim does not take --ignore-missing" in p.stderr and "hpwarm claim --help" in p.stderr,
          "says whose option it is", p)
    p = run("warm", "x", "--node", "0", "--size", "2m", *u)
    expect(p, 2, "a size in the wrong case")
    check("write 2M" in p.stderr, "says how to write the size", p)


def test_pools(srv):
    u = ["--url", srv.url, "--token-file", TOKEN]
    # The README's handoff recipe line, options after the command; not a TTY: one
    # line per state change.
    p = run("warm", "vm-42", "--node", "0", "--size", "64M", "--wait", "--timeout", "10", *u)
    expect(p, 0, "warm --wait")
    lines = p.stdout.splitlines()
    check(any("warming" in l for l in lines) and "ready" in lines[-1], "warm --wait state lines", p)
    check(len(lines) <= 4, "one line per state change, not per poll", p)
    body = srv.state.log
    puts = [x for x in body if x[0] == "PUT" and x[1] == "/v1/pools/vm-42"]
    check(len(puts) == 1, "one PUT")
    polls = [x for x in body if x[0] == "GET" and x[1].startswith("/v1/pools/vm-42?wait=ready")]
    check(1 <= len(polls) <= 3, "long-poll, not a busy loop (%d polls)" % len(polls))

    p = run("status", "vm-42", *u)
    expect(p, 0, "status")
    check("ready" in p.stdout and "64 MiB" in p.stdout, "status text", p)
    p = run("status", "vm-42", "--json", *u)
    d = json.loads(p.stdout)
    check(d["state"] == "ready" and d["size_bytes"] == 64 << 20, "status json", p)

    test_handoff(u)

    # A label and a file owner are sent, shown, and bind the pool: another
    # label for the same pool is a conflict (5).
    p = run("warm", "lab", "--node", "0", "--size", "2M", "--label", "libvirt:abc-1", "--file-owner", "64055:108", *u)
    expect(p, 0, "warm --label --file-owner")
    put = [b for path, b in srv.state.bodies if path == "/v1/pools/lab"][-1]
    check('"label":"libvirt:abc-1"' in put and '"file_uid":64055,"file_gid":108' in put,
          "label and owner in the PUT body", put)
    p = run("status", "lab", *u)
    check("label:      libvirt:abc-1" in p.stdout and "file owner: 64055:108" in p.stdout, "status shows them", p)
    p = run("warm", "lab", "--node", "0", "--size", "2M", "--label", "libvirt:other", *u)
    expect(p, 5, "warm with another label")
    for bad in ("64055", "x:1", "1:", ":1", "4294967295:1", "1:2:3"):
        p = run("warm", "lab", "--node", "0", "--size", "2M", "--file-owner", bad, *u)
        expect(p, 2, "--file-owner " + bad)

    # Identical PUT is idempotent (200), different one conflicts (5).
    p = run("warm", "vm-42", "--node", "0", "--size", "64M", "--page-size", "2M", *u)
    expect(p, 0, "identical warm")
    check("exists" in p.stdout, "identical warm says exists", p)
    expect(run("warm", "vm-42", "--node", "1", "--size", "64M", *u), 5, "different warm -> 5")
    expect(run("warm", "conflict", "--node", "0", "--size", "2M", *u), 5, "pool-conflict -> 5")
    p = run("warm", "huge", "--node", "0", "--size", "2T", *u)
    expect(p, 5, "insufficient hugepages -> 5")
    check("insufficient-hugepages" in p.stderr, "slug shown", p)
    # The server names its API field; the CLI names the flag that works.
    check("retry with --reserve to grow the pool" in p.stderr and '"reserve"' not in p.stderr,
          "insufficient hugepages hint names --reserve", p)
    p = run("warm", "huge", "--node", "0", "--size", "2T", "--reserve", *u)
    expect(p, 5, "insufficient hugepages even with --reserve -> 5")
    check("--reserve" not in p.stderr, "no --reserve hint when it was given", p)

    # Warm that fails: wait exits 1 and says why.
    expect(run("warm", "doomed", "--node", "0", "--size", "8M", *u), 0, "doomed warm accepted")
    p = run("wait", "doomed", *u)
    expect(p, 1, "failed pool -> 1")
    check("failed" in p.stdout + p.stderr and "ran out" in p.stderr, "failure reason", p)
    p = run("wait", "doomed", "--json", *u)
    check(json.loads(p.stdout)["state"] == "failed", "wait --json prints the pool", p)

    # A state the client does not know is a protocol error at once (1),
    # not a wait until the deadline (far beyond the bound, however loaded
    # the machine).
    p = run("wait", "weirdstate", "--timeout", "30", *u, timeout=60)
    expect(p, 1, "wait on an unknown state -> 1")
    check(p.elapsed < 10 and "frobbing" in p.stderr, "unknown state reported at once (%.2fs)" % p.elapsed, p)

    # A deadline that runs out before an answer is a timeout (4), not an
    # unreachable server (3), and not the answer: "hang" never answers, so
    # the verdict does not depend on how fast loopback is (a fast machine
    # got the doomed pool's answer within 1 ms).
    p = run("wait", "hang", "--timeout", "0.001", *u)
    expect(p, 4, "wait with a 1 ms deadline -> 4")
    check(p.elapsed < 10, "a 1 ms deadline ends the wait (%.2fs)" % p.elapsed, p)
    # Wait with a deadline shorter than the warm (slow never finishes): exit 4,
    # long before the subprocess timeout a deadline ignored would hit.
    run("warm", "slow", "--node", "0", "--size", "8M", *u)
    p = run("wait", "slow", "--timeout", "0.3", *u)
    expect(p, 4, "wait deadline -> 4")
    check(p.elapsed < 10, "wait deadline honoured (%.2fs)" % p.elapsed, p)

    p = run("pools", *u)
    expect(p, 0, "pools")
    check(p.stdout.splitlines()[0].startswith("NAME") and "vm-42" in p.stdout, "pools table", p)
    before = len(srv.state.log)
    d = json.loads(run("pools", "--json", *u).stdout)
    check({"vm-42", "doomed", "slow"} <= {x["name"] for x in d["pools"]}, "pools json", p)
    # Paged through (the fake answers two a page): every pool once, in name
    # order, one request a page, each after the last page's "next".
    names = [x["name"] for x in d["pools"]]
    check(names == sorted(names) and len(names) == len(set(names)), "pools json: each once, by name", p)
    check("next" not in d, "pools json: one document, no \"next\"", p)
    gets = [x[1] for x in srv.state.log[before:] if x[0] == "GET" and x[1].startswith("/v1/pools?")]
    check(len(gets) == (len(names) + 1) // 2 and gets[0] == "/v1/pools?limit=1000" and
          all(g == "/v1/pools?limit=1000&after=" + names[2 * i + 1] for i, g in enumerate(gets[1:])),
          "pools pages: %s" % gets, p)

    p = run("claim", "vm-42", "--json", *u)
    expect(p, 0, "claim")
    check(json.loads(p.stdout)["claimed"] is True, "claimed", p)
    expect(run("claim", "nosuch", *u), 1, "claim unknown -> 1")
    expect(run("release", "vm-42", *u), 0, "release")
    p = run("release", "vm-42", *u)
    expect(p, 1, "release again -> 404 -> 1")
    check("there is no pool vm-42" in p.stderr and "--ignore-missing" in p.stderr,
          "a missing pool says so and names --ignore-missing", p)
    p = run("release", "vm-42", "--ignore-missing", *u)
    expect(p, 0, "release --ignore-missing of a pool already gone -> 0")
    check("already released" in p.stdout, "release --ignore-missing says it was gone", p)
    p = run("release", "vm-42", "--ignore-missing", "--json", *u)
    expect(p, 0, "release --ignore-missing --json")
    check(json.loads(p.stdout or "null") == {}, "release --ignore-missing --json prints {}", p)
    # --ignore-missing does not hide other failures.
    expect(run("release", "vm-42", "--ignore-missing", "--url", srv.url, "--token-file", ROTOKEN), 6,
           "release --ignore-missing with a read-only token -> 6")

    # claim --pid sends {"pid": N}; without it no body at all.
    run("warm", "pidvm", "--node", "0", "--size", "4M", "--wait", *u)
    before = len(srv.state.claims)
    p = run("claim", "pidvm", "--pid", str(os.getpid()), "--json", *u)
    expect(p, 0, "claim --pid")
    check(srv.state.claims[before:] == [("pidvm", {"pid": os.getpid()})], "claim --pid body %r"
          % srv.state.claims[before:], p)
    p = run("claim", "pidvm", *u)
    expect(p, 0, "claim without --pid")
    check(srv.state.claims[-1] == ("pidvm", None), "claim without --pid sends no body", p)
    p = run("claim", "pidvm", "--pid", "2147483646", *u)
    expect(p, 1, "claim --pid of no process -> 422 -> 1")
    check("no process 2147483646" in p.stderr, "says which pid is unknown", p)
    expect(run("release", "pidvm", *u), 0, "release pidvm")
    expect(run("status", "vm-42", *u), 1, "status after release -> 1")


def stock_puts(srv):
    return sum(1 for m, path in srv.state.log if m == "PUT" and path == "/v1/stock")


def test_stock(srv):
    """hpwarm stock [show] | set SPEC... | clear: the table, --json, the PUT
    body, bad specs refused before anything is sent, the daemon's refusals
    (its detail and the usual exit codes), hostile answers, from_stock on
    warm and status, and a daemon without stock."""
    u = ["--url", srv.url, "--token-file", TOKEN]
    with srv.state.lock:
        srv.state.stock = []
    p = run("stock", *u)
    expect(p, 0, "stock with no targets")
    check(p.stdout.split() == ["NODE", "PAGE", "SIZE", "COUNT", "READY", "WARMING", "RECYCLING", "DEFICIT"],
          "stock: the header and no rows", p)
    p = run("stock", "--json", *u)
    check(p.returncode == 0 and json.loads(p.stdout or "null") == {"targets": []}, "stock --json empty", p)

    before = len(srv.state.stock_puts)
    p = run("stock", "set", "0:2M:8M:2", "1:2M:16M:1", *u)
    expect(p, 0, "stock set two targets")
    check(srv.state.stock_puts[before:] == [{"targets": [
        {"node": 0, "page_size": "2M", "size_bytes": 8 << 20, "count": 2},
        {"node": 1, "page_size": "2M", "size_bytes": 16 << 20, "count": 1}]}], "stock set PUT body %r"
          % srv.state.stock_puts[before:], p)
    rows = [l.split() for l in p.stdout.splitlines()]
    check(len(rows) == 3 and rows[1] == ["0", "2M", "8", "MiB", "2", "2", "0", "0", "0"] and
          rows[2] == ["1", "2M", "16", "MiB", "1", "1", "0", "0", "0"], "stock set prints the new targets", p)
    p = run("stock", "show", "--json", *u)
    d = json.loads(p.stdout or "{}")
    check([(t["node"], t["size_bytes"], t["count"], t["ready"]) for t in d.get("targets", [])] ==
          [(0, 8 << 20, 2, 2), (1, 16 << 20, 1, 1)], "stock --json: the server's targets", p)

    # A warm of a stocked size comes from stock; another size does not.
    p = run("warm", "stocked", "--node", "0", "--size", "8M", *u)
    expect(p, 0, "warm of a stocked size")
    check("created on node 0 (ready, from stock: full)" in p.stdout, "warm says from stock: full", p)
    p = run("status", "stocked", *u)
    check("from stock: full" in p.stdout, "status prints from stock", p)
    p = run("warm", "unstocked", "--node", "0", "--size", "4M", "--wait", *u)
    expect(p, 0, "warm of another size")
    check("created on node 0 (from stock: none)" in p.stdout, "warm --wait says from stock: none", p)
    for n in ("stocked", "unstocked"):
        expect(run("release", n, *u), 0, "release " + n)

    # Bad specs: usage (2), a message naming the problem, nothing sent.
    n0 = stock_puts(srv)
    for args, why in ((["set"], "hpwarm stock clear"),
                      (["set", "0:2M:8M"], "NODE:PAGESIZE:SIZE:COUNT"),
                      (["set", "0:2M:3M:1"], "multiple of PAGESIZE"),
                      (["set", "0:2M:8M:0"], "COUNT"),
                      (["set", "0:2X:8M:1"], "PAGESIZE"),
                      (["set", "0:2M:8M:1", "0:2M:8M:3"], "same node, page size and size"),
                      (["set", "0:2M:8M:1", "bogus"], "'bogus' is not"),
                      (["clear", "0:2M:8M:1"], "no arguments"),
                      (["frob"], "show, set, clear or nova-config")):
        p = run("stock", *args, *u)
        expect(p, 2, "stock " + " ".join(args))
        check(why in p.stderr and p.stdout == "", "stock %s: says '%s'" % (" ".join(args), why), p)
    check(stock_puts(srv) == n0, "no PUT for a bad spec (%d sent)" % (stock_puts(srv) - n0))

    # The daemon's refusals: its detail and slug; 404 -> 1, 409 -> 5.
    p = run("stock", "set", "5:2M:8M:1", *u)
    expect(p, 1, "stock on an unknown node")
    check("there is no NUMA node 5" in p.stderr and "[unknown-node]" in p.stderr, "unknown node: the daemon's detail", p)
    p = run("stock", "set", "0:2M:1G:1", *u)
    expect(p, 5, "stock that does not fit the node")
    check("node 0 has 64 pages" in p.stderr and "[stock-too-large]" in p.stderr, "stock-too-large detail", p)
    p = run("stock", "set", "0:2M:1G:1", "--json", *u)
    check(json.loads(p.stdout or "{}").get("type", "").endswith("stock-too-large"),
          "--json failure prints the problem", p)
    p = run("stock", "set", "0:1G:1G:1", *u)
    check(p.returncode == 5, "1G target on a node without 1G pages -> 5", p)
    p = run("stock", "set", "0:2M:8M:2000", *u)
    expect(p, 1, "count over the daemon's limit -> 1")
    check("count must be 1 to 1024" in p.stderr, "422 detail", p)
    p = run("stock", "set", "0:2M:8M:1", "--token-file", ROTOKEN, "--url", srv.url)
    expect(p, 6, "stock set with a read-only token -> 6")
    d = json.loads(run("stock", "--json", *u).stdout or "{}")
    check(len(d.get("targets", [])) == 2, "refused sets changed nothing: %r" % d)

    # Hostile answers: 1, nothing printed from them.
    for raw, what in ((b'{"targets":[', "malformed JSON"),
                      (b'{"targets":[{"node":0,"page_size_bytes":2097152,"count":1,"ready":1}]}', "no size_bytes"),
                      (b'{"targets":[{"node":0,"page_size_bytes":2097152,"size_bytes":2097152,"count":1,'
                       b'"ready":1e300}]}', "a huge count"),
                      (b'{"targets":{"node":0}}', "targets not an array"),
                      (b'{"targets":[]} {"targets":[]}', "two documents")):
        srv.state.raw["/v1/stock"] = raw
        try:
            for args in ([], ["set", "0:2M:8M:1"]):
                p = run("stock", *args, "--json", *u)
                expect(p, 1, "stock %s answered with %s" % (" ".join(args), what))
                check(p.stdout == "" and "unexpected answer" in p.stderr, "%s: says so, prints nothing" % what, p)
        finally:
            del srv.state.raw["/v1/stock"]

    # A whole-list PUT is idempotent: retried after a 503, as the other PUTs.
    n0 = stock_puts(srv)
    srv.state.stock_503 = 1
    p = run("stock", "set", "0:2M:8M:2", "1:2M:16M:1", *u)
    expect(p, 0, "stock set retried after a 503")
    check(stock_puts(srv) - n0 == 2, "two PUTs for 503-then-200 (%d)" % (stock_puts(srv) - n0), p)

    p = run("stock", "clear", *u)
    expect(p, 0, "stock clear")
    check(srv.state.stock_puts[-1] == {"targets": []} and "no targets" in p.stdout, "clear sends no targets", p)
    check(json.loads(run("stock", "--json", *u).stdout or "{}") == {"targets": []}, "cleared")

    old = fs.start_tcp(stock=None)
    try:
        p = run("stock", "--url", old.url)
        expect(p, 1, "stock on a daemon without stock")
        check("no /v1/stock" in p.stderr, "says the daemon has no stock", p)
        p = run("warm", "plain", "--node", "0", "--size", "4M", "--url", old.url)
        check(p.returncode == 0 and "from stock" not in p.stdout, "no from_stock from an older daemon", p)
    finally:
        old.shutdown()
        old.server_close()


def tty_warm(srv, name, term):
    """warm NAME --wait with stderr on a pty and TERM=TERM; (rc, what the
    pty got, stdout)."""
    u = ["--url", srv.url, "--token-file", TOKEN]
    master, slave = pty.openpty()
    env = dict(os.environ, TERM=term)
    p = subprocess.Popen([HPWARM, "warm", name, "--node", "0", "--size", "64M", "--wait", *u],
                         stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    stdout = p.stdout.read().decode(errors="replace")
    rc = p.wait(timeout=10)
    os.close(master)
    return rc, out.decode(errors="replace"), stdout


def test_tty_progress(srv):
    # The bar goes to stderr, and only when that is a terminal that takes
    # \r and the erase-line escape: stdout stays free of escapes.
    rc, text, stdout = tty_warm(srv, "tty-pool", "xterm")
    check(rc == 0, "tty warm --wait rc=%d %r" % (rc, text[-300:]))
    check("\r" in text and "GiB/s" in text and "ETA" in text and "[" in text and "\033[K" in text,
          "progress bar on a TTY stderr: %r" % text[-300:])
    check("\r" not in stdout and "\033" not in stdout, "no bar on stdout: %r" % stdout)
    rc, text, stdout = tty_warm(srv, "tty-dumb", "dumb")
    check(rc == 0, "TERM=dumb warm --wait rc=%d" % rc)
    check("\033" not in text and "\r" not in text.replace("\r\n", "\n") and "\033" not in stdout,
          "TERM=dumb: no escape codes anywhere: %r / %r" % (text[-200:], stdout[-200:]))
    check("tty-dumb: ready" in stdout, "TERM=dumb: state lines instead: %r" % stdout)


def test_retries(srv):
    u = ["--url", srv.url, "--token-file", TOKEN]
    p = run("status", "flaky503", *u)
    expect(p, 0, "503 then 200 is retried")
    n = sum(1 for x in srv.state.log if x[1] == "/v1/pools/flaky503")
    check(n == 2, "two attempts for 503-then-200 (%d)" % n)

    p = run("status", "ratelimited", *u)
    expect(p, 0, "429 then 200 is retried")
    check(p.elapsed >= 0.95, "Retry-After: 1 honoured (%.2fs)" % p.elapsed, p)
    # Retry-After beyond the deadline: give up at once rather than sleep
    # (Retry-After: 60 against a 20 s deadline: sleeping either would show).
    p = run("status", "ratelimited-long", "--timeout", "20", *u, timeout=90)
    expect(p, 8, "429 with Retry-After past the deadline -> 8 (try again later)")
    check(p.elapsed < 10, "gave up without sleeping (%.2fs)" % p.elapsed, p)

    # A DELETE whose answer is lost is retried; the retry's 404 means done.
    expect(run("warm", "dropdelete", "--node", "0", "--size", "2M", *u), 0, "warm dropdelete")
    p = run("release", "dropdelete", *u)
    expect(p, 0, "release whose answer was lost -> retried 404 is success")
    n = sum(1 for x in srv.state.log if x == ("DELETE", "/v1/pools/dropdelete"))
    check(n == 2, "DELETE sent twice (%d)" % n)
    check("dropdelete" not in srv.state.pools, "pool gone")
    expect(run("release", "dropdelete", *u), 1, "a first-attempt 404 is still not found -> 1")
    expect(run("warm", "dropdelete", "--node", "0", "--size", "2M", *u), 0, "warm dropdelete again")
    srv.state.counts.pop("delete-dropdelete", None)
    p = run("release", "dropdelete", "--json", *u)
    expect(p, 0, "release --json whose answer was lost")
    check(json.loads(p.stdout or "null") == {}, "release --json prints {} not the 404 problem", p)

    # A claim is idempotent (claiming again answers the pool unchanged):
    # retried like a GET.
    run("warm", "flakyclaim", "--node", "0", "--size", "2M", "--wait", *u)
    p = run("claim", "flakyclaim", *u)
    expect(p, 0, "claim 503 once -> retried -> 0")
    n = sum(1 for x in srv.state.log if x == ("POST", "/v1/pools/flakyclaim/claim"))
    check(n == 2, "claim sent twice (%d)" % n)

    # Try again later (8) apart from broken (1): a daemon busy through every
    # retry, against a permanent 503 the catalog does not mark retryable,
    # which is sent once.
    p = run("status", "busy", "--timeout", "2", *u)
    expect(p, 8, "503 busy through the retries -> 8")
    n = sum(1 for x in srv.state.log if x == ("GET", "/v1/pools/busy"))
    check(n > 1, "busy retried (%d attempts)" % n)
    p = run("warm", "nohugetlbfs", "--node", "0", "--size", "2M", *u)
    expect(p, 1, "503 no-hugetlbfs -> 1, not try-later")
    n = sum(1 for x in srv.state.log if x == ("PUT", "/v1/pools/nohugetlbfs"))
    check(n == 1, "no-hugetlbfs sent once (%d)" % n)
    p = run("--json", "warm", "nohugetlbfs", "--node", "0", "--size", "2M", *u)
    doc = json.loads(p.stdout)
    check(doc.get("type", "").endswith(":no-hugetlbfs"), "--json failure: one problem document", p)

    # A server that never answers: exit 4 at the deadline.
    p = run("status", "hang", "--timeout", "1", *u)
    expect(p, 4, "hanging server -> 4")
    check(0.9 <= p.elapsed < 10, "timeout took %.2fs" % p.elapsed, p)

    # Nothing listening: exit 3 (retries bounded by the deadline).
    dead = "http://127.0.0.1:%d" % fs.dead_port()
    p = run("health", "--url", dead, "--timeout", "1")
    expect(p, 3, "dead port -> 3")
    check(p.elapsed < 2.5, "dead port bounded by deadline (%.2fs)" % p.elapsed, p)
    check("connection refused by " + dead in p.stderr and "is hpwarmd running" in p.stderr,
          "dead port: names the URL and the likely cause", p)
    nosock = os.path.join(TMP, "nosock")
    p = run("health", "--url", "unix://" + nosock, "--timeout", "0.5")
    expect(p, 3, "missing unix socket -> 3")
    check("is hpwarmd running? (looked for unix:%s)" % nosock in p.stderr and "port 80" not in p.stderr,
          "missing socket: names the path, not curl's localhost:80", p)
    # The default URL: the same message for the daemon's own socket path.
    if not os.path.exists("/run/hpwarmd/api.sock"):
        p = run("health", "--timeout", "0.5")
        expect(p, 3, "no daemon on the default socket -> 3")
        check("(looked for unix:/run/hpwarmd/api.sock)" in p.stderr, "default socket named", p)
    # A socket nobody listens on (a daemon that died).
    import socket as so
    stale = os.path.join(TMP, "stale.sock")
    sk = so.socket(so.AF_UNIX)
    sk.bind(stale)
    sk.close()
    p = run("health", "--url", stale, "--timeout", "0.5")
    expect(p, 3, "stale socket -> 3")
    check("nothing listens on unix:" + stale in p.stderr, "stale socket explained", p)
    # Permission denied: as an unprivileged user on a socket of mode 0600.
    live = fs.start_unix(os.path.join(TMP, "private.sock"))
    try:
        os.chmod(os.path.join(TMP, "private.sock"), 0o600)
        pre = None
        if os.geteuid() == 0:
            os.chmod(TMP, 0o755)
            pre = lambda: (os.setgid(65534), os.setuid(65534))  # noqa: E731
        try:
            q = subprocess.run([HPWARM, "health", "--url", live.url, "--timeout", "0.5"], capture_output=True,
                               text=True, timeout=30, preexec_fn=pre)
        except (PermissionError, OSError) as e:
            q = None
            print("permission hint not checked: cannot run hpwarm as nobody:", e)
        if q is not None:
            check(q.returncode == 3 and "permission denied on unix:" in q.stderr and "--socket-group" in q.stderr,
                  "EACCES: permission hint naming --socket-group", q)
    finally:
        live.shutdown()
        live.server_close()


def test_hook(srv):
    """deploy/hooks/prewarm.sh: prints QEMU args on success; releases on failure."""
    hook = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "hooks", "prewarm.sh")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HPWARM_")}
    env.update(HPWARM=HPWARM, HPWARM_URL=srv.url, HPWARM_TOKEN_FILE=TOKEN)

    def hook_run(*args):
        return subprocess.run(["sh", hook, *args], capture_output=True, text=True, env=env, timeout=30)

    p = hook_run("hook-vm", "0", "16M", "10")
    check(p.returncode == 0, "hook ok rc=%d %r" % (p.returncode, p.stderr))
    check(p.stdout.startswith("-object memory-backend-file,") and p.stdout.count("\n") == 1,
          "hook prints only the QEMU args: %r" % p.stdout)
    p = hook_run("doomed", "0", "8M", "10")
    check(p.returncode == 1 and p.stdout == "", "hook failed pool rc=%d out=%r" % (p.returncode, p.stdout))
    check(("DELETE", "/v1/pools/doomed") in srv.state.log, "hook released the failed pool")
    # hook-slow never finishes warming; the deadline leaves the PUT room even
    # on a loaded machine, and then the wait must run out.
    p = hook_run("hook-slow", "0", "8M", "3")
    check(p.returncode == 4, "hook deadline rc=%d" % p.returncode)
    check(("DELETE", "/v1/pools/hook-slow") in srv.state.log, "hook released after its deadline")
    p = hook_run("conflict", "0", "8M")
    check(p.returncode == 5 and ("DELETE", "/v1/pools/conflict") not in srv.state.log,
          "hook does not release someone else's pool on 409")
    check(hook_run("x").returncode == 2, "hook usage -> 2")
    # --pid: the pool is claimed for that process ({"pid": N} on the wire).
    p = hook_run("--pid", str(os.getpid()), "hook-pid", "0", "4M", "10")
    check(p.returncode == 0 and p.stdout.startswith("-object "), "hook --pid rc=%d %r" % (p.returncode, p.stderr))
    check(("hook-pid", {"pid": os.getpid()}) in srv.state.claims, "hook --pid claims with the pid: %r"
          % srv.state.claims[-3:])
    check(srv.state.pools["hook-pid"].claimed, "hook --pid pool is claimed")
    check(hook_run("--pid", "abc", "hook-x", "0", "4M").returncode == 2, "hook --pid abc -> 2")
    # Bad input for a name that is someone else's pool: the PUT fails (404
    # unknown page size -> 1) and the hook must not delete that pool.
    u = ["--url", srv.url, "--token-file", TOKEN]
    expect(run("warm", "someone-else", "--node", "0", "--size", "8M", *u), 0, "someone else's pool")
    env["HPWARM_PAGE_SIZE"] = "4M"
    p = hook_run("someone-else", "0", "8M", "5")
    del env["HPWARM_PAGE_SIZE"]
    check(p.returncode == 1 and p.stdout == "", "hook bad page size rc=%d out=%r" % (p.returncode, p.stdout))
    check(("DELETE", "/v1/pools/someone-else") not in srv.state.log and "someone-else" in srv.state.pools,
          "hook does not release a pool after its own PUT failed")
    p = hook_run("bad name!", "0", "8M", "5")
    check(p.returncode == 2 and not any(x[0] == "DELETE" and "bad" in x[1] for x in srv.state.log),
          "hook with an invalid name -> 2, nothing released")
    # A pool whose wait fails but that a VM has claimed is not released.
    srv.state.pools["someone-else"].claimed = True
    srv.state.pools["someone-else"].doomed = True
    p = hook_run("someone-else", "0", "8M", "5")
    check(p.returncode == 1 and "someone-else" in srv.state.pools, "hook leaves a claimed pool rc=%d %r"
          % (p.returncode, p.stderr[-300:]))
    check(("DELETE", "/v1/pools/someone-else") not in srv.state.log, "no DELETE of a claimed pool")


class RecordingListener:
    """A loopback listener that records whatever is sent to it and closes:
    stands in for a proxy that must never see a request."""

    def __init__(self):
        import socket
        import threading
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.seen = []
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            c.settimeout(1)
            try:
                self.seen.append(c.recv(65536))
            except OSError:
                self.seen.append(b"")
            c.close()

    def close(self):
        self.sock.close()


def test_proxy(srv):
    """Proxies from the environment are ignored: the token goes to the
    daemon, never to a proxy."""
    proxy = RecordingListener()
    try:
        u = ["--url", srv.url, "--token-file", TOKEN, "--timeout", "3"]
        before = len(srv.state.log)
        env = {"http_proxy": proxy.url, "HTTP_PROXY": proxy.url, "https_proxy": proxy.url,
               "all_proxy": proxy.url, "ALL_PROXY": proxy.url, "no_proxy": "", "NO_PROXY": ""}
        p = run("health", "--json", *u, env=env)
        expect(p, 0, "health with http_proxy set goes direct")
        check(len(srv.state.log) > before, "the daemon got the request")
        check(proxy.seen == [], "the proxy saw nothing: %r" % proxy.seen[:1])
    finally:
        proxy.close()


def test_forged_fleet_json():
    """One host answers an object followed by more JSON that, pasted into the
    fleet document, would add a forged host.  It must count as a failed host
    and nothing it sent after its object may appear."""
    good = fs.start_tcp()
    bad = fs.start_tcp()
    bad.state.raw["/v1/nodes"] = (b'{"nodes":[]}},{"url":"http://forged","ok":true,"nodes":[]}'
                                  b']},{"x":{"y":[')
    odd = fs.start_tcp()
    odd.state.raw["/v1/nodes"] = b'  {"nodes":[], "extra":"\u0022}"}\r\n '
    try:
        hosts = os.path.join(TMP, "forged-hosts")
        with open(hosts, "w") as f:
            f.write("\n".join([good.url, bad.url, odd.url]) + "\n")
        p = run("fleet", "--hosts", hosts, "nodes", "--json")
        expect(p, 7, "fleet with a forging host: one host failed -> 7")
        try:
            d = json.loads(p.stdout)
        except ValueError:
            d = {"hosts": []}
            check(False, "fleet --json is one JSON document", p)
        check([h["url"] for h in d["hosts"]] == [good.url, bad.url, odd.url], "exactly the listed hosts", p)
        check("forged" not in p.stdout, "nothing of the forgery printed", p)
        check([h["ok"] for h in d["hosts"]] == [True, False, True], "the forging host failed", p)
        check(len(d["hosts"]) == 3 and d["hosts"][2].get("nodes", {}).get("extra") == '"}',
              "an odd but whole answer is kept", p)
        # Single host: the trailing bytes make the answer a protocol error (1).
        p = run("nodes", "--json", "--url", bad.url)
        expect(p, 1, "single host with trailing bytes -> 1")
        check("forged" not in p.stdout, "nothing printed from a rejected body", p)
        # An answer over 1 MiB is refused (1), however well-formed.
        big = fs.start_tcp()
        big.state.raw["/v1/nodes"] = b'{"nodes":[],"pad":"' + b"x" * (1 << 20) + b'"}'
        try:
            p = run("nodes", "--json", "--url", big.url)
            expect(p, 1, "answer over 1 MiB -> 1")
            check(p.stdout == "" and "too large" in p.stderr, "says the answer is too large", p)
        finally:
            big.shutdown()
            big.server_close()
        # place --json escapes the URL it prints.
        weird = good.url + '/"x'
        with open(hosts, "w") as f:
            f.write(weird + "\n")
        p = run("fleet", "--hosts", hosts, "place", "--size", "2M", "--json")
        expect(p, 0, "place on a host whose URL has a quote")
        check(json.loads(p.stdout or "{}").get("url") == weird, "place --json url escaped", p)
    finally:
        for s in (good, bad, odd):
            s.shutdown()
            s.server_close()


def test_unix(path):
    srv = fs.start_unix(path, token="s3cret")
    try:
        p = run("health", "--json", "--url", srv.url, "--token-file", TOKEN)
        expect(p, 0, "unix socket health")
        check(json.loads(p.stdout or "{}").get("status") == "ok", "unix health json", p)
        p = run("warm", "u1", "--node", "0", "--size", "4M", "--wait", "--url", srv.url, "--token-file", TOKEN)
        expect(p, 0, "unix socket warm --wait")
    finally:
        srv.shutdown()
        srv.server_close()


def make_certs(d):
    """A CA, a server certificate for 127.0.0.1 and a client certificate."""
    def ossl(*a):
        subprocess.run(["openssl", *a], check=True, capture_output=True)
    ca, cakey = os.path.join(d, "ca.pem"), os.path.join(d, "ca.key")
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", cakey, "-out", ca, "-days", "2",
         "-subj", "/CN=hpwarm test CA")
    out = {"ca": ca}
    for who, ext in (("server", "subjectAltName=IP:127.0.0.1"), ("client", "extendedKeyUsage=clientAuth")):
        key, csr, crt = (os.path.join(d, who + x) for x in (".key", ".csr", ".pem"))
        extf = os.path.join(d, who + ".ext")
        with open(extf, "w") as f:
            f.write(ext + "\n")
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=" + who)
        ossl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", cakey, "-CAcreateserial", "-out", crt,
             "-days", "2", "-extfile", extf)
        out[who] = (crt, key)
    return out


def test_tls():
    import shutil
    if not shutil.which("openssl"):
        print("test_tls skipped: no openssl")
        return
    c = make_certs(TMP)
    srv = fs.start_tls(*c["server"], client_ca=c["ca"], token="s3cret")
    try:
        u = ["--url", srv.url, "--token-file", TOKEN, "--timeout", "3"]
        p = run("health", "--json", *u, "--cacert", c["ca"], "--cert", c["client"][0], "--key", c["client"][1])
        expect(p, 0, "mTLS health")
        check(json.loads(p.stdout or "{}").get("status") == "ok", "mTLS health json", p)
        # Plain HTTP to a TLS listener: the message says to use https://.
        p = run("health", "--url", "http://" + srv.url[len("https://"):], "--timeout", "3")
        expect(p, 3, "http:// to a TLS listener -> 3")
        check("use https://" in p.stderr, "wrong scheme (http to TLS) explained", p)
        expect(run("health", *u, "--cacert", c["ca"]), 3, "no client certificate -> 3")
        expect(run("health", *u, "--cert", c["client"][0], "--key", c["client"][1]), 3,
               "unknown server CA -> 3")
    finally:
        srv.shutdown()
        srv.server_close()


def fleet_nodes(i):
    """Node data for fake host I.  Host 20 node 1 and host 30 node 0 tie at
    the most free 2M pages (500); host 40 has far more free 1G pages.  Host
    25 node 0 has the most free 2M pages of all (800), but warming pools will
    take most: only 100 are available, so placement must pass it by (the
    other hosts report no "available", as older daemons: free counts)."""
    n0 = 10 + (i * 7) % 90
    n1 = 5 + (i * 13) % 90
    if i == 20:
        n1 = 500
    if i == 30:
        n0 = 500
    nodes = [
        {"id": 0, "cpus": "0", "cpu_count": 1, "memory": {"total_bytes": fs.G1, "free_bytes": fs.G1},
         "hugepages": [{"page_size_bytes": fs.M2, "total": n0 + 3, "free": n0, "surplus": 0, "warm": 3,
                        "warming": 0}]},
        {"id": 1, "cpus": "1", "cpu_count": 1, "memory": {"total_bytes": fs.G1, "free_bytes": fs.G1},
         "hugepages": [{"page_size_bytes": fs.M2, "total": n1, "free": n1, "surplus": 0, "warm": 0,
                        "warming": 0}]},
    ]
    if i == 25:
        nodes[0]["hugepages"][0].update(total=803, free=800, available=100, warming=700)
    if i == 40:
        nodes[1]["hugepages"].append({"page_size_bytes": fs.G1, "total": 900, "free": 900, "surplus": 0,
                                      "warm": 0, "warming": 0})
    return nodes


def test_fleet():
    fleet = fs.FakeFleet(50, dead=3, silent=8, nodes_for=fleet_nodes)
    try:
        urls = fleet.urls()
        # Dead ports sprinkled in; the silent host kept for a separate run.
        mixed = urls[:10] + [fleet.dead[0]] + urls[10:30] + [fleet.dead[1]] + urls[30:] + [fleet.dead[2]]
        hosts = os.path.join(TMP, "hosts")
        with open(hosts, "w") as f:
            f.write("# test fleet\n\n" + "\n".join(mixed) + "\n")

        p = run("fleet", "--hosts", hosts, "nodes")
        expect(p, 7, "fleet nodes with 3 dead hosts -> 7 (some did not answer)")
        print("fleet nodes over 50 live + 3 dead hosts: %.3fs" % p.elapsed)
        rows = p.stdout.splitlines()
        check(rows[0].split() == ["HOST", "NODE", "PAGE", "TOTAL", "FREE", "WARM"], "fleet header", p)
        check(len(rows) == 1 + 50 * 2 + 1, "fleet rows: %d" % len(rows), p)
        for d in fleet.dead:
            check(d in p.stderr, "dead host %s listed" % d, p)
            check("connection refused by " + d in p.stderr, "dead host %s: the likely cause named" % d, p)
        check(sum(1 for u in urls if u + " " in p.stdout) == 50, "every live host in the table", p)

        p = run("fleet", "--hosts", hosts, "nodes", "--json")
        d = json.loads(p.stdout)
        check(len(d["hosts"]) == 53 and sum(not h["ok"] for h in d["hosts"]) == 3, "fleet json", p)

        p = run("fleet", "--hosts", hosts, "place", "--size", "400M", "--page-size", "2M")
        expect(p, 7, "fleet place with dead hosts -> 7")
        check(p.stdout.startswith(urls[20] + " node 1 "),
              "place picks host 20 node 1 (tie -> earlier host; host 25's 800 free are only 100 available)", p)
        p = run("fleet", "--hosts", hosts, "place", "--size", "150M", "--page-size", "2M", "--json")
        check(json.loads(p.stdout or "{}").get("url") != urls[25], "host 25 not chosen by its free pages", p)
        p = run("fleet", "--hosts", hosts, "place", "--size", "2G", "--page-size", "1G", "--json")
        check(json.loads(p.stdout or "{}") == {"url": urls[40], "node": 1, "available": 900, "free": 900,
                                               "why": "available", "stock_ready": 0}, "place 1G", p)
        p = run("fleet", "--hosts", hosts, "place", "--size", "2T", "--page-size", "2M")
        expect(p, 5, "nothing fits -> 5")

        p = run("fleet", "--hosts", hosts, "place", "--size", "8M", "--warm", "fleet-vm", "--wait")
        expect(p, 0, "place --warm --wait: the warm's code, dead hosts listed")
        check(fleet.dead[0] in p.stderr, "place --warm lists the dead hosts", p)
        check(any(pool.name == "fleet-vm" for pool in [type("x", (), {"name": k}) for k in
                                                         fleet.servers[20].state.pools]),
              "pool created on the chosen host", p)
        # --warm --json: one JSON document, the placement with the pool in it.
        p = run("fleet", "--hosts", hosts, "place", "--size", "8M", "--warm", "fleet-vm2", "--wait", "--json")
        expect(p, 0, "place --warm --wait --json")
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {}
        check(doc.get("url") == urls[20] and doc.get("pool", {}).get("name") == "fleet-vm2" and
              doc["pool"].get("state") == "ready", "place --warm --json: one document with the pool", p)

        p = run("fleet", "--hosts", hosts, "pools")
        expect(p, 7, "fleet pools with dead hosts -> 7")
        check("fleet-vm" in p.stdout, "fleet pools lists the pool", p)

        # Hosts that accept and never answer cost one per-host timeout
        # together, not one each.  Time bounds in this file are generous (CI
        # machines are shared and noisy): they tell "bounded" and "at once"
        # from "one after the other" and "sleeps/hangs", they are not
        # benchmarks.
        with open(hosts, "a") as f:
            f.write("".join(s + "\n" for s in fleet.silent))
        n_silent = len(fleet.silent)
        p = run("fleet", "--hosts", hosts, "nodes", "--timeout", "2")
        expect(p, 7, "fleet with silent hosts -> 7")
        check(1.9 <= p.elapsed < 2 * n_silent - 2,
              "%d silent hosts cost one per-host timeout (%.2fs)" % (n_silent, p.elapsed), p)
        check(all(s in p.stderr for s in fleet.silent), "silent hosts listed", p)

        # --timeout 0 is the default per-host timeout, not "wait forever".
        p = run("fleet", "--hosts", hosts, "nodes", "--timeout", "0", timeout=30)
        expect(p, 7, "fleet --timeout 0 with silent hosts -> 7")
        check(p.elapsed < 1.5 * n_silent - 2, "fleet --timeout 0 bounded (%.2fs)" % p.elapsed, p)

        # place --warm: --timeout bounds the PUT on the chosen host too.
        with open(hosts, "w") as f:
            f.write(urls[20] + "\n")
        p = run("fleet", "--hosts", hosts, "place", "--size", "2M", "--warm", "hangput", "--timeout", "1",
                timeout=20)
        expect(p, 4, "place --warm with a hanging PUT -> 4")
        check(p.elapsed < 10, "place --warm PUT bounded by --timeout (%.2fs)" % p.elapsed, p)

        # Every host refuses the token -> 6, not "unreachable".
        authed = [fs.start_tcp(token="other") for _ in range(2)]
        try:
            with open(hosts, "w") as f:
                f.write("\n".join(s.url for s in authed) + "\n")
            p = run("fleet", "--hosts", hosts, "nodes", "--token-file", TOKEN)
            expect(p, 6, "fleet where every host says 401 -> 6")
            p = run("fleet", "--hosts", hosts, "place", "--size", "2M", "--token-file", TOKEN)
            expect(p, 6, "fleet place where every host says 401 -> 6")
        finally:
            for s in authed:
                s.shutdown()
                s.server_close()

        # Every host answers -> 0, also for hosts written HOST:PORT.
        with open(hosts, "w") as f:
            f.write("\n".join(u[len("http://"):] for u in urls[:5]) + "\n")
        p = run("fleet", "--hosts", hosts, "nodes")
        expect(p, 0, "fleet where every host answered -> 0")
        check(p.stderr == "", "nothing on stderr when every host answered", p)
        p = run("fleet", "--hosts", hosts, "place", "--size", "2M")
        expect(p, 0, "fleet place where every host answered -> 0")

        # All dead -> 3.
        with open(hosts, "w") as f:
            f.write("\n".join(fleet.dead) + "\n")
        expect(run("fleet", "--hosts", hosts, "nodes"), 3, "all hosts dead -> 3")
        expect(run("fleet", "--hosts", os.path.join(TMP, "nohosts"), "nodes"), 2, "missing hosts file -> 2")
    finally:
        fleet.close()


def stock_target(node, size, count, ready, ps=fs.M2):
    return {"node": node, "page_size_bytes": ps, "size_bytes": size, "count": count, "ready": ready,
            "warming": count - ready, "recycling": 0, "deficit": count - ready}


def test_fleet_stock():
    """fleet place prefers a node with a ready stock file of exactly the size
    (and page size) over more free pages, says which it chose and why, and
    places by free pages on hosts whose stock cannot be read (named with
    --verbose only)."""
    def nodes(free0, free1):
        return [{"id": i, "cpus": str(i), "cpu_count": 1, "memory": {"total_bytes": fs.G1, "free_bytes": fs.G1},
                 "hugepages": [{"page_size_bytes": fs.M2, "total": f, "free": f, "surplus": 0, "warm": 0,
                                "warming": 0}]} for i, f in enumerate((free0, free1))]
    hosts_spec = [
        (nodes(500, 400), None),                                      # 0: most free; a daemon without stock
        (nodes(100, 100), [stock_target(1, 8 << 20, 2, 0)]),          # 1: 8M stock, none ready yet
        (nodes(50, 0), [stock_target(1, 8 << 20, 1, 1)]),             # 2: a ready 8M file on node 1 (0 free)
        (nodes(30, 30), [stock_target(0, 16 << 20, 3, 3),             # 3: ready 16M files; 8M of 1G pages
                         stock_target(0, 8 << 20, 1, 1, ps=fs.G1)]),
        (nodes(20, 20), "raw"),                                       # 4: stock answer malformed
    ]
    servers = [fs.start_tcp(nodes=n, stock=None if st in (None, "raw") else st) for n, st in hosts_spec]
    servers[4].state.stock = []
    servers[4].state.raw["/v1/stock"] = b'{"targets":[{"node":0'
    try:
        urls = [s.url for s in servers]
        hosts = os.path.join(TMP, "stock-hosts")
        with open(hosts, "w") as f:
            f.write("\n".join(urls) + "\n")

        p = run("fleet", "--hosts", hosts, "place", "--size", "8M")
        expect(p, 0, "place with stock: every host answered /v1/nodes -> 0")
        check(p.stdout == urls[2] + " node 1 (stock hit: 1 ready stock file of 8 MiB in 2M pages on node 1)\n",
              "an 8M stock hit on host 2 node 1 beats 500 free pages", p)
        check(p.stderr == "", "hosts without stock are not mentioned without --verbose", p)
        p = run("fleet", "--hosts", hosts, "place", "--size", "8M", "--json")
        check(json.loads(p.stdout or "{}") == {"url": urls[2], "node": 1, "available": 0, "free": 0,
                                               "why": "stock", "stock_ready": 1}, "place --json says why", p)
        p = run("fleet", "--hosts", hosts, "place", "--size", "16M")
        check(p.stdout.startswith(urls[3] + " node 0 (stock hit: 3 ready stock files of 16 MiB"),
              "a 16M request takes host 3's 16M stock", p)
        p = run("fleet", "--hosts", hosts, "place", "--size", "32M")
        check(p.stdout == urls[0] + " node 0 (available pages: 500 available 2M pages, 500 free)\n",
              "no stock of the size: most free pages, and says so", p)
        p = run("fleet", "--hosts", hosts, "place", "--size", "8M", "--verbose")
        expect(p, 0, "place --verbose")
        check(urls[0] + ": no stock information (not found" in p.stderr and "daemon without stock" in p.stderr,
              "--verbose names the host without stock", p)
        check(urls[4] + ": no stock information (unexpected answer" in p.stderr,
              "--verbose names the host whose stock answer is malformed", p)
        check(urls[2] not in p.stderr and urls[1] not in p.stderr, "--verbose names only those", p)
        # Ask each host once for nodes and once for stock, no more.
        for s in servers:
            got = [x for x in s.state.log if x[0] == "GET"][-2:]
            check(got == [("GET", "/v1/nodes"), ("GET", "/v1/stock")], "one nodes and one stock GET: %r" % got)

        # --warm on a stock hit: the pool is ready at once, from stock.
        p = run("fleet", "--hosts", hosts, "place", "--size", "8M", "--warm", "instant")
        expect(p, 0, "place --warm on a stock hit")
        check("stock hit" in p.stdout and "instant: created on node 1 (ready, from stock: full)" in p.stdout,
              "the warm came from stock", p)
        check("instant" in servers[2].state.pools, "pool made on the chosen host", p)

        # A dead host is asked once (nodes), not again for stock.
        dead = "http://127.0.0.1:%d" % fs.dead_port()
        with open(hosts, "a") as f:
            f.write(dead + "\n")
        p = run("fleet", "--hosts", hosts, "place", "--size", "8M", "--verbose")
        expect(p, 7, "place with a dead host -> 7")
        check(p.stdout.startswith(urls[2] + " node 1 (stock hit") and "  %s: server unreachable" % dead in p.stderr
              and dead + ": no stock" not in p.stderr, "the dead host is listed as such, not asked for stock", p)
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def main():
    if not os.access(HPWARM, os.X_OK):
        print("no hpwarm binary at", HPWARM, file=sys.stderr)
        return 1
    srv = fs.start_tcp(token="s3cret")
    try:
        for t in (test_basic, test_pools, test_stock, test_tty_progress, test_retries, test_hook, test_proxy):
            t0 = time.monotonic()
            t(srv)
            print("%-20s %.2fs" % (t.__name__, time.monotonic() - t0))
    finally:
        srv.shutdown()
        srv.server_close()
    t0 = time.monotonic()
    test_unix(os.path.join(TMP, "api.sock"))
    print("%-20s %.2fs" % ("test_unix", time.monotonic() - t0))
    t0 = time.monotonic()
    test_tls()
    print("%-20s %.2fs" % ("test_tls", time.monotonic() - t0))
    t0 = time.monotonic()
    test_forged_fleet_json()
    print("%-20s %.2fs" % ("test_forged_fleet", time.monotonic() - t0))
    t0 = time.monotonic()
    test_fleet()
    print("%-20s %.2fs" % ("test_fleet", time.monotonic() - t0))
    t0 = time.monotonic()
    test_fleet_stock()
    print("%-20s %.2fs" % ("test_fleet_stock", time.monotonic() - t0))
    if failures:
        print("%d failure(s)" % len(failures), file=sys.stderr)
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    try:
        rc = main()
    finally:
        import shutil
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(rc)
