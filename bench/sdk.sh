#!/usr/bin/env bash
# The TypeScript SDK beside the raw protocol: pings per second with 64 in
# flight, and MB/s of one command's output to a consumer, through the SDK,
# a raw client written from docs/protocol.md, and `berth exec`. Medians
# and ratios (bench/sdk.py). The SDK is built first (npm run build in
# clients/typescript; its modules installed by ./dev test).
#
#   bench/sdk.sh [BUILD_DIR]                     (default: build)
#   RUNS=5 PINGS=50000 INFLIGHT=64 MIB=256 bench/sdk.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth
(cd "$src/clients/typescript" && npm run -s build)
/usr/bin/python3 "$src/bench/sdk.py" "$src" "$build" "$bench_dir" \
	"${RUNS:-5}" "${PINGS:-50000}" "${INFLIGHT:-64}" $((${MIB:-256} << 20))
