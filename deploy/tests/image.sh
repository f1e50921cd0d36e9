#!/usr/bin/env bash
# deploy.image: build the DaemonSet's image from the repository with podman
# (deploy/container/build-image.sh: no registry, base from this host's apt
# sources) and run it as deploy/kubernetes/hpwarmd-daemonset.yaml does:
# host network, read-only root, every capability dropped but CHOWN and
# SYS_NICE, podman's default seccomp profile, TLS and bearer tokens.
#
#  1. `hpwarmd --version` in the image says what the daemon built here says;
#  2. the daemon in the image against a copy of the two-node sysfs fixture
#     (mounted at /host/sys, --sysfs-root=/host/sys) answers /v1/nodes over
#     TLS on the host's loopback, refuses a request without a token, and
#     stops on SIGTERM (podman stop) with exit 0;
#  3. under tests/real/guard.sh (the host lock; nr_hugepages restored; a
#     private hugetlbfs mount): the host's /sys at /host/sys and that mount
#     at /dev/hugepages (rslave, as HostToContainer), a real pool warmed
#     from inside the container is a file the host sees with the same inode
#     and all its pages, mapped from the host without taking one more free
#     page (the same pages), and gone from the host when deleted.
#
# Storage: everything podman keeps is under ROOT (a directory of the build
# tree): the image is built once per build tree, later runs reuse its
# layers.  Containers are removed when the test ends, however it ends.
# Exits 77 only where podman cannot run here (not installed, not root, no
# runc, `podman info` fails).
# Usage: image.sh SRC ROOT HPWARMD   (HPWARMD: the daemon built here)
#        image.sh --real SRC ROOT PORT   (step 3, run by guard.sh)
set -uo pipefail
real=0
[ "${1:-}" = --real ] && { real=1; shift; }
src=$(cd "${1:?source dir}" && pwd)
root=${2:?podman root dir}
build=$src/deploy/container/build-image.sh
tag=localhost/hpwarmd:test
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pm() { "$build" --root "$root" --podman "$@"; }
names=()
tmp=$(mktemp -d /tmp/hpwarm-image.XXXXXX)
cleanup() {
        for n in "${names[@]}"; do pm rm -f -t 0 "$n" >/dev/null 2>&1; done
        rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Certificate for 127.0.0.1, tokens: what the DaemonSet's Secrets hold.
secrets() {
        mkdir -p "$tmp/tls" "$tmp/tokens" "$tmp/state" "$tmp/run"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
                -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/tls/tls.key" -out "$tmp/tls/tls.crt" 2>/dev/null ||
                { fail "openssl req"; return 1; }
        echo "admin-$RANDOM$RANDOM" >"$tmp/tokens/admin.tokens"
        echo "read-$RANDOM$RANDOM" >"$tmp/tokens/read.tokens"
        chmod 0400 "$tmp/tokens/"* "$tmp/tls/tls.key"
}

# podman run as the DaemonSet runs the container; NAME PORT SYSFS [extra podman args] -- [extra daemon args]
run_daemonset() {
        local name=$1 port=$2 sysfs=$3
        shift 3
        local pargs=() dargs=()
        while [ $# -gt 0 ] && [ "$1" != -- ]; do pargs+=("$1"); shift; done
        [ "${1:-}" = -- ] && shift
        dargs=("$@")
        names+=("$name")
        pm run -d --name "$name" --network host --read-only --cap-drop ALL --cap-add CHOWN --cap-add SYS_NICE \
                --security-opt no-new-privileges \
                -v "$sysfs:/host/sys" -v "$tmp/state:/var/lib/hpwarmd" -v "$tmp/run:/run/hpwarmd" \
                -v "$tmp/tokens:/etc/hpwarmd/tokens:ro" -v "$tmp/tls:/etc/hpwarmd/tls:ro" "${pargs[@]}" \
                "$tag" --sysfs-root=/host/sys --state-dir=/var/lib/hpwarmd --socket=/run/hpwarmd/api.sock \
                --listen="127.0.0.1:$port" --tls-cert=/etc/hpwarmd/tls/tls.crt --tls-key=/etc/hpwarmd/tls/tls.key \
                --token-file=/etc/hpwarmd/tokens/admin.tokens --read-token-file=/etc/hpwarmd/tokens/read.tokens \
                --log-level=info "${dargs[@]}" >/dev/null
}

api() {  # METHOD PATH [BODY]: prints the body, then the status on its own line
        local token
        token=$(cat "$tmp/tokens/admin.tokens")
        curl -sS --noproxy '*' --max-time 60 --cacert "$tmp/tls/tls.crt" -H "Authorization: Bearer $token" \
                -X "$1" ${3:+-H 'Content-Type: application/json' --data "$3"} -w '\n%{http_code}\n' \
                "https://127.0.0.1:$port$2"
}

# Wait (bounded: it polls for a state, the verdict is not a race) for the
# daemon in container NAME to answer /v1/health.
wait_up() {
        for _ in $(seq 200); do
                curl -s --noproxy '*' --max-time 2 --cacert "$tmp/tls/tls.crt" "https://127.0.0.1:$2/v1/health" \
                        >/dev/null 2>&1 && return 0
                [ "$(pm inspect -f '{{.State.Running}}' "$1" 2>/dev/null)" = true ] || break
                sleep 0.1
        done
        fail "$1: the daemon never answered /v1/health"; pm logs "$1" 2>&1 | tail -20
        return 1
}

if [ "$real" = 1 ]; then
        port=${3:?port}
        mnt=${HPW_TEST_HUGETLBFS:?run under tests/real/guard.sh}
        secrets || exit 1
        mkdir -p "$mnt/hpwarm"
        name=hpwarm-image-real-$$
        # As the DaemonSet: the host's /sys, the host's hugetlbfs mount with
        # HostToContainer propagation (rslave).
        run_daemonset "$name" "$port" /sys -v "$mnt:/dev/hugepages:rslave" -- --hugetlbfs=2M=/dev/hugepages/hpwarm ||
                { fail "podman run (real)"; exit 1; }
        wait_up "$name" "$port" || exit 1
        nodefile=/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages
        out=$(api PUT /v1/pools/image-real '{"node":0,"size":"8M","page_size":"2M","reserve":true}')
        code=${out##*$'\n'}
        case $code in 200|201) ;; *) fail "PUT pool: $out"; exit 1 ;; esac
        out=$(api GET '/v1/pools/image-real?wait=ready&timeout=60')
        body=${out%$'\n'*}
        state=$(jq -r .state <<<"$body")
        [ "$state" = ready ] || { fail "pool not ready: $body"; pm logs "$name" 2>&1 | tail; exit 1; }
        cpath=$(jq -r .path <<<"$body")
        hpath=$mnt/${cpath#/dev/hugepages/}
        [ -f "$hpath" ] || { fail "the pool's file $cpath is not on the host at $hpath"; exit 1; }
        in_ino=$(pm exec "$name" stat -c %i "$cpath")
        host_ino=$(stat -c %i "$hpath")
        [ "$in_ino" = "$host_ino" ] || fail "inode in the container $in_ino, on the host $host_ino"
        blocks=$(stat -c '%b %B' "$hpath")
        [ $(( ${blocks% *} * ${blocks#* } )) = $((8 << 20)) ] || fail "host sees ${blocks% *} blocks of the 8 MiB pool"
        # Map the file from the host and touch every page: the pages are
        # the ones the container's daemon faulted in, so no free page goes.
        before=$(cat "$nodefile")
        python3 - "$hpath" <<'EOF' || fail "host mmap of the pool file"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 8 << 20, mmap.MAP_SHARED)
assert all(m[i] == 0 for i in range(0, 8 << 20, 2 << 20)), "a warmed page is not zero"
m.close()
os.close(fd)
EOF
        after=$(cat "$nodefile")
        [ "$before" = "$after" ] || fail "mapping the pool from the host took pages: free $before -> $after"
        echo "ok: pool warmed in the container: $cpath = host $hpath, inode $host_ino, 8 MiB resident, free pages $before before and after the host's mapping"
        out=$(api DELETE /v1/pools/image-real)
        [ "${out##*$'\n'}" = 204 ] || fail "DELETE: $out"
        [ ! -e "$hpath" ] || fail "the pool's file is still on the host after DELETE"
        pm stop -t 30 "$name" >/dev/null
        rc=$(pm inspect -f '{{.State.ExitCode}}' "$name")
        [ "$rc" = 0 ] || { fail "daemon (real) exited $rc"; pm logs "$name" 2>&1 | tail; }
        exit $((failures > 0))
fi

hpwarmd=${3:?daemon binary}
for t in podman runc mmdebstrap curl jq openssl python3; do
        command -v "$t" >/dev/null || { echo "SKIP: $t not installed (scripts/deps.sh --test)"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: podman runs rootful here: needs root"; exit 77; }
pm info >/dev/null 2>&1 || { echo "SKIP: podman cannot run here:"; pm info 2>&1 | tail -3; exit 77; }

start=$(date +%s)
if ! built=$("$build" --root "$root" --tag "$tag" "$src" 2>&1); then
        echo "$built" | tail -30
        echo "FAIL: build-image.sh"
        exit 1
fi
echo "built in $(($(date +%s) - start)) s: ${built##*$'\n'}"

# 1. --version
want=$("$hpwarmd" --version 2>&1)
got=$(pm run --rm --network none "$tag" --version 2>&1)
[ "$got" = "$want" ] || fail "--version in the image: '$got', built here: '$want'"

# 2. fixture sysfs, TLS and tokens on the host's loopback
secrets || exit 1
cp -a "$src/tests/fixtures/two-node" "$tmp/sys"
port=$(free_port)
name=hpwarm-image-fixture-$$
run_daemonset "$name" "$port" "$tmp/sys" || { fail "podman run"; exit 1; }
if wait_up "$name" "$port"; then
        out=$(api GET /v1/nodes)
        [ "${out##*$'\n'}" = 200 ] || fail "GET /v1/nodes: $out"
        n=$(jq '.nodes | length' <<<"${out%$'\n'*}" 2>/dev/null)
        [ "$n" = 2 ] || fail "GET /v1/nodes: $n nodes, the fixture has 2"
        code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --cacert "$tmp/tls/tls.crt" \
                "https://127.0.0.1:$port/v1/pools")
        [ "$code" = 401 ] || fail "GET /v1/pools without a token: $code, want 401"
        pm stop -t 30 "$name" >/dev/null
        rc=$(pm inspect -f '{{.State.ExitCode}}' "$name")
        [ "$rc" = 0 ] || { fail "daemon exited $rc on SIGTERM"; pm logs "$name" 2>&1 | tail; }
        [ "$failures" = 0 ] && echo "ok: --version; /v1/nodes over TLS from the fixture; 401 without a token; exit 0 on stop"
fi
pm rm -f "$name" >/dev/null 2>&1

# 3. a real pool, under the host lock
"$src/tests/real/guard.sh" "$0" --real "$src" "$root" "$(free_port)"
rc=$?
case $rc in
0) ;;
77) echo "SKIP (real pool): guard.sh says hugepages cannot be used here" ;;
*) failures=$((failures + 1)) ;;
esac
echo "image test took $(($(date +%s) - start)) s"
[ "$failures" = 0 ] || { echo "$failures failure(s)"; exit 1; }
exit 0
