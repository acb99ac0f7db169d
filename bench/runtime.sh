#!/usr/bin/env bash
# The agent runtimes, started through berth and by hand: runtime.start
# to Pi's TUI drawn and to OpenCode's server answering, beside the same
# program started with runuser; and workspace.prepare's clone beside
# `git clone` run directly, from the same HTTPS server on loopback.
# Everything runs in a network namespace with only loopback (the
# runtimes reach nothing else). Medians and ratios (bench/runtime.py).
#
#   bench/runtime.sh [BUILD_DIR]       (default: build)
#   RUNS=5 FILES=2000 bench/runtime.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
for tool in opencode pi git openssl runuser; do
	command -v "$tool" >/dev/null ||
		{ echo "bench: needs $tool (images/runtimes.sh installs the runtimes)" >&2; exit 1; }
done

. "$src/bench/lib.sh"
bench_need berthd berth-gateway berth-workspace
unshare -n /bin/sh -c 'ip link set lo up && exec "$@"' sh \
	/usr/bin/python3 "$src/bench/runtime.py" "$src" "$build" "$bench_dir" \
	"${RUNS:-5}" "${FILES:-2000}"
