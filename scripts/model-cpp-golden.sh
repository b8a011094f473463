#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# model-cpp-golden.sh EXT_DIR OUT_DIR: the GoogleTest fixture of the C++ LCP layer (model/cpp). Exports
# the decoder (seeded random weights: no training inside make test) to TorchScript and writes golden
# data from the first frames of vtest.avi: exact-KV logits and the Python vrex.enable run's logits.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ext=${1:?usage: model-cpp-golden.sh EXT_DIR OUT_DIR}
out=${2:?usage: model-cpp-golden.sh EXT_DIR OUT_DIR}
"$root/scripts/fetch-encoder.sh" >/dev/null
eval "$("$root/scripts/fetch-footage.sh" | grep '^VREX_VTEST_AVI=')"
export PYTHONPATH="$ext:$root/model${PYTHONPATH:+:$PYTHONPATH}"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
rm -rf "$out"
exec /usr/bin/python3 -m vrex.export --weights random --out "$out" --clip "$VREX_VTEST_AVI" --frames "${VREX_LCP_GOLDEN_FRAMES:-12}"
