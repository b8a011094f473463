#!/usr/bin/env bash
# Installs the build tree into a scratch prefix, then builds two consumers that see only that prefix:
# a C++ one through find_package(vrex) and the C example through pkg-config (vrex-hal.pc). Both run.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$src/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
cmake -S "$src/consumer" -B "$work/cpp" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cpp" >/dev/null
libdir=$(dirname "$(find "$work/prefix" -name 'libvrex-hal.so' | head -n 1)")
LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}" "$work/cpp/consumer_cpp"

PKG_CONFIG_PATH=$(dirname "$(find "$work/prefix" -name vrex-hal.pc | head -n 1)")
export PKG_CONFIG_PATH
[[ $(pkg-config --variable=libdir vrex-hal) -ef $libdir ]] || { echo "vrex-hal.pc points elsewhere" >&2; exit 1; }
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o "$work/c_engine" "$root/examples/c_engine.c" \
	$(pkg-config --cflags --libs vrex-hal)
LD_LIBRARY_PATH="$libdir:${LD_LIBRARY_PATH:-}" VREX_BACKEND=emulated "$work/c_engine"
echo "install_consumer: find_package and pkg-config consumers built and ran"
