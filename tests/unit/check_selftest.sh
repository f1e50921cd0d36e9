#!/bin/sh
# unit.check: the test harness (tests/unit/check.h) does what its tests rely
# on.  Runs check_demo, whose tests pass, fail and skip on purpose, and checks
# exit codes and messages: every test runs after a failure; a failed check
# names file:line, the test and both values, and ends only its test; the exit
# code is 1 after any failure, 77 when all that ran skipped; HPW_TEST and
# TESTFUNCS select tests by name and an unknown name is an error.
# Usage: check_selftest.sh PATH/TO/check_demo
set -u
demo=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
failed=0

bad() { echo "FAIL: $*"; echo "--- output:"; cat "$out"; failed=1; }

# run EXPECTED_RC [VAR=VALUE]: run the demo, check its exit code.
run() {
        want=$1; shift
        env -u HPW_TEST -u TESTFUNCS "$@" "$demo" >"$out" 2>&1
        rc=$?
        [ "$rc" -eq "$want" ] || bad "$* $demo: exit $rc, want $want"
}
has() { grep -Eq -- "$1" "$out" || bad "output lacks /$1/"; }
lacks() { ! grep -Eq -- "$1" "$out" || bad "output has /$1/"; }

run 1
has 'check_demo\.c:[0-9]+: \[fails_int\] two == 3: 2 vs 3'
has 'check_demo\.c:[0-9]+: \[fails_str\] "left" == "right": "left" vs "right"'
has 'check_demo\.c:[0-9]+: \[fails_in_helper\] 5 < 4: 5 vs 4'
has '^FAILED fails_int$'
has '^ok after_failures$'
has '^ok child_check_aborts_child$'
has '^SKIP skips: the demo lacks a feature$'
has '^3 passed, 3 failed, 1 skipped$'
lacks 'NOT REACHED'
# In source order.
[ "$(grep -E '^(ok|FAILED) ' "$out" | head -2 | tr '\n' ' ')" = "ok passes FAILED fails_int " ] ||
        bad "tests did not run in source order"

run 0 HPW_TEST=passes
has '^1 passed, 0 failed, 0 skipped$'
lacks 'fails_int'

run 0 TESTFUNCS=passes,after_failures
has '^2 passed, 0 failed, 0 skipped$'

run 1 HPW_TEST=fails_str TESTFUNCS=passes
has '^0 passed, 1 failed, 0 skipped$'

run 77 HPW_TEST=skips
run 0 HPW_TEST=skips,passes

run 1 HPW_TEST=passes,no_such_test
has 'no test named "no_such_test"'
lacks '^ok passes$'

[ "$failed" -eq 0 ] && echo "ok: the harness runs, reports, filters and skips as documented"
exit "$failed"
