#!/usr/bin/env bash
# Installs every Debian package vrex needs to build, test and demo. Idempotent: packages that are
# already installed are skipped, so a warm machine pays one dpkg query.
set -euo pipefail

PKGS=(
	build-essential cmake ninja-build pkg-config git python3
	libgtest-dev libgmock-dev libbenchmark-dev
	libdrm-dev libudev-dev libboost-dev libboost-system-dev
	libfmt-dev nlohmann-json3-dev libcli11-dev
	libavformat-dev libavcodec-dev libswscale-dev libavutil-dev ffmpeg
	libfaiss-dev
	clang clang-tidy clang-format libclang-rt-14-dev
	qemu-system-x86 qemu-system-arm busybox-static cpio kmod
	device-tree-compiler sparse dt-schema python3-kconfiglib
	gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
	dkms bc flex bison libelf-dev libssl-dev dwarves
	xz-utils zstd curl zlib1g-dev
	meson libglib2.0-dev libpixman-1-dev libfdt-dev dpkg-dev
	python3-dev python3-numpy python3-torch libopenblas0-pthread python3-pytest python3-pybind11 pybind11-dev
	libtorch-dev
	debhelper dh-dkms dh-python lintian mmdebstrap qemu-user-static arch-test
	chromium
	ccache
)
# debhelper .. arch-test: `make deb` and the package install test (tests/install/deb-install.sh;
# qemu-user-static runs the arm64 root's maintainer scripts, DKMS and consumers on this amd64 host;
# mmdebstrap wants arch-test to check that it can).
# chromium: the report's browser test (vrexctl.report-screenshot) renders the HTML report headless.
# ccache: every CMake tree of `make test` (build/, the sanitizer and fuzz trees, build-arm64/, the
# package build) compiles through it, so a fresh clone on a machine with a warm cache (docs/testing.md)
# recompiles only what changed.
# model/ fetches its image encoder with `npm pack` (scripts/fetch-encoder.sh); a node from elsewhere
# that brings its own npm is fine, else Debian's.
if ! command -v npm >/dev/null; then
	PKGS+=(npm)
fi

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if ((${#missing[@]} == 0)); then
	exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "deps: need root to install: ${missing[*]}" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
