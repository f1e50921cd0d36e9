#!/usr/bin/env python3
"""deploy.grafana: the Grafana dashboard only uses metrics hpwarmd exposes.

Starts the real daemon (tests/integration/hpwtest.py) on a loopback port
against a copy of the two-node sysfs fixture, sends a few requests so the
per-request series exist, scrapes /metrics and checks that every metric
name in the dashboard's PromQL (panel targets and template queries) is one
the daemon exposed (histogram names with their _bucket/_sum/_count series);
`up` is the only name allowed from elsewhere (Prometheus makes it).  Also:
the JSON parses, panel ids are unique, every panel but rows has queries, and
the panels the README promises exist (hugepages per node, pools by state,
warm throughput, API latency from the histogram, errors).

Environment as for the integration tests (HPWARMD, HPW_FIXTURES).
Usage: check_dashboard.py DASHBOARD_JSON
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "integration"))
import hpwtest  # noqa: E402

# Names that are PromQL, not metrics.
PROMQL_WORDS = {
    "sum", "avg", "min", "max", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values",
    "group", "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
    "offset", "inf", "nan",
}
FROM_PROMETHEUS = {"up"}
REQUIRED = {
    "hpwarmd_hugepages_bytes": "hugepages per node",
    "hpwarmd_pool_bytes": "pools by state",
    "hpwarmd_warmed_bytes_total": "warm throughput",
    "hpwarmd_http_request_duration_seconds_bucket": "API latency from the histogram",
    "hpwarmd_http_requests_total": "errors by status code",
    "hpwarmd_warm_duration_seconds_bucket": "warm duration from the histogram",
}


def metric_names(expr):
    """Metric names in a PromQL expression: strings, label matchers, ranges
    and grouping clauses removed, then identifiers that are not functions
    (followed by "(") or PromQL words."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\w+", " ", e)
    names = set()
    for m in re.finditer(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?", e):
        word, call = m.group(1), m.group(2)
        if call or word.lower() in PROMQL_WORDS:
            continue
        names.add(word)
    return names


def self_test():
    got = metric_names('histogram_quantile(0.99, sum by (route, le) (rate(hpwarmd_x_bucket{instance=~"$i",'
                       'code=~"5.."}[$__rate_interval]))) / on (instance) group_left up{job="a"} and other_metric')
    want = {"hpwarmd_x_bucket", "up", "other_metric"}
    if got != want:
        raise SystemExit(f"FAIL: metric_names self-test: got {sorted(got)}, want {sorted(want)}")


def exposed_names(text):
    names = set()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0))
    return names


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    self_test()
    with open(argv[1], encoding="utf-8") as f:
        dash = json.load(f)
    errors = []
    exprs = []  # (where, expr)
    ids = set()
    for p in dash.get("panels", []):
        pid = p.get("id")
        if pid in ids:
            errors.append(f"panel id {pid} used twice")
        ids.add(pid)
        if p.get("type") == "row":
            continue
        targets = p.get("targets") or []
        if not targets:
            errors.append(f"panel {p.get('title')!r} has no queries")
        for t in targets:
            if not t.get("expr", "").strip():
                errors.append(f"panel {p.get('title')!r} target {t.get('refId')} has no expr")
            exprs.append((f"panel {p.get('title')!r}", t.get("expr", "")))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else (q or "")
            inner = re.match(r"label_values\((.*),\s*\w+\)$", q.strip())
            exprs.append((f"variable {v.get('name')}", inner.group(1) if inner else q))

    used = {}
    for where, e in exprs:
        for n in metric_names(e):
            used.setdefault(n, where)
    if not used:
        errors.append("no metric names found in the dashboard")

    with hpwtest.Daemon("two-node") as d:
        for path in ("/v1/health", "/v1/nodes", "/v1/pools", "/v1/nodes/0"):
            d.get(path)
        r = d.get("/metrics")
        if r.status != 200:
            errors.append(f"GET /metrics: {r.status}")
            text = ""
        else:
            text = r.body.decode()
    exposed = exposed_names(text)
    print(f"ok: daemon exposed {len(exposed)} series names; dashboard uses {len(used)} metric names")
    for n, where in sorted(used.items()):
        if n in FROM_PROMETHEUS:
            continue
        if n not in exposed:
            errors.append(f"{where}: metric {n} is not exposed by hpwarmd's /metrics")
    for n, what in REQUIRED.items():
        if n not in used:
            errors.append(f"the dashboard has no panel on {what} ({n})")
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print("ok: every metric in deploy/grafana/hpwarm.json is exposed by /metrics")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
