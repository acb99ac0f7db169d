#!/bin/bash
# campaign.sh CORPUS_DIR FUZZER...: the long fuzz campaign. Each libFuzzer
# target (tests/fuzz/fuzz_NAME) runs for FUZZ_RUNS executions (default
# 10000000) or FUZZ_MAX_SECONDS (default 1800), whichever comes first, over
# a scratch working corpus seeded from CORPUS_DIR/NAME: the fuzzer writes
# into its working corpus, so the kept one is never given to it. Afterwards
# the kept corpus is minimised anew: the hand-written seeds (any file not
# named by its SHA-1) stay, and a -merge=1 over the old kept corpus and the
# working one adds to them only the inputs that reach coverage they do not
# (libFuzzer prefers the smaller of two inputs that cover the same). The
# kept corpora so hold what the campaign reached and grow by no more.
#
# FUZZ_JOBS (default 1) targets run at once. FUZZ_TIMEOUT (default 25 s)
# makes an input slower than that a failure. Logs, crash inputs and the
# working corpora go under FUZZ_OUT (default a new directory under
# ${TMPDIR:-/tmp}, printed at the start); a target that passes leaves only
# its log there. A crash leaves FUZZ_OUT/NAME/crash-* (or leak-*, timeout-*,
# oom-*) and FUZZ_OUT/NAME/fuzz.log, is not merged, and makes the exit
# status non-zero.
#
# One line per target: PASS or FAIL, executions done, the final cov: and ft:,
# kept corpus files before and after, seconds; then # PASS: N, # FAIL: N.
set -u
corpus=$1
shift
runs=${FUZZ_RUNS:-10000000}
seconds=${FUZZ_MAX_SECONDS:-1800}
jobs=${FUZZ_JOBS:-1}
timeout=${FUZZ_TIMEOUT:-25}
out=${FUZZ_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/fuzz-campaign.XXXXXX")}
mkdir -p "$out"
echo "fuzz campaign: $# targets, $runs runs or $seconds s each, $jobs at once, output in $out"

count_files() {
	find "$1" -maxdepth 1 -type f 2>/dev/null | wc -l
}

# run_one TARGET: fuzzes one target and merges; writes its summary line to
# FUZZ_OUT/NAME/result and prints it.
run_one() {
	local target=$1 name dir work kept log status before after start end
	local done_runs cov ft verdict fresh sha1='.*/[0-9a-f]\{40\}'
	name=${target##*/fuzz_}
	dir=$out/$name
	work=$dir/corpus
	fresh=$dir/kept
	kept=$corpus/$name
	log=$dir/fuzz.log
	rm -rf "$work"
	mkdir -p "$work" "$kept"
	cp -p "$kept"/. "$work"/ -r
	before=$(count_files "$kept")
	start=$(date +%s)
	"$target" -runs="$runs" -max_total_time="$seconds" -timeout="$timeout" \
		-artifact_prefix="$dir/" -print_final_stats=1 "$work" >"$log" 2>&1
	status=$?
	end=$(date +%s)
	done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1)
	if [ "$status" -eq 0 ]; then
		rm -rf "$fresh"
		mkdir -p "$fresh"
		find "$kept" -maxdepth 1 -type f ! -regex "$sha1" -exec cp -p {} "$fresh"/ \;
		if "$target" -merge=1 -timeout="$timeout" "$fresh" "$kept" "$work" \
			>"$dir/merge.log" 2>&1; then
			verdict=PASS
			find "$kept" -maxdepth 1 -type f -regex "$sha1" -delete
			cp -p "$fresh"/. "$kept"/ -r
			rm -rf "$work" "$fresh"
		else
			verdict=FAIL
		fi
	else
		verdict=FAIL
	fi
	after=$(count_files "$kept")
	echo "$verdict: ${target##*/} runs=${done_runs:-?} ${cov:-cov: ?} ${ft:-ft: ?}" \
		"corpus=$before->$after seconds=$((end - start))" >"$dir/result"
	[ "$verdict" = PASS ] || echo "  (see $dir: fuzz.log, merge.log, crash inputs)" >>"$dir/result"
	cat "$dir/result"
}

for target in "$@"; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n
	done
	run_one "$target" &
done
wait

pass=0
fail=0
echo "fuzz campaign summary:"
for target in "$@"; do
	result=$out/${target##*/fuzz_}/result
	if [ -f "$result" ] && grep -q '^PASS: ' "$result"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
	cat "$result" 2>/dev/null || echo "FAIL: ${target##*/} (no result)"
done
echo "# PASS: $pass"
echo "# FAIL: $fail"
[ "$fail" -eq 0 ]
