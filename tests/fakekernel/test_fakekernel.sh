#!/usr/bin/env bash
# test_fakekernel.sh SHIM FK_WRITE FIXTURES: check that the fakekernel shim
# makes a copy of the "fragmented" fixture behave like the kernel: capped
# growth that still reports success, in-use pages kept on shrink, sibling and
# global counters kept consistent; and that without the shim nothing happens.
set -eu
shim=$1 fk=$2 fixtures=$3
tmp=$(mktemp -d /tmp/hpw-fakekernel.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp -R "$fixtures/fragmented/." "$tmp"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

n0=devices/system/node/node0/hugepages/hugepages-2048kB
n1=devices/system/node/node1/hugepages/hugepages-2048kB
g=kernel/mm/hugepages/hugepages-2048kB
fails=0
expect() { # expect WHAT WANT GOT
        if [ "$2" != "$3" ]; then echo "FAIL: $1: want $2, got $3" >&2; fails=$((fails + 1)); fi
}
val() { cat "$tmp/$1"; }
fk() { LD_PRELOAD="$shim" "$fk" "$tmp" "$@"; }

# Start: node0 16 nr / 12 free (4 in use), cap 20; node1 8 / 7, cap 8.
expect "grow past cap reads back the cap" 20 "$(fk $n0/nr_hugepages 24)"
expect "file holds one clean value" "20" "$(val $n0/nr_hugepages)"
expect "new pages are free" 16 "$(val $n0/free_hugepages)"
expect "no surplus when growing" 0 "$(val $n0/surplus_hugepages)"
expect "global nr is the sum" 28 "$(val $g/nr_hugepages)"
expect "global free is the sum" 23 "$(val $g/free_hugepages)"

expect "shrink below in-use keeps them" 4 "$(fk $n0/nr_hugepages 2)"
expect "no free pages left" 0 "$(val $n0/free_hugepages)"
expect "in-use excess is surplus" 2 "$(val $n0/surplus_hugepages)"
expect "global nr after shrink" 12 "$(val $g/nr_hugepages)"

expect "grow within cap" 10 "$(fk $n0/nr_hugepages 10)"
expect "free after regrow" 6 "$(val $n0/free_hugepages)"
expect "surplus cleared" 0 "$(val $n0/surplus_hugepages)"

expect "node at its cap cannot grow" 8 "$(fk $n1/nr_hugepages 9)"
expect "node1 free unchanged" 7 "$(val $n1/free_hugepages)"
expect "global nr" 18 "$(val $g/nr_hugepages)"
expect "global free" 13 "$(val $g/free_hugepages)"

expect "other files pass through" 5 "$(fk $n1/free_hugepages 5)"
expect "1G pool capped separately" 1 "$(fk devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages 3)"
expect "2M global untouched by 1G write" 18 "$(val $g/nr_hugepages)"

# Without the shim a fixture is plain files: the cap means nothing.
expect "no shim, no cap" 24 "$("$fk" "$tmp" $n0/nr_hugepages 24)"

[ "$fails" = 0 ] && echo "fakekernel: all checks passed"
exit "$fails"
