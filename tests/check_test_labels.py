#!/usr/bin/env python3
"""build.test-labels: every ctest test carries a label (ctest -L/-LE and the
test presets in CMakePresets.json select by label), and every test that
touches this host's hugepages carries `real`, so `ctest -LE real` leaves the
kernel alone.  A test touches them when it takes the `hugepages` resource
lock (hpw_real_test in tests/CMakeLists.txt) or runs under tests/real/guard.sh.

Usage: check_test_labels.py CTEST BUILD_DIR.  Exit 0 when all hold, 1 otherwise.
"""
import json
import subprocess
import sys

from report import finish


def props(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    out = subprocess.run([argv[1], "--test-dir", argv[2], "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    tests = json.loads(out).get("tests", [])
    errors = []
    for t in tests:
        p = props(t)
        labels = p.get("LABELS") or []
        locks = p.get("RESOURCE_LOCK") or []
        command = " ".join(t.get("command") or [])
        if not labels:
            errors.append(f"{t['name']}: no LABELS")
        if ("hugepages" in locks or "tests/real/guard.sh" in command) and "real" not in labels:
            errors.append(f"{t['name']}: touches real hugepages but lacks the label real")
        if t["name"].startswith("real.") and "hugepages" not in locks:
            errors.append(f"{t['name']}: named real.* but not declared with hpw_real_test()")
    if len(tests) < 10:
        errors.append(f"only {len(tests)} tests listed; the listing is broken")
    return finish(errors, f"{len(tests)} tests, each labelled; the real-hugepage ones carry real")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
