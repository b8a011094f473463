#!/usr/bin/env bash
# Makes this amd64 host run arm64 programs (qemu-user-static through binfmt_misc), for the arm64
# root of tests/install/deb-root.sh and the chroot steps of deb-install.sh --arch arm64:
#
#   binfmt-arm64.sh        exit 0 when an arm64 ELF runs, else 1 with the reason
#
# Mounts binfmt_misc when it is not mounted and registers qemu-user-static's entry
# (/usr/lib/binfmt.d/qemu-aarch64.conf, flags "F": the interpreter is opened now, so it also
# runs inside chroots) when it is missing; with systemd, systemd-binfmt would have done the same at
# boot. The check then runs a static arm64 program made by the cross compiler (aarch64-linux-gnu-gcc)
# and wants its exit status: the registration alone does not prove the kernel honours it.
set -euo pipefail

log() { echo "binfmt-arm64: $*" >&2; }
bm=/proc/sys/fs/binfmt_misc
conf=/usr/lib/binfmt.d/qemu-aarch64.conf

[[ -f $conf ]] || {
	log "$conf missing (make deps installs qemu-user-static)"
	exit 1
}
if [[ ! -f $bm/register ]]; then
	mount -t binfmt_misc binfmt_misc "$bm" || {
		log "cannot mount binfmt_misc on $bm (a container without it cannot run arm64 programs)"
		exit 1
	}
fi
if [[ ! -f $bm/qemu-aarch64 ]]; then
	grep -v '^#' "$conf" >"$bm/register" || {
		log "registering $conf in $bm failed"
		exit 1
	}
	log "registered qemu-aarch64 ($conf)"
fi
grep -qx enabled "$bm/qemu-aarch64" || {
	log "$bm/qemu-aarch64 is disabled"
	exit 1
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'int main(void) { return 42; }\n' >"$tmp/probe.c"
aarch64-linux-gnu-gcc -static -o "$tmp/probe" "$tmp/probe.c" || {
	log "aarch64-linux-gnu-gcc cannot build a static program (make deps)"
	exit 1
}
rc=0
"$tmp/probe" || rc=$?
((rc == 42)) || {
	log "an arm64 program did not run through $bm/qemu-aarch64 (exit status $rc)"
	exit 1
}
