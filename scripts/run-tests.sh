#!/usr/bin/env bash
# `make test`: every stage that exists, each logged to build/test-logs/, then one summary line.
# A stage reports its own "N passed, N failed" line (ctest's summary is translated); a stage that
# fails without such a line counts as one failure.
# Time: a table of wall and CPU seconds per stage at the end, also written to build/test-logs/times.json
# (CPU = user + system of the stage's processes: on a loaded machine wall grows, CPU does not; the
# 1-minute load average at each stage's end is recorded beside them). docs/testing.md has the budget.
# The downloads of later stages (scripts/prefetch.sh) run in the background from the start, while
# the CPU-bound stages compile (VREX_PREFETCH=0: no prefetch). So do, at nice 19, the two long builds
# qemu-test needs (VREX_BACKGROUND_BUILDS=0: none): the debug kernel (scripts/kernel-debug.sh) and,
# when qemu-test's lines include the device model, QEMU (scripts/qemu-build.sh). At nice 19 they take
# the cycles the stages leave idle (single-threaded tests, training, lint's perl, the package stage's
# chroot and guest); when qemu-test starts they are raised to the stages' priority, and qemu-test
# waits for them on the scripts' own locks and finds them cached.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
logs=build/test-logs
mkdir -p "$logs"
rm -f "$logs/times.json" "$logs"/*.pid
t_start=$SECONDS

# Background jobs are detached (not children of this shell: bash would reap them whenever they end and
# add their CPU time to whichever stage runs then), each in a process group of its own (setsid: it
# can be reniced and, if this run is interrupted, stopped as a whole). Each reports its own wall and
# CPU seconds in its log; a lock it holds until it exits tells us when it is done.
detach() { # name nice command...
	local name=$1 nice=$2 fd
	shift 2
	: >"$logs/$name.log"
	exec {fd}>"$logs/$name.lock"
	flock "$fd"
	(setsid nice -n "$nice" "$@" 2>>"$logs/$name.log" </dev/null >/dev/null &
		echo $! >"$logs/$name.pid")
	exec {fd}>&-
	detached+=("$name")
}
detached=()
stop_detached() {
	local name pid
	for name in ${detached[@]+"${detached[@]}"}; do
		pid=$(cat "$logs/$name.pid" 2>/dev/null) && kill -- -"$pid" 2>/dev/null
	done
}
trap stop_detached EXIT

if [[ ${VREX_PREFETCH:-1} != 0 && -f scripts/prefetch.sh ]]; then
	PREFETCH_DETAIL=$logs/prefetch-detail.log detach prefetch 5 bash scripts/prefetch.sh
fi
if [[ ${VREX_BACKGROUND_BUILDS:-1} != 0 && -f scripts/kernel-debug.sh && -f scripts/qemu-test.sh ]]; then
	lines=$(bash scripts/qemu-test.sh --print-kernels 2>/dev/null)
	bg=()
	grep -q '^debug-' <<<"$lines" && bg+=("bash scripts/kernel-debug.sh")
	grep -qE '^(debug-)?(pci|dt|unplug)-' <<<"$lines" && [[ -f scripts/qemu-build.sh ]] && bg+=("bash scripts/qemu-build.sh")
	if ((${#bg[@]})); then
		# shellcheck disable=SC2016 # expanded by the inner shell
		detach background 19 bash -c 't_all=$SECONDS
			for c in "$@"; do
				t0=$SECONDS
				$c >/dev/null
				echo "background: $c rc=$? in $((SECONDS - t0)) s" >&2
			done
			times >"$0.times"
			echo "background: done in $((SECONDS - t_all)) s, $(awk "END { for (i = 1; i <= 2; i++) { split(\$i, a, /[ms]/); s += a[1] * 60 + a[2] } printf \"%.1f\", s }" "$0.times") s CPU" >&2' \
			"$logs/background" "${bg[@]}"
	fi
fi

# CPU seconds (user + system) of this shell's waited-for children so far, into $cpu. `times` runs in
# this shell with its output to a file: in a command substitution (a fork) it would report zero.
cpu=0
cpu_now() {
	times >"$logs/.times"
	cpu=$(awk 'END { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.1f", s }' \
		"$logs/.times")
}
cpu_since() { awk -v a="$1" -v b="$cpu" 'BEGIN { printf "%.1f", b - a }'; }
# One "name wall cpu load rc passed failed" row per stage, for the table and times.json.
timing_rows=()

total_pass=0
total_fail=0
failed_stages=()

# What failed, last in the output: CI keeps only the tail of a run, so the names of failing cases must
# come after the table. The lines that name a failure in each failed stage's log (ctest's list,
# "FAIL ..." cases, GoogleTest's "[  FAILED  ]", TAP's "not ok"), at most 15 per stage.
print_failures() {
	local entry name log
	((${#failed_stages[@]})) || return 0
	echo
	echo "failures:"
	for entry in "${failed_stages[@]}"; do
		read -r name log <<<"$entry"
		echo "  $name ($log):"
		# qemu-test follows a line's FAIL with its failing cases, indented: those are kept too.
		awk '/(^|[^A-Za-z])(FAIL|FAILED|Failed|not ok)([^A-Za-z]|$)|\((Failed|Timeout|SEGFAULT|Subprocess aborted|Child aborted|Not Run)\)|\*\*\*(Failed|Timeout)/ {
				print; detail = /^qemu .*: FAIL \(/; next }
			detail && /^    / { print; next } { detail = 0 }' "$log" |
			grep -avE '(^|[^0-9])0 (tests )?failed' | tail -n 15 | cut -c1-300 | sed 's/^/    /'
	done
}

count_stage() { # name log rc
	local name=$1 log=$2 rc=$3 p=0 f=0 line
	line=$(grep -aE '^([A-Za-z-]+: )?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
	if [[ -n $line ]]; then
		p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')
		f=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')
	elif line=$(grep -aE 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1) && [[ -n $line ]]; then
		f=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
		local n
		n=$(sed -E 's/.* tests failed out of ([0-9]+).*/\1/' <<<"$line")
		p=$((n - f))
	fi
	if ((rc != 0 && f == 0)); then f=1; fi
	((f)) && failed_stages+=("$name $log")
	printf '%-12s %5d passed, %3d failed  (rc=%d, log %s)\n' "$name" "$p" "$f" "$rc" "$log"
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
}

run_stage() { # name command...
	local name=$1
	shift
	local log=$logs/$name.log
	echo "== $name: $*"
	local start=$SECONDS cpu0 used load
	cpu_now
	cpu0=$cpu
	"$@" >"$log" 2>&1
	local rc=$?
	cpu_now
	used=$(cpu_since "$cpu0")
	load=$(cut -d' ' -f1 /proc/loadavg)
	echo "   ($((SECONDS - start)) s, ${used%.*} s CPU)"
	tail -n 5 "$log" | sed 's/^/   /'
	local p0=$total_pass f0=$total_fail
	count_stage "$name" "$log" "$rc"
	timing_rows+=("$name $((SECONDS - start)) $used $load $rc $((total_pass - p0)) $((total_fail - f0))")
}

# The table, and build/test-logs/times.json with the stages, the QEMU lines (build/qemu/times.tsv)
# and the prefetch steps.
print_times() {
	local row name wall used load rc p f json='' sum_wall=$((SECONDS - t_start)) sum_cpu=0
	echo
	printf '%-12s %7s %8s %6s\n' stage wall_s cpu_s load
	for row in "${timing_rows[@]}"; do
		read -r name wall used load rc p f <<<"$row"
		printf '%-12s %7d %8.0f %6s\n' "$name" "$wall" "$used" "$load"
		sum_cpu=$(awk -v a="$sum_cpu" -v b="$used" 'BEGIN { printf "%.1f", a + b }')
		json+="${json:+,}
    {\"name\": \"$name\", \"wall_s\": $wall, \"cpu_s\": $used, \"load1_end\": $load, \"rc\": $rc, \"passed\": $p, \"failed\": $f}"
	done
	printf '%-12s %7d %8.0f   (%d cores)\n' total "$sum_wall" "$sum_cpu" "$(nproc)"
	local lines='' k w c
	if [[ -f build/qemu/times.tsv ]]; then
		while IFS=$'\t' read -r k w c; do
			lines+="${lines:+,}
    {\"name\": \"$k\", \"wall_s\": $w, \"cpu_s\": $c}"
		done <build/qemu/times.tsv
	fi
	local pre='' step secs
	if [[ -f $logs/prefetch.log ]]; then
		while read -r _ step _ _ secs _; do
			[[ $secs =~ ^[0-9]+$ ]] && pre+="${pre:+,}
    {\"name\": \"$step\", \"wall_s\": $secs}"
		done < <(grep -E '^prefetch: [^ ]+ ok in [0-9]+ s' "$logs/prefetch.log")
	fi
	cat >"$logs/times.json" <<-EOF
		{
		  "date": "$(date -u +%FT%TZ)",
		  "revision": "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)",
		  "cores": $(nproc),
		  "wall_s": $sum_wall,
		  "cpu_s": $sum_cpu,
		  "stages": [$json
		  ],
		  "qemu_lines": [$lines
		  ],
		  "prefetch": [$pre
		  ]
		}
	EOF
	echo "times: $logs/times.json"
}

run_stage unit make --no-print-directory unit
# deb-install before qemu-test: its chroot and its guest leave a core idle, which the background builds
# of qemu-test (above) take.
for stage in sanitize lint deb-install qemu-test fuzz-short soak-short; do
	case $stage in
	sanitize) [[ -f scripts/sanitize.sh ]] && run_stage sanitize bash scripts/sanitize.sh ;;
	lint) [[ -f scripts/lint.sh ]] && run_stage lint bash scripts/lint.sh ;;
	qemu-test)
		# The background builds are qemu-test's now: at the stages' priority.
		[[ " ${detached[*]} " == *" background "* ]] &&
			renice -n "$(nice)" -g "$(cat "$logs/background.pid")" >/dev/null 2>&1
		[[ -f scripts/qemu-test.sh ]] && run_stage qemu-test bash scripts/qemu-test.sh
		;;
	# The amd64 packages (make deb, lintian included) installed into a clean bookworm root and booted.
	# amd64 only: arm64 runs dpkg, DKMS's compile and the consumers' under qemu-user (11-12x the
	# native CPU; estimated +30-50 min cold, +15-25 min warm on idle cores: docs/install.md), which a
	# cold CI run cannot afford; `make deb-install-test` runs both architectures.
	# VREX_TEST_DEB_ARCH="amd64 arm64" adds arm64 (one --arch per word).
	deb-install)
		deb_args=()
		for a in ${VREX_TEST_DEB_ARCH:-amd64}; do deb_args+=(--arch "$a"); done
		[[ -f tests/install/deb-install.sh ]] && run_stage deb-install bash tests/install/deb-install.sh --build "${deb_args[@]}"
		;;
	fuzz-short) [[ -f scripts/fuzz.sh ]] && run_stage fuzz-short bash scripts/fuzz.sh short ;;
	soak-short) [[ -f scripts/soak.sh ]] && run_stage soak-short bash scripts/soak.sh short ;;
	esac
done

# The detached jobs: long done in a normal run; one row each ("done in N s, C s CPU").
for name in ${detached[@]+"${detached[@]}"}; do
	flock "$logs/$name.lock" true
	grep -E 'FAILED|rc=[1-9]' "$logs/$name.log" | sed 's/^/   /'
	read -r w c < <(sed -nE 's/^[a-z]+: done in ([0-9]+) s, ([0-9.]+) s CPU$/\1 \2/p' "$logs/$name.log" | tail -n 1)
	timing_rows+=("$name ${w:-0} ${c:-0} $(cut -d' ' -f1 /proc/loadavg) 0 0 0")
done
detached=()
print_times
print_failures
echo
echo "$total_pass passed, $total_fail failed"
((total_fail == 0))
