#!/usr/bin/env bash
# Soak over the HAL engine API (tests/soak/soak.cpp) on the emulation:
#   soak.sh short   8,000 frames over 4 streams (about 10 s): part of `make test`
#   soak.sh long    100,000 frames over 4 streams (SOAK_FRAMES to change): `make soak`
# Builds vrex_soak in $BUILD (default build/) when it is missing or stale. The program prints the
# RSS / resident-block curve and ends with "soak: N passed, N failed"; its exit status is ours.
# The guest variant (kernel backend inside QEMU) is listed in tests/kernel/guest-programs.txt.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
mode=${1:-short}
case $mode in
short) frames=${SOAK_FRAMES:-8000} ;;
long) frames=${SOAK_FRAMES:-100000} ;;
*)
	echo "usage: $0 short|long" >&2
	exit 2
	;;
esac
build=${BUILD:-build}
if [[ ! -f $build/CMakeCache.txt ]]; then
	cmake -S . -B "$build" -G Ninja >"$build.soak-cmake.log" 2>&1 || {
		tail -n 20 "$build.soak-cmake.log"
		echo "soak: 0 passed, 1 failed"
		exit 1
	}
fi
if ! cmake --build "$build" --target vrex_soak -j "${JOBS:-2}" >"$build/soak-build.log" 2>&1; then
	tail -n 30 "$build/soak-build.log"
	echo "soak: 0 passed, 1 failed"
	exit 1
fi
exec "$build/tests/soak/vrex_soak" --frames="$frames" --streams=4 --backend=emulated
