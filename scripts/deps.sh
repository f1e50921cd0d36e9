#!/usr/bin/env bash
# deps.sh: install the Debian 12 packages hpwarm builds and tests with.
# Idempotent and quiet when everything is present; needs root to install.
set -euo pipefail
pkgs=(
  build-essential cmake pkg-config
  libmicrohttpd-dev libcjson-dev libnuma-dev libcurl4-openssl-dev libsystemd-dev libgnutls28-dev
  clang libclang-rt-14-dev           # sanitizers and libFuzzer
  python3 python3-yaml curl          # integration tests, OpenAPI check
  qemu-system-x86 busybox-static cpio # two-node QEMU guest test (qemu.numa)
  wrk strace                         # load test; the bench cross-checks QEMU with strace
  systemd                            # systemd-analyze verify of the units
  debhelper dpkg-dev fakeroot lintian # package.deb: build the .debs (debian/) and lint them
  adduser                            # package.deb installs hpwarmd, whose postinst adds a group
  prometheus                         # promtool: deploy.prometheus checks the alert rules and their tests
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
