#!/usr/bin/env bash
# Probe cost at fleet rates: /readyz and /healthz at 10,000 and 100,000
# requests a minute (a new connection each, as a kubelet's probe makes),
# and `berth probe` as an exec probe at 10,000 a minute, each for
# DURATION s against berthd with the minimal image's config and three
# readiness checks: berthd's and the gateway's CPU (percent of a core)
# and resident memory, and the exec probes' own CPU (bench/probes.py).
#
#   bench/probes.sh [BUILD_DIR]       (default: build)
#   DURATION=60 RATES="10000 100000" bench/probes.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)

. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth
/usr/bin/python3 "$src/bench/probes.py" "$src" "$build" "$bench_dir" \
	"${DURATION:-60}" "${RATES:-10000 100000}" "${EXEC_RATE:-10000}"
