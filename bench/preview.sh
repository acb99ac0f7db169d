#!/usr/bin/env bash
# The preview proxy under keep-alive load: wrk against nginx serving one
# static file (the app), straight to it, through berth-gateway's preview
# proxy (a public preview grant), and through nginx as a reverse proxy
# (one worker, keep-alive upstream connections) in front of the same
# app; alternating runs. Prints medians of req/s and of latency median
# and p99, and the ratios to the direct path and to nginx's proxy.
#
#   bench/preview.sh [BUILD_DIR]     (default: build)
#   RUNS=5 DURATION=5 CONNS=50 THREADS=2 SIZE=1024 bench/preview.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
runs=${RUNS:-5} duration=${DURATION:-5} conns=${CONNS:-50} threads=${THREADS:-2} size=${SIZE:-1024}
py=/usr/bin/python3
for tool in wrk nginx unshare curl; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool (apt-get install wrk nginx)" >&2; exit 1; }
done

. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth
dir=$bench_dir
free_port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
bport=$(free_port) pport=$(free_port) aport=$(free_port) nport=$(free_port)
npids=()
trap '[ "${#npids[@]}" -eq 0 ] || kill "${npids[@]}" 2>/dev/null; bench_cleanup' EXIT

# The app and the peer proxy: two nginx processes of one worker each.
mkdir -p "$dir/www" "$dir/tmp"
head -c "$size" /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c "$size" >"$dir/www/f.html"
nginx_conf() {
	cat <<-CONF
	worker_processes 1;
	daemon off;
	pid $dir/nginx-$1.pid;
	error_log $dir/nginx-$1.log warn;
	events { worker_connections 1024; }
	http {
		access_log off;
		client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
		uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
		upstream app { server 127.0.0.1:$aport; keepalive 64; }
		server {
			listen 127.0.0.1:$2;
			$3
		}
	}
	CONF
}
nginx_conf app "$aport" "root $dir/www;" >"$dir/app.conf"
nginx_conf proxy "$nport" "location / { proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection \"\"; }" \
	>"$dir/proxy.conf"
nginx -c "$dir/app.conf" & npids+=($!)
nginx -c "$dir/proxy.conf" & npids+=($!)

sed -e "s|^listen = .*|listen = 127.0.0.1:$bport\npreview_listen = 127.0.0.1:$pport|" \
	"$src/images/minimal/berth.conf" >"$dir/berth.conf"
unshare -p -f --mount-proc "$build/berthd" --config "$dir/berth.conf" \
	--state-dir "$dir/state" 2>"$dir/berthd.log" &
upid=$!
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$bport/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
token=$("$build/berth" --socket "$dir/state/berthd.sock" --json grant create "preview:$aport" --public |
	"$py" -c 'import json, sys; print(json.load(sys.stdin)["token"])')
direct="http://127.0.0.1:$aport/f.html"
berth="http://127.0.0.1:$pport/preview/$token/f.html"
peer="http://127.0.0.1:$nport/f.html"
for url in "$direct" "$berth" "$peer"; do
	cmp -s <(curl -fsS "$url") "$dir/www/f.html" || { echo "bench: $url does not serve the file" >&2; exit 1; }
done

# One wrk run: prints "REQS_PER_SEC P50_MS P99_MS".
run() {
	wrk -t"$threads" -c"$conns" -d"${duration}s" --latency "$1" | awk '
		function ms(v, u) { u = v; sub(/[a-z]+$/, "", v); sub(/^[0-9.]+/, "", u);
			if (u == "us") v /= 1000; else if (u == "s") v *= 1000; return v }
		/Requests\/sec/ { rps = $2 }
		/^ +50%/ { p50 = ms($2) }
		/^ +99%/ { p99 = ms($2) }
		END { printf "%s %.3f %.3f\n", rps, p50, p99 }'
}

: >"$dir/d" && : >"$dir/b" && : >"$dir/n"
for _ in $(seq "$runs"); do
	run "$direct" >>"$dir/d"
	run "$berth" >>"$dir/b"
	run "$peer" >>"$dir/n"
done
col() { cut -d' ' -f"$2" "$dir/$1" | bench_median; }
echo "preview proxy: wrk -t$threads -c$conns -d${duration}s keep-alive, a $size-byte static file from nginx," \
	"median of $runs runs each"
for p in d:"nginx app, direct" b:"berth-gateway preview proxy" n:"nginx reverse proxy"; do
	printf '  %-30s %10s req/s   median %7s ms   p99 %7s ms\n' "${p#*:}" \
		"$(col "${p%%:*}" 1)" "$(col "${p%%:*}" 2)" "$(col "${p%%:*}" 3)"
done
awk -v d="$(col d 1)" -v b="$(col b 1)" -v n="$(col n 1)" -v bm="$(col b 2)" -v nm="$(col n 2)" \
	-v bp="$(col b 3)" -v np="$(col n 3)" 'BEGIN {
	printf "  berth/direct: %.2fx req/s;  berth/nginx-proxy: %.2fx req/s, %.2fx median, %.2fx p99\n",
		b / d, b / n, bm / nm, bp / np }'
