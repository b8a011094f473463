#include "emulated_device.hpp"

#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" {
#include "vrex_quota.h"
}

namespace vrex {
namespace {

std::mutex registry_mu;
std::map<std::string, std::weak_ptr<EmulatedDevice>>& registry()
{
    static std::map<std::string, std::weak_ptr<EmulatedDevice>> devices;
    return devices;
}

std::string config_key(const vrex_model_config& c)
{
    return std::to_string(c.nbanks) + "x" + std::to_string(c.bank_size) + "/g" + std::to_string(c.group_banks) +
           "/z" + std::to_string(c.zombie_frames) + "/v" + std::to_string(c.hw_version >> 16) + "." +
           std::to_string(c.hw_version & 0xffff);
}

// The hardware revision the emulation is: VREX_EMU_HW_VERSION "1.1" (the default, also when unset
// or empty) or "1.0", to run an engine as on a 1.0 board (vrex_sim.ko's hw_version parameter and
// QEMU's hw-version property are the kernel side's).
Result<std::uint32_t> emulated_hw_version()
{
    const char* v = std::getenv("VREX_EMU_HW_VERSION");
    const std::string_view s = v ? v : "";
    if (s.empty() || s == "1.1") return std::uint32_t{VREX_VERSION_VALUE};
    if (s == "1.0") return std::uint32_t{VREX_VERSION_1_0};
    return Error{std::errc::invalid_argument, "emulated device: VREX_EMU_HW_VERSION=\"" + std::string(s) +
                                                  "\" is not a hardware revision the emulation models (valid: "
                                                  "1.0, 1.1; unset for 1.1)"};
}

// The emulated device's geometry from @o, every field checked against the range the reference
// model and the HAL take (the error names the field and the range).
Result<vrex_model_config> emulated_config(const BackendOptions& o) {
    using B = BackendOptions;
    auto out_of_range = [](const std::string& what) {
        return Error{std::errc::invalid_argument, "emulated device: " + what};
    };
    vrex_model_config c{};
    vrex_model_default_config(&c);
    if (o.emu_banks > B::kEmuMaxBanks)
        return out_of_range("emu_banks " + std::to_string(o.emu_banks) + " is out of range (valid: 1.." +
                            std::to_string(B::kEmuMaxBanks) + ", 0 for " + std::to_string(c.nbanks) + ")");
    if (o.emu_bank_size && (o.emu_bank_size < B::kEmuMinBankSize || o.emu_bank_size > B::kEmuMaxBankSize ||
                            o.emu_bank_size % 4096))
        return out_of_range("emu_bank_size " + std::to_string(o.emu_bank_size) +
                            " is out of range (valid: a multiple of 4096 in " +
                            std::to_string(B::kEmuMinBankSize) + ".." + std::to_string(B::kEmuMaxBankSize) +
                            " bytes, 0 for " + std::to_string(c.bank_size) + ")");
    if (o.emu_zombie_frames > B::kEmuMaxZombieFrames)
        return out_of_range("emu_zombie_frames " + std::to_string(o.emu_zombie_frames) +
                            " is out of range (valid: 1.." + std::to_string(B::kEmuMaxZombieFrames) +
                            ", 0 for " + std::to_string(c.zombie_frames) + ")");
    if (o.emu_banks) c.nbanks = o.emu_banks;
    if (o.emu_bank_size) c.bank_size = o.emu_bank_size;
    if (o.emu_group_banks)
        c.group_banks = o.emu_group_banks;
    else if (c.nbanks % c.group_banks)
        c.group_banks = 1;  // the default pairs do not divide an odd bank count
    if (o.emu_zombie_frames) c.zombie_frames = o.emu_zombie_frames;
    auto hw = emulated_hw_version();
    if (!hw) return hw.error_info();
    c.hw_version = *hw;
    if (c.group_banks > c.nbanks || c.nbanks % c.group_banks)
        return out_of_range("emu_group_banks " + std::to_string(c.group_banks) + " does not divide the " +
                            std::to_string(c.nbanks) +
                            " banks (valid: a divisor of emu_banks, 0 for 2 or 1)");
    if (std::uint64_t{c.nbanks} * c.bank_size > B::kEmuMaxBytes)
        return out_of_range("emu_banks x emu_bank_size = " + std::to_string(c.nbanks) + " x " +
                            std::to_string(c.bank_size) + " bytes is over the " +
                            std::to_string(B::kEmuMaxBytes) +
                            " bytes of address space the emulation reserves at most");
    if (!vrex_model_arena_size(&c)) return out_of_range("the reference model refuses " + config_key(c));
    return c;
}

// Whether this process has CAP_SYS_ADMIN in effect (vrex.ko does not limit such openers).
bool cap_sys_admin()
{
    __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
    if (syscall(SYS_capget, &hdr, data) != 0)
        return false;
    return data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));
}

constexpr bool cmd_failed(int e) { return e == ETIMEDOUT || e == EIO; }

}  // namespace

EmulatedDevice::EmulatedDevice(Key, const vrex_model_config& c)
    : cfg(c), mem(c.nbanks, c.bank_size, kLookupStageBytes), regs(&model), slots(c.max_streams), blocks(c.block_capacity),
      resv_heads(c.resv_heads)
{
    const long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        page_size = static_cast<std::uint64_t>(ps);
    regs.intercept = [this](std::uint32_t opcode) { return intercept_command(opcode); };
}

EmulatedDevice::~EmulatedDevice() = default;

Result<std::shared_ptr<EmulatedDevice>> EmulatedDevice::get(const BackendOptions& o)
{
    auto config = emulated_config(o);
    if (!config) return config.error_info();
    const vrex_model_config c = *config;
    const std::size_t arena_bytes = vrex_model_arena_size(&c);

    std::lock_guard lock(registry_mu);
    const std::string key = config_key(c);
    if (auto dev = registry()[key].lock())
        return dev;

    auto dev = std::make_shared<EmulatedDevice>(Key{}, c);
    if (!dev->mem.ok())
        return Error{std::errc::not_enough_memory, "emulated device: no address space for " +
                                                       std::to_string(c.nbanks) + " banks of " +
                                                       std::to_string(c.bank_size) + " bytes"};
    dev->arena = std::make_unique<std::uint64_t[]>(arena_bytes / sizeof(std::uint64_t) + 1);
    const int err = vrex_model_init(&dev->model, &c, dev->arena.get(), arena_bytes,
                                    reinterpret_cast<u8*>(dev->mem.base()), dev->mem.size());
    if (err)
        return std::error_code(err, std::generic_category());
    dev->regs.write(VREX_REG_IRQ_MASK, 0);  // completion is polled, nothing to interrupt
    dev->key_ = key;
    registry()[key] = dev;
    return dev;
}

std::uint32_t EmulatedDevice::add_file()
{
    const std::uint32_t id = next_file++;
    EmulatedFile& f = files[id];
    f.uid = geteuid();
    f.limited = !cap_sys_admin();
    return id;
}

void EmulatedDevice::remove_file(std::uint32_t file)
{
    auto it = files.find(file);
    if (it == files.end())
        return;
    if (!lost) {
        for (std::uint32_t s = 0; s < slots.size(); s++)
            if (slots[s].open && slots[s].file == file)
                close_stream(s);
        for (std::uint32_t h = 0; h < resv_heads.size(); h++)
            if (resv_heads[h].used && resv_heads[h].file == file)
                release_resv_head(h);
    }
    for (auto& [handle, bo] : it->second.bos) {
        if (bo.imported) {
            release_import(bo);
            uncharge(it->second, QuotaRes::imports, 1);
        } else {
            mem.release(bo.ext);
            uncharge(it->second, QuotaRes::bytes, bo.ext.size);
        }
    }
    files.erase(it);
}

void EmulatedDevice::release_import(EmulatedBo& bo)
{
    if (bo.import_map)
        munmap(bo.import_map, bo.ext.size);
    if (bo.import_fd >= 0)
        close(bo.import_fd);
    bo.import_map = nullptr;
    bo.import_fd = -1;
}

void EmulatedDevice::release_resv_head(std::uint32_t head)
{
    regs.write(VREX_REG_ARG_HEAD, head);
    regs.write(VREX_REG_ARG_COUNT, 0);
    regs.command(VREX_CMD_RESV_TRUNCATE);
    if (auto f = files.find(resv_heads[head].file); f != files.end())
        uncharge(f->second, QuotaRes::heads, 1);
    resv_heads[head] = EmulatedResvHead{};
}

void EmulatedDevice::mark_lost()
{
    lost = true;
    std::lock_guard lock(registry_mu);
    auto it = registry().find(key_);
    if (it != registry().end() && it->second.lock().get() == this)
        registry().erase(it);
}

void EmulatedDevice::take_released(std::vector<drm_vrex_released_block>* out)
{
    const std::uint32_t block = regs.read(VREX_REG_RES_BLOCK);
    if (block >= blocks.size())
        return;
    EmulatedBlockOwner& owner = blocks[block];
    const std::uint32_t reason = regs.read(VREX_REG_RES_REASON);
    const std::uint64_t addr = regs.read64(VREX_REG_RES_KV_ADDR_LO, VREX_REG_RES_KV_ADDR_HI);
    const std::uint32_t length = regs.read(VREX_REG_RES_KV_LEN);
    if (!owner.live)
        return;
    forget_block(block);
    auto f = files.find(owner.file);
    if (f == files.end())
        return;
    auto bo = f->second.bos.find(owner.handle);
    if (bo == f->second.bos.end())
        return;
    if (out && (reason == VREX_RELEASE_ZOMBIE || reason == VREX_RELEASE_REMOVED)) {
        drm_vrex_released_block r{};
        r.block = block;
        r.handle = owner.handle;
        r.offset = addr - bo->second.ext.addr;
        r.length = length;
        r.reason = reason;
        r.bo_gen = owner.bo_gen;
        r.block_gen = owner.block_gen;
        out->push_back(r);
    }
}

void EmulatedDevice::drain_released(std::vector<drm_vrex_released_block>* out)
{
    for (;;) {
        if (regs.command(VREX_CMD_POP_RELEASED) || regs.read(VREX_REG_RES_BLOCK) == VREX_NIL)
            return;
        take_released(out);
        if (regs.read(VREX_REG_RES_COUNT) == 0)
            return;
    }
}

void EmulatedDevice::forget_block(std::uint32_t block)
{
    EmulatedBlockOwner& owner = blocks[block];
    if (!owner.live)
        return;
    owner.live = false;
    if (owner.stream < slots.size() && slots[owner.stream].live_blocks)
        slots[owner.stream].live_blocks--;
    auto f = files.find(owner.file);
    if (f == files.end())
        return;
    uncharge(f->second, QuotaRes::entries, owner.entries);
    owner.entries = 0;
    if (auto bo = f->second.bos.find(owner.handle); bo != f->second.bos.end() && bo->second.live_blocks)
        bo->second.live_blocks--;
}

std::uint64_t EmulatedDevice::quota_limit(QuotaRes res) const
{
    switch (res) {
        case QuotaRes::bytes:
            return vrex_quota_limit(std::uint64_t{cfg.nbanks} * cfg.bank_size, VREX_QUOTA_DEFAULT_PCT);
        case QuotaRes::streams:
            return vrex_quota_limit(cfg.max_streams, VREX_QUOTA_DEFAULT_PCT);
        case QuotaRes::heads:
            return vrex_quota_limit(cfg.resv_heads, VREX_QUOTA_DEFAULT_PCT);
        case QuotaRes::entries:
            return vrex_quota_limit(cfg.shie_capacity, VREX_QUOTA_DEFAULT_PCT);
        case QuotaRes::imports:
        case QuotaRes::count:
            break;
    }
    return VREX_QUOTA_DEFAULT_IMPORTS;
}

int EmulatedDevice::charge(const EmulatedFile& file, QuotaRes res, std::uint64_t n)
{
    std::uint64_t& used = users[file.uid].used[static_cast<int>(res)];
    if (file.limited && used + n > quota_limit(res))
        return EDQUOT;
    used += n;
    return 0;
}

void EmulatedDevice::uncharge(const EmulatedFile& file, QuotaRes res, std::uint64_t n)
{
    std::uint64_t& used = users[file.uid].used[static_cast<int>(res)];
    used -= std::min(used, n);
}

int EmulatedDevice::intercept_command(std::uint32_t)
{
    // Nothing reaches a wedged device: it answers nothing in time.
    if (wedged)
        return EIO;
    if (!hang_cmds)
        return 0;
    hang_cmds--;
    if (!resetting)
        reset_after_timeout();
    return ETIMEDOUT;
}

void EmulatedDevice::reset_after_timeout()
{
    if (wedged)
        return;
    resetting = true;
    int e = 0;
    for (int n = 0; n < kResetTries; n++)
        if (!(e = reset_once()))
            break;
    resetting = false;
    if (e)
        wedged = true;
}

int EmulatedDevice::reset_once()
{
    resets++;
    reset_epoch++;
    // Every block the device held goes with the reset: its record waits for its own stream's next
    // retire, reason RESET, so the owner frees the KV memory.
    for (std::uint32_t b = 0; b < blocks.size(); b++) {
        const EmulatedBlockOwner o = blocks[b];
        if (!o.live)
            continue;
        const vrex_block& mb = model.blocks.b[b];
        drm_vrex_released_block r{};
        r.block = b;
        r.handle = o.handle;
        if (auto f = files.find(o.file); f != files.end())
            if (auto bo = f->second.bos.find(o.handle); bo != f->second.bos.end())
                r.offset = mb.kv.addr - bo->second.ext.addr;
        r.length = mb.kv.length;
        r.reason = DRM_VREX_RELEASE_RESET;
        r.bo_gen = o.bo_gen;
        r.block_gen = o.block_gen;
        forget_block(b);
        if (o.stream < slots.size() && slots[o.stream].open)
            slots[o.stream].kept.push_back(r);
    }
    // The reference model's RESET: SHIE, blocks, release FIFO, streams and ReSV heads emptied.
    regs.write(VREX_REG_RESET, VREX_RESET_MAGIC);
    regs.write(VREX_REG_IRQ_MASK, 0);
    if (const int e = regs.command(VREX_CMD_NOP); cmd_failed(e))
        return e;
    // Every open stream slot again, empty, with its id and pool (frame numbers restart).
    for (std::uint32_t slot = 0; slot < slots.size(); slot++) {
        if (!slots[slot].open)
            continue;
        regs.write(VREX_REG_ARG_STREAM, slot);
        regs.write(VREX_REG_ARG_POOL, slots[slot].hw_pool);
        if (const int e = regs.command(VREX_CMD_STREAM_OPEN); cmd_failed(e))
            return e;
    }
    return 0;
}

int EmulatedDevice::close_stream(std::uint32_t slot)
{
    EmulatedStreamSlot& s = slots[slot];
    regs.write(VREX_REG_ARG_STREAM, slot);
    const int err = regs.command(VREX_CMD_STREAM_CLOSE);
    drain_released(nullptr);
    // A wedged device closed nothing: its blocks are gone with it all the same.
    for (std::uint32_t b = 0; b < blocks.size(); b++)
        if (blocks[b].live && blocks[b].stream == slot)
            forget_block(b);
    if (auto f = files.find(s.file); f != files.end())
        uncharge(f->second, QuotaRes::streams, 1);
    if (s.pooled) {
        auto ref = hw_pool_refs.find(s.hw_pool);
        if (ref != hw_pool_refs.end() && --ref->second == 0) {
            hw_pool_refs.erase(ref);
            auto f = files.find(s.file);
            if (f != files.end())
                f->second.pools.erase(s.user_pool);
        }
    }
    s = EmulatedStreamSlot{};
    return err;
}

std::uint32_t EmulatedDevice::alloc_hw_pool()
{
    // Lowest free id below the private-pool range: deterministic, so the kernel's simulated device
    // and the emulation salt placement keys identically.
    std::uint32_t id = 1;
    for (const auto& [pool, refs] : hw_pool_refs) {
        if (pool != id)
            break;
        id++;
    }
    return id;
}

}  // namespace vrex
