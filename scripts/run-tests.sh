#!/usr/bin/env bash
# `make test`: every stage that exists, each logged to build/test-logs/, then one summary line.
# A stage reports its own "N passed, N failed" line (ctest's summary is translated); a stage that
# fails without such a line counts as one failure.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=build/test-logs
mkdir -p "$logs"

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
	local start=$SECONDS
	"$@" >"$log" 2>&1
	local rc=$?
	echo "   ($((SECONDS - start)) s)"
	tail -n 5 "$log" | sed 's/^/   /'
	count_stage "$name" "$log" "$rc"
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

echo
echo "$total_pass passed, $total_fail failed"
((total_fail == 0))
