#!/usr/bin/env bash
# `make lint`: static checks of the kernel side and the device tree. One case per check; every check
# logs to build/lint/<check>.log. Ends with "lint: N passed, N failed"; exit status 1 on any failure.
#
#   checkpatch-kernel, checkpatch-lib   checkpatch.pl --strict --no-tree -f (kernel style, 100 cols;
#                                       lib/ ignores PREFER_KERNEL_TYPES, see below)
#   checkpatch-uapi                     the same on uapi/drm/*.h (BIT() is not available to user space)
#   kernel-doc-uapi                     scripts/kernel-doc -none on uapi/drm/*.h: no warning at all
#   sparse-6.12-amd64                   make C=2 against the Debian 6.12 amd64 headers
#   w1-<kernel>                         W=1 module build for 6.12 amd64, 6.1 amd64, 6.12 arm64;
#                                       any compiler warning fails
#   dt-doc-validate                     the binding against dt-schema's meta-schema
#   dt-example                          the binding's example, compiled and validated
#   dtc-<file>                          every dts/*.dts, dts/*.dtso, dts/test/*.dts compiles warning-free
#   dt-validate-<overlay>               each overlay applied (fdtoverlay) to the base its "lint-base:"
#                                       comment names, validated against the binding
#   clang-tidy                          user space; runs scripts/lint-clang-tidy.sh when that exists
#
#   lint.sh [--only PATTERN]    run only the checks whose name matches the extended regex
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build/lint
cache=${VREX_CACHE:-/var/cache/vrex}
only=
[[ ${1:-} == --only ]] && only=${2:?--only needs a pattern}
rm -rf "$out"
mkdir -p "$out"

passed=0
failed=0
want() { [[ -z $only || $1 =~ $only ]]; }
record() { # name ok log [detail]
	if (($2 == 0)); then
		passed=$((passed + 1))
		echo "lint: PASS $1"
	else
		failed=$((failed + 1))
		echo "lint: FAIL $1 (${4:-see} $3)"
		grep -v '^$' "$3" | head -n 15 | sed 's/^/      /'
	fi
}

# --- kernel sources, copied so that no build product lands in the tree -------------------------
config=$repo/.config
if [[ ! -f $config ]] && ! bash "$repo/scripts/kconfig.sh" defconfig >"$out/kconfig.log" 2>&1; then
	echo "lint: scripts/kconfig.sh defconfig failed (see $out/kconfig.log); building without .config"
fi
copy_sources() { # dest
	mkdir -p "$1"
	cp -a "$repo/kernel" "$repo/lib" "$repo/uapi" "$1/"
	[[ -f $config ]] && cp "$config" "$1/.config"
	return 0
}
have_module=0
[[ -f $repo/kernel/Kbuild || -f $repo/kernel/Makefile ]] && have_module=1

# --- checkpatch ----------------------------------------------------------------------------------
# Debian ships checkpatch.pl only inside linux-source-6.1's tarball: extract the three files once.
checkpatch_dir=$cache/checkpatch
get_checkpatch() {
	[[ -x $checkpatch_dir/checkpatch.pl ]] && return 0
	local deb tmp
	deb=$(bash "$repo/scripts/kheaders.sh" --fetch linux-source-6.1 6.1-amd64) || return 1
	tmp=$(mktemp -d "$cache/checkpatch.XXXXXX")
	dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards './usr/src/linux-source-6.1.tar.xz' |
		tar -xJ -C "$tmp" --strip-components=2 --wildcards \
			'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch' ||
		return 1
	chmod 755 "$tmp/checkpatch.pl"
	rm -rf "$checkpatch_dir"
	mv "$tmp" "$checkpatch_dir"
}
run_checkpatch() { # name extra-checkpatch-args files...
	local name=$1 log=$out/$1.log
	local -a extra=()
	[[ -n $2 ]] && extra=("$2")
	shift 2
	if (($# == 0)); then
		echo "no files" >"$log"
		record "$name" 1 "$log"
		return
	fi
	"$checkpatch_dir/checkpatch.pl" --strict --no-tree --no-summary --terse --show-types "${extra[@]}" -f "$@" >"$log" 2>&1
	# checkpatch's exit status covers errors and warnings; --strict CHECKs count as failures too.
	local rc=$?
	grep -qE '(ERROR|WARNING|CHECK):' "$log" && rc=1
	record "$name" "$rc" "$log"
}
# scripts/kernel-doc, from the same tarball, in its own cache folder.
kernel_doc_dir=$cache/kernel-doc
get_kernel_doc() {
	[[ -x $kernel_doc_dir/kernel-doc ]] && return 0
	local deb tmp
	deb=$(bash "$repo/scripts/kheaders.sh" --fetch linux-source-6.1 6.1-amd64) || return 1
	tmp=$(mktemp -d "$cache/kernel-doc.XXXXXX")
	dpkg-deb --fsys-tarfile "$deb" | tar -xO --wildcards './usr/src/linux-source-6.1.tar.xz' |
		tar -xJ -C "$tmp" --strip-components=2 --wildcards '*/scripts/kernel-doc' || return 1
	chmod 755 "$tmp/kernel-doc"
	mv -T "$tmp" "$kernel_doc_dir" 2>/dev/null || rm -rf "$tmp"
}
# kernel-doc prints nothing for a clean header: any line (warning or error) fails.
run_kernel_doc() { # name files...
	local name=$1 log=$out/$1.log
	shift
	if ! get_kernel_doc >"$log" 2>&1; then
		record "$name" 1 "$log" "could not extract kernel-doc, see"
		return
	fi
	"$kernel_doc_dir/kernel-doc" -none "$@" >"$log" 2>&1
	local rc=$?
	[[ -s $log ]] && rc=1
	record "$name" "$rc" "$log"
}
if want checkpatch-kernel || want checkpatch-lib || want checkpatch-uapi || want kernel-doc-uapi; then
	if get_checkpatch >"$out/checkpatch-fetch.log" 2>&1; then
		want checkpatch-kernel && run_checkpatch checkpatch-kernel "" "$repo"/kernel/*.[ch]
		# BIT() is kernel-only (linux/bits.h is not exported): uapi flags stay (1u << n), as in
		# the kernel's own include/uapi/drm headers.
		want checkpatch-uapi && run_checkpatch checkpatch-uapi --ignore=BIT_MACRO "$repo"/uapi/drm/*.h
		want kernel-doc-uapi && run_kernel_doc kernel-doc-uapi "$repo"/uapi/drm/*.h
		# lib/ is also compiled in user space, where its compat header has to define u8..s64 from
		# <stdint.h>: the kernel-types preference cannot apply there, everything else does.
		want checkpatch-lib && run_checkpatch checkpatch-lib --ignore=PREFER_KERNEL_TYPES "$repo"/lib/*.[ch]
	else
		record checkpatch 1 "$out/checkpatch-fetch.log" "could not extract checkpatch.pl, see"
	fi
fi

# --- module builds: sparse and W=1 ---------------------------------------------------------------
# A warning counts only once per location (Kbuild repeats header warnings per object).
module_build() { # name target extra-make-args...
	local name=$1 target=$2 log=$out/$1.log env
	shift 2
	if ((!have_module)); then
		echo "kernel/Kbuild is missing" >"$log"
		record "$name" 1 "$log"
		return
	fi
	if ! env=$(bash "$repo/scripts/kheaders.sh" --env "$target" 2>"$log"); then
		record "$name" 1 "$log" "kheaders.sh failed, see"
		return
	fi
	local KDIR ARCH CROSS_COMPILE
	eval "$env"
	local src=$out/$name/src
	copy_sources "$src"
	make -C "$KDIR" M="$src/kernel" ARCH="$ARCH" CROSS_COMPILE="$CROSS_COMPILE" -j2 "$@" modules \
		>"$log" 2>&1
	local rc=$? nwarn
	nwarn=$(grep -cE '(warning|error):' "$log")
	((nwarn > 0)) && rc=1
	record "$name" "$rc" "$log" "$nwarn warnings/errors, see"
}
want sparse-6.12-amd64 && module_build sparse-6.12-amd64 6.12-amd64 C=2 CHECK=sparse
for k in 6.12-amd64 6.1-amd64 6.12-arm64; do
	want "w1-$k" && module_build "w1-$k" "$k" W=1
done

# --- device tree -------------------------------------------------------------------------------
dtout=$out/dt
mkdir -p "$dtout"
binding=$repo/dts/bindings/vrex,vrex.yaml
schema=$dtout/processed-schema.json

# dt-schema's tools exit 0 on validation errors: any output is a failure.
quiet_check() { # name log command...
	local name=$1 log=$2
	shift 2
	"$@" >"$log" 2>&1
	local rc=$?
	[[ -s $log ]] && rc=1
	record "$name" "$rc" "$log"
}

if want dt-doc-validate; then
	quiet_check dt-doc-validate "$out/dt-doc-validate.log" \
		dt-doc-validate -u "$repo/dts/bindings" "$binding"
fi
# Core schemas (reserved-memory, types) plus ours; about a second, so always made.
dt-mk-schema -j -o "$schema" "$repo/dts/bindings" >"$out/dt-mk-schema.log" 2>&1 ||
	record dt-mk-schema 1 "$out/dt-mk-schema.log"
if want dt-example && [[ -f $schema ]]; then
	log=$out/dt-example.log
	if dt-extract-example "$binding" >"$dtout/example.dts" 2>"$log" &&
		dtc -@ -I dts -O dtb -o "$dtout/example.dtb" "$dtout/example.dts" 2>>"$log"; then
		quiet_check dt-example "$log" dt-validate -s "$schema" "$dtout/example.dtb"
	else
		record dt-example 1 "$log"
	fi
fi

for f in "$repo"/dts/*.dts "$repo"/dts/*.dtso "$repo"/dts/test/*.dts; do
	[[ -f $f ]] || continue
	name=dtc-${f#"$repo"/dts/}
	name=${name//\//-}
	want "$name" || continue
	quiet_check "$name" "$out/$name.log" dtc -@ -I dts -O dtb -o "$dtout/$(basename "$f").dtb" "$f"
done

for f in "$repo"/dts/*.dtso; do
	[[ -f $f ]] || continue
	base=$(basename "$f" .dtso)
	name=dt-validate-$base
	if ! want "$name" || [[ ! -f $schema ]]; then continue; fi
	log=$out/$name.log
	basefile=$(sed -nE 's/^.*lint-base: *([^ ]+).*$/\1/p' "$f" | head -n 1)
	if [[ -z $basefile || ! -f $repo/dts/$basefile ]]; then
		echo "$f: no 'lint-base:' comment naming a file under dts/" >"$log"
		record "$name" 1 "$log"
		continue
	fi
	if dtc -@ -q -I dts -O dtb -o "$dtout/$base.base.dtb" "$repo/dts/$basefile" 2>"$log" &&
		dtc -@ -q -I dts -O dtb -o "$dtout/$base.dtbo" "$f" 2>>"$log" &&
		fdtoverlay -i "$dtout/$base.base.dtb" -o "$dtout/$base.full.dtb" "$dtout/$base.dtbo" 2>>"$log"; then
		quiet_check "$name" "$log" dt-validate -s "$schema" "$dtout/$base.full.dtb"
	else
		record "$name" 1 "$log"
	fi
done

# --- user space ----------------------------------------------------------------------------------
# clang-tidy over hal/ tools/ tests/ belongs to the user-space owners: they add
# scripts/lint-clang-tidy.sh (exit status 0 = clean) and it becomes one more case here.
if want clang-tidy && [[ -f $repo/scripts/lint-clang-tidy.sh ]]; then
	bash "$repo/scripts/lint-clang-tidy.sh" >"$out/clang-tidy.log" 2>&1
	record clang-tidy $? "$out/clang-tidy.log"
fi

echo "lint: $passed passed, $failed failed"
((failed == 0))
