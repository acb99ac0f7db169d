#!/usr/bin/env bash
# Port discovery: from a server's listen() to berthd's port.opened, with
# [berthd] ports = auto (sock_diag) and ports = proc (/proc/net), both
# read at the listen() of a launched program (seccomp notification), beside
# a peer that reads /proc/net/tcp{,6} once a second, timed on the same
# listens; and berthd's idle CPU with discovery on and off. In a network
# namespace with only loopback, so the listeners are the bench's own.
# Medians, p99 and ratios (bench/ports.py).
#
#   bench/ports.sh [BUILD_DIR]          (default: build)
#   RUNS=5 LISTENS=20 bench/ports.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
. "$src/bench/lib.sh"
bench_need berthd berth-gateway
unshare -n /bin/sh -c 'ip link set lo up && exec "$@"' sh \
	/usr/bin/python3 "$src/bench/ports.py" "$src" "$build" "$bench_dir" \
	"${RUNS:-5}" "${LISTENS:-20}"
