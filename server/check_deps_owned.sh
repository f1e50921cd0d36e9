#!/bin/sh
# check_deps_owned.sh NM ARCHIVE 'NAME|OWNER.c ...|LIB.so[:LIB.so...]' ...
#
# One file owns each outside dependency: from the objects in ARCHIVE (the
# daemon's core, hpwcore), the symbols each one leaves undefined are matched
# against the symbols each dependency's shared library defines; a file that
# uses a dependency it does not own fails the build, and so does an owner
# that no longer uses its dependency (the list would have gone stale).
# Symbols, not #include lines: they are what the linker binds, whatever
# header or macro brought them in.  On failure ARCHIVE is removed, so the
# next build checks again instead of finding the library up to date.
set -eu
nm=$1 archive=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "member symbol" for every undefined symbol: "http.c.o MHD_start_daemon".
LC_ALL=C "$nm" -A -u --format=posix "$archive" |
    sed -n 's/^[^[]*\[\([^]]*\)\]: \([^ ]*\) .*/\1 \2/p' | sort -u >"$tmp/undef"
if [ ! -s "$tmp/undef" ]; then
    echo "check_deps_owned: no undefined symbols read from $archive" >&2
    rm -f "$archive"
    exit 1
fi

fail=0
for spec; do
    name=${spec%%|*} rest=${spec#*|}
    owners=${rest%%|*} libs=${rest#*|}
    : >"$tmp/defs"
    old_ifs=$IFS IFS=:
    for lib in $libs; do
        IFS=$old_ifs
        LC_ALL=C "$nm" -D --defined-only "$lib" 2>/dev/null ||
            LC_ALL=C "$nm" -g --defined-only "$lib"
    done | awk 'NF >= 3 { sub(/@.*/, "", $3); print $3 }' | sort -u >"$tmp/defs"
    IFS=$old_ifs
    if [ ! -s "$tmp/defs" ]; then
        echo "check_deps_owned: $name: no symbols read from $libs" >&2
        fail=1
        continue
    fi
    awk 'NR == FNR { d[$1]; next } ($2 in d) { sub(/\.o$/, "", $1); print $1, $2 }' \
        "$tmp/defs" "$tmp/undef" >"$tmp/uses"
    for user in $(cut -d' ' -f1 "$tmp/uses" | sort -u); do
        case " $owners " in
        *" $user "*) ;;
        *)
            echo "check_deps_owned: $user uses $name, which only $owners may use:" \
                "$(grep "^$user " "$tmp/uses" | cut -d' ' -f2 | tr '\n' ' ')" >&2
            fail=1 ;;
        esac
    done
    for owner in $owners; do
        if ! grep -q "^$owner " "$tmp/uses"; then
            echo "check_deps_owned: $owner is listed as $name's owner but uses none of its symbols" >&2
            fail=1
        fi
    done
done
if [ "$fail" != 0 ]; then
    rm -f "$archive"
    exit 1
fi
