#!/usr/bin/env bash
# The debug kernel of the QEMU matrix ("debug-6.1-amd64" in scripts/qemu-test.sh): Debian bookworm's
# linux-source-6.1, `make tinyconfig` + scripts/qemu/kernel-debug.config (serial console, initramfs,
# modules, DRM=m, DEBUG_FS, CONFIGFS_FS, KASAN, PROVE_LOCKING, DEBUG_ATOMIC_SLEEP, KMEMLEAK, DEBUG_OBJECTS).
# Built once and cached under $VREX_CACHE/kernel-debug-<hash> (default /var/cache/vrex), the hash
# covering the config fragment, the source package version and the recipe; rebuilt when missing.
#
#   kernel-debug.sh [--env] [--offline]
#
# Prints the build tree to build modules against (`make -C KDIR M=...`), the bzImage and the
# /lib/modules/<kver> directory, one per line; --env prints KVER KDIR ARCH CROSS_COMPILE VMLINUZ
# MODDIR assignments instead (the same as `kheaders.sh --image --env`). Build output goes to
# <cache dir>/build.log, the build's wall time to <cache dir>/build-seconds.
# --offline (or a failing archive) uses the newest debug kernel already cached.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${VREX_CACHE:-/var/cache/vrex}
fragment=$here/qemu/kernel-debug.config
# Bump when the way the kernel is built changes (not its configuration: that is hashed).
recipe=1

want_env=0
offline=0
while (($#)); do
	case $1 in
	--env) want_env=1 ;;
	--offline) offline=1 ;;
	-h | --help)
		sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "kernel-debug: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done

log() { echo "kernel-debug: $*" >&2; }
mkdir -p "$cache"

emit() { # dir
	local d=$1 kver
	kver=$(cat "$d/kernelrelease")
	if ((want_env)); then
		printf 'KVER=%q\nKDIR=%q\nARCH=x86_64\nCROSS_COMPILE=\nVMLINUZ=%q\nMODDIR=%q\n' "$kver" \
			"$d/build" "$d/root/boot/vmlinuz-$kver" "$d/root/lib/modules/$kver"
	else
		printf '%s\n%s\n%s\n' "$d/build" "$d/root/boot/vmlinuz-$kver" "$d/root/lib/modules/$kver"
	fi
}

newest_cached() {
	find "$cache" -mindepth 2 -maxdepth 2 -path "$cache/kernel-debug-*/done" -printf '%T@ %h\n' \
		2>/dev/null | sort -n | tail -n 1 | cut -d' ' -f2-
}

deb=
if ((!offline)); then
	deb=$(bash "$here/kheaders.sh" --fetch linux-source-6.1 6.1-amd64) || deb=
fi
if [[ -z $deb ]]; then
	d=$(newest_cached)
	[[ -n $d ]] || {
		log "no linux-source-6.1 from the archive and no cached debug kernel"
		exit 1
	}
	((offline)) || log "archive unavailable; using cached $d"
	emit "$d"
	exit 0
fi

srcver=$(basename "$deb" .deb)
hash=$( {
	echo "recipe $recipe"
	echo "source $srcver"
	cat "$fragment"
} | sha256sum | cut -c1-16)
d=$cache/kernel-debug-$hash

# One builder at a time; the others wait and then find it done.
exec 7>"$cache/kernel-debug.lock"
flock 7
if [[ -f $d/done ]]; then
	emit "$d"
	exit 0
fi

rm -rf "$d"
mkdir -p "$d/src" "$d/build" "$d/root/boot"
trap 'log "failed; last lines of $d/build.log:"; tail -n 20 "$d/build.log" >&2' ERR
t0=$SECONDS
log "building $srcver with $(basename "$fragment") into $d (log: $d/build.log)"
{
	echo "== extracting $srcver"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/src/linux-source-6.1.tar.xz |
		tar -xJ -C "$d/src" --strip-components=1 --exclude='linux-source-6.1/Documentation/[!K]*'
	echo "== extracted after $((SECONDS - t0)) s"
} >"$d/build.log" 2>&1

# ccache makes a rebuild after a small fragment change cheap; paths are made relative to $d.
cc=gcc
command -v ccache >/dev/null && cc="ccache gcc"
export CCACHE_BASEDIR=$d KBUILD_BUILD_TIMESTAMP='2026-01-01' KBUILD_BUILD_USER=vrex KBUILD_BUILD_HOST=vrex
kmake() { make -C "$d/src" O="$d/build" ARCH=x86_64 CC="$cc" -j"${VREX_KERNEL_JOBS:-2}" "$@"; }
{
	kmake tinyconfig
	cat "$fragment" >>"$d/build/.config"
	kmake olddefconfig
} >>"$d/build.log" 2>&1

# Every symbol the fragment asks for must have survived olddefconfig (a dependency we missed
# would silently drop e.g. KASAN).
missing=()
while IFS= read -r line; do
	[[ $line =~ ^(CONFIG_[A-Z0-9_]+)=(.*)$ ]] || continue
	grep -qxF "$line" "$d/build/.config" || missing+=("$line")
done <"$fragment"
if ((${#missing[@]})); then
	log "olddefconfig dropped: ${missing[*]} (see $d/build/.config)"
	exit 1
fi

echo "== configured after $((SECONDS - t0)) s" >>"$d/build.log"
kmake bzImage modules >>"$d/build.log" 2>&1
echo "== built after $((SECONDS - t0)) s" >>"$d/build.log"
kmake -s kernelrelease 2>/dev/null | tail -n 1 >"$d/kernelrelease"
kver=$(cat "$d/kernelrelease")
kmake INSTALL_MOD_PATH="$d/root" modules_install >>"$d/build.log" 2>&1
cp "$d/build/arch/x86/boot/bzImage" "$d/root/boot/vmlinuz-$kver"
depmod -b "$d/root" "$kver"
# The source tree stays (the build tree refers to it for module builds); the objects of the
# kernel itself are not needed any more.
find "$d/build" -name '*.o' ! -path '*/scripts/*' ! -path '*/tools/*' -delete
echo $((SECONDS - t0)) >"$d/build-seconds"
log "built $kver in $((SECONDS - t0)) s"
touch "$d/done"
# Debug kernels of other fragments stay: branches with another kernel-debug.config build against
# theirs from the same shared cache at the same time (each is ~1.5 GB; clear stale ones by hand).
emit "$d"
