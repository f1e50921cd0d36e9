#!/usr/bin/env bash
# build-image.sh: build the hpwarmd image from deploy/container/Containerfile
# with podman, without a registry.
#
#   build-image.sh [--root DIR] [--tag NAME] [--base NAME] [--base-tar FILE] [SRC]
#   build-image.sh [--root DIR] --podman PODMAN-ARGS...
#
# The Containerfile's stages start FROM the BASE build argument.  Where no
# registry is reachable, the base is made here: `mmdebstrap --variant=minbase
# bookworm` from the apt sources this host is configured with (an internal
# mirror on an air-gapped fleet), trimmed as debian:12-slim is (no manuals,
# docs or translations: dpkg path-exclude rules, kept in the image so the
# stages' apt-get installs skip them too), and `podman import`ed as --base
# (default localhost/hpwarm-base:bookworm).  An existing image of that name
# is reused; --base-tar FILE keeps the tarball too, for a second storage.
# The stages' apt-get then runs through the host's own apt configuration
# (`-v /etc/apt:/etc/apt:ro`, `--network host`), with downloaded packages
# cached in DIR/apt-archives, outside the image.
#
# Podman runs rootful with what works on every machine of this project's
# kind: runc (crun refuses hybrid cgroup hierarchies), the vfs storage driver
# (no overlay or fuse needed), cgroupfs, file events (no journald), and
# explicit --ulimit values (podman's default nofile is above this host's hard
# limit, and runc then fails).  --root DIR (default /var/lib/hpwarm-image)
# holds podman's storage, run state and the apt cache, so nothing outside it
# is touched; `rm -rf DIR` undoes everything.  --podman runs podman itself
# with those options (the test runs the image that way).
#
# Prints the image's name, id and size on success.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=/var/lib/hpwarm-image
tag=localhost/hpwarmd:dev
base=localhost/hpwarm-base:bookworm
base_tar=
src=
mode=build
while [ $# -gt 0 ]; do
        case $1 in
        --root) root=${2:?}; shift 2 ;;
        --tag) tag=${2:?}; shift 2 ;;
        --base) base=${2:?}; shift 2 ;;
        --base-tar) base_tar=${2:?}; shift 2 ;;
        --podman) mode=podman; shift; break ;;
        -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "build-image.sh: unknown option $1" >&2; exit 2 ;;
        *) src=$1; shift ;;
        esac
done
src=${src:-$here/../..}

for t in podman runc; do
        command -v "$t" >/dev/null || { echo "build-image.sh: $t not found (apt-get install podman runc mmdebstrap)" >&2; exit 3; }
done
mkdir -p "$root/storage" "$root/run" "$root/tmp" "$root/apt-archives"
# Each at most this shell's hard limit; nproc also at most 32768, which
# runc could set here where this host's 96365 was refused.
lim() { local h; h=$(ulimit -H "$1"); [ "$h" = unlimited ] || [ "$h" -gt "$2" ] && h=$2; echo "$h"; }
nofile=$(lim -n 65536)
nproc=$(lim -u 32768)
export TMPDIR=$root/tmp
pm() {
        podman --root "$root/storage" --runroot "$root/run" --tmpdir "$root/tmp" \
                --storage-driver vfs --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
}
ulimits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

if [ "$mode" = podman ]; then
        # `run` and `create` get the ulimits too: they must, for runc to start.
        case ${1:-} in
        run|create) cmd=$1; shift; pm "$cmd" "${ulimits[@]}" "$@" ;;
        *) pm "$@" ;;
        esac
        exit
fi

if ! pm image exists "$base"; then
        command -v mmdebstrap >/dev/null || { echo "build-image.sh: mmdebstrap not found" >&2; exit 3; }
        tar=${base_tar:-$root/tmp/base.tar}
        if [ ! -s "$tar" ]; then
                # The host's sources, as files mmdebstrap pastes in verbatim.
                srcs=()
                for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
                        [ -s "$f" ] && srcs+=("$f")
                done
                [ ${#srcs[@]} -gt 0 ] || { echo "build-image.sh: no apt sources on this host" >&2; exit 3; }
                # merged-usr hook: /usr merged as bookworm wants, without
                # the usrmerge package and the ~47 MB of perl it pulls in.
                mmdebstrap --quiet --variant=minbase --format=tar \
                        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
                        --dpkgopt='path-exclude=/usr/share/man/*' \
                        --dpkgopt='path-exclude=/usr/share/doc/*' \
                        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
                        --dpkgopt='path-exclude=/usr/share/info/*' \
                        --dpkgopt='path-exclude=/usr/share/locale/*' \
                        --dpkgopt='path-exclude=/usr/share/lintian/*' \
                        --aptopt='Acquire::Languages "none"' \
                        --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
                        bookworm "$tar.part" "${srcs[@]}"
                mv "$tar.part" "$tar"
        fi
        pm import --quiet "$tar" "$base" >/dev/null
        [ -n "$base_tar" ] || rm -f "$tar"
fi

pm build --quiet --pull=never --network host --build-arg "BASE=$base" \
        "${ulimits[@]}" -v /etc/apt:/etc/apt:ro -v "$root/apt-archives:/var/cache/apt/archives" \
        -f "$here/Containerfile" -t "$tag" "$src" >/dev/null
# The build stage's layers stay in DIR as the cache of the next build;
# `build-image.sh --root DIR --podman image prune` drops them.
pm image inspect --format '{{.Id}} {{.Size}}' "$tag" | while read -r id size; do
        echo "$tag $id $size bytes ($((size / 1000000)) MB)"
done
