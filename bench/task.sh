#!/usr/bin/env bash
# A task's output kept whole while a backend follows it: task.run of a
# program (the runtime's user writing MBYTES MB of text to stdout, then
# exiting 0) with one client of berthd's Unix socket attached to its
# stream from offset 0 at once, beside tmux keeping a pane's output
# (`pipe-pane -o` to a file, one control-mode client reading %output) and
# the same program writing to a file. Wall time, MB/s, the server's CPU s
# per MB, replay MB/s; medians over RUNS runs, ratios (bench/task.py).
#
#   bench/task.sh [BUILD_DIR]       (default: build)
#   RUNS=5 MBYTES=200 bench/task.sh
#
# Runs as root (berthd runs the program as the user agent); installs
# tmux with apt-get when it is missing.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (the program runs as the user agent)" >&2; exit 1; }
id agent >/dev/null 2>&1 || { echo "bench: needs a user agent" >&2; exit 1; }
if ! command -v tmux >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y tmux >/dev/null
fi
for tool in unshare setpriv /usr/bin/python3; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done

. "$src/bench/lib.sh"
bench_need berthd berth-gateway
/usr/bin/python3 "$src/bench/task.py" "$src" "$build" "$bench_dir" "${RUNS:-5}" "${MBYTES:-200}"
