#!/bin/bash
# Fuzz each libFuzzer target for a bounded time, starting from the committed
# corpus.  New inputs go to a scratch dir (the committed corpus is not
# touched); crashes are written to ./fuzz-artifacts/<target>/ and fail the run.
#
# usage: tests/fuzz/run-fuzz.sh BUILD_DIR [SECONDS_PER_TARGET]
#   BUILD_DIR configured with -DCMAKE_C_COMPILER=clang -DHPW_FUZZ=ON and built.
set -euo pipefail

build=${1:?usage: $0 BUILD_DIR [SECONDS_PER_TARGET]}
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
# The targets, from the one list (comments and blank lines skipped).
mapfile -t targets < <(grep -E '^[a-z0-9_]+$' "$here/targets")
(( ${#targets[@]} > 0 )) || { echo "run-fuzz: no targets in $here/targets" >&2; exit 2; }
max_len=4096

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

status=0
for t in "${targets[@]}"; do
        bin=$build/tests/fuzz/fuzz_$t
        if [[ ! -x $bin ]]; then
                echo "run-fuzz: $bin missing (configure with -DHPW_FUZZ=ON and clang)" >&2
                exit 2
        fi
        mkdir -p "$scratch/$t" "fuzz-artifacts/$t"
        echo "run-fuzz: $t for ${seconds}s"
        if ! "$bin" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 \
                -print_final_stats=1 -artifact_prefix="fuzz-artifacts/$t/" \
                "$scratch/$t" "$here/corpus/$t"; then
                echo "run-fuzz: $t FAILED, see fuzz-artifacts/$t/" >&2
                status=1
        fi
done
exit $status
