#!/usr/bin/env bash
# deploy.systemd-verify: the units in deploy/systemd load cleanly.
#
# Usage: systemd-verify.sh UNIT_DIR HPWARMD_BINARY [HPWARM_BINARY]
#
# `systemd-analyze verify` checks that ExecStart= points at an executable, so
# the units are copied to a temporary directory with /usr/sbin/hpwarmd
# (and /usr/bin/hpwarm, hpwarm-placement.service's) replaced by the
# binaries just built.  verify exits 0 on unknown keys or
# syscall groups (it only warns), so any warning fails the test too.  Then
# `systemd-analyze security --offline` must rate the service's exposure at
# or below EXPOSURE_MAX, so the hardening cannot silently erode.
# Exits 77 (skipped) where systemd-analyze does not exist.
set -u
EXPOSURE_MAX=3.0
threshold=30   # systemd-analyze takes exposure x 10

unit_dir=${1:?unit dir}
binary=${2:?hpwarmd binary}
cli=${3:-}
if ! command -v systemd-analyze >/dev/null; then
        echo "SKIP: systemd-analyze not installed" >&2
        exit 77
fi
if [ ! -x "$binary" ]; then
        echo "FAIL: $binary is not an executable (build hpwarmd first)" >&2
        exit 1
fi

tmp=$(mktemp -d /tmp/hpwarm-units.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$unit_dir"/*.service "$unit_dir"/*.socket "$unit_dir"/*.mount "$tmp"/
sed -i "s#/usr/sbin/hpwarmd#$binary#g" "$tmp"/*.service
if [ -n "$cli" ]; then
        sed -i "s#/usr/bin/hpwarm #$cli #g" "$tmp"/*.service
fi

rc=0
units=("$tmp"/*.service "$tmp"/*.socket "$tmp"/*.mount)
# --man=no: man pages are installed by `cmake --install`, not present here.
out=$(systemd-analyze verify --man=no "${units[@]}" 2>&1) || rc=1
if [ -n "$out" ]; then
        echo "$out"
        echo "FAIL: systemd-analyze verify reported problems" >&2
        rc=1
fi

if systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
        for u in "$tmp"/*.service; do
                if ! sec=$(systemd-analyze security --offline=yes --threshold="$threshold" "$u" 2>&1); then
                        echo "$sec" | tail -n 25
                        echo "FAIL: $(basename "$u") exposure above $EXPOSURE_MAX" >&2
                        rc=1
                else
                        echo "$sec" | tail -n 1
                fi
        done
fi
[ "$rc" = 0 ] && echo "ok: ${#units[@]} units verified"
exit "$rc"
