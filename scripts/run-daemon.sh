#!/usr/bin/env bash
# run-daemon.sh: install what is needed, build, and run hpwarmd on this host
# with safe defaults: API on the unix socket /run/hpwarmd/api.sock (mode 0660,
# root's group), pools of 2 MiB pages in a hugetlbfs mount (mounted at
# /dev/hugepages if no hugetlbfs is mounted yet).  Ctrl-C stops it.
# HPWARM_PORT=7411 adds a TCP listener on 127.0.0.1 without authentication
# (--allow-unauthenticated-tcp: any local user gets admin access); extra
# arguments go to hpwarmd, e.g. --token-file FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null

mnt=$(awk '$3 == "hugetlbfs" && $4 !~ /pagesize=1024M/ { print $2; exit }' /proc/mounts)
if [ -z "$mnt" ]; then
  mnt=/dev/hugepages
  mkdir -p "$mnt"
  mount -t hugetlbfs -o pagesize=2M none "$mnt"
  echo "mounted hugetlbfs (2 MiB pages) at $mnt"
fi
tcp=()
where="unix:/run/hpwarmd/api.sock"
if [ -n "${HPWARM_PORT:-}" ]; then
  tcp=(--listen "127.0.0.1:$HPWARM_PORT" --allow-unauthenticated-tcp)
  where="$where and http://127.0.0.1:$HPWARM_PORT (no authentication)"
fi
cat <<MSG
hpwarmd: API on $where
try:   curl -s --unix-socket /run/hpwarmd/api.sock http://localhost/v1/nodes
       build/client/hpwarm nodes
MSG
exec build/server/hpwarmd --socket /run/hpwarmd/api.sock "${tcp[@]}" \
  --hugetlbfs "2M=$mnt/hpwarm" --state-dir /var/lib/hpwarmd "$@"
