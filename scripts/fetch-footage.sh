#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# fetch-footage.sh: real camera footage for tests, benchmarks and the demo, cached OUTSIDE the repo.
#
# Usage:
#   scripts/fetch-footage.sh          # fetch vtest.avi + tree.avi, print their paths
#   scripts/fetch-footage.sh --gray   # also dump raw 8-bit luma (<clip>.gray) next to them
#
# Output (stdout, one KEY=VALUE per line, safe to `eval` or parse; all diagnostics go to stderr):
#   VREX_FOOTAGE_DIR=/var/cache/vrex/footage
#   VREX_VTEST_AVI=<dir>/vtest.avi          fixed-camera plaza, 768x576, 795 frames, 10 fps
#   VREX_TREE_AVI=<dir>/tree.avi            handheld tree, 320x240, 68 frames
# and with --gray, per clip (VTEST, TREE):
#   VREX_VTEST_GRAY=<dir>/vtest.gray        frames back to back, width*height bytes each, no header
#   VREX_VTEST_WIDTH=768  VREX_VTEST_HEIGHT=576  VREX_VTEST_FRAMES=795
#
# Environment: VREX_CACHE is the project's cache root (default /var/cache/vrex, shared with
# scripts/kheaders.sh); footage goes to $VREX_CACHE/footage.
# Exit status: 0 on success; 1 when the footage cannot be obtained (e.g. no network / no apt), with the
# reason on stderr, so callers can skip cleanly.
#
# Source: Debian package opencv-doc (./usr/share/doc/opencv-doc/examples/data/). The footage comes from
# a University of Reading research dataset whose terms ask for acknowledgement: never commit it, and
# credit it wherever its frames are shown. Idempotent and safe to run concurrently (flock on the cache).
set -euo pipefail

readonly VTEST_SHA256=45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf
readonly DATA_DIR=./usr/share/doc/opencv-doc/examples/data
readonly CLIPS=(vtest tree)

cache=${VREX_CACHE:-/var/cache/vrex}/footage
want_gray=0

for arg in "$@"; do
	case "$arg" in
	--gray) want_gray=1 ;;
	-h | --help)
		sed -n '4,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "fetch-footage: unknown argument '$arg' (try --help)" >&2
		exit 2
		;;
	esac
done

die() {
	echo "fetch-footage: $*" >&2
	exit 1
}

vtest_ok() {
	[[ -s "$cache/vtest.avi" ]] &&
		echo "$VTEST_SHA256  $cache/vtest.avi" | sha256sum --status -c - 2>/dev/null
}

fetch_clips() {
	local tmp deb
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	# apt-get download drops privileges to _apt when it can; the temp dir must let it write.
	chmod 0777 "$tmp"
	if ! (cd "$tmp" && apt-get download -q opencv-doc >&2); then
		rm -rf "$tmp"
		die "apt-get download opencv-doc failed (no network or no Debian archive?)"
	fi
	deb=$(ls "$tmp"/opencv-doc_*.deb)
	if ! dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$tmp" "$DATA_DIR/vtest.avi" "$DATA_DIR/tree.avi"; then
		rm -rf "$tmp"
		die "could not extract the clips from $deb"
	fi
	if ! echo "$VTEST_SHA256  $tmp/$DATA_DIR/vtest.avi" | sha256sum --status -c -; then
		rm -rf "$tmp"
		die "vtest.avi sha256 mismatch (expected $VTEST_SHA256)"
	fi
	# Rename last so a reader never sees a half-written clip.
	mv -f "$tmp/$DATA_DIR/tree.avi" "$cache/tree.avi"
	mv -f "$tmp/$DATA_DIR/vtest.avi" "$cache/vtest.avi"
	rm -rf "$tmp"
}

# Prints "WIDTH HEIGHT" of the first video stream.
clip_size() {
	ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0:s=x "$1" |
		tr x ' '
}

dump_gray() {
	local clip=$1 avi="$cache/$1.avi" gray="$cache/$1.gray" size
	size="$cache/$1.size"
	if [[ -s "$gray" && -s "$size" && "$gray" -nt "$avi" ]]; then
		return 0
	fi
	command -v ffmpeg >/dev/null || die "ffmpeg not found (scripts/deps.sh installs it)"
	# passthrough: one output frame per coded frame (tree.avi is variable-rate; the default
	# constant-rate output would duplicate its 68 frames into 449).
	ffmpeg -nostdin -v error -y -i "$avi" -fps_mode passthrough -f rawvideo -pix_fmt gray \
		"$gray.tmp" || die "ffmpeg could not decode $avi"
	clip_size "$avi" >"$size.tmp" || die "ffprobe could not read $avi"
	mv -f "$size.tmp" "$size"
	mv -f "$gray.tmp" "$gray"
	echo "fetch-footage: dumped $clip luma to $gray" >&2
}

mkdir -p "$cache" 2>/dev/null || die "cannot create $cache (set VREX_CACHE to a writable root)"
[[ -w "$cache" ]] || die "$cache is not writable (set VREX_CACHE to a writable root)"

exec 9>"$cache/.lock"
flock 9

if ! vtest_ok || [[ ! -s "$cache/tree.avi" ]]; then
	echo "fetch-footage: downloading opencv-doc into $cache" >&2
	fetch_clips
fi

if ((want_gray)); then
	for clip in "${CLIPS[@]}"; do
		dump_gray "$clip"
	done
fi

echo "VREX_FOOTAGE_DIR=$cache"
for clip in "${CLIPS[@]}"; do
	key=${clip^^}
	echo "VREX_${key}_AVI=$cache/$clip.avi"
	if ((want_gray)); then
		read -r w h <"$cache/$clip.size"
		bytes=$(stat -c %s "$cache/$clip.gray")
		echo "VREX_${key}_GRAY=$cache/$clip.gray"
		echo "VREX_${key}_WIDTH=$w"
		echo "VREX_${key}_HEIGHT=$h"
		echo "VREX_${key}_FRAMES=$((bytes / (w * h)))"
	fi
done
