// Discovery: the udev and /dev-scan paths find the same vrex nodes on a machine that has them, both
// reject what is not a vrex compute node, and the kernel backend refuses non-vrex nodes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "discovery.hpp"
#include "kernel_backend.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

using discovery::DeviceRecord;

TEST(KernelDiscovery, FilterKeepsOnlyVrexComputeNodes)
{
    EXPECT_TRUE(discovery::is_vrex_node({"accel", "accel0", "/dev/accel/accel0", "vrex"}));
    EXPECT_TRUE(discovery::is_vrex_node({"drm", "renderD128", "/dev/dri/renderD128", "vrex-sim"}));
    EXPECT_TRUE(discovery::is_vrex_node({"accel", "accel12", "/dev/accel/accel12", "vrex"}));
    EXPECT_FALSE(discovery::is_vrex_node({"drm", "card0", "/dev/dri/card0", "vrex"})) << "primary node";
    EXPECT_FALSE(discovery::is_vrex_node({"drm", "card0-HDMI-A-1", "", "vrex"})) << "connector";
    EXPECT_FALSE(discovery::is_vrex_node({"drm", "renderD128", "/dev/dri/renderD128", "i915"}));
    EXPECT_FALSE(discovery::is_vrex_node({"drm", "renderD128", "/dev/dri/renderD128", "vrexx"}));
    EXPECT_FALSE(discovery::is_vrex_node({"drm", "renderD128", "/dev/dri/renderD128", ""})) << "no driver";
    EXPECT_FALSE(discovery::is_vrex_node({"accel", "accel0", "", "vrex"})) << "no devnode";
    EXPECT_FALSE(discovery::is_vrex_node({"accel", "accelX", "/dev/accel/accelX", "vrex"}));
    EXPECT_FALSE(discovery::is_vrex_node({"misc", "accel0", "/dev/accel0", "vrex"}));
}

TEST(KernelDiscovery, ScanIgnoresNodesThatAreNotVrexDevices)
{
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("vrex-scan-" + std::to_string(::getpid()));
    fs::create_directories(root / "accel");
    fs::create_directories(root / "dri");
    std::ofstream(root / "accel" / "accel0") << "not a device";
    std::ofstream(root / "dri" / "renderD128") << "not a device";
    std::ofstream(root / "dri" / "card0") << "not a device";
    EXPECT_TRUE(discovery::find_vrex_nodes_scan(root.string()).empty());
    EXPECT_TRUE(discovery::find_vrex_nodes_scan((root / "missing").string()).empty());
    fs::remove_all(root);
}

// The debugfs directory follows from the node: by minor index (dri/N, accel/N up to 6.7) or by the
// parent device's name (accel/<dev> since 6.8), and only where "dev" names the node.
TEST(KernelDiscovery, DebugfsDirFollowsTheNode)
{
    namespace fs = std::filesystem;
    const fs::path root = fs::temp_directory_path() / ("vrex-dbgfs-" + std::to_string(::getpid()));
    const fs::path sys = root / "sys", dbg = root / "debug";
    // A render node 226:128 and an accel node 261:0 of platform devices vrex.0 and vrex.1.
    auto node = [&](const std::string& id, const std::string& cls, const std::string& parent) {
        const fs::path d = sys / "devices" / parent / cls / id;
        fs::create_directories(d);
        fs::create_directories(sys / "class" / cls);
        fs::create_directories(sys / "dev" / "char");
        fs::create_symlink(fs::path("../../../../class") / cls, d / "subsystem");
        fs::create_symlink(fs::path("../../../") / parent, d / "device");
        fs::create_symlink(fs::path("../../devices") / parent / cls / id, sys / "dev" / "char" / id);
    };
    node("226:128", "drm", "vrex.0");
    node("261:0", "accel", "vrex.1");
    auto dev_file = [&](const fs::path& dir, const std::string& text) {
        fs::create_directories(dir);
        std::ofstream(dir / "dev") << text;
    };
    const dev_t render = makedev(226, 128), accel = makedev(261, 0);

    EXPECT_EQ(discovery::debugfs_dir(render, dbg.string(), sys.string()), "") << "nothing there yet";
    dev_file(dbg / "dri" / "128", "226:129\n");
    EXPECT_EQ(discovery::debugfs_dir(render, dbg.string(), sys.string()), "") << "another node's directory";
    dev_file(dbg / "dri" / "128", "226:128\n");
    EXPECT_EQ(discovery::debugfs_dir(render, dbg.string(), sys.string()), (dbg / "dri" / "128").string());

    // 6.8+: accel/<parent>, no accel/<minor>; a dri/0 of another driver with a "dev" is not it.
    dev_file(dbg / "dri" / "0", "261:0\n");
    EXPECT_EQ(discovery::debugfs_dir(accel, dbg.string(), sys.string()), "");
    dev_file(dbg / "accel" / "vrex.1", "261:0\n");
    EXPECT_EQ(discovery::debugfs_dir(accel, dbg.string(), sys.string()), (dbg / "accel" / "vrex.1").string());
    // 6.2..6.7: accel/<minor> wins.
    dev_file(dbg / "accel" / "0", "261:0\n");
    EXPECT_EQ(discovery::debugfs_dir(accel, dbg.string(), sys.string()), (dbg / "accel" / "0").string());
    // Without sysfs the DRM major decides between dri and accel; the minor index still works.
    EXPECT_EQ(discovery::debugfs_dir(render, dbg.string(), (root / "nosys").string()),
              (dbg / "dri" / "128").string());
    EXPECT_EQ(discovery::debugfs_dir(accel, dbg.string(), (root / "nosys").string()),
              (dbg / "accel" / "0").string());
    fs::remove_all(root);
}

TEST(KernelDiscovery, OpenRefusesNodesOfOtherDrivers)
{
    BackendOptions o;
    o.node = "/dev/null";
    EXPECT_EQ(KernelBackend::open(o).error(), errc::not_vrex_device);
    o.node = "/dev/accel/accel-does-not-exist";
    EXPECT_EQ(KernelBackend::open(o).error(), errc::no_device);
}

TEST(KernelDiscovery, UdevAndScanFindTheSameVrexNodes)
{
    const auto scanned = discovery::find_vrex_nodes_scan();
    const auto from_udev = discovery::find_vrex_nodes_udev();
    if (scanned.empty() && from_udev.empty())
        GTEST_SKIP() << "no vrex device on this machine (runs in the QEMU guests)";
    EXPECT_EQ(from_udev, scanned);
    for (const auto& n : scanned)
        EXPECT_TRUE(discovery::node_driver_is_vrex(n)) << n;
    EXPECT_TRUE(kernel_backend_factory().available());
}

TEST(KernelDiscovery, AutoChoosesTheKernelBackendAndTheEnvironmentForcesEither)
{
    if (!kernel_backend_factory().available())
        GTEST_SKIP() << "no vrex device on this machine (runs in the QEMU guests)";
    ::unsetenv("VREX_BACKEND");
    auto d = Device::open();
    ASSERT_TRUE(d);
    EXPECT_EQ((*d)->backend_name(), "kernel");
    EXPECT_EQ((*d)->description().rfind(discovery::find_vrex_nodes().front(), 0), 0u) << (*d)->description();
    ::setenv("VREX_BACKEND", "emulated", 1);
    auto e = Device::open();
    ::setenv("VREX_BACKEND", "kernel", 1);
    auto k = Device::open();
    DeviceOptions forced;
    forced.backend = BackendChoice::emulated;
    auto f = Device::open(forced);
    ::unsetenv("VREX_BACKEND");
    ASSERT_TRUE(e);
    ASSERT_TRUE(k);
    ASSERT_TRUE(f);
    EXPECT_EQ((*e)->backend_name(), "emulated");
    EXPECT_EQ((*k)->backend_name(), "kernel");
    EXPECT_EQ((*f)->backend_name(), "emulated");
    // scripts/qemu-test.sh sets VREX_EXPECT_SIMULATED=0 on the QEMU device model's lines.
    const char* sim = std::getenv("VREX_EXPECT_SIMULATED");
    const std::uint32_t expect_sim = (sim != nullptr && std::string_view(sim) == "0") ? 0U : 1U;
    EXPECT_EQ((*k)->info().simulated, expect_sim) << "VREX_EXPECT_SIMULATED: the device under test";
}

}  // namespace
}  // namespace vrex
