// The engine's buffer of the imported-memory tests (import_test.cpp, host_tier_test.cpp): a dma-buf
// an "engine" exports, on every backend.
//
// Source of the engine's buffer, printed by every test ("engine memory: ..."):
//   udmabuf   a memfd turned into a dma-buf by /dev/udmabuf (the 6.12 QEMU guests), any backend
//   vrex_sim  a BO of a second simulated vrex device (configfs, root), exported: the kernel backend
//             on kernels without udmabuf (the 5.10 and 6.1 guests)
//   memfd     the memfd itself, for the emulated backend only (the host has no /dev/udmabuf; the
//             emulation has no dma-bufs and takes any mmap-able fd)
// The kernel backend with neither skips with that reason.
#pragma once

#include <fcntl.h>
#include <linux/udmabuf.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backend.hpp"
#include "vrex/hal.hpp"

namespace vrex::test {

// The engine's buffer: a dma-buf fd and the engine's own mapping (not vrex's).
struct EngineMemory {
    std::string source;
    int memfd = -1;
    int dmabuf = -1;
    std::byte* map = nullptr;
    std::size_t size = 0;
    // vrex_sim source: the second device's backend (owns @map) and its configfs item.
    std::unique_ptr<Backend> exporter;
    std::string sim_item;

    EngineMemory() = default;
    EngineMemory(const EngineMemory&) = delete;
    EngineMemory& operator=(const EngineMemory&) = delete;
    ~EngineMemory() {
        if (map && !exporter) munmap(map, size);
        if (dmabuf >= 0 && dmabuf != memfd) close(dmabuf);
        if (memfd >= 0) close(memfd);
        exporter.reset();
        if (!sim_item.empty()) {
            std::ofstream(sim_item + "/enable") << "0";
            rmdir(sim_item.c_str());
        }
    }

    // Byte i of the pattern the engine wrote with @seed.
    static std::byte at(std::size_t i, unsigned seed) {
        return static_cast<std::byte>((i * 131 + seed + (i >> 9)) & 0xff);
    }
    void fill(unsigned seed) {
        for (std::size_t i = 0; i < size; i++) map[i] = at(i, seed);
    }
    bool holds(unsigned seed, std::size_t from = 0, std::size_t to = SIZE_MAX) const {
        for (std::size_t i = from; i < std::min(to, size); i++)
            if (map[i] != at(i, seed)) return false;
        return true;
    }
};

// A BO of a second simulated vrex device, exported: a dma-buf foreign to the device under test.
inline std::unique_ptr<EngineMemory> second_vrex_device(std::unique_ptr<EngineMemory> e, std::string* why) {
    const std::string root = "/sys/kernel/config/vrex_sim";
    struct stat st {};
    if (::stat(root.c_str(), &st) || getuid() != 0) {
        *why = "no /dev/udmabuf and no vrex_sim configfs (as root) for a second device on this kernel";
        return nullptr;
    }
    const std::vector<std::string> before = find_device_nodes();
    e->sim_item = root + "/hal-import";
    if (mkdir(e->sim_item.c_str(), 0755) && errno != EEXIST) {
        *why = "mkdir " + e->sim_item + ": " + strerror(errno);
        e->sim_item.clear();
        return nullptr;
    }
    if (!(std::ofstream(e->sim_item + "/enable") << "1")) {
        *why = "enable " + e->sim_item;
        return nullptr;
    }
    std::string node;
    for (int i = 0; i < 50 && node.empty(); i++) {
        for (const std::string& n : find_device_nodes())
            if (std::find(before.begin(), before.end(), n) == before.end()) node = n;
        if (node.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const BackendFactory* f = find_backend_factory("kernel");
    if (node.empty() || !f) {
        *why = "the second vrex device's node did not appear";
        return nullptr;
    }
    BackendOptions o;
    o.node = node;
    auto be = f->open(o);
    if (!be) {
        *why = "open " + node + ": " + be.error_message();
        return nullptr;
    }
    e->exporter = std::move(*be);
    drm_vrex_bo_create c{};
    c.size = e->size;
    c.bank_mask = 1;
    c.flags = DRM_VREX_BO_KV;
    if (auto ec = e->exporter->bo_create(c)) {
        *why = "BO on the second device: " + ec.message();
        return nullptr;
    }
    auto map = e->exporter->bo_map(c.handle);
    auto fd = e->exporter->bo_export_dmabuf(c.handle);
    if (!map || !fd) {
        *why = "map / export of the second device's BO";
        return nullptr;
    }
    e->map = map->data();
    e->dmabuf = *fd;
    e->source = "vrex_sim (a BO of a second vrex device, " + node + ")";
    return e;
}

// The engine's buffer for @backend, or nullptr with the reason in @why.
inline std::unique_ptr<EngineMemory> engine_memory(const std::string& backend, std::size_t size,
                                                   std::string* why) {
    auto e = std::make_unique<EngineMemory>();
    e->size = size;
    if (backend == "kernel" && access("/dev/udmabuf", F_OK) != 0)
        return second_vrex_device(std::move(e), why);
    e->memfd = memfd_create("engine-kv", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (e->memfd < 0 || ftruncate(e->memfd, static_cast<off_t>(size))) {
        *why = "memfd: " + std::string(strerror(errno));
        return nullptr;
    }
    const int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
    if (dev >= 0) {
        udmabuf_create c{};
        c.memfd = static_cast<__u32>(e->memfd);
        c.size = size;
        const int seal = fcntl(e->memfd, F_ADD_SEALS, F_SEAL_SHRINK);
        e->dmabuf = seal ? -1 : ioctl(dev, UDMABUF_CREATE, &c);
        close(dev);
        if (e->dmabuf < 0) {
            *why = "/dev/udmabuf: " + std::string(strerror(errno));
            return nullptr;
        }
        e->source = "udmabuf";
    } else if (backend == "emulated") {
        e->dmabuf = e->memfd;
        e->source = "memfd (stand-in, emulated backend only: no /dev/udmabuf here)";
    } else {
        *why = "no /dev/udmabuf for the " + backend + " backend";
        return nullptr;
    }
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, e->memfd, 0);
    if (p == MAP_FAILED) {
        *why = "mmap: " + std::string(strerror(errno));
        return nullptr;
    }
    e->map = static_cast<std::byte*>(p);
    return e;
}

}  // namespace vrex::test
