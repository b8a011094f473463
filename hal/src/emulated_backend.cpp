#include "emulated_backend.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <string>

#include "emulated_device.hpp"
#include "lookup_answer.hpp"

namespace vrex {
namespace {

std::error_code err(std::errc e) { return std::make_error_code(e); }
std::error_code errno_code(int e) { return {e, std::generic_category()}; }

constexpr std::uint64_t kU32Max = std::numeric_limits<std::uint32_t>::max();

bool fp_is_zero(const __u64 (&fp)[2]) { return fp[0] == 0 && fp[1] == 0; }

// Byte range [offset, offset + length) inside a BO of @size, without overflow.
bool range_inside(std::uint64_t offset, std::uint64_t length, std::uint64_t size)
{
    return offset <= size && length <= size - offset;
}

}  // namespace

// Every operation takes the device lock, refuses a lost device and finds the calling file.
#define VREX_EMU_ENTER(ret_lost)                      \
    std::lock_guard lock(dev_->mu);                   \
    if (dev_->lost)                                   \
        return ret_lost;                              \
    EmulatedFile& file = dev_->files.at(file_);       \
    (void)file

EmulatedBackend::EmulatedBackend(Key, std::shared_ptr<EmulatedDevice> dev, std::uint32_t file, int event_fd)
    : dev_(std::move(dev)), file_(file), event_fd_(event_fd)
{
}

Result<std::unique_ptr<EmulatedBackend>> EmulatedBackend::open(const BackendOptions& options)
{
    auto dev = EmulatedDevice::get(options);
    if (!dev) return dev.error_info();  // names the option out of range
    const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0)
        return errno_code(errno);
    std::uint32_t file;
    {
        std::lock_guard lock((*dev)->mu);
        file = (*dev)->add_file();
    }
    return std::make_unique<EmulatedBackend>(Key{}, std::move(*dev), file, efd);
}

EmulatedBackend::~EmulatedBackend()
{
    {
        std::lock_guard lock(dev_->mu);
        dev_->remove_file(file_);
    }
    close(event_fd_);
}

std::string EmulatedBackend::description() const
{
    // Without the backend's name: callers print "emulated: <this>" (vrexctl info, the report).
    const std::uint64_t size = dev_->cfg.bank_size;
    const bool mib = size % (std::uint64_t{1} << 20) == 0;
    return std::to_string(dev_->cfg.nbanks) + " banks x " + std::to_string(mib ? size >> 20 : size >> 10) +
           (mib ? " MiB" : " KiB") + ", reference model in-process" +
           (dev_->cfg.hw_version == VREX_VERSION_1_0 ? ", hardware 1.0" : "");
}

void EmulatedBackend::simulate_hang(std::uint32_t commands)
{
    std::lock_guard lock(dev_->mu);
    dev_->hang_cmds = commands;
}

bool EmulatedBackend::wedged() const
{
    std::lock_guard lock(dev_->mu);
    return dev_->wedged;
}

void EmulatedBackend::simulate_device_loss()
{
    std::lock_guard lock(dev_->mu);
    dev_->mark_lost();
}

Result<drm_vrex_device_info> EmulatedBackend::device_info()
{
    VREX_EMU_ENTER(errc::device_lost);
    const RegisterFile& r = dev_->regs;
    drm_vrex_device_info info{};
    info.hw_id = r.read(VREX_REG_ID);
    info.hw_version = r.read(VREX_REG_VERSION);
    info.caps = r.read(VREX_REG_CAPS);
    info.bank_count = r.read(VREX_REG_BANK_COUNT);
    info.bank_size = std::uint64_t{r.read(VREX_REG_BANK_SIZE_KB)} << 10;
    info.group_banks = r.read(VREX_REG_GROUP_BANKS);
    info.max_streams = r.read(VREX_REG_MAX_STREAMS);
    info.shie_capacity = r.read(VREX_REG_SHIE_CAPACITY);
    info.block_capacity = r.read(VREX_REG_BLOCK_CAPACITY);
    info.zombie_frames = r.read(VREX_REG_ZOMBIE_FRAMES);
    info.max_batch = DRM_VREX_MAX_BATCH;
    info.fcc_min_dim = VREX_FCC_MIN_DIM;
    info.fcc_max_dim = VREX_FCC_MAX_DIM;
    info.simulated = 1;
    return info;
}

Result<drm_vrex_bank_info> EmulatedBackend::bank_info()
{
    VREX_EMU_ENTER(errc::device_lost);
    const RegisterFile& r = dev_->regs;
    drm_vrex_bank_info info{};
    info.bank_count = dev_->cfg.nbanks;
    for (std::uint32_t b = 0; b < info.bank_count; b++) {
        info.bo_bytes[b] = dev_->mem.used_bytes(b);
        info.kv_bytes[b] = std::uint64_t{r.read(VREX_REG_BANK_KB(b))} << 10;
        info.kv_blocks[b] = r.read(VREX_REG_BANK_BLOCKS(b));
    }
    for (std::uint32_t g = 0; g < dev_->cfg.nbanks / dev_->cfg.group_banks; g++)
        info.group_owned[g] = r.read(VREX_REG_GROUP_POOL(g)) != VREX_NIL;
    // Imported memory is in no bank: its BOs (every file) and the model's blocks with bank NONE.
    for (const auto& [id, f] : dev_->files)
        for (const auto& [h, bo] : f.bos)
            if (bo.imported) {
                info.imported_bos++;
                info.imported_bytes += bo.ext.size;
            }
    const vrex_blocks& bl = dev_->model.blocks;
    for (std::uint32_t b = 0; b < bl.capacity; b++)
        if (bl.b[b].live && bl.b[b].bank == VREX_BANK_NONE) {
            info.imported_kv_blocks++;
            info.imported_kv_bytes += bl.b[b].kv.length;
        }
    return info;
}

std::error_code EmulatedBackend::bo_create(drm_vrex_bo_create& a)
{
    VREX_EMU_ENTER(errc::device_lost);
    const std::uint64_t all_banks =
        dev_->cfg.nbanks >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << dev_->cfg.nbanks) - 1;
    const std::uint64_t page = dev_->page_size;
    if (a.size == 0 || a.size > std::numeric_limits<std::uint64_t>::max() - (page - 1) ||
        (a.flags & ~DRM_VREX_BO_VALID_FLAGS) || a.pad || a.bank_mask == 0 || (a.bank_mask & ~all_banks))
        return err(std::errc::invalid_argument);
    const std::uint64_t size = (a.size + page - 1) / page * page;
    if (size > dev_->cfg.bank_size)
        return err(std::errc::invalid_argument);
    if (const int e = dev_->charge(file, QuotaRes::bytes, size))
        return errno_code(e);
    auto ext = dev_->mem.allocate(size, a.bank_mask);
    if (!ext) {
        dev_->uncharge(file, QuotaRes::bytes, size);
        return ext.error();
    }
    // GEM handles: the lowest free id >= 1, as idr_alloc() hands them out.
    std::uint32_t handle = 1;
    for (const auto& [h, bo] : file.bos) {
        if (h != handle)
            break;
        handle++;
    }
    EmulatedBo bo;
    bo.ext = *ext;
    bo.gen = dev_->next_bo_gen++;
    file.bos.emplace(handle, bo);
    a.handle = handle;
    a.bank = ext->bank;
    a.bo_gen = bo.gen;
    return {};
}

std::error_code EmulatedBackend::bo_destroy(std::uint32_t handle)
{
    VREX_EMU_ENTER(errc::device_lost);
    auto it = file.bos.find(handle);
    if (it == file.bos.end())
        return err(std::errc::no_such_file_or_directory);
    if (it->second.imported && it->second.imports > 1) {
        it->second.imports--;
        return {};
    }
    // The SHIE holds device addresses into this memory: it must not be reused under live blocks.
    if (it->second.live_blocks)
        return err(std::errc::device_or_resource_busy);
    if (it->second.imported) {
        EmulatedDevice::release_import(it->second);
        dev_->uncharge(file, QuotaRes::imports, 1);
    } else {
        dev_->mem.release(it->second.ext);
        dev_->uncharge(file, QuotaRes::bytes, it->second.ext.size);
    }
    file.bos.erase(it);
    return {};
}

Result<std::span<std::byte>> EmulatedBackend::bo_map(std::uint32_t handle)
{
    VREX_EMU_ENTER(errc::device_lost);
    auto it = file.bos.find(handle);
    if (it == file.bos.end())
        return err(std::errc::no_such_file_or_directory);
    if (it->second.imported)
        return std::span<std::byte>(it->second.import_map, it->second.ext.size);
    return std::span<std::byte>(dev_->mem.base() + it->second.ext.addr, it->second.ext.size);
}

Result<int> EmulatedBackend::bo_export_dmabuf(std::uint32_t handle)
{
    VREX_EMU_ENTER(errc::device_lost);
    auto it = file.bos.find(handle);
    if (it == file.bos.end())
        return err(std::errc::no_such_file_or_directory);
    // Re-export of an import: the buffer it came from (PRIME returns the original dma-buf).
    if (it->second.imported) {
        const int fd = fcntl(it->second.import_fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return errno_code(errno);
        return fd;
    }
    // A new open file description of the BO's memfd (O_RDWR), like a dma-buf of its own.
    const std::string path = "/proc/self/fd/" + std::to_string(it->second.ext.memfd);
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno_code(errno);
    return fd;
}

std::error_code EmulatedBackend::stream_create(drm_vrex_stream_create& a)
{
    VREX_EMU_ENTER(errc::device_lost);
    const bool pooled = a.flags & DRM_VREX_STREAM_POOLED;
    if ((a.flags & ~DRM_VREX_STREAM_VALID_FLAGS) || a.pad || (!pooled && a.pool))
        return err(std::errc::invalid_argument);
    std::uint32_t slot = 0;
    while (slot < dev_->slots.size() && dev_->slots[slot].open)
        slot++;
    if (const int e = dev_->charge(file, QuotaRes::streams, 1))
        return errno_code(e);
    if (slot == dev_->slots.size()) {
        dev_->uncharge(file, QuotaRes::streams, 1);
        return err(std::errc::device_or_resource_busy);
    }

    std::uint32_t hw_pool = VREX_POOL_PRIVATE + slot;
    bool new_pool = false;
    if (pooled) {
        auto p = file.pools.find(a.pool);
        new_pool = p == file.pools.end();
        hw_pool = new_pool ? dev_->alloc_hw_pool() : p->second;
    }
    dev_->regs.write(VREX_REG_ARG_STREAM, slot);
    dev_->regs.write(VREX_REG_ARG_POOL, hw_pool);
    if (const int e = dev_->regs.command(VREX_CMD_STREAM_OPEN)) {
        dev_->uncharge(file, QuotaRes::streams, 1);
        return errno_code(e);
    }
    if (pooled) {
        dev_->hw_pool_refs[hw_pool]++;
        if (new_pool)
            file.pools.emplace(a.pool, hw_pool);
    }
    dev_->slots[slot] = EmulatedStreamSlot{true, file_, hw_pool, a.pool, pooled, 0, {}};
    a.stream = slot;
    return {};
}

std::error_code EmulatedBackend::stream_destroy(std::uint32_t stream)
{
    VREX_EMU_ENTER(errc::device_lost);
    if (stream >= dev_->slots.size() || !dev_->slots[stream].open || dev_->slots[stream].file != file_)
        return err(std::errc::no_such_file_or_directory);
    // As vrex.ko: the stream goes whatever the device answered (a wedged one answers EIO).
    (void)dev_->close_stream(stream);
    return {};
}

#define VREX_EMU_OWN_STREAM(s)                                                                      \
    if ((s) >= dev_->slots.size() || !dev_->slots[(s)].open || dev_->slots[(s)].file != file_) \
    return err(std::errc::no_such_file_or_directory)

std::error_code EmulatedBackend::frame_submit(drm_vrex_frame_submit& a)
{
    VREX_EMU_ENTER(errc::device_lost);
    VREX_EMU_OWN_STREAM(a.stream);
    if ((a.flags & ~DRM_VREX_FRAME_VALID_FLAGS) || a.pad || a.width < VREX_FCC_MIN_DIM ||
        a.width > VREX_FCC_MAX_DIM || a.height < VREX_FCC_MIN_DIM || a.height > VREX_FCC_MAX_DIM ||
        a.stride < a.width)
        return err(std::errc::invalid_argument);
    auto bo = file.bos.find(a.handle);
    if (bo == file.bos.end())
        return err(std::errc::no_such_file_or_directory);
    const std::uint64_t plane = std::uint64_t{a.height - 1} * a.stride + a.width;
    // The FCC reads through the bank address space: imported memory is refused, as by vrex.ko.
    if (bo->second.imported || !range_inside(a.offset, plane, bo->second.ext.size))
        return err(std::errc::invalid_argument);

    const RegisterFile& r = dev_->regs;
    r.write(VREX_REG_ARG_STREAM, a.stream);
    r.write64(VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI, bo->second.ext.addr + a.offset);
    r.write(VREX_REG_ARG_WIDTH, a.width);
    r.write(VREX_REG_ARG_HEIGHT, a.height);
    r.write(VREX_REG_ARG_STRIDE, a.stride);
    if (const int e = r.command(VREX_CMD_FRAME))
        return errno_code(e);
    r.read_fp(VREX_REG_RES_FP(0), a.fp);
    a.frame = r.read(VREX_REG_RES_FRAME);
    a.group = r.read(VREX_REG_RES_GROUP);
    a.bank_first = r.read(VREX_REG_RES_BANK_FIRST);
    a.bank_count = r.read(VREX_REG_RES_BANK_COUNT);
    const std::uint32_t resf = r.read(VREX_REG_RES_FLAGS);
    a.result_flags = ((resf & VREX_RESF_OPENED) ? DRM_VREX_FRAME_OPENED_GROUP : 0u) |
                     ((resf & VREX_RESF_CONFLICT) ? DRM_VREX_FRAME_CONFLICT : 0u);
    a.centre_motion = r.read(VREX_REG_FCC_CENTRE_MOTION);
    a.static_ratio = r.read(VREX_REG_FCC_STATIC_RATIO);
    a.roi_dx = static_cast<std::int32_t>(r.read(VREX_REG_FCC_ROI_DX));
    a.roi_dy = static_cast<std::int32_t>(r.read(VREX_REG_FCC_ROI_DY));
    // A 1.0 device has no such registers (they read 0, "still"): 255, "unknown", as vrex.ko reports.
    const bool motion = dev_->cfg.hw_version >= VREX_VERSION_REGION_MOTION;
    for (std::uint32_t i = 0; i < VREX_FCC_REGION_MOTION_REGS; i++) {
        const std::uint32_t v = motion ? r.read(VREX_REG_FCC_REGION_MOTION(i)) : 0xffff'ffffu;
        for (std::uint32_t k = 0; k < 4; k++)
            a.region_motion[4 * i + k] = static_cast<std::uint8_t>(v >> (8 * k));
    }

    if (a.flags & DRM_VREX_FRAME_EVENT) {
        drm_vrex_event_frame ev{};
        ev.base.type = DRM_VREX_EVENT_FRAME_DONE;
        ev.base.length = sizeof(ev);
        ev.user_data = a.user_data;
        ev.fp[0] = a.fp[0];
        ev.fp[1] = a.fp[1];
        ev.stream = a.stream;
        ev.frame = a.frame;
        ev.group = a.group;
        file.events.push_back(ev);
        const std::uint64_t one = 1;
        if (write(event_fd_, &one, sizeof(one)) != sizeof(one))
            return errno_code(errno);
    }
    return {};
}

std::error_code EmulatedBackend::shie_insert(std::uint32_t stream, std::span<drm_vrex_shie_insert_item> items)
{
    VREX_EMU_ENTER(errc::device_lost);
    VREX_EMU_OWN_STREAM(stream);
    if (items.empty() || items.size() > DRM_VREX_MAX_BATCH)
        return err(std::errc::invalid_argument);
    // Validate the whole batch before applying anything.
    for (const drm_vrex_shie_insert_item& it : items) {
        // As vrex.ko (kernel/vrex_uapi_check.c): a host-tier entry goes under any past frame.
        const bool host = it.flags & DRM_VREX_INSERT_HOST_TIER;
        if ((it.flags & ~DRM_VREX_INSERT_VALID_FLAGS) || it.region >= DRM_VREX_REGIONS ||
            (host ? it.frame_offset > 0
                  : it.frame_offset < DRM_VREX_OFFSET_MIN || it.frame_offset > DRM_VREX_OFFSET_MAX) ||
            (host && (it.flags & DRM_VREX_INSERT_ALIAS)))
            return err(std::errc::invalid_argument);
        if (it.flags & DRM_VREX_INSERT_ALIAS) {
            if (it.handle || it.offset || it.length)
                return err(std::errc::invalid_argument);
            if (it.block >= dev_->blocks.size() || !dev_->blocks[it.block].live ||
                dev_->blocks[it.block].file != file_)
                return err(std::errc::no_such_file_or_directory);
            // A generation names one incarnation of the id: its successor is another block.
            if (it.block_gen && it.block_gen != dev_->blocks[it.block].block_gen)
                return err(std::errc::no_such_file_or_directory);
            continue;
        }
        if (it.length == 0 || it.block_gen)
            return err(std::errc::invalid_argument);
        auto bo = file.bos.find(it.handle);
        if (bo == file.bos.end())
            return err(std::errc::no_such_file_or_directory);
        if (!range_inside(it.offset, it.length, bo->second.ext.size))
            return err(std::errc::invalid_argument);
        if (it.length > kU32Max)
            return err(std::errc::invalid_argument);
    }

    const RegisterFile& r = dev_->regs;
    std::error_code stopped;
    for (drm_vrex_shie_insert_item& it : items) {
        const bool alias = it.flags & DRM_VREX_INSERT_ALIAS;
        // A command that failed itself (ETIMEDOUT, EIO) stops the batch, as in vrex.ko.
        if (stopped) {
            it.result = -ECANCELED;
            continue;
        }
        // Every item adds one SHIE entry, charged to the uid until its block is released.
        if (const int e = dev_->charge(file, QuotaRes::entries, 1)) {
            it.result = -e;
            continue;
        }
        r.write(VREX_REG_ARG_STREAM, stream);
        r.write(VREX_REG_ARG_REGION, it.region);
        r.write(VREX_REG_ARG_OFFSET, static_cast<std::uint32_t>(it.frame_offset));
        r.write(VREX_REG_ARG_FLAGS, (alias ? VREX_ARGF_ALIAS : 0u) |
                                        (it.flags & DRM_VREX_INSERT_HOST_TIER ? VREX_ARGF_HOST_TIER : 0u));
        r.write_fp(VREX_REG_ARG_FP(0), it.fp);
        r.write64(VREX_REG_ARG_BLOCK_GEN_LO, VREX_REG_ARG_BLOCK_GEN_HI, alias ? it.block_gen : 0);
        if (alias) {
            r.write(VREX_REG_ARG_BLOCK, it.block);
        } else {
            r.write(VREX_REG_ARG_KV_TAG, it.handle);
            r.write64(VREX_REG_ARG_KV_ADDR_LO, VREX_REG_ARG_KV_ADDR_HI, file.bos.at(it.handle).ext.addr + it.offset);
            r.write(VREX_REG_ARG_KV_LEN, static_cast<std::uint32_t>(it.length));
        }
        if (const int e = r.command(VREX_CMD_INSERT)) {
            dev_->uncharge(file, QuotaRes::entries, 1);
            it.result = -e;
            if (e == ETIMEDOUT || e == EIO)
                stopped = errno_code(e);
            continue;
        }
        it.result = 0;
        it.block_gen = r.read64(VREX_REG_RES_BLOCK_GEN_LO, VREX_REG_RES_BLOCK_GEN_HI);
        if (alias) {
            it.bo_gen = dev_->blocks[it.block].bo_gen;
            dev_->blocks[it.block].entries++;
            continue;
        }
        it.block = r.read(VREX_REG_RES_BLOCK);
        it.bo_gen = file.bos.at(it.handle).gen;
        if (it.block < dev_->blocks.size()) {
            dev_->blocks[it.block] = EmulatedBlockOwner{true, file_, stream, it.handle, it.block_gen, it.bo_gen, 1};
            file.bos.at(it.handle).live_blocks++;
            dev_->slots[stream].live_blocks++;
        }
    }
    return stopped;
}

namespace {

// Records per query the device writes for @it: its candidates, or the nearest only.
std::uint32_t lookup_records(const drm_vrex_shie_lookup_item& it)
{
    return it.kind == DRM_VREX_LOOKUP_SIMILAR && it.max_candidates > 1 ? it.max_candidates : 1u;
}

}  // namespace

std::error_code EmulatedBackend::shie_lookup(std::uint32_t stream, std::span<drm_vrex_shie_lookup_item> items)
{
    VREX_EMU_ENTER(errc::device_lost);
    VREX_EMU_OWN_STREAM(stream);
    if (items.empty() || items.size() > DRM_VREX_MAX_BATCH)
        return err(std::errc::invalid_argument);
    for (const drm_vrex_shie_lookup_item& it : items) {
        if (it.region >= DRM_VREX_REGIONS || it.pad)
            return err(std::errc::invalid_argument);
        if (it.kind == DRM_VREX_LOOKUP_TEMPORAL) {
            if (!fp_is_zero(it.fp) || it.flags || it.radius || it.max_candidates ||
                it.frame_offset < DRM_VREX_OFFSET_MIN || it.frame_offset > DRM_VREX_OFFSET_MAX)
                return err(std::errc::invalid_argument);
        } else if (it.kind == DRM_VREX_LOOKUP_SIMILAR) {
            if ((it.flags & ~DRM_VREX_LOOKUP_VALID_FLAGS) || it.frame_offset || it.radius > DRM_VREX_MAX_RADIUS ||
                it.max_candidates > DRM_VREX_LOOKUP_MAX_CANDIDATES)
                return err(std::errc::invalid_argument);
        } else {
            return err(std::errc::invalid_argument);
        }
    }
    // A 1.0 device ignores the tier flags and ARG_NEAREST: it cannot answer these (vrex.ko's
    // vrex_lookup_apply), and the whole batch is refused before any lookup runs.
    if (dev_->cfg.hw_version < VREX_VERSION_NEAREST)
        for (const drm_vrex_shie_lookup_item& it : items)
            if ((it.flags & (DRM_VREX_LOOKUP_TIER_DEVICE | DRM_VREX_LOOKUP_TIER_HOST)) || lookup_records(it) > 1)
                return err(std::errc::operation_not_supported);

    // Temporal items one by one as they come; similarity items grouped by their records per query,
    // up to VREX_LOOKUP_BATCH_MAX records per LOOKUP_SIMILAR_BATCH, as vrex.ko does (lookups only
    // age blocks to the owner's current frame and count, so grouping changes no item's answer).
    std::vector<std::size_t> group;
    group.reserve(VREX_LOOKUP_BATCH_MAX);
    std::uint32_t k = 1;
    for (std::size_t i = 0; i < items.size(); i++) {
        if (items[i].kind == DRM_VREX_LOOKUP_TEMPORAL) {
            lookup_one(file, stream, items[i]);
            continue;
        }
        if (!group.empty() && lookup_records(items[i]) != k) {
            lookup_batch(file, stream, items, group, k);
            group.clear();
        }
        k = lookup_records(items[i]);
        group.push_back(i);
        if ((group.size() + 1) * k > VREX_LOOKUP_BATCH_MAX) {
            lookup_batch(file, stream, items, group, k);
            group.clear();
        }
    }
    if (!group.empty())
        lookup_batch(file, stream, items, group, k);
    return {};
}

namespace {

std::uint32_t lookup_argf(const drm_vrex_shie_lookup_item& it)
{
    return ((it.flags & DRM_VREX_LOOKUP_SCOPE_POOL) ? VREX_ARGF_SCOPE_POOL : 0u) |
           ((it.flags & DRM_VREX_LOOKUP_PAST_ONLY) ? VREX_ARGF_PAST_ONLY : 0u) |
           ((it.flags & DRM_VREX_LOOKUP_TIER_DEVICE) ? VREX_ARGF_TIER_DEVICE : 0u) |
           ((it.flags & DRM_VREX_LOOKUP_TIER_HOST) ? VREX_ARGF_TIER_HOST : 0u);
}

void lookup_clear(drm_vrex_shie_lookup_item& it)
{
    it.block_gen = 0;
    it.hit_flags = 0;
    it.distance = 0;
    it.block = 0;
    it.frame = 0;
    it.stream = 0;
    it.handle = 0;
    it.offset = 0;
    it.length = 0;
    it.found_fp[0] = it.found_fp[1] = 0;
    it.candidate_count = 0;
    std::memset(it.candidates, 0, sizeof(it.candidates));
}

// A hit as the device reported it (RES_* or a batch record), before it reaches the caller.
struct LookupReport {
    std::uint32_t resf;
    std::uint32_t distance;
    std::uint32_t block;
    std::uint32_t frame;
    std::uint32_t stream;
    std::uint32_t tag;
    std::uint32_t length;
    std::uint64_t addr;
    std::uint64_t fp[2];
};

// A hit as the caller gets it; the handle's offset from the BO the tag names.
bool lookup_resolve(const EmulatedFile& file, const std::vector<EmulatedBlockOwner>& blocks, const LookupReport& rep,
                    drm_vrex_shie_candidate& c)
{
    if (!(rep.resf & VREX_RESF_HIT))
        return false;
    c = drm_vrex_shie_candidate{};
    // The generation of the block the driver tracks (vrex.ko reports its mirror's, not the device's word).
    if (rep.block < blocks.size() && blocks[rep.block].live)
        c.block_gen = blocks[rep.block].block_gen;
    c.hit_flags = DRM_VREX_HIT | ((rep.resf & VREX_RESF_APPROX) ? DRM_VREX_HIT_APPROX : 0u) |
                  ((rep.resf & VREX_RESF_HOST_TIER) ? DRM_VREX_HIT_HOST_TIER : 0u);
    c.distance = rep.distance;
    c.block = rep.block;
    c.frame = rep.frame;
    c.stream = rep.stream;
    c.handle = rep.tag;
    c.length = rep.length;
    c.found_fp[0] = rep.fp[0];
    c.found_fp[1] = rep.fp[1];
    auto bo = file.bos.find(c.handle);
    c.offset = bo != file.bos.end() ? rep.addr - bo->second.ext.addr : 0;
    return true;
}

// Answer @j (nearest first): the nearest into the fields every caller knows, and with
// max_candidates every answer of the caller's appended to the candidates.
void lookup_take(const EmulatedFile& file, const std::vector<EmulatedBlockOwner>& blocks, const LookupReport& rep,
                 std::uint32_t j, drm_vrex_shie_lookup_item& it)
{
    drm_vrex_shie_candidate c;
    if (!lookup_resolve(file, blocks, rep, c))
        return;
    if (j == 0)
        set_nearest(it, c);
    if (it.candidate_count < it.max_candidates)
        it.candidates[it.candidate_count++] = c;
}

}  // namespace

void EmulatedBackend::lookup_one(const EmulatedFile& file, std::uint32_t stream, drm_vrex_shie_lookup_item& it)
{
    const RegisterFile& r = dev_->regs;
    r.write(VREX_REG_ARG_STREAM, stream);
    r.write(VREX_REG_ARG_REGION, it.region);
    std::uint32_t cmd = VREX_CMD_LOOKUP_TEMPORAL;
    if (it.kind == DRM_VREX_LOOKUP_TEMPORAL) {
        r.write(VREX_REG_ARG_OFFSET, static_cast<std::uint32_t>(it.frame_offset));
    } else {
        cmd = VREX_CMD_LOOKUP_SIMILAR;
        r.write_fp(VREX_REG_ARG_FP(0), it.fp);
        r.write(VREX_REG_ARG_RADIUS, it.radius);
        r.write(VREX_REG_ARG_FLAGS, lookup_argf(it));
    }
    lookup_clear(it);
    // A command error (e.g. no frame submitted yet) is a miss for this item.
    if (r.command(cmd))
        return;
    LookupReport rep{};
    rep.resf = r.read(VREX_REG_RES_FLAGS);
    rep.distance = r.read(VREX_REG_RES_DISTANCE);
    rep.block = r.read(VREX_REG_RES_BLOCK);
    rep.frame = r.read(VREX_REG_RES_FRAME);
    rep.stream = r.read(VREX_REG_RES_STREAM);
    rep.tag = r.read(VREX_REG_RES_KV_TAG);
    rep.length = r.read(VREX_REG_RES_KV_LEN);
    rep.addr = r.read64(VREX_REG_RES_KV_ADDR_LO, VREX_REG_RES_KV_ADDR_HI);
    r.read_fp(VREX_REG_RES_FP(0), rep.fp);
    lookup_take(file, dev_->blocks, rep, 0, it);
}

void EmulatedBackend::lookup_batch(const EmulatedFile& file, std::uint32_t stream,
                                   std::span<drm_vrex_shie_lookup_item> items, std::span<const std::size_t> group,
                                   std::uint32_t k)
{
    // Descriptors and records are little endian (vrex_regs.h); they are copied as host structs here.
    static_assert(std::endian::native == std::endian::little, "LOOKUP_SIMILAR_BATCH records are little endian");
    // One query gains nothing from staging, unless it wants more answers than RES_* holds.
    if (group.size() == 1 && k == 1) {
        lookup_one(file, stream, items[group[0]]);
        return;
    }
    const std::uint64_t src = dev_->mem.tail_addr();
    const std::uint64_t dst = src + VREX_LOOKUP_BATCH_MAX * sizeof(vrex_lookup_desc);
    std::byte* const mem = dev_->mem.base();
    for (std::size_t j = 0; j < group.size(); j++) {
        const drm_vrex_shie_lookup_item& it = items[group[j]];
        vrex_lookup_desc d{};
        d.stream = stream;
        d.region = it.region;
        d.radius = it.radius;
        d.flags = lookup_argf(it);
        d.fp[0] = it.fp[0];
        d.fp[1] = it.fp[1];
        std::memcpy(mem + src + j * sizeof(d), &d, sizeof(d));
    }
    const RegisterFile& r = dev_->regs;
    r.write64(VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI, src);
    r.write64(VREX_REG_ARG_DST_LO, VREX_REG_ARG_DST_HI, dst);
    r.write(VREX_REG_ARG_COUNT, static_cast<std::uint32_t>(group.size()));
    r.write(VREX_REG_ARG_NEAREST, k);
    // Refused whole (nothing written, nothing changed): each item gets what a single lookup gets; a
    // query for candidates has no single form, so it misses.
    if (r.command(VREX_CMD_LOOKUP_SIMILAR_BATCH)) {
        for (std::size_t i : group) {
            if (k == 1)
                lookup_one(file, stream, items[i]);
            else
                lookup_clear(items[i]);
        }
        return;
    }
    for (std::size_t j = 0; j < group.size(); j++) {
        drm_vrex_shie_lookup_item& it = items[group[j]];
        lookup_clear(it);
        for (std::uint32_t i = 0; i < k; i++) {
            vrex_lookup_rec rec;
            std::memcpy(&rec, mem + dst + (j * k + i) * sizeof(rec), sizeof(rec));
            // A query the device refused (PAST_ONLY before the first frame) is a miss.
            if (rec.status)
                break;
            lookup_take(file, dev_->blocks,
                        LookupReport{rec.flags, rec.distance, rec.block, rec.frame, rec.stream, rec.kv_tag,
                                     rec.kv_len, rec.kv_addr, {rec.fp[0], rec.fp[1]}},
                        i, it);
        }
    }
}

std::error_code EmulatedBackend::shie_retire(std::uint32_t stream, std::span<const std::uint32_t> remove,
                                             std::span<drm_vrex_released_block> released,
                                             std::uint32_t& released_count)
{
    VREX_EMU_ENTER(errc::device_lost);
    VREX_EMU_OWN_STREAM(stream);
    if (remove.size() > DRM_VREX_MAX_BATCH)
        return err(std::errc::invalid_argument);
    std::set<std::uint32_t> seen;
    for (std::uint32_t b : remove) {
        if (b >= dev_->blocks.size() || !dev_->blocks[b].live || dev_->blocks[b].file != file_ ||
            dev_->blocks[b].stream != stream)
            return err(std::errc::no_such_file_or_directory);
        if (!seen.insert(b).second)
            return err(std::errc::invalid_argument);
    }
    EmulatedStreamSlot& slot = dev_->slots[stream];
    const auto could_release = static_cast<std::uint32_t>(slot.live_blocks + slot.kept.size());
    if (released.size() < could_release) {
        released_count = could_release;
        return err(std::errc::no_space_on_device);
    }

    // Records a reset kept for the stream come first. A handle is reported only while it still
    // names the BO the block pointed into (same generation), as vrex.ko does.
    std::vector<drm_vrex_released_block> out = std::move(slot.kept);
    slot.kept.clear();
    for (drm_vrex_released_block& rec : out)
        if (auto bo = file.bos.find(rec.handle); bo == file.bos.end() || bo->second.gen != rec.bo_gen)
            rec.handle = 0;
    const RegisterFile& r = dev_->regs;
    for (std::uint32_t b : remove) {
        r.write(VREX_REG_ARG_BLOCK, b);
        if (const int e = r.command(VREX_CMD_REMOVE)) {
            // Validated above, so only a dead (hung, wedged) device gets here; report what was released.
            dev_->drain_released(&out);
            std::copy(out.begin(), out.end(), released.begin());
            released_count = static_cast<std::uint32_t>(out.size());
            return errno_code(e);
        }
        dev_->take_released(&out);
    }
    r.write(VREX_REG_ARG_STREAM, stream);
    const int e = r.command(VREX_CMD_RETIRE);
    dev_->drain_released(&out);
    for (std::size_t i = 0; i < out.size() && i < released.size(); i++)
        released[i] = out[i];
    released_count = static_cast<std::uint32_t>(out.size());
    return e ? errno_code(e) : std::error_code{};
}

Result<drm_vrex_stats> EmulatedBackend::stats()
{
    VREX_EMU_ENTER(errc::device_lost);
    const RegisterFile& r = dev_->regs;
    auto cnt = [&r](std::uint32_t i) { return r.read64(VREX_REG_CNT_LO(i), VREX_REG_CNT_HI(i)); };
    drm_vrex_stats s{};
    s.lookups = cnt(VREX_CNT_LOOKUPS);
    s.exact_hits = cnt(VREX_CNT_EXACT_HITS);
    s.approx_hits = cnt(VREX_CNT_APPROX_HITS);
    s.misses = cnt(VREX_CNT_MISSES);
    s.evictions = cnt(VREX_CNT_EVICTIONS);
    s.bank_conflicts = cnt(VREX_CNT_BANK_CONFLICTS);
    s.inserts = cnt(VREX_CNT_INSERTS);
    s.removes = cnt(VREX_CNT_REMOVES);
    s.frames = cnt(VREX_CNT_FRAMES);
    s.live_entries = cnt(VREX_CNT_LIVE_ENTRIES);
    s.live_blocks = cnt(VREX_CNT_LIVE_BLOCKS);
    s.cmd_errors = cnt(VREX_CNT_CMD_ERRORS);
    return s;
}

// ---- ReSV -----------------------------------------------------------------------------------------

namespace {

bool resv_params_valid(const drm_vrex_resv_params& p) {
    return p.dim >= 1 && p.dim <= DRM_VREX_RESV_MAX_DIM && p.th <= DRM_VREX_RESV_MAX_TH &&
           p.ratio <= DRM_VREX_RESV_RATIO_ONE && p.mode <= DRM_VREX_RESV_MODE_TOKENS &&
           p.tokens_per_block >= 1 && p.pad[0] == 0 && p.pad[1] == 0 && p.pad[2] == 0;
}

}  // namespace

#define VREX_EMU_OWN_HEAD(h)                                             \
    if ((h) >= dev_->resv_heads.size() || !dev_->resv_heads[(h)].used || \
        dev_->resv_heads[(h)].file != file_)                             \
    return err(std::errc::no_such_file_or_directory)

// A reset since the head was created (or last truncated to 0) emptied it: ESTALE, as vrex.ko.
#define VREX_EMU_HEAD_EPOCH(h)                                  \
    if (dev_->resv_heads[(h)].epoch != dev_->reset_epoch) \
    return std::error_code(ESTALE, std::generic_category())

void EmulatedBackend::resv_program(std::uint32_t head) {
    const RegisterFile& r = dev_->regs;
    const drm_vrex_resv_params& p = dev_->resv_heads[head].params;
    r.write64(VREX_REG_RESV_SEED_LO, VREX_REG_RESV_SEED_HI, p.seed);
    r.write(VREX_REG_RESV_DIM, p.dim);
    r.write(VREX_REG_RESV_TH, p.th);
    r.write(VREX_REG_RESV_RATIO, p.ratio);
    r.write(VREX_REG_RESV_MODE, p.mode);
    r.write(VREX_REG_RESV_TOKENS_PER_BLOCK, p.tokens_per_block);
    r.write(VREX_REG_RESV_BYTES_PER_TOKEN, p.bytes_per_token);
    for (std::uint32_t d = 0; d < DRM_VREX_RESV_LUT_SIZE; d++) r.write(VREX_REG_RESV_LUT(d), p.lut[d]);
    r.write(VREX_REG_ARG_HEAD, head);
}

std::error_code EmulatedBackend::resv_head_create(drm_vrex_resv_head_create& a) {
    VREX_EMU_ENTER(errc::device_lost);
    if (dev_->resv_heads.empty()) return err(std::errc::operation_not_supported);
    if (a.flags || !resv_params_valid(a.params)) return err(std::errc::invalid_argument);
    if (const int e = dev_->charge(file, QuotaRes::heads, 1)) return errno_code(e);
    for (std::uint32_t h = 0; h < dev_->resv_heads.size(); h++) {
        if (dev_->resv_heads[h].used) continue;
        dev_->resv_heads[h] = EmulatedResvHead{true, file_, a.params, dev_->reset_epoch};
        a.head = h;
        return {};
    }
    dev_->uncharge(file, QuotaRes::heads, 1);
    return err(std::errc::device_or_resource_busy);
}

std::error_code EmulatedBackend::resv_head_destroy(std::uint32_t head) {
    VREX_EMU_ENTER(errc::device_lost);
    VREX_EMU_OWN_HEAD(head);
    dev_->release_resv_head(head);
    return {};
}

std::error_code EmulatedBackend::resv_hash(drm_vrex_resv_hash& a) {
    VREX_EMU_ENTER(errc::device_lost);
    VREX_EMU_OWN_HEAD(a.head);
    VREX_EMU_HEAD_EPOCH(a.head);
    if (a.flags || a.count == 0 || a.offset % 2) return err(std::errc::invalid_argument);
    auto bo = file.bos.find(a.handle);
    if (bo == file.bos.end()) return err(std::errc::no_such_file_or_directory);
    const std::uint64_t bytes = std::uint64_t{a.count} * dev_->resv_heads[a.head].params.dim * 2;
    if (bo->second.imported || !range_inside(a.offset, bytes, bo->second.ext.size))
        return err(std::errc::invalid_argument);
    const RegisterFile& r = dev_->regs;
    resv_program(a.head);
    r.write64(VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI, bo->second.ext.addr + a.offset);
    r.write(VREX_REG_ARG_COUNT, a.count);
    if (const int e = r.command(VREX_CMD_RESV_HASH)) return errno_code(e);
    a.tokens = r.read(VREX_REG_RES_COUNT);
    a.clusters = r.read(VREX_REG_RES_CLUSTERS);
    return {};
}

std::error_code EmulatedBackend::resv_select(std::span<drm_vrex_resv_select_item> items) {
    VREX_EMU_ENTER(errc::device_lost);
    if (items.empty() || items.size() > DRM_VREX_MAX_BATCH) return err(std::errc::invalid_argument);
    // Validate the whole batch before selecting anything.
    for (const drm_vrex_resv_select_item& it : items) {
        VREX_EMU_OWN_HEAD(it.head);
        VREX_EMU_HEAD_EPOCH(it.head);
        if ((it.flags & ~DRM_VREX_RESV_SELECT_VALID_FLAGS) || it.pad || it.query_offset % 2 ||
            (it.max_ranges && it.out_offset % 4))
            return err(std::errc::invalid_argument);
        auto q = file.bos.find(it.query_handle);
        if (q == file.bos.end()) return err(std::errc::no_such_file_or_directory);
        if (q->second.imported ||
            !range_inside(it.query_offset, std::uint64_t{dev_->resv_heads[it.head].params.dim} * 2,
                          q->second.ext.size))
            return err(std::errc::invalid_argument);
        if (!it.max_ranges) continue;
        auto o = file.bos.find(it.out_handle);
        if (o == file.bos.end()) return err(std::errc::no_such_file_or_directory);
        if (o->second.imported || !range_inside(it.out_offset, std::uint64_t{it.max_ranges} * 8, o->second.ext.size))
            return err(std::errc::invalid_argument);
    }
    const RegisterFile& r = dev_->regs;
    for (drm_vrex_resv_select_item& it : items) {
        resv_program(it.head);
        r.write64(VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI,
                  file.bos.at(it.query_handle).ext.addr + it.query_offset);
        r.write64(VREX_REG_ARG_DST_LO, VREX_REG_ARG_DST_HI,
                  it.max_ranges ? file.bos.at(it.out_handle).ext.addr + it.out_offset : 0);
        r.write(VREX_REG_ARG_COUNT, it.max_ranges);
        r.write(VREX_REG_ARG_FLAGS, (it.flags & DRM_VREX_RESV_SELECT_BLOCKS) ? VREX_ARGF_RESV_BLOCKS : 0u);
        if (const int e = r.command(VREX_CMD_RESV_SELECT)) return errno_code(e);
        it.ranges = r.read(VREX_REG_RES_COUNT);
        it.tokens = r.read(VREX_REG_RES_TOKENS);
        it.clusters = r.read(VREX_REG_RES_CLUSTERS);
        it.qhash = r.read(VREX_REG_RES_FP(0));
        it.cutoff = r.read(VREX_REG_RES_DISTANCE);
        it.head_tokens = r.read(VREX_REG_RES_HEAD_TOKENS);
    }
    return {};
}

std::error_code EmulatedBackend::resv_truncate(std::uint32_t head, std::uint32_t keep) {
    VREX_EMU_ENTER(errc::device_lost);
    VREX_EMU_OWN_HEAD(head);
    if (keep) VREX_EMU_HEAD_EPOCH(head);
    const RegisterFile& r = dev_->regs;
    r.write(VREX_REG_ARG_HEAD, head);
    r.write(VREX_REG_ARG_COUNT, keep);
    if (const int e = r.command(VREX_CMD_RESV_TRUNCATE)) return errno_code(e);
    // Emptied on purpose: the owner knows what the head holds again.
    if (!keep) dev_->resv_heads[head].epoch = dev_->reset_epoch;
    return {};
}

Result<drm_vrex_resv_stats> EmulatedBackend::resv_stats() {
    VREX_EMU_ENTER(errc::device_lost);
    if (dev_->resv_heads.empty()) return err(std::errc::operation_not_supported);
    const RegisterFile& r = dev_->regs;
    auto cnt = [&r](std::uint32_t i) { return r.read64(VREX_REG_RESV_CNT_LO(i), VREX_REG_RESV_CNT_HI(i)); };
    drm_vrex_resv_stats s{};
    s.keys = cnt(VREX_RESV_CNT_KEYS);
    s.clusters = cnt(VREX_RESV_CNT_CLUSTERS);
    s.selects = cnt(VREX_RESV_CNT_SELECTS);
    s.tokens_scanned = cnt(VREX_RESV_CNT_TOKENS_SCANNED);
    s.tokens_selected = cnt(VREX_RESV_CNT_TOKENS_SELECTED);
    s.bytes_selected = cnt(VREX_RESV_CNT_BYTES_SELECTED);
    s.ranges = cnt(VREX_RESV_CNT_RANGES);
    s.heads = r.read(VREX_REG_RESV_HEADS);
    for (const EmulatedResvHead& h : dev_->resv_heads) s.heads_in_use += h.used;
    s.max_tokens = r.read(VREX_REG_RESV_MAX_TOKENS);
    s.max_clusters = r.read(VREX_REG_RESV_MAX_CLUSTERS);
    return s;
}

Result<std::uint32_t> EmulatedBackend::reg_read(std::uint32_t offset)
{
    VREX_EMU_ENTER(errc::device_lost);
    if (offset % 4 || offset >= VREX_REG_WINDOW)
        return err(std::errc::invalid_argument);
    return dev_->regs.read(offset);
}

Result<std::size_t> EmulatedBackend::read_events(std::span<drm_vrex_event_frame> out)
{
    VREX_EMU_ENTER(errc::device_lost);
    std::size_t n = 0;
    while (n < out.size() && !file.events.empty()) {
        out[n++] = file.events.front();
        file.events.pop_front();
    }
    if (file.events.empty()) {
        std::uint64_t counter;
        // Clears readability; EAGAIN just means it was already clear.
        if (read(event_fd_, &counter, sizeof(counter)) < 0 && errno != EAGAIN)
            return errno_code(errno);
    }
    return n;
}

namespace {

bool emulated_available() { return true; }

Result<std::unique_ptr<Backend>> emulated_open(const BackendOptions& options)
{
    auto b = EmulatedBackend::open(options);
    if (!b) return b.error_info();
    return std::unique_ptr<Backend>(std::move(*b));
}

}  // namespace

const BackendFactory& emulated_backend_factory()
{
    static const BackendFactory factory{"emulated", emulated_available, emulated_open};
    return factory;
}

}  // namespace vrex

namespace vrex {

Result<ImportedBo> EmulatedBackend::bo_import_dmabuf(int fd)
{
    VREX_EMU_ENTER(errc::device_lost);
    struct stat st{};
    if (fstat(fd, &st))
        return errno_code(errno);
    auto same_file = [&](int other) {
        struct stat o{};
        return other >= 0 && !fstat(other, &o) && o.st_dev == st.st_dev && o.st_ino == st.st_ino;
    };
    // The dma-buf of one of this file's BOs: its handle (PRIME self-import), no new reference.
    for (auto& [h, bo] : file.bos) {
        if (bo.imported && bo.import_dev == st.st_dev && bo.import_ino == st.st_ino) {
            bo.imports++;
            return ImportedBo{h, bo.ext.size, false};
        }
        if (!bo.imported && same_file(bo.ext.memfd))
            return ImportedBo{h, bo.ext.size, true};
    }
    // No dma-bufs here: any fd mmap-able in whole pages stands in (a memfd); a pipe, a socket or a
    // directory is not a buffer (EINVAL, as PRIME answers a non-dma-buf fd).
    const off_t end = lseek(fd, 0, SEEK_END);
    if (end <= 0 || static_cast<std::uint64_t>(end) % dev_->page_size)
        return err(std::errc::invalid_argument);
    if (const int e = dev_->charge(file, QuotaRes::imports, 1))
        return errno_code(e);
    const int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) {
        const int e = errno;
        dev_->uncharge(file, QuotaRes::imports, 1);
        return errno_code(e);
    }
    void* p = mmap(nullptr, static_cast<std::size_t>(end), PROT_READ | PROT_WRITE, MAP_SHARED, dup, 0);
    if (p == MAP_FAILED) {
        close(dup);
        dev_->uncharge(file, QuotaRes::imports, 1);
        return err(std::errc::invalid_argument);
    }
    std::uint32_t handle = 1;
    for (const auto& [h, bo] : file.bos) {
        if (h != handle)
            break;
        handle++;
    }
    EmulatedBo bo;
    bo.ext = BankMemory::Extent{VREX_KV_ADDR_EXTERNAL, static_cast<std::uint64_t>(end), 0, -1};
    bo.imported = true;
    bo.import_fd = dup;
    bo.import_map = static_cast<std::byte*>(p);
    bo.imports = 1;
    bo.import_dev = st.st_dev;
    bo.import_ino = st.st_ino;
    bo.gen = dev_->next_bo_gen++;
    file.bos.emplace(handle, bo);
    return ImportedBo{handle, bo.ext.size, false};
}

}  // namespace vrex
