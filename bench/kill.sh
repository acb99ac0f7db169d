#!/usr/bin/env bash
# The kill of a fork bomb without cgroup.kill: a 512-process bomb (each
# process at nice 19, so that the CPU is berthd's when it wants it)
# killed by proc.signal KILL on a berthd that sees cgroup v1 alone (its
# v2 hierarchy unmounted in its namespace: the v1 freezer's rounds of
# freeze, SIGKILL, thaw), beside the same bomb on a berthd with v2's
# cgroup.kill (one write, the kernel's own). How long the signal's
# answer takes (what berthd's loop spends in the kill's first round), how
# long a ping sent with it waits, and until the bomb has ended; medians
# of KILLS kills (bench/kill.py). Needs root and a hybrid host.
#
#   bench/kill.sh [BUILD_DIR]       (default: build)
#   KILLS=9 bench/kill.sh
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "bench: needs root (cgroups are made and removed)" >&2; exit 1; }

. "$src/bench/lib.sh"
bench_need berthd berth-gateway
/usr/bin/python3 "$src/bench/kill.py" "$src" "$build" "$bench_dir" "${KILLS:-5}"
