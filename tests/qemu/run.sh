#!/bin/sh
# run.sh: boot the two-node guest and judge its serial output (ctest qemu.numa).
#
#   run.sh OUTDIR CHECKER HPWARMD [HPWARM]
#
# Builds the guest with prepare.sh, boots it under QEMU (software emulation,
# no KVM) as a q35 machine with two NUMA nodes of 2 GiB, one CPU each, and
# per-node hugepages from the kernel command line, and reads the serial
# console.  Passes only if every expected check printed PASS and the guest
# printed HPWARM-DONE before the time limit.  Expected checks are
# "guest-setup" (init.sh) plus whatever `CHECKER --list` names, so the list
# lives in one place.
#
# Exit 0 pass, 1 fail, 77 skip: only when QEMU is missing or cannot start,
# or when prepare.sh cannot get the kernel (it exits 77 itself).
set -u

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: $0 OUTDIR CHECKER HPWARMD [HPWARM]" >&2; exit 1; }
out=$1 checker=$2
mkdir -p "$out"

# Whole-run limit; the run takes well under a minute when all is well.
TIMEOUT_S=${HPW_QEMU_TIMEOUT:-300}

qemu=$(command -v qemu-system-x86_64) || { echo "SKIP: qemu-system-x86_64 not installed" >&2; exit 77; }
if ! "$qemu" -machine help >/dev/null 2>&1; then
        echo "SKIP: $qemu cannot run" >&2
        exit 77
fi

"$here/prepare.sh" "$@"
rc=$?
[ $rc = 0 ] || exit $rc

log=$out/serial.log
# Node 1 needs a free, 1 GiB-aligned gigabyte for the boot-time 1 GiB page;
# node 0 grows a 1 GiB page at runtime (elastic-1g-best-effort) beside its
# 1 GiB of 2 MiB pages; hence 3 GiB per node.  hugetlb_cma=0:1G asks for a
# CMA area that Debian 12's kernel (CONFIG_CMA off) cannot make: hpwarmd must
# see that /proc/meminfo has no CmaTotal and not trust the command line.
# hugepages=<node>:<count> is per-node syntax (5.14+).
cmdline="console=ttyS0 quiet panic=-1 hugepagesz=2M hugepages=0:512,1:128 hugepagesz=1G hugepages=1:1 hugetlb_cma=0:1G"
echo "run: booting, serial log in $log" >&2
start=$(date +%s)
timeout --kill-after=10 "$TIMEOUT_S" "$qemu" \
        -machine q35 -cpu max -smp 2 -m 6G \
        -accel tcg,thread=multi \
        -object memory-backend-ram,id=m0,size=3G \
        -object memory-backend-ram,id=m1,size=3G \
        -numa node,nodeid=0,cpus=0,memdev=m0 \
        -numa node,nodeid=1,cpus=1,memdev=m1 \
        -nographic -no-reboot -nic none \
        -kernel "$out/vmlinuz" -initrd "$out/initramfs.gz" \
        -append "$cmdline" </dev/null >"$log" 2>&1
qrc=$?
echo "run: QEMU exited $qrc after $(( $(date +%s) - start )) s" >&2

# Show the guest's own lines (and kernel trouble) without the firmware noise.
tr -d '\r' <"$log" | grep -a -E 'HPWARM|^<[0-7]>|hpwarmd|Kernel panic|BUG|Oops|Call Trace' >&2

status=0
if [ $qrc = 124 ] || [ $qrc = 137 ]; then
        echo "FAIL: timed out after $TIMEOUT_S s" >&2
        status=1
elif [ $qrc != 0 ] && ! grep -aq HPWARM-DONE "$log"; then
        if grep -aq -E 'SeaBIOS|Linux version|HPWARM' "$log"; then
                echo "FAIL: QEMU exited $qrc" >&2
                status=1
        else
                echo "SKIP: QEMU could not start the guest (exit $qrc):" >&2
                tail -n 5 "$log" >&2
                exit 77
        fi
fi
if grep -aq 'HPWARM-CHECK FAIL' "$log"; then
        status=1
fi
expected="guest-setup $("$checker" --list)" || { echo "FAIL: $checker --list" >&2; exit 1; }
for name in $expected; do
        if ! tr -d '\r' <"$log" | grep -aq "^HPWARM-CHECK PASS $name\$"; then
                tr -d '\r' <"$log" | grep -aq "^HPWARM-CHECK FAIL $name:" ||
                        echo "FAIL: no line for check $name" >&2
                status=1
        fi
done
if ! grep -aq HPWARM-DONE "$log"; then
        echo "FAIL: the guest never printed HPWARM-DONE" >&2
        status=1
fi
[ $status = 0 ] && echo "run: all $(echo $expected | wc -w) checks passed" >&2
exit $status
