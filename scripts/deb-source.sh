#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# deb-source.sh [--suite SUITE] PACKAGE[=VERSION] DIR — a Debian source package (.dsc, its tarballs and
# Debian's patches, not unpacked) downloaded into DIR; prints the .dsc's path (last line of stdout).
#
# Used by scripts/qemu-build.sh (QEMU with the V-Rex device models) and bench/faiss-native.sh (FAISS for
# this CPU). `apt-get source` runs through a private APT configuration holding only a deb-src line for
# SUITE (default bookworm) from Debian's archive, with its own state under $VREX_CACHE/apt-src, so the
# host's sources and indexes are never touched. The source indexes are re-read when older than a day,
# and once more when the package is not found (a point release replaced the version asked for).
# A .dsc already in DIR is reused: of that VERSION, or of any version without one. One caller at a time
# (flock on the APT state). Environment: VREX_CACHE (default /var/cache/vrex), VREX_DEBIAN_MIRROR
# (default http://deb.debian.org).
set -euo pipefail
suite=bookworm
if [[ ${1:-} == --suite ]]; then
	suite=${2:?--suite takes a suite name}
	shift 2
fi
spec=${1:?usage: deb-source.sh [--suite SUITE] PACKAGE[=VERSION] DIR}
dir=${2:?usage: deb-source.sh [--suite SUITE] PACKAGE[=VERSION] DIR}
pkg=${spec%%=*}
version=
[[ $spec == *=* ]] && version=${spec#*=}
log() { echo "deb-source: $*" >&2; }

# The .dsc in DIR: file names carry the version without its epoch.
find_dsc() {
	local pattern=${pkg}_${version#*:}.dsc
	[[ -n $version ]] || pattern="${pkg}_*.dsc"
	compgen -G "$dir/$pattern" | head -n 1
}

mkdir -p "$dir"
dsc=$(find_dsc) || true
if [[ -n $dsc ]]; then
	echo "$dsc"
	exit 0
fi

apt_dir=${VREX_CACHE:-/var/cache/vrex}/apt-src/$suite
mkdir -p "$apt_dir"/{state/lists/partial,cache/archives/partial,etc/sources.list.d}
exec 9>"$apt_dir/.lock"
flock 9
cat >"$apt_dir/apt.conf" <<CONF
Dir::State "$apt_dir/state";
Dir::State::status "$apt_dir/state/status";
Dir::Cache "$apt_dir/cache";
Dir::Etc::sourcelist "$apt_dir/etc/sources.list";
Dir::Etc::sourceparts "$apt_dir/etc/sources.list.d";
Acquire::Languages "none";
CONF
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${VREX_DEBIAN_MIRROR:-http://deb.debian.org}/debian $suite main" \
	>"$apt_dir/etc/sources.list"
[[ -f $apt_dir/state/status ]] || : >"$apt_dir/state/status"
update() {
	log "apt-get update (private deb-src $suite config)"
	APT_CONFIG=$apt_dir/apt.conf apt-get update -qq >&2
	touch "$apt_dir/state/updated"
}
if [[ ! -f $apt_dir/state/updated ]] || [[ -n $(find "$apt_dir/state/updated" -mmin +1440) ]]; then
	update
fi
get() { (cd "$dir" && APT_CONFIG=$apt_dir/apt.conf apt-get source --download-only -qq "$spec" >&2); }
log "apt-get source --download-only $spec ($suite) into $dir"
if ! get; then
	update
	get || {
		log "$spec is not in $suite's sources"
		exit 1
	}
fi
dsc=$(find_dsc) || true
[[ -n $dsc ]] || {
	log "apt-get source left no .dsc for $spec in $dir"
	exit 1
}
echo "$dsc"
