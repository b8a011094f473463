#include "emulated_device.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <string>

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
           "/z" + std::to_string(c.zombie_frames);
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

}  // namespace

EmulatedDevice::EmulatedDevice(Key, const vrex_model_config& c)
    : cfg(c), mem(c.nbanks, c.bank_size, kLookupStageBytes), regs(&model), slots(c.max_streams), blocks(c.block_capacity),
      resv_heads(c.resv_heads)
{
    const long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0)
        page_size = static_cast<std::uint64_t>(ps);
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
    files[id];
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
        if (bo.imported)
            release_import(bo);
        else
            mem.release(bo.ext);
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
    owner.live = false;
    if (owner.stream < slots.size() && slots[owner.stream].live_blocks)
        slots[owner.stream].live_blocks--;
    auto f = files.find(owner.file);
    if (f == files.end())
        return;
    auto bo = f->second.bos.find(owner.handle);
    if (bo == f->second.bos.end())
        return;
    bo->second.live_blocks--;
    if (out && (reason == VREX_RELEASE_ZOMBIE || reason == VREX_RELEASE_REMOVED)) {
        drm_vrex_released_block r{};
        r.block = block;
        r.handle = owner.handle;
        r.offset = addr - bo->second.ext.addr;
        r.length = length;
        r.reason = reason;
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

int EmulatedDevice::close_stream(std::uint32_t slot)
{
    EmulatedStreamSlot& s = slots[slot];
    regs.write(VREX_REG_ARG_STREAM, slot);
    const int err = regs.command(VREX_CMD_STREAM_CLOSE);
    drain_released(nullptr);
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
