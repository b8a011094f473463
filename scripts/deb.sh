#!/usr/bin/env bash
# `make deb`: the Debian packages of debian/ for amd64 and, cross-built, arm64, then lintian.
#
#   deb.sh [--arch amd64|arm64]... [--out DIR] [--no-lintian] [--force]
#
# The source is the working tree's files (tracked and untracked, not ignored: no build products),
# staged under build/deb/<arch>/vrex-<version>/ so dpkg-buildpackage's output lands in build/deb/
# and not next to the repository. amd64 builds every package (arch-dependent and the arch-all
# vrex-dkms and vrex-dt-overlays); arm64 is `dpkg-buildpackage -aarm64 -B` (arch-dependent only:
# the arch-all packages are the same) with Debian's aarch64-linux-gnu toolchain and the -dev
# libraries of the sysroot of scripts/arm64-sysroot.sh (no `dpkg --add-architecture`;
# docs/install.md says why), whose dpkg database for dpkg-shlibdeps comes from
# scripts/deb-sysroot-admindir.sh.
# The .debs end in DIR/<arch>/ (default build/deb/). lintian runs on each build's .changes and
# fails the script on any error (warnings are printed). Exit status 1 on any failure.
# A build is done once per source: the key is the sha256 of every staged file (and the build
# options); DIR/<arch>/.source-key names the source of the .debs there, and each lintian-clean set
# is also kept in $VREX_CACHE/deb-packages/<arch>-<key>/ (the newest 4 per architecture), so `make
# deb`, the install test (tests/install/deb-install.sh) and another clone of the same commit share
# one build. --force rebuilds. No -dbgsym packages unless VREX_DEB_DBGSYM=1.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/build/deb
arches=()
lint=1
force=0
while (($#)); do
	case $1 in
	--arch) arches+=("${2:?}") && shift ;;
	--out) out=$(realpath -m "${2:?}") && shift ;; # absolute: ccache's CCACHE_BASEDIR must be
	--no-lintian) lint=0 ;;
	--force) force=1 ;;
	-h | --help)
		sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "deb: unknown argument $1 (see --help)" >&2
		exit 2
		;;
	esac
	shift
done
((${#arches[@]})) || arches=(amd64 arm64)

log() { echo "deb: $*" >&2; }

for tool in dpkg-buildpackage dh dh_dkms dh_python3 lintian; do
	command -v "$tool" >/dev/null || {
		log "$tool missing (make deps installs debhelper, dh-dkms, dh-python, lintian)"
		exit 1
	}
done

version=$(cd "$repo" && dpkg-parsechangelog -SVersion)
jobs=${JOBS:-$(nproc)}
# nocheck: the tests run in `make test`, not in the package build (debian/rules skips them too).
# noddebs: no -dbgsym packages (compressing the debug info took minutes of the build; a board user
# does not install them): VREX_DEB_DBGSYM=1 makes them.
ddebs=noddebs
[[ ${VREX_DEB_DBGSYM:-0} == 1 ]] && ddebs=
export DEB_BUILD_OPTIONS="nocheck $ddebs parallel=$jobs ${DEB_BUILD_OPTIONS:-}"
pkgcache=${VREX_CACHE:-/var/cache/vrex}/deb-packages
if command -v ccache >/dev/null; then
	export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
fi

# Tracked and untracked-but-not-ignored files: what a commit of the working tree would hold.
source_files() {
	# shellcheck disable=SC2016 # $f is the inner shell's
	(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh)
}
stage_source() { # dir
	rm -rf "$1"
	mkdir -p "$1"
	(cd "$repo" && source_files | tar --null -T - -cf -) | tar -C "$1" -xf -
}
# What the packages are made of: the staged files' contents, the build options and the host
# compiler (a toolchain update rebuilds).
source_key() { # arch
	{
		(cd "$repo" && source_files | LC_ALL=C sort -z | xargs -0 -r sha256sum)
		echo "$1 $DEB_BUILD_OPTIONS"
		gcc --version | head -n 1
		[[ $1 == amd64 ]] || aarch64-linux-gnu-gcc --version | head -n 1
	} | sha256sum | cut -c1-16
}

# A set built earlier from the same source: in DIR already, or in the shared cache.
reuse_arch() { # arch key
	local dir=$out/$1 cached=$pkgcache/$1-$2
	if [[ -f $dir/.source-key && $(<"$dir/.source-key") == "$2" ]] && compgen -G "$dir/*.deb" >/dev/null; then
		log "$1: packages of this source (key $2) already in $dir: not rebuilt (--force rebuilds)"
		return 0
	fi
	[[ -f $cached/.complete ]] || return 1
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -p "$cached"/*.deb "$cached"/*.changes "$cached"/*.buildinfo "$cached"/lintian.log "$dir/" 2>/dev/null
	echo "$2" >"$dir/.source-key"
	log "$1: packages of this source (key $2) taken from $cached: not rebuilt (--force rebuilds)"
}

keep_arch() { # arch key
	local dir=$out/$1 cached=$pkgcache/$1-$2
	echo "$2" >"$dir/.source-key"
	mkdir -p "$pkgcache"
	rm -rf "$cached.tmp"
	mkdir -p "$cached.tmp"
	cp -p "$dir"/*.deb "$dir"/*.changes "$dir"/*.buildinfo "$cached.tmp/"
	[[ -f $dir/lintian.log ]] && cp -p "$dir/lintian.log" "$cached.tmp/"
	touch "$cached.tmp/.complete"
	rm -rf "$cached"
	mv "$cached.tmp" "$cached"
	# The newest 4 sets per architecture (a set is a few MB).
	find "$pkgcache" -mindepth 1 -maxdepth 1 -name "$1-*" ! -name '*.tmp' -printf '%T@ %p\n' |
		sort -rn | tail -n +5 | cut -d' ' -f2- | xargs -r rm -rf
}

build_arch() { # arch
	local arch=$1 dir=$out/$1 src rc=0 key
	key=$(source_key "$arch")
	if ((!force)) && ((lint)) && reuse_arch "$arch" "$key"; then
		return 0
	fi
	src=$dir/vrex-$version
	rm -rf "$dir"
	mkdir -p "$dir"
	stage_source "$src"
	export CCACHE_BASEDIR=$src
	local args=(-us -uc --no-sign)
	local start=$SECONDS
	if [[ $arch == "$(dpkg --print-architecture)" ]]; then
		args+=(-b)
		log "$arch: dpkg-buildpackage ${args[*]} (log $dir/build.log)"
		(cd "$src" && dpkg-buildpackage "${args[@]}") >"$dir/build.log" 2>&1 || rc=$?
	else
		[[ $arch == arm64 ]] || {
			log "cross builds are for arm64 only (asked: $arch)"
			return 1
		}
		local sysroot admindir
		sysroot=$(VREX_ARM64_SYSROOT_EXTRA="libpython3-dev pybind11-dev" bash "$repo/scripts/arm64-sysroot.sh")
		admindir=$(bash "$repo/scripts/deb-sysroot-admindir.sh" "$sysroot")
		# -d: the build dependencies are the sysroot's, not installed :arm64 packages.
		args+=(-a"$arch" -B -d)
		log "$arch: dpkg-buildpackage ${args[*]} (sysroot $sysroot, log $dir/build.log)"
		(cd "$src" && VREX_ARM64_SYSROOT=$sysroot VREX_ARM64_ADMINDIR=$admindir \
			dpkg-buildpackage "${args[@]}") >"$dir/build.log" 2>&1 || rc=$?
	fi
	if ((rc)); then
		tail -n 30 "$dir/build.log" >&2
		log "$arch: dpkg-buildpackage failed (rc=$rc, log $dir/build.log)"
		return 1
	fi
	log "$arch: built in $((SECONDS - start)) s: $(cd "$dir" && echo *.deb)"
	if ((lint)); then
		local changes
		changes=$(ls "$dir"/*.changes)
		if ! lintian --fail-on error "$changes" >"$dir/lintian.log" 2>&1; then
			cat "$dir/lintian.log" >&2
			log "$arch: lintian reports errors (log $dir/lintian.log)"
			return 1
		fi
		log "$arch: lintian: $(grep -c '^E:' "$dir/lintian.log" || true) errors," \
			"$(grep -c '^W:' "$dir/lintian.log" || true) warnings (log $dir/lintian.log)"
		# Only a lintian-clean set is reused.
		keep_arch "$arch" "$key"
	fi
	# The staged source and the build tree (hundreds of MB) are not needed once the .debs exist.
	rm -rf "$src"
}

failed=0
for arch in "${arches[@]}"; do
	build_arch "$arch" || failed=1
done
exit "$failed"
