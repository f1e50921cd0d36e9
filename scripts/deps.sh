#!/usr/bin/env bash
# deps.sh [--run|--test]: install the Debian 12 packages hpwarm needs.
#   --run   what building and running hpwarmd and hpwarm needs (and the tools
#           README's commands use); scripts/run-daemon.sh installs this set.
#   --test  --run plus what the test suite needs; scripts/test.sh installs
#           this set.  The default, for callers from before the split.
#   --list run|test   print that set, one package a line, and change nothing.
# Only missing packages are installed, without recommends, and nothing else
# is upgraded on purpose: no `apt-get upgrade`, present packages are left as
# they are.  When a -dev package needs its runtime library at its own exact
# version (libcurl4-openssl-dev and libcurl4, libsystemd-dev and libsystemd0),
# the installed version is asked for first; only when the archive no longer
# has it does apt upgrade that library, and this script says so.
# Idempotent and quiet when everything is present; needs root to install.
set -euo pipefail

# Building and running (one package per word; add to the end).
run_pkgs=(
  build-essential cmake pkg-config
  libmicrohttpd-dev libcjson-dev libnuma-dev libcurl4-openssl-dev libsystemd-dev libgnutls28-dev
  libxml2-dev                         # hpwarm libvirt-hook reads domain XML
  curl jq                             # README's curl examples
)
# Testing, on top of run_pkgs (one package per word; add to the end).
test_pkgs=(
  clang libclang-rt-14-dev            # sanitizers and libFuzzer
  python3 python3-yaml openssl        # integration tests, OpenAPI check, test certificates
  qemu-system-x86 busybox-static cpio # two-node QEMU guest test (qemu.numa)
  wrk strace                          # load test; the bench cross-checks QEMU with strace
  systemd                             # systemd-analyze verify of the units
  debhelper dpkg-dev fakeroot lintian # package.deb: build the .debs (debian/) and lint them
  adduser                             # package.deb installs hpwarmd, whose postinst adds a group
  prometheus                          # promtool (deploy.prometheus); the server itself (deploy.prometheus_live)
  abigail-tools                       # abidiff, abidw: client.abi checks libhpwarm against its ABI baseline
  # libvirt tests: libvirtd, virtlogd, virsh and the QEMU driver;
  # shellcheck lints the hook
  libvirt-daemon-system libvirt-clients libvirt-daemon-driver-qemu shellcheck
  # API contract: api.lint runs Redocly (npm ci from tests/api/lint's lock),
  # api.responses validates real answers against the schema with jsonschema
  nodejs npm python3-jsonschema
  # deploy.image: deploy/container/build-image.sh builds and runs the
  # DaemonSet's image with podman (runc: crun refuses hybrid cgroups) on a
  # base mmdebstrap makes from this host's apt sources
  podman runc mmdebstrap
  # placement.*: OpenStack Placement 8.0 and Keystone 22 from Debian, run by
  # the tests as plain WSGI processes (tests/integration/openstack.py)
  python3-placement python3-keystone python3-keystonemiddleware
  # openstack.nova: a Nova cloud on this machine (tests/openstack): Nova,
  # Glance and RabbitMQ from Debian, libvirt's Python binding for
  # nova-compute, qemu-img for its images
  python3-nova python3-glance python3-libvirt rabbitmq-server qemu-utils
)

set_=test
list=0
case ${1:-} in
--run) set_=run ;;
--test|"") set_=test ;;
--list)
  case ${2:-} in run|test) set_=$2; list=1 ;; *) echo "usage: $0 --list run|test" >&2; exit 2 ;; esac ;;
-h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
*) echo "usage: $0 [--run|--test|--list run|test]" >&2; exit 2 ;;
esac
pkgs=("${run_pkgs[@]}")
[ "$set_" = test ] && pkgs+=("${test_pkgs[@]}")
if [ "$list" = 1 ]; then
  printf '%s\n' "${pkgs[@]}"
  exit 0
fi

installed() {
  # A Node.js from elsewhere (NodeSource's nodejs package provides and
  # conflicts with npm) is kept: installing Debian's npm would replace it.
  case $1 in
  nodejs) command -v node >/dev/null && return 0 ;;
  npm) command -v npm >/dev/null && return 0 ;;
  esac
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
}

missing=()
for p in "${pkgs[@]}"; do
  installed "$p" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing ${missing[*]}; run as root (or: sudo $0 ${1:-})" >&2
  exit 1
fi

echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# Package scripts must not start services here (libvirt-daemon-system's would
# start a host libvirtd through its init script where systemd is not PID 1;
# the tests start their own, privately).  policy-rc.d exit 101 = "not now",
# honoured by invoke-rc.d; only put in place when none exists, and removed.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod 0755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt_get() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }
apt_get update -qq

# Installed packages an install of ARGS would upgrade: "Inst NAME [OLDVER]".
would_upgrade() {
  apt_get -s install -y --no-install-recommends "$@" 2>/dev/null |
    awk '$1 == "Inst" && $3 ~ /^\[/ { print $2 }'
}
args=("${missing[@]}")
# (A simulation that fails, e.g. an unknown name, is left to the real
# install below to report.)
upgrades=$(would_upgrade "${args[@]}" || true)
if [ -n "$upgrades" ]; then
  # Ask for the installed versions, and for a missing package built from
  # the same source (same version string) that version too; keep them if
  # that resolves.
  pinned=()
  for m in "${args[@]}"; do
    pick=$m
    for p in $upgrades; do
      v=$(dpkg-query -W -f='${Version}' "$p")
      if apt-cache madison "$m" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | grep -qxF "$v"; then
        pick="$m=$v"
        break
      fi
    done
    pinned+=("$pick")
  done
  for p in $upgrades; do
    pinned+=("$p=$(dpkg-query -W -f='${Version}' "$p")")
  done
  if apt_get -s install -y --no-install-recommends "${pinned[@]}" >/dev/null 2>&1; then
    args=("${pinned[@]}")
    upgrades=""
  else
    echo "deps: the archive no longer has the installed versions; also upgrading:" $upgrades >&2
  fi
fi
apt_get install -y -qq --no-install-recommends "${args[@]}" >/dev/null
