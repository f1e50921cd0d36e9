#!/usr/bin/env bash
# run-daemon.sh: install what is needed, build, and run hpwarmd on this host
# with safe defaults: API on the unix socket /run/hpwarmd/api.sock and on
# 127.0.0.1:7411 (loopback only), pools of 2 MiB pages in a hugetlbfs mount
# (mounted at /dev/hugepages if no hugetlbfs is mounted yet).  Ctrl-C stops it.
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
port=${HPWARM_PORT:-7411}
cat <<MSG
hpwarmd: API on unix:/run/hpwarmd/api.sock and http://127.0.0.1:$port
try:   curl -s http://127.0.0.1:$port/v1/nodes
       curl -s --unix-socket /run/hpwarmd/api.sock http://localhost/v1/health
       build/client/hpwarm nodes
MSG
exec build/server/hpwarmd --listen "127.0.0.1:$port" --socket /run/hpwarmd/api.sock \
  --hugetlbfs "2M=$mnt/hpwarm" --state-dir /var/lib/hpwarmd "$@"
