#!/usr/bin/env python3
"""build.test-labels: every ctest test carries a label (ctest -L/-LE and the
test presets in CMakePresets.json select by label), and every test that
touches this host's hugepages carries `real`, so `ctest -LE real` leaves the
kernel alone.  A test touches them when it takes the `hugepages` resource
lock (hpw_real_test in tests/CMakeLists.txt) or runs under tests/real/guard.sh.
A unit test binary that starts threads (it imports pthread_create, `nm -u`)
carries `threads`, and one that does not, not: the tsan preset runs that
label, so a threaded test left out is one TSan never looks at.  Binaries not
built yet are not looked at.

Usage: check_test_labels.py CTEST BUILD_DIR.  Exit 0 when all hold, 1 otherwise.
"""
import json
import os
import shutil
import subprocess
import sys

from report import finish


def props(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


def starts_threads(binary):
    """Whether BINARY imports pthread_create; None when nm cannot tell."""
    r = subprocess.run(["nm", "-u", binary], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return any(line.split()[-1].split("@")[0] == "pthread_create"
               for line in r.stdout.splitlines() if line.strip())


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
        binary = (t.get("command") or [""])[0]
        if (t["name"].startswith("unit.") and os.path.basename(binary).startswith("test_")
                and os.path.isfile(binary) and shutil.which("nm")):
            threads = starts_threads(binary)
            if threads and "threads" not in labels:
                errors.append(f"{t['name']}: starts threads but lacks the label threads "
                              "(HPW_THREADED_UNIT_TESTS in tests/CMakeLists.txt), so TSan never runs it")
            elif threads is False and "threads" in labels:
                errors.append(f"{t['name']}: labelled threads but starts none")
    if len(tests) < 10:
        errors.append(f"only {len(tests)} tests listed; the listing is broken")
    return finish(errors, f"{len(tests)} tests, each labelled; the real-hugepage ones carry real, "
                          "the threaded unit tests threads")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
