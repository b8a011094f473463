#!/bin/sh
# init of the guest booted by tests/install/deb-install.sh: a Debian 12 root where the vrex packages
# were installed with dpkg (vrex.ko and vrex_sim.ko built by DKMS). Everything runs as installed:
# modprobe finds the modules through depmod's index, vrexctl and Python come from /usr.
# Each check prints "@@VREX-CHECK PASS|FAIL what" on the console; "@@VREX-GUEST-END" at the end.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8

check() { # what command...
	what=$1
	shift
	if out=$("$@" 2>&1); then
		echo "@@VREX-CHECK PASS $what"
	else
		echo "@@VREX-CHECK FAIL $what: $(echo "$out" | tail -n 5 | tr '\n' ' ')"
	fi
	echo "$out" | sed 's/^/  | /'
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
echo "@@VREX-GUEST-BEGIN $(uname -r)"

check "modprobe vrex_sim (DKMS: $(modinfo -n vrex_sim 2>/dev/null))" modprobe vrex_sim
mount -t configfs none /sys/kernel/config 2>/dev/null
sim=/sys/kernel/config/vrex_sim/sim0
check "configfs device sim0 enabled" sh -c "mkdir $sim && echo 1 >$sim/enable"
# The render node appears when vrex.ko binds the simulated device.
node=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	node=$(ls /dev/accel/accel* /dev/dri/renderD* 2>/dev/null | head -n 1)
	[ -n "$node" ] && break
	sleep 1
done
check "device node ${node:-missing}" test -n "$node"
check "vrexctl list shows the kernel backend with $node" \
	sh -c "vrexctl --json list | python3 -c '
import json, sys
j = json.load(sys.stdin)
k = [b for b in j[\"backends\"] if b[\"name\"] == \"kernel\"][0]
print(j)
assert k[\"available\"] and \"$node\" in k[\"nodes\"] and j[\"auto\"] == \"kernel\", j
'"
check "vrexctl --backend kernel info" vrexctl --backend kernel info
check "python3 -c 'import vrex, _vrexhal'" python3 -c 'import vrex, _vrexhal; assert callable(vrex.enable)'
check "configfs device sim0 removed" sh -c "echo 0 >$sim/enable && rmdir $sim"
check "rmmod vrex_sim vrex" rmmod vrex_sim vrex
if dmesg | grep -E 'WARNING|BUG|Oops|Call Trace' >/tmp/bad; then
	check "kernel log clean" sh -c 'cat /tmp/bad; false'
else
	echo "@@VREX-CHECK PASS kernel log clean"
fi
echo "@@VREX-GUEST-END"
sync
echo o >/proc/sysrq-trigger
sleep 5
