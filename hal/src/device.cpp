#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>

#include "device_impl.hpp"

namespace vrex {

Result<BackendChoice> parse_backend_choice(std::string_view name) {
    if (name.empty() || name == "auto") return BackendChoice::automatic;
    if (name == "kernel") return BackendChoice::kernel;
    if (name == "emulated" || name == "emu" || name == "emulation") return BackendChoice::emulated;
    return errc::unknown_backend;
}

std::vector<BackendAvailability> list_backends() {
    std::vector<BackendAvailability> out;
    for (const BackendFactory& f : backend_factories()) out.push_back({std::string(f.name), f.available()});
    return out;
}

DeviceInfo to_device_info(const drm_vrex_device_info& i) noexcept {
    DeviceInfo d;
    d.hw_id = i.hw_id;
    d.hw_version = i.hw_version;
    d.caps.fcc = i.caps & DRM_VREX_CAP_FCC;
    d.caps.shie = i.caps & DRM_VREX_CAP_SHIE;
    d.caps.pooled = i.caps & DRM_VREX_CAP_POOLED;
    d.caps.predict_slots = i.caps & DRM_VREX_CAP_PREDICT_SLOTS;
    d.caps.resv = i.caps & DRM_VREX_CAP_RESV;
    d.bank_count = i.bank_count;
    d.bank_size = i.bank_size;
    d.group_banks = i.group_banks;
    d.max_streams = i.max_streams;
    d.shie_capacity = i.shie_capacity;
    d.block_capacity = i.block_capacity;
    d.zombie_frames = i.zombie_frames;
    d.max_batch = i.max_batch;
    d.fcc_min_dim = i.fcc_min_dim;
    d.fcc_max_dim = i.fcc_max_dim;
    d.simulated = i.simulated != 0;
    return d;
}

DeviceStats to_device_stats(const drm_vrex_stats& s) noexcept {
    return {s.lookups, s.exact_hits, s.approx_hits, s.misses,       s.evictions,   s.bank_conflicts,
            s.inserts, s.removes,    s.frames,      s.live_entries, s.live_blocks, s.cmd_errors};
}

Device::Device(Key, std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Device::~Device() = default;

std::string_view Device::backend_name() const noexcept {
    return impl_->backend->name();
}
std::string Device::description() const {
    return impl_->backend->description();
}
const DeviceInfo& Device::info() const noexcept {
    return impl_->info;
}

Result<DeviceStats> Device::stats() {
    auto s = impl_->backend->stats();
    if (!s) return s.error();
    return to_device_stats(*s);
}

Result<DeviceBanks> Device::banks() {
    auto b = impl_->backend->bank_info();
    if (!b) return b.error();
    DeviceBanks out;
    const std::uint32_t n = std::min<std::uint32_t>(b->bank_count, DRM_VREX_MAX_BANKS);
    for (std::uint32_t i = 0; i < n; i++)
        out.banks.push_back({b->bo_bytes[i], b->kv_bytes[i], b->kv_blocks[i]});
    const std::uint32_t gb = std::max<std::uint32_t>(1, impl_->info.group_banks);
    for (std::uint32_t g = 0; g < (n + gb - 1) / gb; g++) out.group_owned.push_back(b->group_owned[g]);
    return out;
}

Result<std::uint32_t> Device::read_register(std::uint32_t offset) {
    return impl_->backend->reg_read(offset);
}

std::error_code lost_or(Device& d, std::error_code local) {
    const std::error_code probe = backend_of(d).device_info().error();
    return probe == errc::device_lost ? probe : local;
}

Result<std::shared_ptr<Device>> adopt_backend(std::unique_ptr<Backend> backend) {
    auto info = backend->device_info();
    if (!info) return info.error();
    auto impl = std::make_unique<Device::Impl>();
    impl->backend = std::move(backend);
    impl->info = to_device_info(*info);
    return std::make_shared<Device>(detail::DeviceAccess::key(), std::move(impl));
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
    if (!backend) return backend.error_info();
    return adopt_backend(std::move(*backend));
}

std::uint32_t dtype_size(DType t) noexcept {
    switch (t) {
        case DType::fp16:
        case DType::bf16:
            return 2;
        case DType::fp32:
            return 4;
        case DType::int8:
        case DType::fp8_e4m3:
        case DType::fp8_e5m2:
            return 1;
    }
    return 0;
}

std::string_view dtype_name(DType t) noexcept {
    switch (t) {
        case DType::fp16:
            return "fp16";
        case DType::bf16:
            return "bf16";
        case DType::fp32:
            return "fp32";
        case DType::int8:
            return "int8";
        case DType::fp8_e4m3:
            return "fp8_e4m3";
        case DType::fp8_e5m2:
            return "fp8_e5m2";
    }
    return "";
}

Result<std::uint64_t> ModelGeometry::block_bytes() const {
    auto bad = [](const std::string& why) { return Error{errc::bad_geometry, why}; };
    for (auto [name, value] :
         {std::pair{"layers", layers}, std::pair{"kv_heads", kv_heads}, std::pair{"head_dim", head_dim},
          std::pair{"tokens_per_block", tokens_per_block}})
        if (!value) return bad(std::string(name) + " is 0 (valid: 1..4294967295, the block at most 4 GiB)");
    const std::uint64_t es = dtype_size(dtype);
    if (!es)
        return bad("dtype " + std::to_string(static_cast<std::uint32_t>(dtype)) +
                   " is unknown (valid: 0 fp16, 1 bf16, 2 fp32, 3 int8, 4 fp8_e4m3, 5 fp8_e5m2)");
    if (static_cast<std::uint32_t>(scales) > static_cast<std::uint32_t>(ScaleLayout::per_token))
        return bad("scales " + std::to_string(static_cast<std::uint32_t>(scales)) +
                   " is unknown (valid: 0 none, 1 per_layer, 2 per_head, 3 per_token)");
    if (scales != ScaleLayout::none && es != 1)
        return bad("scales need an 8-bit dtype (int8, fp8_e4m3, fp8_e5m2), dtype is " +
                   std::string(dtype_name(dtype)));
    // Each factor is < 2^32: check every product against overflow (a block must fit the device's
    // 32-bit KV length).
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint32_t>::max();
    std::uint64_t bytes = 2 * es;
    for (std::uint64_t f : {std::uint64_t{layers}, std::uint64_t{kv_heads}, std::uint64_t{head_dim},
                            std::uint64_t{tokens_per_block}}) {
        if (bytes > kMax / f)
            return bad(
                "2 * layers * kv_heads * head_dim * tokens_per_block * dtype size is over the 4 GiB a block "
                "may hold");
        bytes *= f;
    }
    if (bytes < kMinBlockBytes)
        return bad("KV of " + std::to_string(bytes) +
                   " bytes (2 * layers * kv_heads * head_dim * tokens_per_block * " + std::to_string(es) +
                   ") is below the minimum block of " + std::to_string(kMinBlockBytes) +
                   " bytes (raise tokens_per_block)");
    if (bytes % kBlockAlign)
        return bad("KV of " + std::to_string(bytes) + " bytes is not a multiple of " +
                   std::to_string(kBlockAlign));
    const std::uint64_t scale_bytes =
        (scale_count() * sizeof(float) + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
    if (bytes + scale_bytes > kMax)
        return bad("KV of " + std::to_string(bytes) + " bytes and " + std::to_string(scale_bytes) +
                   " bytes of scales are over the 4 GiB a block may hold");
    return bytes + scale_bytes;
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

Query& Query::in_tier(Tier t) noexcept {
    tier = t;
    return *this;
}

Query& Query::nearest(std::uint32_t n) noexcept {
    candidates = n;
    return *this;
}

}  // namespace vrex
