#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0 OR MIT)
#
# model-test.sh EXT_DIR: pytest of model/ (TF.js converter, decoder, LCP layer over libvrex-hal).
# EXT_DIR holds the _vrexhal extension (build/model). Fetches the encoder package and the footage
# first (both cached under /var/cache/vrex), so the ctest `model.pytest` runs from a fresh clone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ext=${1:?usage: model-test.sh EXT_DIR}
"$root/scripts/fetch-encoder.sh" >/dev/null
"$root/scripts/fetch-footage.sh" >/dev/null
export PYTHONPATH="$ext:$root/model${PYTHONPATH:+:$PYTHONPATH}"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-2}
# Debian's python3: python3-torch and python3-pytest live there, not in a pyenv on PATH.
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$root/model/tests"
