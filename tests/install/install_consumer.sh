#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds consumers that see only that prefix:
#  - CMake: find_package(vrex <ABI major>.<minor>) -> vrex::hal, a C++ consumer (with vrex/async.hpp,
#    so the package must bring Boost.Asio's headers and C++20) and a C one; other majors are refused;
#  - pkg-config: with only the prefix on PKG_CONFIG_LIBDIR (no libdrm/libudev .pc files visible),
#    `pkg-config --cflags --libs vrex-hal` works and builds the C example;
#  - the installed library's SONAME libvrex-hal.so.<major>, what the consumers load (DT_NEEDED).
# All consumers run on the emulated backend.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$src/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
	echo "install_consumer: $*" >&2
	exit 1
}

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
header=$work/prefix/include/vrex/vrex_hal.h
part() { sed -nE "s/^#define VREX_HAL_VERSION_$1 +([0-9]+)$/\1/p" "$header"; }
major=$(part MAJOR) minor=$(part MINOR) patch=$(part PATCH)
[[ -n $major && -n $minor && -n $patch ]] || fail "no ABI version in the installed vrex_hal.h"
lib=$(find "$work/prefix" -name "libvrex-hal.so.$major" | head -n 1)
[[ -n $lib ]] || fail "no libvrex-hal.so.$major installed: $(find "$work/prefix" -name 'libvrex-hal.so*')"
libdir=$(dirname "$lib")
[[ -e $libdir/libvrex-hal.so && -e $libdir/libvrex-hal.so.$major.$minor.$patch ]] ||
	fail "libvrex-hal.so (development link) or libvrex-hal.so.$major.$minor.$patch missing in $libdir"
soname=$(readelf -d "$lib" | sed -nE 's/.*\(SONAME\).*\[(.*)\]$/\1/p')
[[ $soname == "libvrex-hal.so.$major" ]] || fail "SONAME $soname, expected libvrex-hal.so.$major"
needed() { readelf -d "$1" | sed -nE 's/.*\(NEEDED\).*\[(libvrex-hal[^]]*)\]$/\1/p'; }

# CMake: find_package(vrex major.minor) works; a different major is refused (SameMajorVersion).
cmake -S "$src/consumer" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
	-DVREX_WANT_VERSION="$major.$minor" >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log" >&2; fail "find_package(vrex $major.$minor) failed"; }
cmake --build "$work/cmake" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; fail "consumer build failed"; }
for v in "$((major + 1)).0" "$((major - 1 < 0 ? 0 : major - 1)).9"; do
	[[ $v == "$major".* ]] && continue
	if cmake -S "$src/consumer" -B "$work/cmake-$v" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
		-DVREX_WANT_VERSION="$v" >"$work/cmake-$v.log" 2>&1; then
		fail "find_package(vrex $v) accepted ABI $major.$minor.$patch"
	fi
done
for exe in consumer_cpp consumer_c; do
	[[ $(needed "$work/cmake/$exe") == "libvrex-hal.so.$major" ]] || fail "$exe needs $(needed "$work/cmake/$exe")"
	LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}" "$work/cmake/$exe"
done

# pkg-config with nothing but the installed package: no private requirements to resolve.
PKG_CONFIG_LIBDIR=$(dirname "$(find "$work/prefix" -name vrex-hal.pc | head -n 1)")
PKG_CONFIG_PATH=
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH
if pkg-config --exists libdrm 2>/dev/null; then fail "libdrm.pc is visible: the check below would prove nothing"; fi
flags=$(pkg-config --cflags --libs vrex-hal) || fail "pkg-config --cflags --libs vrex-hal needs more than the package"
[[ $(pkg-config --modversion vrex-hal) == "$major.$minor.$patch" ]] ||
	fail "vrex-hal.pc Version $(pkg-config --modversion vrex-hal), ABI $major.$minor.$patch"
[[ $(pkg-config --variable=libdir vrex-hal) -ef $libdir ]] || fail "vrex-hal.pc points elsewhere"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror -o "$work/c_engine" "$root/examples/c_engine.c" $flags
[[ $(needed "$work/c_engine") == "libvrex-hal.so.$major" ]] || fail "c_engine needs $(needed "$work/c_engine")"
LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}" VREX_BACKEND=emulated "$work/c_engine"
echo "install_consumer: ABI $major.$minor.$patch (SONAME $soname): find_package(vrex $major.$minor) C++/C and" \
	"pkg-config (package alone) consumers built and ran; other majors refused"
