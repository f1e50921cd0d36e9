#!/usr/bin/env python3
"""client.problem_catalog: api/problems.json, the problem catalog the client
library is generated from and installs, says what server/src/base/problem.c says.

Every row of problem.c's catalog table (one per line, the shape
tests/api/test_openapi.py also reads) must be in problems.json with the same
status, title and retryable flag (the row's RETRY or FINAL), in the same
order, and nothing else; only 429/5xx problems may be retryable (a 4xx
refusal other than 429 is an answer about the request, never a state that
passes).

Usage: check_problem_catalog.py PROBLEM_C PROBLEMS_JSON"""

import json
import re
import sys

ROW = re.compile(r'^\s*\[PROBLEM_[A-Z0-9_]+\] = \{ "([a-z0-9-]+)", (\d+), "([^"]*)", (RETRY|FINAL) \},\s*$')


def main():
    rows = []
    with open(sys.argv[1], encoding="utf-8") as f:
        for line in f:
            m = ROW.match(line)
            if m:
                rows.append((m.group(1), int(m.group(2)), m.group(3), m.group(4) == "RETRY"))
    with open(sys.argv[2], encoding="utf-8") as f:
        cat = json.load(f)
    bad = []
    if len(rows) < 10:
        bad.append("problem.c: only %d catalog rows found (has the row shape changed?)" % len(rows))
    if not isinstance(cat, list):
        bad.append("problems.json: not an array")
        cat = []
    got = []
    for i, e in enumerate(cat):
        if not isinstance(e, dict) or set(e) != {"slug", "status", "title", "retryable"}:
            bad.append("problems.json[%d]: members must be slug, status, title, retryable: %r" % (i, e))
            continue
        if not isinstance(e["retryable"], bool):
            bad.append("problems.json[%d] %s: retryable is not a boolean" % (i, e["slug"]))
        if e["retryable"] and not (e["status"] == 429 or e["status"] >= 500):
            bad.append("problems.json %s: status %d cannot be retryable" % (e["slug"], e["status"]))
        got.append((e["slug"], e["status"], e["title"], e["retryable"]))
    if got != rows:
        for r in rows:
            if r not in got:
                bad.append("problem.c row %r missing from problems.json (or differs)" % (r,))
        for g in got:
            if g not in rows:
                bad.append("problems.json entry %r not in problem.c" % (g,))
        if not bad:
            bad.append("problems.json lists the rows of problem.c in another order")
    for b in bad:
        print("FAIL:", b)
    if not bad:
        print("ok: %d problems" % len(rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
