// Kernel-backend behaviour the conformance suite cannot show on the emulation: unbinding the device
// under an open backend turns every call into errc::device_lost, and a rebound device opens again.
#include <gtest/gtest.h>

#include "discovery.hpp"
#include "kernel_backend.hpp"
#include "test_kernel_guest.hpp"

namespace vrex {
namespace {

TEST(KernelBackend, UnbindMakesTheDeviceLostAndRebindRecovers)
{
    const auto nodes = discovery::find_vrex_nodes();
    if (nodes.empty())
        GTEST_SKIP() << "no vrex device on this machine (runs in the QEMU guests)";
    if (::geteuid() != 0)
        GTEST_SKIP() << "unbinding needs root";
    const std::string node = nodes.front();
    const std::string device = test::bound_device_of(node);
    ASSERT_FALSE(device.empty()) << node;

    auto be = KernelBackend::open(BackendOptions{node});
    ASSERT_TRUE(be);
    drm_vrex_bo_create bo{};
    bo.size = 8192;
    bo.bank_mask = 1;
    ASSERT_FALSE((*be)->bo_create(bo));
    drm_vrex_bo_create bad = bo;
    bad.flags = 0x80;
    EXPECT_EQ((*be)->bo_create(bad), std::make_error_code(std::errc::invalid_argument)) << "errno passes through";

    const std::string driver = test::unbind(device);
    ASSERT_FALSE(driver.empty()) << "unbind " << device;
    ASSERT_TRUE(test::wait_for_path(node, false, std::chrono::seconds(5)));
    EXPECT_EQ((*be)->stats().error(), errc::device_lost);
    EXPECT_EQ((*be)->bo_create(bo), errc::device_lost) << "sticky";
    EXPECT_EQ((*be)->bo_map(bo.handle).error(), errc::device_lost);
    EXPECT_EQ(discovery::find_vrex_nodes(), std::vector<std::string>{}) << "discovery no longer sees it";
    be->reset();  // closing a file of an unplugged device must be clean (dmesg is checked by the guest)

    ASSERT_TRUE(test::rebind(driver, device)) << "bind " << device;
    ASSERT_TRUE(test::wait_for_path(node, true, std::chrono::seconds(5)));
    auto again = KernelBackend::open(BackendOptions{node});
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_TRUE((*again)->stats());
}

}  // namespace
}  // namespace vrex
