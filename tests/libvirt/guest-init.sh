#!/bin/busybox sh
# /init of the libvirt test guest (packed by test_libvirt.py).  It only has to
# show that the guest reached userspace and how much memory it was given; the
# host side checks where that memory came from.  It then idles until the
# test destroys the domain.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
echo "HPWARM-LIBVIRT-INIT reached"
echo "HPWARM-LIBVIRT-MEM $(grep MemTotal /proc/meminfo)"
while :; do sleep 3600; done
