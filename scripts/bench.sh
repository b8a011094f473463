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
# Environment: BUILD (default build), VREX_BENCH_ONLY=<binary> runs just one binary.
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
eval "$(grep -E '^VREX_VTEST_(GRAY|WIDTH|HEIGHT)=' <<<"$footage")"
export VREX_VTEST_GRAY VREX_VTEST_WIDTH VREX_VTEST_HEIGHT

rm -rf "$parts"
mkdir -p "$parts"
start=$SECONDS
status=0
for bin in "${bins[@]}"; do
	name=$(basename "$bin")
	[[ -x $bin && ! -d $bin ]] || continue
	if [[ -n ${VREX_BENCH_ONLY:-} && $name != "$VREX_BENCH_ONLY" ]]; then continue; fi
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
