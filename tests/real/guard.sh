#!/usr/bin/env bash
# guard.sh [--gigantic] CMD [ARGS...]: run a test that touches the real
# kernel's hugepages.
#
# - takes one host-wide lock, so no two such tests (from ctest -j, or two
#   checkouts on one machine) change the counts at the same time;
# - records every node's nr_hugepages for every page size, and restores them
#   when CMD exits, however it exits (failure, signal, crash);
# - exports HPW_TEST_HUGETLBFS: a private hugetlbfs mount (2 MiB pages) that
#   is unmounted afterwards, after removing any file left in it;
# - with --gigantic, also HPW_TEST_HUGETLBFS_1G: a second private hugetlbfs
#   mount of 1 GiB pages, made and removed the same way, where the host has
#   that page size (left unset, with a line saying why, where it has not:
#   the test then says it skips);
# - exits 77 (ctest "skipped") where hugepages cannot be used at all.
#
# Restoring must outlive the guard itself: on TIMEOUT ctest kills the test's
# whole process tree (by parent pid, SIGSTOP then SIGKILL, whatever the
# process groups or sessions), and a SIGKILL runs no trap.  So what to
# restore is written down before anything changes (a record next to the
# lock), and a keeper that has left the tree (double fork, its own session)
# and holds the lock waits for the guard to end: when the guard ended
# without restoring (the record is still there), the keeper kills what is
# left of the test (CMD runs in a process group of its own), restores from
# the record and only then lets the lock go.  Should the keeper be killed
# too, the next guarded test finds the record and restores it first.
# tests/real/guard_killed.py proves it.
#
# HPW_GUARD_LOCK, HPW_GUARD_NODES and HPW_GUARD_FSTYPE=tmpfs are for
# guard_killed.py's run on a stand-in tree only (its own lock, plain files
# for the counts, a tmpfs mount): the real tests never set them.
set -u
lock=${HPW_GUARD_LOCK:-/run/lock/hpwarm-real-tests.lock}
# What a guard that ended without restoring left to restore, and what its
# keeper said (shown by the next guard).
record=${lock%.lock}.restore
keeper_log=${lock%.lock}.keeper.log
nodes=${HPW_GUARD_NODES:-/sys/devices/system/node}
fstype=${HPW_GUARD_FSTYPE:-hugetlbfs}
# How long a restore waits for pages still in use (a killed test's
# processes give theirs back as they die) before it warns.
RESTORE_WAIT_S=20

# Put back what the record RECORD says: end the test's process group, empty
# and unmount the mount, write back every count.  Idempotent: a restore cut
# short is run again by the keeper or the next guard.
restore_record() {
        local rec=$1 kind a b deadline now ok
        [ -s "$rec" ] || return 0
        while read -r kind a b; do
                [ "$kind" = group ] || continue
                kill -KILL -- "-$a" 2>/dev/null
                deadline=$((SECONDS + RESTORE_WAIT_S))
                while kill -0 -- "-$a" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
        done <"$rec"
        while read -r kind a b; do
                [ "$kind" = mount ] || continue
                if mountpoint -q "$a"; then
                        find "$a" -type f -delete 2>/dev/null
                        umount "$a" 2>/dev/null || umount -l "$a"
                fi
                rmdir "$a" 2>/dev/null
        done <"$rec"
        deadline=$((SECONDS + RESTORE_WAIT_S))
        while :; do
                ok=1
                while read -r kind a b; do
                        [ "$kind" = count ] || continue
                        now=$(cat "$a" 2>/dev/null)
                        if [ "$now" != "$b" ]; then
                                echo "$b" >"$a" 2>/dev/null
                                now=$(cat "$a" 2>/dev/null)
                        fi
                        [ "$now" = "$b" ] || ok=0
                done <"$rec"
                [ $ok = 1 ] || [ $SECONDS -ge $deadline ] || { sleep 0.2; continue; }
                break
        done
        while read -r kind a b; do
                [ "$kind" = count ] || continue
                now=$(cat "$a" 2>/dev/null)
                [ "$now" = "$b" ] || echo "guard: WARNING $a is $now, was $b" >&2
        done <"$rec"
        rm -f "$rec"
}

# Field N (after the command name) of /proc/PID/stat: 1 is the state, 20
# the start time, which tells a pid reused apart.
proc_field() {
        local s n=$2
        s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
        s=${s##*) }
        set -- $s
        [ $# -ge "$n" ] || return 1
        shift $((n - 1))
        echo "$1"
}

# guard.sh --keep PID START: the keeper (fd 9, the lock, inherited).
if [ "${1:-}" = --keep ]; then
        trap '' INT TERM HUP
        pid=$2 start=$3
        echo "keeper $$" >>"$record"
        while [ "$(proc_field "$pid" 20)" = "$start" ] && [ "$(proc_field "$pid" 1)" != Z ]; do
                sleep 0.2
        done
        if [ -s "$record" ]; then
                echo "guard keeper: guard $pid ended without restoring; restoring from $record ($(date -u +%T))"
                restore_record "$record" 2>&1
        fi
        exit 0
fi

gigantic=
if [ "${1:-}" = --gigantic ]; then
        gigantic=1
        shift
fi

exec 9>"$lock" || { echo "guard: cannot open $lock" >&2; exit 77; }
flock 9

if [ "$(id -u)" != 0 ] || [ ! -w "$nodes/node0/hugepages/hugepages-2048kB/nr_hugepages" ]; then
        echo "SKIP: needs root and a writable nr_hugepages" >&2
        exit 77
fi

if [ -s "$keeper_log" ]; then
        sed 's/^/guard: (an earlier guard'"'"'s keeper) /' "$keeper_log" >&2
        rm -f "$keeper_log"
fi
if [ -s "$record" ]; then
        echo "guard: a guarded test before this one ended without restoring; restoring from $record" >&2
        restore_record "$record"
fi

mnt=$(mktemp -d /tmp/hpwarm-test-hugetlbfs.XXXXXX)
mnt1g=
if [ -n "$gigantic" ] && [ -d "$nodes/node0/hugepages/hugepages-1048576kB" ]; then
        mnt1g=$(mktemp -d /tmp/hpwarm-test-hugetlbfs-1g.XXXXXX)
fi
{
        for f in "$nodes"/node*/hugepages/hugepages-*/nr_hugepages; do
                echo "count $f $(cat "$f")"
        done
        echo "mount $mnt"
        [ -z "$mnt1g" ] || echo "mount $mnt1g"
} >"$record.new" && mv "$record.new" "$record" || { echo "guard: cannot write $record" >&2; exit 1; }

# The keeper: out of the test's process tree (the subshell exits at once),
# in a session of its own, holding the lock.
( setsid "$0" --keep $$ "$(proc_field $$ 20)" </dev/null >>"$keeper_log" 2>&1 & )
# Nothing changes before it watches (a bound, not a wait for speed: it
# says so within milliseconds).
for _ in $(seq 100); do
        grep -q '^keeper ' "$record" && break
        sleep 0.1
done
grep -q '^keeper ' "$record" || echo "guard: WARNING the keeper did not start; a kill of this guard will be restored by the next one" >&2

restore() {
        local rc=$?
        trap - EXIT INT TERM
        if [ -n "${child:-}" ]; then kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; fi
        restore_record "$record"
        exit "$rc"
}
trap restore EXIT
trap 'exit 130' INT TERM

# mount_private DIR PAGESIZE: a private hugetlbfs (the stand-in's tmpfs) on DIR.
mount_private() {
        if [ "$fstype" = tmpfs ]; then
                mount -t tmpfs -o size=16M none "$1"
        else
                mount -t hugetlbfs -o pagesize="$2" none "$1"
        fi
}

mount_private "$mnt" 2M || {
        echo "SKIP: cannot mount $fstype" >&2
        exit 77
}
export HPW_TEST_HUGETLBFS="$mnt"
if [ -n "$gigantic" ]; then
        if [ -z "$mnt1g" ]; then
                echo "guard: no 1 GiB hugetlbfs: node0 has no hugepages-1048576kB" >&2
        elif mount_private "$mnt1g" 1G; then
                export HPW_TEST_HUGETLBFS_1G="$mnt1g"
        else
                echo "guard: no 1 GiB hugetlbfs: cannot mount one on $mnt1g" >&2
        fi
fi
# In a process group of its own (what the keeper kills should the guard
# die first), without the lock's descriptor (a process the test leaks must
# not hold the lock).
setsid "$@" 9>&- &
child=$!
echo "group $child" >>"$record"
wait "$child"
rc=$?
child=
exit "$rc"
