#!/bin/busybox sh
# /init of the QEMU test guests built by scripts/qemu-test.sh. It loads vrex.ko and vrex_sim.ko,
# creates the simulated devices through configfs, checks the device node, runs the test programs,
# removes the devices, unloads the modules, scans the kernel log and powers off. Every result
# is printed on the serial console as a line starting with "@@VREX " for the host to parse:
#   @@VREX CASE <name> PASS|FAIL [detail]     one check done by this script
#   @@VREX BEGIN <test> / @@VREX END <test> rc=<n>   a test program's output lies in between
#   @@VREX DMESG-BEGIN ... @@VREX DMESG-END   the whole kernel log
#   @@VREX DONE                               the script ran to completion
# /etc/vrex-guest.conf (written by the host) sets:
#   VREX_DEPS          modules to modprobe before vrex.ko (drm and what vrex.ko depends on)
#   VREX_PARAMS        vrex.ko insmod parameters
#   VREX_SIM_DEVICES   simulated devices to create (/sys/kernel/config/vrex_sim/simN)
#   VREX_SIM_MODULE    1: load vrex_sim.ko even without devices (suites create their own)
#   VREX_NODE          device node the driver must create (/dev/accel/accel0 or /dev/dri/renderD128)
#   VREX_TEST_TIMEOUT  seconds per test program
#   VREX_KMEMLEAK      1: leaks suspected by kmemleak after rmmod fail the guest (boot-time
#                      suspects are cleared before vrex.ko is loaded)
#   VREX_HALT          poweroff, or reboot for kernels without ACPI (QEMU runs with -no-reboot)
#   VREX_HW10          sim: after the test programs, vrex_sim.ko is reloaded as hardware 1.0
#                      (hw_version=1.0; hw_version=2.0 must be refused) and /tests/vrex_hw10_test
#                      runs again, expecting 1.0 (the vrex_sim lines); pci: the guest has a second
#                      V-Rex function, a 1.0 device model (its BAR2 2 MiB), kept from vrex.ko
#                      (driver_override) until then, when it takes the 1.1 function's place for
#                      the program (the pci lines)
# /etc/vrex-tests holds one "name|command" line per test program.

/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin /proc /sys /dev /tmp /run
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin
# The console is a tty: keep test programs from colouring their output.
export TERM=dumb GTEST_COLOR=no
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# No tmpfs on /tmp: the initramfs root is already writable, and dynamic test programs built in a
# checkout under /tmp (CI clones anywhere) are copied into the image at their host paths.
mount -t tmpfs tmpfs /run

. /etc/vrex-guest.conf

result() { # name ok(0/1) detail
	if [ "$2" = 0 ]; then echo "@@VREX CASE $1 PASS $3"; else echo "@@VREX CASE $1 FAIL $3"; fi
}

echo "@@VREX START $(uname -r)"

kmemleak=/sys/kernel/debug/kmemleak
if [ "${VREX_KMEMLEAK:-0}" = 1 ]; then
	if [ -w $kmemleak ]; then
		# Whatever boot left unreferenced is not ours: report only what appears from here on.
		echo scan >$kmemleak && echo clear >$kmemleak
	else
		result kmemleak 1 "no $kmemleak"
	fi
fi

failed_deps=
for m in $VREX_DEPS; do
	modprobe "$m" || failed_deps="$failed_deps $m"
done
[ -z "$failed_deps" ]
result modules $? "$failed_deps"

# The pci lines' hardware 1.0 function (VREX_HW10=pci): the V-Rex function whose BAR2 (the banks)
# is 2 MiB. Its driver_override keeps vrex.ko off it, so the suites see the 1.1 function alone.
hw10_pci_fn() {
	local d r
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat $d/vendor)" = 0x10ee ] && [ "$(cat $d/device)" = 0x5652 ] || continue
		# shellcheck disable=SC2046 # start end flags
		set -- $(sed -n 3p $d/resource)
		r=$(($2 - $1 + 1))
		[ $r = 2097152 ] && basename $d
	done
}
if [ "${VREX_HW10:-0}" = pci ]; then
	hw10_fn=$(hw10_pci_fn)
	[ -n "$hw10_fn" ] && echo none >/sys/bus/pci/devices/$hw10_fn/driver_override
	result hw10-hold $? "${hw10_fn:-no 1.0 function}"
fi

# shellcheck disable=SC2086 # parameters are words on purpose
msg=$(insmod /vrex.ko $VREX_PARAMS 2>&1)
result insmod $? "$VREX_PARAMS $msg"

# Simulated devices: vrex_sim.ko, one configfs item each; vrex.ko's platform driver binds them.
sims=
if [ "${VREX_SIM_DEVICES:-0}" -gt 0 ] || [ "${VREX_SIM_MODULE:-0}" = 1 ]; then
	cfs=/sys/kernel/config
	mount -t configfs configfs $cfs 2>/dev/null
	msg=$(insmod /vrex_sim.ko 2>&1)
	ok=$?
	i=0
	while [ $ok = 0 ] && [ $i -lt "$VREX_SIM_DEVICES" ]; do
		d=$cfs/vrex_sim/sim$i
		if mkdir $d && echo 1 >$d/enable; then
			sims="$sims $d"
			msg="$msg $(cat $d/dev_name)"
		else
			ok=1
			msg="$msg cannot enable $d"
		fi
		i=$((i + 1))
	done
	result sim-create $ok "$msg"
fi

# Probing may be deferred or asynchronous: give the node a few seconds to appear.
i=0
while [ ! -e "$VREX_NODE" ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -e "$VREX_NODE" ]
result node $? "$VREX_NODE"

while IFS='|' read -r name cmd; do
	[ -n "$name" ] || continue
	echo "@@VREX BEGIN $name"
	# shellcheck disable=SC2086
	timeout -s KILL "$VREX_TEST_TIMEOUT" sh -c "$cmd" </dev/null 2>&1
	echo "@@VREX END $name rc=$?"
done </etc/vrex-tests

# The programs against the 1.0 device: tests/kernel's, then the HAL conformance suite's hardware
# revision tests on the kernel backend when the guest has it (VREX_QEMU_PROGRAMS).
hw10_run() {
	local i=0 hal=/opt/hal_conformance/vrex_hal_conformance_guest
	while [ ! -e "$VREX_NODE" ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	echo "@@VREX BEGIN hw10_1_0"
	timeout -s KILL "$VREX_TEST_TIMEOUT" /tests/vrex_hw10_test 1.0 </dev/null 2>&1
	echo "@@VREX END hw10_1_0 rc=$?"
	[ -x $hal ] || return 0
	echo "@@VREX BEGIN hal_hw10_1_0"
	VREX_EXPECT_HW=1.0 timeout -s KILL "$VREX_TEST_TIMEOUT" $hal --require-backend=kernel \
		'--gtest_filter=Backends/HwRevision.*/kernel' </dev/null 2>&1
	echo "@@VREX END hal_hw10_1_0 rc=$?"
}

# Hardware 1.0: the simulated devices go, vrex_sim.ko comes back as a 1.0 device (vrex.ko stays
# bound to whatever appears), and the 1.0 program runs; the 1.0 device is then removed below as the
# first one would have been.
hw10() {
	local d ok=0 msg
	for d in $sims; do
		rmdir $d || { ok=1 && msg="cannot remove $d"; }
	done
	sims=
	[ $ok = 0 ] && { msg=$(unload vrex_sim) || ok=1; }
	result hw10-unload $ok "$msg"
	[ $ok = 0 ] || return
	# A revision the model does not simulate: refused at load, with a message naming the value.
	if insmod /vrex_sim.ko hw_version=2.0 2>/dev/null; then
		rmmod vrex_sim
		result hw10-param-refused 1 "hw_version=2.0 loaded"
	else
		dmesg | grep -q 'vrex_sim: hw_version=2.0 is not a revision the model simulates (valid: 1.0, 1.1)'
		result hw10-param-refused $? "$(dmesg | grep -m1 'vrex_sim: hw_version=')"
	fi
	msg=$(insmod /vrex_sim.ko hw_version=1.0 2>&1)
	ok=$?
	d=/sys/kernel/config/vrex_sim/sim0
	if [ $ok = 0 ] && mkdir $d && echo 1 >$d/enable; then
		sims=$d
		msg="$msg $(cat $d/dev_name) hw_version=$(cat /sys/module/vrex_sim/parameters/hw_version)"
	else
		ok=1
	fi
	# Read-only once loaded: every device of a load is the same revision.
	echo 1.1 >/sys/module/vrex_sim/parameters/hw_version 2>/dev/null && { ok=1 && msg="$msg parameter writable"; }
	result hw10-sim $ok "$msg"
	hw10_run
}

# The pci lines: the 1.1 function unbound, the 1.0 function bound for the program, then back.
hw10_pci() {
	local drv=/sys/bus/pci/drivers/vrex fn11='' d ok=0
	for d in $drv/0*; do
		[ -e "$d" ] && fn11=$(basename $d)
	done
	if [ -z "$fn11" ] || [ -z "$hw10_fn" ] || ! echo $fn11 >$drv/unbind ||
		! echo vrex >/sys/bus/pci/devices/$hw10_fn/driver_override || ! echo $hw10_fn >$drv/bind; then
		ok=1
	fi
	result hw10-bind $ok "1.0 function ${hw10_fn:-none} in place of ${fn11:-none}"
	hw10_run
	ok=0
	echo $hw10_fn >$drv/unbind && echo none >/sys/bus/pci/devices/$hw10_fn/driver_override &&
		echo $fn11 >$drv/bind || ok=1
	result hw10-rebind $ok "$fn11"
}

# rmmod @1, retried for up to 3 s: the last file references of a test program that just exited
# can still be on their way out (fput is deferred to a work item), holding the module for a moment.
# A reference that is never dropped still fails; the message says how many tries it took.
unload() {
	n=0
	while ! out=$(rmmod "$1" 2>&1); do
		n=$((n + 1))
		[ $n -ge 30 ] && { echo "$out (after $n tries)" && return 1; }
		sleep 0.1
	done
	[ $n = 0 ] || echo "unloaded after $n retries"
}

[ "${VREX_HW10:-0}" = sim ] && [ -x /tests/vrex_hw10_test ] && hw10
[ "${VREX_HW10:-0}" = pci ] && [ -x /tests/vrex_hw10_test ] && hw10_pci

# Devices go away under a bound driver (as on hot unplug), then both modules unload.
if [ -n "$sims" ] || [ "${VREX_SIM_MODULE:-0}" = 1 ]; then
	msg=
	ok=0
	for d in $sims; do
		rmdir $d || { ok=1 && msg="$msg cannot remove $d"; }
	done
	[ $ok = 0 ] && { msg=$(unload vrex_sim) || ok=1; }
	result sim-remove $ok "$msg"
fi
msg=$(unload vrex)
result rmmod $? "$msg"

if [ "${VREX_KMEMLEAK:-0}" = 1 ] && [ -w $kmemleak ]; then
	# kmemleak reports objects older than 5 s only; two scans settle the grey ones.
	sleep 6
	# A kmemleak that disabled itself (e.g. its pool ran out) refuses the scan: that fails too.
	if echo scan >$kmemleak && echo scan >$kmemleak; then
		cat $kmemleak >/tmp/kmemleak.txt
		n=$(grep -c '^unreferenced object' /tmp/kmemleak.txt)
		echo "@@VREX KMEMLEAK-BEGIN"
		head -n 200 /tmp/kmemleak.txt
		echo "@@VREX KMEMLEAK-END"
		[ "$n" = 0 ]
		result kmemleak $? "$n suspected leaks $(grep -m1 -A12 '^unreferenced object' /tmp/kmemleak.txt |
			grep -m1 -E 'vrex|drm' | tr -s ' ')"
	else
		result kmemleak 1 "scan refused: kmemleak is disabled ($(dmesg | grep -m1 'kmemleak:'))"
	fi
fi

# Anything the kernel complained about during the run, including at unload, fails the guest:
# warnings and BUGs (KASAN, UBSAN, sleeping in atomic context, debug objects), lockdep reports
# (WARNING: possible ... locking ..., INFO: ...), oopses, hung tasks, kmemleak's own reports.
dmesg >/tmp/dmesg.txt
bad=$(grep -E 'WARNING|BUG|Oops|Call Trace|INFO: |suspected memory leak|UBSAN|KASAN' /tmp/dmesg.txt |
	head -n 5)
[ -z "$bad" ]
result dmesg $? "$(echo "$bad" | head -n 1)"

echo "@@VREX DMESG-BEGIN"
cat /tmp/dmesg.txt
echo "@@VREX DMESG-END"
echo "@@VREX DONE"
sync
if [ "${VREX_HALT:-poweroff}" = reboot ]; then
	reboot -f
else
	poweroff -f
fi
