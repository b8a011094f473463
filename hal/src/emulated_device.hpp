// State of one emulated V-Rex device, shared by the EmulatedBackends ("files") opened on it.
// Everything here is guarded by mu; EmulatedBackend holds it for the whole of each operation, as
// vrex.ko holds its device lock around register programming.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bank_memory.hpp"
#include "register_file.hpp"
#include "backend.hpp"

namespace vrex {

struct EmulatedBo {
    BankMemory::Extent ext;
    std::uint32_t live_blocks = 0;  // KV blocks of the SHIE pointing into it
    // Imported (bo_import_dmabuf): ext.addr is VREX_KV_ADDR_EXTERNAL (in no bank), ext.size the
    // buffer's size, ext.memfd -1; the HAL's dup of the fd, its mapping and the file it names.
    bool imported = false;
    int import_fd = -1;
    std::byte* import_map = nullptr;
    std::uint32_t imports = 0;
    std::uint64_t import_dev = 0;
    std::uint64_t import_ino = 0;
};

struct EmulatedFile {
    std::map<std::uint32_t, EmulatedBo> bos;          // GEM handle -> BO
    std::map<std::uint32_t, std::uint32_t> pools;     // user pool -> hardware pool
    std::deque<drm_vrex_event_frame> events;
};

struct EmulatedStreamSlot {
    bool open = false;
    std::uint32_t file = 0;
    std::uint32_t hw_pool = 0;
    std::uint32_t user_pool = 0;
    bool pooled = false;
    std::uint32_t live_blocks = 0;
};

struct EmulatedBlockOwner {
    bool live = false;
    std::uint32_t file = 0;
    std::uint32_t stream = 0;
    std::uint32_t handle = 0;
};

struct EmulatedResvHead {
    bool used = false;
    std::uint32_t file = 0;
    drm_vrex_resv_params params{};
};

class EmulatedDevice {
public:
    // Device memory past the banks where lookup batches are staged (descriptors, then records),
    // as vrex.ko stages them on the simulated device: whole pages.
    static constexpr std::uint64_t kLookupStageBytes = 8192;
    static_assert(VREX_LOOKUP_STAGE_SIZE <= kLookupStageBytes);

    // The shared device for this geometry (created on first use, or after a loss).
    static Result<std::shared_ptr<EmulatedDevice>> get(const BackendOptions& options);
    ~EmulatedDevice();
    EmulatedDevice(const EmulatedDevice&) = delete;
    EmulatedDevice& operator=(const EmulatedDevice&) = delete;

    std::uint32_t add_file();
    // Closes every stream and BO of @file (as the kernel does on the last close of an fd).
    void remove_file(std::uint32_t file);
    // Unmaps and closes an imported BO's host side (its entry is erased by the caller).
    static void release_import(EmulatedBo& bo);
    void mark_lost();

    // Applies the release record in the RES_* registers (after POP_RELEASED or REMOVE, which
    // returns its record directly instead of queueing it).
    void take_released(std::vector<drm_vrex_released_block>* out);
    // Pops every queued release record and updates ownership; records of ZOMBIE/REMOVED releases
    // are appended to @out (when given) as the uAPI struct.
    void drain_released(std::vector<drm_vrex_released_block>* out);
    // Closes a hardware stream slot, drains its release records and drops its pool reference.
    int close_stream(std::uint32_t slot);
    // Empties a ReSV head and gives it back.
    void release_resv_head(std::uint32_t head);
    std::uint32_t alloc_hw_pool();

    std::mutex mu;
    bool lost = false;
    vrex_model_config cfg{};
    std::uint64_t page_size = 4096;
    std::unique_ptr<std::uint64_t[]> arena;
    vrex_model model{};
    BankMemory mem;
    RegisterFile regs;
    std::map<std::uint32_t, EmulatedFile> files;
    std::uint32_t next_file = 1;
    std::vector<EmulatedStreamSlot> slots;
    std::vector<EmulatedBlockOwner> blocks;
    std::map<std::uint32_t, std::uint32_t> hw_pool_refs;  // pooled hardware pool -> streams
    std::vector<EmulatedResvHead> resv_heads;             // ReSV hardware heads

    // Only get() constructs devices (make_shared needs a public constructor, the key keeps it private).
    class Key {
        friend class EmulatedDevice;
        Key() = default;
    };
    EmulatedDevice(Key, const vrex_model_config& cfg);

private:
    std::string key_;
};

}  // namespace vrex
