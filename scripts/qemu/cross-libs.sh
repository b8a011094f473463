#!/usr/bin/env bash
# Copies the shared libraries and the program loader a cross-built (arm64) program needs into a
# QEMU guest's initramfs: what `ldd` does for the amd64 guests, done with readelf because an aarch64
# program cannot run here.
#
#   cross-libs.sh SYSROOT ROOT PROGRAM...
#
# DT_NEEDED entries are resolved recursively: first through the program's RUNPATH/RPATH (the build
# tree's own libraries, e.g. libvrex-hal.so.0; copied to the same absolute path, which the RUNPATH
# names; RUNPATH entries into the sysroot are left to the next step), then in SYSROOT's multiarch directories, then in the cross toolchain's
# /usr/aarch64-linux-gnu/lib. Libraries land in ROOT/lib/aarch64-linux-gnu (a default search
# directory of Debian's arm64 loader), the loader at its PT_INTERP path. Exit 1 if a library is
# not found (and says which).
set -euo pipefail

sysroot=${1:?usage: cross-libs.sh SYSROOT ROOT PROGRAM...}
root=${2:?usage: cross-libs.sh SYSROOT ROOT PROGRAM...}
shift 2
triplet=aarch64-linux-gnu
search=("$sysroot/usr/lib/$triplet" "$sysroot/usr/lib" "/usr/$triplet/lib")

declare -A done_libs=()
status=0

needed() { readelf -d "$1" | sed -nE 's/.*\(NEEDED\).*\[(.*)\]$/\1/p'; }
runpaths() { # elf -> one directory per line ($ORIGIN expanded)
	local dir
	dir=$(dirname "$(readlink -f "$1")")
	readelf -d "$1" | sed -nE 's/.*\((RUNPATH|RPATH)\).*\[(.*)\]$/\2/p' | tr ':' '\n' |
		sed "s|\$ORIGIN|$dir|g; s|\${ORIGIN}|$dir|g" | grep -v -e '^$' -e "^$sysroot" || true
}

resolve() { # elf
	local elf=$1 lib dir found dest
	local -a rp
	mapfile -t rp < <(runpaths "$elf")
	while read -r lib; do
		[[ -n $lib && -z ${done_libs[$lib]:-} ]] || continue
		done_libs[$lib]=1
		found='' dest=''
		for dir in "${rp[@]}"; do
			if [[ -e $dir/$lib ]]; then
				found=$dir/$lib dest=$dir/$lib
				break
			fi
		done
		if [[ -z $found ]]; then
			for dir in "${search[@]}"; do
				if [[ -e $dir/$lib ]]; then
					found=$dir/$lib dest=/lib/$triplet/$lib
					break
				fi
			done
		fi
		if [[ -z $found ]]; then
			echo "cross-libs: $lib (needed by $elf) not found in ${rp[*]} ${search[*]}" >&2
			status=1
			continue
		fi
		# Copied by an earlier call for another program, together with what it needs.
		[[ -e $root/$dest ]] && continue
		mkdir -p "$root/$(dirname "$dest")"
		cp -L "$found" "$root/$dest"
		resolve "$found"
	done < <(needed "$elf")
}

for prog in "$@"; do
	interp=$(readelf -l "$prog" | sed -nE 's/.*Requesting program interpreter: (.*)\]$/\1/p')
	if [[ -n $interp && ! -e $root/$interp ]]; then
		mkdir -p "$root/$(dirname "$interp")"
		cp -L "$sysroot/usr/lib/$triplet/$(basename "$interp")" "$root/$interp" 2>/dev/null ||
			cp -L "/usr/$triplet/lib/$(basename "$interp")" "$root/$interp"
	fi
	resolve "$prog"
done
exit "$status"
