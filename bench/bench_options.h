// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// Command line shared by every vrex bench binary (the contract scripts/bench.sh relies on):
//   --mode=smoke|quick|full   problem sizes: smoke proves it runs, quick < 3 min in all, full = the report
//   --out=FILE                append JSON Lines records to FILE (default: print only)
//   --gray=FILE --width=W --height=H   raw 8-bit luma frames of real footage (scripts/fetch-footage.sh
//                             --gray); defaults come from VREX_VTEST_GRAY / _WIDTH / _HEIGHT
// Unknown arguments are left in place for the binary (e.g. Google Benchmark flags).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vrex::bench {

enum class Mode { smoke, quick, full };

struct Options {
    Mode mode = Mode::quick;
    std::string out;
    std::string gray;
    uint32_t width = 0;
    uint32_t height = 0;
    std::vector<std::string> rest;  // arguments not consumed here, argv[0] first

    bool has_footage() const { return !gray.empty() && width > 0 && height > 0; }
};

// Returns false (after printing why) on a malformed argument.
bool parse_options(int argc, char** argv, Options& opt);

const char* mode_name(Mode m);

}  // namespace vrex::bench
