#!/usr/bin/env bash
# The ABI of libvrex-hal against its record (docs/hal.md "ABI policy"):
#  - the dynamic symbols it exports, demangled, against tests/hal/exported-symbols.txt: any new or
#    missing symbol fails with a diff;
#  - the ABI version: the list's first line "# ABI M.m.p" must be VREX_HAL_VERSION_* of vrex_hal.h,
#    the SONAME libvrex-hal.so.M, the file libvrex-hal.so.M.m.p, and the CMake package version
#    (vrexConfigVersion.cmake) and pkg-config Version (vrex-hal.pc, which must carry no
#    Requires.private) M.m.p;
#  - the layout of every C struct of vrex_hal.h (field offsets, types, names and sizeof, from clang's
#    record layout dump) against tests/hal/abi-layouts.txt, recorded for the same version.
# An intended change of the public API: bump the version in vrex_hal.h, rebuild, then re-record with
#   tests/hal/exported_symbols.sh build/hal/libvrex-hal.so tests/hal/exported-symbols.txt \
#     hal/include/vrex/vrex_hal.h build/hal --update
# and commit both lists with the change (the diff is the ABI review). The update refuses a removed
# symbol or struct, or a struct whose fields changed, without a major bump, and a new symbol, new
# struct or a size-prefixed struct (struct_size first) grown at its end without a minor bump.
# --update-unreleased records without those checks: only for additions to a version that has not
# been released yet (e.g. merging two branches that both change the unreleased 1.0.0).
set -euo pipefail
usage="usage: $0 LIB LIST HEADER PACKAGE_DIR [--update]"
lib=${1:?$usage} list=${2:?$usage} header=${3:?$usage} pkgdir=${4:?$usage} mode=${5:-check}
fail() {
	echo "exported symbols: $*" >&2
	exit 1
}

part() { sed -nE "s/^#define VREX_HAL_VERSION_$1 +([0-9]+)$/\1/p" "$header"; }
major=$(part MAJOR) minor=$(part MINOR) patch=$(part PATCH)
[[ -n $major && -n $minor && -n $patch ]] || fail "$header has no VREX_HAL_VERSION_MAJOR/MINOR/PATCH"
version=$major.$minor.$patch
recorded=$(sed -nE '1s/^# ABI ([0-9]+\.[0-9]+\.[0-9]+)$/\1/p' "$list" 2>/dev/null || true)

current=$(mktemp)
expected=$(mktemp)
layout=$(mktemp)
trap 'rm -f "$current" "$expected" "$layout" "$layout.c"' EXIT
layouts=$(dirname "$list")/abi-layouts.txt
# One block per struct: "struct NAME", then "OFFSET TYPE FIELD" lines, then "sizeof=N, align=M".
{
	echo "#include \"vrex/vrex_hal.h\""
	sed -nE 's/^struct (vrex_hal_[a-z0-9_]+) \{.*/int sizeof_\1 = sizeof(struct \1);/p' "$header"
} >"$layout.c"
clang -std=c11 -fsyntax-only -I"$(dirname "$header")/.." -Xclang -fdump-record-layouts "$layout.c" |
	sed -nE 's/^ +([0-9]+) \| struct (vrex_hal_[a-z0-9_]+)$/struct \2/p;
		s/^ +([0-9]+) \|   (.*)$/\1 \2/p; s/^ +\| \[(sizeof=.*)\]$/\1/p' >"$layout" ||
	fail "clang could not dump the struct layouts of $header"
grep -q '^struct ' "$layout" || fail "no struct layouts dumped from $header"
# The struct blocks of a layout file whose name is $2, fields only (no sizeof line).
fields_of() { awk -v want="struct $2" '/^struct /{on = ($0 == want); next} on && !/^sizeof=/' "$1"; }
structs_of() { sed -n 's/^struct //p' "$1" | LC_ALL=C sort; }
# Names only (the type letter differs between build types: W vs T), without the symbols every ELF
# shared object defines. A list line "? NAME" is a vague-linkage symbol whose emission depends on
# the optimisation level (vtable for vrex::Backend, which has no key function: emitted at -O1 in
# the sanitizer build, not at -O3): allowed, not required. Lines starting with "#" are comments.
nm -D --defined-only -C "$lib" | cut -d' ' -f3- |
	grep -vxE '_init|_fini|_edata|_end|__bss_start' | LC_ALL=C sort -u >"$current"
required() { grep -v -e '^? ' -e '^#' "$list" || true; }
optional() { sed -n 's/^? //p' "$list" || true; }
# Optional names present in this build are expected; absent ones are not.
{
	required
	optional | grep -xF -f - "$current" || true
} | LC_ALL=C sort -u >"$expected"

if [[ $mode == --update || $mode == --update-unreleased ]]; then
	removed=$(comm -23 "$expected" "$current")
	added=$(comm -13 "$expected" "$current")
	IFS=. read -r rmajor rminor _ <<<"${recorded:-0.0.0}"
	[[ $mode == --update-unreleased ]] && rmajor=none rminor=none
	if [[ -n $removed && $major == "$rmajor" ]]; then
		printf '%s\n' "$removed" >&2
		fail "the symbols above are gone: that breaks the ABI, bump VREX_HAL_VERSION_MAJOR (recorded $recorded)"
	fi
	if [[ -n $added && $major == "$rmajor" && $minor == "$rminor" ]]; then
		printf '%s\n' "$added" >&2
		fail "the symbols above are new: bump VREX_HAL_VERSION_MINOR (recorded $recorded)"
	fi
	if [[ -f $layouts ]]; then
		grown=
		for st in $(structs_of "$layouts"); do
			old=$(fields_of "$layouts" "$st") new=$(fields_of "$layout" "$st")
			[[ $old == "$new" ]] && continue
			# Appending to a size-prefixed struct is compatible; anything else breaks.
			if [[ -n $new && $(head -n 1 <<<"$old") == "0 uint32_t struct_size" && $new == "$old"$'\n'* ]]; then
				grown+="$st "
			elif [[ $major == "$rmajor" ]]; then
				diff <(echo "$old") <(echo "$new") >&2 || true
				fail "struct $st changed or went away: that breaks the ABI, bump VREX_HAL_VERSION_MAJOR (recorded $recorded)"
			fi
		done
		newstructs=$(comm -13 <(structs_of "$layouts") <(structs_of "$layout"))
		if [[ -n $grown$newstructs && $major == "$rmajor" && $minor == "$rminor" ]]; then
			fail "new or grown structs (${grown}${newstructs//$'\n'/ }): bump VREX_HAL_VERSION_MINOR (recorded $recorded)"
		fi
	fi
	{
		echo "# ABI $version"
		cat "$layout"
	} >"$layouts"
	{
		echo "# ABI $version"
		optional | sed 's/^/? /'
		grep -vxF -f <(optional) "$current" || true
	} >"$list.new"
	mv "$list.new" "$list"
	echo "exported symbols: recorded $(grep -vc '^#' "$list") symbols of ABI $version in $list"
	exit 0
fi

[[ $recorded == "$version" ]] ||
	fail "$header says ABI $version, $list was recorded for ${recorded:-no version}: re-record (see $0)"
lrecorded=$(sed -nE '1s/^# ABI ([0-9]+\.[0-9]+\.[0-9]+)$/\1/p' "$layouts" 2>/dev/null || true)
[[ $lrecorded == "$version" ]] ||
	fail "$header says ABI $version, $layouts was recorded for ${lrecorded:-no version}: re-record (see $0)"
if ! diff -u <(sed 1d "$layouts") "$layout"; then
	echo "exported symbols: the C structs of $header differ from $layouts." >&2
	fail "if the change is intended: bump the version in $header and re-record (see $0)"
fi
if ! diff -u "$expected" "$current"; then
	echo "exported symbols: $lib differs from $list (+ new, - missing)." >&2
	fail "if the API change is intended: bump the version in $header and re-record (see $0)"
fi
# Nothing beyond the C ABI and namespace vrex (instantiations of std templates stay local).
if grep -vE '^vrex_hal_|vrex::' "$current"; then
	fail "the above are neither C ABI (vrex_hal_*) nor namespace vrex"
fi

# The version everywhere a consumer or the loader sees it.
soname=$(readelf -d "$lib" | sed -nE 's/.*\(SONAME\).*\[(.*)\]$/\1/p')
[[ $soname == "libvrex-hal.so.$major" ]] || fail "SONAME $soname, expected libvrex-hal.so.$major (ABI $version)"
real=$(basename "$(readlink -f "$lib")")
[[ $real == "libvrex-hal.so.$version" ]] || fail "library file $real, expected libvrex-hal.so.$version"
cfgver=$(sed -nE 's/^set\(PACKAGE_VERSION "([^"]*)"\)$/\1/p' "$pkgdir/vrexConfigVersion.cmake")
[[ $cfgver == "$version" ]] || fail "CMake package version ${cfgver:-none}, expected $version"
grep -q 'only if the requested major version is the same' "$pkgdir/vrexConfigVersion.cmake" ||
	fail "vrexConfigVersion.cmake is not SameMajorVersion (the major is the ABI)"
pcver=$(sed -nE 's/^Version: *(.*)$/\1/p' "$pkgdir/vrex-hal.pc")
[[ $pcver == "$version" ]] || fail "vrex-hal.pc Version ${pcver:-none}, expected $version"
if grep -n '^Requires.private' "$pkgdir/vrex-hal.pc"; then
	fail "vrex-hal.pc: the shared library's private dependencies do not belong in Requires.private"
fi
echo "exported symbols: $(wc -l <"$current") symbols and $(grep -c '^struct ' "$layout") C struct layouts, as recorded" \
	"for ABI $version; SONAME $soname, package $cfgver"
