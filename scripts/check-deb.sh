#!/usr/bin/env bash
# check-deb.sh BUILD_DIR: build the Debian package with CPack into a temp dir
# and check it holds the daemon, the CLI, the library, the units and man pages.
set -euo pipefail
build=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
command -v dpkg-deb >/dev/null || { echo "SKIP: no dpkg-deb"; exit 77; }
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
deb=$(ls "$out"/*.deb)
contents=$(dpkg-deb -c "$deb")
for f in ./usr/sbin/hpwarmd ./usr/bin/hpwarm ./usr/include/hpwarm.h ./usr/share/man/man8/hpwarmd.8 \
         ./usr/share/man/man1/hpwarm.1 hpwarm.pc hpwarmd.service hpwarmd.socket libhpwarm.so; do
  grep -qF -- "$f" <<<"$contents" || { echo "missing from $(basename "$deb"): $f"; exit 1; }
done
dpkg-deb -f "$deb" Depends | grep -q libmicrohttpd || { echo "Depends lacks libmicrohttpd"; exit 1; }
echo "ok: $(basename "$deb")"
