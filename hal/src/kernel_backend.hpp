// KernelBackend: the Backend seam over vrex.ko. Every operation is one ioctl on the device node
// through drmIoctl (which restarts on EINTR/EAGAIN); the driver does all validation, so errno values
// pass through unchanged as std::generic_category codes. ENODEV (drm_dev_enter() failing after an
// unbind or hot-unplug) makes the backend lost: that call and every later one report
// vrex::errc::device_lost.
//
// Two things the ioctls do not give and this layer keeps per open file:
// - BO sizes (bo_map() maps the whole BO through its DRM_VREX_BO_MMAP_OFFSET fake offset);
// - which BOs live SHIE blocks point into. GEM close cannot fail, and the driver keeps a closed BO's
//   memory alive under its blocks, but its handle number would be reused by the next BO while
//   lookups still report the old one. bo_destroy() therefore refuses (EBUSY) a BO with live blocks,
//   as the emulation does; the count follows insert results, retire's released list and
//   stream_destroy().
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backend.hpp"

namespace vrex {

class KernelBackend final : public Backend {
public:
    // Opens @options.node, or the first vrex node discovery finds. errc::no_device when there is
    // none, errc::not_vrex_device when the node's DRM driver is not vrex.
    static Result<std::unique_ptr<KernelBackend>> open(const BackendOptions& options);
    ~KernelBackend() override;

    std::string_view name() const noexcept override { return "kernel"; }
    std::string description() const override { return description_; }
    const std::string& node() const noexcept { return node_; }

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
    // The DRM fd itself: readable while the file has queued events.
    int event_fd() const noexcept override { return fd_; }
    Result<std::size_t> read_events(std::span<drm_vrex_event_frame> out) override;

    class Key {
        friend class KernelBackend;
        Key() = default;
    };
    KernelBackend(Key, int fd, std::string node, std::string description);

private:
    struct Bo {
        std::uint64_t size = 0;  // page-rounded
        std::byte* map = nullptr;
        std::uint32_t live_blocks = 0;
        // Imported (PRIME): a dup of the dma-buf, mapped by bo_map() (vrex.ko does not map imported
        // memory), and the imports the handle stands for (the GEM handle goes with the last).
        int dmabuf = -1;
        std::uint32_t imports = 0;
    };
    struct Block {
        std::uint32_t stream;
        std::uint32_t handle;
        std::uint64_t block_gen;  // the driver's generation of the block (0 before uAPI 1.3)
        std::uint64_t bo_gen;     // of the BO it points into (0 before uAPI 1.2)
    };

    // drmIoctl with errno -> error_code; ENODEV marks the device lost.
    std::error_code ioctl(unsigned long request, void* arg);
    std::error_code lost_or(int err);
    // Forgets the incarnation of block @rec.block that @stream inserted, as @rec names it (ids are
    // recycled: a release record may arrive after another stream got the same id).
    void drop_block(const drm_vrex_released_block& rec, std::uint32_t stream);

    int fd_;
    std::string node_;
    std::string description_;
    std::atomic<bool> lost_{false};
    std::mutex mu_;  // bos_, blocks_, read_events()
    std::map<std::uint32_t, Bo> bos_;
    std::multimap<std::uint32_t, Block> blocks_;
};

const BackendFactory& kernel_backend_factory();

}  // namespace vrex
