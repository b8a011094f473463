#!/usr/bin/env bash
# prefetch.sh: the downloads of `make test`, fetched ahead in the background while the CPU-bound stages
# (unit, sanitize) run. Every fetcher below caches under $VREX_CACHE (default /var/cache/vrex) and
# locks what it writes, so a stage that needs a file while it is still coming waits for it and then
# finds it cached, and a warm cache makes each step a check of well under a second per item.
#
#   prefetch.sh [LOG]      LOG (default stderr) gets one "prefetch: STEP ok|FAILED in N s" per step,
#                          then "prefetch: done in N s, C s CPU"
#
# A failure here is not a test failure: the stage that needs the file fetches it again and reports.
# In the order the stages need them:
#   footage          unit (model.pytest, the footage suites)      scripts/fetch-footage.sh
#   kernel headers   lint (W=1, sparse), then qemu-test's images   scripts/kheaders.sh --image
#   linux-source-6.1 lint (checkpatch), the debug kernel          scripts/kheaders.sh --fetch
#   arm64 busybox    qemu-test's arm64 guests                     scripts/kheaders.sh --fetch
#   arm64 sysroot    qemu-test's arm64 cross build                scripts/arm64-sysroot.sh
#   QEMU source      qemu-test's device-model lines               scripts/qemu-build.sh --fetch
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if [[ -n ${1:-} ]]; then
	exec 2>>"$1"
fi

step() { # name command...
	local name=$1 t0=$SECONDS rc
	shift
	"$@" >/dev/null 2>>"${PREFETCH_DETAIL:-/dev/null}"
	rc=$?
	echo "prefetch: $name $( ((rc == 0)) && echo ok || echo "FAILED (rc=$rc)") in $((SECONDS - t0)) s" >&2
}

t_all=$SECONDS
step footage bash "$repo/scripts/fetch-footage.sh"
for k in 6.12-amd64 6.1-amd64 6.12-arm64 5.10-amd64 5.10-arm64; do
	step "kernel-$k" bash "$repo/scripts/kheaders.sh" --image "$k"
done
step linux-source-6.1 bash "$repo/scripts/kheaders.sh" --fetch linux-source-6.1 6.1-amd64
step busybox-arm64 bash "$repo/scripts/kheaders.sh" --fetch busybox-static 6.12-arm64
step arm64-sysroot bash "$repo/scripts/arm64-sysroot.sh"
[[ -f $repo/scripts/qemu-build.sh ]] && step qemu-source bash "$repo/scripts/qemu-build.sh" --fetch
# Our CPU seconds (user + system of the steps), from `times` through a file (a fork would report zero).
times >"${TMPDIR:-/tmp}/prefetch.$$.times"
cpu=$(awk 'END { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.1f", s }' \
	"${TMPDIR:-/tmp}/prefetch.$$.times")
rm -f "${TMPDIR:-/tmp}/prefetch.$$.times"
echo "prefetch: done in $((SECONDS - t_all)) s, $cpu s CPU" >&2
