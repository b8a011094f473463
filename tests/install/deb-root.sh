#!/usr/bin/env bash
# A clean Debian 12 (bookworm) amd64 root for tests/install/deb-install.sh, as a tarball cached in
# /var/cache/vrex/deb-install and keyed by its package list:
#
#   deb-root.sh PKG[,PKG...]        prints the tarball's path
#
# mmdebstrap, variant apt (Essential + apt), from Debian's archive (VREX_DEBIAN_MIRROR) with
# bookworm-updates and bookworm-security, plus PKG and their dependencies. Downloads are kept in
# /var/cache/vrex/deb-install/debs and, with the host's own /var/cache/apt/archives, offered to apt
# first (apt takes a cached file only when its checksum matches the archive's), so a new root
# downloads only packages that changed.
set -euo pipefail

include=${1:?usage: deb-root.sh PKG[,PKG...]}
cache=${VREX_CACHE:-/var/cache/vrex}/deb-install
mirror=${VREX_DEBIAN_MIRROR:-http://deb.debian.org}/debian
security=${VREX_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
# The key: the package list and this recipe (bump recipe= when the mmdebstrap call changes).
recipe=1
key=$(printf '%s\n' "$(tr ',' '\n' <<<"$include" | LC_ALL=C sort -u)" "$recipe" | sha256sum | cut -c1-16)
tarball=$cache/bookworm-amd64-$key.tar

mkdir -p "$cache/debs"
exec 9>"$cache/.lock"
flock 9
if [[ -f $tarball ]]; then
	echo "$tarball"
	exit 0
fi
echo "deb-root: mmdebstrap bookworm ($include) -> $tarball" >&2
# shellcheck disable=SC2016 # "$1" is the chroot directory, expanded by mmdebstrap's hook shell
if ! mmdebstrap --variant=apt --architectures=amd64 --format=tar --include="$include" \
	--aptopt='Acquire::Retries "3"' --skip=download/empty --skip=essential/unlink \
	--setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
	--setup-hook="find $cache/debs /var/cache/apt/archives -maxdepth 1 -name '*.deb' -exec cp -ln {} \"\$1/var/cache/apt/archives/\" \\; 2>/dev/null || true" \
	--customize-hook="cp -ln \"\$1\"/var/cache/apt/archives/*.deb $cache/debs/ 2>/dev/null || true" \
	--customize-hook='chroot "$1" apt-get clean' \
	bookworm "$tarball.tmp" "deb $mirror bookworm main" "deb $mirror bookworm-updates main" \
	"deb $security bookworm-security main" >&2; then
	rm -f "$tarball.tmp"
	echo "deb-root: mmdebstrap failed" >&2
	exit 1
fi
mv "$tarball.tmp" "$tarball"
echo "$tarball"
