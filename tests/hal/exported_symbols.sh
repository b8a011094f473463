#!/usr/bin/env bash
# The dynamic symbols libvrex-hal exports, demangled, against the recorded list
# tests/hal/exported-symbols.txt: any new or missing symbol fails with a diff. An intended change of
# the public API (docs/hal.md "ABI policy"): re-record with
#   tests/hal/exported_symbols.sh build/hal/libvrex-hal.so tests/hal/exported-symbols.txt --update
# and commit the list with the change (the diff is the ABI review).
set -euo pipefail
lib=$1 list=$2 mode=${3:-check}
current=$(mktemp)
trap 'rm -f "$current"' EXIT
# Names only (the type letter differs between build types: W vs T), without the symbols every ELF
# shared object defines. A list line "? NAME" is a vague-linkage symbol whose emission depends on
# the optimisation level (vtable for vrex::Backend, which has no key function: emitted at -O1 in
# the sanitizer build, not at -O3): allowed, not required.
nm -D --defined-only -C "$lib" | cut -d' ' -f3- |
	grep -vxE '_init|_fini|_edata|_end|__bss_start' | LC_ALL=C sort -u >"$current"
if [[ $mode == --update ]]; then
	optional=$(grep '^? ' "$list" 2>/dev/null || true)
	{
		[[ -z $optional ]] || printf '%s\n' "$optional"
		grep -vxF -f <(sed -n 's/^? //p' "$list" 2>/dev/null) "$current" || true
	} >"$list.new"
	mv "$list.new" "$list"
	echo "exported symbols: recorded $(wc -l <"$list") symbols in $list"
	exit 0
fi
expected=$(mktemp)
trap 'rm -f "$current" "$expected"' EXIT
# Optional names present in this build are expected; absent ones are not.
{
	grep -v '^? ' "$list"
	sed -n 's/^? //p' "$list" | grep -xF -f - "$current" || true
} | LC_ALL=C sort -u >"$expected"
if ! diff -u "$expected" "$current"; then
	echo "exported symbols: $lib differs from $list (+ new, - missing)." >&2
	echo "If the API change is intended: $0 $lib $list --update, and commit the list." >&2
	exit 1
fi
n=$(wc -l <"$current")
# Nothing beyond the C ABI and namespace vrex (instantiations of std templates stay local).
if grep -vE '^vrex_hal_|vrex::' "$current"; then
	echo "exported symbols: the above are neither C ABI (vrex_hal_*) nor namespace vrex" >&2
	exit 1
fi
echo "exported symbols: $n, as recorded"
