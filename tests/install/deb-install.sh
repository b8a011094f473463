#!/usr/bin/env bash
# The Debian packages of `make deb`, installed the way a board user installs them, into a clean
# Debian 12 root, then booted:
#
#   deb-install.sh [--arch amd64|arm64]... [--build] [--debs DIR] [--keep]
#
# For each --arch (default: $VREX_DEB_INSTALL_ARCHES, else amd64 then arm64):
# --build first makes the packages (scripts/deb.sh, with lintian; a set already built from the same
# source is reused, so after `make deb` this builds nothing) into DIR/<arch>.
#  1. a bookworm root of that architecture (mmdebstrap, variant apt, from Debian's archive) with a
#     kernel, its headers and every package the .debs depend on, cached as a tarball in
#     /var/cache/vrex/deb-install keyed by that package list (cold: download + install, warm:
#     unpack). The arm64 root runs its programs through qemu-user-static (binfmt_misc,
#     tests/install/binfmt-arm64.sh): dpkg's maintainer scripts, DKMS's build of the module with the
#     root's own arm64 gcc and kernel headers, and the consumers' builds are arm64 programs;
#  2. `dpkg -i` of the .debs in a chroot: DKMS (vrex-dkms's postinst) must build and install vrex.ko
#     and vrex_sim.ko for the root's kernel;
#  3. in the chroot: a C consumer through pkg-config (examples/c_engine.c) and a C++ one through
#     find_package(vrex) (tests/install/consumer) build against libvrex-hal-dev and run on the
#     emulation; `python3 -c "import vrex, _vrexhal"`; the udev rule and the render group are in place;
#  4. QEMU (TCG; qemu-system-aarch64 -M virt for arm64) boots the root's own kernel and initramfs
#     with the root as its disk; its init
#     (tests/install/deb-guest-init.sh) loads vrex_sim from DKMS's directory, creates a simulated
#     device through configfs, and runs `vrexctl list` (the kernel backend must list the node),
#     `vrexctl --backend kernel info` and `python3 -c "import vrex, _vrexhal"`;
#  5. `dpkg --purge` of the packages: nothing they or DKMS installed is left (every `dpkg -L` path
#     and the whole root's file list compared with the list before installation).
#
# Prints one line per check ("arm64: ..." for arm64) and "deb-install: N passed, N failed". Exit
# status 1 on a failure.
# DIR defaults to build/deb (DIR/<arch>/ built by scripts/deb.sh when it holds no .debs; the arm64
# root also installs the arch-all packages of DIR/amd64). Work files: build/deb-install/<arch>/
# (serial log, chroot logs); --keep leaves the root there.
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
debs=$repo/build/deb
keep=0
build=0
arches=()
# shellcheck disable=SC2034 # keep is read by the EXIT trap's string
while (($#)); do
	case $1 in
	--arch) arches+=("${2:?}") && shift ;;
	--build) build=1 ;;
	--debs) debs=$(cd "${2:?}" && pwd) && shift ;;
	--keep) keep=1 ;;
	-h | --help)
		sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "deb-install: unknown argument $1" >&2
		exit 2
		;;
	esac
	shift
done

# Without --arch: VREX_DEB_INSTALL_ARCHES (default "amd64 arm64"; `make test`'s stage passes none).
((${#arches[@]})) || read -r -a arches <<<"${VREX_DEB_INSTALL_ARCHES:-amd64 arm64}"

pass=0
fail=0
prefix=
ok() {
	echo "PASS $prefix$*"
	pass=$((pass + 1))
}
ko() {
	echo "FAIL $prefix$*"
	fail=$((fail + 1))
}
# The profile: wall and CPU seconds of each step, printed before the summary. CPU is user + system
# of this shell's waited-for children (the chroot's emulated programs, QEMU, mkfs included): on a
# loaded machine the wall time grows, the CPU time does not.
steps=()
step_cpu=0
cpu_now() { # -> step_cpu: the children's CPU seconds so far (`times` in this shell, not a fork)
	mkdir -p "$repo/build/deb-install"
	times >"$repo/build/deb-install/.times.$$"
	step_cpu=$(awk 'END { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.1f", s }' \
		"$repo/build/deb-install/.times.$$")
}
step_begin() {
	step_t0=$SECONDS
	cpu_now
	step_c0=$step_cpu
}
step_end() { # name
	cpu_now
	steps+=("$prefix$1|$((SECONDS - step_t0))|$(awk -v a="$step_c0" -v b="$step_cpu" 'BEGIN { printf "%.0f", b - a }')")
}
finish() {
	local row name wall cpu
	if ((${#steps[@]})); then
		printf 'deb-install: %-44s %7s %7s\n' step wall_s cpu_s
		for row in "${steps[@]}"; do
			IFS='|' read -r name wall cpu <<<"$row"
			printf 'deb-install: %-44s %7s %7s\n' "$name" "$wall" "$cpu"
		done
	fi
	echo "deb-install: $pass passed, $fail failed"
	((fail == 0))
	exit $?
}
log() { echo "deb-install: $prefix$*" >&2; }

[[ $(id -u) -eq 0 ]] || {
	ko "setup: needs root (chroot, mounts)"
	finish
}
for tool in mmdebstrap qemu-system-x86_64 qemu-system-aarch64 mkfs.ext4; do
	command -v "$tool" >/dev/null || {
		ko "setup: $tool missing (make deps)"
		finish
	}
done

# The packages: arm64 installs the arch-all ones (vrex-dkms, vrex-dt-overlays) of the amd64 build,
# which `dpkg-buildpackage -aarm64 -B` does not make again.
build_args=()
for arch in "${arches[@]}"; do
	case $arch in
	amd64) ;;
	arm64) [[ " ${build_args[*]} " == *" amd64 "* ]] || build_args+=(--arch amd64) ;;
	*)
		ko "setup: no install test for $arch (amd64, arm64)"
		finish
		;;
	esac
	[[ " ${build_args[*]} " == *" $arch "* ]] || build_args+=(--arch "$arch")
done
if ((build)); then
	start=$SECONDS
	step_begin
	if bash "$repo/scripts/deb.sh" "${build_args[@]}" --out "$debs" >&2; then
		step_end "make deb (${build_args[*]//--arch /})"
		ok "make deb (${build_args[*]//--arch/}, lintian without errors) in $((SECONDS - start)) s"
	else
		step_end "make deb (${build_args[*]//--arch /})"
		ko "make deb (${build_args[*]//--arch/}) failed"
		finish
	fi
else
	for ((i = 1; i < ${#build_args[@]}; i += 2)); do
		compgen -G "$debs/${build_args[i]}/*.deb" >/dev/null && continue
		log "no .debs in $debs/${build_args[i]}: building them (scripts/deb.sh --arch ${build_args[i]})"
		bash "$repo/scripts/deb.sh" --arch "${build_args[i]}" --out "$debs" >&2 || {
			ko "setup: scripts/deb.sh --arch ${build_args[i]} failed"
			finish
		}
	done
fi

work=
root=
cleanup_mounts() {
	local m
	[[ -n $root ]] || return 0
	for m in dev/pts dev proc sys; do
		mountpoint -q "$root/$m" && umount -l "$root/$m"
	done
	return 0
}
# keep (--keep) is read by the trap at exit; the background root jobs end with the test.
declare -A root_job=()
cleanup_jobs=()
on_exit() {
	local j a
	for j in "${root_job[@]}"; do
		kill "$j" 2>/dev/null && wait "$j" 2>/dev/null
	done
	for j in "${cleanup_jobs[@]}"; do
		wait "$j" 2>/dev/null
	done
	cleanup_mounts
	rm -f "$repo/build/deb-install/.times.$$"
	for a in "${arches[@]}"; do
		rm -rf "$repo/build/deb-install/$a/root.new"
	done
	((keep)) || [[ -z $root ]] || rm -rf "$root" "$work/disk.img"
}
trap on_exit EXIT
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

# Everything but what the packages install: the list the removal is compared with.
snapshot() { # file
	(cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./tmp -o \
		-path ./var/log -o -path ./var/cache -o -path ./run -o -path ./root \) -prune -o -print |
		grep -vE '^\./(var/lib/dpkg/|var/lib/apt/|etc/ld\.so\.cache$|lib/modules/[^/]+/modules\.)' |
		LC_ALL=C sort) >"$1"
}

# The packages of one architecture (ours: their names), and the dependency list of its root.
pkg_files() { # arch
	local f
	# Debug symbols (-dbgsym) are not what a board user installs.
	for f in "$debs/$1"/*.deb; do
		[[ $f == *-dbgsym_* ]] || echo "$f"
	done
	[[ $1 == amd64 ]] || printf '%s\n' "$debs"/amd64/*_all.deb
}
root_include() { # arch
	local f d field
	local -a files ours=() deps=()
	mapfile -t files < <(pkg_files "$1")
	for f in "${files[@]}"; do ours+=("$(dpkg-deb -f "$f" Package)"); done
	# The root holds every dependency of the packages (so installing them needs no network and
	# removing them leaves exactly the root), a kernel with headers, and what the consumers build with.
	while read -r d; do
		[[ -n $d ]] || continue
		[[ " ${ours[*]} " == *" $d "* ]] || deps+=("$d")
	done < <(
		for f in "${files[@]}"; do
			for field in Depends Pre-Depends; do
				dpkg-deb -f "$f" "$field" | tr ',' '\n' | sed -E 's/\|.*//; s/\(.*\)//; s/:any//; s/^ +| +$//g'
			done
		done | sort -u
	)
	# mount: the guest's init mounts configfs (variant apt has no mount(8)).
	printf '%s\n' "linux-image-$1" "linux-headers-$1" build-essential cmake pkg-config kmod mount "${deps[@]}" |
		sort -u | paste -sd,
}
# Every root is prepared (made, or found in the cache) in the background from the start: the arm64
# root's emulated dpkg runs, or its tarball's copy, while the amd64 root is tested (each is one
# thread: TCG, qemu-user, mkfs).
for arch in "${arches[@]}"; do
	mkdir -p "$repo/build/deb-install/$arch"
	w=$repo/build/deb-install/$arch
	rm -f "$w/tarball" "$w/root.rc"
	(
		start=$SECONDS
		rc=0
		bash "$repo/tests/install/deb-root.sh" --arch "$arch" "$(root_include "$arch")" >"$w/tarball" \
			2>"$w/mmdebstrap.log" || rc=$?
		if ((rc == 0)); then
			rm -rf "$w/root.new"
			mkdir -p "$w/root.new"
			tar -C "$w/root.new" -xf "$(<"$w/tarball")" || rc=$?
		fi
		echo "$rc $((SECONDS - start))" >"$w/root.rc"
	) &
	root_job[$arch]=$!
done

test_arch() { # arch
	local arch=$1 f start kver m ko_path tarball rc secs
	local -a pkgfiles ours=()
	prefix=
	[[ $arch == amd64 ]] || prefix="$arch: "
	work=$repo/build/deb-install/$arch
	root=$work/root
	start=$SECONDS
	mapfile -t pkgfiles < <(pkg_files "$arch")
	for f in "${pkgfiles[@]}"; do ours+=("$(dpkg-deb -f "$f" Package)"); done
	# The root's job ran in the background from the start: its CPU is counted when it is waited for,
	# its wall time is what this test waited for it.
	step_begin
	wait "${root_job[$arch]}"
	step_end "root (mmdebstrap or cached tarball, unpacked)"
	read -r rc secs <"$work/root.rc"
	tarball=$(<"$work/tarball")
	if ((rc)) || [[ ! -f $tarball ]]; then
		ko "root: tests/install/deb-root.sh or unpacking its tarball failed (log $work/mmdebstrap.log)"
		return
	fi
	log "root made or unpacked in $secs s in the background, waited $((SECONDS - start)) s ($tarball)"

	cleanup_mounts
	rm -rf "$root"
	mv "$work/root.new" "$root"
	mount -t proc proc "$root/proc"
	mount -t sysfs sys "$root/sys"
	mount --bind /dev "$root/dev"
	mount --bind /dev/pts "$root/dev/pts"

	# The root's kernel (not the host's, which `uname -r` in the chroot would report).
	kver=$(basename "$(ls -d "$root"/lib/modules/*/ | head -n 1)")
	[[ -d $root/usr/src/linux-headers-$kver ]] && ok "root: kernel $kver with headers" ||
		ko "root: no headers for $kver"

	snapshot "$work/before.txt"

	mkdir -p "$root/tmp/debs"
	cp "${pkgfiles[@]}" "$root/tmp/debs/"
	local t0=$SECONDS
	step_begin
	if in_root sh -c 'dpkg -i /tmp/debs/*.deb' >"$work/dpkg-install.log" 2>&1; then
		ok "dpkg -i ${ours[*]} ($((SECONDS - t0)) s, DKMS included)"
	else
		ko "dpkg -i failed (log $work/dpkg-install.log)"
	fi
	step_end "dpkg -i (DKMS builds vrex.ko, vrex_sim.ko)"

	for m in vrex vrex_sim; do
		ko_path=$(ls "$root/lib/modules/$kver/updates/dkms/$m.ko"* 2>/dev/null | head -n 1)
		if [[ -n $ko_path ]] && modinfo -F vermagic "$ko_path" | grep -q "^$kver "; then
			ok "dkms: $m.ko for $kver (${ko_path#"$root"})"
		else
			ko "dkms: no $m.ko for $kver (log $work/dpkg-install.log)"
		fi
	done
	in_root dkms status >"$work/dkms-status.txt" 2>&1
	grep -q "^vrex/1.0, $kver, [^:]*: installed" "$work/dkms-status.txt" &&
		ok "dkms status: vrex/1.0 installed for $kver" ||
		ko "dkms status: $(tr '\n' ' ' <"$work/dkms-status.txt")"

	[[ -f $root/lib/udev/rules.d/70-vrex.rules ]] && in_root getent group render >/dev/null &&
		ok "udev rule 70-vrex.rules and group render" || ko "udev rule or group render missing"

	# Consumers of libvrex-hal-dev, from outside the source tree.
	step_begin
	mkdir -p "$root/tmp/consumer"
	cp "$repo/examples/c_engine.c" "$repo/tests/install/consumer/"* "$root/tmp/consumer/"
	if in_root sh -c 'cd /tmp/consumer && cc -std=c11 -Wall -Wextra -Werror -o c_engine c_engine.c \
			$(pkg-config --cflags --libs vrex-hal) && VREX_BACKEND=emulated ./c_engine' \
		>"$work/consumer-pkgconfig.log" 2>&1; then
		ok "pkg-config consumer (examples/c_engine.c) built and ran"
	else
		ko "pkg-config consumer (log $work/consumer-pkgconfig.log)"
	fi
	if in_root sh -c 'cmake -S /tmp/consumer -B /tmp/consumer/build && cmake --build /tmp/consumer/build &&
			VREX_BACKEND=emulated /tmp/consumer/build/consumer_cpp' >"$work/consumer-cmake.log" 2>&1; then
		ok "CMake consumer (find_package(vrex)) built and ran"
	else
		ko "CMake consumer (log $work/consumer-cmake.log)"
	fi
	# _vrexhal too: a cross build once shipped it under the build machine's suffix
	# (.cpython-311-x86_64-linux-gnu.so), which arm64's Python never finds while `import vrex` works.
	in_root python3 -c 'import vrex, _vrexhal; assert callable(vrex.enable)' >"$work/python.log" 2>&1 &&
		ok "python3 -c 'import vrex, _vrexhal' (chroot)" || ko "import vrex, _vrexhal (log $work/python.log)"
	rm -rf "$root/tmp/consumer"
	step_end "consumers (pkg-config, CMake) and import vrex"

	step_begin
	boot_guest "$arch" "$kver"
	step_end "guest (mkfs.ext4 -d, QEMU boot and checks)"

	# Removal: what dpkg and DKMS put into the root goes again.
	step_begin
	mount -t proc proc "$root/proc"
	mount --bind /dev "$root/dev"
	rm -f "$root/sbin/vrex-guest-init"
	in_root sh -c "dpkg -L ${ours[*]}" 2>/dev/null | LC_ALL=C sort -u >"$work/dpkg-L.txt"
	if in_root dpkg --purge "${ours[@]}" >"$work/dpkg-purge.log" 2>&1; then
		ok "dpkg --purge ${ours[*]}"
	else
		ko "dpkg --purge (log $work/dpkg-purge.log)"
	fi
	cleanup_mounts
	local -a left=()
	local p
	# Files and links; directories (/., /lib/udev, shared with other packages or reached through the
	# merged-/usr links) are covered by the whole-root comparison below.
	while read -r p; do
		[[ -L $root$p || (-e $root$p && ! -d $root$p) ]] || continue
		grep -qxF ".$p" "$work/before.txt" || left+=("$p")
	done <"$work/dpkg-L.txt"
	((${#left[@]} == 0)) && ok "purge: no path of dpkg -L left" || ko "purge: left ${left[*]}"
	snapshot "$work/after.txt"
	if diff "$work/before.txt" "$work/after.txt" >"$work/root-diff.txt"; then
		ok "purge: the root's file list equals the one before installation"
	else
		ko "purge: the root differs from before installation: $(head -c 600 "$work/root-diff.txt" | tr '\n' ' ')"
	fi
	# The root (about 2 GB of small files) goes in the background, while the next one is tested.
	if ((!keep)); then
		rm -rf "$work/root.old"
		mv "$root" "$work/root.old"
		rm -rf "$work/root.old" &
		cleanup_jobs+=($!)
	fi
	step_end "purge and comparison"
	log "total $((SECONDS - start)) s"
}

# The guest: the root's kernel and initramfs, the root as an ext4 disk, our init.
boot_guest() { # arch kver
	local arch=$1 kver=$2 vmlinuz initrd size_mb guest_start verdict what
	local -a qemu
	install -m 0755 "$repo/tests/install/deb-guest-init.sh" "$root/sbin/vrex-guest-init"
	cleanup_mounts
	vmlinuz=$root/boot/vmlinuz-$kver
	initrd=$root/boot/initrd.img-$kver
	size_mb=$(($(du -sm "$root" | cut -f1) + 512))
	guest_start=$SECONDS
	local append="root=/dev/vda rw panic=-1 quiet loglevel=4 init=/sbin/vrex-guest-init"
	if [[ $arch == amd64 ]]; then
		qemu=(qemu-system-x86_64 -drive "file=$work/disk.img,format=raw,if=virtio")
		# Under TCG on a busy host the IO-APIC timer check misfires (scripts/qemu-test.sh says the same).
		append="console=ttyS0 $append no_timer_check"
	else
		# virt with a PCI virtio disk: the initramfs's virtio_pci and virtio_blk find it.
		# shellcheck disable=SC2054 # the commas are QEMU option syntax
		qemu=(qemu-system-aarch64 -M virt -cpu cortex-a57
			-drive "file=$work/disk.img,format=raw,if=none,id=disk" -device virtio-blk-pci,drive=disk)
		append="console=ttyAMA0 $append"
	fi
	if [[ ! -f $vmlinuz || ! -f $initrd ]]; then
		ko "guest: no kernel or initramfs for $kver in the root"
	elif ! mkfs.ext4 -q -F -L vrexroot -d "$root" "$work/disk.img" "${size_mb}M" >"$work/mkfs.log" 2>&1; then
		ko "guest: mkfs.ext4 -d failed (log $work/mkfs.log)"
	else
		timeout "${VREX_DEB_GUEST_TIMEOUT:-900}" "${qemu[@]}" -accel tcg -smp 1 -m 1024 -nographic \
			-no-reboot -kernel "$vmlinuz" -initrd "$initrd" -append "$append" \
			</dev/null >"$work/serial.log" 2>&1
		log "guest ran $((SECONDS - guest_start)) s (serial log $work/serial.log)"
		if grep -q '@@VREX-GUEST-END' "$work/serial.log"; then
			while read -r verdict what; do
				[[ $verdict == PASS ]] && ok "guest: $what" || ko "guest: $what"
			done < <(sed -n 's/\r$//; s/^@@VREX-CHECK //p' "$work/serial.log")
		else
			ko "guest: did not finish (serial log $work/serial.log)"
		fi
	fi
	rm -f "$work/disk.img"
}

for arch in "${arches[@]}"; do
	test_arch "$arch"
done
prefix=
finish
