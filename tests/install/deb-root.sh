#!/usr/bin/env bash
# A clean Debian 12 (bookworm) root for tests/install/deb-install.sh, as a tarball cached in
# /var/cache/vrex/deb-install and keyed by its architecture and package list:
#
#   deb-root.sh [--arch amd64|arm64] PKG[,PKG...]        prints the tarball's path
#
# mmdebstrap, variant apt (Essential + apt), from Debian's archive (VREX_DEBIAN_MIRROR) with
# bookworm-updates and bookworm-security, plus PKG and their dependencies. Downloads are kept in
# /var/cache/vrex/deb-install/debs and, with the host's own /var/cache/apt/archives and the arm64
# .debs other scripts fetched (the sysroot's, the test kernels'), offered to apt first (apt takes a
# cached file only when its checksum matches the archive's), so a new root downloads only packages
# that changed.
# An arm64 root is made on this amd64 host with qemu-user-static through binfmt_misc
# (tests/install/binfmt-arm64.sh registers it when needed): dpkg and the maintainer scripts run
# emulated, so there documentation, manual pages and translations are not unpacked (fewer files
# for the emulated dpkg, a smaller disk for the guest); the filter is removed from the finished
# root, so the vrex packages install as on a board.
set -euo pipefail

arch=amd64
if [[ ${1:-} == --arch ]]; then
	arch=${2:?}
	shift 2
fi
include=${1:?usage: deb-root.sh [--arch amd64|arm64] PKG[,PKG...]}
cache=${VREX_CACHE:-/var/cache/vrex}/deb-install
mirror=${VREX_DEBIAN_MIRROR:-http://deb.debian.org}/debian
security=${VREX_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
# The key: the package list and this recipe (bump recipe= when the mmdebstrap call changes).
# Recipe 2: the foreign root's documentation filter.
recipe=1
seeds=("$cache/debs" /var/cache/apt/archives)
filter=()
if [[ $arch != "$(dpkg --print-architecture)" ]]; then
	bash "$(dirname "$0")/binfmt-arm64.sh" >&2 || exit 1
	seeds+=("${VREX_CACHE:-/var/cache/vrex}/arm64-sysroot/debs" "${VREX_CACHE:-/var/cache/vrex}/kernels/debs/arm64")
	recipe=2
	filter=(--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright'
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
		--dpkgopt='path-exclude=/usr/share/locale/*')
fi
key=$(printf '%s\n' "$(tr ',' '\n' <<<"$include" | LC_ALL=C sort -u)" "$recipe" | sha256sum | cut -c1-16)
tarball=$cache/bookworm-$arch-$key.tar

mkdir -p "$cache/debs"
# One lock per root: the install test prepares the arm64 root while the amd64 one is in use.
exec 9>"$tarball.lock"
flock 9
if [[ -f $tarball ]]; then
	echo "$tarball"
	exit 0
fi
echo "deb-root: mmdebstrap bookworm ($include) -> $tarball" >&2
# shellcheck disable=SC2016 # "$1" is the chroot directory, expanded by mmdebstrap's hook shell
if ! mmdebstrap --variant=apt --architectures="$arch" --format=tar --include="$include" \
	--aptopt='Acquire::Retries "3"' --skip=download/empty --skip=essential/unlink \
	"${filter[@]}" \
	--setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
	--setup-hook="find ${seeds[*]} -maxdepth 1 -name '*.deb' -exec cp -ln -t \"\$1/var/cache/apt/archives/\" {} + 2>/dev/null || true" \
	--customize-hook="cp -ln \"\$1\"/var/cache/apt/archives/*.deb $cache/debs/ 2>/dev/null || true" \
	--customize-hook='chroot "$1" apt-get clean' \
	--customize-hook='rm -f "$1/etc/dpkg/dpkg.cfg.d/99mmdebstrap"' \
	bookworm "$tarball.tmp" "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
	"deb $security bookworm-security main" >&2; then
	rm -f "$tarball.tmp"
	echo "deb-root: mmdebstrap failed" >&2
	exit 1
fi
mv "$tarball.tmp" "$tarball"
echo "$tarball"
