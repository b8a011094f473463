#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# fetch-encoder.sh: the pretrained image encoder of the builtin model, cached OUTSIDE the repo.
#
# Fetches npm nsfwjs@4.3.0 (MIT, Infinite Red) with `npm pack`, checks its sha256, and turns its
# MobileNetV2 (a TF.js layers model whose topology and base64 uint8 weights are wrapped in JS
# modules) into the standard TF.js pair model.json + weights.bin with node. model/vrex/tfjs.py
# converts that pair to torch. Output (stdout): VREX_ENCODER_DIR=<dir> holding model.json,
# weights.bin, LICENSE. Exit 1 with the reason on stderr when the package cannot be obtained.
# Environment: VREX_CACHE (default /var/cache/vrex); files go to $VREX_CACHE/model/nsfwjs-4.3.0.
set -euo pipefail

readonly PKG=nsfwjs
readonly VERSION=4.3.0
readonly SHA256=4496790efc9bdc6f3e85a826a8e482c1fa1e9db4b3d18c095e98cc0c73cfb12f
readonly SUB=package/dist/models/mobilenet_v2

die() {
	echo "fetch-encoder: $*" >&2
	exit 1
}

dir=${VREX_CACHE:-/var/cache/vrex}/model/$PKG-$VERSION
mkdir -p "$dir" 2>/dev/null || die "cannot create $dir (set VREX_CACHE to a writable root)"
exec 9>"$dir/.lock"
flock 9

if [[ ! -s "$dir/model.json" || ! -s "$dir/weights.bin" ]]; then
	command -v npm >/dev/null || die "npm not found (scripts/deps.sh installs it)"
	command -v node >/dev/null || die "node not found (scripts/deps.sh installs it)"
	tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && npm pack --silent "$PKG@$VERSION" >/dev/null) || die "npm pack $PKG@$VERSION failed"
	echo "$SHA256  $tmp/$PKG-$VERSION.tgz" | sha256sum --status -c - ||
		die "$PKG-$VERSION.tgz sha256 mismatch (expected $SHA256)"
	tar -xzf "$tmp/$PKG-$VERSION.tgz" -C "$tmp" "$SUB" package/LICENSE || die "cannot unpack the package"
	(cd "$tmp/$SUB" && node -e '
const fs = require("fs");
const m = require("./model.min.js");
const w = Buffer.from(require("./group1-shard1of1.min.js"), "base64");
m.weightsManifest[0].paths = ["weights.bin"];
fs.writeFileSync("model.json", JSON.stringify(m));
fs.writeFileSync("weights.bin", w);
') || die "node could not unwrap the TF.js modules"
	cp "$tmp/package/LICENSE" "$dir/LICENSE"
	# Rename last so a reader never sees a half-written pair.
	mv -f "$tmp/$SUB/weights.bin" "$dir/weights.bin"
	mv -f "$tmp/$SUB/model.json" "$dir/model.json"
fi
echo "VREX_ENCODER_DIR=$dir"
