#include "discovery.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <libudev.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <xf86drm.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "vrex/hal.hpp"

namespace vrex::discovery {
namespace {

struct UdevDeleter {
    void operator()(udev* u) const { udev_unref(u); }
    void operator()(udev_enumerate* e) const { udev_enumerate_unref(e); }
    void operator()(udev_device* d) const { udev_device_unref(d); }
};
template <class T>
using UdevPtr = std::unique_ptr<T, UdevDeleter>;

bool starts_with_digits_after(std::string_view name, std::string_view prefix) {
    if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return false;
    return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(prefix.size()), name.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
}

// "/dev/accel/accel2" before "/dev/accel/accel10", accel before dri.
bool node_less(const std::string& a, const std::string& b) {
    auto split = [](const std::string& s) {
        const std::size_t digits = s.find_last_not_of("0123456789") + 1;
        return std::make_pair(s.substr(0, digits), std::strtoul(s.c_str() + digits, nullptr, 10));
    };
    return split(a) < split(b);
}

void sort_nodes(std::vector<std::string>& nodes) {
    std::sort(nodes.begin(), nodes.end(), node_less);
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
}

const char* or_empty(const char* s) {
    return s ? s : "";
}

}  // namespace

bool is_compute_node(const DeviceRecord& rec) {
    if (rec.devnode.empty()) return false;
    if (rec.subsystem == "accel") return starts_with_digits_after(rec.sysname, "accel");
    if (rec.subsystem == "drm") return starts_with_digits_after(rec.sysname, "renderD");
    return false;
}

bool is_vrex_driver(std::string_view driver) {
    return driver == "vrex" || driver.starts_with("vrex-");
}

bool is_vrex_node(const DeviceRecord& rec) {
    return is_compute_node(rec) && is_vrex_driver(rec.driver);
}

bool node_driver_is_vrex(const std::string& node) {
    const int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;
    bool vrex = false;
    if (drmVersionPtr v = drmGetVersion(fd)) {
        vrex = v->name && std::string_view(v->name, static_cast<std::size_t>(v->name_len)) == "vrex";
        drmFreeVersion(v);
    }
    ::close(fd);
    return vrex;
}

std::vector<std::string> find_vrex_nodes_udev() {
    std::vector<std::string> nodes;
    UdevPtr<udev> ctx(udev_new());
    if (!ctx) return nodes;
    UdevPtr<udev_enumerate> en(udev_enumerate_new(ctx.get()));
    if (!en || udev_enumerate_add_match_subsystem(en.get(), "accel") < 0 ||
        udev_enumerate_add_match_subsystem(en.get(), "drm") < 0 || udev_enumerate_scan_devices(en.get()) < 0)
        return nodes;
    udev_list_entry* entry;
    udev_list_entry_foreach(entry, udev_enumerate_get_list_entry(en.get())) {
        UdevPtr<udev_device> dev(udev_device_new_from_syspath(ctx.get(), udev_list_entry_get_name(entry)));
        if (!dev) continue;
        DeviceRecord rec{or_empty(udev_device_get_subsystem(dev.get())),
                         or_empty(udev_device_get_sysname(dev.get())),
                         or_empty(udev_device_get_devnode(dev.get())), ""};
        // The parent is owned by @dev (no unref).
        if (udev_device* parent = udev_device_get_parent(dev.get()))
            rec.driver = or_empty(udev_device_get_driver(parent));
        if (is_vrex_node(rec)) nodes.push_back(rec.devnode);
    }
    sort_nodes(nodes);
    return nodes;
}

std::vector<std::string> find_vrex_nodes_scan(const std::string& dev_root) {
    std::vector<std::string> nodes;
    const std::pair<const char*, const char*> dirs[] = {{"/accel", "accel"}, {"/dri", "renderD"}};
    for (const auto& [sub, prefix] : dirs) {
        const std::string dir = dev_root + sub;
        std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
        if (!d) continue;
        while (const dirent* e = readdir(d.get())) {
            if (!starts_with_digits_after(e->d_name, prefix)) continue;
            std::string node = dir + "/" + e->d_name;
            if (node_driver_is_vrex(node)) nodes.push_back(std::move(node));
        }
    }
    sort_nodes(nodes);
    return nodes;
}

std::vector<std::string> find_vrex_nodes() {
    auto nodes = find_vrex_nodes_udev();
    return nodes.empty() ? find_vrex_nodes_scan() : nodes;
}

std::string debugfs_dir(dev_t rdev, const std::string& debugfs_root, const std::string& sys_root) {
    namespace fs = std::filesystem;
    constexpr unsigned kDrmMajor = 226;
    const std::string id = std::to_string(major(rdev)) + ":" + std::to_string(minor(rdev));
    const fs::path sys = fs::path(sys_root) / "dev" / "char" / id;
    std::error_code ec;
    const std::string subsystem = fs::read_symlink(sys / "subsystem", ec).filename().string();
    const bool accel = ec ? major(rdev) != kDrmMajor : subsystem == "accel";
    const fs::path top = fs::path(debugfs_root) / (accel ? "accel" : "dri");
    std::vector<std::string> names{std::to_string(minor(rdev))};
    const std::string parent = fs::read_symlink(sys / "device", ec).filename().string();
    if (!ec && !parent.empty()) names.push_back(parent);
    for (const auto& name : names) {
        std::ifstream f(top / name / "dev");
        std::string line;
        if (std::getline(f, line) && line == id) return (top / name).string();
    }
    return {};
}

}  // namespace vrex::discovery

namespace vrex {

std::vector<std::string> find_device_nodes() {
    return discovery::find_vrex_nodes();
}

}  // namespace vrex
