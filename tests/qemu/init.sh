#!/bin/busybox sh
# /init of the two-node test guest (packed by prepare.sh, booted by run.sh).
#
# Sets up what hpwarmd needs (proc, sys, dev, a hugetlbfs mount per page size,
# loopback), checks that the machine is the one run.sh asked QEMU for, then
# hands over to hpw-qemu-check, which starts hpwarmd and runs the API checks.
# Every check prints one "HPWARM-CHECK PASS|FAIL name" line; HPWARM-DONE
# marks the end; then the guest powers off.  Should /init itself die, the
# kernel panics, panic=-1 reboots and QEMU's -no-reboot ends the run.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin

PORT=8080   # the guest is a closed box: a fixed port is safe here
setup_err=

mount -t proc proc /proc || setup_err="$setup_err mount-proc"
mount -t sysfs sysfs /sys || setup_err="$setup_err mount-sys"
mount -t devtmpfs devtmpfs /dev || setup_err="$setup_err mount-dev"
mkdir -p /mnt/huge2m /mnt/huge1g /tmp/state
mount -t hugetlbfs -o pagesize=2M none /mnt/huge2m || setup_err="$setup_err hugetlbfs-2M"
mount -t hugetlbfs -o pagesize=1G none /mnt/huge1g || setup_err="$setup_err hugetlbfs-1G"
mkdir -p /mnt/huge2m/hpwarm /mnt/huge1g/hpwarm
ip link set lo up || setup_err="$setup_err lo"

# What the guest looks like, for whoever reads a failed log.
nodes=/sys/devices/system/node
for n in "$nodes"/node[0-9]*; do
        line="HPWARM-INFO ${n##*/} cpus=$(cat "$n/cpulist")"
        for h in "$n"/hugepages/hugepages-*; do
                line="$line ${h##*hugepages-}=$(cat "$h/nr_hugepages")/$(cat "$h/free_hugepages")"
        done
        echo "$line"
done

# The machine run.sh asked for: node0 = cpu 0, node1 = cpu 1, 512 2 MiB pages
# on node 0 and 128 on node 1, the boot-time 1 GiB page on node 1.  If this fails, the API checks
# below fail for a reason that is not hpwarmd's.
want="node0:0:512:0 node1:1:128:1"
got=
for n in "$nodes"/node[0-9]*; do
        got="$got ${n##*/}:$(cat "$n/cpulist"):$(cat "$n/hugepages/hugepages-2048kB/nr_hugepages"):$(cat "$n/hugepages/hugepages-1048576kB/nr_hugepages" 2>/dev/null)"
done
got=${got# }
if [ -n "$setup_err" ]; then
        echo "HPWARM-CHECK FAIL guest-setup: failed:$setup_err"
elif [ "$got" != "$want" ]; then
        echo "HPWARM-CHECK FAIL guest-setup: nodes are \"$got\", expected \"$want\" (node:cpus:2M:1G)"
else
        echo "HPWARM-CHECK PASS guest-setup"
fi

echo "HPWARM-INFO $(grep -E "^Cma(Total|Free)" /proc/meminfo | tr -s " " | tr "\n" " ")"
timeout 240 /bin/hpw-qemu-check --port "$PORT" -- /bin/hpwarmd \
        --listen "127.0.0.1:$PORT" --allow-unauthenticated-tcp \
        --hugetlbfs 2M=/mnt/huge2m/hpwarm \
        --hugetlbfs 1G=/mnt/huge1g/hpwarm \
        --state-dir /tmp/state \
        --memory-floor 67108864
echo "HPWARM-INFO checker exit status $?"
echo HPWARM-DONE
sync
poweroff -f
