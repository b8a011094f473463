// The Backend seam (private to libvrex-hal; users see vrex/hal.hpp): one interface for every device operation, mirroring uapi/drm/vrex_accel.h one to
// one so the kernel backend stays a thin ioctl layer and the emulation can be checked against it.
//
// Rules every implementation follows (the conformance suite checks them on each backend):
// - Structs are the uAPI structs: inputs are validated exactly as the uAPI header states (flags
//   against *_VALID masks, pads zero, ranges inside BOs) and fail with the same errno values, as
//   std::error_code in std::generic_category (EINVAL, ENOENT, ERANGE, ENOSPC, E2BIG, EEXIST, ...).
// - Ids (BO handles, stream ids, block ids) belong to the Backend instance (the "file") that made
//   them; another instance gets ENOENT.
// - Device loss (ENODEV from the driver, or a simulated loss) is reported as vrex::errc::device_lost
//   by every later call; nothing crashes, destroying the Backend still releases host resources.
// - Thread safety: every method may be called from any thread; the backend serialises access to the
//   device. Ids are not locked per caller: the HAL above keeps one stream to one thread at a time.
#pragma once

#include <drm/vrex_accel.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vrex/errors.hpp"
#include "vrex/hal.hpp"
#include "vrex/result.hpp"

namespace vrex {

// A dma-buf imported with Backend::bo_import_dmabuf().
struct ImportedBo {
    std::uint32_t handle = 0;
    std::uint64_t size = 0;  // bytes of the dma-buf
    // The dma-buf is a BO this Backend created (PRIME self-import): @handle is that BO's and the
    // import took no reference of its own (no bo_destroy() for it).
    bool own = false;
};

class Backend {
public:
    virtual ~Backend() = default;
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    // "kernel" or "emulated" (registry name, see backend_factories()).
    virtual std::string_view name() const noexcept = 0;
    // Human-readable node or configuration: "/dev/accel/accel0 (vrex 1.3.0)", "16 banks x 4 MiB, ...".
    virtual std::string description() const = 0;

    // DRM_VREX_QUERY with DRM_VREX_QUERY_DEVICE_INFO / DRM_VREX_QUERY_BANKS.
    virtual Result<drm_vrex_device_info> device_info() = 0;
    virtual Result<drm_vrex_bank_info> bank_info() = 0;

    // DRM_VREX_BO_CREATE: in size, bank_mask, flags (pad 0); out handle, bank.
    virtual std::error_code bo_create(drm_vrex_bo_create& args) = 0;
    // GEM close. ENOENT for an unknown handle. Mappings handed out by bo_map() become invalid.
    virtual std::error_code bo_destroy(std::uint32_t handle) = 0;
    // Host mapping of the whole BO (rounded size), read/write, valid until bo_destroy() or the
    // Backend's destruction. Repeated calls return the same mapping.
    virtual Result<std::span<std::byte>> bo_map(std::uint32_t handle) = 0;
    // PRIME export (O_RDWR | O_CLOEXEC). The caller owns the returned fd; mmap of it shares memory
    // with bo_map() of the same BO.
    virtual Result<int> bo_export_dmabuf(std::uint32_t handle) = 0;

    // DRM_VREX_STREAM_CREATE / _DESTROY.
    virtual std::error_code stream_create(drm_vrex_stream_create& args) = 0;
    virtual std::error_code stream_destroy(std::uint32_t stream) = 0;

    // DRM_VREX_FRAME_SUBMIT: in stream..user_data (pad 0); out fp..roi_dy. With DRM_VREX_FRAME_EVENT
    // a drm_vrex_event_frame is queued for read_events() and event_fd() becomes readable.
    virtual std::error_code frame_submit(drm_vrex_frame_submit& args) = 0;

    // DRM_VREX_SHIE_INSERT / _LOOKUP: 1..max_batch items, validated as a whole before anything is
    // applied; per-item outcomes in item.result (insert) or the out fields (lookup).
    virtual std::error_code shie_insert(std::uint32_t stream, std::span<drm_vrex_shie_insert_item> items) = 0;
    virtual std::error_code shie_lookup(std::uint32_t stream, std::span<drm_vrex_shie_lookup_item> items) = 0;

    // DRM_VREX_SHIE_RETIRE: removes @remove, then releases zombies. @released_count gets the number
    // written to @released; if @released cannot hold every block that could be released, returns
    // ENOSPC with nothing released and @released_count set to the room needed.
    virtual std::error_code shie_retire(std::uint32_t stream, std::span<const std::uint32_t> remove,
                                        std::span<drm_vrex_released_block> released,
                                        std::uint32_t& released_count) = 0;

    // DRM_VREX_STATS (device-wide counters).
    virtual Result<drm_vrex_stats> stats() = 0;

    // One register: 4-byte aligned offset inside the register window, else EINVAL. The kernel
    // backend reads the device's debugfs "window" file (the REG_READ ioctl is retired), which needs
    // root (EACCES/EPERM otherwise; EOPNOTSUPP without debugfs).
    virtual Result<std::uint32_t> reg_read(std::uint32_t offset) = 0;

    // Completion events. event_fd() is pollable (readable while events are queued; the kernel
    // backend returns the DRM fd, the emulation an eventfd) and stays owned by the Backend.
    // read_events() never blocks: it returns the number of events written (0 when none queued).
    virtual int event_fd() const noexcept = 0;
    virtual Result<std::size_t> read_events(std::span<drm_vrex_event_frame> out) = 0;

    // Appended after the existing virtuals, so their vtable slots stay where they were.
    // ReSV (DRM_VREX_RESV_*, docs/hw/resv.md), present when device_info().caps has
    // DRM_VREX_CAP_RESV. Heads belong to the Backend instance like streams. A backend without the
    // unit keeps these defaults: std::errc::operation_not_supported.
    virtual std::error_code resv_head_create(drm_vrex_resv_head_create& args) { return unsupported(args); }
    virtual std::error_code resv_head_destroy(std::uint32_t head) { return unsupported(head); }
    // DRM_VREX_RESV_HASH: in head..offset; out tokens, clusters.
    virtual std::error_code resv_hash(drm_vrex_resv_hash& args) { return unsupported(args); }
    // DRM_VREX_RESV_SELECT: 1..max_batch items validated as a whole; out fields per item.
    virtual std::error_code resv_select(std::span<drm_vrex_resv_select_item> items) {
        return unsupported(items);
    }
    virtual std::error_code resv_truncate(std::uint32_t head, std::uint32_t keep) {
        return unsupported(head + keep);
    }
    // DRM_VREX_QUERY with DRM_VREX_QUERY_RESV_STATS.
    virtual Result<drm_vrex_resv_stats> resv_stats() {
        return std::make_error_code(std::errc::operation_not_supported);
    }

    // PRIME import (DRM_IOCTL_PRIME_FD_TO_HANDLE) of a dma-buf another driver exported, e.g. an
    // inference engine's own KV memory. The BO is in no bank (DRM_VREX_BANK_NONE, counted in
    // bank_info()'s imported_* fields); SHIE inserts may point into it, frame_submit() and the ReSV
    // calls refuse it (EINVAL); bo_map() maps the dma-buf itself. Importing the same buffer again
    // gives the same handle, one reference per import, each dropped by bo_destroy(). The caller's
    // fd stays the caller's. EBADF for a bad fd, EINVAL for an fd that is not a dma-buf (the
    // emulation, which has no dma-bufs, takes any mmap-able fd of whole pages: a memfd stands in).
    virtual Result<ImportedBo> bo_import_dmabuf(int fd) { return unsupported_r<ImportedBo>(fd); }

protected:
    Backend() = default;

private:
    template <typename T>
    static std::error_code unsupported(const T&) {
        return std::make_error_code(std::errc::operation_not_supported);
    }
    template <typename R, typename T>
    static Result<R> unsupported_r(const T&) {
        return std::make_error_code(std::errc::operation_not_supported);
    }
};

// One entry of the backend registry. available() says whether open() can succeed here without
// side effects (kernel: a vrex device node exists; emulation: always).
struct BackendFactory {
    std::string_view name;
    bool (*available)();
    Result<std::unique_ptr<Backend>> (*open)(const BackendOptions& options);
};

// Every backend built into this library, in auto-selection priority order (kernel first, then the
// emulation; hal/src/backend_registry.cpp). Tests parameterise over this list.
std::span<const BackendFactory> backend_factories();
// The factory named @name, or nullptr.
const BackendFactory* find_backend_factory(std::string_view name);

}  // namespace vrex
