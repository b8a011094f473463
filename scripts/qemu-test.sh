#!/usr/bin/env bash
# `make qemu-test`: vrex.ko in QEMU (TCG) on the Debian kernels vrex supports.
#
#   qemu-test.sh [--kernel T]... [--fuzz SECONDS] [--guest-program 'NAME PATH [ARGS]']...
#                [--programs FILE] [--src DIR] [--timeout SECONDS]
#
#   Every guest loads vrex.ko and vrex_sim.ko and creates one simulated device through configfs
#   (/sys/kernel/config/vrex_sim/sim0/enable); vrex.ko's platform driver binds it.
#   6.12-amd64  expects /dev/accel/accel0 (DRM_ACCEL=y)
#   6.1-amd64   expects /dev/dri/renderD128 (no accel framework before 6.2)
#   6.12-arm64  render node (arm64 Debian has no DRM_ACCEL)
#   5.10-amd64  Debian bullseye's kernel (the base of Jetson Linux R35 and the RK3588 BSP):
#               render node, GEM mmap through the file's mmap (no drm_gem_object_funcs.mmap)
#   5.10-arm64  bullseye arm64, render node
#   debug-6.1-amd64  bookworm's linux-source-6.1 built by scripts/kernel-debug.sh with KASAN,
#               PROVE_LOCKING, DEBUG_ATOMIC_SLEEP, KMEMLEAK, DEBUG_OBJECTS; -smp 2; the tests/kernel
#               suites only (uAPI with unplug, negative, fault) and two fuzzers at once
#               (scripts/qemu/fuzz-peers.sh); a kmemleak scan after rmmod must find nothing
#   pci-6.12-amd64, pci-5.10-amd64  the QEMU device model instead of vrex_sim.ko: QEMU built by
#               scripts/qemu-build.sh (Debian's source + qemu/), q35 with intel-iommu (guest
#               intel_iommu=on), the V-Rex PCIe function (qemu/hw/vrex/vrex-pci.c) in a PCIe root
#               port; vrex.ko's PCI driver binds it (MMIO registers, MSI completion, BAR2 banks,
#               staging window by DMA through the IOMMU); vrex_sim.ko is loaded without a device
#               (the import suite creates its foreign exporter); the suites get
#               VREX_EXPECT_SIMULATED=0. A second function, a hardware 1.0 device model
#               (hw-version=1.0, 2 MiB of banks), is held off vrex.ko until the end, when it takes
#               the first one's place for the 1.0 checks (tests/kernel/vrex_hw10_test.c; the sim
#               lines reload vrex_sim.ko with hw_version=1.0 for them instead)
#   unplug-6.12-amd64  the pci guest with a QMP socket: tests/qemu/vrex_hotunplug.c holds mmaps
#               (the BO's, two dma-bufs' with their GEM handle open and closed), a dma-buf
#               imported from a vrex_sim.ko device and one of its own imported by it, two files
#               and a thread submitting frames, and asks the host (scripts/qemu/hotplug.py) for
#               QEMU's device_del (pciehp ejects, QEMU reports DEVICE_DELETED), then device_add
#               (a new open, stream, BO and frame); only that program runs (the pci line runs
#               the suites)
#   dt-6.12-arm64  the same device model as a system-bus engine on arm64 `virt`, with the
#               device-tree node QEMU writes (reg, interrupts, memory-region to a reserved-memory
#               carve-out, iommus); vrex.ko's OF driver binds it, banks and staging window by
#               DMA through the SMMUv3 (stream 0xf8); its carve-out is in the linear map (struct
#               pages, dma_map_page(), dma-buf export)
#   dt-5.10-arm64  the same on bullseye's arm64 5.10 (the RK3588 and Orin BSPs' base), with a no-map
#               carve-out as those boards have (dma_map_resource(), write-combined, no export);
#               both dt lines check the kind vrex_of.c reports at probe. Both 5.10 device-model
#               lines, measured 2026-12-02 two at a time at load 19-24 (nice 10) with the HAL
#               programs: dt-5.10-arm64 1275/0 in 818 s wall / 200 s CPU (guest 435 s, of which
#               lib_model 269 s), pci-5.10-amd64 774/0 in 453 s / 85 s (guest 201 s)
#   debug-pci-6.1-amd64, debug-unplug-6.1-amd64  the pci and unplug lines on the debug kernel
#               (the same build as debug-6.1-amd64: its fragment has PCI_MSI and pciehp, but no
#               ACPI and so no intel-iommu: DMA is direct there): -smp 2, the tests/kernel suites
#               (debug-pci, with the two fuzzers) or the hot-unplug program (debug-unplug); KASAN,
#               lockdep, DEBUG_ATOMIC_SLEEP and DEBUG_OBJECTS reports fail the line, and so does a
#               kmemleak scan after rmmod; the slot is native hot-plug's (no ACPI in the guest)
#   compile-5.15-arm64  not booted: W=1 build against the prepared 5.15 tree (Jetson Linux R36's
#               base) in ../shared/kernels/ or ../../shared/kernels/ (VREX_KERNEL_TREES: a
#               folder); skipped, with a line saying so,
#               when the archive is absent
#
# Per kernel, under build/qemu/<kernel>/: the sources (kernel/ lib/ uapi/ .config) are copied and
# vrex.ko built against headers from scripts/kheaders.sh; every tests/kernel/*.c becomes a static
# binary for the guest (tests/kernel/*_util.c are shared helpers linked into each of them); a
# busybox initramfs carries them, vrex.ko, drm.ko and the modules vrex.ko depends on, and
# scripts/qemu/init.sh as /init. The serial log (serial.log), the guest's kernel log
# (dmesg.txt) and the build logs stay there.
#
# Guest test programs: each runs once (tests/kernel ones without arguments), exit status 0 = pass.
# If it prints a line "N passed, M failed" (its last such line counts) or GoogleTest's
# "[  PASSED  ] N tests." / "[  FAILED  ] M tests, listed below:", its cases are counted one by one.
# tests/kernel/vrex_fuzz runs last: with --fuzz as `vrex_fuzz SECONDS` (VREX_FUZZ_SECONDS set),
# otherwise bounded as `vrex_fuzz 4 40000` (VREX_FUZZ_SHORT / VREX_FUZZ_SHORT_CALLS).
# Extra programs built elsewhere (e.g. the HAL conformance suite) are listed in
# tests/kernel/guest-programs.txt (or --programs FILE), one "NAME PATH [ARGS]" per line (PATH
# relative to the repository), or given with --guest-program. When build/ is a configured CMake tree,
# the programs of it are brought up to date first (one `cmake --build`, a no-op when current), so a
# binary left from an older tree is never booted; a failed build fails the run.
# arm64 guests run tests/kernel/guest-programs-arm64.txt instead: the same HAL programs plus vrexctl,
# cross-built into build-arm64/ by scripts/cross-arm64.sh (its sysroot: scripts/arm64-sysroot.sh)
# before the guest is assembled, on every run (ninja: a no-op when current; VREX_QEMU_CROSS_BUILD=0:
# use build-arm64/ as it is).
# Timeouts are hang guards, not speed checks (a TCG guest runs at whatever share of a core the host
# leaves it): init kills a program after VREX_QEMU_TEST_TIMEOUT seconds (600), and a guest that
# prints nothing for --timeout seconds (VREX_QEMU_TIMEOUT; default that + 60) is stopped. Guests boot
# with watchdog_thresh=60, so the soft-lockup detector reports a CPU stuck for 120 s, not one the host
# starved for 20.
# A dynamically linked program is copied with its shared libraries and the loader (amd64: what ldd
# lists; arm64: scripts/qemu/cross-libs.sh resolves them in the sysroot). Data files they read come
# from tests/kernel/guest-files.txt (see below).
#
# Output: one line per kernel, e.g. "qemu 6.12-amd64 accel: PASS (uapi 57/57, dmesg clean, rmmod ok)",
# then "qemu: N passed, N failed" over every case of every guest (module load, configfs device, node,
# test-program cases, rmmod, dmesg). Exit status 1 if anything failed.
#
# Lines in parallel: a TCG guest with -smp 1 keeps one core busy, so with more than one kernel the
# script runs itself once per kernel (VREX_QEMU_LINE=1 marks such a line run), VREX_QEMU_JOBS
# (default 2) at a time, the arm64 lines first (the longest) as soon as the arm64 cross build has
# ended (the amd64 lines start beside it meanwhile), and the debug lines last, alone (-smp 2).
# Each line keeps its own build/qemu/<kernel>/ and a lock of its own; its output goes to
# build/qemu/<kernel>.out and build/qemu/<kernel>.err. What the lines share is prepared once: the
# guest programs and the QEMU device model before the lines start; the arm64 cross build and the
# debug kernel as jobs of their own beside the first lines (the arm64 lines wait for the former).
# The result lines are then printed in the order the kernels were asked for, followed by the summed
# "qemu: N passed, N failed". Wall and CPU seconds per line and per build: build/qemu/times.tsv.
# VREX_QEMU_JOBS=1 runs the lines one after the other in this process, as before.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
src=$repo
kernels=()
fuzz_seconds=0
# Both are hang guards, not speed checks: a TCG guest runs at whatever share of a core the host leaves
# it. Every guest program is killed after test_timeout seconds (arm64's lib_model needed more than
# 180 at load 25); a guest silent for guest_timeout seconds is stopped (default: test_timeout + 60).
guest_timeout=${VREX_QEMU_TIMEOUT:-}
test_timeout=${VREX_QEMU_TEST_TIMEOUT:-600}
extra_programs=()
programs_file=$repo/tests/kernel/guest-programs.txt
# The arguments other than --kernel, for the line runs (below).
line_args=()
line_run=${VREX_QEMU_LINE:-0}
print_kernels=0

while (($#)); do
	[[ $1 == --kernel ]] || line_args+=("$1" ${2+"$2"})
	case $1 in
	--kernel) kernels+=("${2:?}") && shift ;;
	--fuzz) fuzz_seconds=${2:?} && shift ;;
	--guest-program) extra_programs+=("${2:?}") && shift ;;
	--programs) programs_file=${2:?} && shift ;;
	--src) src=$(cd "${2:?}" && pwd) && shift ;;
	--timeout) guest_timeout=${2:?} && shift ;;
	# The lines a run with these arguments would boot, one per line (scripts/run-tests.sh asks).
	--print-kernels) print_kernels=1 ;;
	-h | --help)
		sed -n '2,/^set /{/^set /!p}' "$0" | sed 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "qemu-test: unknown argument $1 (see --help)" >&2
		exit 2
		;;
	esac
	shift
done
all_kernels=(6.12-amd64 6.1-amd64 6.12-arm64 5.10-amd64 5.10-arm64 debug-6.1-amd64 compile-5.15-arm64
	pci-6.12-amd64 pci-5.10-amd64 unplug-6.12-amd64 dt-6.12-arm64 dt-5.10-arm64)
# The device-model lines are default: pci and dt on 6.12 and 5.10 (issue 23's matrix) and the unplug
# run. They need the QEMU built by scripts/qemu-build.sh (cached by content; its cold build, about
# 750-800 CPU-s, is paid once per cache). dt-5.10-arm64 is the only line with vrex_of.c on the BSP
# kernel and with a no-map carve-out; pci-5.10-amd64 the PCI probe, MSI and intel-iommu on 5.10. What
# the two 5.10 lines cost (about 200 and 85 CPU-s): docs/testing.md ("Device-model lines on 5.10").
((${#kernels[@]})) || kernels=(6.12-amd64 6.1-amd64 6.12-arm64 5.10-amd64 5.10-arm64 debug-6.1-amd64
	debug-pci-6.1-amd64
	compile-5.15-arm64 pci-6.12-amd64 pci-5.10-amd64 unplug-6.12-amd64 dt-6.12-arm64 dt-5.10-arm64)
[[ -n $guest_timeout ]] || guest_timeout=$((test_timeout + 60))
[[ $fuzz_seconds =~ ^[0-9]+$ ]] || {
	echo "qemu-test: --fuzz takes seconds" >&2
	exit 2
}
# The device model on the debug kernel (the same kernel build as debug-6.1-amd64). debug-pci-6.1-amd64
# is default (session 9: 544 suite cases, 359 s wall / 192 CPU-s alone at load ~5);
# debug-unplug-6.1-amd64 is opt-in (--kernel): its hot-unplug program passes 32/32, but on device_del
# the kernel's own pciehp makes lockdep report a reset_lock/pci_rescan_remove_lock cycle, which fails
# the line (docs/testing.md, "Booted in session 9").
all_kernels+=(debug-pci-6.1-amd64 debug-unplug-6.1-amd64)
if ((print_kernels)); then
	printf '%s\n' "${kernels[@]}"
	exit 0
fi

# Data files for guest programs: tests/kernel/guest-files.txt, one "DEST COMMAND..." per line; the
# command runs in the repository and its standard output becomes DEST in the initramfs.
guest_files=()
if [[ -f $repo/tests/kernel/guest-files.txt ]]; then
	while read -r line; do
		line=${line%%#*}
		[[ -n ${line//[[:space:]]/} ]] && guest_files+=("$line")
	done <"$repo/tests/kernel/guest-files.txt"
fi

if [[ -f $programs_file ]]; then
	while read -r line; do
		line=${line%%#*}
		[[ -n ${line//[[:space:]]/} ]] && extra_programs+=("$line")
	done <"$programs_file"
fi
arm64_programs=()
if [[ -f $repo/tests/kernel/guest-programs-arm64.txt ]]; then
	while read -r line; do
		line=${line%%#*}
		[[ -n ${line//[[:space:]]/} ]] && arm64_programs+=("$line")
	done <"$repo/tests/kernel/guest-programs-arm64.txt"
fi

out_root=$repo/build/qemu
mkdir -p "$out_root"
# Two runs in one checkout would delete each other's guests: the second waits for the first. A line
# run (its parent holds that lock) locks its own kernel's directory.
lock=$out_root/.lock
((line_run)) && lock=$out_root/.lock-${kernels[0]}
exec 8>"$lock"
if ! flock -n 8; then
	echo "qemu-test: another run is using $out_root; waiting for it" >&2
	flock 8
fi
# The module is configured by the repository's .config (scripts/kconfig.sh defconfig when absent).
config=$src/.config
if [[ ! -f $config ]]; then
	config=$repo/.config
	if [[ ! -f $config ]] && ! bash "$repo/scripts/kconfig.sh" defconfig >"$out_root/kconfig.log" 2>&1; then
		echo "qemu-test: scripts/kconfig.sh defconfig failed (see $out_root/kconfig.log);" \
			"building without .config" >&2
	fi
fi

say() { echo "qemu-test: $*" >&2; }

# Guest programs built by CMake: when build/ is configured, ninja brings every one of them up to date
# (a no-op when current), so a binary left from an older tree is never booted. Only the parent does
# it (a line run's parent did); the arm64 lines' programs come from scripts/cross-arm64.sh, which does
# the same for build-arm64/. A failed build fails the run: the programs on disk are then not this
# tree's.
guest_build_failed=0
if ((!line_run)) && [[ -f $repo/build/CMakeCache.txt && ${VREX_QEMU_PROGRAMS:-1} != 0 &&
	" ${kernels[*]}" == *-amd64* ]]; then
	guest_targets=()
	for entry in "${extra_programs[@]}"; do
		read -r _ ppath _ <<<"$entry"
		[[ $ppath == /* ]] || ppath=$repo/$ppath
		# Only programs of this build tree are CMake targets (named as their binaries).
		[[ $ppath == "$repo/build/"* ]] && guest_targets+=("$(basename "$ppath")")
	done
	if ((${#guest_targets[@]})); then
		say "bringing the guest programs up to date (${guest_targets[*]})"
		gb_start=$SECONDS
		if ! cmake --build "$repo/build" --target "${guest_targets[@]}" -j 2 \
			>"$out_root/guest-build.log" 2>&1; then
			echo "qemu guest-build: FAIL (cmake --build ${guest_targets[*]}; see $out_root/guest-build.log)"
			tail -n 10 "$out_root/guest-build.log" | sed 's/^/    /'
			guest_build_failed=1
		fi
		say "guest programs ready in $((SECONDS - gb_start)) s"
	fi
fi

# Copies a program and, if it is dynamic, its shared libraries and loader into the initramfs.
copy_program() { # binary dest-in-root root guest_machine -> 0 copied, 1 error, 2 skipped
	local bin=$1 dest=$2 root=$3 machine=$4 lib
	if ! readelf -h "$bin" 2>/dev/null | grep -q "Machine:.*$machine"; then
		readelf -h "$bin" 2>/dev/null | grep -q 'Machine:' || return 1
		return 2
	fi
	mkdir -p "$root/$(dirname "$dest")"
	cp -L "$bin" "$root/$dest"
	if readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
		if [[ $machine == AArch64 ]]; then
			# The sysroot the cross tree was configured with holds the arm64 libraries.
			local sysroot
			sysroot=$(sed -n 's/^VREX_ARM64_SYSROOT:PATH=//p' "$repo/build-arm64/CMakeCache.txt" 2>/dev/null)
			[[ -n $sysroot ]] || return 2
			bash "$repo/scripts/qemu/cross-libs.sh" "$sysroot" "$root" "$bin" || return 1
			return 0
		fi
		[[ $machine == X86-64 ]] || return 2
		while read -r lib; do
			mkdir -p "$root/$(dirname "$lib")"
			cp -Ln "$lib" "$root/$lib"
		done < <(ldd "$bin" | grep -oE '/[^ ]+' | sort -u)
	fi
	return 0
}

# Builds everything for one kernel and boots it. Writes build/qemu/<kernel>/cases (one
# "PASS|FAIL name detail" per case) and summary.
run_kernel() { # target: [debug-][pci-|dt-|unplug-]<kernel>
	local target=$1 out=$out_root/$1
	rm -rf "$out"
	mkdir -p "$out"
	local cases=$out/cases
	: >"$cases"
	fail_case() { echo "FAIL $1 $2" >>"$cases"; }

	# The front end: vrex_sim.ko's simulated device, or the QEMU device model (pci, dt).
	local front=sim
	case $target in
	pci-* | dt-* | unplug-* | debug-pci-* | debug-unplug-*)
		# debug-pci-6.1-amd64: the pci front end on the debug-6.1-amd64 kernel.
		local kprefix=
		[[ $target == debug-* ]] && kprefix=debug- target=${target#debug-}
		front=${target%%-*}
		target=$kprefix${target#*-}
		if [[ -z $qemu_model_dir ]]; then
			fail_case qemu-build "scripts/qemu-build.sh failed (see $out_root/qemu-build.log)"
			return
		fi
		;;
	esac

	local env debug=0
	[[ $target == debug-* ]] && debug=1
	if ((debug)); then
		local kd_start=$SECONDS
		if ! env=$(bash "$repo/scripts/kernel-debug.sh" --env 2>"$out/kheaders.log"); then
			fail_case kernel "kernel-debug.sh failed (see $out/kheaders.log)"
			return
		fi
		echo "$((SECONDS - kd_start))" >"$out/kernel-seconds"
	elif ! env=$(bash "$repo/scripts/kheaders.sh" --image --env "$target" 2>"$out/kheaders.log"); then
		fail_case kernel "kheaders.sh failed (see $out/kheaders.log)"
		return
	fi
	local KVER KDIR ARCH CROSS_COMPILE VMLINUZ MODDIR KCC=
	eval "$env"
	local kroot=${MODDIR%/lib/modules/*}

	local node params machine cc
	case $target in
	6.12-amd64) node=/dev/accel/accel0 params='' machine=X86-64 cc=gcc ;;
	6.1-amd64 | 5.10-amd64 | debug-6.1-amd64)
		node=/dev/dri/renderD128 params='' machine=X86-64 cc=gcc
		;;
	6.12-arm64 | 5.10-arm64)
		node=/dev/dri/renderD128 params='' machine=AArch64 cc=aarch64-linux-gnu-gcc
		;;
	esac

	# --- vrex.ko --------------------------------------------------------------------------------
	local msrc=$out/src
	mkdir -p "$msrc"
	cp -a "$src/kernel" "$src/lib" "$src/uapi" "$msrc/"
	[[ -f $config ]] && cp "$config" "$msrc/.config"
	if [[ ! -f $msrc/kernel/Kbuild && ! -f $msrc/kernel/Makefile ]]; then
		fail_case build "no kernel/Kbuild in $src"
		return
	fi
	if ! make -C "$KDIR" M="$msrc/kernel" ARCH="$ARCH" CROSS_COMPILE="$CROSS_COMPILE" ${KCC:+CC="$KCC"} -j2 modules \
		>"$out/build.log" 2>&1 || [[ ! -f $msrc/kernel/vrex.ko || ! -f $msrc/kernel/vrex_sim.ko ]]; then
		fail_case build "vrex.ko or vrex_sim.ko did not build (see $out/build.log)"
		return
	fi

	# --- initramfs ------------------------------------------------------------------------------
	local root=$out/initramfs
	mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,tests,lib/modules/"$KVER"}
	if [[ $machine == X86-64 ]]; then
		cp /bin/busybox "$root/bin/busybox"
	else
		local bb_deb
		# bookworm's arm64 busybox for every arm64 guest: static, it does not care about the kernel.
		bb_deb=$(bash "$repo/scripts/kheaders.sh" --fetch busybox-static 6.12-arm64 2>>"$out/kheaders.log") || {
			fail_case initramfs "no arm64 busybox-static (see $out/kheaders.log)"
			return
		}
		dpkg-deb --fsys-tarfile "$bb_deb" | tar -xO ./bin/busybox >"$root/bin/busybox"
		chmod 755 "$root/bin/busybox"
	fi
	cp "$repo/scripts/qemu/init.sh" "$root/init"
	chmod 755 "$root/init"
	cp "$msrc/kernel/vrex.ko" "$msrc/kernel/vrex_sim.ko" "$root/"

	# drm plus whatever vrex.ko and vrex_sim.ko link against, in load order, decompressed for
	# busybox modprobe.
	local deps mod path rel
	deps=$(echo drm "$(modinfo -F depends "$msrc/kernel/vrex.ko")" \
		"$(modinfo -F depends "$msrc/kernel/vrex_sim.ko")" | tr -s ', ' '\n' | awk 'NF && !seen[$0]++' |
		tr '\n' ' ')
	for mod in $deps; do
		while read -r path; do
			rel=${path#"$MODDIR"/}
			mkdir -p "$root/lib/modules/$KVER/$(dirname "$rel")"
			case $path in
			*.xz) xz -dc "$path" >"$root/lib/modules/$KVER/${rel%.xz}" ;;
			*.zst) zstd -qdc "$path" >"$root/lib/modules/$KVER/${rel%.zst}" ;;
			*) cp "$path" "$root/lib/modules/$KVER/$rel" ;;
			esac
		done < <(modprobe -d "$kroot" -S "$KVER" --show-depends "$mod" | awk '$1 == "insmod" { print $2 }')
	done
	cp "$MODDIR"/modules.builtin* "$MODDIR/modules.order" "$root/lib/modules/$KVER/"
	depmod -b "$root" "$KVER"

	# Test programs. The fuzzer is built always (so it keeps compiling) but runs only with --fuzz.
	local c name bin tests_list=$root/etc/vrex-tests
	local -a util_srcs=()
	: >"$tests_list"
	mkdir -p "$out/tests"
	for c in "$src"/tests/kernel/*_util.c; do
		[[ -f $c ]] && util_srcs+=("$c")
	done
	for c in "$src"/tests/kernel/*.c; do
		[[ -f $c && $c != *_util.c ]] || continue
		name=$(basename "$c" .c)
		bin=$out/tests/$name
		if ! $cc -static -O2 -Wall -Wextra -pthread -I "$msrc/uapi" -I "$msrc/lib" -I /usr/include/libdrm \
			-o "$bin" "$c" "${util_srcs[@]}" >"$out/tests/$name.log" 2>&1; then
			fail_case "compile-$name" "see $out/tests/$name.log"
			continue
		fi
		cp "$bin" "$root/tests/$name"
		[[ $name == vrex_fuzz ]] || echo "$name|/tests/$name" >>"$tests_list"
	done

	local entry pname ppath pargs rc mem=512
	local -a programs=("${extra_programs[@]}")
	if [[ $machine == AArch64 && ${VREX_QEMU_PROGRAMS:-1} != 0 ]]; then
		programs=("${arm64_programs[@]}")
		# VREX_QEMU_CROSS_BUILD=0 takes build-arm64/ as it is (while iterating on one program).
		if [[ ${VREX_QEMU_CROSS_BUILD:-1} != 0 ]]; then
			local t1=$SECONDS
			bash "$repo/scripts/cross-arm64.sh" >"$out/cross-build.log" 2>&1 ||
				fail_case cross-build "scripts/cross-arm64.sh failed (see $out/cross-build.log)"
			echo "$((SECONDS - t1))" >"$out/cross-build-seconds"
		fi
	fi
	# KASAN's shadow and the debug allocators need room; the HAL programs are too slow there.
	((debug)) && mem=1024 && programs=()
	# The unplug run is one program of its own (below). VREX_QEMU_PROGRAMS=0: the tests/kernel
	# suites only (while iterating on the kernel side).
	[[ $front == unplug || ${VREX_QEMU_PROGRAMS:-1} == 0 ]] && programs=()
	for entry in "${programs[@]}"; do
		read -r pname ppath pargs <<<"$entry"
		[[ $ppath == /* ]] || ppath=$repo/$ppath
		if [[ ! -x $ppath ]]; then
			fail_case "$pname" "guest program $ppath not built"
			continue
		fi
		copy_program "$ppath" "/opt/$pname/$(basename "$ppath")" "$root" "$machine"
		rc=$?
		case $rc in
		0)
			echo "$pname|/opt/$pname/$(basename "$ppath") $pargs" >>"$tests_list"
			mem=768
			;;
		2) fail_case "$pname" "$ppath is built for another machine than $machine" ;;
		*) fail_case "$pname" "$ppath: not an ELF program, or its libraries are missing" ;;
		esac
	done

	if [[ $front == unplug ]]; then
		# The unplug run is this one program (tests/qemu), with the host driving QMP.
		if $cc -static -O2 -Wall -Wextra -pthread -I "$msrc/uapi" -I "$msrc/lib" -I /usr/include/libdrm \
			-I "$src/tests/kernel" -o "$out/tests/vrex_hotunplug" "$src/tests/qemu/vrex_hotunplug.c" \
			"${util_srcs[@]}" >"$out/tests/vrex_hotunplug.log" 2>&1; then
			cp "$out/tests/vrex_hotunplug" "$root/tests/"
			echo "hotunplug|/tests/vrex_hotunplug" >"$tests_list"
		else
			fail_case compile-vrex_hotunplug "see $out/tests/vrex_hotunplug.log"
			: >"$tests_list"
		fi
	fi

	local gdest gcmd
	for entry in "${guest_files[@]}"; do
		read -r gdest gcmd <<<"$entry"
		mkdir -p "$root/$(dirname "$gdest")"
		if ! (cd "$repo" && bash -c "$gcmd") >"$root/$gdest" 2>>"$out/guest-files.log"; then
			fail_case "guest-file" "$gdest: '$gcmd' failed (see $out/guest-files.log)"
		fi
	done

	# The fuzzer goes last: the regular tests see a freshly loaded driver. Without --fuzz it runs
	# bounded (VREX_FUZZ_SHORT seconds, VREX_FUZZ_SHORT_CALLS calls) as part of every guest.
	if [[ $front == unplug ]]; then
		:
	elif ((fuzz_seconds > 0)); then
		if [[ -f $root/tests/vrex_fuzz ]]; then
			echo "fuzz|VREX_FUZZ_SECONDS=$fuzz_seconds /tests/vrex_fuzz $fuzz_seconds" >>"$tests_list"
		elif [[ ! -f $src/tests/kernel/vrex_fuzz.c ]]; then
			fail_case fuzz "--fuzz given but there is no tests/kernel/vrex_fuzz.c"
		fi
	elif ((debug)) && [[ -f $root/tests/vrex_fuzz ]]; then
		# Concurrent clients on -smp 2: two fuzzers, each with its threads and files.
		cp "$repo/scripts/qemu/fuzz-peers.sh" "$root/tests/fuzz-peers"
		echo "fuzz-peers|sh /tests/fuzz-peers 2 /tests/vrex_fuzz ${VREX_FUZZ_SHORT:-4}" \
			"${VREX_FUZZ_SHORT_CALLS:-40000}" >>"$tests_list"
	elif [[ -f $root/tests/vrex_fuzz ]]; then
		echo "fuzz|/tests/vrex_fuzz ${VREX_FUZZ_SHORT:-4} ${VREX_FUZZ_SHORT_CALLS:-40000}" >>"$tests_list"
	fi

	# Hardware 1.0 (tests/kernel/vrex_hw10_test.c, docs/testing.md "Hardware 1.0 in the guests"):
	# the vrex_sim lines reload vrex_sim.ko as 1.0, the pci lines bind a second, 1.0 function.
	local hw10=0
	[[ $front == sim ]] && hw10=sim
	[[ $front == pci ]] && ((!debug)) && hw10=pci
	cat >"$root/etc/vrex-guest.conf" <<-EOF
		VREX_DEPS="$deps"
		VREX_PARAMS="$params"
		VREX_NODE="$node"
		VREX_SIM_DEVICES=$([[ $front == sim || $front == unplug ]] && echo 1 || echo 0)
		VREX_SIM_MODULE=1
		VREX_HW10=$hw10
		export VREX_EXPECT_SIMULATED=$([[ $front == sim ]] && echo 1 || echo 0)
		VREX_TEST_TIMEOUT=$((test_timeout + fuzz_seconds))
		VREX_KMEMLEAK=$debug
		VREX_HALT=$( ((debug)) && echo reboot || echo poweroff)
	EOF
	(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) >"$out/initrd.cpio.gz"

	# --- boot -----------------------------------------------------------------------------------
	# How long a guest may run is not bounded by a total: under TCG its speed is whatever share of
	# a core the host leaves it (a guest that passed in 181 s at load 5-10 was still in its soak
	# after 240 s at load 27). Init bounds every program (VREX_TEST_TIMEOUT) and prints a marker
	# after each, so a guest that prints nothing for longer than that (tmo) is wedged, and is
	# stopped then. The cap is only a backstop against a guest that never stops printing: every
	# program and suite at its full timeout, plus boot.
	local qemu append tmo=$((guest_timeout + fuzz_seconds)) smp=1 cap
	# The debug kernel: two CPUs for real concurrency, and time for KASAN and lockdep under TCG.
	((debug)) && smp=2 tmo=$((2 * tmo))
	cap=$((($(wc -l <"$tests_list") + 2) * (test_timeout + fuzz_seconds) + tmo))
	local -a qargs=(-accel tcg -smp "$smp" -m "$mem" -nographic -no-reboot -kernel "$VMLINUZ"
		-initrd "$out/initrd.cpio.gz" -pidfile "$out/qemu.pid")
	# The soft-lockup detector measures the guest's CPU against the host's clock: a TCG guest the
	# host leaves without a core for 20 s (its default) reports "BUG: soft lockup" at boot with no
	# vrex code on the stack (dt-5.10-arm64 and dt-6.12-arm64 at load 18-20, session 8). At its
	# maximum threshold (60: a report after 120 s) a CPU that really spins is still reported.
	append="panic=-1 quiet loglevel=4 rdinit=/init watchdog_thresh=60"
	if [[ $machine == X86-64 ]]; then
		qemu='qemu-system-x86_64'
		# Under TCG on a busy host the IO-APIC timer check misfires ("IO-APIC + timer doesn't
		# work!" panic at boot, seen on 6.1 and 6.12 at -smp 1 and 2): QEMU's timer is known
		# good, skip the check.
		append="console=ttyS0 $append no_timer_check"
	else
		qemu='qemu-system-aarch64'
		append="console=ttyAMA0 $append"
		qargs+=(-M virt -cpu cortex-a57)
	fi
	case $front in
	pci | unplug)
		# q35: PCIe root port 1 holds the V-Rex function (a hot-plug slot); intel-iommu
		# translates its DMA (caching-mode off: TCG needs no shadowing).
		# The debug kernel has no ACPI, hence no intel-iommu: its DMA is direct.
		qemu=$qemu_model_dir/bin/qemu-system-x86_64
		qargs+=(-M q35 -vga none -parallel none -net none -L /usr/share/seabios -L /usr/share/qemu)
		((debug)) || qargs+=(-device "intel-iommu,intremap=off")
		qargs+=(-device pcie-root-port,id=rp1,chassis=1,slot=1
			-device vrex-pci,id=vrex0,bus=rp1,banks=16,bank-size-kb=4096,test-hooks=on)
		# A hardware 1.0 function beside it, told apart by its 2 MiB of banks (init.sh hw10_pci_fn).
		[[ $hw10 == pci ]] && qargs+=(-device pcie-root-port,id=rp2,chassis=2,slot=2
			-device vrex-pci,id=vrex10,bus=rp2,banks=2,bank-size-kb=1024,hw-version=1.0)
		((debug)) || append+=" intel_iommu=on iommu.strict=1"
		[[ $front == unplug ]] && qargs+=(-qmp "unix:$out/qmp.sock,server=on,wait=off")
		# The root port's slot belongs to native PCIe hot-plug (pciehp), not to q35's ACPI
		# hot-plug, for the unplug run (device_del through pciehp) and on the debug kernel, which
		# has no ACPI: under ACPI hot-plug QEMU never sets the slot's Presence Detect State for a
		# function present at boot, so pciehp finds the slot empty and powers it off, and the
		# function's BARs then read 0 ("no V-Rex 1.x at the register window").
		if [[ $front == unplug ]] || ((debug)); then
			qargs+=(-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off)
		fi
		;;
	dt)
		# virt: the engine on the platform bus, its banks a 64 MiB carve-out at the top of the
		# guest's RAM (0x40000000 + mem MiB); QEMU writes the DT node and the reserved-memory.
		# Its DMA goes through the SMMUv3 as stream 0xf8 (iommus = <&smmu 0xf8>; see
		# qemu/hw/vrex/vrex-mmio.c for why a stream ID of the root PCI bus).
		qemu=$qemu_model_dir/bin/qemu-system-aarch64
		local carve=$((0x40000000 + (mem - 64) * 1024 * 1024))
		# The two DT lines cover both kinds of carve-out vrex_of.c handles: 6.12 one in the
		# linear map (struct pages, dma_map_page(), dma-buf export), 5.10 - the base of the
		# RK3588 and Orin BSPs, whose carve-outs are no-map - a no-map one (dma_map_resource(),
		# write-combined, no export).
		local nomap=off
		[[ $target == 5.10-* ]] && nomap=on
		# -net none: virt's default NIC (virtio-net-pci) is not built into this QEMU.
		qargs+=(-machine iommu=smmuv3 -net none
			-device "vrex-mmio,banks=16,bank-size-kb=4096,test-hooks=on,carveout-base=$carve,carveout-size=$((64 << 20)),carveout-no-map=$nomap,iommu-sid=248")
		;;
	esac
	local t0=$SECONDS hp_pid=
	: >"$out/serial.log"
	if [[ $front == unplug ]]; then
		python3 "$repo/scripts/qemu/hotplug.py" "$out/serial.log" "$out/qmp.sock" vrex0 rp1 \
			>"$out/hotplug.log" 2>&1 &
		hp_pid=$!
	fi
	# Unbuffered: the hot-plug driver follows the log while the guest runs (and the silence
	# watch below sees it grow).
	rm -f "$out/qemu.pid"
	timeout -k 5 "$cap" "$qemu" "${qargs[@]}" -append "$append" </dev/null 2>&1 |
		stdbuf -o0 tr -d '\r' >"$out/serial.log" &
	local guest=$! size=-1 now quiet_since=$SECONDS stopped=
	while kill -0 "$guest" 2>/dev/null; do
		sleep 2
		now=$(stat -c %s "$out/serial.log")
		if [[ $now != "$size" ]]; then
			size=$now quiet_since=$SECONDS
		elif ((SECONDS - quiet_since >= tmo)) && [[ -s $out/qemu.pid ]]; then
			stopped="silent for ${tmo}s"
			kill -TERM "$(cat "$out/qemu.pid")" 2>/dev/null
			break
		fi
	done
	wait "$guest"
	echo "$((SECONDS - t0))" >"$out/boot-seconds"
	((SECONDS - t0 >= cap)) && stopped="still running after the ${cap}s cap"
	if [[ -n $hp_pid ]]; then
		wait "$hp_pid" || fail_case hotplug "the QMP hot-plug driver failed (see $out/hotplug.log)"
		grep -q DEVICE_DELETED "$out/hotplug.log" ||
			fail_case device_del "QEMU never reported DEVICE_DELETED (see $out/hotplug.log)"
	fi

	# --- results --------------------------------------------------------------------------------
	local log=$out/serial.log line verdict detail
	sed -n '/^@@VREX DMESG-BEGIN/,/^@@VREX DMESG-END/p' "$log" | sed '1d;$d' >"$out/dmesg.txt"
	while read -r _ _ name verdict detail; do
		echo "$verdict $name $detail" >>"$cases"
	done < <(grep -a '^@@VREX CASE ' "$log")
	# failed_names: the GoogleTest cases a program reported failing, so that a failure printed by
	# make test (which keeps only the summary's lines) says which case it was.
	local p f in_test= failed_names=
	while IFS= read -r line; do
		case $line in
		"@@VREX BEGIN "*)
			in_test=${line#@@VREX BEGIN }
			p='' f='' failed_names=''
			;;
		"@@VREX END "*)
			rc=${line##*rc=}
			if [[ -n $p ]]; then
				((f == 0 && rc != 0)) && f=1
				echo "COUNT $in_test $p $f rc=$rc${failed_names:+ failing:$failed_names}" >>"$cases"
			elif ((rc == 0)); then
				echo "PASS $in_test rc=0" >>"$cases"
			else
				echo "FAIL $in_test rc=$rc" >>"$cases"
			fi
			in_test=
			;;
		*)
			[[ -n $in_test ]] || continue
			if [[ $line =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
				p=${BASH_REMATCH[1]} f=${BASH_REMATCH[2]}
			elif [[ $line =~ ^\[\ \ PASSED\ \ \]\ ([0-9]+)\ test ]]; then
				# GoogleTest: "[  PASSED  ] N tests." and "[  FAILED  ] M tests, listed below:"
				p=${BASH_REMATCH[1]} f=${f:-0}
			elif [[ $line =~ ^\[\ \ FAILED\ \ \]\ ([0-9]+)\ tests?,\ listed ]]; then
				f=${BASH_REMATCH[1]} p=${p:-0}
			elif [[ $line =~ ^\[\ \ FAILED\ \ \]\ ([A-Za-z_][^ ,]*) && " $failed_names " != *" ${BASH_REMATCH[1]} "* ]]; then
				failed_names+=" ${BASH_REMATCH[1]}"
			fi
			;;
		esac
	done < <(grep -a -v '^\[ *[0-9]' "$log" | sed 's/\x1b\[[0-9;]*m//g')
	if [[ -n $in_test ]]; then
		fail_case "$in_test" "did not finish (guest died or timed out)"
	fi
	grep -aq '^@@VREX DONE' "$log" ||
		fail_case guest "no completion marker: panic or hang${stopped:+ (stopped: $stopped)} (see $log)"

	# The device model refuses a revision it does not simulate (the 1.0 one booted above).
	if [[ $hw10 == pci ]]; then
		local refusal
		refusal=$(timeout 30 "$qemu" -M q35 -accel tcg -display none -vga none -parallel none -net none \
			-serial none -monitor none -L /usr/share/seabios -L /usr/share/qemu -S \
			-device vrex-pci,hw-version=2.0 </dev/null 2>&1)
		if [[ $refusal == *'vrex: hw-version=2.0 is not a revision the model simulates (valid: 1.0, 1.1)'* ]]; then
			echo "PASS hw10-qemu-refused -device vrex-pci,hw-version=2.0 refused" >>"$cases"
		else
			fail_case hw10-qemu-refused "QEMU took hw-version=2.0 or said something else: ${refusal:0:200}"
		fi
	fi

	# The device model's lines check the hardware half the suites cannot see from user space.
	if [[ $front != sim ]]; then
		local d=$out/dmesg.txt
		# The probe's summary line ("V-Rex 1.0: 16 banks ..."; vrex_sim's says "(simulated)"
		# before the colon), not any line naming V-Rex: a failed probe's "no V-Rex 1.x at the
		# register window" once passed this check.
		local bound=0
		if grep -qE '\] V-Rex 1\.[0-9]+: [0-9]+ banks' "$d"; then
			bound=1
			echo "PASS bound driver bound the device model (not vrex_sim)" >>"$cases"
		elif [[ $front != unplug ]]; then
			fail_case bound "no V-Rex probe line for the device model in $d"
		fi
		# Only a device that bound can have found its staging window.
		if grep -q 'lookups go one by one' "$d"; then
			fail_case staging "batching is off: the driver found no staging window ($d)"
		elif ((bound)); then
			echo "PASS staging lookup batches staged in the DMA staging window" >>"$cases"
		else
			# Without a probe of the device model there is nothing the absence above proves.
			fail_case staging "the device model never probed: no staging window to check ($d)"
		fi
		if [[ $front == pci || $front == unplug ]] && ((!debug)); then
			# intel-iommu on, and the V-Rex function (10ee:5652) in an IOMMU group.
			local bdf
			bdf=$(grep -oE 'pci [0-9a-f:.]+: \[10ee:5652\]' "$d" | head -n 1 | awk '{print $2}')
			bdf=${bdf%:}
			if grep -q 'DMAR: Intel(R) Virtualization Technology for Directed I/O' "$d" &&
				grep -qE "pci ${bdf:-none}.*Adding to iommu group" "$d"; then
				echo "PASS iommu the function's DMA goes through intel-iommu" >>"$cases"
			else
				fail_case iommu "intel-iommu not active for the V-Rex function ($d)"
			fi
		elif [[ $front == dt ]]; then
			# The carve-out kind this line asked QEMU's node for (above) is the one vrex_of.c mapped.
			local kind=linear-map
			[[ $nomap == on ]] && kind=no-map
			if grep -qE "vrex [^ ]+: banks in a $kind carve-out at" "$d"; then
				echo "PASS carveout banks in a $kind carve-out, mapped through the DMA API" >>"$cases"
			else
				fail_case carveout "vrex_of.c did not report banks in a $kind carve-out ($d)"
			fi
			# The SMMUv3 probed, and the engine's platform device is in an IOMMU group.
			if grep -q 'arm-smmu-v3 .*: ias ' "$d" &&
				grep -qE '[0-9a-f]+\.vrex: Adding to iommu group' "$d"; then
				echo "PASS iommu the engine's DMA goes through the SMMUv3" >>"$cases"
			else
				fail_case iommu "SMMUv3 not active for the V-Rex engine ($d)"
			fi
		fi
	fi
}

# A compile test against a prepared kernel tree (no image to boot): W=1, any compiler warning fails.
# The tree is unpacked once into $VREX_CACHE/kernels/<target>/<archive checksum>/.
compile_kernel() { # target, e.g. 5.15-arm64
	local target=$1 out=$out_root/compile-$1 t0=$SECONDS
	local trees tree archive sum kroot
	rm -rf "$out"
	mkdir -p "$out"
	case $target in
	5.15-arm64) tree=linux-headers-5.15.215-arm64 ;;
	esac
	# ../shared/kernels next to the checkout (or next to its parent: worktrees under wt/).
	for trees in ${VREX_KERNEL_TREES:-$repo/../shared/kernels $repo/../../shared/kernels}; do
		[[ -f $trees/$tree.tar.xz ]] && break
	done
	archive=$trees/$tree.tar.xz
	if [[ ! -f $archive ]]; then
		echo "compile $target W=1: SKIPPED (no $tree.tar.xz in ../shared/kernels or" \
			"../../shared/kernels; set VREX_KERNEL_TREES)"
		return
	fi
	local cases=0 ok=0 detail
	sum=$(sha256sum "$archive" | cut -c1-16)
	kroot=${VREX_CACHE:-/var/cache/vrex}/kernels/$target/$sum
	if [[ -f $trees/SHA256SUMS ]] && ! (cd "$trees" && grep " $tree.tar.xz\$" SHA256SUMS |
		sha256sum -c --quiet) >"$out/unpack.log" 2>&1; then
		detail="$archive does not match $trees/SHA256SUMS"
	elif [[ ! -f $kroot/.vrex-unpacked ]] && ! {
		rm -rf "$kroot" && mkdir -p "$kroot" && tar -xJf "$archive" -C "$kroot" &&
			touch "$kroot/.vrex-unpacked"
	} >>"$out/unpack.log" 2>&1; then
		detail="could not unpack $archive (see $out/unpack.log)"
	else
		local msrc=$out/src
		mkdir -p "$msrc"
		cp -a "$src/kernel" "$src/lib" "$src/uapi" "$msrc/"
		[[ -f $config ]] && cp "$config" "$msrc/.config"
		# No Module.symvers in the prepared tree: modpost only warns about unresolved symbols.
		make -C "$kroot/$tree" M="$msrc/kernel" ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- W=1 \
			KBUILD_MODPOST_WARN=1 -j2 modules >"$out/build.log" 2>&1
		local rc=$? nwarn
		nwarn=$(grep -cE '(warning|error):' "$out/build.log")
		if ((rc == 0 && nwarn == 0)) && [[ -f $msrc/kernel/vrex.ko && -f $msrc/kernel/vrex_sim.ko ]]; then
			ok=1
			detail="vrex.ko vrex_sim.ko, 0 warnings"
		else
			detail="rc=$rc, $nwarn warnings/errors (see $out/build.log)"
		fi
	fi
	cases=1
	if ((ok)); then
		echo "compile $target W=1: PASS ($detail) [$((SECONDS - t0))s]"
		total_pass=$((total_pass + cases))
	else
		echo "compile $target W=1: FAIL ($detail) [$((SECONDS - t0))s]"
		grep -E '(warning|error):' "$out/build.log" 2>/dev/null | head -n 10 | sed 's/^/    /'
		total_fail=$((total_fail + cases))
	fi
}

# One line per kernel from its cases file; adds to the global totals.
total_pass=0
total_fail=$guest_build_failed
report_kernel() { # target
	local target=$1 cases=$out_root/$1/cases kind p=0 f=0 verdict name rest a b label
	local parts=() checks=() failures=() shown=$1
	case $target in
	pci-*) kind="pci (QEMU device model, intel-iommu)" shown=${target#pci-} ;;
	debug-pci-*) kind="pci (QEMU device model, no IOMMU)" shown=${target/pci-/} ;;
	unplug-* | debug-unplug-*) kind="pci unplug (QEMU device_del/device_add)" shown=${target/unplug-/} ;;
	dt-*) kind="dt (QEMU device model, virt, SMMUv3)" shown=${target#dt-} ;;
	*-arm64) kind=render ;;
	6.1-* | 5.10-* | debug-*) kind=render ;;
	*) kind=accel ;;
	esac
	while read -r verdict name rest; do
		case $verdict in
		COUNT)
			read -r a b _ <<<"$rest"
			p=$((p + a)) f=$((f + b))
			label=${name#vrex_}
			parts+=("${label%_test} $a/$((a + b))")
			((b)) && failures+=("$name: $b failed ($rest)")
			;;
		PASS)
			p=$((p + 1))
			case $name in
			dmesg) checks+=("dmesg clean") ;;
			rmmod) checks+=("rmmod ok") ;;
			sim-create) checks+=("sim created") ;;
			sim-remove) checks+=("sim removed") ;;
			kmemleak) checks+=("kmemleak clean") ;;
			bound) checks+=("device model bound") ;;
			staging) checks+=("staging by DMA") ;;
			iommu) [[ $target == dt-* ]] && checks+=("smmuv3") || checks+=("intel-iommu") ;;
			carveout) checks+=("$(awk '{ print $4 }' <<<"$rest") carve-out") ;;
			modules | insmod | node) ;;
			*)
				label=${name#vrex_}
				parts+=("${label%_test} ok")
				;;
			esac
			;;
		FAIL)
			f=$((f + 1))
			parts+=("$name FAILED")
			failures+=("$name: $rest")
			;;
		esac
	done <"$cases"
	local summary='' x
	for x in "${parts[@]}" "${checks[@]}"; do summary+=${summary:+, }$x; done
	local secs
	secs=$(cat "$out_root/$target/boot-seconds" 2>/dev/null || echo -)
	[[ -f $out_root/$target/kernel-seconds ]] &&
		secs+="s boot, kernel ready in $(cat "$out_root/$target/kernel-seconds")"
	[[ -f $out_root/$target/cross-build-seconds ]] &&
		secs+="s, cross-build $(cat "$out_root/$target/cross-build-seconds")"
	if ((f == 0 && p > 0)); then
		echo "qemu $shown $kind: PASS ($summary) [${secs}s]"
	else
		echo "qemu $shown $kind: FAIL ($summary) [${secs}s]"
		for x in "${failures[@]}"; do echo "    $x"; done
		((f == 0)) && f=1
	fi
	[[ -f $out_root/$target/notes ]] && sed 's/^/    /' "$out_root/$target/notes"
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
}

# The QEMU device model, for the pci-/dt- lines: built once (cached by content, see the script).
# VREX_QEMU_MODEL_DIR: a folder with bin/qemu-system-* to use instead (e.g. a build tree's).
qemu_model_dir=${VREX_QEMU_MODEL_DIR:-}
if ((!line_run)) && [[ -z $qemu_model_dir && " ${kernels[*]}" =~ [\ -](pci|dt|unplug)- ]]; then
	qb_start=$SECONDS
	qemu_model_dir=$(bash "$repo/scripts/qemu-build.sh" 2>"$out_root/qemu-build.log" | tail -n 1)
	echo "qemu-build: ${qemu_model_dir:-FAILED} (ready in $((SECONDS - qb_start)) s; built in" \
		"$(cat "$qemu_model_dir/build-seconds" 2>/dev/null || echo -) s when cold)"
fi

# --- lines in parallel ---------------------------------------------------------------------------
jobs=${VREX_QEMU_JOBS:-2}
[[ $jobs =~ ^[1-9][0-9]*$ ]] || {
	echo "qemu-test: VREX_QEMU_JOBS takes a positive number" >&2
	exit 2
}
for k in "${kernels[@]}"; do
	[[ " ${all_kernels[*]} " == *" $k "* ]] || {
		echo "qemu-test: unknown kernel $k (${all_kernels[*]})" >&2
		exit 2
	}
done

# CPU seconds of this shell's waited-for children so far (user + system, from `times`). `times` runs
# in this shell with its output to a file: in a command substitution (a fork) it would report zero.
children_cpu() { # file to write the seconds to
	times >"$1"
	awk 'END { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.1f", s }' \
		"$1" >"$1.cpu" && mv "$1.cpu" "$1"
}

# Runs one line in its own process (a background job of this shell).
start_line() { # kernel
	local k=$1
	(
		t0=$SECONDS
		VREX_QEMU_LINE=1 VREX_QEMU_MODEL_DIR=$qemu_model_dir VREX_QEMU_CROSS_BUILD=0 \
			bash "$0" --kernel "$k" ${line_args[@]+"${line_args[@]}"} \
			>"$out_root/$k.out" 2>"$out_root/$k.err"
		rc=$?
		children_cpu "$out_root/$k.time"
		printf '%s\t%s\t%s\n' "$k" "$((SECONDS - t0))" "$(cat "$out_root/$k.time")" >"$out_root/$k.time"
		exit $rc
	) &
}

# A build the lines need, run once as a job of its own beside the lines; prints nothing.
start_prep() { # name command...
	local name=$1
	shift
	(
		t0=$SECONDS
		"$@" >"$out_root/$name.log" 2>&1
		rc=$?
		children_cpu "$out_root/$name.time"
		printf '%s\t%s\t%s\n' "$name" "$((SECONDS - t0))" "$(cat "$out_root/$name.time")" >"$out_root/$name.time"
		exit $rc
	) &
	prep_pid[$name]=$!
}

((line_run)) || rm -f "$out_root/times.tsv"
if ((!line_run && jobs > 1 && ${#kernels[@]} > 1)); then
	shopt -s extglob
	# The arm64 lines first (foreign CPU, more programs), the device-model lines, the rest; the debug
	# lines last and alone: -smp 2 under KASAN and lockdep needs both cores (sharing them made its
	# suites hit their timeouts under load). Their kernel is built beforehand as a job of its own
	# (-j2, beside the -smp 1 lines), and so is the arm64 lines' cross build, which they wait for.
	queue=()
	for pass in '+([0-9.])-arm64' '@(pci|dt|unplug)-*' '!(debug-*)' 'debug-*'; do
		for k in "${kernels[@]}"; do
			# shellcheck disable=SC2053 # the pass is a pattern
			[[ $k == $pass && " ${queue[*]} " != *" $k "* ]] && queue+=("$k")
		done
	done
	rm -f "$out_root"/*.time
	declare -A prep_pid=() prep_rc=()
	running=0
	if [[ ${VREX_QEMU_PROGRAMS:-1} != 0 && ${VREX_QEMU_CROSS_BUILD:-1} != 0 &&
		" ${kernels[*]}" =~ \ (dt-)?[0-9.]+-arm64 ]]; then
		start_prep cross-build bash "$repo/scripts/cross-arm64.sh"
		running=$((running + 1))
	fi
	if [[ " ${kernels[*]}" == *" debug-"* ]]; then
		start_prep kernel-debug bash "$repo/scripts/kernel-debug.sh"
		running=$((running + 1))
	fi
	reap_one() {
		local pid rc name
		wait -n -p pid
		rc=$?
		running=$((running - 1))
		for name in "${!prep_pid[@]}"; do
			[[ $pid == "${prep_pid[$name]}" ]] && prep_rc[$name]=$rc
		done
		return 0
	}
	# The next line in the queue's order that can start: an arm64 line only once the cross build
	# has ended (the amd64 lines run beside it meanwhile, instead of the whole queue waiting), a
	# debug line only when every other line has started.
	pending=("${queue[@]}")
	while ((${#pending[@]})); do
		while ((running >= jobs)); do reap_one; done
		pick=-1
		for i in "${!pending[@]}"; do
			k=${pending[i]}
			[[ -n ${prep_pid[cross-build]:-} && -z ${prep_rc[cross-build]:-} &&
				$k == @(dt-|)+([0-9.])-arm64 ]] && continue
			[[ $k == debug-* ]] && ((i > 0)) && continue
			pick=$i
			break
		done
		# Only arm64 lines left, and the cross build still running: wait for it (or a line).
		((pick < 0)) && reap_one && continue
		k=${pending[pick]}
		pending=("${pending[@]:0:pick}" "${pending[@]:pick+1}")
		[[ $k == debug-* ]] && while ((running > 0)); do reap_one; done
		start_line "$k"
		running=$((running + 1))
		[[ $k == debug-* ]] && reap_one
	done
	while ((running > 0)); do reap_one; done
	for name in "${!prep_pid[@]}"; do
		echo "$name: $([[ ${prep_rc[$name]} == 0 ]] && echo ok || echo FAILED) in" \
			"$(cut -f2 "$out_root/$name.time" 2>/dev/null || echo -) s (log $out_root/$name.log)"
		# A failed kernel build fails the debug line itself; a failed cross build counts here.
		if [[ $name == cross-build && ${prep_rc[$name]} != 0 ]]; then
			total_fail=$((total_fail + 1))
			tail -n 10 "$out_root/$name.log" | sed 's/^/    /'
		fi
	done
	# The lines' own results, in the order asked for; their summaries summed.
	for k in "${kernels[@]}"; do
		summary=$(grep -E '^qemu: [0-9]+ passed, [0-9]+ failed$' "$out_root/$k.out" 2>/dev/null | tail -n 1)
		grep -vE '^qemu: [0-9]+ passed, [0-9]+ failed$' "$out_root/$k.out" 2>/dev/null
		if [[ $summary =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
			total_pass=$((total_pass + BASH_REMATCH[1]))
			total_fail=$((total_fail + BASH_REMATCH[2]))
		else
			echo "qemu $k: FAIL (the line ended without a summary; see $out_root/$k.err)"
			tail -n 5 "$out_root/$k.err" 2>/dev/null | sed 's/^/    /'
			total_fail=$((total_fail + 1))
		fi
		# A line's own complaints (e.g. waiting for a lock) stay visible.
		[[ -s $out_root/$k.err ]] && grep -E '^qemu-test: ' "$out_root/$k.err" | sed 's/^/    /' >&2
	done
	cat "$out_root"/*.time >"$out_root/times.tsv" 2>/dev/null
	echo "qemu: $total_pass passed, $total_fail failed"
	((total_fail == 0))
	exit
fi

for k in "${kernels[@]}"; do
	case " ${all_kernels[*]} " in
	*" $k "*) ;;
	*)
		echo "qemu-test: unknown kernel $k (${all_kernels[*]})" >&2
		exit 2
		;;
	esac
	if [[ $k == compile-* ]]; then
		compile_kernel "${k#compile-}"
		continue
	fi
	run_kernel "$k"
	report_kernel "$k"
done
echo "qemu: $total_pass passed, $total_fail failed"
((total_fail == 0))
