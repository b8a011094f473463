#!/usr/bin/env bash
# Cross-builds vrex user space for arm64 into build-arm64/ (cmake/toolchain-aarch64.cmake, the
# sysroot from scripts/arm64-sysroot.sh, Debian's aarch64-linux-gnu-g++).
#
#   cross-arm64.sh [--offline] [TARGET...]
#
# Without targets it builds what the arm64 QEMU guest runs (scripts/qemu-test.sh): libvrex-hal,
# vrexctl, the HAL conformance suite, the differential/async/kernel HAL programs, the reference
# model's tests and the uAPI layout checks. `all` builds everything but the benchmarks (FAISS is not
# in the sysroot). The tree is reconfigured when the sysroot changes (new package versions).
# Uses ccache when installed. Exit status: the build's.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build-arm64
offline=()
targets=()
while (($#)); do
	case $1 in
	--offline) offline=(--offline) ;;
	-h | --help)
		sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*) targets+=("$1") ;;
	esac
	shift
done
((${#targets[@]})) || targets=(vrex_hal vrexctl vrex_hal_conformance_guest vrex_hal_differential
	vrex_hal_async_tests vrex_hal_kernel_tests vrex_lib_tests uapi_layout_c uapi_layout_cxx)

log() { echo "cross-arm64: $*" >&2; }

command -v aarch64-linux-gnu-g++ >/dev/null || {
	log "aarch64-linux-gnu-g++ missing (package g++-aarch64-linux-gnu; make deps installs it)"
	exit 1
}
sysroot=$(bash "$repo/scripts/arm64-sysroot.sh" "${offline[@]}")

mkdir -p "$out"
# make qemu-test and a manual run may overlap: one ninja per tree.
exec 8>"$out/.lock"
flock 8
# The same Kconfig symbols as the native tree (scripts/kconfig.sh writes build/vrex_config.cmake).
if [[ -f $repo/.config ]]; then
	(cd "$repo" && bash scripts/kconfig.sh cmake >/dev/null)
	cmp -s "$repo/build/vrex_config.cmake" "$out/vrex_config.cmake" ||
		cp "$repo/build/vrex_config.cmake" "$out/vrex_config.cmake"
fi

launcher=()
if command -v ccache >/dev/null; then
	launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
	export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$repo}
fi
configured=$(sed -n 's/^VREX_ARM64_SYSROOT:PATH=//p' "$out/CMakeCache.txt" 2>/dev/null || true)
if [[ $configured != "$sysroot" || ! -f $out/build.ninja ]]; then
	[[ -z $configured ]] || log "sysroot changed ($configured -> $sysroot): reconfiguring"
	rm -rf "$out/CMakeCache.txt" "$out/CMakeFiles"
	log "configuring $out"
	cmake -S "$repo" -B "$out" -G Ninja \
		-DCMAKE_TOOLCHAIN_FILE="$repo/cmake/toolchain-aarch64.cmake" \
		-DVREX_ARM64_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=Release -DVREX_BENCH=OFF \
		"${launcher[@]}" >"$out/configure.log" 2>&1 || {
		log "configure failed (see $out/configure.log)"
		tail -n 20 "$out/configure.log" >&2
		exit 1
	}
fi
log "building ${targets[*]}"
cmake --build "$out" -j "${JOBS:-2}" --target "${targets[@]}"
