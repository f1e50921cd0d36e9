#!/bin/sh
# prepare.sh: build the guest for the two-node QEMU test.
#
#   prepare.sh OUTDIR CHECKER HPWARMD [HPWARM]
#   prepare.sh --fetch-only OUTDIR
#
# Fetches Debian's kernel (the package linux-image-amd64 depends on) and
# busybox-static with `apt-get download`, unpacks them with dpkg into
# OUTDIR/cache (nothing is installed on the host), and builds
# OUTDIR/initramfs.gz: busybox, /init, the guest checker, hpwarmd, the CLI if
# given, and every shared library they load (found with ldd) plus the dynamic
# loader.  OUTDIR/vmlinuz points at the kernel.  With --fetch-only it stops
# after the downloads and leaves OUTDIR/vmlinuz and OUTDIR/busybox (links
# into the cache) for tests that build their own initramfs (handoff_boot.py).
#
# The unpacked kernel and busybox are cached in OUTDIR/cache, one directory
# per package and version (the .debs are dropped once unpacked), so a
# second run needs no network.  The initramfs is rebuilt every time because
# the binaries change.  Needs no root and no Debian package beyond apt/dpkg:
# the archive is written by busybox's cpio.
#
# Exit 0 when ready, 77 when the kernel or busybox cannot be had (no apt, no
# network, no cache), 1 on any other error.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
fetch_only=0
if [ "${1:-}" = --fetch-only ]; then
        fetch_only=1
        shift
        [ $# = 1 ] || { echo "usage: $0 --fetch-only OUTDIR" >&2; exit 1; }
        set -- "$1" - -
else
        [ $# -ge 3 ] || { echo "usage: $0 OUTDIR CHECKER HPWARMD [HPWARM]" >&2; exit 1; }
fi
out=$1 checker=$2 hpwarmd=$3 hpwarm=${4:-}
cache=$out/cache
mkdir -p "$cache/debs"
cache=$(cd "$cache" && pwd)

skip() { echo "SKIP: $*" >&2; exit 77; }
die() { echo "prepare: $*" >&2; exit 1; }

if [ $fetch_only = 0 ]; then
        for f in "$checker" "$hpwarmd"; do
                [ -x "$f" ] || die "$f is not an executable (build it first)"
        done
fi

# apt's package lists may never have been fetched on a fresh machine or
# container; update once, only when a lookup fails.
apt_updated=0
apt_update_once() {
        [ "$apt_updated" = 0 ] || return 1
        apt_updated=1
        echo "prepare: apt-get update" >&2
        apt-get update -qq >/dev/null 2>&1 || true
}

# The exact kernel package (e.g. linux-image-6.1.0-57-amd64) and the version
# apt would download, printed as "NAME VERSION".
kernel_pkg() {
        name=$(apt-cache depends linux-image-amd64 2>/dev/null |
               sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -n 1)
        [ -n "$name" ] || return 1
        ver=$(apt-cache policy "$name" 2>/dev/null | sed -n 's/^ *Candidate: //p')
        [ -n "$ver" ] && [ "$ver" != "(none)" ] || return 1
        echo "$name $ver"
}

# fetch PKG VERSION: leave the .deb in $cache/debs unless already there.
# apt-get download names files PKG_VERSION_ARCH.deb with ':' escaped as %3a.
fetch() {
        esc=$(echo "$2" | sed 's/:/%3a/g')
        set -- "$1" "$2" "$cache/debs/$1_${esc}_amd64.deb"
        [ -s "$3" ] && return 0
        (cd "$cache/debs" && apt-get download "$1=$2" >/dev/null 2>&1) && [ -s "$3" ] && return 0
        apt_update_once && (cd "$cache/debs" && apt-get download "$1=$2" >/dev/null 2>&1) &&
                [ -s "$3" ]
}

# --- kernel -----------------------------------------------------------------
if ! pkg=$(kernel_pkg); then
        apt_update_once || true
        pkg=$(kernel_pkg) || pkg=
fi
kdir=
if [ -n "$pkg" ]; then
        set -- $pkg
        kname=$1 kver=$2
        kdir=$cache/$kname-$kver
        # A cache from before the modules were kept (qemu.vfio) is fetched
        # again once, for its modules.
        if [ ! -s "$kdir/vmlinuz" ] || [ ! -d "$kdir/modules" ]; then
                fetch "$kname" "$kver" || { [ -s "$kdir/vmlinuz" ] || kdir=; }
        fi
fi
if [ -z "$kdir" ]; then
        # Offline: use whatever kernel an earlier run left, newest first.
        kdir=$(ls -d "$cache"/linux-image-*/ 2>/dev/null | sort -V | tail -n 1 || true)
        kdir=${kdir%/}
        [ -n "$kdir" ] && [ -s "$kdir/vmlinuz" ] || skip "cannot fetch linux-image-amd64 and none cached"
        echo "prepare: offline, using cached $(basename "$kdir")" >&2
elif kdeb=$cache/debs/${kname}_$(echo "$kver" | sed 's/:/%3a/g')_amd64.deb && [ -s "$kdeb" ]; then
        tmp=$kdir.tmp
        rm -rf "$tmp" && mkdir -p "$tmp"
        dpkg -x "$kdeb" "$tmp/root"
        cp "$tmp"/root/boot/vmlinuz-* "$tmp/vmlinuz"
        cp "$tmp"/root/boot/config-* "$tmp/config"
        # What qemu.numa uses is built in; qemu.vfio loads VFIO and its
        # dependencies (insmod order: vfio_boot.py), kept flat in modules/.
        mkdir -p "$tmp/modules"
        for m in virt/lib/irqbypass.ko drivers/vfio/vfio.ko drivers/vfio/vfio_virqfd.ko \
                 drivers/vfio/vfio_iommu_type1.ko drivers/vfio/pci/vfio-pci-core.ko drivers/vfio/pci/vfio-pci.ko; do
                cp "$tmp"/root/lib/modules/*/kernel/$m "$tmp/modules/" 2>/dev/null || true
        done
        rm -rf "$tmp/root"
        rm -rf "$kdir" && mv "$tmp" "$kdir"
        # The unpacked kernel is the cache; the 70 MB .deb is not needed again.
        rm -f "$cache"/debs/linux-image-*.deb
fi
for opt in CONFIG_HUGETLBFS CONFIG_NUMA CONFIG_SERIAL_8250_CONSOLE CONFIG_BLK_DEV_INITRD CONFIG_RD_GZIP CONFIG_DEVTMPFS; do
        grep -q "^$opt=y" "$kdir/config" || die "$kdir/config lacks $opt=y"
done
ln -sfn "$kdir/vmlinuz" "$out/vmlinuz"
if [ -d "$kdir/modules" ]; then ln -sfn "$kdir/modules" "$out/modules"; else rm -f "$out/modules"; fi

# --- busybox ----------------------------------------------------------------
bbver=$(apt-cache policy busybox-static 2>/dev/null | sed -n 's/^ *Candidate: //p')
bb=
if [ -n "$bbver" ] && [ "$bbver" != "(none)" ]; then
        bbdir=$cache/busybox-static-$(echo "$bbver" | tr ':' '_')
        if [ ! -x "$bbdir/busybox" ] && fetch busybox-static "$bbver"; then
                rm -rf "$bbdir.tmp" && mkdir -p "$bbdir.tmp"
                dpkg -x "$cache/debs/busybox-static_$(echo "$bbver" | sed 's/:/%3a/g')_amd64.deb" "$bbdir.tmp/root"
                cp "$bbdir.tmp/root/bin/busybox" "$bbdir.tmp/busybox"
                rm -rf "$bbdir.tmp/root" "$bbdir" && mv "$bbdir.tmp" "$bbdir"
                rm -f "$cache"/debs/busybox-static_*.deb
        fi
        [ -x "$bbdir/busybox" ] && bb=$bbdir/busybox
fi
if [ -z "$bb" ]; then
        bb=$(ls "$cache"/busybox-static-*/busybox 2>/dev/null | sort -V | tail -n 1 || true)
        [ -n "$bb" ] || skip "cannot fetch busybox-static and none cached"
fi

if [ $fetch_only = 1 ]; then
        ln -sfn "$bb" "$out/busybox"
        echo "prepare: kernel $(basename "$kdir"), busybox $bb" >&2
        exit 0
fi

# --- initramfs --------------------------------------------------------------
root=$out/initramfs.d
rm -rf "$root"
mkdir -p "$root/bin" "$root/sbin" "$root/usr/bin" "$root/usr/sbin" "$root/dev" \
         "$root/proc" "$root/sys" "$root/tmp" "$root/mnt" "$root/etc"
cp "$bb" "$root/bin/busybox"
cp "$here/init.sh" "$root/init"
chmod 0755 "$root/init"
cp "$checker" "$root/bin/hpw-qemu-check"
cp "$hpwarmd" "$root/bin/hpwarmd"
bins="$checker $hpwarmd"
if [ -n "$hpwarm" ] && [ -x "$hpwarm" ]; then
        cp "$hpwarm" "$root/bin/hpwarm"
        bins="$bins $hpwarm"
fi

# Copy every library each binary needs to the path the loader will look for
# it under, plus the loader itself (ldd prints it as a bare absolute path).
libs=$out/libs.txt
: > "$libs"
for b in $bins; do
        ldd_out=$(ldd "$b") || die "ldd $b failed"
        case $ldd_out in *"not found"*) die "$b: a library is missing: $ldd_out" ;; esac
        echo "$ldd_out" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' >> "$libs"
done
for lib in $(sort -u "$libs"); do
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
done
rm -f "$libs"

# Busybox cpio writes newc; -R 0:0 makes every file root's, as the guest expects.
(cd "$root" && find . | "$bb" cpio -o -H newc -R 0:0 2>/dev/null) | gzip -1 > "$out/initramfs.gz.tmp"
mv "$out/initramfs.gz.tmp" "$out/initramfs.gz"
rm -rf "$root"
echo "prepare: kernel $(basename "$kdir"), initramfs $(du -k "$out/initramfs.gz" | cut -f1) KiB" >&2
