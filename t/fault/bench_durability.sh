#!/usr/bin/env bash
# bench_durability.sh - SET throughput and p50/p99 latency of larder per
# sync mode (always, everysec, no) next to redis-server with appendonly yes
# and the same appendfsync, at 1, 16 and 64 clients. Fresh data dirs on the
# same file system, free ports, each run bounded. Prints a markdown table.
#
#   t/fault/bench_durability.sh [path/to/larder-server]
#
# Environment: BENCH_DIR (parent of the data dirs; default /var/tmp, which
# must be a real disk, not tmpfs, or fsync costs nothing), BENCH_N1 and
# BENCH_N (requests for 1 client / for 16 and 64; default 3000 / 30000),
# BENCH_WORKERS (larder --workers; default: larder's own default),
# BENCH_CLIENTS (default "1 16 64"), BENCH_MODES (default "always everysec no").
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
larder=${1:-$here/../../build/larder-server}
parent=${BENCH_DIR:-/var/tmp}
n1=${BENCH_N1:-3000}
n=${BENCH_N:-30000}
clients=${BENCH_CLIENTS:-"1 16 64"}
modes=${BENCH_MODES:-"always everysec no"}
run_limit=120           # seconds, per redis-benchmark run

for tool in redis-server redis-benchmark redis-cli python3; do
    command -v "$tool" >/dev/null || { echo "missing $tool" >&2; exit 2; }
done
[ -x "$larder" ] || { echo "no larder-server at $larder" >&2; exit 2; }

work=$(mktemp -d "$parent/bench-durability.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]:-}"; do
        [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_ping() {
    local port=$1 i
    for i in $(seq 100); do
        redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && return 0
        sleep 0.1
    done
    echo "server on port $port did not start" >&2
    return 1
}

# start_server larder|redis MODE DIR -> sets $port and appends the pid
start_server() {
    local kind=$1 mode=$2 dir=$3
    port=$(free_port)
    mkdir -p "$dir"
    if [ "$kind" = larder ]; then
        "$larder" --port "$port" --dir "$dir" --logfile "$dir/log" \
            --sync "$mode" ${BENCH_WORKERS:+--workers "$BENCH_WORKERS"} &
    else
        redis-server --port "$port" --dir "$dir" --logfile "$dir/log" \
            --save '' --appendonly yes --appendfsync "$mode" &
    fi
    pids+=($!)
    wait_ping "$port"
}

stop_last() {
    local p=${pids[-1]}
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    unset 'pids[-1]'
}

# bench PORT CLIENTS REQUESTS -> "rps p50 p99"
bench() {
    timeout "$run_limit" redis-benchmark -p "$1" -t set -r 100000 -d 100 \
        -n "$3" -c "$2" --csv 2>/dev/null |
        python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
h, r = rows[0], rows[1]
d = dict(zip(h, r))
print("%.0f %s %s" % (float(d["rps"]), d["p50_latency_ms"], d["p99_latency_ms"]))'
}

echo "# $(date -u +%FT%TZ) $(nproc) CPUs; data under $parent ($(df -T "$parent" | awk 'NR==2{print $2}')); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# redis-benchmark -t set -r 100000 -d 100 -n N -c C --csv; N=$n1 for 1 client, $n otherwise"
echo
echo "| sync | clients | larder SET/s | larder p50 ms | larder p99 ms | redis SET/s | redis p50 ms | redis p99 ms |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for mode in $modes; do
    for c in $clients; do
        reqs=$n
        [ "$c" -eq 1 ] && reqs=$n1
        start_server larder "$mode" "$work/larder-$mode-$c"
        read -r l_rps l_p50 l_p99 < <(bench "$port" "$c" "$reqs")
        stop_last
        start_server redis "$mode" "$work/redis-$mode-$c"
        read -r r_rps r_p50 r_p99 < <(bench "$port" "$c" "$reqs")
        stop_last
        echo "| $mode | $c | $l_rps | $l_p50 | $l_p99 | $r_rps | $r_p50 | $r_p99 |"
    done
done
