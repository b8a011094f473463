// Hotplug: the filter on synthetic udev records, the monitor's lifecycle on this machine, and, where
// a vrex device can be unbound (QEMU guests, root), real remove/add events for it.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>

#include "discovery.hpp"
#include "test_kernel_guest.hpp"
#include "hotplug_filter.hpp"
#include "vrex/hotplug.hpp"

namespace vrex {
namespace {

using Rec = HotplugFilter::Record;
using Kind = HotplugEvent::Kind;

TEST(Hotplug, FilterReportsVrexNodesAddedAndRemoved)
{
    std::vector<std::string> asked;
    HotplugFilter f([&](const std::string& node) {
        asked.push_back(node);
        return node == "/dev/dri/renderD129";
    });
    const std::string sys0 = "/sys/devices/platform/vrex-sim.0/accel/accel0";
    auto ev = f.classify(Rec{"add", "accel", "accel0", sys0, "/dev/accel/accel0", "vrex-sim"});
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->kind, Kind::added);
    EXPECT_EQ(ev->node, "/dev/accel/accel0");
    EXPECT_FALSE(f.classify(Rec{"add", "accel", "accel0", sys0, "/dev/accel/accel0", "vrex-sim"})) << "once";
    EXPECT_FALSE(f.classify(Rec{"change", "accel", "accel0", sys0, "/dev/accel/accel0", "vrex-sim"}));
    EXPECT_FALSE(f.classify(Rec{"add", "drm", "renderD128", "/sys/x/renderD128", "/dev/dri/renderD128", "i915"}));
    EXPECT_FALSE(f.classify(Rec{"add", "drm", "card1", "/sys/y/card1", "/dev/dri/card1", "vrex"})) << "primary";
    EXPECT_FALSE(f.classify(Rec{"remove", "drm", "renderD128", "/sys/x/renderD128", "/dev/dri/renderD128", ""}))
        << "never reported as added";
    EXPECT_TRUE(asked.empty()) << "driver known: no verification";

    // Driver link not there yet: the verifier decides.
    ev = f.classify(Rec{"add", "drm", "renderD129", "/sys/z/renderD129", "/dev/dri/renderD129", ""});
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->kind, Kind::added);
    EXPECT_FALSE(f.classify(Rec{"add", "drm", "renderD130", "/sys/z/renderD130", "/dev/dri/renderD130", ""}));
    EXPECT_EQ(asked, (std::vector<std::string>{"/dev/dri/renderD129", "/dev/dri/renderD130"}));

    // Removal: sysfs is gone, the node is known by its syspath.
    ev = f.classify(Rec{"remove", "accel", "accel0", sys0, "", ""});
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->kind, Kind::removed);
    EXPECT_EQ(ev->node, "/dev/accel/accel0");
    EXPECT_FALSE(f.classify(Rec{"remove", "accel", "accel0", sys0, "", ""})) << "once";
    EXPECT_EQ(f.known().size(), 1u);

    f.seed("/sys/s/accel3", "/dev/accel/accel3");
    ev = f.classify(Rec{"remove", "accel", "accel3", "/sys/s/accel3", "", ""});
    ASSERT_TRUE(ev) << "seeded nodes are reported when they go";
    EXPECT_EQ(ev->node, "/dev/accel/accel3");
}

TEST(Hotplug, MonitorStartsStopsAndRejectsUnknownSources)
{
    boost::asio::io_context io;
    HotplugMonitor bad(io, [](const HotplugEvent&) {}, HotplugMonitor::Options{"nonsense"});
    EXPECT_EQ(bad.start().error(), std::make_error_code(std::errc::invalid_argument));
    EXPECT_FALSE(bad.running());

    int events = 0;
    HotplugMonitor mon(io, [&](const HotplugEvent&) { events++; }, HotplugMonitor::Options{"kernel"});
    auto r = mon.start();
    if (!r && (r.error() == std::errc::operation_not_permitted || r.error() == std::errc::permission_denied ||
               r.error() == std::errc::protocol_not_supported))
        GTEST_SKIP() << "no netlink uevent socket here: " << r.error().message();
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(mon.running());
    EXPECT_EQ(mon.start().error(), std::make_error_code(std::errc::device_or_resource_busy));
    // The vrex nodes present now are known (none on a machine without the device).
    EXPECT_EQ(mon.known().size(), discovery::find_vrex_nodes_udev().size());
    io.run_for(std::chrono::milliseconds(50));
    mon.stop();
    EXPECT_FALSE(mon.running());
    const auto t0 = std::chrono::steady_clock::now();
    io.restart();
    io.run();  // returns: the stopped monitor leaves no work behind
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    EXPECT_EQ(events, 0);
}

TEST(Hotplug, UnbindAndBindOfTheDeviceAreReported)
{
    const auto nodes = discovery::find_vrex_nodes();
    if (nodes.empty())
        GTEST_SKIP() << "no vrex device on this machine (runs in the QEMU guests)";
    if (::geteuid() != 0)
        GTEST_SKIP() << "unbinding needs root";
    const std::string node = nodes.front();
    const std::string device = test::bound_device_of(node);
    ASSERT_FALSE(device.empty());

    boost::asio::io_context io;
    std::vector<HotplugEvent> seen;
    // The guests have no udevd to rebroadcast: listen to the kernel's uevents.
    HotplugMonitor mon(io, [&](const HotplugEvent& e) { seen.push_back(e); }, HotplugMonitor::Options{"kernel"});
    ASSERT_TRUE(mon.start());
    ASSERT_EQ(mon.known().size(), 1u);
    EXPECT_EQ(mon.known().front().node, node);

    auto run_until = [&](std::size_t n) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (seen.size() < n && std::chrono::steady_clock::now() < deadline) {
            io.restart();
            io.run_for(std::chrono::milliseconds(20));
        }
    };
    const std::string driver = test::unbind(device);
    ASSERT_FALSE(driver.empty());
    run_until(1);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].kind, Kind::removed);
    EXPECT_EQ(seen[0].node, node);
    ASSERT_TRUE(test::rebind(driver, device));
    run_until(2);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1].kind, Kind::added);
    EXPECT_EQ(seen[1].node, node);
    EXPECT_EQ(mon.known().size(), 1u);
    mon.stop();
}

}  // namespace
}  // namespace vrex
