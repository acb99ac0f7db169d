#!/bin/sh
# smoke.sh CORPUS_DIR FUZZER...: runs each libFuzzer target for
# FUZZ_SECONDS (default 10) over a scratch copy of its seeds
# (CORPUS_DIR/NAME for tests/fuzz/fuzz_NAME, where there are seeds), so the seeds in the tree stay
# as they are. Prints PASS or FAIL per target and the counts in the form
# of an automake test-suite.log (# PASS: N, # FAIL: N). A crash leaves its
# input and the fuzzer's log beside the target (NAME.smoke.log).
# The inputs that once crashed a target, in crashes/NAME beside CORPUS_DIR,
# are run first, each exactly once: a line of their own, PASS or FAIL.
set -u
corpus=$1
shift
crashes=$(dirname "$corpus")/crashes
seconds=${FUZZ_SECONDS:-10}
pass=0
fail=0
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for target in "$@"; do
	name=${target##*/fuzz_}
	mkdir -p "$scratch/$name"
	log=$target.smoke.log
	if [ -d "$crashes/$name" ]; then
		n=$(find "$crashes/$name" -type f | wc -l)
		if "$target" "$crashes/$name"/* >"$target.regress.log" 2>&1; then
			echo "PASS: ${target##*/} regressions ($n inputs)"
			pass=$((pass + 1))
		else
			echo "FAIL: ${target##*/} regressions (see $target.regress.log)"
			tail -30 "$target.regress.log"
			fail=$((fail + 1))
		fi
	fi
	seeds=
	[ -d "$corpus/$name" ] && seeds=$corpus/$name
	if "$target" -max_total_time="$seconds" -artifact_prefix="$target-" \
		"$scratch/$name" $seeds >"$log" 2>&1; then
		runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log")
		echo "PASS: ${target##*/} (${runs:-?} runs in ${seconds} s)"
		pass=$((pass + 1))
	else
		echo "FAIL: ${target##*/} (see $log)"
		tail -30 "$log"
		fail=$((fail + 1))
	fi
done
echo "# PASS: $pass"
echo "# FAIL: $fail"
[ "$fail" -eq 0 ]
