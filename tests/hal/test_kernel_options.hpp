// Options given to the HAL test binaries on their command line (test_kernel_gtest_main.cpp).
#pragma once

#include <string>

namespace vrex::test {

// --clip=PATH, empty when not given.
std::string& clip_path();

}  // namespace vrex::test
