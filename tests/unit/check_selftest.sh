#!/bin/sh
# unit.check: the test harness (tests/unit/check.h) does what its tests rely
# on.  Runs check_demo, whose tests pass, fail and skip on purpose, and checks
# exit codes and messages: every test runs after a failure; a failed check
# names file:line, the test and both values, and ends only its test; each test
# runs in a process of its own, so a thread, a held lock or a changed global
# left by a failed test is gone for the next, and a crash or a sanitizer's
# exit code fails only its test; deferred cleanups run in the runner, the
# last first, also after a kill; the fixture's setup runs before each body,
# its teardown after a pass only; the exit code is 1 after any failure, 77
# when all that ran skipped; HPW_TEST and TESTFUNCS select tests by name and
# an unknown name is an error; HPW_TEST_NOFORK=1 runs them in one process.
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
        env -u HPW_TEST -u TESTFUNCS -u HPW_TEST_NOFORK "$@" "$demo" >"$out" 2>&1
        rc=$?
        [ "$rc" -eq "$want" ] || bad "$* $demo: exit $rc, want $want"
}
has() { grep -Eq -- "$1" "$out" || bad "output lacks /$1/"; }
lacks() { ! grep -Eq -- "$1" "$out" || bad "output has /$1/"; }

run 1
sanitized=$(sed -n 's/^check_demo: sanitized //p' "$out")
has 'check_demo\.c:[0-9]+: \[fails_leaving_a_mess\] dirty == 0: 1 vs 0'
has '^ok next_test_starts_clean$'
has '^deferred: second \(in the runner: yes\)$'
has '^deferred: after a kill \(in the runner: yes\)$'
has '^check.h: \[defers_then_dies\] killed by signal 9'
has '^FAILED defers_then_dies$'
has '^check.h: \[exits_like_a_sanitizer\] exit 66'
has '^FAILED exits_like_a_sanitizer$'
has '^ok fixture_set_up_once_per_process$'
has '^teardown passes$'
lacks '^teardown fails_int$'
[ "$(grep -E '^deferred: ' "$out" | head -2 | cut -d' ' -f2 | tr '\n' ' ')" = "second first " ] ||
        bad "deferred cleanups did not run the last first"
if [ "$sanitized" = 1 ]; then
        has '^FAILED sanitizer_report$'
        has '^5 passed, 8 failed, 1 skipped$'
else
        has '^5 passed, 7 failed, 1 skipped$'
fi
has 'check_demo\.c:[0-9]+: \[fails_int\] two == 3: 2 vs 3'
has 'check_demo\.c:[0-9]+: \[fails_str\] "left" == "right": "left" vs "right"'
has 'check_demo\.c:[0-9]+: \[fails_in_helper\] 5 < 4: 5 vs 4'
has '^FAILED fails_int$'
has '^ok after_failures$'
has '^ok child_check_aborts_child$'
has '^SKIP skips: the demo lacks a feature$'
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

# In one process (for gdb): the same reports, cleanups still run after a
# failed check, and what a failed test leaves is seen by the next.
run 1 HPW_TEST_NOFORK=1 HPW_TEST=passes,fails_int,after_failures
has '^2 passed, 1 failed, 0 skipped$'
has '^ok after_failures$'
run 1 HPW_TEST_NOFORK=1 HPW_TEST=defers_then_fails
has '^deferred: second \(in the runner: yes\)$'
has '^deferred: first \(in the runner: yes\)$'
run 1 HPW_TEST_NOFORK=1 HPW_TEST=fails_leaving_a_mess,next_test_starts_clean
has '^FAILED next_test_starts_clean$'

[ "$failed" -eq 0 ] && echo "ok: the harness runs, reports, filters and skips as documented"
exit "$failed"
