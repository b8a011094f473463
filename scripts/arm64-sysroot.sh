#!/usr/bin/env bash
# An arm64 sysroot for cross-building vrex user space (libvrex-hal, its tests, vrexctl) on this
# amd64 host, and for running the result in the arm64 QEMU guest.
#
#   arm64-sysroot.sh [--offline]      prints the sysroot directory
#
# The :arm64 -dev packages (and everything they depend on, down to libc6) are resolved and
# downloaded through a private APT configuration (scripts/qemu/apt-arm64.conf.in, own state and
# cache under $VREX_CACHE/arm64-sysroot) and unpacked with dpkg-deb into one tree. The host's dpkg
# architectures and its amd64 packages are never touched: no `dpkg --add-architecture arm64`
# (docs/install.md says why). The compiler is the host's aarch64-linux-gnu-g++, which brings its
# own C library and libstdc++ headers; the sysroot adds the libraries vrex links against, and the
# runtime .so files (and loader) the guest needs.
#
# The tree is keyed by the exact set of .debs it was made from: a new package version (a Debian
# point release or security update) makes a new tree; an unchanged set is reused after APT has
# resolved it again (about 3 s of CPU; the indexes are re-read once a day).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
CACHE=${VREX_CACHE:-/var/cache/vrex}/arm64-sysroot
offline=0
case ${1:-} in
--offline) offline=1 ;;
"") ;;
-h | --help)
	sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "arm64-sysroot: unknown argument $1" >&2
	exit 2
	;;
esac

# What the cross build links against (arch-independent ones such as nlohmann-json3-dev and
# libcli11-dev come along as they are listed in the same index).
PKGS=(
	libdrm-dev libudev-dev libboost-dev
	libgtest-dev libgmock-dev
	libfmt-dev nlohmann-json3-dev libcli11-dev
	libavformat-dev libavcodec-dev libswscale-dev libavutil-dev zlib1g-dev
	libc6
)
# More packages for one caller (scripts/deb.sh: the Python binding's headers): a separate tree,
# since the set of .debs names it.
read -r -a extra <<<"${VREX_ARM64_SYSROOT_EXTRA:-}"
PKGS+=("${extra[@]}")
# Provided by the cross toolchain (libc6-dev-arm64-cross, linux-libc-dev-arm64-cross,
# libstdc++-12-dev-arm64-cross): a second copy of the C library headers in the sysroot's
# /usr/include would sit in front of them and break libstdc++'s #include_next <stdlib.h>.
SKIP_RE='^(libc6-dev|linux-libc-dev|libstdc\+\+-[0-9]+-dev|libgcc-[0-9]+-dev|libcrypt-dev|libnsl-dev|libtirpc-dev|rpcsvc-proto|gcc-[0-9]+|cpp-[0-9]+|g\+\+-[0-9]+|binutils.*|libasan[0-9]*|libtsan[0-9]*|libubsan[0-9]*|liblsan[0-9]*|libhwasan[0-9]*|libitm[0-9]*|libcc1-0|libgomp1|libquadmath0|libisl[0-9]*|libmpc[0-9]*|libmpfr[0-9]*)_'

log() { echo "arm64-sysroot: $*" >&2; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9

aptdir=$CACHE/apt
mkdir -p "$aptdir"/{state/lists/partial,cache/archives/partial,etc/sources.list.d}
sed "s|@DIR@|$aptdir|g" "$here/qemu/apt-arm64.conf.in" >"$aptdir/apt.conf"
sed "s|@MIRROR@|${VREX_DEBIAN_MIRROR:-http://deb.debian.org}|g" \
	"$here/qemu/apt-arm64.sources.in" >"$aptdir/etc/sources.list"
# An empty status file: APT resolves the whole dependency closure, as for a fresh arm64 system.
: >"$aptdir/state/status"
apt_arm64() { APT_CONFIG=$aptdir/apt.conf "$@"; }

newest_tree() {
	find "$CACHE" -mindepth 1 -maxdepth 1 -type d -name 'root-*' -printf '%T@ %p\n' 2>/dev/null |
		sort -n | tail -n 1 | cut -d' ' -f2-
}

if ((!offline)); then
	stamp=$aptdir/state/updated
	if [[ ! -f $stamp ]] || [[ -n $(find "$stamp" -mmin +1440 2>/dev/null) ]]; then
		log "apt-get update (private arm64 config)"
		if apt_arm64 apt-get update -qq >&2; then
			touch "$stamp"
		else
			log "apt-get update failed"
			offline=1
		fi
	fi
fi
if ((!offline)); then
	# --print-uris lists the closure without downloading: the set of .debs names the tree.
	if ! uris=$(apt_arm64 apt-get install -qq --print-uris --no-install-recommends -y \
		"${PKGS[@]/%/:arm64}" 2>"$CACHE/resolve.log"); then
		log "cannot resolve the arm64 packages (see $CACHE/resolve.log)"
		offline=1
	fi
fi
if ((offline)); then
	tree=$(newest_tree)
	[[ -n $tree && -f $tree/.vrex-complete ]] || {
		log "offline and no complete sysroot cached in $CACHE"
		exit 1
	}
	log "using cached $tree"
	echo "$tree"
	exit 0
fi

# Lines: 'URI' FILE SIZE HASH
mapfile -t files < <(awk '{ print $2 }' <<<"$uris" | grep -Ev "$SKIP_RE" | LC_ALL=C sort)
((${#files[@]})) || {
	log "resolved no packages"
	exit 1
}
key=$(printf '%s\n' "${files[@]}" | sha256sum | cut -c1-16)
tree=$CACHE/root-$key
if [[ -f $tree/.vrex-complete ]]; then
	echo "$tree"
	exit 0
fi

debs=$CACHE/debs
mkdir -p "$debs"
missing=()
for f in "${files[@]}"; do
	[[ -f $debs/$f ]] || missing+=("$f")
done
if ((${#missing[@]})); then
	log "downloading ${#missing[@]} of ${#files[@]} arm64 packages"
	# apt-get download takes names; map each file back to its package name.
	names=()
	for f in "${missing[@]}"; do names+=("${f%%_*}:arm64"); done
	(cd "$debs" && apt_arm64 apt-get download -qq -o APT::Sandbox::User=root "${names[@]}" >&2)
	for f in "${missing[@]}"; do
		[[ -f $debs/$f ]] || {
			log "download left no $f"
			exit 1
		}
	done
fi

log "unpacking ${#files[@]} packages into $tree"
rm -rf "$tree.tmp"
mkdir -p "$tree.tmp/usr"/{lib,bin,sbin}
# Merged /usr, as on an installed bookworm system: /lib/aarch64-linux-gnu/libudev.so.1 and
# /usr/lib/aarch64-linux-gnu/libudev.so.1 are one file.
ln -s usr/lib "$tree.tmp/lib"
ln -s usr/bin "$tree.tmp/bin"
ln -s usr/sbin "$tree.tmp/sbin"
for f in "${files[@]}"; do
	dpkg-deb --fsys-tarfile "$debs/$f" | tar -x --keep-directory-symlink -C "$tree.tmp"
done
# Which .debs (in $debs) made the tree: scripts/deb-sysroot-admindir.sh reads their control data.
printf '%s\n' "${files[@]}" >"$tree.tmp/.vrex-debs"
# Absolute symlinks (libfoo.so -> /lib/aarch64-linux-gnu/libfoo.so.1) would point into the host:
# make them relative inside the tree.
while IFS= read -r link; do
	target=$(readlink "$link")
	ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$tree.tmp$target")" "$link"
done < <(find "$tree.tmp" -type l -lname '/*')
rm -rf "$tree"
mv "$tree.tmp" "$tree"
touch "$tree/.vrex-complete"
# Older trees are no longer referenced by anything but a build tree configured against them.
find "$CACHE" -mindepth 1 -maxdepth 1 -type d -name 'root-*' ! -path "$tree" -mtime +7 -exec rm -rf {} +
echo "$tree"
