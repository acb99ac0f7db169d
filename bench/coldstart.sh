#!/usr/bin/env bash
# Cold start of the desktop: from launch to strictly ready (the six checks
# of images/desktop/berth.conf, /readyz 200), beside a plain shell script
# that starts the same programs one after another and polls each the way
# many sandbox images do (port open, window manager set, DevTools
# answering, noVNC page served by websockify). Prints the medians, their
# ratio, and where berth's time goes, from its own journal: when each
# service started and each check first passed, after berthd started.
#
#   bench/coldstart.sh [BUILD_DIR]        (default: build)
#   RUNS=5 bench/coldstart.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${RUNS:-5}
py=/usr/bin/python3
. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth-probe berth berth-desktop berth-xfce berth-chromium
for tool in unshare Xvnc xfwm4 chromium websockify xprop xwininfo xdotool curl; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
dir=$bench_dir

free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
free_display() {
	local n
	for n in $(seq 300 399); do
		[ -e "/tmp/.X11-unix/X$n" ] || [ -e "/tmp/.X$n-lock" ] || { echo "$n"; return; }
	done
	exit 1
}
now_ms() { date +%s%3N; }

# One berth boot: prints "MS_TO_READY" and leaves the journal's events in
# $dir/events.json.
berth_run() {
	local disp cdp relay port state t0 i
	disp=$(free_display) cdp=$(free_port) relay=$(free_port) port=$(free_port)
	state=$dir/state.$RANDOM
	# The desktop's user reaches its directories under the state
	# directory, as under /var/lib; RFB is a Unix socket there.
	chmod 0711 "$dir"
	sed -e "s|/var/lib/berth/|$state/|g" \
	    -e "s/127.0.0.1:9222/127.0.0.1:$cdp/g; s/BERTH_CDP_PORT=9222/BERTH_CDP_PORT=$cdp/" \
	    -e "s/127.0.0.1:9223/127.0.0.1:$relay/; s/:1 /:$disp /; s/:1\$/:$disp/" \
	    -e "s/DISPLAY=:1/DISPLAY=:$disp/" \
	    "$src/images/desktop/berth.conf" >"$dir/berth.conf"
	t0=$(now_ms)
	unshare -p -f --mount-proc "$build/berthd" --config "$dir/berth.conf" \
	    --state-dir "$state" --listen "127.0.0.1:$port" >"$dir/berthd.log" 2>&1 &
	upid=$!
	for i in $(seq 1 3000); do
		curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
		sleep 0.02
	done
	echo $(($(now_ms) - t0))
	"$build/berth" --socket "$state/berthd.sock" --json events >"$dir/events.json"
	bench_stop
	rm -rf "$state"
}

# The same programs from a shell script, polling, as the same user the
# image runs them as (Chromium refuses root).
user=${BERTH_DESKTOP_USER:-agent}
as_user() { setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups "$@"; }
script_run() {
	local disp rfb cdp web t0 pg
	disp=$(free_display) rfb=$(free_port) cdp=$(free_port) web=$(free_port)
	t0=$(now_ms)
	(
		set +e
		export DISPLAY=:$disp BERTH_STATE_DIR=$dir/script.$RANDOM BERTH_CDP_PORT=$cdp
		mkdir -p "$BERTH_STATE_DIR/desktop"
		chown "$user" "$BERTH_STATE_DIR/desktop"
		as_user Xvnc ":$disp" -geometry 1280x800 -depth 24 -rfbport "$rfb" -localhost \
		    -SecurityTypes None -nolisten tcp >/dev/null 2>&1 &
		until (exec 3<>"/dev/tcp/127.0.0.1/$rfb") 2>/dev/null; do sleep 0.1; done
		as_user "$build/berth-xfce" bus 3>"$BERTH_STATE_DIR.bus" >/dev/null 2>&1 &
		until [ -s "$BERTH_STATE_DIR.bus" ]; do sleep 0.1; done
		for part in "xfwm4 --compositor=off" xfce4-panel xfdesktop xfsettingsd; do
			# shellcheck disable=SC2086
			as_user "$build/berth-xfce" $part >/dev/null 2>&1 &
		done
		until xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id' &&
		    xdotool search --onlyvisible --class xfce4-panel >/dev/null 2>&1 &&
		    xdotool search --onlyvisible --class xfdesktop >/dev/null 2>&1; do sleep 0.1; done
		as_user "$build/berth-chromium" >/dev/null 2>&1 &
		until curl -fs "http://127.0.0.1:$cdp/json/version" >/dev/null; do sleep 0.1; done
		websockify --web /usr/share/novnc "127.0.0.1:$web" "127.0.0.1:$rfb" >/dev/null 2>&1 &
		until curl -fs "http://127.0.0.1:$web/vnc.html" >/dev/null; do sleep 0.1; done
		echo ready
		wait
	) >"$dir/script.out" 2>&1 &
	pg=$!
	until grep -q ready "$dir/script.out" 2>/dev/null; do sleep 0.01; done
	echo $(($(now_ms) - t0))
	pkill -KILL -P "$pg" 2>/dev/null || true
	pkill -KILL -f "Xvnc :$disp" 2>/dev/null || true
	pkill -KILL -f "remote-debugging-port=$cdp" 2>/dev/null || true
	pkill -KILL -f "websockify --web /usr/share/novnc 127.0.0.1:$web" 2>/dev/null || true
	pkill -KILL -f "$dir/script" 2>/dev/null || true
	kill -KILL "$pg" 2>/dev/null || true
	wait "$pg" 2>/dev/null || true
	sleep 1
}

: >"$dir/berth" && : >"$dir/script"
for r in $(seq 1 "$runs"); do
	berth_run >>"$dir/berth"
	cp "$dir/events.json" "$dir/events.$r.json"
	script_run >>"$dir/script"
done

b=$(bench_median <"$dir/berth")
s=$(bench_median <"$dir/script")
echo "cold start to ready, median of $runs runs"
printf '  berth (strict: six checks)     %6s ms   runs: %s\n' "$b" "$(tr '\n' ' ' <"$dir/berth")"
printf '  shell script, polling          %6s ms   runs: %s\n' "$s" "$(tr '\n' ' ' <"$dir/script")"
awk -v b="$b" -v s="$s" 'BEGIN {printf "  ratio berth/script             %6.2fx\n", b / s}'
echo "where berth's time goes (last run; ms after berthd.started):"
"$py" - "$dir/events.$runs.json" <<'EOF'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
t0 = next(e["ts"] for e in events if e["kind"] == "berthd.started")
def ts(v):
    return v if isinstance(v, (int, float)) else None
seen = set()
for e in events:
    k, d = e["kind"], e.get("data", {})
    key = (k, d.get("name"))
    if key in seen:
        continue
    if k == "service.started" or (k == "check.changed" and d.get("ok")) or k == "service.ready":
        seen.add(key)
        print("  %6d  %-16s %s" % (e["ts"] - t0, k, d.get("name")))
EOF
