#!/usr/bin/env bash
# Real footage for the differential test: the first N frames of vtest (scripts/fetch-footage.sh),
# scaled to WxH luma, written to stdout as back-to-back binary PGM images.
#   test_differential_clip.sh [W H N]     default 192 144 60
# The QEMU harness runs it through tests/kernel/guest-files.txt to put the clip in the initramfs.
set -euo pipefail
w=${1:-192} h=${2:-144} n=${3:-60}
repo=$(cd "$(dirname "$0")/../.." && pwd)
env=$(bash "$repo/scripts/fetch-footage.sh" --clip VTEST)
avi=$(sed -n 's/^VREX_VTEST_AVI=//p' <<<"$env")
[[ -f $avi ]] || {
	echo "test_differential_clip: fetch-footage.sh gave no vtest.avi" >&2
	exit 1
}
ffmpeg -nostdin -v error -i "$avi" -frames:v "$n" -vf "scale=$w:$h:flags=area,format=gray" \
	-f image2pipe -c:v pgm -
