#!/bin/sh
# Install libhpwarm into a temporary prefix with the client's cmake install
# script, then build and run tests/client/consumer.c against it, once through
# pkg-config (shared) and once against the static archive.
# Usage: install_check.sh BUILD_CLIENT_DIR SOURCE_TESTS_CLIENT_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

command -v pkg-config >/dev/null || { echo "SKIP: no pkg-config"; exit 77; }
cmake -DCMAKE_INSTALL_PREFIX="$tmp/prefix" -P "$build/cmake_install.cmake" >/dev/null
pc=$(find "$tmp/prefix" -name hpwarm.pc)
[ -n "$pc" ] || { echo "hpwarm.pc not installed"; exit 1; }
[ -x "$tmp/prefix/bin/hpwarm" ] || { echo "hpwarm CLI not installed"; exit 1; }
[ -f "$tmp/prefix/share/bash-completion/completions/hpwarm" ] || { echo "bash completion not installed"; exit 1; }
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
# shellcheck disable=SC2046,SC2086
cc ${CONSUMER_CFLAGS:-} -Wall -Wextra -Werror -o "$tmp/consumer" "$src/consumer.c" $(pkg-config --cflags --libs hpwarm)
LD_LIBRARY_PATH=$(pkg-config --variable=libdir hpwarm) "$tmp/consumer"
# shellcheck disable=SC2046,SC2086
cc ${CONSUMER_CFLAGS:-} -o "$tmp/consumer_static" "$src/consumer.c" $(pkg-config --cflags hpwarm) \
        "$(pkg-config --variable=libdir hpwarm)/libhpwarm.a" $(pkg-config --libs libcurl libcjson) -lm
"$tmp/consumer_static"
# Only hpw_* symbols leave the shared library.
if nm -D --defined-only "$(pkg-config --variable=libdir hpwarm)/libhpwarm.so" | awk '{print $3}' | grep -v '^hpw_'; then
        echo "non-hpw_ symbols exported"
        exit 1
fi
echo ok
