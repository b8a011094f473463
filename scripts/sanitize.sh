#!/usr/bin/env bash
# User-space tests under sanitizers, each in its own build tree:
#   ASan+UBSan: every ctest suite except the slow real-footage / install / bench-smoke ones.
#   TSan: the suites labelled "concurrency" (multi-stream tests with threads), building only their
#   executables (target vrex_concurrency_tests).
# Prints "sanitize: N passed, N failed" where each sanitizer run counts as one case.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
JOBS=${JOBS:-$(nproc)}
pass=0
fail=0

run() { # name build-dir cmake-flag build-target ctest-args...
	local name=$1 dir=$2 flag=$3 target=$4
	shift 4
	echo "== $name"
	if cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="-O1 -g1" -DCMAKE_CXX_FLAGS="-O1 -g1" "$flag" -DVREX_BENCH=OFF \
		${launcher[@]+"${launcher[@]}"} >"$dir.cmake.log" 2>&1 &&
		cmake --build "$dir" -j "$JOBS" --target "$target" >"$dir.build.log" 2>&1; then
		if (cd "$dir" && ctest --output-on-failure -j "$JOBS" "$@"); then
			pass=$((pass + 1))
			return
		fi
	else
		echo "$name: build failed (see $dir.build.log)"
		tail -n 30 "$dir.build.log"
	fi
	fail=$((fail + 1))
}

mkdir -p build
# ccache when installed (scripts/deps.sh): a warm cache turns these two full builds into lookups.
launcher=()
if command -v ccache >/dev/null; then
	launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
	export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
run asan-ubsan build/asan -DVREX_SANITIZE=ON all -LE 'footage|install|bench-smoke'
# The HAL stress test (tests/hal/stress_test.cpp) runs twice as many frames here as under plain ctest.
VREX_HAL_STRESS_FRAMES=${VREX_HAL_STRESS_FRAMES:-600} run tsan build/tsan -DVREX_TSAN=ON vrex_concurrency_tests -L concurrency

echo "sanitize: $pass passed, $fail failed"
((fail == 0))
