#!/usr/bin/env bash
# guard.sh CMD [ARGS...]: run a test that touches the real kernel's hugepages.
#
# - takes one host-wide lock, so no two such tests (from ctest -j, or two
#   checkouts on one machine) change the counts at the same time;
# - records every node's nr_hugepages for every page size, and restores them
#   when CMD exits, however it exits (failure, signal, crash);
# - exports HPW_TEST_HUGETLBFS: a private hugetlbfs mount (2 MiB pages) that
#   is unmounted afterwards, after removing any file left in it;
# - exits 77 (ctest "skipped") where hugepages cannot be used at all.
set -u
lock=/run/lock/hpwarm-real-tests.lock
exec 9>"$lock" || { echo "guard: cannot open $lock" >&2; exit 77; }
flock 9

nodes=/sys/devices/system/node
if [ "$(id -u)" != 0 ] || [ ! -w "$nodes/node0/hugepages/hugepages-2048kB/nr_hugepages" ]; then
        echo "SKIP: needs root and a writable nr_hugepages" >&2
        exit 77
fi

declare -A saved
for f in "$nodes"/node*/hugepages/hugepages-*/nr_hugepages; do
        saved[$f]=$(cat "$f")
done
mnt=$(mktemp -d /tmp/hpwarm-test-hugetlbfs.XXXXXX)
mounted=0

restore() {
        local rc=$?
        trap - EXIT INT TERM
        if [ -n "${child:-}" ]; then kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; fi
        if [ "$mounted" = 1 ]; then
                find "$mnt" -type f -delete 2>/dev/null
                umount "$mnt" 2>/dev/null || umount -l "$mnt"
        fi
        rmdir "$mnt" 2>/dev/null
        for f in "${!saved[@]}"; do
                echo "${saved[$f]}" > "$f" 2>/dev/null
                now=$(cat "$f")
                [ "$now" = "${saved[$f]}" ] || echo "guard: WARNING $f is $now, was ${saved[$f]}" >&2
        done
        exit "$rc"
}
trap restore EXIT
trap 'exit 130' INT TERM

if mount -t hugetlbfs -o pagesize=2M none "$mnt"; then
        mounted=1
else
        echo "SKIP: cannot mount hugetlbfs" >&2
        exit 77
fi
export HPW_TEST_HUGETLBFS="$mnt"
"$@" &
child=$!
wait "$child"
rc=$?
child=
exit "$rc"
