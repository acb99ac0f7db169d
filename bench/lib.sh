# shellcheck shell=bash
# lib.sh: what the benchmarks share. Sourced, not run.
#
# Each script sets $src and $build, then calls bench_need for the berth
# programs it uses. bench_dir is the script's scratch directory; $upid is
# the unshare process of the berthd (or other init) running now, if any.

bench_dir=$(mktemp -d)
# Searchable: the gateway and the probes run as a user of their own and
# reach berthd's socket in the state directory below.
chmod 711 "$bench_dir"
upid=''

# Fails unless each named program was built in $build.
bench_need() {
	local prog
	for prog in "$@"; do
		[ -x "$build/$prog" ] || { echo "bench: no $build/$prog (make it first)" >&2; exit 1; }
	done
}

# The host pid of the init in the namespace: the child of unshare.
bench_init_pid() { awk '{print $1}' "/proc/$upid/task/$upid/children" 2>/dev/null; }

# SIGTERM to the init in the namespace, and wait for it.
bench_stop() {
	if [ -n "$upid" ]; then
		local kids=()
		read -ra kids <"/proc/$upid/task/$upid/children" 2>/dev/null || true
		[ "${#kids[@]}" -eq 0 ] || kill -TERM "${kids[@]}" 2>/dev/null || true
		wait "$upid" 2>/dev/null || true
	fi
	upid=''
}

bench_cleanup() {
	bench_stop
	rm -rf "$bench_dir"
}
trap bench_cleanup EXIT

# The median of the numbers on stdin, one a line.
bench_median() {
	sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
