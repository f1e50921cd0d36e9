#!/bin/sh
# prewarm.sh: example scheduler pre-placement hook built on the hpwarm CLI.
#
# Warms a hugepage pool for a VM on the chosen host and NUMA node, waits for
# it within a deadline, and prints the QEMU arguments that use it on stdout
# (nothing else goes to stdout).  The PUT and the wait are separate steps,
# both within DEADLINE: if the PUT itself fails nothing is released (the name
# may be someone else's pool); if warming fails or the deadline passes, the
# pool is released unless it is claimed, so no hugepages are stranded.  The
# hook exits with hpwarm's code so the scheduler can tell why:
#   0 ok, 1 failed, 2 usage, 3 unreachable, 4 timed out,
#   5 conflict / insufficient hugepages, 6 unauthorized.
#
# Usage: prewarm.sh [--pid PID] VM_NAME NODE SIZE [DEADLINE_SECONDS]
#   --pid PID          the VMM process that will map the pool, when the hook
#                      knows it: the pool is claimed for that process (hpwarm
#                      claim --pid), and the daemon releases it when the
#                      process exits.  Implies HPWARM_CLAIM=1.
# Environment:
#   HPWARM             CLI to run (default: hpwarm on PATH)
#   HPWARM_URL         daemon URL (default: the local unix socket)
#   HPWARM_TOKEN_FILE  bearer token file
#   HPWARM_PAGE_SIZE   page size (default 2M)
#   HPWARM_TTL         seconds the VM has to claim the pool (default 600)
#   HPWARM_CLAIM=1     claim the pool right away (the hook starts the VM itself)
#   HPWARM_VMM_PID     as --pid
set -u

usage() {
        echo "usage: $0 [--pid PID] VM_NAME NODE SIZE [DEADLINE_SECONDS]" >&2
        exit 2
}
vmm_pid=${HPWARM_VMM_PID:-}
case ${1:-} in
--pid) [ $# -ge 2 ] || usage; vmm_pid=$2; shift 2 ;;
--pid=*) vmm_pid=${1#--pid=}; shift ;;
esac
case $vmm_pid in
'') ;;
*[!0-9]*|0) echo "prewarm: --pid: not a process id: '$vmm_pid'" >&2; exit 2 ;;
esac
if [ $# -lt 3 ] || [ $# -gt 4 ]; then usage; fi

hpwarm=${HPWARM:-hpwarm}
name=$1
node=$2
size=$3
deadline=${4:-120}
page_size=${HPWARM_PAGE_SIZE:-2M}
ttl=${HPWARM_TTL:-600}

# Seconds left of DEADLINE since START (both may have fractions); 0 stays
# 0 (no limit), anything else stays above zero so it never reads "none".
left() {
        awk -v s="$1" -v d="$deadline" -v n="$(date +%s.%N)" \
                'BEGIN { if (d == 0) { print 0; exit }
                         l = d - (n - s); if (l < 0.001) l = 0.001; printf "%.3f\n", l }'
}

# Release only a pool whose wait failed, and only when the daemon says it is
# not claimed: a claimed pool belongs to a running VM, and a pool we cannot
# look at is left to its TTL.  Best effort and bounded.
release_unclaimed() {
        st=$("$hpwarm" status "$name" --timeout 10 2>/dev/null) || {
                echo "prewarm: $name: cannot check it; leaving it to its TTL" >&2
                return 0
        }
        if printf '%s\n' "$st" | grep -q '^claimed: *yes$'; then
                echo "prewarm: $name is claimed; not releasing" >&2
                return 0
        fi
        "$hpwarm" release "$name" --ignore-missing --timeout 10 >&2
}

# The PUT alone: if it fails, nothing of ours exists (a 409 or a 4xx may be
# about someone else's pool of this name), so nothing is released.
start=$(date +%s.%N)
"$hpwarm" warm "$name" --node "$node" --size "$size" --page-size "$page_size" \
        --ttl "$ttl" --timeout "$deadline" >&2
rc=$?
if [ $rc -ne 0 ]; then
        echo "prewarm: $name: warm failed (exit $rc)" >&2
        exit $rc
fi

"$hpwarm" wait "$name" --timeout "$(left "$start")" >&2
rc=$?
case $rc in
0) ;;
1|4)
        # Failed or still warming at the deadline: give the memory back.
        echo "prewarm: $name not ready (exit $rc); releasing" >&2
        release_unclaimed
        exit $rc ;;
*)
        # 2, 3, 6: we cannot reach or use the daemon; the TTL covers the pool.
        echo "prewarm: $name: wait failed (exit $rc)" >&2
        exit $rc ;;
esac

args=$("$hpwarm" handoff "$name" --vmm qemu) || {
        rc=$?
        echo "prewarm: $name: no handoff arguments (exit $rc); releasing" >&2
        release_unclaimed
        exit $rc
}
if [ -n "$vmm_pid" ]; then
        # Bound to the VMM's life: released by the daemon when it exits.
        "$hpwarm" claim "$name" --pid "$vmm_pid" >&2 || { rc=$?; release_unclaimed; exit $rc; }
elif [ "${HPWARM_CLAIM:-0}" = 1 ]; then
        "$hpwarm" claim "$name" >&2 || { rc=$?; release_unclaimed; exit $rc; }
fi
printf '%s\n' "$args"
