// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// The reference model's C headers, with C linkage, for the C++ benchmarks.
#pragma once

extern "C" {
#include "fcc_fingerprint.h"
#include "shie_table.h"
#include "vrex_fp.h"
}
