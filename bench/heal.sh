#!/usr/bin/env bash
# How fast berth heals: a service SIGKILLed again and again, under berthd,
# s6-supervise and runsv, and berthd's own gateway back to /healthz 200;
# then a burst of WebSocket clients at once through berth-gateway and
# through websockify. Medians and ratios (bench/heal.py has the details).
#
#   bench/heal.sh [BUILD_DIR]       (default: build)
#   KILLS=10 CLIENTS=300 RUNS=5 bench/heal.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
for tool in s6-supervise runsv websockify; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool (apt-get install s6 runit websockify)" >&2; exit 1; }
done

. "$src/bench/lib.sh"
bench_need berthd berth-gateway
/usr/bin/python3 "$src/bench/heal.py" "$src" "$build" "$bench_dir" \
	"${KILLS:-10}" "${CLIENTS:-300}" "${RUNS:-5}"
