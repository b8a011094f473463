// main() of the HAL test binaries that also run as QEMU guest programs: GoogleTest, then one
// "N passed, M failed, K skipped" line the qemu-test harness counts.
//   --require-backend=NAME   fail (one counted failure) unless backend NAME is available here, so a
//                            guest whose kernel backend was not found cannot pass on the emulation alone
//   --clip=PATH              real-footage clip for the differential test (test_differential_clip.sh)
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "test_kernel_options.hpp"
#include "backend.hpp"

namespace vrex::test {

std::string& clip_path()
{
    static std::string path;
    return path;
}

}  // namespace vrex::test

int main(int argc, char** argv)
{
    ::testing::InitGoogleTest(&argc, argv);
    std::string required;
    for (int i = 1; i < argc; i++) {
        if (std::strncmp(argv[i], "--require-backend=", 18) == 0)
            required = argv[i] + 18;
        else if (std::strncmp(argv[i], "--clip=", 7) == 0)
            vrex::test::clip_path() = argv[i] + 7;
    }
    int missing = 0;
    if (!required.empty()) {
        const vrex::BackendFactory* f = vrex::find_backend_factory(required);
        if (!f || !f->available()) {
            std::printf("required backend '%s' is not available here\n", required.c_str());
            missing = 1;
        }
    }
    const int rc = RUN_ALL_TESTS();
    const ::testing::UnitTest& u = *::testing::UnitTest::GetInstance();
    std::printf("%d passed, %d failed, %d skipped\n", u.successful_test_count(),
                u.failed_test_count() + missing, u.skipped_test_count());
    return rc || missing ? 1 : 0;
}
