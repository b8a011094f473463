// HotplugMonitor's decision logic (private): which udev records are vrex nodes appearing or going.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "vrex/hotplug.hpp"

namespace vrex {

// The decision logic, kept apart from udev so it can be tested on synthetic records.
class HotplugFilter {
  public:
    struct Record {
        std::string action;     // "add", "remove", "change", ...
        std::string subsystem;  // "accel", "drm"
        std::string sysname;    // "accel0", "renderD128", "card0"
        std::string syspath;
        std::string devnode;
        std::string driver;  // parent driver, empty when unknown
    };
    // Asked for an added node whose driver udev could not tell (e.g. opens it and reads the DRM
    // driver name).
    using Verifier = std::function<bool(const std::string& devnode)>;

    explicit HotplugFilter(Verifier verify);
    // Records a node present at start (no event).
    void seed(const std::string& syspath, const std::string& devnode);
    // The event @rec means for vrex nodes, if any; updates the set of known nodes.
    std::optional<HotplugEvent> classify(const Record& rec);
    // Present vrex nodes: syspath -> devnode.
    const std::map<std::string, std::string>& known() const noexcept { return known_; }

  private:
    Verifier verify_;
    std::map<std::string, std::string> known_;
};

}  // namespace vrex
