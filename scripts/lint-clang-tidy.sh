#!/usr/bin/env bash
# clang-tidy (.clang-tidy at the top) over the user-space C++ sources, using the compile database of
# a plain build in build/tidy. Called by scripts/lint.sh as one case; exits non-zero on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=build/tidy
cmake -S . -B "$dir" -G Ninja -DVREX_BENCH=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >"$dir.cmake.log" 2>&1 ||
	{ tail -n 20 "$dir.cmake.log"; exit 1; }
mapfile -t files < <(git ls-files 'hal/src/*.cpp' 'tools/*.cpp' 'tools/**/*.cpp' 'examples/*.cpp' | sort -u)
echo "clang-tidy: ${#files[@]} files"
printf '%s\n' "${files[@]}" | xargs -P "${JOBS:-$(nproc)}" -n 4 clang-tidy -p "$dir" --quiet
echo "clang-tidy: clean"
