#!/usr/bin/env bash
# check-deb.sh SOURCE_DIR: the Debian packages build, pass lintian, hold what
# they should and install, run and purge cleanly (ctest package.deb).
#
#  1. copies the source tree (git's tracked and untracked-but-not-ignored
#     files) to a temp dir and builds it there with dpkg-buildpackage
#     (DEB_BUILD_OPTIONS=nocheck: the test suite runs in CI, not inside the
#     package build; this keeps the build to one compile of what ships);
#  2. lintian on the .changes: any error or warning fails (accepted tags
#     would be listed, with reasons, in debian/*.lintian-overrides);
#  3. contents: the files of each package, conffile, SONAME and multiarch
#     path, stripped binaries with their debug info in the -dbgsym packages;
#  4. dpkg -x of all four into a throwaway root: hpwarmd --version and
#     hpwarm --version run, pkg-config finds libhpwarm there and a program
#     built with its flags links against and runs with that library;
#  5. as root, when none of the packages is installed yet: a real install
#     with apt-get (refused if it would pull any other package), checks of
#     the maintainer scripts' work, then purge; the EXIT trap purges also
#     when a check fails, so the machine is left as it was.
# Exits 77 where the Debian tools are missing (scripts/deps.sh installs them).
set -uo pipefail
src=$(cd "${1:?source dir}" && pwd)
pkgs=(hpwarmd hpwarm libhpwarm0 libhpwarm-dev)

for t in dpkg-buildpackage dh lintian fakeroot pkg-config; do
        command -v "$t" >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh)"; exit 77; }
done

work=$(mktemp -d /tmp/hpwarm-deb.XXXXXX)
installed=0
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
purge() {
        apt-get purge -y -qq -o DPkg::Lock::Timeout=600 "${pkgs[@]}" >/dev/null 2>&1 ||
                dpkg --purge "${pkgs[@]}" >/dev/null 2>&1
}
cleanup() {
        if [ "$installed" = 1 ]; then
                purge || echo "WARNING: could not purge ${pkgs[*]}: purge them by hand" >&2
                if [ "${group_existed:-1}" = 0 ] && getent group hpwarm >/dev/null; then
                        groupdel hpwarm || echo "WARNING: could not remove the group hpwarm" >&2
                fi
        fi
        rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- 1. build out of tree -------------------------------------------------
mkdir "$work/src"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
        (cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -xf - -C "$work/src"
else
        tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$work/src"
fi
# The version's one place is CMakeLists.txt: a changelog naming another one
# must stop the build before it compiles anything.
cp -a "$work/src" "$work/skew"
sed -i '1s/(\([^)]*\))/(99.0.0)/' "$work/skew/debian/changelog"
if skew=$(cd "$work/skew" && debian/rules override_dh_auto_configure 2>&1); then
        fail "debian/rules accepted a changelog version (99.0.0) that CMakeLists.txt does not have"
elif ! grep -q "debian/changelog says 99.0.0, CMakeLists.txt says" <<<"$skew"; then
        fail "version skew stopped the build without saying why: $skew"
else
        echo "ok: a changelog version other than CMakeLists.txt's stops the build"
fi
rm -rf "$work/skew"
echo "building packages in $work"
if ! (cd "$work/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
        tail -n 40 "$work/build.log"
        echo "FAIL: dpkg-buildpackage (log above)"
        exit 1
fi
ver=$(cd "$work/src" && dpkg-parsechangelog -SVersion)
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb() { echo "$work/${1}_${ver}_${arch}.deb"; }
for p in "${pkgs[@]}" hpwarmd-dbgsym hpwarm-dbgsym libhpwarm0-dbgsym; do
        [ -f "$(deb "$p")" ] || fail "package $p was not built"
done
[ "$failures" = 0 ] || exit 1
echo "ok: built ${pkgs[*]} $ver and their -dbgsym packages"

# --- 2. lintian -------------------------------------------------------------
lintian --fail-on error,warning --info "$work/hpwarm_${ver}_${arch}.changes" >"$work/lintian.log" 2>&1
lrc=$?
lint=$(grep -v '^running with root privileges' "$work/lintian.log")
[ -n "$lint" ] && echo "$lint"
if [ "$lrc" != 0 ]; then
        fail "lintian: errors or warnings (above)"
else
        echo "ok: lintian: $(grep -c '^E:' <<<"$lint") errors, $(grep -c '^W:' <<<"$lint") warnings, $(grep -c '^[IPX]:' <<<"$lint") info/pedantic"
fi

# --- 3. contents --------------------------------------------------------------
has() { # has PACKAGE PATH...: every PATH is in PACKAGE
        local p=$1 list
        shift
        list=$(dpkg-deb -c "$(deb "$p")" | awk '{print $6}' | sed 's#^\.##')
        for f in "$@"; do
                grep -qxF -- "$f" <<<"$list" || fail "$p lacks $f"
        done
}
lacks() { # lacks PACKAGE REGEX: no path of PACKAGE matches
        local hit
        hit=$(dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | grep -E -- "$2")
        [ -z "$hit" ] || fail "$1 must not hold $hit"
}
lib=/usr/lib/$multiarch
has hpwarmd /usr/sbin/hpwarmd /usr/share/man/man8/hpwarmd.8.gz /etc/default/hpwarmd \
        /lib/systemd/system/hpwarmd.service /lib/systemd/system/hpwarmd.socket \
        /lib/systemd/system/dev-hugepages1G.mount /usr/libexec/hpwarm/prewarm.sh
has hpwarm /usr/bin/hpwarm /usr/share/man/man1/hpwarm.1.gz /lib/systemd/system/hpwarm-placement.service
lacks hpwarmd 'hpwarm-placement'
# Once the build installs a bash completion, the CLI's package must ship it.
if grep -qs bash-completion "$src/CMakeLists.txt" "$src/client/CMakeLists.txt"; then
        has hpwarm /usr/share/bash-completion/completions/hpwarm
fi
has libhpwarm0 "$lib/libhpwarm.so.0"
has libhpwarm-dev /usr/include/hpwarm.h /usr/include/hpwarm_problems.h "$lib/libhpwarm.so" "$lib/libhpwarm.a" \
        "$lib/pkgconfig/libhpwarm.pc" "$lib/pkgconfig/hpwarm.pc" /usr/share/hpwarm/problems.json \
        /usr/share/man/man3/hpwarm.3.gz /usr/share/man/man3/hpw_new.3.gz /usr/share/man/man3/hpw_warm.3.gz
lacks libhpwarm0 '\.(a|h|pc)$|libhpwarm\.so$|bin/'
lacks hpwarm 'sbin/|\.so(\.|$)|\.h$'
lacks hpwarmd 'usr/bin/|\.so(\.|$)|\.h$'
dpkg-deb -e "$(deb hpwarmd)" "$work/ctl"
grep -qx /etc/default/hpwarmd "$work/ctl/conffiles" || fail "hpwarmd: /etc/default/hpwarmd is not a conffile"
grep -q "deb-systemd-helper enable 'hpwarmd.service'" "$work/ctl/postinst" || fail "hpwarmd postinst does not enable hpwarmd.service"
grep -q '_dh_action=restart' "$work/ctl/postinst" || fail "hpwarmd postinst does not restart the service on upgrade"
grep -q 'if \[ -d /run/systemd/system \]' "$work/ctl/postinst" || fail "hpwarmd postinst does not guard systemctl for hosts without systemd"
for p in libhpwarm0 libhpwarm-dev; do
        [ "$(dpkg-deb -f "$(deb "$p")" Multi-Arch)" = same ] || fail "$p is not Multi-Arch: same"
done
dpkg-deb -x "$(deb libhpwarm0)" "$work/lib0"
soname=$(objdump -p "$work/lib0$lib/libhpwarm.so.0" | awk '$1=="SONAME"{print $2}')
[ "$soname" = libhpwarm.so.0 ] || fail "libhpwarm0: SONAME is '$soname', want libhpwarm.so.0"
dpkg-deb -I "$(deb libhpwarm0)" symbols >/dev/null 2>&1 || fail "libhpwarm0 has no symbols file"
dpkg-deb -x "$(deb hpwarmd)" "$work/d"
dpkg-deb -x "$(deb hpwarm)" "$work/d"
for b in "$work/d/usr/sbin/hpwarmd" "$work/d/usr/bin/hpwarm" "$work/lib0$lib/libhpwarm.so.0"; do
        sections=$(objdump -h "$b")
        if grep -q '\.debug_info' <<<"$sections"; then
                fail "$(basename "$b") is not stripped"
        fi
        id=$(readelf -n "$b" | awk '/Build ID/{print $3}')
        dbg=$(for p in hpwarmd-dbgsym hpwarm-dbgsym libhpwarm0-dbgsym; do dpkg-deb -c "$(deb "$p")"; done |
                grep -c "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug")
        [ -n "$id" ] && [ "$dbg" = 1 ] || fail "$(basename "$b"): no debug file for build id '$id' in a -dbgsym package"
done
[ "$failures" = 0 ] && echo "ok: contents, conffile, maintainer scripts, SONAME, multiarch, stripped + dbgsym"

# --- 4. throwaway root ----------------------------------------------------------
root=$work/root
for p in "${pkgs[@]}"; do dpkg-deb -x "$(deb "$p")" "$root"; done
upstream=${ver%%-*}
out=$("$root/usr/sbin/hpwarmd" --version 2>&1) || fail "hpwarmd --version: exit $?: $out"
[ "$out" = "hpwarmd $upstream" ] || fail "hpwarmd --version says '$out', want 'hpwarmd $upstream'"
out=$("$root/usr/bin/hpwarm" --version 2>&1) || fail "hpwarm --version: exit $?: $out"
[ "$out" = "hpwarm $upstream" ] || fail "hpwarm --version says '$out', want 'hpwarm $upstream'"
export PKG_CONFIG_PATH=$root$lib/pkgconfig
for m in libhpwarm hpwarm; do   # the module, and its old name kept as an alias
        mv_=$(pkg-config --modversion $m 2>&1) || fail "pkg-config does not find $m in $PKG_CONFIG_PATH: $mv_"
        [ "$mv_" = "$upstream" ] || fail "pkg-config --modversion $m says '$mv_', want $upstream"
done
cat >"$work/use.c" <<'EOF'
#include <hpwarm.h>
#include <stdio.h>
int main(void) { puts(hpw_version()); return 0; }
EOF
# shellcheck disable=SC2046
if cc -o "$work/use" "$work/use.c" $(pkg-config --cflags --libs libhpwarm) 2>"$work/cc.log"; then
        out=$(LD_LIBRARY_PATH=$root$lib "$work/use" 2>&1)
        [ "$out" = "$upstream" ] || fail "a program linked with pkg-config's flags prints '$out', want $upstream"
        deps=$(LD_LIBRARY_PATH=$root$lib ldd "$work/use")
        grep -qF "$root$lib/libhpwarm.so.0" <<<"$deps" ||
                fail "the program did not load libhpwarm.so.0 from the package: $deps"
else
        cat "$work/cc.log"
        fail "cannot build a program with pkg-config --cflags --libs libhpwarm"
fi
unset PKG_CONFIG_PATH
[ "$failures" = 0 ] && echo "ok: extracted root: hpwarmd/hpwarm --version, pkg-config, link and run against libhpwarm"

# --- 5. real install and purge ----------------------------------------------------
already=()
for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && already+=("$p")
done
if [ "$(id -u)" != 0 ]; then
        echo "skipped: real install (needs root)"
elif [ ${#already[@]} -gt 0 ]; then
        echo "skipped: real install: ${already[*]} already installed here (not touching them)"
else
        debs=()
        for p in "${pkgs[@]}"; do debs+=("$(deb "$p")"); done
        # Only our four packages may be installed: anything else would have to
        # be removed again and is a missing runtime dependency of this machine.
        extra=$(apt-get install -s -o DPkg::Lock::Timeout=600 --no-install-recommends "${debs[@]}" 2>/dev/null |
                awk '$1=="Inst"{print $2}' | grep -vxE 'hpwarmd|hpwarm|libhpwarm0|libhpwarm-dev')
        if [ -n "$extra" ]; then
                fail "installing the packages would also install: $extra (run scripts/deps.sh)"
        else
                group_existed=0
                getent group hpwarm >/dev/null && group_existed=1
                installed=1
                if ! apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${debs[@]}" \
                        >"$work/install.log" 2>&1; then
                        cat "$work/install.log"
                        fail "apt-get install of the packages"
                fi
                for p in "${pkgs[@]}"; do
                        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
                                fail "$p is not 'install ok installed' after installing"
                done
                [ "$(/usr/sbin/hpwarmd --version 2>&1)" = "hpwarmd $upstream" ] || fail "installed hpwarmd --version"
                [ "$(/usr/bin/hpwarm --version 2>&1)" = "hpwarm $upstream" ] || fail "installed hpwarm --version"
                [ "$(pkg-config --modversion libhpwarm 2>&1)" = "$upstream" ] || fail "pkg-config does not find the installed libhpwarm"
                [ -f /etc/default/hpwarmd ] || fail "/etc/default/hpwarmd not installed"
                getent group hpwarm >/dev/null || fail "postinst did not create the group hpwarm (SocketGroup= of hpwarmd.socket)"
                # deb-systemd-helper enables the units even where systemd is not
                # running, so they start at the next boot under systemd.
                [ -L /etc/systemd/system/multi-user.target.wants/hpwarmd.service ] ||
                        fail "hpwarmd.service not enabled (multi-user.target.wants)"
                [ -L /etc/systemd/system/sockets.target.wants/hpwarmd.socket ] ||
                        fail "hpwarmd.socket not enabled (sockets.target.wants)"
                # The Placement publisher needs the site's settings first.
                [ -e /etc/systemd/system/multi-user.target.wants/hpwarm-placement.service ] &&
                        fail "hpwarm-placement.service enabled on install (it needs /etc/default/hpwarm-placement first)"
                mkdir -p /var/lib/hpwarmd && touch /var/lib/hpwarmd/.hpwarm-deb-test
                installed=0
                if ! purge; then
                        installed=1
                        fail "purge of the packages"
                fi
                for p in "${pkgs[@]}"; do
                        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" && fail "$p still installed after purge"
                done
                for f in /etc/default/hpwarmd /usr/sbin/hpwarmd /var/lib/hpwarmd \
                        /etc/systemd/system/multi-user.target.wants/hpwarmd.service \
                        /etc/systemd/system/sockets.target.wants/hpwarmd.socket \
                        /etc/systemd/system/sysinit.target.wants/dev-hugepages1G.mount; do
                        [ -e "$f" ] || [ -L "$f" ] && fail "$f left behind after purge"
                done
                # The group stays on purge (Debian practice); this test made it, so
                # this test removes it again.
                if [ "$group_existed" = 0 ] && getent group hpwarm >/dev/null; then
                        delgroup --quiet --system hpwarm >/dev/null 2>&1 || groupdel hpwarm
                fi
                [ "$failures" = 0 ] && echo "ok: installed with apt-get (no systemd running: units enabled, not started), ran, purged clean"
        fi
fi

if [ "$failures" != 0 ]; then
        echo "FAIL: $failures check(s) failed"
        exit 1
fi
echo "ok: package.deb"
