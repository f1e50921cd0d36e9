#!/bin/sh
# Install libhpwarm into a temporary prefix with the client's cmake install
# script, then build tests/client/consumer.c (a small scheduler) against it
# with `pkg-config --cflags --libs libhpwarm`, once shared and once against
# the static archive, and run it: offline, and, when FAKE_URL names a
# daemon (run_install_check.py starts a fake one), placing, warming,
# waiting, claiming and releasing a pool there; when REAL_URL names a real
# hpwarmd (run_scheduler_real.py), `consumer --exact` there.  Also: the hpwarm alias
# module, the generated problem header, the catalog, the section-3 pages,
# symbols only hpw_* and every one in a HPWARM_0.N version node.
# Usage: install_check.sh BUILD_CLIENT_DIR SOURCE_TESTS_CLIENT_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v pkg-config >/dev/null || { echo "SKIP: no pkg-config"; exit 77; }
cmake -DCMAKE_INSTALL_PREFIX="$tmp/prefix" -P "$build/cmake_install.cmake" >/dev/null
pc=$(find "$tmp/prefix" -name libhpwarm.pc)
[ -n "$pc" ] || { echo "libhpwarm.pc not installed"; exit 1; }
[ -x "$tmp/prefix/bin/hpwarm" ] || { echo "hpwarm CLI not installed"; exit 1; }
[ -f "$tmp/prefix/share/bash-completion/completions/hpwarm" ] || { echo "bash completion not installed"; exit 1; }
[ -f "$tmp/prefix/include/hpwarm_problems.h" ] || { echo "hpwarm_problems.h not installed"; exit 1; }
[ -f "$tmp/prefix/share/hpwarm/problems.json" ] || { echo "problems.json not installed"; exit 1; }
for m in hpwarm hpw_new hpw_last_problem hpw_nodes hpw_warm hpw_stock_get hpw_handoff hpw_fleet_get hpw_prom_place; do
        [ -f "$tmp/prefix/share/man/man3/$m.3" ] || { echo "man page $m(3) not installed"; exit 1; }
done
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
# The old module name still works, and means the same.
[ "$(pkg-config --cflags --libs hpwarm)" = "$(pkg-config --cflags --libs libhpwarm)" ] ||
        { echo "pkg-config hpwarm differs from libhpwarm"; exit 1; }
# shellcheck disable=SC2046,SC2086
cc ${CONSUMER_CFLAGS:-} -std=c11 -Wall -Wextra -Werror -o "$tmp/consumer" "$src/consumer.c" \
        $(pkg-config --cflags --libs libhpwarm)
libdir=$(pkg-config --variable=libdir libhpwarm)
LD_LIBRARY_PATH=$libdir "$tmp/consumer"
if [ -n "${FAKE_URL:-}" ]; then
        LD_LIBRARY_PATH=$libdir "$tmp/consumer" "$FAKE_URL" sched-vm 16777216
fi
if [ -n "${REAL_URL:-}" ]; then
        LD_LIBRARY_PATH=$libdir "$tmp/consumer" --exact "$REAL_URL" sched-exact
fi
# shellcheck disable=SC2046,SC2086
cc ${CONSUMER_CFLAGS:-} -o "$tmp/consumer_static" "$src/consumer.c" $(pkg-config --cflags libhpwarm) \
        "$libdir/libhpwarm.a" $(pkg-config --libs libcurl libcjson) -lm
"$tmp/consumer_static"
# Only hpw_* symbols leave the shared library, each in a version node
# (HPWARM_0.1, or the node of the release that added it: libhpwarm.map).
syms=$(nm -D --defined-only "$libdir/libhpwarm.so" | awk '$2 != "A" {print $3}')
if echo "$syms" | grep -v '^hpw_'; then
        echo "non-hpw_ symbols exported"
        exit 1
fi
if echo "$syms" | grep -Ev '@@HPWARM_0\.[0-9]+$'; then
        echo "symbols without a HPWARM_0.N version node"
        exit 1
fi
echo ok
