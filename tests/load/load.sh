#!/usr/bin/env bash
# load.sh [HPWARMD]: bounded loopback load test of hpwarmd on real hugepages
# (README "Measured", load).  While pools warm, wrk hammers GET /v1/pools/NAME and
# GET /v1/nodes; prints requests/s, p50/p99 latency, errors and the daemon's
# peak RSS (VmHWM).  Fails when any answer is not 2xx or a socket errors.
#
# One pool (POOL_SIZE, threads=1 so it warms as slowly as it can) is the GET
# target; a second one (CHURN_SIZE) is warmed, waited for and deleted in a
# loop for the whole run, so a warm is always in progress under the load.
#
# Environment (defaults in brackets):
#   HPWARMD      daemon binary [build/server/hpwarmd]
#   POOL_SIZE    [4G]   CHURN_SIZE [2G]   (2 MiB pages on node 0)
#   DURATION     seconds per wrk run [10]   THREADS [2]   CONNECTIONS [16]
# Re-executes itself under tests/real/guard.sh (host lock, hugepage counts
# restored, private hugetlbfs mount); exits 77 where guard.sh skips.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [[ -z ${HPW_TEST_HUGETLBFS:-} ]]; then
        exec "$here/../real/guard.sh" "$0" "$@"
fi

hpwarmd=${1:-${HPWARMD:-$here/../../build/server/hpwarmd}}
pool_size=${POOL_SIZE:-4G}
churn_size=${CHURN_SIZE:-2G}
duration=${DURATION:-10}
threads=${THREADS:-2}
conns=${CONNECTIONS:-16}
node0=/sys/devices/system/node/node0/hugepages/hugepages-2048kB

command -v wrk >/dev/null || { echo "load: wrk is not installed (Debian package wrk)" >&2; exit 77; }
[[ -x $hpwarmd ]] || { echo "load: no daemon binary at $hpwarmd" >&2; exit 2; }

to_pages() { # SIZE with G or M suffix -> 2 MiB pages
        case $1 in
        *G) echo $(( ${1%G} * 512 )) ;;
        *M) echo $(( ${1%M} / 2 )) ;;
        *) echo "load: size $1 must end in G or M" >&2; exit 2 ;;
        esac
}
want=$(( $(to_pages "$pool_size") + $(to_pages "$churn_size") ))
echo "$want" > "$node0/nr_hugepages"
got=$(cat "$node0/nr_hugepages")
if (( got < want )); then
        echo "load: SKIP: the kernel gave $got of $want 2 MiB pages on node 0" >&2
        exit 77
fi

work=$(mktemp -d /tmp/hpwarm-load.XXXXXX)
pid=
churn=
cleanup() {
        local rc=$?
        [[ -n $churn ]] && kill "$churn" 2>/dev/null && wait "$churn" 2>/dev/null
        if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
                for p in load churn; do
                        curl -s -o /dev/null -X DELETE "$base/v1/pools/$p" || true
                done
                kill -TERM "$pid"
                wait "$pid" 2>/dev/null || true
        fi
        rm -rf "$work" "$HPW_TEST_HUGETLBFS/hpwarm-load"
        exit "$rc"
}
trap cleanup EXIT

"$hpwarmd" --listen 127.0.0.1:0 --allow-unauthenticated-tcp --sysfs-root /sys --state-dir "$work/state" \
        --hugetlbfs "2M=$HPW_TEST_HUGETLBFS/hpwarm-load" --log-level notice 2>"$work/log" &
pid=$!
port=
for _ in $(seq 100); do
        port=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/log" | head -1 | sed 's/.*://') || true
        [[ -n $port ]] && break
        sleep 0.1
done
[[ -n $port ]] || { echo "load: hpwarmd did not start:" >&2; cat "$work/log" >&2; exit 1; }
base=http://127.0.0.1:$port

put() { # NAME SIZE -> HTTP status
        curl -s -o "$work/put.json" -w '%{http_code}' -X PUT -H 'Content-Type: application/json' \
                -d "{\"node\": 0, \"size\": \"$2\", \"threads\": 1}" "$base/v1/pools/$1"
}
state() { curl -s "$base/v1/pools/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }

code=$(put load "$pool_size")
[[ $code == 201 ]] || { echo "load: PUT load $pool_size: $code $(cat "$work/put.json")" >&2; exit 1; }

# Keep a warm running for the whole test.
(
        set +e
        n=0
        while :; do
                [[ $(put churn "$churn_size") == 201 ]] || { sleep 0.2; continue; }
                curl -s -o /dev/null "$base/v1/pools/churn?wait=ready&timeout=120"
                curl -s -o /dev/null -X DELETE "$base/v1/pools/churn"
                n=$((n + 1))
                echo "$n" > "$work/churn-cycles"
        done
) &
churn=$!

# wrk prints "Non-2xx or 3xx responses: N" and "Socket errors: ..." only when
# there are some.
run_wrk() { # PATH [THREADS CONNECTIONS]
        local out=$work/wrk.out t=${2:-$threads} c=${3:-$conns}
        wrk -t"$t" -c"$c" -d"${duration}s" --latency "$base$1" > "$out"
        local rps p50 p99 non2xx sockerr
        rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
        p50=$(awk '$1 == "50%" {print $2}' "$out")
        p99=$(awk '$1 == "99%" {print $2}' "$out")
        non2xx=$(awk -F': *' '/Non-2xx or 3xx responses/ {print $2}' "$out")
        sockerr=$(grep -o 'Socket errors:.*' "$out" || true)
        printf 'load: -c%-2s GET %-16s %10s req/s  p50 %8s  p99 %8s  non-2xx %s  %s\n' "$c" "$1" "$rps" "$p50" "$p99" \
                "${non2xx:-0}" "${sockerr:-socket errors 0}"
        [[ -z $non2xx && -z $sockerr ]]
}

status=0
echo "load: hpwarmd on $base, pool load=$pool_size warming (threads 1), churn=$churn_size re-warming in a loop;" \
        "wrk -t$threads -c$conns -d${duration}s --latency"
echo "load: pool load is $(state load) at start"
run_wrk /v1/pools/load || status=1
echo "load: pool load is $(state load) after the first run"
run_wrk /v1/nodes || status=1
# The runs above saturate both CPUs (closed loop); one connection shows the
# latency a single scheduler sees while a warm runs.
run_wrk /v1/pools/load 1 1 || status=1
kill "$churn" 2>/dev/null; wait "$churn" 2>/dev/null || true
churn=
hwm=$(awk '/^VmHWM:/ {print $2, $3}' "/proc/$pid/status")
rss=$(awk '/^VmRSS:/ {print $2, $3}' "/proc/$pid/status")
echo "load: churn pool warmed $(cat "$work/churn-cycles" 2>/dev/null || echo 0) times during the runs"
echo "load: hpwarmd VmHWM $hwm (peak RSS), VmRSS $rss now"
kill -0 "$pid" || { echo "load: hpwarmd died" >&2; status=1; }
(( status == 0 )) && echo "load: ok: no errors" || echo "load: FAILED: errors above" >&2
exit $status
