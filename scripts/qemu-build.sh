#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# qemu-build.sh [--check] — QEMU with the V-Rex device models (qemu/), from Debian's own source.
#
# Source: bookworm's qemu source package (scripts/deb-source.sh: `apt-get source` through a private
# APT configuration with only a deb-src line, so the host's apt state is untouched), Debian's
# patches applied by dpkg-source; then qemu/patches/*.patch (build wiring, the arm64 virt
# platform-bus binding), the device sources qemu/hw/vrex/ and lib/ (the reference model, compiled in unchanged: copied into the
# build tree, never forked in the repository), and qemu/devices/<arch>.mak as the device list.
#
# Configured with only what the guests need: x86_64-softmmu and aarch64-softmmu, no default
# features, no default devices (q35 + PCIe root ports + intel-iommu + vrex-pci; virt + vrex-mmio),
# system libfdt, no docs/tools/user mode, no debug info. Compiled with nice, QEMU_JOBS (default 2) jobs, through
# ccache when installed (CCACHE_DIR, default /var/cache/ccache).
#
# Result: $VREX_CACHE/qemu-<key>/bin/qemu-system-{x86_64,aarch64} plus build-seconds and recipe;
# the path is printed on stdout (last line). <key> hashes the recipe: source package version,
# configure flags, compiler, and the contents of qemu/ and lib/; any change rebuilds. The build tree
# ($VREX_CACHE/qemu.work) survives between keys, so a changed device file recompiles only itself.
# --check prints the path only if it is cached (exit 1 otherwise). --fetch only downloads the source
# package when the result is not cached (scripts/prefetch.sh, ahead of `make test`). Environment:
# VREX_CACHE (default /var/cache/vrex), QEMU_JOBS, VREX_DEBIAN_MIRROR (default
# http://deb.debian.org).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${VREX_CACHE:-/var/cache/vrex}
jobs=${QEMU_JOBS:-2}
check_only=0 fetch_only=0 only=
[[ ${1:-} == --check ]] && check_only=1
[[ ${1:-} == --fetch ]] && fetch_only=1
# --only ARCH: build that emulator in the work tree and print the tree (for iterating; not cached).
[[ ${1:-} == --only ]] && only=${2:?--only takes x86_64 or aarch64}
log() { echo "qemu-build: $*" >&2; }

suite=bookworm
pkg_version=1:7.2+dfsg-7+deb12u18
targets=x86_64-softmmu,aarch64-softmmu
flags=(--target-list=$targets --without-default-features --without-default-devices
	--with-devices-x86_64=vrex --with-devices-aarch64=vrex --enable-fdt=system --enable-tcg
	--disable-docs --disable-tools --disable-guest-agent --disable-user --disable-install-blobs
	--disable-debug-info
	--firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu)

content_hash() {
	(cd "$repo" && find qemu lib -type f \( -name '*.c' -o -name '*.h' -o -name '*.patch' -o \
		-name '*.mak' -o -name 'Kconfig' -o -name 'meson.build' \) -print0 | sort -z |
		xargs -0 sha256sum) | sha256sum | cut -c1-16
}
recipe="qemu $pkg_version $suite|${flags[*]}|$(cc --version | head -n1)|$(content_hash)"
key=$(printf '%s' "$recipe" | sha256sum | cut -c1-12)
dest=$CACHE/qemu-$key
done_file=$dest/build-seconds
if [[ -f $done_file && -z $only ]]; then
	echo "$dest"
	exit 0
fi
((check_only)) && exit 1

# --- source: Debian's source package, downloaded once (scripts/deb-source.sh) -------------------------
fetch_source() {
	bash "$repo/scripts/deb-source.sh" --suite "$suite" "qemu=$pkg_version" "$CACHE/apt-src-qemu/src" | tail -n 1
}
if ((fetch_only)); then
	fetch_source
	exit
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.qemu-build.lock"
flock 9
if [[ -f $done_file && -z $only ]]; then # built while we waited
	echo "$dest"
	exit 0
fi
start=$(date +%s)
dsc=$(fetch_source)

work=$CACHE/qemu.work
src=$work/src
if [[ ! -f $src/.vrex-extracted-$pkg_version ]]; then
	log "extracting $(basename "$dsc") (Debian's patches applied)"
	rm -rf "$src" "$work/build" "$work/applied"
	mkdir -p "$work"
	dpkg-source --no-check -x "$dsc" "$src" >&2
	touch "$src/.vrex-extracted-$pkg_version"
fi

# Our patch set: reverse the one applied last if it changed, then apply the current one.
patches_hash=$(cat "$repo"/qemu/patches/*.patch | sha256sum | cut -c1-16)
if [[ $(cat "$work/applied/hash" 2>/dev/null) != "$patches_hash" ]]; then
	if [[ -d $work/applied ]]; then
		for p in $(ls -r "$work"/applied/*.patch); do
			patch -d "$src" -p1 -R -s <"$p" >&2
		done
	fi
	rm -rf "$work/applied"
	mkdir -p "$work/applied"
	for p in "$repo"/qemu/patches/*.patch; do
		log "patch $(basename "$p")"
		patch -d "$src" -p1 -s --no-backup-if-mismatch <"$p" >&2
		cp "$p" "$work/applied/"
	done
	echo "$patches_hash" >"$work/applied/hash"
fi

# Copies that keep the timestamp of unchanged files, so ninja rebuilds only what changed.
sync_file() { cmp -s "$1" "$2" || install -D -m 0644 "$1" "$2"; }
for f in "$repo"/qemu/hw/vrex/*; do
	sync_file "$f" "$src/hw/vrex/$(basename "$f")"
done
mkdir -p "$src/hw/vrex/lib"
for f in "$src"/hw/vrex/lib/*.[ch]; do # files lib/ no longer has
	[[ -e $f && ! -e $repo/lib/$(basename "$f") ]] && rm -f "$f"
done
for f in "$repo"/lib/*.[ch]; do
	sync_file "$f" "$src/hw/vrex/lib/$(basename "$f")"
done
{
	echo "# generated by scripts/qemu-build.sh: the sources of vrex lib/"
	echo "vrex_lib_sources = files("
	for f in "$repo"/lib/*.c; do echo "  '$(basename "$f")',"; done
	echo ")"
} >"$work/lib-meson.build"
sync_file "$work/lib-meson.build" "$src/hw/vrex/lib/meson.build"
for arch in x86_64 aarch64; do
	sync_file "$repo/qemu/devices/$arch-softmmu.mak" "$src/configs/devices/$arch-softmmu/vrex.mak"
done

# --- configure (once per flag set) and build ---------------------------------------------------------
export CCACHE_DIR=${CCACHE_DIR:-/var/cache/ccache} CCACHE_BASEDIR=$work
[[ -d /usr/lib/ccache ]] && export PATH=/usr/lib/ccache:$PATH
build=$work/build
if [[ $(cat "$build/.vrex-flags" 2>/dev/null) != "${flags[*]}" ]]; then
	log "configure ${flags[*]}"
	rm -rf "$build"
	mkdir -p "$build"
	(cd "$build" && nice -n 5 "$src/configure" "${flags[@]}" >configure.log 2>&1) || {
		tail -n 30 "$build/configure.log" >&2
		exit 1
	}
	echo "${flags[*]}" >"$build/.vrex-flags"
fi
# One target after the other: the amd64 emulator is usable (from $build) while arm64's compiles.
: >"$build/build.log"
emulators=(qemu-system-x86_64 qemu-system-aarch64)
[[ -n $only ]] && emulators=("qemu-system-$only")
for t in "${emulators[@]}"; do
	log "building $t (-j$jobs; log $build/build.log)"
	if ! nice -n 5 ninja -C "$build" -j"$jobs" "$t" >>"$build/build.log" 2>&1; then
		grep -E 'error|Error' "$build/build.log" | head -n 30 >&2
		exit 1
	fi
done
if grep -n 'hw/vrex/.*warning' "$build/build.log" >&2; then
	log "the V-Rex device sources must compile without warnings"
	exit 1
fi
if [[ -n $only ]]; then
	mkdir -p "$work/only/bin"
	ln -sf "$build/qemu-system-$only" "$work/only/bin/"
	echo "$work/only"
	exit 0
fi

tmp=$dest.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp/bin"
cp "$build/qemu-system-x86_64" "$build/qemu-system-aarch64" "$tmp/bin/"
printf '%s\n' "$recipe" >"$tmp/recipe"
echo $(($(date +%s) - start)) >"$tmp/build-seconds"
rm -rf "$dest"
mv "$tmp" "$dest"
log "built in $(cat "$dest/build-seconds") s: $dest"
echo "$dest"
