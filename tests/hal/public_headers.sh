#!/usr/bin/env bash
# The installed headers (hal/include/vrex) stay free of implementation details: no uAPI (drm_vrex_*,
# DRM_VREX_*, <drm/vrex_accel.h>), no locks, no libdrm or libudev, no private HAL headers (the
# Backend seam lives in hal/src), no std::map or hash containers. Fails naming each offending line.
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
check '#include <(xf86drm|xf86drmMode|libudev)\.h>|#include <drm/|#include <(libdrm/)?drm\.h>|drmVersion|drmIoctl|udev_' \
	"libdrm / libudev are private dependencies" "${headers[@]}"
check 'vrex_accel\.h|drm_vrex_|DRM_VREX_' "the uAPI is the backends' business: public types are HAL-owned" "${headers[@]}"
check '(lock_guard|unique_lock|scoped_lock|shared_lock)\b|#include <(atomic|thread)>|std::(atomic|thread)\b' \
	"locks and threads belong in the implementation" "${headers[@]}"
check '#include "(backend|block_table|kv_allocator_impl|stream_impl|device_impl|emulated_backend|emulated_device|kernel_backend|discovery|bank_memory|register_file|async_device_impl|hotplug_filter|c_api_internal)\.hpp"|class Backend\b|BackendFactory' \
	"private HAL headers (hal/src) must not leak into the public ones" "${headers[@]}"
check '#include <unordered_(map|set)>|std::unordered_(map|set)' "hash containers are implementation state" "${headers[@]}"
check '#include <(map|set)>|std::(multi)?(map|set)\b' "ordered containers are implementation state (APIs return vectors)" "${headers[@]}"
# Every public header compiles on its own (C++20; the C header also as C11).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# No uapi/ and no libdrm on the include path: a public header that needs them does not compile.
inc=(-I"$dir/..")
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
