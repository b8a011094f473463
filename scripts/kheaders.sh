#!/usr/bin/env bash
# Kernel headers (and, with --image, the bootable kernel + its modules) for the kernels vrex is tested
# against, without installing any kernel package on the host: the .debs are fetched with
# `apt-get download`, unpacked with dpkg-deb -x and cached under $VREX_CACHE (default /var/cache/vrex).
#
#   kheaders.sh [--image] [--env] [--offline] <target>
#       target: 6.12-amd64 | 6.1-amd64 | 6.12-arm64 | 5.10-amd64 | 5.10-arm64
#   kheaders.sh --fetch PACKAGE <target>       any package for the target's arch, prints the cached .deb
#
# Prints the KDIR to build against (`make -C KDIR M=...`). --image also fetches the kernel image
# package (depmod is run on it, so `modprobe -d ROOT -S KVER` works) and prints two more lines: the
# vmlinuz path and the /lib/modules/<kver> directory.
# --env prints shell assignments instead (KVER KDIR ARCH CROSS_COMPILE, plus VMLINUZ MODDIR with
# --image, plus KCC - the compiler to pass as CC= - for the bullseye kernels).
# --offline (or a failing archive) uses the newest tree already cached for the target.
# The ABI name (6.1.0-NN, 6.12.NNN+deb12) is resolved through the metapackages on every run, because
# Debian drops old ABI names from the archive; a cached tree makes the run take well under a second.
# arm64 packages come through a private APT configuration (scripts/qemu/apt-arm64.conf.in), the 5.10
# kernels (Debian bullseye and bullseye-security, both architectures) through another
# (scripts/qemu/apt-bullseye.conf.in): the host's sources and dpkg architectures are never changed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
CACHE=${VREX_CACHE:-/var/cache/vrex}/kernels

want_image=0
fetch_pkg=
want_env=0
offline=0
target=
while (($#)); do
	case $1 in
	--image) want_image=1 ;;
	--env) want_env=1 ;;
	--offline) offline=1 ;;
	--fetch)
		fetch_pkg=${2:?--fetch needs a package name}
		shift
		;;
	-h | --help)
		sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "kheaders: unknown option $1" >&2
		exit 2
		;;
	*) target=$1 ;;
	esac
	shift
done

suite=bookworm
case $target in
6.12-amd64) arch=amd64 series=6.12 ;;
6.1-amd64) arch=amd64 series=6.1 ;;
6.12-arm64) arch=arm64 series=6.12 ;;
5.10-amd64) arch=amd64 series=5.10 suite=bullseye ;;
5.10-arm64) arch=arm64 series=5.10 suite=bullseye ;;
*)
	echo "usage: $0 [--image] [--env] [--offline] 6.12-amd64|6.1-amd64|6.12-arm64|5.10-amd64|5.10-arm64" >&2
	exit 2
	;;
esac

log() { echo "kheaders: $*" >&2; }

# A suite's own kernel (bookworm 6.1, bullseye 5.10) has unversioned metapackages; the backported
# 6.12 has versioned ones.
if [[ $series == 6.1 || $series == 5.10 ]]; then
	meta_headers=linux-headers-$arch meta_image=linux-image-$arch
else
	meta_headers=linux-headers-$series-$arch meta_image=linux-image-$series-$arch
fi

debs=$CACHE/debs/$arch
mkdir -p "$debs" "$CACHE/debs/amd64"
# Several engineers (and `make test` stages) share the cache: one writer at a time.
exec 9>"$CACHE/.lock"
flock 9

# --- APT front ends: the host's for amd64, a private state directory for arm64 ------------------
# One private state directory per suite and architecture, from scripts/qemu/<name>.{conf,sources}.in
# (@DIR@, @MIRROR@, @ARCH@); the host's dpkg architectures are never touched.
declare -A private_apt_ready=()
private_apt() { # dir name arch cmd...
	local dir=$1 name=$2 a=$3
	shift 3
	if [[ -z ${private_apt_ready[$dir]:-} ]]; then
		mkdir -p "$dir"/{state/lists/partial,cache/archives/partial,etc/sources.list.d}
		sed -e "s|@DIR@|$dir|g" -e "s|@ARCH@|$a|g" "$here/qemu/$name.conf.in" >"$dir/apt.conf"
		# Only Debian's archive: the suite's arm64/amd64 indexes.
		sed -e "s|@MIRROR@|${VREX_DEBIAN_MIRROR:-http://deb.debian.org}|g" -e "s|@ARCH@|$a|g" \
			"$here/qemu/$name.sources.in" >"$dir/etc/sources.list"
		: >"$dir/state/status"
		local stamp=$dir/state/updated
		# Re-read the indexes once a day: fresh enough to follow ABI bumps, cheap otherwise.
		if [[ ! -f $stamp ]] || [[ -n $(find "$stamp" -mmin +1440 2>/dev/null) ]]; then
			log "apt-get update (private $name $a config)"
			APT_CONFIG=$dir/apt.conf apt-get update -qq >&2
			touch "$stamp"
		fi
		private_apt_ready[$dir]=1
	fi
	APT_CONFIG=$dir/apt.conf "$@"
}
# bookworm arm64 (the host's suite, another architecture).
apt_arm64() { private_apt "$CACHE/apt-arm64" apt-arm64 arm64 "$@"; }
# Another suite (bullseye), either architecture.
apt_suite() { # arch cmd...
	local a=$1
	shift
	private_apt "$CACHE/apt-$suite-$a" "apt-$suite" "$a" "$@"
}

apt_for() { # arch cmd...
	local a=$1
	shift
	if [[ $suite != bookworm ]]; then
		apt_suite "$a" "$@"
	elif [[ $a == arm64 ]]; then
		apt_arm64 "$@"
	else
		"$@"
	fi
}

# The single package a metapackage depends on, e.g. linux-headers-amd64 -> linux-headers-6.1.0-56-amd64
resolve_dep() { # arch package pattern
	apt_for "$1" apt-cache depends "$2" 2>/dev/null |
		sed -nE "s/^ +\|?Depends: ($3)$/\1/p" | head -n 1
}

pkg_exists() { # arch package
	apt_for "$1" apt-cache show "$2" >/dev/null 2>&1
}

# Download one package into the cache unless a .deb of that package and candidate version is there.
fetch_deb() { # arch package -> prints the .deb path
	local a=$1 pkg=$2 ver file
	ver=$(apt_for "$a" apt-cache policy "$pkg" | sed -nE 's/^ +Candidate: (.*)$/\1/p')
	if [[ -z $ver || $ver == "(none)" ]]; then
		log "$pkg ($a): not in the archive"
		return 1
	fi
	# Debian file names encode the epoch colon as %3a.
	file=$(printf '%s/%s_%s_*.deb' "$CACHE/debs/$a" "$pkg" "${ver//:/%3a}")
	# shellcheck disable=SC2086 # glob on purpose: the arch suffix is amd64, arm64 or all
	set -- $file
	if [[ -f $1 ]]; then
		echo "$1"
		return 0
	fi
	log "downloading $pkg $ver ($a)"
	(cd "$CACHE/debs/$a" && apt_for "$a" apt-get download -qq -o APT::Sandbox::User=root "$pkg:$a" >&2 2>&1) ||
		(cd "$CACHE/debs/$a" && apt_for "$a" apt-get download -qq -o APT::Sandbox::User=root "$pkg" >&2)
	# shellcheck disable=SC2086
	set -- $file
	[[ -f $1 ]] || {
		log "download of $pkg left no $file"
		return 1
	}
	echo "$1"
}

# Unpack .debs into ROOT once; a stamp records which .debs made the tree.
extract_into() { # root stampname debs...
	local root=$1 stamp=$1/.vrex-$2
	shift 2
	local want
	want=$(printf '%s\n' "$@" | xargs -n1 basename | sort)
	if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
		return 0
	fi
	mkdir -p "$root"
	local d
	for d in "$@"; do
		log "extracting $(basename "$d")"
		dpkg-deb -x "$d" "$root"
	done
	echo "$want" >"$stamp"
}

if [[ -n $fetch_pkg ]]; then
	fetch_deb "$arch" "$fetch_pkg"
	exit
fi

# --- Resolve the ABI ---------------------------------------------------------------------------
# Every version of the metapackage, newest first: when the newest ABI's files cannot be fetched
# (bullseye-security's arm64 pool answers 404 on some mirrors), the suite's own older ABI is used.
headers_pkg=
if ((!offline)); then
	for metaver in $(apt_for "$arch" apt-cache madison "$meta_headers" 2>/dev/null |
		awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | awk '!seen[$0]++'); do
		cand=$(resolve_dep "$arch" "$meta_headers=$metaver" "linux-headers-[0-9].*-$arch") || cand=
		[[ -n $cand ]] || continue
		if [[ -f $CACHE/$target/${cand#linux-headers-}/root/.vrex-headers ]] ||
			fetch_deb "$arch" "$cand" >/dev/null; then
			headers_pkg=$cand
			break
		fi
		log "$cand ($meta_headers $metaver) cannot be fetched; trying an older ABI"
	done
fi
if [[ -z $headers_pkg ]]; then
	# Offline: newest cached tree for the target.
	kver=$(find "$CACHE/$target" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null |
		sort -V | tail -n 1) || true
	if [[ -z $kver ]]; then
		log "cannot resolve $meta_headers and nothing is cached for $target"
		exit 1
	fi
	((offline)) || log "archive unavailable; using cached $kver"
	offline=1
else
	kver=${headers_pkg#linux-headers-}
fi

root=$CACHE/$target/$kver/root
kdir=$root/usr/src/linux-headers-$kver

vmlinuz=$root/boot/vmlinuz-$kver
moddir=$root/lib/modules/$kver

# A tree unpacked earlier for this exact ABI name is complete (stamps are written last): reuse it.
if ((!offline)) && [[ ! -f $root/.vrex-headers ]]; then
	common_pkg=$(resolve_dep "$arch" "$headers_pkg" "linux-headers-.*-common")
	# kbuild host tools must run on this (amd64) machine, whatever the target arch.
	kbuild_pkg=$(resolve_dep "$arch" "$headers_pkg" "linux-kbuild-[0-9.+a-z]*")
	[[ -n $common_pkg && -n $kbuild_pkg ]] || {
		log "$headers_pkg: cannot find its -common / linux-kbuild dependencies"
		exit 1
	}
	hdr_debs=(
		"$(fetch_deb "$arch" "$headers_pkg")"
		"$(fetch_deb "$arch" "$common_pkg")"
		"$(fetch_deb amd64 "$kbuild_pkg")"
	)
	extract_into "$root" headers "${hdr_debs[@]}"
fi
if ((!offline && want_image)) && [[ ! -f $root/.vrex-image ]]; then
	# The image of the headers' ABI (which may be older than $meta_image's candidate, see above).
	image_pkg=linux-image-$kver
	pkg_exists "$arch" "$image_pkg" ||
		image_pkg=$(resolve_dep "$arch" "$meta_image" "linux-image-[0-9].*-$arch")
	[[ -n $image_pkg ]] || {
		log "cannot resolve $meta_image"
		exit 1
	}
	# The -unsigned twin has the same files without the EFI signature wrapper.
	pkg_exists "$arch" "$image_pkg-unsigned" && image_pkg=$image_pkg-unsigned
	extract_into "$root" image "$(fetch_deb "$arch" "$image_pkg")"
fi
# Debian generates modules.dep at install time; do it here so `modprobe -d ROOT -S KVER` resolves.
if ((want_image)) && [[ -d $moddir && ! -f $moddir/modules.dep ]]; then
	log "depmod $kver"
	depmod -b "$root" "$kver"
fi

[[ -f $kdir/Makefile ]] || {
	log "$kdir: no headers tree"
	exit 1
}
# The flavour Makefile includes the -common tree by absolute /usr/src path: point it into ROOT.
if grep -q '^include /usr/src/' "$kdir/Makefile"; then
	sed -i "s|^include /usr/src/|include $root/usr/src/|" "$kdir/Makefile"
fi

if ((want_image)) && [[ ! -f $vmlinuz || ! -d $moddir ]]; then
	log "no cached image for $kver ($vmlinuz)"
	exit 1
fi

if ((want_env)); then
	printf 'KVER=%q\nKDIR=%q\n' "$kver" "$kdir"
	if [[ $arch == arm64 ]]; then
		printf 'ARCH=arm64\nCROSS_COMPILE=aarch64-linux-gnu-\n'
	else
		printf 'ARCH=x86_64\nCROSS_COMPILE=\n'
	fi
	# bullseye's headers ask for gcc-10, which bookworm does not have: the host's gcc builds
	# (KCC, to pass as CC=).
	[[ $suite == bookworm ]] || printf 'KCC=%q\n' "$([[ $arch == arm64 ]] && echo aarch64-linux-gnu-)gcc"
	((want_image)) && printf 'VMLINUZ=%q\nMODDIR=%q\n' "$vmlinuz" "$moddir"
else
	echo "$kdir"
	((want_image)) && printf '%s\n%s\n' "$vmlinuz" "$moddir"
fi
exit 0
