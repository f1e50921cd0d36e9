#!/bin/sh
# client.abi: the shared library's ABI against the checked-in baseline
# (abi/libhpwarm.so.<soname>.abi, written by abidw), with libabigail's abidiff.
#
# Any change abidiff reports fails: a removed or changed symbol, a changed
# type (a member moved, inserted or retyped, an enum value renumbered), a
# symbol out of its version node.  Added calls (in a new version node) are
# not a change to the old ABI and pass (--no-added-syms), and so is a member appended at the
# end of a struct (abi/libhpwarm.suppr: the growth hpwarm.h allows).  An
# enumerator appended to an enum is a harmless change to abidiff and passes
# too.  The baseline was last written after such growth (HPW_E_NULL_HANDLE
# .. HPW_E_STRUCT_SIZE, struct hpw_node's hugepages_fixed), so it now holds
# them, and a later change to either fails.  The one way past a break is a new
# soname (HPW_SOVERSION): the library then no longer has a baseline to match,
# and the test says to write one.
#
# So that it cannot pass by checking nothing, the test first proves abidiff
# catches breaks: it compiles the library's real sources twice in a
# temporary directory, once with a member inserted at the front of struct
# hpw_pool and once without hpw_cancel in the version script, keeping the
# soname, and expects abidiff to fail both; a third build appends a member
# at the end of struct hpw_pool and must pass.
#
# Usage: check_abi.sh SOURCE_DIR BUILD_DIR
# To write a new baseline after a soname change:
#   abidw --no-corpus-path --no-comp-dir-path --headers-dir client/include \
#     --headers-dir BUILD/client/gen --out-file abi/libhpwarm.so.N.abi BUILD/client/libhpwarm.so.N.*
set -eu
src=$1
build=$2
command -v abidiff >/dev/null || { echo "SKIP: no abidiff (apt-get install abigail-tools)"; exit 77; }

lib=$(readlink -f "$build/client/libhpwarm.so")
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
base="$src/abi/$soname.abi"
gen="$build/client/gen"
if [ ! -f "$base" ]; then
        echo "FAIL: no baseline for $soname ($base): a new soname needs a new baseline (see the head of $0)"
        exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

diff_against_base() { # LIB HEADERS_DIR -> abidiff's status
        abidiff --no-added-syms --suppressions "$src/abi/libhpwarm.suppr" --headers-dir2 "$2" --headers-dir2 "$gen" \
                "$base" "$1" >"$tmp/report" 2>&1
}

# A variant of the library built from the tree's sources with HEADER and MAP.
build_variant() { # NAME HEADER_DIR MAP
        mkdir -p "$tmp/$1"
        # The library's sources as client/CMakeLists.txt lists them (its object
        # libraries hpwarm_lib and hpwarm_fleet, "  src/FOLDER/FILE.c" a line).
        local srcs
        srcs=$(sed -n '/^add_library(hpwarm_\(lib\|fleet\) OBJECT$/,/)/s|^  src/\([a-z]*/[a-z_]*\.c\))\{0,1\}$|\1|p' \
                "$src/client/CMakeLists.txt")
        [ "$(echo "$srcs" | wc -w)" -ge 10 ] || { echo "FAIL: no hpwarm_lib/hpwarm_fleet sources in client/CMakeLists.txt"; exit 1; }
        for c in $srcs; do
                # shellcheck disable=SC2046
                cc -c -g -O0 -std=gnu11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -DHPW_BUILDING -DHPW_VERSION_STRING='"0"' \
                        -I"$2" -I"$gen" -I"$src/client/src/lib" -I"$src/client/src/fleet" -I"$src/common" \
                        $(pkg-config --cflags libcurl libcjson) -o "$tmp/$1/$(echo "${c%.c}" | tr / _).o" "$src/client/src/$c"
        done
        cc -c -g -O0 -std=gnu11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -I"$src/common" -o "$tmp/$1/size.o" "$src/common/size.c"
        # shellcheck disable=SC2046
        cc -shared -o "$tmp/$1/$soname" -Wl,-soname,"$soname" -Wl,--version-script="$3" "$tmp/$1"/*.o \
                $(pkg-config --libs libcurl libcjson) -lm
}

# 1. abidiff catches a layout break and a removed symbol.
mkdir -p "$tmp/inc-layout"
sed 's/^struct hpw_pool {$/struct hpw_pool {\n        int inserted_first;/' "$src/client/include/hpwarm.h" \
        >"$tmp/inc-layout/hpwarm.h"
grep -q inserted_first "$tmp/inc-layout/hpwarm.h" || { echo "FAIL: could not make the layout variant"; exit 1; }
build_variant layout "$tmp/inc-layout" "$src/client/libhpwarm.map"
if diff_against_base "$tmp/layout/$soname" "$tmp/inc-layout"; then
        echo "FAIL: abidiff missed a member inserted at the front of struct hpw_pool"
        exit 1
fi
grep -q "hpw_pool" "$tmp/report" || { echo "FAIL: abidiff failed but did not name struct hpw_pool"; cat "$tmp/report"; exit 1; }
echo "ok: a member inserted in struct hpw_pool is caught"
grep -v '^        hpw_cancel;$' "$src/client/libhpwarm.map" >"$tmp/no-cancel.map"
build_variant removed "$src/client/include" "$tmp/no-cancel.map"
if diff_against_base "$tmp/removed/$soname" "$src/client/include"; then
        echo "FAIL: abidiff missed the removal of hpw_cancel"
        exit 1
fi
echo "ok: a removed symbol is caught"
# ...and lets through the growth the header allows.
mkdir -p "$tmp/inc-grow"
# Before the struct's closing brace, whatever its last member is today.
awk '/^struct hpw_pool \{$/ { in_pool = 1 }
     in_pool && /^};$/ { print "        uint64_t appended_at_end;"; in_pool = 0 }
     { print }' "$src/client/include/hpwarm.h" >"$tmp/inc-grow/hpwarm.h"
grep -q appended_at_end "$tmp/inc-grow/hpwarm.h" || { echo "FAIL: could not make the growth variant"; exit 1; }
build_variant grow "$tmp/inc-grow" "$src/client/libhpwarm.map"
if ! diff_against_base "$tmp/grow/$soname" "$tmp/inc-grow"; then
        echo "FAIL: a member appended at the end of struct hpw_pool was reported:"
        cat "$tmp/report"
        exit 1
fi
echo "ok: a member appended at the end of a struct passes"

# 2. The library as built.
if ! diff_against_base "$lib" "$src/client/include"; then
        echo "FAIL: the ABI of $soname changed against $base:"
        cat "$tmp/report"
        echo "An incompatible change needs a new soname (HPW_SOVERSION in client/CMakeLists.txt and hpwarm.h)."
        exit 1
fi
echo "ok: $soname matches its baseline"
