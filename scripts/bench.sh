#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# bench.sh full|quick — `make bench` / `make bench-quick` (after `make build`).
#
# Runs every benchmark binary build/bench/vrex_bench_* with the shared contract (bench/bench_options.h):
#   --mode=full|quick --out=build/bench/parts/<binary>.jsonl   (+ real footage through VREX_VTEST_*)
# then merges the parts into build/bench/results.json and regenerates the Markdown report
# (bench/report.py): docs/benchmarks.md for a full run, build/bench/benchmarks-quick.md for a quick one
# (reduced sizes are a check, not the figures the repository publishes). A new benchmark only has to be a vrex_bench_* target that follows the contract.
# Exit status: non-zero when a benchmark fails (e.g. a result set differs from FAISS's) or the
# footage cannot be fetched; a missed performance target is reported, not an error.
# vrex_bench_kernel is a guest program: it runs in the 6.12-amd64 QEMU guest (scripts/qemu-test.sh
# --kernel 6.12-amd64 --programs <list from tests/kernel/bench-programs.txt>) and its records are taken
# from the guest's serial log ("@@VREX-BENCH <json>" lines); never on the host.
# Environment: BUILD (default build), VREX_BENCH_ONLY=<binary> runs just one binary,
# VREX_BENCH_QEMU=0 skips the guest step (reported, not an error).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-full}
case $mode in
full | quick) ;;
*)
	echo "usage: $0 full|quick" >&2
	exit 2
	;;
esac

build=${BUILD:-build}
out=$build/bench
parts=$out/parts
bindir=$build/bench

shopt -s nullglob
bins=("$bindir"/vrex_bench_*)
if ((${#bins[@]} == 0)); then
	echo "bench: no vrex_bench_* binaries in $bindir (configure with -DVREX_BENCH=ON and build first)" >&2
	exit 1
fi

# Real footage for the clustered codes and the fingerprint frames (cached outside the repo).
footage=$(bash scripts/fetch-footage.sh --gray) || {
	echo "bench: cannot fetch the footage (scripts/fetch-footage.sh); the clustered benchmarks need it" >&2
	exit 1
}
eval "$(grep -E '^VREX_VTEST_(AVI|GRAY|WIDTH|HEIGHT)=' <<<"$footage")"
export VREX_VTEST_AVI VREX_VTEST_GRAY VREX_VTEST_WIDTH VREX_VTEST_HEIGHT

rm -rf "$parts"
mkdir -p "$parts"
start=$SECONDS
status=0
for bin in "${bins[@]}"; do
	name=$(basename "$bin")
	[[ -x $bin && ! -d $bin ]] || continue
	if [[ -n ${VREX_BENCH_ONLY:-} && $name != "$VREX_BENCH_ONLY" ]]; then continue; fi
	[[ $name == vrex_bench_kernel ]] && continue # guest program: below
	echo "== $name --mode=$mode"
	t0=$SECONDS
	if ! "$bin" --mode="$mode" --out="$parts/$name.jsonl" >"$out/$name.log" 2>&1; then
		echo "bench: $name FAILED (log $out/$name.log)" >&2
		tail -n 20 "$out/$name.log" >&2
		status=1
	fi
	grep -E '^RESULT' "$out/$name.log" | sed 's/^RESULT /   /' || true
	echo "   ($((SECONDS - t0)) s, log $out/$name.log)"
done

# Kernel ioctl path vs the emulation, inside the 6.12-amd64 guest.
kbin=$bindir/vrex_bench_kernel
if [[ -x $kbin && (-z ${VREX_BENCH_ONLY:-} || ${VREX_BENCH_ONLY:-} == vrex_bench_kernel) ]]; then
	if [[ ${VREX_BENCH_QEMU:-1} == 0 ]]; then
		echo "== vrex_bench_kernel: skipped (VREX_BENCH_QEMU=0)"
	else
		echo "== vrex_bench_kernel --mode=$mode (QEMU 6.12-amd64)"
		t0=$SECONDS
		list=$out/bench-programs.txt
		kpath=$(cd "$(dirname "$kbin")" && pwd)/$(basename "$kbin")
		sed -e "s|@BIN@|$kpath|g" -e "s|@MODE@|$mode|g" tests/kernel/bench-programs.txt >"$list"
		serial=build/qemu/6.12-amd64/serial.log
		rm -f "$serial"
		if ! bash scripts/qemu-test.sh --kernel 6.12-amd64 --programs "$list" >"$out/vrex_bench_kernel.log" 2>&1; then
			echo "bench: the 6.12-amd64 guest run reported failures (log $out/vrex_bench_kernel.log)" >&2
			tail -n 5 "$out/vrex_bench_kernel.log" >&2
			status=1
		fi
		if [[ -f $serial ]] && grep -a '^@@VREX-BENCH ' "$serial" | sed 's/^@@VREX-BENCH //' \
			>"$parts/vrex_bench_kernel.jsonl" && [[ -s $parts/vrex_bench_kernel.jsonl ]]; then
			grep -a '^RESULT' "$serial" | sed 's/^RESULT /   /' || true
		else
			rm -f "$parts/vrex_bench_kernel.jsonl"
			echo "bench: no vrex_bench_kernel records in $serial" >&2
			status=1
		fi
		echo "   ($((SECONDS - t0)) s, log $out/vrex_bench_kernel.log, serial $serial)"
	fi
fi

command="make bench"
markdown=docs/benchmarks.md
if [[ $mode == quick ]]; then
	command="make bench-quick"
	markdown=$out/benchmarks-quick.md
fi
python3 bench/report.py --parts "$parts" --results "$out/results.json" --markdown "$markdown" \
	--command "$command" --mode "$mode" --analysis bench/analysis.md \
	--revision "$(git describe --always --dirty 2>/dev/null || echo unknown)" || status=1
echo "bench: $mode run took $((SECONDS - start)) s"
exit "$status"
