#!/bin/sh
# build-stage.sh SRC OUT: the build stage of deploy/container/Containerfile.
#
# Configures SRC with only what ships (no tests), builds the daemon, strips
# it and installs it as OUT/usr/sbin/hpwarmd, then runs `hpwarmd --version`
# as a smoke test.  The Containerfile runs it in its Debian 12 build stage;
# ctest deploy.container runs it on the build machine (same Debian 12, same
# -dev packages), which is how it is tested without a container engine.
# Needs: cmake, a C compiler, pkg-config and the -dev packages listed in the
# Containerfile.  JOBS (default 2) sets the build's parallelism.
set -eu
src=${1:?source dir}
out=${2:?output dir}
build=$(mktemp -d "${TMPDIR:-/tmp}/hpwarmd-build.XXXXXX")
trap 'rm -rf "$build"' EXIT

cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
        -DCMAKE_INSTALL_PREFIX=/usr >/dev/null
cmake --build "$build" --target hpwarmd -j "${JOBS:-2}" >/dev/null
install -D -m 0755 -s "$build/server/hpwarmd" "$out/usr/sbin/hpwarmd"
"$out/usr/sbin/hpwarmd" --version
