#!/usr/bin/env bash
# vrexctl CLI tests: one case per subcommand and per error path, run by ctest as
#   vrexctl_cli_test.sh VREXCTL CASE WORKDIR
# Exit 0 = pass, 1 = fail, 77 = skipped. Every case uses the emulation explicitly, so results do not
# depend on a vrex device being present. Clips are synthetic (ffmpeg lavfi), no footage needed.
set -euo pipefail

VREXCTL=$1
CASE=$2
WORK=$3/$CASE
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$WORK"

fail() {
	echo "FAIL [$CASE]: $*" >&2
	exit 1
}

# Runs vrexctl, captures stdout/stderr into out/err, checks the exit code.
expect_rc() {
	local want=$1 rc=0
	shift
	"$VREXCTL" "$@" >out 2>err || rc=$?
	if [[ $rc -ne $want ]]; then
		echo "--- stdout" >&2
		cat out >&2
		echo "--- stderr" >&2
		cat err >&2
		fail "vrexctl $* exited $rc, expected $want"
	fi
}

grep_out() { grep -q -- "$1" out || fail "stdout lacks '$1'"; }
grep_err() { grep -q -- "$1" err || fail "stderr lacks '$1'"; }

# JSON on stdout: python3 checks the listed expressions (one per argument, over `j`).
json_check() {
	python3 - "$@" <<'PY' || fail "JSON check failed"
import json, sys
j = json.load(open("out"))
for expr in sys.argv[1:]:
    if not eval(expr):
        sys.exit(f"not true: {expr}\n{json.dumps(j)[:2000]}")
PY
}

make_clip() {  # make_clip FILE CODEC FRAMES
	command -v ffmpeg >/dev/null || { echo "SKIP: ffmpeg missing"; exit 77; }
	ffmpeg -nostdin -v error -y -f lavfi -i "testsrc=size=320x240:rate=10" -frames:v "$3" -c:v "$2" \
		-pix_fmt yuv420p "$1" || fail "ffmpeg could not make $1"
}

E=(--backend emu)

case "$CASE" in
list)
	expect_rc 0 "${E[@]}" list
	grep_out "emulated   available"
	grep_out "auto selects:"
	expect_rc 0 --json list
	json_check "any(b['name'] == 'emulated' and b['available'] for b in j['backends'])" "j['auto'] != ''"
	;;
info)
	expect_rc 0 "${E[@]}" --emu-banks 8 --emu-bank-mib 32 info
	grep_out "banks          8 x 32 MiB"
	grep_out "capabilities   fcc"
	expect_rc 0 "${E[@]}" --json info
	json_check "j['backend'] == 'emulated'" "j['bank_count'] == 16" "j['caps']['shie']" "j['bank_size'] == 64 << 20"
	;;
regs)
	expect_rc 0 "${E[@]}" regs
	grep -q '^0x000  ID .*0x56524558.*"VREX"' out || fail "ID register line"
	grep_out "CAPS"
	grep_out "FCC|SHIE|POOLED"
	grep_out "BANK_KB(15)"
	grep_out "GROUP_POOL(7)"
	grep_out "free"
	expect_rc 0 "${E[@]}" --json regs
	json_check "next(r for r in j['registers'] if r['name'] == 'BANK_COUNT')['value'] == 16"
	;;
banks)
	expect_rc 0 "${E[@]}" --emu-banks 4 banks
	[[ $(grep -c '^bank ' out) -eq 4 ]] || fail "expected 4 bank lines"
	grep_out "legend"
	expect_rc 0 "${E[@]}" --json banks
	json_check "len(j['banks']) == 16" "all(b['kv_bytes'] == 0 for b in j['banks'])"
	;;
stats)
	expect_rc 0 "${E[@]}" stats
	grep_out "lookups"
	grep_out "live_blocks"
	# The ReSV unit's counters (0x800 block) next to the SHIE ones.
	grep -qE '^resv\.selects +0$' out || fail "resv.selects line"
	grep -qE '^resv\.heads +16$' out || fail "resv.heads line"
	grep_out "resv.bytes_selected"
	;;
stats-json)
	expect_rc 0 "${E[@]}" stats --format json
	json_check "j['lookups'] == 0" "'evictions' in j" "j['backend'] == 'emulated'"
	expect_rc 0 "${E[@]}" --json stats
	json_check "'live_entries' in j" "j['resv']['heads'] == 16" "j['resv']['keys'] == 0" \
		"j['resv']['max_tokens'] == 4096" "set(j['resv']) >= {'tokens_scanned', 'tokens_selected', 'ranges', 'heads_in_use'}"
	;;
stats-prometheus)
	expect_rc 0 "${E[@]}" stats --format prometheus
	grep_out '^# TYPE vrex_lookups_total counter$'
	grep_out '^vrex_lookups_total{backend="emulated"} 0$'
	grep_out '^vrex_bank_kv_bytes{backend="emulated",bank="15"} 0$'
	# Every sample line is NAME{LABELS} VALUE, every family has HELP and TYPE.
	if grep -v '^#' out | grep -vqE '^[a-z_]+\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\} [0-9]+$'; then
		fail "malformed sample line"
	fi
	[[ $(grep -c '^# HELP' out) -eq $(grep -c '^# TYPE' out) ]] || fail "HELP/TYPE mismatch"
	;;
monitor)
	expect_rc 0 "${E[@]}" monitor --count 3 --interval 20
	[[ $(grep -c '^sample ' out) -eq 3 ]] || fail "expected 3 samples"
	expect_rc 0 "${E[@]}" --json monitor --count 2 --interval 10
	[[ $(wc -l <out) -eq 2 ]] || fail "expected 2 NDJSON lines"
	tail -n1 out >last && mv last out
	json_check "j['sample'] == 1" "len(j['bank_kv_bytes']) == 16"
	;;
selftest)
	expect_rc 0 "${E[@]}" selftest
	grep_out "selftest on emulated: passed"
	! grep -q '^FAIL' out || fail "a check failed"
	[[ $(grep -c '^PASS' out) -ge 20 ]] || fail "fewer than 20 checks passed"
	# A zombie threshold of 3 changes what the lifecycle check waits for, and it still passes.
	expect_rc 0 "${E[@]}" --emu-zombie-frames 3 selftest
	grep_out "zombie released after 4 cold frames"
	;;
selftest-json)
	expect_rc 0 "${E[@]}" --json selftest
	json_check "j['passed']" "all(c['result'] == 'pass' for c in j['checks'])" "len(j['checks']) >= 20"
	;;
bench)
	expect_rc 0 "${E[@]}" bench --frames 20 --width 640 --height 360
	grep_out "^FCC"
	grep_out "^lookup"
	expect_rc 0 "${E[@]}" --json bench --frames 10 --width 320 --height 240
	json_check "j['fcc_frames_per_s'] > 0" "j['lookups_per_s'] > 0" "j['alloc_blocks_per_s'] > 0" "j['frames'] == 10"
	;;
run)
	make_clip clip.avi mpeg4 30
	expect_rc 0 "${E[@]}" run clip.avi --max-frames 20 --no-progress --no-control
	grep_out "streams            1 (20 frames"
	grep_out "accounting         resident bytes = live blocks"
	;;
run-json)
	make_clip clip.avi mpeg4 30
	expect_rc 0 "${E[@]}" --json run clip.avi --streams 3 --stream-offset 5 --max-frames 12 --tokens-per-region 8
	json_check "j['frames'] == 36" "j['streams'] == 3" "0 <= j['reuse_rate'] <= 1" "0 <= j['approx_hit_rate'] <= 1" \
		"j['resident_bytes_peak'] > 0" "j['baseline_bytes_peak'] == 36 * 16 * 8 * 57344" \
		"0 < j['resident_bytes_ratio'] <= 1" "0 < j['managed_blocks_ratio'] <= 1" "'psnr_reused_p5_db' in j" \
		"j['latency_us_p50'] > 0" "j['latency_us_p99'] >= j['latency_us_p50']" "j['backend'] == 'emulated'" \
		"j['accounting_mismatches'] == 0" "j['model']['block_bytes'] == 8 * 57344" \
		"j['headline']['run']['streams'] == 3" "j['headline']['radius0']['radius'] == 0" \
		"j['headline']['single_stream']['streams'] == 1" "j['headline']['single_stream']['frames'] == 12" \
		"j['headline']['single_stream_radius0']['radius'] == 0" \
		"0 < j['headline']['run']['same_window']['resident_bytes_ratio'] <= 1.5" \
		"j['headline']['run']['device_memory']['held_bytes_peak'] >= j['resident_bytes_peak']" \
		"j['headline']['run']['device_memory']['baseline_pool_bytes'] >= j['window_baseline']['bytes_peak']" \
		"0 <= j['headline']['run']['out_of_group']['rate'] <= 1" \
		"j['headline']['run']['out_of_group']['allocations'] == j['counts']['allocations']" \
		"j['headline']['run']['append_only_ratio'] == j['resident_bytes_ratio']" \
		"sum(s['regions'] for s in j['stream_info']) == j['counts']['regions']"
	# Controls can be switched off; a one-stream run is its own single-stream figure.
	expect_rc 0 "${E[@]}" --json run clip.avi --max-frames 8 --no-control
	json_check "j['headline']['radius0'] is None" "j['headline']['single_stream'] == j['headline']['run']"
	;;
run-headline)
	# The human summary leads with the same-window comparison and the radius-0 control; the
	# append-only ratio is a footnote at the end.
	make_clip a.avi mpeg4 20
	make_clip b.mp4 libx264 20
	expect_rc 0 "${E[@]}" run a.avi b.mp4 --max-frames 15 --no-progress
	head -n1 out | grep -q "same 6-frame window" || fail "first line is not the same-window comparison: $(head -n1 out)"
	sed -n 2p out | grep -q "radius-0 control" || fail "no radius-0 control column"
	for k in "resident KV, 2 streams / baseline" "resident KV, stream 0 alone / baseline" \
		"device memory held (slabs) / baseline pool" "placed outside the frame's bank group"; do
		head -n8 out | grep -qF "$k" || fail "headline lacks '$k'"
	done
	[[ $(grep -n "append-only" out | cut -d: -f1) -eq $(wc -l <out) ]] || fail "append-only is not the last line"
	;;
run-report)
	make_clip clip.avi mpeg4 40
	expect_rc 0 "${E[@]}" run clip.avi clip.avi --max-frames 30 --report rep --no-progress
	grep_out "report             .*rep/index.html"
	for f in index.html memory.svg blocks.svg reuse.svg banks.svg summary.json; do
		[[ -s rep/$f ]] || fail "rep/$f missing"
	done
	ls rep/frame-s0-f*.png >/dev/null 2>&1 || fail "no annotated frame PNG"
	head -c 8 "$(ls rep/frame-s0-f*.png | head -1)" | od -An -tx1 | grep -q "89 50 4e 47 0d 0a 1a 0a" || fail "not a PNG"
	python3 - <<'PY' || fail "HTML structure"
from html.parser import HTMLParser
import json, sys, xml.dom.minidom
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.ids = set(); self.tags = {}; self.stack = []; self.text = ""
    def handle_starttag(self, tag, attrs):
        a = dict(attrs); self.tags[tag] = self.tags.get(tag, 0) + 1
        if "id" in a: self.ids.add(a["id"])
        if tag == "image" and not a.get("href", "").startswith("data:image/png;base64,"): sys.exit("image not inline")
    def handle_data(self, d): self.text += d
p = P(); p.feed(open("rep/index.html").read())
for sec in ["headline", "summary", "footnote", "inputs", "memory", "reuse", "banks", "frames", "credits"]:
    if sec not in p.ids: sys.exit(f"section {sec} missing")
# The report leads with the same-window comparison and its radius-0 control; the append-only ratio
# is only a footnote after it.
t = p.text
for needle in ["same-window baseline", "radius-0 control", "device memory held", "baseline pool",
               "outside the frame's bank group", "stream 0 alone"]:
    if needle not in t: sys.exit(f"headline lacks {needle}")
if t.index("Same-window comparison") > t.index("Details"): sys.exit("headline is not first")
if t.index("append-only") < t.index("Footnote"): sys.exit("append-only ratio before the footnote")
if p.tags.get("svg", 0) < 6: sys.exit("expected >= 6 inline SVGs (4 plots + 2 frames)")
if p.tags.get("figure", 0) < 2: sys.exit("expected annotated frames")
for needle in ["reuse rate", "append-only", "PSNR", "University of Reading", "opencv-doc"]:
    if needle not in p.text: sys.exit(f"text lacks {needle}")
for f in ["memory", "blocks", "reuse", "banks"]:
    xml.dom.minidom.parse(f"rep/{f}.svg")  # well-formed SVG
s = json.load(open("rep/summary.json"))
if s["streams"] != 2 or s["frames"] != 60: sys.exit("summary.json")
h = s["headline"]
if h["run"]["streams"] != 2 or h["single_stream"]["streams"] != 1 or h["radius0"]["radius"] != 0:
    sys.exit("summary.json headline")
PY
	;;
run-h264)
	make_clip clip.mp4 libx264 25
	expect_rc 0 "${E[@]}" --json run clip.mp4 --max-frames 25 --no-control
	json_check "j['frames'] == 25" "j['stream_info'][0]['codec'] == 'h264'"
	;;
serve)
	command -v curl >/dev/null || { echo "SKIP: curl missing"; exit 77; }
	"$VREXCTL" "${E[@]}" serve --listen 127.0.0.1:0 >serve.out 2>serve.err &
	pid=$!
	trap 'kill $pid 2>/dev/null || true' EXIT
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\)/metrics$|\1|p' serve.out)
		[[ -n $port ]] && break
		sleep 0.05
	done
	[[ -n $port ]] || fail "serve did not print its port: $(cat serve.out serve.err)"
	curl -sf "http://127.0.0.1:$port/metrics" >out || fail "GET /metrics failed"
	grep_out '^# TYPE vrex_frames_total counter$'
	grep_out '^vrex_live_blocks{backend="emulated"} 0$'
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")
	[[ $code == 404 ]] || fail "expected 404, got $code"
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/metrics")
	[[ $code == 405 ]] || fail "expected 405, got $code"
	curl -sf "http://127.0.0.1:$port/metrics" >/dev/null || fail "second scrape failed"
	kill -TERM $pid
	rc=0
	wait $pid || rc=$?
	trap - EXIT
	[[ $rc -eq 0 ]] || fail "serve exited $rc on SIGTERM"
	;;
help)
	expect_rc 0 --help
	for s in list info regs banks stats monitor selftest bench run serve; do grep_out "  $s"; done
	expect_rc 0 run --help
	grep_out "--max-frames"
	grep_out "--report"
	;;
err-no-subcommand)
	expect_rc 2
	grep_err "subcommand"
	;;
err-unknown-subcommand)
	expect_rc 2 frobnicate
	;;
err-bad-option-value)
	expect_rc 2 "${E[@]}" --emu-banks 0 info
	expect_rc 2 "${E[@]}" monitor --interval abc
	expect_rc 2 "${E[@]}" stats --format xml
	expect_rc 2 "${E[@]}" run x.avi --radius 40
	;;
err-unknown-backend)
	expect_rc 2 --backend gpu info
	grep_err "unknown backend 'gpu'"
	;;
err-no-kernel-device)
	"$VREXCTL" --json list >out
	if python3 -c "import json,sys; sys.exit(0 if json.load(open('out'))['backends'][0]['available'] else 1)"; then
		echo "SKIP: a vrex kernel device is present"
		exit 77
	fi
	expect_rc 3 --backend kernel info
	grep_err "no vrex device"
	expect_rc 3 --backend kernel stats --format prometheus
	;;
err-missing-video)
	expect_rc 4 "${E[@]}" run /nonexistent/clip.mp4
	grep_err "no such file"
	;;
err-not-a-video)
	echo "not a video" >notes.txt
	expect_rc 4 "${E[@]}" run notes.txt
	grep_err "notes.txt: not a video file"
	head -c 4096 /dev/urandom >noise.mp4
	expect_rc 4 "${E[@]}" run noise.mp4
	grep_err "noise.mp4: not a video file"
	;;
err-directory)
	mkdir clips
	expect_rc 4 "${E[@]}" run clips
	grep_err "clips: is a directory, not a video file"
	;;
err-frame-too-small)
	# The FCC needs at least 64x64 pixels: a 48x48 clip is refused up front, naming the minimum.
	command -v ffmpeg >/dev/null || { echo "SKIP: ffmpeg missing"; exit 77; }
	ffmpeg -nostdin -v error -y -f lavfi -i "testsrc=size=48x48:rate=10" -frames:v 5 -c:v mpeg4 small.avi
	expect_rc 4 "${E[@]}" run small.avi
	grep_err "small.avi: frames are 48x48, below the FCC minimum of 64x64 pixels"
	# 64x64 itself is accepted.
	ffmpeg -nostdin -v error -y -f lavfi -i "testsrc=size=64x64:rate=10" -frames:v 5 -c:v mpeg4 min.avi
	expect_rc 0 "${E[@]}" run min.avi --no-progress --no-control
	;;
global-flags-after-subcommand)
	make_clip clip.avi mpeg4 10
	expect_rc 0 run --json clip.avi --backend emu --max-frames 5 --no-control
	json_check "j['frames'] == 5" "j['backend'] == 'emulated'"
	expect_rc 0 info --backend emu --emu-banks 8 --json
	json_check "j['bank_count'] == 8"
	expect_rc 0 stats --json --backend emu
	json_check "'live_entries' in j"
	;;
err-json)
	# With --json (before or after the subcommand) errors are one JSON object on stdout.
	expect_rc 4 --json --backend emu run /nonexistent/clip.mp4
	json_check "j['error']['exit_code'] == 4" "j['error']['kind'] == 'bad_input'" "'no such file' in j['error']['message']"
	mkdir d
	expect_rc 4 run d --json --backend emu
	json_check "j['error']['exit_code'] == 4" "'is a directory' in j['error']['message']"
	echo "not a video" >notes.txt
	expect_rc 4 run --backend emu notes.txt --json
	json_check "j['error']['kind'] == 'bad_input'" "'not a video file' in j['error']['message']"
	expect_rc 2 --backend emu run clip.avi --radius 40 --json
	json_check "j['error']['exit_code'] == 2" "j['error']['kind'] == 'usage'"
	expect_rc 2 --json frobnicate
	json_check "j['error']['kind'] == 'usage'"
	expect_rc 2 --json --backend gpu info
	json_check "'unknown backend' in j['error']['message']"
	# Without --json stdout stays empty on errors.
	expect_rc 4 --backend emu run d
	[[ ! -s out ]] || fail "stdout not empty without --json"
	;;
err-streams-with-two-videos)
	make_clip clip.avi mpeg4 5
	expect_rc 2 "${E[@]}" run clip.avi clip.avi --streams 2
	grep_err "exactly one VIDEO"
	;;
run-model-builtin)
	# The CLI side of --model builtin: the Python runner is spawned, its keys are merged, the report
	# gets a model section. Random weights (VREX_MODEL_WEIGHTS=random): the model itself is tested
	# by model/tests; training it here would cost minutes.
	make_clip clip.avi mpeg4 6
	export VREX_MODEL_WEIGHTS=random
	expect_rc 0 "${E[@]}" --json run clip.avi --model builtin --max-frames 6 \
		--report model-report
	python3 - "$WORK/out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
acc = j["task"]["accuracy"]
for d in (acc["exact"], acc["vrex"], *acc["baselines"].values()):
    assert 0 <= d["ci95"][0] <= d["mean"] <= d["ci95"][1] <= 1, d
assert set(acc["baselines"]) == {"copy", "most_frequent", "input_blind"}
assert j["exact_cache_tokens_peak"] == 6 * 64
assert {"exact_peak", "vrex_device_peak", "vrex_total_peak"} <= set(j["kv_bytes"])
assert {"flops_ratio", "time_ratio", "flops_floor"} <= set(j["prefill"])
assert "control_radius0" in j and "pixel_reuse_rate" in j, j.keys()
assert j["args"]["path"] == "cpp", j["args"]  # the C++ path by default
assert 0 < j["emulation"]["ratio_to_exact_step"]["mean"] < 1
PY
	grep -q 'id="model"' model-report/index.html || fail "no model section in the report"
	# The Python path stays selectable and reports the same task accuracy (same decisions).
	cp "$WORK/out" cpp.json
	expect_rc 0 "${E[@]}" --json run clip.avi --model builtin --max-frames 6 --model-path python
	python3 - cpp.json "$WORK/out" <<'PY'
import json, sys
c, p = (json.load(open(f)) for f in sys.argv[1:3])
assert p["args"]["path"] == "python", p["args"]
# The C++ path also runs vrex_resv (questions read ReSV's selection: no Python twin).
ca = dict(c["task"]["accuracy"])
assert "vrex_resv" in ca and "vrex_resv" not in p["task"]["accuracy"], ca.keys()
del ca["vrex_resv"]
assert ca == p["task"]["accuracy"] and c["reuse_rate"] == p["reuse_rate"]
PY
	;;
err-model-unknown)
	make_clip clip.avi mpeg4 5
	expect_rc 2 "${E[@]}" run clip.avi --model gpt
	;;
err-model-with-streams)
	make_clip clip.avi mpeg4 5
	expect_rc 2 "${E[@]}" run clip.avi --model builtin --streams 2
	grep_err "not --streams"
	;;
err-bad-listen)
	expect_rc 2 "${E[@]}" serve --listen nonsense
	expect_rc 2 "${E[@]}" serve --listen 127.0.0.1:99999
	expect_rc 2 "${E[@]}" serve --listen not-an-ip:80
	;;
err-bad-dtype)
	make_clip clip.avi mpeg4 5
	expect_rc 2 "${E[@]}" run clip.avi --dtype fp8
	grep_err "unknown dtype"
	;;
report-screenshot)
	# The report as a browser renders it: scripts/deps.sh installs Debian's chromium, so a machine
	# set up by `make deps` runs this case (it skips only where chromium was never installed). The
	# screenshot stays in WORKDIR as a test artefact; a probe page (the report plus a script) checks
	# in the same browser that every reused-region label fits inside its box: one 13 px line used
	# to run past the 80 px regions of a 320x240 clip, under the next label.
	chrome=$(command -v chromium || command -v chromium-browser || true)
	[[ -n $chrome ]] || { echo "SKIP: chromium not installed (scripts/deps.sh installs it)"; exit 77; }
	make_clip clip.avi mpeg4 30
	expect_rc 0 "${E[@]}" run clip.avi --max-frames 30 --report rep --no-progress
	flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars)
	timeout 90 "$chrome" "${flags[@]}" --window-size=1100,3000 \
		--screenshot="$WORK/report.png" "file://$WORK/rep/index.html" >/dev/null 2>&1 || fail "chromium failed"
	[[ -s report.png ]] || fail "no screenshot"
	cp rep/index.html rep/probe.html
	cat >>rep/probe.html <<'JS'
<script>
(() => {
  let n = 0;
  const bad = [];
  for (const g of document.querySelectorAll("g.reused")) {
    n++;
    const r = g.querySelector("rect").getBBox(), t = g.querySelector("text").getBBox();
    if (t.x < r.x - 0.5 || t.x + t.width > r.x + r.width + 0.5 || t.y < r.y - 0.5 ||
        t.y + t.height > r.y + r.height + 0.5)
      bad.push(`${g.textContent}: text ${t.width.toFixed(1)}x${t.height.toFixed(1)} in ${r.width}x${r.height}`);
  }
  const p = document.createElement("pre");
  p.id = "label-fit";
  p.textContent = `LABELS ${n} OVERFLOW ${bad.length} ${bad.slice(0, 3).join("; ")}`;
  document.body.appendChild(p);
})();
</script>
JS
	timeout 90 "$chrome" "${flags[@]}" --dump-dom "file://$WORK/rep/probe.html" 2>/dev/null >probe.dom ||
		fail "chromium --dump-dom failed"
	fit=$(grep -o 'LABELS [0-9]* OVERFLOW [0-9]*[^<]*' probe.dom) || fail "probe script did not run"
	echo "$fit"
	[[ $fit =~ ^LABELS\ ([0-9]+)\ OVERFLOW\ 0 ]] && ((BASH_REMATCH[1] > 0)) || fail "labels overflow: $fit"
	echo "screenshot: $WORK/report.png"
	;;
*)
	fail "unknown case"
	;;
esac
echo "PASS [$CASE]"
