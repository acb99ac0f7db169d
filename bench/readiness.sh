#!/usr/bin/env bash
# Readiness lag: from the instant a service opens its TCP port to the first
# 200 of /readyz, and to the journal's service.ready event. The service
# writes time.time_ns() right after listen(); a poller asks /readyz on one
# keep-alive connection as fast as it can and notes its first 200. The
# floor is a poller connecting to the port itself, run alongside.
#
#   bench/readiness.sh [BUILD_DIR]     (default: build)
#   RUNS=11 WAITS="0 2000" bench/readiness.sh
#
# WAITS: how long (ms) after /readyz first answers 503 the service opens
# its port, one scenario per value: an early port meets berth-probe while
# its retries are still fast, a late one at its slowest retry pace.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${RUNS:-11} waits=${WAITS:-0 2000}
py=/usr/bin/python3
for tool in unshare "$py"; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth-probe berth
dir=$bench_dir

free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The service: waits for the go file, listens, writes the instant.
cat >"$dir/service.py" <<'EOF'
import os, socket, sys, time
port, d = int(sys.argv[1]), sys.argv[2]
while not os.path.exists(os.path.join(d, "go")):
    time.sleep(0.0005)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
t = time.time_ns()
with open(os.path.join(d, "listen.tmp"), "w") as f:
    f.write("%d\n" % t)
os.rename(os.path.join(d, "listen.tmp"), os.path.join(d, "listen"))
while True:
    s.accept()[0].close()
EOF

# The pollers: /readyz on a keep-alive connection (this process), and the
# port itself (a thread). Once /readyz answers 503 for wait_ms, makes the
# go file. Prints "READYZ_200_NS PORT_OPEN_NS".
cat >"$dir/poll.py" <<'EOF'
import http.client, os, socket, sys, threading, time
gport, sport, d, wait_ms = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
deadline = time.monotonic() + 30
go = os.path.join(d, "go")
opened = []

def port_poller():
    while not os.path.exists(go):
        time.sleep(0.0005)
    while time.monotonic() < deadline:
        s = socket.socket()
        try:
            s.connect(("127.0.0.1", sport))
            opened.append(time.time_ns())
            return
        except OSError:
            pass
        finally:
            s.close()

threading.Thread(target=port_poller, daemon=True).start()
conn, first503 = None, None
while time.monotonic() < deadline:
    try:
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", gport, timeout=5)
        conn.request("GET", "/readyz")
        r = conn.getresponse()
        r.read()
        now = time.time_ns()
        if r.will_close:
            conn.close()
            conn = None
    except (OSError, http.client.HTTPException):
        if conn is not None:
            conn.close()
        conn = None
        time.sleep(0.002)
        continue
    if r.status == 503 and not os.path.exists(go):
        first503 = first503 or now
        if now - first503 >= wait_ms * 1000000:
            open(go, "w").close()
    elif r.status == 200 and os.path.exists(go):
        while not opened and time.monotonic() < deadline:
            time.sleep(0.001)
        print(now, opened[0] if opened else 0)
        sys.exit(0)
sys.exit("poll: no 200 from /readyz within 30 s")
EOF

# The journal's service.ready ts (ms) of the lag service, from JSON lines.
ready_ts() {
	"$build/berth" --socket "$1" --json events |
		"$py" -c 'import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e["kind"] == "service.ready" and e["data"]["name"] == "lag":
        print(e["ts"]); break'
}

one_run() { # WAIT_MS -> prints "READYZ_LAG_MS JOURNAL_LAG_MS FLOOR_MS"
	local run="$dir/run" gport sport t200 topen tlisten tready
	rm -rf "$run" && mkdir -p "$run"
	gport=$(free_port) sport=$(free_port)
	{
		cat "$src/images/minimal/berth.conf"
		printf '\n[service lag]\ncommand = %s %s %s %s\nready = tcp 127.0.0.1:%s\n' \
			"$py" "$dir/service.py" "$sport" "$run" "$sport"
	} >"$run/berth.conf"
	unshare -p -f --mount-proc "$build/berthd" --config "$run/berth.conf" \
		--listen "127.0.0.1:$gport" --state-dir "$run/state" 2>"$run/berthd.log" &
	upid=$!
	read -r t200 topen < <("$py" "$dir/poll.py" "$gport" "$sport" "$run" "$1") ||
		{ echo "bench: the poller failed; berthd's log:" >&2; cat "$run/berthd.log" >&2; exit 1; }
	tlisten=$(cat "$run/listen")
	tready=$(ready_ts "$run/state/berthd.sock")
	bench_stop
	awk -v a="$t200" -v l="$tlisten" -v j="$tready" -v o="$topen" \
		'BEGIN { printf "%.3f %.3f %.3f\n", (a - l) / 1e6, j - l / 1e6, (o - l) / 1e6 }'
}

# Median and p90 (nearest rank) of one column.
stats() {
	sort -g | awk '{ a[NR] = $1 } END {
		m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
		r = int(0.9 * NR); if (r < 0.9 * NR) r++
		printf "median %8.1f ms   p90 %8.1f ms", m, a[r] }'
}

for wait_ms in $waits; do
	: >"$dir/lags"
	for _ in $(seq "$runs"); do
		one_run "$wait_ms" >>"$dir/lags"
	done
	echo "readiness lag, port opened $wait_ms ms after /readyz first said 503 ($runs runs):"
	printf '  %-40s %s\n' "listen() to the first /readyz 200" "$(cut -d' ' -f1 "$dir/lags" | stats)"
	printf '  %-40s %s\n' "listen() to service.ready (ts in ms)" "$(cut -d' ' -f2 "$dir/lags" | stats)"
	printf '  %-40s %s\n' "listen() to a connect of our own" "$(cut -d' ' -f3 "$dir/lags" | stats)"
done
