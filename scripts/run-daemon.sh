#!/usr/bin/env bash
# run-daemon.sh [HPWARMD OPTIONS...]: install what building and running
# needs (scripts/deps.sh --run), build, install hpwarmd and hpwarm to
# $PREFIX (default /usr/local, so both are on root's PATH), and run hpwarmd
# in the foreground on this host (Ctrl-C stops it) with safe defaults: the
# API on the unix socket /run/hpwarmd/api.sock only (mode 0660, root's
# group), pools of 2 MiB pages in a hugetlbfs mount (one is mounted at
# /dev/hugepages if none is mounted there yet), state in /var/lib/hpwarmd.
# Extra arguments go to hpwarmd, e.g. --token-file FILE.  Needs root.
# Environment: PREFIX, HPWARM_SOCKET, HPWARM_STATE_DIR, HPWARM_HUGETLBFS (an
# existing 2 MiB hugetlbfs mount to use instead of /dev/hugepages);
# HPWARM_PORT=7411 adds a TCP listener on 127.0.0.1 without authentication
# (--allow-unauthenticated-tcp: any local user gets admin access).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "run-daemon.sh: hpwarmd changes hugepage pools and mounts hugetlbfs: run it as root" \
       "(sudo $0, or as root without sudo)" >&2
  exit 1
fi
prefix=${PREFIX:-/usr/local}
./scripts/deps.sh --run
echo "building..." >&2
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
cmake --install build --prefix "$prefix" >/dev/null
echo "installed $prefix/sbin/hpwarmd and $prefix/bin/hpwarm" >&2

sock=${HPWARM_SOCKET:-/run/hpwarmd/api.sock}
state=${HPWARM_STATE_DIR:-/var/lib/hpwarmd}
mnt=${HPWARM_HUGETLBFS:-/dev/hugepages}
if ! awk -v m="$mnt" '$2 == m && $3 == "hugetlbfs" && $4 !~ /pagesize=1024M/ { f = 1 } END { exit !f }' /proc/mounts; then
  if [ -n "${HPWARM_HUGETLBFS:-}" ]; then
    echo "run-daemon.sh: HPWARM_HUGETLBFS=$mnt is not a 2 MiB hugetlbfs mount" >&2
    exit 1
  fi
  mkdir -p "$mnt"
  mount -t hugetlbfs -o pagesize=2M none "$mnt"
  echo "mounted hugetlbfs (2 MiB pages) at $mnt (umount $mnt when done)" >&2
fi
tcp=()
where="unix:$sock"
if [ -n "${HPWARM_PORT:-}" ]; then
  tcp=(--listen "127.0.0.1:$HPWARM_PORT" --allow-unauthenticated-tcp)
  where="$where and http://127.0.0.1:$HPWARM_PORT (no authentication)"
fi
free2m=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages 2>/dev/null || echo 0)
cat <<MSG
hpwarmd: API on $where ($free2m free 2 MiB pages now)
in another shell, as root:
       hpwarm health
       hpwarm nodes
       hpwarm warm vm-42 --node 0 --size 1G --reserve --wait --timeout 60
MSG
exec "$prefix/sbin/hpwarmd" --socket "$sock" "${tcp[@]}" --hugetlbfs "2M=$mnt/hpwarm" --state-dir "$state" "$@"
