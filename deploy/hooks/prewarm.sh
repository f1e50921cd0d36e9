#!/bin/sh
# prewarm.sh: example scheduler pre-placement hook built on the hpwarm CLI.
#
# Warms a hugepage pool for a VM on the chosen host and NUMA node, waits for
# it within a deadline, and prints the QEMU arguments that use it on stdout
# (nothing else goes to stdout).  If warming fails or the deadline passes,
# the pool is released so no hugepages are stranded, and the hook exits with
# hpwarm's code so the scheduler can tell why:
#   0 ok, 1 failed, 2 usage, 3 unreachable, 4 timed out,
#   5 conflict / insufficient hugepages, 6 unauthorized.
#
# Usage: prewarm.sh VM_NAME NODE SIZE [DEADLINE_SECONDS]
# Environment:
#   HPWARM             CLI to run (default: hpwarm on PATH)
#   HPWARM_URL         daemon URL (default: the local unix socket)
#   HPWARM_TOKEN_FILE  bearer token file
#   HPWARM_PAGE_SIZE   page size (default 2M)
#   HPWARM_TTL         seconds the VM has to claim the pool (default 600)
#   HPWARM_CLAIM=1     claim the pool right away (the hook starts the VM itself)
set -u

usage() {
        echo "usage: $0 VM_NAME NODE SIZE [DEADLINE_SECONDS]" >&2
        exit 2
}
if [ $# -lt 3 ] || [ $# -gt 4 ]; then usage; fi

hpwarm=${HPWARM:-hpwarm}
name=$1
node=$2
size=$3
deadline=${4:-120}
page_size=${HPWARM_PAGE_SIZE:-2M}
ttl=${HPWARM_TTL:-600}

release() {
        # Best effort, bounded: a release that cannot reach the daemon is
        # covered by the pool's TTL.
        "$hpwarm" release "$name" --timeout 10 >&2 || true
}

"$hpwarm" warm "$name" --node "$node" --size "$size" --page-size "$page_size" \
        --ttl "$ttl" --wait --timeout "$deadline" >&2
rc=$?
case $rc in
0) ;;
1|4)
        # Failed or still warming at the deadline: give the memory back.
        echo "prewarm: $name not ready (exit $rc); releasing" >&2
        release
        exit $rc ;;
*)
        # 5: a different pool has this name (not ours to delete); 2, 3, 6:
        # nothing was created, or we cannot reach or use the daemon.
        echo "prewarm: $name: warm failed (exit $rc)" >&2
        exit $rc ;;
esac

args=$("$hpwarm" handoff "$name" --vmm qemu) || {
        rc=$?
        echo "prewarm: $name: no handoff arguments (exit $rc); releasing" >&2
        release
        exit $rc
}
if [ "${HPWARM_CLAIM:-0}" = 1 ]; then
        "$hpwarm" claim "$name" >&2 || { rc=$?; release; exit $rc; }
fi
printf '%s\n' "$args"
