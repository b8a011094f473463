#!/usr/bin/env bash
# The installed headers (hal/include/vrex) stay free of implementation details: no locks, no libdrm
# or libudev, no private HAL headers, no hash containers; std::map only where an API returns one
# (hotplug.hpp's known()). Fails naming each offending line.
set -euo pipefail
dir=${1:-hal/include/vrex}
fail=0
check() { # regex why [files...]
	local re=$1 why=$2
	shift 2
	if grep -nE "$re" "$@"; then
		echo "public headers: $why" >&2
		fail=1
	fi
}
headers=("$dir"/*.h "$dir"/*.hpp)
check '#include <(mutex|shared_mutex|condition_variable)>|std::(mutex|shared_mutex|recursive_mutex|condition_variable)' \
	"locks belong in the implementation (pimpl, hal/src/*_impl.hpp)" "${headers[@]}"
check '#include <(xf86drm|libudev)\.h>|drmVersion|udev_' "libdrm / libudev are private dependencies" "${headers[@]}"
check '#include "(block_table|kv_allocator_impl|emulated_backend|kernel_backend|discovery|bank_memory|register_file|async_device_impl)\.hpp"' \
	"private HAL headers (hal/src) must not leak into the public ones" "${headers[@]}"
check '#include <unordered_(map|set)>|std::unordered_(map|set)' "hash containers are implementation state" "${headers[@]}"
mapless=()
for h in "${headers[@]}"; do [[ $(basename "$h") == hotplug.hpp ]] || mapless+=("$h"); done
check '#include <map>|std::map' "std::map is implementation state (only hotplug.hpp's API returns one)" "${mapless[@]}"
# Every public header compiles on its own (C++20; the C header also as C11).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
inc=(-I"$dir/.." -I"$dir/../../../uapi" -isystem /usr/include/libdrm)
for h in "${headers[@]}"; do
	printf '#include "vrex/%s"\n' "$(basename "$h")" >"$tmp/t.cpp"
	if ! c++ -std=c++20 -fsyntax-only -Wall -Werror "${inc[@]}" "$tmp/t.cpp"; then
		echo "public headers: $(basename "$h") does not compile on its own" >&2
		fail=1
	fi
done
printf '#include "vrex/vrex_hal.h"\n' >"$tmp/t.c"
cc -std=c11 -fsyntax-only -Wall -Werror "${inc[@]}" "$tmp/t.c" || { echo "public headers: vrex_hal.h is not C11" >&2; fail=1; }
((fail == 0)) && echo "public headers: ${#headers[@]} headers clean"
exit $fail
