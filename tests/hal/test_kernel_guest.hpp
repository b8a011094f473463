// Helpers for kernel-backend tests that need a real vrex device (QEMU guests): the node's sysfs
// device, unbinding and rebinding it (a hot-unplug as far as the driver is concerned).
#pragma once

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "discovery.hpp"

namespace vrex::test {

// The DRM core's debugfs directory of @node, where vrex.ko's files are (mounting debugfs first if
// needed). Empty when there is none.
inline std::string debugfs_dir_of(const std::string& node)
{
    ::mkdir("/sys/kernel/debug", 0755);
    if (::access("/sys/kernel/debug/dri", F_OK) != 0 && ::access("/sys/kernel/debug/accel", F_OK) != 0)
        ::mount("debugfs", "/sys/kernel/debug", "debugfs", 0, nullptr);
    struct stat st;
    if (::stat(node.c_str(), &st) != 0)
        return {};
    return discovery::debugfs_dir(st.st_rdev);
}

// /sys/dev/char/M:N/device resolved: the device the driver is bound to. Empty if unknown.
inline std::string bound_device_of(const std::string& node)
{
    struct stat st;
    if (::stat(node.c_str(), &st) != 0)
        return {};
    const std::string link =
        "/sys/dev/char/" + std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev)) + "/device";
    char buf[PATH_MAX];
    if (!::realpath(link.c_str(), buf))
        return {};
    return buf;
}

inline bool write_sysfs(const std::string& path, const std::string& value)
{
    std::ofstream f(path);
    f << value;
    f.flush();
    return static_cast<bool>(f);
}

// Unbinds @device from its driver; returns the driver directory for rebind(), empty on failure.
inline std::string unbind(const std::string& device)
{
    char buf[PATH_MAX];
    if (!::realpath((device + "/driver").c_str(), buf))
        return {};
    const std::string driver = buf;
    const std::string name = device.substr(device.rfind('/') + 1);
    return write_sysfs(driver + "/unbind", name) ? driver : std::string{};
}

inline bool rebind(const std::string& driver, const std::string& device)
{
    return write_sysfs(driver + "/bind", device.substr(device.rfind('/') + 1));
}

inline bool wait_for_path(const std::string& path, bool present, std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while ((::access(path.c_str(), F_OK) == 0) != present) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace vrex::test
