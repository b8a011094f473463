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
# vrex_bench_shie also measures FAISS built for this CPU: bench/faiss-native.sh builds it from Debian's
# source package into /var/cache/vrex/faiss-native-<key> when missing (about 1.5 min at -j2 on the
# shared 2-core machine, so bench-quick builds it too), then the build tree is reconfigured with
# -DVREX_FAISS_NATIVE_DIR and the native module built. If that fails the benchmark still runs and reports
# native FAISS as "not built" (a record and a line on the console).
# A full run publishes bench/results.json, docs/benchmarks.md, bench/analysis.md and the generated block of
# docs/hw/shie.md (all from the same records; ctest -R bench_report checks they agree and that no number
# in them is hand-written).
# Environment: BUILD (default build), VREX_BENCH_ONLY=<binary> runs just one binary (its records replace
# that benchmark's in the existing results, the others stay: report.py --merge),
# VREX_BENCH_QEMU=0 skips the guest step (reported, not an error), VREX_FAISS_NATIVE=0 skips the native
# FAISS build (reported as not built), VREX_BENCH_DIRTY=1 measures a work tree with uncommitted changes.
# The revision is recorded when the run starts (the tree can change during a long run) and a dirty tree is
# refused: published figures must name the code they measured.
set -euo pipefail

# Priority: a timed run is started at a negative nice (`nice -n -10 make bench`, as root) to run ahead of
# the builds that share the machine. With autogroup scheduling (Linux's default for desktops and these
# machines) nice only orders the tasks of one session, and every session gets an equal share of the CPUs,
# so the nice value alone changes nothing against other sessions' jobs. The run therefore moves into a
# session of its own and gives that session's autogroup its own nice value.
if [[ -z ${VREX_BENCH_SESSION:-} && $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || echo 0) == 1 ]] &&
	(($(nice) < 0)); then
	export VREX_BENCH_SESSION=1
	exec setsid --wait bash "$0" "$@"
fi
if [[ -n ${VREX_BENCH_SESSION:-} ]]; then
	echo "$(nice)" >/proc/self/autogroup 2>/dev/null ||
		echo "bench: cannot set the autogroup's nice to $(nice); the run shares the CPUs equally with other sessions" >&2
fi
cd "$(dirname "$0")/.."

mode=${1:-full}
case $mode in
full | quick) ;;
*)
	echo "usage: $0 full|quick" >&2
	exit 2
	;;
esac

revision=$(git describe --always --dirty 2>/dev/null || echo unknown)
if [[ $revision == *-dirty && ${VREX_BENCH_DIRTY:-0} != 1 ]]; then
	echo "bench: the work tree has uncommitted changes ($revision): commit them, or set VREX_BENCH_DIRTY=1" \
		"to measure it anyway (the report then names the revision -dirty)" >&2
	git status --short | head -n 10 >&2
	exit 2
fi

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
eval "$(grep -E '^VREX_(VTEST|TREE)_(AVI|GRAY|WIDTH|HEIGHT)=' <<<"$footage")"
export VREX_VTEST_AVI VREX_VTEST_GRAY VREX_VTEST_WIDTH VREX_VTEST_HEIGHT
export VREX_TREE_AVI VREX_TREE_GRAY VREX_TREE_WIDTH VREX_TREE_HEIGHT

rm -rf "$parts"
mkdir -p "$parts"

# Runnable tasks on the host (/proc/stat procs_running) every 200 ms into $1, until stop_sampler.
sampler=""
start_sampler() {
	: >"$1"
	(while sleep 0.2; do awk '/^procs_running/ {print $2}' /proc/stat; done >>"$1") &
	sampler=$!
}
stop_sampler() {
	[[ -n $sampler ]] || return 0
	kill "$sampler" 2>/dev/null || true
	wait "$sampler" 2>/dev/null || true
	sampler=""
}
trap stop_sampler EXIT
start=$SECONDS
status=0
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
# '<benchmark>: <why>' for each benchmark this run does not measure; the analysis lists them.
skipped=()

# FAISS for this CPU (cached), and the module that loads it into vrex_bench_shie.
if [[ -x $bindir/vrex_bench_shie && (-z ${VREX_BENCH_ONLY:-} || ${VREX_BENCH_ONLY:-} == vrex_bench_shie) ]]; then
	native=""
	cached=1
	if [[ ${VREX_FAISS_NATIVE:-1} == 0 ]]; then
		echo "== native FAISS: not built (VREX_FAISS_NATIVE=0); the SHIE tables report it as not built"
		skipped+=("native FAISS (bench/faiss-native.sh): not built, VREX_FAISS_NATIVE=0")
	else
		bash bench/faiss-native.sh --check >/dev/null 2>&1 || cached=0
		echo "== native FAISS: $( ((cached)) && echo cached || echo 'building (bench/faiss-native.sh)')"
		t0=$SECONDS
		if native=$(bash bench/faiss-native.sh 2>"$out/faiss-native.log" | tail -n 1) && [[ -n $native ]] &&
			cmake -S . -B "$build" -DVREX_FAISS_NATIVE_DIR="$native" >>"$out/faiss-native.log" 2>&1 &&
			cmake --build "$build" --target vrex_faiss_native vrex_bench_shie >>"$out/faiss-native.log" 2>&1; then
			secs=$(cat "$native/build-seconds")
			how="built in this run"
			((cached)) && how="cached; build time measured when it was built"
			printf '{"name": "faiss-native/build: FAISS 1.7.3 (Debian source) objects of the binary indexes, -march=native, -j2", "ours": %s, "baseline": null, "unit": "s", "ratio": null, "target": null, "met": null, "baseline_name": "", "notes": "%s; %s; load average at start %s"}\n' \
				"$secs" "$(basename "$native")" "$how" "$load_start" >"$parts/faiss_native.jsonl"
			echo "   $native (build $secs s, $how; step took $((SECONDS - t0)) s)"
		else
			echo "bench: native FAISS not built (log $out/faiss-native.log); the SHIE tables report it as not built" >&2
			skipped+=("native FAISS (bench/faiss-native.sh): the build failed (log $out/faiss-native.log)")
			tail -n 5 "$out/faiss-native.log" >&2
		fi
	fi
fi
for bin in "${bins[@]}"; do
	name=$(basename "$bin")
	[[ -x $bin && ! -d $bin ]] || continue
	if [[ -n ${VREX_BENCH_ONLY:-} && $name != "$VREX_BENCH_ONLY" ]]; then continue; fi
	[[ $name == vrex_bench_kernel ]] && continue # guest program: below
	echo "== $name --mode=$mode"
	t0=$SECONDS
	# The host's runnable tasks over the whole run, for the records that sample no load of their own
	# (the Python benchmarks; bench/host_load.py).
	samples=$out/$name-host-load.txt
	start_sampler "$samples"
	if ! "$bin" --mode="$mode" --out="$parts/$name.jsonl" >"$out/$name.log" 2>&1; then
		echo "bench: $name FAILED (log $out/$name.log)" >&2
		skipped+=("$name: failed, its records (if any) are partial (log $out/$name.log)")
		tail -n 20 "$out/$name.log" >&2
		status=1
	fi
	stop_sampler
	python3 bench/host_load.py --part "$parts/$name.jsonl" --samples "$samples" \
		--source "host, over the whole $name run" || status=1
	grep -E '^RESULT' "$out/$name.log" | sed 's/^RESULT /   /' || true
	echo "   ($((SECONDS - t0)) s, log $out/$name.log)"
done

# Kernel ioctl path vs the emulation, inside the 6.12-amd64 guest.
kbin=$bindir/vrex_bench_kernel
if [[ -x $kbin && (-z ${VREX_BENCH_ONLY:-} || ${VREX_BENCH_ONLY:-} == vrex_bench_kernel) ]]; then
	if [[ ${VREX_BENCH_QEMU:-1} == 0 ]]; then
		echo "== vrex_bench_kernel: skipped (VREX_BENCH_QEMU=0)"
		skipped+=("vrex_bench_kernel (ioctl path vs emulation in the QEMU 6.12-amd64 guest): skipped, VREX_BENCH_QEMU=0")
	else
		echo "== vrex_bench_kernel --mode=$mode (QEMU 6.12-amd64)"
		t0=$SECONDS
		list=$out/bench-programs.txt
		kpath=$(cd "$(dirname "$kbin")" && pwd)/$(basename "$kbin")
		sed -e "s|@BIN@|$kpath|g" -e "s|@MODE@|$mode|g" tests/kernel/bench-programs.txt >"$list"
		serial=build/qemu/6.12-amd64/serial.log
		rm -f "$serial"
		# The same program's emulated backend on the host: the guest/host ratio of the code both
		# backends share is what TCG costs (bench/guest_records.py derives it).
		host_part=$parts/vrex_bench_kernel-host.jsonl
		rm -f "$host_part"
		"$kbin" --mode="$mode" --emu-only --out="$host_part" >"$out/vrex_bench_kernel-host.log" 2>&1 ||
			echo "bench: vrex_bench_kernel --emu-only on the host failed (log $out/vrex_bench_kernel-host.log)" >&2
		# The guest's clock runs on while the host deschedules QEMU, so the host's load is the one that
		# matters: runnable tasks sampled every 200 ms while the guest runs.
		samples=$out/vrex_bench_kernel-host-load.txt
		start_sampler "$samples"
		if ! bash scripts/qemu-test.sh --kernel 6.12-amd64 --programs "$list" >"$out/vrex_bench_kernel.log" 2>&1; then
			echo "bench: the 6.12-amd64 guest run reported failures (log $out/vrex_bench_kernel.log)" >&2
			tail -n 5 "$out/vrex_bench_kernel.log" >&2
			status=1
		fi
		stop_sampler
		if [[ -f $serial ]] && python3 bench/guest_records.py --serial "$serial" --host-load "$samples" \
			--host-part "$host_part" --out "$parts/vrex_bench_kernel.jsonl" && [[ -s $parts/vrex_bench_kernel.jsonl ]]; then
			grep -a '^RESULT' "$serial" | sed 's/^RESULT /   /' || true
		else
			rm -f "$parts/vrex_bench_kernel.jsonl"
			echo "bench: no vrex_bench_kernel records in $serial" >&2
			skipped+=("vrex_bench_kernel (QEMU 6.12-amd64 guest): the guest run produced no records (log $out/vrex_bench_kernel.log)")
			status=1
		fi
		echo "   ($((SECONDS - t0)) s, log $out/vrex_bench_kernel.log, serial $serial)"
	fi
fi

command="make bench"
results=bench/results.json
markdown=docs/benchmarks.md
analysis=bench/analysis.md
shie_doc=docs/hw/shie.md
if [[ $mode == quick ]]; then # a check, not the published figures
	command="make bench-quick"
	results=$out/results-quick.json
	markdown=$out/benchmarks-quick.md
	analysis=$out/analysis-quick.md
	shie_doc=$out/shie-scan-quick.md
	rm -f "$shie_doc"
fi
merge=()
if [[ -n ${VREX_BENCH_ONLY:-} ]]; then
	merge=(--merge)
	command="VREX_BENCH_ONLY=$VREX_BENCH_ONLY $command"
fi
python3 bench/report.py --parts "$parts" --results "$results" --markdown "$markdown" --analysis "$analysis" \
	--shie-doc "$shie_doc" ${merge[@]+"${merge[@]}"} \
	--command "$command" --mode "$mode" --load-start "$load_start" --load-end "$(cut -d' ' -f1-3 /proc/loadavg)" \
	--duration-s "$((SECONDS - start))" --revision "$revision" \
	${skipped[@]+"${skipped[@]/#/--skipped=}"} || status=1
cp "$results" "$out/results.json" 2>/dev/null || true
echo "bench: $mode run took $((SECONDS - start)) s"
exit "$status"
