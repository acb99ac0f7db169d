#!/usr/bin/env bash
# PID 1's own work: berthd beside tini (`tini --`, and `tini -g --`, which
# signals the child's process group) and dumb-init, each as PID 1 of a PID
# namespace of its own running the same program (bench/initwork.c) as its
# one service (berthd: `main = yes`, `restart = never`). Each run starts
# every init afresh for each measure, in an order that turns from run to
# run; prints medians over RUNS runs and the ratios berthd/peer:
#
# - a reaping storm: the service makes ORPHANS orphans as fast as it can
#   (a child that forks a grandchild and exits; the grandchild dies with
#   its parent), so each lands on PID 1 to be reaped. Wall time from the
#   first fork until the namespace's /proc shows none of them, alive or
#   zombie, and from the last fork to that; PID 1's utime+stime (whole
#   clock ticks) and its time on a CPU (schedstat, in ns) meanwhile.
# - signal forwarding: SIGHUP to PID 1 from outside, SIGNALS times one
#   after another (berthd passes it on by its default forward_signals to
#   the main service), until the service's sigwaitinfo returns: median
#   and p99 of CLOCK_MONOTONIC differences.
# - stopping a group: the service's process group holds GROUP processes
#   (the leader and its children); SIGTERM to PID 1 from outside, until
#   PID 1 has exited, which the kernel lets a PID 1 do only once every
#   other process of its namespace is gone. Once with every member exiting
#   on SIGTERM, once with IGNORE of them ignoring it (berthd:
#   stop_timeout_ms = STOP_MS, then SIGKILL). Each member that sees
#   SIGTERM says so, which tells who was stopped and who was only killed
#   by the kernel as the namespace ended.
#
#   bench/init.sh [BUILD_DIR]     (default: build)
#   RUNS=5 ORPHANS=5000 SIGNALS=200 GROUP=200 IGNORE=50 STOP_MS=1000 bench/init.sh
#
# Installs tini and dumb-init with apt-get when they are missing.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
py=/usr/bin/python3
if ! command -v tini >/dev/null || ! command -v dumb-init >/dev/null; then
	DEBIAN_FRONTEND=noninteractive apt-get install -y tini dumb-init >/dev/null
fi
for tool in unshare cc "$py"; do
	command -v "$tool" >/dev/null || { echo "bench: needs $tool" >&2; exit 1; }
done
. "$src/bench/lib.sh"
bench_need berthd berth-gateway

cc -std=gnu11 -O2 -Wall -Wextra -o "$bench_dir/initwork" "$src/bench/initwork.c"
echo "load before: $(uptime)"
"$py" "$src/bench/initload.py" "$src" "$build" "$bench_dir" "$bench_dir/initwork"
echo "load after: $(uptime)"
