#!/usr/bin/env bash
# /healthz under load: berth-gateway beside nginx serving a static file of
# the same size, same wrk settings, alternating runs; prints medians and
# ratios, and the resident memory of berthd + gateway idle and after load.
#
#   bench/healthz.sh [BUILD_DIR]     (default: build)
#   RUNS=5 DURATION=5 CONNS=50 THREADS=2 bench/healthz.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${RUNS:-5} duration=${DURATION:-5} conns=${CONNS:-50} threads=${THREADS:-2}
for tool in wrk nginx unshare curl; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool (apt-get install wrk nginx-light)" >&2; exit 1; }
done

. "$src/bench/lib.sh"
bench_need berthd berth-gateway
dir=$bench_dir
bport=$((20000 + RANDOM % 10000)) nport=$((bport + 1))
npid=''
trap '[ -n "$npid" ] && kill "$npid" 2>/dev/null; bench_cleanup' EXIT

unshare -p -f --mount-proc "$build/berthd" --config "$src/images/minimal/berth.conf" \
	--listen "127.0.0.1:$bport" --state-dir "$dir/state" 2>"$dir/berthd.log" &
upid=$!
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$bport/healthz" -o "$dir/body" 2>/dev/null && break
	sleep 0.1
done
[ -s "$dir/body" ] || { echo "bench: berthd did not come up" >&2; cat "$dir/berthd.log" >&2; exit 1; }

mkdir -p "$dir/www" "$dir/tmp"
cp "$dir/body" "$dir/www/healthz"
sed -e "s|@DIR@|$dir|g" -e "s|@PORT@|$nport|g" "$src/bench/nginx.conf.in" >"$dir/nginx.conf"
nginx -c "$dir/nginx.conf" &
npid=$!
for _ in $(seq 50); do
	curl -fsS "http://127.0.0.1:$nport/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done

berthd_pid=$(bench_init_pid)
gateway_pid=$(tr ' ' '\n' <"/proc/$berthd_pid/task/$berthd_pid/children" |
	while read -r p; do grep -q berth-gateway "/proc/$p/cmdline" 2>/dev/null && echo "$p"; done | head -1)
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
idle_b=$(rss "$berthd_pid") idle_g=$(rss "$gateway_pid")

# One wrk run: prints "REQS_PER_SEC P99_MS".
run() {
	wrk -t"$threads" -c"$conns" -d"${duration}s" --latency "$1" | awk '
		/Requests\/sec/ { rps = $2 }
		/^ +99%/ { v = $2; u = v; sub(/[a-z]+$/, "", v); sub(/^[0-9.]+/, "", u);
			if (u == "us") v /= 1000; else if (u == "s") v *= 1000; p99 = v }
		END { printf "%s %.3f\n", rps, p99 }'
}

: >"$dir/b" && : >"$dir/n"
for _ in $(seq "$runs"); do
	run "http://127.0.0.1:$bport/healthz" >>"$dir/b"
	run "http://127.0.0.1:$nport/healthz" >>"$dir/n"
done
b_rps=$(cut -d' ' -f1 "$dir/b" | bench_median) b_p99=$(cut -d' ' -f2 "$dir/b" | bench_median)
n_rps=$(cut -d' ' -f1 "$dir/n" | bench_median) n_p99=$(cut -d' ' -f2 "$dir/n" | bench_median)
load_b=$(rss "$berthd_pid") load_g=$(rss "$gateway_pid")

echo "healthz: wrk -t$threads -c$conns -d${duration}s, median of $runs runs each"
printf '  %-28s %12s req/s   p99 %8s ms\n' "berth-gateway /healthz" "$b_rps" "$b_p99"
printf '  %-28s %12s req/s   p99 %8s ms\n' "nginx static file (1 worker)" "$n_rps" "$n_p99"
awk -v a="$b_rps" -v b="$n_rps" -v c="$b_p99" -v d="$n_p99" \
	'BEGIN { printf "  ratio berth/nginx: %.2fx req/s, %.2fx p99\n", a / b, c / d }'
echo "resident memory (KiB): berthd $idle_b + gateway $idle_g = $((idle_b + idle_g)) idle;" \
	"$load_b + $load_g = $((load_b + load_g)) after load"
