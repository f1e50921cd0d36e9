#!/usr/bin/env bash
# stress.sh: the threaded unit tests under ThreadSanitizer, over and over, to
# find a rare race before CI does.  A developer's tool, not a CI stage
# (scripts/test.sh runs the same tests a few times; docs/TESTING.md).
#
#   scripts/stress.sh [N] [--busy] [-- CTEST_ARGS...]
#
# Builds the tsan preset's threaded tests (target test_threads) and runs
# `ctest --preset tsan --repeat until-fail:N` (N defaults to 300): each test
# N times or until it first fails.  --busy keeps two busy loops running
# beside it, so threads get preempted at odd moments.  CTEST_ARGS go to
# ctest as they are, e.g. `-- -R unit.pools_claim` or `-- -j1`.  Prints the
# tests that failed and where the log is; exits non-zero then.
set -euo pipefail
cd "$(dirname "$0")/.."
n=300
busy=0
while [ $# -gt 0 ]; do
  case "$1" in
    --busy) busy=1 ;;
    --) shift; break ;;
    ''|*[!0-9]*) echo "usage: $0 [N] [--busy] [-- CTEST_ARGS...]" >&2; exit 2 ;;
    *) n=$1 ;;
  esac
  shift
done

cmake --preset tsan >/dev/null
cmake --build build-tsan -j"$(nproc)" --target test_threads >/dev/null

pids=()
stop_busy() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_busy EXIT
if [ "$busy" = 1 ]; then
  for _ in 1 2; do
    (while :; do :; done) &
    pids+=("$!")
  done
fi

log=build-tsan/stress.log
failed=build-tsan/Testing/Temporary/LastTestsFailed.log
rm -f "$failed"
echo "stress: every threaded unit test up to $n times$([ "$busy" = 1 ] && echo ', beside two busy loops'); log: $log"
start=$(date +%s)
rc=0
ctest --preset tsan -j"$(nproc)" --repeat until-fail:"$n" "$@" >"$log" 2>&1 || rc=$?
echo "stress: $(($(date +%s) - start)) s; $(grep -E 'tests passed|tests failed' "$log" | tail -1)"
if [ "$rc" != 0 ]; then
  echo "stress: FAILED (the sanitizer report and the test's output are in $log):"
  if [ -s "$failed" ]; then sed 's/^[0-9]*:/  /' "$failed"; else tail -20 "$log"; fi
  exit 1
fi
