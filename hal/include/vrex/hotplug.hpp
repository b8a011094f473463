// Hotplug: reports vrex device nodes appearing and disappearing, from a udev netlink monitor
// (subsystems accel and drm) watched by an Asio stream_descriptor.
//
// A node is reported as added when udev announces an accel/renderD node whose parent driver is vrex
// (or, while the driver link is not there yet, whose DRM driver name is "vrex"), and as removed when
// a node reported before (or present when the monitor started) goes away: on removal sysfs no
// longer says which driver it had. The callback runs on the io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "vrex/export.h"
#include "vrex/result.hpp"

namespace vrex {

struct HotplugEvent {
    enum class Kind { added, removed } kind = Kind::added;
    std::string node;     // "/dev/accel/accel0"
    std::string syspath;  // "/sys/devices/platform/vrex.0.auto/accel/accel0"
};

// A vrex node the monitor knows as present.
struct HotplugNode {
    std::string syspath;  // "/sys/devices/platform/vrex.0.auto/accel/accel0"
    std::string node;     // "/dev/accel/accel0"
};

class VREX_API HotplugMonitor {
public:
    using Callback = std::function<void(const HotplugEvent&)>;

    struct Options {
        // "udev": events after udevd processed them (the normal case). "kernel": raw kernel uevents,
        // for systems without udevd (busybox initramfs, containers).
        std::string source = "udev";
    };

    HotplugMonitor(boost::asio::io_context& io, Callback callback, Options options);
    HotplugMonitor(boost::asio::io_context& io, Callback callback);
    ~HotplugMonitor();
    HotplugMonitor(const HotplugMonitor&) = delete;
    HotplugMonitor& operator=(const HotplugMonitor&) = delete;

    // Opens the netlink monitor, records the vrex nodes present now and starts watching.
    Result<void> start();
    // Stops watching; no callback starts after stop() returns. A stopped monitor may be started
    // again once the io_context has run the stop (it cancels the wait on the monitor's strand).
    void stop();
    bool running() const noexcept;
    // vrex nodes the monitor currently knows as present, sorted by syspath.
    std::vector<HotplugNode> known() const;

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace vrex
