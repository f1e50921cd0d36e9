#!/usr/bin/env python3
"""qemu.vfio: a VFIO DMA map of a warm pool only pins; of a cold file it
faults and zeroes every page inside the ioctl.  Measured with the guest
kernel's own VFIO code.

A VMM with a passed-through device maps all guest RAM into the IOMMU at
boot (VFIO_IOMMU_MAP_DMA, one call per RAM region).  Pinning forces the
pages in: on an unfaulted hugetlbfs file the kernel allocates and zeroes
every hugepage inside that ioctl, serially.  This host has no IOMMU to
spare and no KVM, so the test boots a guest that has one:

  qemu-system-x86_64 -machine q35,kernel-irqchip=split -accel tcg
    -device intel-iommu,intremap=on,caching-mode=on -device edu
  kernel: Debian's (prepare.sh --fetch-only, the qemu.numa cache), command
    line intel_iommu=on iommu=nopt hugepagesz=2M hugepages=GUEST_PAGES;
  initramfs: busybox, hpwarmd and hpw-vfio-check with their libraries, and
    the kernel's own vfio, vfio_iommu_type1, vfio-pci (and irqbypass,
    vfio_virqfd, vfio-pci-core) modules from the same linux-image .deb.

The guest's /init loads the modules, binds QEMU's `edu` device (no driver
claims it; alone in its IOMMU group) to vfio-pci with driver_override,
starts hpwarmd on a 2 MiB hugetlbfs and runs hpw-vfio-check (guest_vfio.c),
which warms a pool through the API and times VFIO_IOMMU_MAP_DMA of the
pool's file and of a cold file of the same size, reading the free hugepages
around the ioctl.  Checks (one `HPWARM-CHECK PASS|FAIL name` line each):
`guest-setup` (modules loaded, edu bound to vfio-pci, its group's
/dev/vfio/N, hugepages as asked) and those `hpw-vfio-check --list` names:
the container, the pool warm, each map succeeding, the warm map taking 0
free hugepages and the cold one exactly its pages.  The times and the
cold/warm ratio are printed, not judged: TCG is no benchmark.

Then a real VMM does the same: the host's own qemu-system-x86_64 (and its
libraries, TCG module and firmware) runs inside the guest with `-device
vfio-pci,host=<edu>` and its RAM a memory-backend-file (share=on, no
prealloc) on the warm pool, then on a cold file, started with -S
-daemonize (the parent returns once the devices are realized, by when
QEMU's VFIO listener has mapped all RAM).  /init's checks:
`qemu-vfio-warm-faults-0` (the pool: no free hugepage taken),
`qemu-novfio-cold-faults-0` (the cold file without the device: none
either, so what follows is VFIO's doing) and `qemu-vfio-cold-faults-n`
(the cold file with the device: all its pages); the start times are
printed.

No host hugepages are used (guest RAM is anonymous), so no guard.sh.  Exit
0 pass, 1 fail, 77 skip (QEMU cannot run, no guest kernel, or a kernel cache
without its VFIO modules while offline)."""
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guestboot as gb  # noqa: E402

HPWARMD = os.environ.get("HPWARMD", "")
CHECKER = os.environ.get("HPW_VFIO_CHECK", "")
GUEST_DIR = os.environ.get("HPW_GUEST_DIR", "")
WORK_DIR = os.environ.get("HPW_VFIO_DIR", "")
TIMEOUT = int(os.environ.get("HPW_QEMU_TIMEOUT", "300"))

# Each region is 128 pages of 2 MiB (256 MiB): the warm pool and the cold
# file.  The guest boots with room for both plus spare, and RAM for
# hpwarmd's --memory-floor (64 MiB) beside them.
PAGES = 128
GUEST_PAGES = 2 * PAGES + 32
GUEST_RAM = "1G"
# Load order: each after what its `depends=` names (modinfo).
MODULES = ("irqbypass", "vfio", "vfio_virqfd", "vfio_iommu_type1", "vfio-pci-core", "vfio-pci")
EDU = "0x1234:0x11e8"   # QEMU's educational PCI device: vendor:device
# The nested QEMU's firmware (loaded even at -S) and its TCG, a module in
# Debian's build.
BIOS = "/usr/share/seabios/bios-256k.bin"
ACCEL_TCG = "/usr/lib/x86_64-linux-gnu/qemu/accel-tcg-x86_64.so"
VAPIC = "/usr/share/qemu/kvmvapic.bin"   # an option ROM every x86 machine asks for
# /init's own checks on the nested QEMU (a vfio-pci VMM on the warm pool, on
# a cold file without the device as the control, and with it).
NESTED_CHECKS = ["qemu-vfio-warm-faults-0", "qemu-novfio-cold-faults-0", "qemu-vfio-cold-faults-n"]

INIT = r"""#!/bin/busybox sh
# /init of the qemu.vfio guest (tests/qemu/vfio_boot.py).
/bin/busybox --install -s /bin
export PATH=/bin
err=
mount -t proc proc /proc || err="$err proc"
mount -t sysfs sysfs /sys || err="$err sys"
mount -t devtmpfs devtmpfs /dev || err="$err dev"
mkdir -p /tmp/state /mnt/huge2m
mount -t hugetlbfs -o pagesize=2M none /mnt/huge2m || err="$err hugetlbfs"
mkdir -p /mnt/huge2m/hpwarm
ip link set lo up || err="$err lo"
for m in %(modules)s; do
        insmod /lib/modules/$m.ko || err="$err insmod-$m"
done
dev=
for d in /sys/bus/pci/devices/*; do
        [ "$(cat $d/vendor):$(cat $d/device)" = "%(edu)s" ] && dev=${d##*/}
done
group=
if [ -z "$dev" ]; then
        err="$err no-edu-device"
else
        echo vfio-pci > /sys/bus/pci/devices/$dev/driver_override
        echo $dev > /sys/bus/pci/drivers_probe
        drv=$(readlink /sys/bus/pci/devices/$dev/driver)
        group=$(readlink /sys/bus/pci/devices/$dev/iommu_group)
        group=${group##*/}
        echo "HPWARM-INFO edu $dev driver ${drv##*/} iommu_group ${group:-none}: $(ls /sys/bus/pci/devices/$dev/iommu_group/devices 2>/dev/null | tr '\n' ' ')"
        [ "${drv##*/}" = vfio-pci ] || err="$err edu-not-on-vfio-pci"
        [ -n "$group" ] && [ -c /dev/vfio/$group ] || err="$err no-/dev/vfio/group"
fi
free=$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)
[ "$free" = %(guest_pages)d ] || err="$err free-hugepages-$free"
echo "HPWARM-INFO $(grep -E '^(MemTotal|HugePages_(Total|Free))' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
if [ -n "$err" ]; then
        echo "HPWARM-CHECK FAIL guest-setup: failed:$err"
else
        echo "HPWARM-CHECK PASS guest-setup"
fi
/bin/hpwarmd --listen 127.0.0.1:8080 --allow-unauthenticated-tcp --hugetlbfs 2M=/mnt/huge2m/hpwarm \
        --state-dir /tmp/state --memory-floor 67108864 >/tmp/hpwarmd.log 2>&1 &
daemon=$!
i=0
until wget -q -O /dev/null http://127.0.0.1:8080/v1/health 2>/dev/null || [ $i -ge 300 ]; do
        sleep 0.1
        i=$((i + 1))
done
timeout 240 /bin/hpw-vfio-check 8080 "${group:-none}" /mnt/huge2m %(pages)d
echo "HPWARM-INFO checker exit status $?"

# A VMM's own map: QEMU with the device on vfio-pci and its RAM on FILE,
# started with -S (-daemonize returns once its devices are realized: the
# VFIO listener has mapped all RAM by then).  prealloc is off, so only the
# map can fault pages in.  nested NAME FILE [vfio|none] WANT: WANT free
# hugepages taken.
free_2m=/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages
nested() {
        dev_arg="-device vfio-pci,host=$dev,rombar=0"
        [ "$3" = none ] && dev_arg=
        before=$(cat $free_2m)
        t0=$(cut -d' ' -f1 /proc/uptime)
        timeout 120 /usr/bin/qemu-system-x86_64 -L /usr/share/qemu -nodefaults -display none -S -daemonize \
                -pidfile /tmp/qemu.pid -machine q35,memory-backend=m0 -accel tcg,tb-size=16 -m %(mib)dM \
                -object memory-backend-file,id=m0,mem-path="$2",size=%(mib)dM,share=on $dev_arg \
                >/tmp/qemu.log 2>&1
        rc=$?
        t1=$(cut -d' ' -f1 /proc/uptime)
        after=$(cat $free_2m)
        echo "HPWARM-INFO nested QEMU $1 ($3): up at -S in $(awk "BEGIN { printf \"%%.2f\", $t1 - $t0 }") s," \
             "exit $rc, free_hugepages $before -> $after"
        sed 's/^/HPWARM-QEMU /' /tmp/qemu.log
        [ -s /tmp/qemu.pid ] && kill $(cat /tmp/qemu.pid)
        i=0
        while [ -s /tmp/qemu.pid ] && kill -0 $(cat /tmp/qemu.pid) 2>/dev/null && [ $i -lt 100 ]; do
                sleep 0.1
                i=$((i + 1))
        done
        rm -f /tmp/qemu.pid
        if [ $rc = 0 ] && [ $((before - after)) = "$4" ]; then
                echo "HPWARM-CHECK PASS $1"
        else
                echo "HPWARM-CHECK FAIL $1: QEMU exit $rc, took $((before - after)) free hugepages, expected $4"
        fi
}
nested qemu-vfio-warm-faults-0 /mnt/huge2m/hpwarm/vfio-warm vfio 0
truncate -s %(mib)dM /mnt/huge2m/qemu-cold
nested qemu-novfio-cold-faults-0 /mnt/huge2m/qemu-cold none 0
nested qemu-vfio-cold-faults-n /mnt/huge2m/qemu-cold vfio %(pages)d
rm -f /mnt/huge2m/qemu-cold
kill $daemon
wait $daemon
echo "HPWARM-INFO hpwarmd exit status $?"
sed 's/^/HPWARM-DAEMON /' /tmp/hpwarmd.log | tail -n 20
echo HPWARM-DONE
poweroff -f
"""


def libraries(binaries):
    """{guest path: host path} of every library BINARIES load and the loader
    (ldd prints the loader as a bare absolute path)."""
    out = {}
    for b in binaries:
        text = subprocess.run(["ldd", b], capture_output=True, text=True, check=True).stdout
        if "not found" in text:
            raise gb.Fail("%s: a library is missing:\n%s" % (b, text))
        for line in text.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
                out[parts[2]] = os.path.realpath(parts[2])
            elif parts and parts[0].startswith("/"):
                out[parts[0]] = os.path.realpath(parts[0])
    return out


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not (HPWARMD and CHECKER and GUEST_DIR and WORK_DIR):
        print("SKIP: set HPWARMD, HPW_VFIO_CHECK, HPW_GUEST_DIR and HPW_VFIO_DIR (tests/qemu/CMakeLists.txt)")
        return 77
    got = gb.qemu_and_guest(GUEST_DIR, WORK_DIR)
    if not got:
        return 77
    qemu, kernel, busybox = got
    mods = os.path.join(GUEST_DIR, "modules")
    missing = [m for m in MODULES if not os.path.isfile(os.path.join(mods, m + ".ko"))]
    if missing:
        print("SKIP: the cached guest kernel has no %s in %s (offline, and the cache predates qemu.vfio)"
              % (", ".join(missing), mods))
        return 77
    extra = {"/bin/hpwarmd": HPWARMD, "/bin/hpw-vfio-check": CHECKER, "/usr/bin/qemu-system-x86_64": qemu,
             "/usr/share/qemu/bios-256k.bin": BIOS}
    # TCG is a module in Debian's QEMU (built in elsewhere); the ROM only
    # saves a warning.
    extra.update({f: f for f in (ACCEL_TCG, VAPIC) if os.path.isfile(f)})
    extra.update(libraries([HPWARMD, CHECKER, qemu]))
    extra.update({"/lib/modules/%s.ko" % m: os.path.join(mods, m + ".ko") for m in MODULES})
    init = INIT % {"modules": " ".join(MODULES), "edu": EDU, "guest_pages": GUEST_PAGES, "pages": PAGES,
                   "mib": PAGES * 2}
    t_start = time.monotonic()
    try:
        initrd = gb.build_initramfs(busybox, os.path.join(WORK_DIR, "initramfs.gz"), init=init, extra=extra)
    except gb.Fail as e:
        print("FAIL initramfs: %s" % e)
        return 1
    expected = ["guest-setup"] + NESTED_CHECKS + subprocess.run([CHECKER, "--list"], capture_output=True, text=True,
                                                check=True).stdout.split()
    # iommu=nopt: DMA through the IOMMU's translation, not passthrough, as
    # on a host that assigns devices.  caching-mode=on makes the guest tell
    # QEMU of every map (what a nested vfio-pci would need); intremap needs
    # the split irqchip.
    cmdline = ("console=ttyS0 quiet panic=-1 intel_iommu=on iommu=nopt hugepagesz=2M hugepages=%d"
               % GUEST_PAGES)
    argv = [qemu, "-machine", "q35,kernel-irqchip=split", "-accel", "tcg", "-cpu", "max", "-smp", "1",
            "-m", GUEST_RAM, "-device", "intel-iommu,intremap=on,caching-mode=on", "-device", "edu",
            "-nographic", "-no-reboot", "-nic", "none", "-kernel", kernel, "-initrd", initrd,
            "-append", cmdline]
    log_path = os.path.join(WORK_DIR, "serial.log")
    g = gb.Guest(argv, WORK_DIR)
    status = 0
    try:
        try:
            g.wait_line("HPWARM-DONE", TIMEOUT)
        except gb.Fail as e:
            print("FAIL: %s" % str(e)[:300])
            status = 1
    finally:
        g.stop(timeout=20)
        with open(log_path, "w") as f:
            f.write(g.output())
    text = g.output().replace("\r", "")
    for line in text.splitlines():
        if re.search(r"HPWARM|Kernel panic|BUG|Oops|Call Trace|DMAR|vfio", line):
            print(line)
    if "SeaBIOS" not in text and "Linux version" not in text and "HPWARM" not in text:
        print("SKIP: QEMU could not start the guest (exit %s):\n%s" % (g.proc.returncode, text[-500:]))
        return 77
    for name in expected:
        if ("HPWARM-CHECK PASS %s" % name) not in text.splitlines():
            if not any(l.startswith("HPWARM-CHECK FAIL %s:" % name) for l in text.splitlines()):
                print("FAIL: no line for check %s" % name)
            status = 1
    if "HPWARM-CHECK FAIL" in text:
        status = 1
    print("qemu.vfio: %s in %.0f s (serial log %s)" % ("all %d checks passed" % len(expected) if status == 0
                                                        else "FAIL", time.monotonic() - t_start, log_path))
    return status


if __name__ == "__main__":
    sys.exit(main())
