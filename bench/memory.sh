#!/usr/bin/env bash
# Resident memory of the init: berthd as PID 1 supervising 20 trivial
# services (sleep 1000), and without any, beside tini and dumb-init each
# as PID 1 of one sleep 1000. Prints VmRSS and PSS in KiB (medians of RUNS
# starts each) and the ratios. The gateway, a process of its own, is shown
# apart.
#
#   bench/memory.sh [BUILD_DIR]     (default: build)
#   RUNS=3 SERVICES=20 bench/memory.sh
#
# Installs tini and dumb-init with apt-get when they are missing.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${RUNS:-3} nservices=${SERVICES:-20}
if ! command -v tini >/dev/null || ! command -v dumb-init >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y tini dumb-init >/dev/null
fi
. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth
dir=$bench_dir

rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
pss() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup"; }
# The init's host pid: the child of unshare.
wait_until() { # SECONDS CMD...: polls CMD every 50 ms
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || { echo "bench: timed out waiting for: $*" >&2; exit 1; }
		sleep 0.05
	done
}

# berthd with N services: prints "BERTHD_RSS BERTHD_PSS GATEWAY_RSS".
berthd_run() {
	local n=$1 run="$dir/berthd" pid gw i kids=()
	rm -rf "$run" && mkdir -p "$run"
	{
		cat "$src/images/minimal/berth.conf"
		for i in $(seq "$n"); do
			printf '\n[service s%d]\ncommand = sleep 1000\n' "$i"
		done
	} >"$run/berth.conf"
	unshare -p -f --mount-proc "$build/berthd" --config "$run/berth.conf" \
		--listen "127.0.0.1:$((30000 + RANDOM % 10000))" --state-dir "$run/state" 2>"$run/log" &
	upid=$!
	wait_until 10 test -S "$run/state/berthd.sock"
	# Every service and the gateway ready.
	wait_until 10 sh -c "'$build/berth' --socket '$run/state/berthd.sock' --json state 2>/dev/null |
		grep -o '\"state\":\"ready\"' | wc -l | grep -qx $((n + 1))"
	pid=$(bench_init_pid)
	sleep 0.5 # let the first requests' allocations settle
	gw=''
	read -ra kids <"/proc/$pid/task/$pid/children" || true
	for c in "${kids[@]}"; do
		grep -q berth-gateway "/proc/$c/cmdline" 2>/dev/null && gw=$c
	done
	echo "$(rss "$pid") $(pss "$pid") $(rss "$gw")"
	bench_stop
}

# A peer init with one sleep 1000: prints "RSS PSS".
peer_run() {
	local pid
	unshare -p -f --mount-proc "$@" sleep 1000 &
	upid=$!
	wait_until 10 grep -q . "/proc/$upid/task/$upid/children"
	pid=$(bench_init_pid)
	wait_until 10 grep -q . "/proc/$pid/task/$pid/children"
	sleep 0.5
	echo "$(rss "$pid") $(pss "$pid")"
	bench_stop
}

: >"$dir/bn" && : >"$dir/b0" && : >"$dir/tini" && : >"$dir/dumb"
for _ in $(seq "$runs"); do
	berthd_run "$nservices" >>"$dir/bn"
	berthd_run 0 >>"$dir/b0"
	peer_run tini -s -- >>"$dir/tini"
	peer_run dumb-init >>"$dir/dumb"
done
col() { cut -d' ' -f"$2" "$dir/$1" | bench_median; }
bn=$(col bn 1) bnp=$(col bn 2) gw=$(col bn 3)
b0=$(col b0 1) b0p=$(col b0 2)
ti=$(col tini 1) tip=$(col tini 2)
di=$(col dumb 1) dip=$(col dumb 2)

printf '%-50s %8s %8s\n' "init memory, KiB (median of $runs starts each)" VmRSS PSS
printf '  %-48s %8s %8s\n' "berthd, $nservices services + gateway" "$bn" "$bnp"
printf '  %-48s %8s %8s\n' "berthd, gateway only" "$b0" "$b0p"
printf '  %-48s %8s\n' "berth-gateway (a process of its own)" "$gw"
printf '  %-48s %8s %8s\n' "tini, one service" "$ti" "$tip"
printf '  %-48s %8s %8s\n' "dumb-init, one service" "$di" "$dip"
awk -v bn="$bn" -v b0="$b0" -v n="$nservices" -v ti="$ti" -v di="$di" -v gw="$gw" -v bnp="$bnp" -v tip="$tip" -v dip="$dip" 'BEGIN {
	printf "  per service in berthd: %.1f KiB\n", (bn - b0) / n
	printf "  ratio berthd/tini: %.1fx RSS, %.1fx PSS; berthd/dumb-init: %.1fx RSS, %.1fx PSS\n",
	    bn / ti, bnp / tip, bn / di, bnp / dip
	printf "  ratio berthd+gateway/tini: %.1fx RSS\n", (bn + gw) / ti
}'
