#!/usr/bin/env bash
# deploy.container: what can be tested of deploy/container without a
# container engine or a registry.
#
#  1. the Containerfile's build stage, deploy/container/build-stage.sh, runs
#     here (Debian 12 with the same -dev packages) into a temp dir, and the
#     daemon it makes answers --version;
#  2. every shared library that daemon needs (ldd) belongs to a Debian
#     package (dpkg -S) that the runtime stage gets: listed in
#     runtime-packages.txt, pulled in by apt as a dependency of one listed
#     (apt-cache depends --recurse), or part of every Debian 12 image
#     (Priority: required, e.g. libc6);
#  3. runtime-packages.txt lists nothing the daemon does not link directly,
#     and the Containerfile installs that list and runs that script.
# The image itself is built and run by deploy.image (deploy/tests/image.sh);
# this test needs no container engine.
set -uo pipefail
src=$(cd "${1:?source dir}" && pwd)
dir=$src/deploy/container
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
command -v cmake >/dev/null && command -v dpkg >/dev/null && command -v apt-cache >/dev/null ||
        { echo "SKIP: needs cmake, dpkg and apt-cache"; exit 77; }

out=$(mktemp -d /tmp/hpwarm-container.XXXXXX)
trap 'rm -rf "$out"' EXIT

if ! ver=$(JOBS=2 "$dir/build-stage.sh" "$src" "$out" 2>&1); then
        echo "$ver"
        echo "FAIL: build-stage.sh"
        exit 1
fi
echo "ok: build stage: $ver"
bin=$out/usr/sbin/hpwarmd
sections=$(objdump -h "$bin")
grep -q '\.debug_info' <<<"$sections" && fail "build-stage.sh left debug info in hpwarmd (not stripped)"

listed=$(grep -v '^#' "$dir/runtime-packages.txt" | grep -v '^$' | sort -u)
libs=$(ldd "$bin" | awk '$2=="=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
[ -n "$libs" ] || fail "ldd found no libraries in $bin"
declare -A needed=()   # package -> a library of it
for l in $libs; do
        real=$(readlink -f "$l")
        pkg=$(dpkg -S "$l" 2>/dev/null || dpkg -S "$real" 2>/dev/null || dpkg -S "${l/#\/lib\//\/usr\/lib\/}" 2>/dev/null)
        pkg=${pkg%%:*}
        pkg=${pkg%%,*}
        if [ -z "$pkg" ]; then
                fail "$l belongs to no Debian package"
                continue
        fi
        needed[$pkg]=$l
done
# shellcheck disable=SC2086
closure=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
        --no-replaces --no-enhances $listed 2>/dev/null | awk '/^[a-z0-9]/ {print $1}' | sed 's/:.*//' | sort -u)
required=$(dpkg-query -W -f='${Package} ${Priority}\n' | awk '$2=="required"{print $1}')
for p in "${!needed[@]}"; do
        if grep -qxF "$p" <<<"$listed"; then
                continue
        elif grep -qxF "$p" <<<"$closure"; then
                continue
        elif grep -qxF "$p" <<<"$required"; then
                continue
        fi
        fail "hpwarmd needs ${needed[$p]} from $p, which the runtime stage does not install (add $p to runtime-packages.txt)"
done
# Direct dependencies only: the packages of the libraries in hpwarmd's DT_NEEDED.
direct=$(objdump -p "$bin" | awk '$1=="NEEDED"{print $2}')
for p in $listed; do
        ok=0
        for so in $direct; do
                [ "$(basename "${needed[$p]:-/nonexistent}")" = "$so" ] && ok=1
        done
        [ "$ok" = 1 ] || fail "runtime-packages.txt lists $p, which provides none of hpwarmd's NEEDED libraries ($(echo $direct))"
done
grep -q 'build-stage.sh' "$dir/Containerfile" || fail "Containerfile does not run build-stage.sh"
grep -q 'runtime-packages.txt' "$dir/Containerfile" || fail "Containerfile does not install runtime-packages.txt"
[ "$failures" = 0 ] || { echo "FAIL: $failures check(s)"; exit 1; }
echo "ok: the runtime stage's packages ($(echo $listed)) cover all ${#needed[@]} library packages ldd lists"
