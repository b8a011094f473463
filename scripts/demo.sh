#!/usr/bin/env bash
# demo.sh: V-Rex on real footage. `make demo` runs it after `make build`.
#
# 1. fetches vtest.avi from Debian's opencv-doc package into the cache (scripts/fetch-footage.sh;
#    never committed),
# 2. runs `vrexctl run` on it as 4 concurrent streams (replicas 100 frames apart, wrapping) on one
#    device: the kernel device when vrex.ko has one, else the in-process emulation sized 16 banks x
#    64 MiB (the 4-stream live KV window of the default 7B-class geometry needs about 250-350 MiB),
# 3. writes the HTML report and prints its path and the headline figures,
# 4. runs the builtin video transformer (docs/model.md; `make model` trains it, else the first run does,
#    cached) on the first VREX_DEMO_MODEL_FRAMES (default 100) frames with `vrexctl run --model
#    builtin`: exact KV vs vrex reuse vs the controls, report with a "model" section in $out/model.
#
# Environment: BUILD (default build), VREX_DEMO_OUT (default $BUILD/demo-report), VREX_BACKEND
# (auto|kernel|emu, default auto), VREX_DEMO_ARGS (extra vrexctl run arguments).
# Exit status: vrexctl's (docs/vrexctl.md); 1 if the footage cannot be fetched.
set -euo pipefail

cd "$(dirname "$0")/.."
build=${BUILD:-build}
vrexctl=$build/tools/vrexctl
out=${VREX_DEMO_OUT:-$build/demo-report}
backend=${VREX_BACKEND:-auto}

[[ -x $vrexctl ]] || { echo "demo: $vrexctl not built (run make build)" >&2; exit 1; }

footage=$(bash scripts/fetch-footage.sh) || { echo "demo: could not fetch the footage" >&2; exit 1; }
clip=$(sed -n 's/^VREX_VTEST_AVI=//p' <<<"$footage")

echo "demo: $("$vrexctl" list | tail -n1)"
echo "demo: vrexctl run --streams 4 $clip"
# shellcheck disable=SC2086 # VREX_DEMO_ARGS is a list of words
"$vrexctl" --backend "$backend" --emu-banks 16 --emu-bank-mib 64 run --streams 4 --stream-offset 100 \
	--report "$out" ${VREX_DEMO_ARGS:-} "$clip"

python3 - "$out/summary.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
w = j["window_baseline"]
def ok(c): return "met" if c else "NOT met"
print()
print(f"V-Rex on vtest.avi: {j['streams']} streams, {j['frames']} frames, backend {j['backend']}")
print(f"  reuse rate            {100*j['reuse_rate']:.1f} %  (target >= 50 %: {ok(j['reuse_rate'] >= 0.5)})")
print(f"  reused-region PSNR p5 {j['psnr_reused_p5_db']:.2f} dB (target >= 30 dB: {ok(j['psnr_reused_p5_db'] >= 30)})")
print(f"  resident KV           {j['resident_bytes_ratio']:.4f}x the append-only paged baseline "
      f"(target <= 0.5x: {ok(j['resident_bytes_ratio'] <= 0.5)}); {w['resident_bytes_ratio']:.3f}x a paged "
      f"baseline with the same window")
print(f"  managed blocks        {j['managed_blocks_ratio']:.4f}x the append-only baseline "
      f"(target <= 0.3x: {ok(j['managed_blocks_ratio'] <= 0.3)}); {w['managed_blocks_ratio']:.3f}x same window")
print(f"  approximate hits      {100*j['approx_hit_rate']:.1f} % of similarity lookups")
print(f"  HAL latency per frame p50 {j['latency_us_p50']:.0f} us, p99 {j['latency_us_p99']:.0f} us")
print(f"  FCC                   {j['fcc_1080p_fps_equiv']:.0f} frames/s at 1080p equivalent "
      f"(target >= 1000: {ok(j['fcc_1080p_fps_equiv'] >= 1000)})")
PY
echo "report: $(cd "$out" && pwd)/index.html"

frames=${VREX_DEMO_MODEL_FRAMES:-100}
echo
echo "demo: vrexctl run --model builtin --max-frames $frames $clip"
"$vrexctl" --backend emu --json run --model builtin --max-frames "$frames" --report "$out/model" "$clip" \
	>"$out/model.json"
python3 - "$out/model.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
def ok(c): return "met" if c else "NOT met"
r0, nf = j["control_radius0"], j["control_no_fcc"]
print(f"builtin model on {j['frames']} frames x {j['streams']} stream(s), window {j['window_frames']} frames")
print(f"  KL mean {j['kl_mean']:.4f} nats (target <= 0.05: {ok(j['kl_mean'] <= 0.05)}), p99 {j['kl_p99']:.4f}")
print(f"  top-1 agreement {100*j['top1_agreement']:.2f} % (target >= 95 %: {ok(j['top1_agreement'] >= 0.95)})")
print(f"  prefill {j['prefill_ms_ratio']:.3f}x exact (target <= 0.4x: {ok(j['prefill_ms_ratio'] <= 0.4)})")
print(f"  resident KV {j['resident_bytes_ratio_window']:.3f}x the same-window baseline "
      f"(target <= 0.5x: {ok(j['resident_bytes_ratio_window'] <= 0.5)}), reuse {100*j['reuse_rate']:.1f} %")
lost = 1 - r0["reuse_rate"] / j["reuse_rate"] if j["reuse_rate"] else 0
print(f"  radius-0 control: reuse {100*r0['reuse_rate']:.1f} % ({100*lost:.0f} % less), KL {r0['kl_mean']:.4f} "
      f"(target: >= 20 % less reuse or >= 2x KL: {ok(lost >= 0.2 or r0['kl_mean'] >= 2 * j['kl_mean'])})")
print(f"  no-FCC control:   reuse {100*nf['reuse_rate']:.1f} %, KL {nf['kl_mean']:.4f}")
PY
echo "report: $(cd "$out/model" && pwd)/index.html"
