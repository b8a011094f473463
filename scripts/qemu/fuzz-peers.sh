#!/bin/busybox sh
# Concurrent clients in a QEMU guest (scripts/qemu-test.sh, debug kernel):
#
#   fuzz-peers N FUZZER SECONDS MAX_CALLS
#
# runs N copies of tests/kernel/vrex_fuzz at once against the one device, each with its own seed,
# its own threads and files. VREX_FUZZ_PEERS / VREX_FUZZ_BARRIER make each copy wait, once its files
# are closed, until every copy is done before it checks that nothing is left on the device. Prints
# every copy's output, then "fuzz-peers: P passed, F failed" summed over their "fuzz: ..." lines;
# exit status 1 if a copy failed or printed no summary.
n=$1
prog=$2
shift 2
barrier=/tmp/fuzz-peers.barrier
rm -f $barrier
seed=$(date +%s)
i=0
pids=
while [ "$i" -lt "$n" ]; do
	VREX_FUZZ_PEERS=$n VREX_FUZZ_BARRIER=$barrier "$prog" "$@" $((seed + i)) >/tmp/fuzz-peer.$i 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
status=0
for p in $pids; do
	wait "$p" || status=1
done
passed=0
failed=0
i=0
while [ "$i" -lt "$n" ]; do
	echo "--- fuzzer $i"
	cat /tmp/fuzz-peer.$i
	line=$(grep -E '^fuzz: [0-9]+ passed, [0-9]+ failed' /tmp/fuzz-peer.$i | tail -n 1)
	if [ -z "$line" ]; then
		failed=$((failed + 1))
	else
		set -- $line
		passed=$((passed + $2))
		failed=$((failed + $4))
	fi
	i=$((i + 1))
done
echo "fuzz-peers: $passed passed, $failed failed"
[ "$status" = 0 ] && [ "$failed" = 0 ]
