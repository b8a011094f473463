#include <cstdlib>
#include <limits>

#include "vrex/hal.hpp"

namespace vrex {

Result<BackendChoice> parse_backend_choice(std::string_view name) {
    if (name.empty() || name == "auto") return BackendChoice::automatic;
    if (name == "kernel") return BackendChoice::kernel;
    if (name == "emulated" || name == "emu" || name == "emulation") return BackendChoice::emulated;
    return errc::unknown_backend;
}

Device::Device(Key, std::unique_ptr<Backend> backend, const drm_vrex_device_info& info)
    : backend_(std::move(backend)), info_(info) {}

std::error_code Device::lost_or(std::error_code local) {
    const std::error_code probe = backend_->device_info().error();
    return probe == errc::device_lost ? probe : local;
}

Result<std::shared_ptr<Device>> Device::adopt(std::unique_ptr<Backend> backend) {
    auto info = backend->device_info();
    if (!info) return info.error();
    return std::make_shared<Device>(Key{}, std::move(backend), *info);
}

Result<std::shared_ptr<Device>> Device::open(const DeviceOptions& options) {
    BackendChoice choice = options.backend;
    if (choice == BackendChoice::automatic) {
        if (const char* env = std::getenv("VREX_BACKEND")) {
            auto parsed = parse_backend_choice(env);
            if (!parsed) return parsed.error();
            choice = *parsed;
        }
    }

    const BackendFactory* factory = nullptr;
    if (choice == BackendChoice::automatic) {
        for (const BackendFactory& f : backend_factories()) {
            if (f.available()) {
                factory = &f;
                break;
            }
        }
    } else {
        factory = find_backend_factory(choice == BackendChoice::kernel ? "kernel" : "emulated");
        if (!factory) return choice == BackendChoice::kernel ? errc::no_device : errc::unknown_backend;
    }
    if (!factory) return errc::no_device;
    auto backend = factory->open(options.backend_options);
    if (!backend) return backend.error();
    return adopt(std::move(*backend));
}

std::uint32_t dtype_size(DType t) noexcept {
    switch (t) {
        case DType::fp16:
        case DType::bf16:
            return 2;
        case DType::fp32:
            return 4;
        case DType::int8:
            return 1;
    }
    return 0;
}

Result<std::uint64_t> ModelGeometry::block_bytes() const {
    const std::uint64_t es = dtype_size(dtype);
    if (!layers || !kv_heads || !head_dim || !tokens_per_block || !es) return errc::bad_geometry;
    // Each factor is < 2^32: check every product against overflow.
    std::uint64_t bytes = 2 * es;
    for (std::uint64_t f : {std::uint64_t{layers}, std::uint64_t{kv_heads}, std::uint64_t{head_dim},
                            std::uint64_t{tokens_per_block}}) {
        if (bytes > std::numeric_limits<std::uint32_t>::max() / f)
            return errc::bad_geometry;  // a block must fit the device's 32-bit KV length
        bytes *= f;
    }
    if (bytes < kMinBlockBytes || bytes % kBlockAlign) return errc::bad_geometry;
    return bytes;
}

std::uint32_t Fingerprint::distance(const Fingerprint& o) const noexcept {
    return static_cast<std::uint32_t>(__builtin_popcountll(w[0] ^ o.w[0]) +
                                      __builtin_popcountll(w[1] ^ o.w[1]));
}

Query Query::temporal(std::uint32_t region, std::int32_t offset) {
    Query q;
    q.kind = Kind::temporal;
    q.region = region;
    q.frame_offset = offset;
    return q;
}

Query Query::similar(std::uint32_t region, const Fingerprint& fp, std::uint32_t radius, Scope scope,
                     bool past_only) {
    Query q;
    q.kind = Kind::similar;
    q.region = region;
    q.fp = fp;
    q.radius = radius;
    q.scope = scope;
    q.past_only = past_only;
    return q;
}

}  // namespace vrex
