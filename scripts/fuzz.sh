#!/usr/bin/env bash
# libFuzzer targets (tests/fuzz/fuzz_*.c) built with clang in build/fuzz, each run from the seed corpus
# in tests/fuzz/corpus/<name>/ (read-only) plus a working corpus in build/fuzz/corpus/<name>/.
#   fuzz.sh short   ~FUZZ_SECONDS (default 15) per target: part of `make test`
#   fuzz.sh long    FUZZ_SECONDS (default 600) per target: `make fuzz`
# Prints "fuzz: N passed, N failed", one case per target; a crash leaves its reproducer in build/fuzz/.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
mode=${1:-short}
case $mode in
short) secs=${FUZZ_SECONDS:-15} ;;
long) secs=${FUZZ_SECONDS:-600} ;;
*)
	echo "usage: $0 short|long" >&2
	exit 2
	;;
esac

dir=build/fuzz
mkdir -p "$dir"
launcher=()
if command -v ccache >/dev/null; then
	launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
	export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
if ! CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVREX_FUZZ=ON \
	-DVREX_BENCH=OFF ${launcher[@]+"${launcher[@]}"} >"$dir/cmake.log" 2>&1; then
	tail -n 30 "$dir/cmake.log"
	echo "fuzz: 0 passed, 1 failed"
	exit 1
fi
targets=()
for src in tests/fuzz/fuzz_*.c; do
	targets+=("$(basename "$src" .c)")
done
if ! cmake --build "$dir" -j "${JOBS:-$(nproc)}" --target "${targets[@]}" >"$dir/build.log" 2>&1; then
	tail -n 40 "$dir/build.log"
	echo "fuzz: 0 passed, ${#targets[@]} failed"
	exit 1
fi

# Each libFuzzer run is one single-threaded process bounded by time: FUZZ_JOBS (default: the number
# of cores) of them at once, their lines printed in target order afterwards.
fuzz_one() { # target -> prints its result line(s); exit status 0 = pass
	local t=$1 name seeds work log runs cov
	name=${t#fuzz_}
	seeds=tests/fuzz/corpus/$name
	work=$dir/corpus/$name
	mkdir -p "$work" "$seeds"
	log=$dir/$t.log
	if "$dir/tests/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$dir/$t-" "$work" "$seeds" >"$log" 2>&1; then
		runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
		cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -n 1)
		echo "fuzz $t: PASS (${runs:-?} runs in ${secs}s, $cov)"
	else
		echo "fuzz $t: FAIL (see $log)"
		grep -E 'ERROR|SUMMARY|Test unit written|deadly signal|timeout' "$log" | head -n 8
		return 1
	fi
}
jobs=${FUZZ_JOBS:-$(nproc)}
running=0
rm -f "$dir"/fuzz_*.result "$dir"/fuzz_*.rc
for t in "${targets[@]}"; do
	while ((running >= jobs)); do
		wait -n
		running=$((running - 1))
	done
	(
		fuzz_one "$t" >"$dir/$t.result"
		echo $? >"$dir/$t.rc"
	) &
	running=$((running + 1))
done
wait
pass=0
fail=0
for t in "${targets[@]}"; do
	cat "$dir/$t.result"
	if [[ $(cat "$dir/$t.rc" 2>/dev/null) == 0 ]]; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
	fi
done
echo "fuzz: $pass passed, $fail failed"
((fail == 0))
