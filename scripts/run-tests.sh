#!/usr/bin/env bash
# `make test`: every stage that exists, each logged to build/test-logs/, then one summary line.
# A stage reports its own "N passed, N failed" line (ctest's summary is translated); a stage that
# fails without such a line counts as one failure.
# Time: a table of wall and CPU seconds per stage at the end, also written to build/test-logs/times.json
# (CPU = user + system of the stage's processes: on a loaded machine wall grows, CPU does not; the
# 1-minute load average at each stage's end is recorded beside them). docs/testing.md has the budget.
# The downloads of later stages (scripts/prefetch.sh) run in the background from the start, while
# the CPU-bound stages compile (VREX_PREFETCH=0: no prefetch).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
logs=build/test-logs
mkdir -p "$logs"
rm -f "$logs/times.json"
t_start=$SECONDS

prefetch_pid=
if [[ ${VREX_PREFETCH:-1} != 0 && -f scripts/prefetch.sh ]]; then
	: >"$logs/prefetch.log"
	PREFETCH_DETAIL=$logs/prefetch-detail.log nice -n 5 bash scripts/prefetch.sh "$logs/prefetch.log" &
	prefetch_pid=$!
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
	local row name wall used load rc p f json='' sum_wall=$((SECONDS - t_start)) sum_cpu
	cpu_now
	sum_cpu=$cpu
	echo
	printf '%-12s %7s %8s %6s\n' stage wall_s cpu_s load
	for row in "${timing_rows[@]}"; do
		read -r name wall used load rc p f <<<"$row"
		printf '%-12s %7d %8.0f %6s\n' "$name" "$wall" "$used" "$load"
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
		while read -r _ step _ _ _ secs _; do
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
for stage in sanitize lint qemu-test deb-install fuzz-short soak-short; do
	case $stage in
	sanitize) [[ -f scripts/sanitize.sh ]] && run_stage sanitize bash scripts/sanitize.sh ;;
	lint) [[ -f scripts/lint.sh ]] && run_stage lint bash scripts/lint.sh ;;
	qemu-test) [[ -f scripts/qemu-test.sh ]] && run_stage qemu-test bash scripts/qemu-test.sh ;;
	# The amd64 packages (make deb, lintian included) installed into a clean bookworm root and booted.
	deb-install) [[ -f tests/install/deb-install.sh ]] && run_stage deb-install bash tests/install/deb-install.sh --build ;;
	fuzz-short) [[ -f scripts/fuzz.sh ]] && run_stage fuzz-short bash scripts/fuzz.sh short ;;
	soak-short) [[ -f scripts/soak.sh ]] && run_stage soak-short bash scripts/soak.sh short ;;
	esac
done

if [[ -n $prefetch_pid ]]; then
	# Long done in a normal run; its CPU is counted as a row of its own.
	cpu_now
	cpu0=$cpu
	wait "$prefetch_pid"
	cpu_now
	grep -q FAILED "$logs/prefetch.log" && sed -n 's/^/   /; /FAILED/p' "$logs/prefetch.log"
	pre_wall=$(sed -nE 's/^prefetch: done in ([0-9]+) s$/\1/p' "$logs/prefetch.log" | tail -n 1)
	timing_rows+=("prefetch ${pre_wall:-0} $(cpu_since "$cpu0") $(cut -d' ' -f1 /proc/loadavg) 0 0 0")
fi
print_times
echo
echo "$total_pass passed, $total_fail failed"
((total_fail == 0))
