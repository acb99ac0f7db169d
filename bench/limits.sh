#!/usr/bin/env bash
# The cost of a limit: proc.start of `true` to its proc.wait with limits
# {cpu_millis, memory_bytes, max_processes} (berthd makes the target's
# cgroup, writes the limits, the child joins it, the group is removed at
# the exit) beside the same without limits, and on a berthd with
# `[berthd] cgroups = off`, and beside cgexec running
# `true` in a group made and removed around it: by cgcreate, cgset and
# cgdelete, and by hand (mkdir, the same writes, rmdir), and beside
# systemd-run --scope with the same limits where systemd is the init (it
# is tried, and the bench says why when it cannot be a peer). Median and
# p99 of STARTS starts each, interleaved; ratios (bench/limits.py).
#
#   bench/limits.sh [BUILD_DIR]       (default: build)
#   STARTS=500 bench/limits.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (cgroups are made and removed)" >&2; exit 1; }
command -v cgexec >/dev/null || apt-get install -y -q cgroup-tools >/dev/null

. "$src/bench/lib.sh"
bench_need berthd berth-gateway
/usr/bin/python3 "$src/bench/limits.py" "$src" "$build" "$bench_dir" "${STARTS:-200}"
