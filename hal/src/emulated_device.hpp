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
#include <sys/types.h>
#include <vector>

#include "bank_memory.hpp"
#include "register_file.hpp"
#include "backend.hpp"

namespace vrex {

struct EmulatedBo {
    BankMemory::Extent ext;
    std::uint32_t live_blocks = 0;  // KV blocks of the SHIE pointing into it
    std::uint64_t gen = 0;          // bo_gen: unique on the device, never reused, never 0 (as vrex.ko)
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
    uid_t uid = 0;         // the opener's effective uid: quotas are per uid, as vrex.ko's
    bool limited = true;   // opened without CAP_SYS_ADMIN: the uid's quotas apply
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
    // Records of blocks a reset released, for the stream's next retire (vrex.ko keeps them so).
    std::vector<drm_vrex_released_block> kept;
};

struct EmulatedBlockOwner {
    bool live = false;
    std::uint32_t file = 0;
    std::uint32_t stream = 0;
    std::uint32_t handle = 0;
    std::uint64_t block_gen = 0;  // the model's generation of the block (RES_BLOCK_GEN at insert)
    std::uint64_t bo_gen = 0;     // of the BO it points into
    std::uint32_t entries = 0;    // SHIE entries made for it (1 + aliases), charged to its file's uid
};

struct EmulatedResvHead {
    bool used = false;
    std::uint32_t file = 0;
    drm_vrex_resv_params params{};
    // The device's reset epoch the head's tokens belong to: another one means a reset emptied it
    // behind its owner's back (ESTALE until truncated to 0), as vrex.ko's heads.
    std::uint32_t epoch = 0;
};

// What one uid holds on the device (vrex.ko's struct vrex_user).
enum class QuotaRes { bytes, streams, heads, entries, imports, count };
struct EmulatedUser {
    std::uint64_t used[static_cast<int>(QuotaRes::count)] = {};
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

    // Quotas (lib/vrex_quota.h, the kernel's defaults): charges @n of @res to @file's uid, or
    // EDQUOT with nothing charged when a limited file's uid would pass its limit.
    int charge(const EmulatedFile& file, QuotaRes res, std::uint64_t n);
    void uncharge(const EmulatedFile& file, QuotaRes res, std::uint64_t n);
    std::uint64_t quota_limit(QuotaRes res) const;
    // A block the device no longer holds: ownership counts, the file's entry charges.
    void forget_block(std::uint32_t block);

    // Device reset and the wedged state, as vrex.ko handles a command that does not complete
    // (kernel/vrex_device.c). Runs before every command (RegisterFile::intercept): a wedged device
    // fails it with EIO; a hung one (test knob hang_cmds, as vrex_sim's) times out, and the device
    // is reset: up to kResetTries RESETs of the reference model, each proven by a NOP and the
    // reopening of every open stream slot; when all fail, the device is wedged.
    int intercept_command(std::uint32_t opcode);
    void reset_after_timeout();
    int reset_once();
    static constexpr int kResetTries = 3;
    std::uint32_t hang_cmds = 0;
    bool resetting = false;
    bool wedged = false;
    std::uint32_t reset_epoch = 0;
    std::uint32_t resets = 0;

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
    std::uint64_t next_bo_gen = 1;  // BO generations, as vrex.ko hands them out
    std::vector<EmulatedStreamSlot> slots;
    std::vector<EmulatedBlockOwner> blocks;
    std::map<std::uint32_t, std::uint32_t> hw_pool_refs;  // pooled hardware pool -> streams
    std::vector<EmulatedResvHead> resv_heads;             // ReSV hardware heads
    std::map<uid_t, EmulatedUser> users;

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
