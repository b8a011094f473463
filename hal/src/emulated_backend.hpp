// EmulatedBackend: the V-Rex device in-process. The lib/ reference model is driven only through its
// register file (RegisterFile), with host memory as banks (BankMemory). Backends opened with the
// same geometry share one emulated device, as open files share a kernel device: ids are per
// backend, counters and bank placement are device-wide. Validation and errno values follow the
// uAPI header exactly, like vrex.ko.
#pragma once

#include <cstdint>
#include <memory>

#include "backend.hpp"

namespace vrex {

class EmulatedDevice;
struct EmulatedFile;

class EmulatedBackend final : public Backend {
public:
    static Result<std::unique_ptr<EmulatedBackend>> open(const BackendOptions& options);
    ~EmulatedBackend() override;

    std::string_view name() const noexcept override { return "emulated"; }
    std::string description() const override;

    Result<drm_vrex_device_info> device_info() override;
    Result<drm_vrex_bank_info> bank_info() override;
    std::error_code bo_create(drm_vrex_bo_create& args) override;
    std::error_code bo_destroy(std::uint32_t handle) override;
    Result<std::span<std::byte>> bo_map(std::uint32_t handle) override;
    Result<int> bo_export_dmabuf(std::uint32_t handle) override;
    std::error_code stream_create(drm_vrex_stream_create& args) override;
    std::error_code stream_destroy(std::uint32_t stream) override;
    std::error_code frame_submit(drm_vrex_frame_submit& args) override;
    std::error_code shie_insert(std::uint32_t stream, std::span<drm_vrex_shie_insert_item> items) override;
    std::error_code shie_lookup(std::uint32_t stream, std::span<drm_vrex_shie_lookup_item> items) override;
    std::error_code shie_retire(std::uint32_t stream, std::span<const std::uint32_t> remove,
                                std::span<drm_vrex_released_block> released,
                                std::uint32_t& released_count) override;
    Result<drm_vrex_stats> stats() override;
    std::error_code resv_head_create(drm_vrex_resv_head_create& args) override;
    std::error_code resv_head_destroy(std::uint32_t head) override;
    std::error_code resv_hash(drm_vrex_resv_hash& args) override;
    std::error_code resv_select(std::span<drm_vrex_resv_select_item> items) override;
    std::error_code resv_truncate(std::uint32_t head, std::uint32_t keep) override;
    Result<drm_vrex_resv_stats> resv_stats() override;
    Result<ImportedBo> bo_import_dmabuf(int fd) override;
    Result<std::uint32_t> reg_read(std::uint32_t offset) override;
    int event_fd() const noexcept override { return event_fd_; }
    Result<std::size_t> read_events(std::span<drm_vrex_event_frame> out) override;

    // Test knob: the device disappears (like a hot-unplug). Every backend on it then fails with
    // vrex::errc::device_lost; mappings stay readable until their backend is destroyed; the next
    // open() gets a fresh device.
    void simulate_device_loss();
    // Test knob, vrex_sim's debugfs hang_cmds: the next @commands device commands (of any file)
    // never complete. The first one times out (ETIMEDOUT) and the device is reset as vrex.ko resets
    // it (docs/uapi.md "Device status, timeouts and reset"); when the reset's own commands hang too,
    // three times, the device is wedged: every later command fails with EIO until the device is
    // gone (simulate_device_loss()) and opened again.
    void simulate_hang(std::uint32_t commands);
    // The device is wedged (vrex.ko's sysfs "wedged").
    bool wedged() const;

    // Only open() constructs backends (make_unique needs a public constructor; the key keeps it private).
    class Key {
        friend class EmulatedBackend;
        Key() = default;
    };
    EmulatedBackend(Key, std::shared_ptr<EmulatedDevice> dev, std::uint32_t file, int event_fd);

private:
    // Loads a head's parameters into the ReSV registers (heads of all files share one unit).
    void resv_program(std::uint32_t head);
    // SHIE lookups of validated items, under the device lock: one LOOKUP_TEMPORAL/LOOKUP_SIMILAR,
    // or the similarity items @group of @items as one LOOKUP_SIMILAR_BATCH staged past the banks,
    // @k records (ARG_NEAREST) per item.
    void lookup_one(const EmulatedFile& file, std::uint32_t stream, drm_vrex_shie_lookup_item& it);
    void lookup_batch(const EmulatedFile& file, std::uint32_t stream, std::span<drm_vrex_shie_lookup_item> items,
                      std::span<const std::size_t> group, std::uint32_t k);

    std::shared_ptr<EmulatedDevice> dev_;
    std::uint32_t file_;
    int event_fd_;
};

const BackendFactory& emulated_backend_factory();

}  // namespace vrex
