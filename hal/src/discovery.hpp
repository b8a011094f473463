// Finding vrex device nodes. vrex.ko registers an accel node (/dev/accel/accelN, kernels with
// CONFIG_DRM_ACCEL) or a render node (/dev/dri/renderD*); libdrm's node enumeration knows no accel
// node type, so discovery goes through libudev (subsystems "accel" and "drm") and, where udev sees
// nothing (a system without a udev database or sysfs access, e.g. a busybox initramfs), through a
// scan of /dev that asks each node's driver name with drmGetVersion().
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

namespace vrex::discovery {

// What udev (or a hotplug message) says about one device; the pure filter below works on it.
struct DeviceRecord {
    std::string subsystem;  // "accel", "drm", ...
    std::string sysname;    // "accel0", "renderD128", "card0", ...
    std::string devnode;    // "/dev/accel/accel0" or empty
    std::string driver;     // driver of the parent device ("vrex"), empty if unknown
};

// True for a node user space may open: subsystem accel with an accelN name, or subsystem drm with a
// renderDN name (primary "card" nodes and connectors are never returned), with a devnode.
bool is_compute_node(const DeviceRecord& rec);
// True when the parent driver belongs to vrex.ko: "vrex" (DT, PCI, vrex_sim.ko's devices) or
// "vrex-<binding>" (kept for older modules whose simulated device bound as "vrex-sim").
bool is_vrex_driver(std::string_view driver);
// is_compute_node() and is_vrex_driver().
bool is_vrex_node(const DeviceRecord& rec);

// Opens @node and asks the DRM core for the driver name; true if it is "vrex".
bool node_driver_is_vrex(const std::string& node);

// libudev enumeration: compute nodes of subsystems accel and drm whose parent driver is vrex.
// Sorted, accel nodes first. Empty when udev has no such device (or sysfs is not readable).
std::vector<std::string> find_vrex_nodes_udev();
// Scan of @dev_root/accel/accel* and @dev_root/dri/renderD* keeping nodes whose DRM driver name is
// "vrex". Sorted, accel nodes first.
std::vector<std::string> find_vrex_nodes_scan(const std::string& dev_root = "/dev");
// udev first; the /dev scan when udev finds nothing.
std::vector<std::string> find_vrex_nodes();

// The debugfs directory of the node whose device number is @rdev (st_rdev of the open node): the
// DRM core's directory of that minor, where vrex.ko puts its files. Found from the node, not by
// listing: the node's sysfs class (<sys_root>/dev/char/M:m/subsystem, "accel" or "drm"; the DRM
// major when sysfs is not there) picks <debugfs_root>/accel or /dri, then the minor's index (every
// kernel up to 6.7, and the DRM symlink since 6.8) or the parent device's name (the accel directory
// since 6.8). The candidate counts only if its "dev" file holds M:m. Empty when none does (debugfs
// not mounted, not root, no vrex debugfs).
std::string debugfs_dir(dev_t rdev, const std::string& debugfs_root = "/sys/kernel/debug",
                        const std::string& sys_root = "/sys");

}  // namespace vrex::discovery
