#!/usr/bin/env bash
# The gateway's desktop relays against their peers, on the same servers:
#
# noVNC: an RFB client pulls raw full-screen updates (the root window
# changes colour every 50 ms) for DURATION seconds through the gateway's
# /novnc/websockify, through websockify, and straight from Xvnc (the
# ceiling). Per path: MB/s, the relay's CPU seconds per MB, its RSS.
#
# CDP: round trips of Browser.getVersion to a headless Chromium, straight
# to it, through the TCP relay (relay 1) and through /v1/cdp (relay 2):
# median and p99.
#
#   bench/relays.sh [BUILD_DIR]         (default: build)
#   RUNS=5 DURATION=5 COUNT=2000 bench/relays.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${RUNS:-5} duration=${DURATION:-5} count=${COUNT:-2000}
py=/usr/bin/python3
. "$src/bench/lib.sh"
bench_need berthd berth-gateway
for tool in Xvnc xsetroot websockify chromium; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
dir=$bench_dir
pids=()
finish() {
	[ "${#pids[@]}" -eq 0 ] || kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	bench_cleanup
}
trap finish EXIT

free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# CPU ticks of a relay and of its children reaped so far (websockify
# serves each client from a child of its own).
ticks() { awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"; }
# Resident KiB of a process and its children.
tree_rss() {
	local p t=0
	for p in $1 $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		t=$((t + $(awk '/^VmRSS/ {print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
	done
	echo "$t"
}
wait_port() {
	local i
	for i in $(seq 1 500); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return
		sleep 0.02
	done
	echo "bench: nothing listens on $1" >&2
	exit 1
}

disp=$((400 + RANDOM % 100))
rfb=$(free_port) gw=$(free_port) wsk=$(free_port) cdp=$(free_port) relay=$(free_port)
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/token")
token=$(cat "$dir/token")
profile=$dir/chromium

Xvnc ":$disp" -geometry 1280x800 -depth 24 -rfbport "$rfb" -localhost \
    -SecurityTypes None -nolisten tcp >"$dir/xvnc.log" 2>&1 &
pids+=($!)
wait_port "$rfb"
(while :; do
	for c in red green blue; do
		DISPLAY=:$disp xsetroot -solid "$c"
		sleep 0.05
	done
done) &
pids+=($!)
chromium --headless=new --no-sandbox --disable-gpu --remote-debugging-address=127.0.0.1 \
    --remote-debugging-port="$cdp" --user-data-dir="$profile" about:blank \
    >"$dir/chromium.log" 2>&1 &
pids+=($!)
wait_port "$cdp"
# The gateway holds no token: berthd, which checks it, runs it.
cat >"$dir/berth.conf" <<CONF
[gateway]
listen = 127.0.0.1:$gw
vnc = 127.0.0.1:$rfb
cdp = 127.0.0.1:$cdp
cdp_relay_listen = 127.0.0.1:$relay
CONF
unshare -p -f --mount-proc "$build/berthd" --config "$dir/berth.conf" \
    --token-file "$dir/token" --state-dir "$dir/state" >"$dir/berthd.log" 2>&1 &
upid=$!
websockify "127.0.0.1:$wsk" "127.0.0.1:$rfb" >"$dir/websockify.log" 2>&1 &
wpid=$!
pids+=($wpid)
wait_port "$gw"
wait_port "$wsk"
berthd_pid=$(bench_init_pid)
gpid=$(tr ' ' '\n' <"/proc/$berthd_pid/task/$berthd_pid/children" |
	while read -r p; do grep -q berth-gateway "/proc/$p/cmdline" 2>/dev/null && echo "$p"; done | head -1)

# One pull through a path; the relay's pid (or none). Prints
# "MB/s CPU-s/MB RSS-KiB".
pull() {
	local pid=$1 kind=$2 where=$3 t0 t1 out r=0
	t0=$([ "$pid" = - ] && echo 0 || ticks "$pid")
	"$py" "$src/bench/rfbpull.py" "$kind" "$where" "$duration" "$token" >"$dir/pull.out" &
	# Memory halfway through, while the relay carries the stream.
	sleep "$(awk -v d="$duration" 'BEGIN {print d / 2}')"
	[ "$pid" = - ] || r=$(tree_rss "$pid")
	wait $!
	out=$(cat "$dir/pull.out")
	# Lets websockify reap the child that served this client.
	sleep 0.5
	t1=$([ "$pid" = - ] && echo 0 || ticks "$pid")
	echo "$out" | awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v r="$r" \
	    '{mb = $3 / 1048576; printf "%.1f %.5f %s\n", mb / $1, (t / hz) / mb, r}'
}

: >"$dir/direct" && : >"$dir/berth" && : >"$dir/websockify"
for _ in $(seq 1 "$runs"); do
	pull - tcp "127.0.0.1:$rfb" >>"$dir/direct"
	pull "$gpid" ws "ws://127.0.0.1:$gw/novnc/websockify" >>"$dir/berth"
	pull "$wpid" ws "ws://127.0.0.1:$wsk/" >>"$dir/websockify"
done
col() { cut -d' ' -f"$1" "$dir/$2" | bench_median; }
echo "noVNC relay: raw 1280x800 updates, $duration s per run, medians of $runs"
printf '  %-22s %10s %14s %12s\n' path "MB/s" "relay CPU s/MB" "relay RSS KiB"
printf '  %-22s %10s %14s %12s\n' "Xvnc directly" "$(col 1 direct)" - -
printf '  %-22s %10s %14s %12s\n' "berth-gateway" "$(col 1 berth)" "$(col 2 berth)" "$(col 3 berth)"
printf '  %-22s %10s %14s %12s\n' "websockify" "$(col 1 websockify)" "$(col 2 websockify)" "$(col 3 websockify)"
awk -v a="$(col 1 berth)" -v b="$(col 1 websockify)" -v c="$(col 2 berth)" -v d="$(col 2 websockify)" \
    -v e="$(col 3 berth)" -v f="$(col 3 websockify)" \
    'BEGIN {printf "  ratio berth/websockify: throughput %.2fx, CPU per MB %.2fx, RSS %.2fx\n", a / b, c / d, e / f}'

browser=$(curl -fs "http://127.0.0.1:$cdp/json/version" |
    "$py" -c 'import json, sys; print(json.load(sys.stdin)["webSocketDebuggerUrl"].split("/", 3)[3])')
browser=/$browser
: >"$dir/rtt.direct" && : >"$dir/rtt.relay" && : >"$dir/rtt.ws"
for _ in $(seq 1 "$runs"); do
	"$py" "$src/bench/cdprtt.py" "ws://127.0.0.1:$cdp$browser" "$count" >>"$dir/rtt.direct"
	"$py" "$src/bench/cdprtt.py" "ws://127.0.0.1:$relay$browser" "$count" "$token" >>"$dir/rtt.relay"
	"$py" "$src/bench/cdprtt.py" "ws://127.0.0.1:$gw/v1/cdp" "$count" "$token" >>"$dir/rtt.ws"
done
echo "CDP round trip (Browser.getVersion), $count per run, medians of $runs (ms)"
printf '  %-26s %10s %10s\n' path median p99
for p in direct relay ws; do
	label=$(case $p in direct) echo "Chromium directly" ;; relay) echo "relay 1 (TCP :cdp_relay)" ;; ws) echo "relay 2 (/v1/cdp)" ;; esac)
	printf '  %-26s %10s %10s\n' "$label" "$(cut -d' ' -f1 "$dir/rtt.$p" | bench_median)" "$(cut -d' ' -f2 "$dir/rtt.$p" | bench_median)"
done
d=$(cut -d' ' -f1 "$dir/rtt.direct" | bench_median)
awk -v d="$d" -v r="$(cut -d' ' -f1 "$dir/rtt.relay" | bench_median)" -v w="$(cut -d' ' -f1 "$dir/rtt.ws" | bench_median)" \
    'BEGIN {printf "  ratio to direct: relay 1 %.2fx, relay 2 %.2fx\n", r / d, w / d}'
