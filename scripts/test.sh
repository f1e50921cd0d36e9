#!/usr/bin/env bash
# test.sh: install what is needed, build, and run the whole test suite:
#   1. dev build (-Werror) and every ctest test (unit, integration, real-kernel
#      hugepage tests, the QEMU two-node guest);
#   2. the same suite under AddressSanitizer+UBSan, less what does not run
#      our code under the sanitizers (QEMU/libvirt guests, packaging, bench);
#   3. every unit test that starts threads under ThreadSanitizer, each run
#      HPW_TSAN_REPEAT times (default 6, about 3 minutes on 2 cores), so a
#      race that shows once in a few runs fails here, not later in CI;
#   4. a bounded libFuzzer run of every fuzz target (clang).
# Set HPW_QUICK=1 to run only step 1.  Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh --test
jobs=$(nproc)
step() { printf '\n==== %s\n' "$*"; }

step "dev build + full suite"
cmake --preset dev >/dev/null
cmake --build build -j"$jobs"
ctest --preset dev -j"$jobs"

[ "${HPW_QUICK:-0}" = 1 ] && exit 0

step "ASan+UBSan build + suite (not the guests, packaging or bench)"
cmake --preset asan >/dev/null
cmake --build build-asan -j"$jobs"
ctest --preset asan -j"$jobs"     # sanitizer options and the qemu exclusion: CMakePresets.json

step "TSan build: the threaded unit tests, each ${HPW_TSAN_REPEAT:-6} times"
cmake --preset tsan >/dev/null
cmake --build build-tsan -j"$jobs" --target test_threads
# The label threads (tests/CMakeLists.txt) picks them; scripts/stress.sh runs
# the same for hundreds of rounds.
ctest --preset tsan -j"$jobs" --repeat until-fail:"${HPW_TSAN_REPEAT:-6}"

if [ -x tests/fuzz/run-fuzz.sh ]; then
  step "libFuzzer smoke run"
  # libFuzzer needs clang; -Werror stays with the gcc builds above.  The
  # fuzz targets carry their own fuzzer+ASan+UBSan flags (tests/fuzz).
  CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DHPW_FUZZ=ON -DHPW_WERROR=OFF >/dev/null
  cmake --build build-fuzz -j"$jobs" --target $(sed -n "s/^\([a-z0-9_]*\)$/fuzz_\1/p" tests/fuzz/targets)
  tests/fuzz/run-fuzz.sh build-fuzz "${HPW_FUZZ_SECONDS:-60}"
fi
step "all test stages passed"
