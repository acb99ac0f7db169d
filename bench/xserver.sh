#!/bin/bash
# xserver.sh: the desktop's X and VNC server, two ways, on the same work:
# TigerVNC's Xvnc (X server and RFB server in one process) against Xvfb
# with x11vnc beside it. Per run: time from launch to the first
# framebuffer update over RFB; then the root window changes colour every
# 50 ms for DURATION seconds while an RFB client pulls raw updates: bytes
# delivered, CPU seconds the server side spent per MB, and its resident
# memory (both processes for Xvfb + x11vnc).
#
#   bench/xserver.sh [RUNS (5)] [DURATION (5)] [GEOMETRY (1280x800)]
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
build=''
# shellcheck source=lib.sh
. "$src/bench/lib.sh"

runs=${1:-5}
duration=${2:-5}
geometry=${3:-1280x800}
display=:57
port=5957
py=/usr/bin/python3

for prog in Xvnc Xvfb x11vnc xsetroot; do
	command -v "$prog" >/dev/null || { echo "bench: $prog is missing" >&2; exit 1; }
done

pids=()
kill_all() {
	[ "${#pids[@]}" -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
	[ "${#pids[@]}" -eq 0 ] || wait "${pids[@]}" 2>/dev/null || true
	pids=()
	rm -f "/tmp/.X11-unix/X${display#:}" "/tmp/.X${display#:}-lock"
}
trap 'kill_all; bench_cleanup' EXIT

# Clock ticks of the given pids (utime + stime).
ticks() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "$t"
}

rss_kib() {
	local p t=0
	for p in "$@"; do
		t=$((t + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status")))
	done
	echo "$t"
}

now_ms() { date +%s%3N; }

# Waits until an RFB client gets its first update: prints the ms since $1.
first_update() {
	local t0=$1 i
	for i in $(seq 1 500); do
		if $py "$src/bench/rfbpull.py" tcp "127.0.0.1:$port" 0 >/dev/null 2>&1; then
			echo $(($(now_ms) - t0))
			return
		fi
		sleep 0.01
	done
	echo "bench: no RFB server on $port" >&2
	exit 1
}

start_xvnc() {
	Xvnc "$display" -geometry "$geometry" -depth 24 -rfbport "$port" \
	    -localhost -SecurityTypes None -nolisten tcp \
	    >"$bench_dir/server.log" 2>&1 &
	pids=($!)
}

start_xvfb() {
	Xvfb "$display" -screen 0 "${geometry}x24" -nolisten tcp \
	    >"$bench_dir/server.log" 2>&1 &
	pids=($!)
	for _ in $(seq 1 500); do
		[ -e "/tmp/.X11-unix/X${display#:}" ] && break
		sleep 0.01
	done
	x11vnc -display "$display" -rfbport "$port" -localhost -nopw \
	    -forever -shared -quiet >>"$bench_dir/server.log" 2>&1 &
	pids+=($!)
}

one_run() {
	local kind=$1 t0 ready tk0 tk1 out bytes rss animator
	t0=$(now_ms)
	"start_$kind"
	ready=$(first_update "$t0")
	(while :; do
		for c in red green blue; do
			DISPLAY=$display xsetroot -solid "$c"
			sleep 0.05
		done
	done) &
	animator=$!
	tk0=$(ticks "${pids[@]}")
	out=$($py "$src/bench/rfbpull.py" tcp "127.0.0.1:$port" "$duration")
	tk1=$(ticks "${pids[@]}")
	rss=$(rss_kib "${pids[@]}")
	kill "$animator"
	wait "$animator" 2>/dev/null || true
	kill_all
	bytes=$(echo "$out" | awk '{print $3}')
	awk -v r="$ready" -v b="$bytes" -v t=$((tk1 - tk0)) -v hz="$(getconf CLK_TCK)" \
	    -v rss="$rss" -v d="$duration" \
	    'BEGIN {mb = b / 1048576; printf "%s %.1f %.4f %s\n", r, mb / d, (t / hz) / mb, rss}'
}

echo "geometry $geometry, $runs runs, $duration s of motion each"
printf '%-16s %12s %10s %12s %10s\n' server "ready (ms)" "MB/s" "CPU s/MB" "RSS (KiB)"
for kind in xvnc xvfb; do
	: >"$bench_dir/$kind"
	for _ in $(seq 1 "$runs"); do
		one_run "$kind" >>"$bench_dir/$kind"
	done
	label=$([ "$kind" = xvnc ] && echo "Xvnc" || echo "Xvfb + x11vnc")
	printf '%-16s %12s %10s %12s %10s\n' "$label" \
	    "$(cut -d' ' -f1 "$bench_dir/$kind" | bench_median)" \
	    "$(cut -d' ' -f2 "$bench_dir/$kind" | bench_median)" \
	    "$(cut -d' ' -f3 "$bench_dir/$kind" | bench_median)" \
	    "$(cut -d' ' -f4 "$bench_dir/$kind" | bench_median)"
done
