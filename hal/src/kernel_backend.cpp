#include "kernel_backend.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xf86drm.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>

#include "discovery.hpp"

namespace vrex {
namespace {

// The register window of lib/vrex_regs.h (VREX_REG_WINDOW), in bytes.
constexpr std::uint32_t VREX_REG_WINDOW_BYTES = 0x1000;

std::error_code errno_code(int e) { return {e, std::generic_category()}; }

template <class T>
std::uint64_t user_ptr(T* p)
{
    return reinterpret_cast<std::uintptr_t>(p);
}

std::uint64_t page_round(std::uint64_t size)
{
    const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    return (size + page - 1) / page * page;
}

}  // namespace

KernelBackend::KernelBackend(Key, int fd, std::string node, std::string description)
    : fd_(fd), node_(std::move(node)), description_(std::move(description))
{
}

Result<std::unique_ptr<KernelBackend>> KernelBackend::open(const BackendOptions& options)
{
    std::string node = options.node;
    if (node.empty()) {
        const auto nodes = discovery::find_vrex_nodes();
        if (nodes.empty())
            return errc::no_device;
        node = nodes.front();
    }
    // Non-blocking so read_events() never waits; ioctls are unaffected by O_NONBLOCK.
    const int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? make_error_code(errc::no_device) : errno_code(errno);
    drmVersionPtr v = drmGetVersion(fd);
    if (!v) {
        const int e = errno;
        ::close(fd);
        return e == ENOTTY || e == EINVAL ? make_error_code(errc::not_vrex_device) : errno_code(e);
    }
    const std::string driver(v->name ? std::string_view(v->name, static_cast<std::size_t>(v->name_len)) : "");
    std::string description = node + " (" + driver + " " + std::to_string(v->version_major) + "." +
                              std::to_string(v->version_minor) + "." + std::to_string(v->version_patchlevel) + ")";
    drmFreeVersion(v);
    if (driver != DRM_VREX_DRIVER_NAME) {
        ::close(fd);
        return errc::not_vrex_device;
    }
    return std::make_unique<KernelBackend>(Key{}, fd, std::move(node), std::move(description));
}

KernelBackend::~KernelBackend()
{
    for (auto& [handle, bo] : bos_) {
        if (bo.map)
            munmap(bo.map, bo.size);
        if (bo.dmabuf >= 0)
            ::close(bo.dmabuf);
    }
    // Closing the file releases its GEM handles, streams and SHIE blocks in the driver.
    ::close(fd_);
}

std::error_code KernelBackend::lost_or(int err)
{
    if (err == ENODEV) {
        lost_ = true;
        return errc::device_lost;
    }
    return errno_code(err);
}

std::error_code KernelBackend::ioctl(unsigned long request, void* arg)
{
    if (lost_)
        return errc::device_lost;
    if (drmIoctl(fd_, request, arg) == 0)
        return {};
    return lost_or(errno);
}

Result<drm_vrex_device_info> KernelBackend::device_info()
{
    drm_vrex_device_info info{};
    drm_vrex_query q{DRM_VREX_QUERY_DEVICE_INFO, sizeof(info), user_ptr(&info)};
    if (auto ec = ioctl(DRM_IOCTL_VREX_QUERY, &q))
        return ec;
    return info;
}

Result<drm_vrex_bank_info> KernelBackend::bank_info()
{
    drm_vrex_bank_info info{};
    drm_vrex_query q{DRM_VREX_QUERY_BANKS, sizeof(info), user_ptr(&info)};
    if (auto ec = ioctl(DRM_IOCTL_VREX_QUERY, &q))
        return ec;
    return info;
}

std::error_code KernelBackend::bo_create(drm_vrex_bo_create& args)
{
    if (auto ec = ioctl(DRM_IOCTL_VREX_BO_CREATE, &args))
        return ec;
    std::lock_guard lock(mu_);
    bos_[args.handle] = Bo{page_round(args.size), nullptr, 0};
    return {};
}

std::error_code KernelBackend::bo_destroy(std::uint32_t handle)
{
    if (lost_)
        return errc::device_lost;
    std::lock_guard lock(mu_);
    auto it = bos_.find(handle);
    if (it == bos_.end())
        return std::make_error_code(std::errc::no_such_file_or_directory);
    if (it->second.imports > 1) {
        it->second.imports--;
        return {};
    }
    if (it->second.live_blocks)
        return std::make_error_code(std::errc::device_or_resource_busy);
    drm_gem_close close{handle, 0};
    if (auto ec = ioctl(DRM_IOCTL_GEM_CLOSE, &close))
        return ec;
    if (it->second.map)
        munmap(it->second.map, it->second.size);
    if (it->second.dmabuf >= 0)
        ::close(it->second.dmabuf);
    bos_.erase(it);
    return {};
}

Result<std::span<std::byte>> KernelBackend::bo_map(std::uint32_t handle)
{
    if (lost_)
        return errc::device_lost;
    std::lock_guard lock(mu_);
    auto it = bos_.find(handle);
    if (it == bos_.end())
        return std::make_error_code(std::errc::no_such_file_or_directory);
    Bo& bo = it->second;
    if (!bo.map && bo.dmabuf >= 0) {
        // Imported: the exporter maps its memory (vrex.ko answers BO_MMAP_OFFSET with EOPNOTSUPP).
        void* p = mmap(nullptr, bo.size, PROT_READ | PROT_WRITE, MAP_SHARED, bo.dmabuf, 0);
        if (p == MAP_FAILED)
            return std::error_code(errno, std::generic_category());
        bo.map = static_cast<std::byte*>(p);
    }
    if (!bo.map) {
        drm_vrex_bo_mmap_offset mo{handle, 0, 0};
        if (auto ec = ioctl(DRM_IOCTL_VREX_BO_MMAP_OFFSET, &mo))
            return ec;
        void* p = mmap(nullptr, bo.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                       static_cast<off_t>(mo.offset));
        if (p == MAP_FAILED)
            return lost_or(errno);
        bo.map = static_cast<std::byte*>(p);
    }
    return std::span<std::byte>(bo.map, bo.size);
}

Result<int> KernelBackend::bo_export_dmabuf(std::uint32_t handle)
{
    if (lost_)
        return errc::device_lost;
    int out = -1;
    if (drmPrimeHandleToFD(fd_, handle, DRM_CLOEXEC | DRM_RDWR, &out))
        return lost_or(errno);
    return out;
}

Result<ImportedBo> KernelBackend::bo_import_dmabuf(int fd)
{
    if (lost_)
        return errc::device_lost;
    std::lock_guard lock(mu_);
    std::uint32_t handle = 0;
    if (drmPrimeFDToHandle(fd_, fd, &handle))
        return lost_or(errno);
    auto it = bos_.find(handle);
    if (it != bos_.end() && it->second.dmabuf < 0)  // a BO of this file: the core gave its handle back
        return ImportedBo{handle, it->second.size, true};
    if (it != bos_.end()) {  // imported before: the same handle (the file's PRIME cache)
        it->second.imports++;
        return ImportedBo{handle, it->second.size, false};
    }
    const off_t end = lseek(fd, 0, SEEK_END);
    const int dup = end > 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (dup < 0) {
        const int e = errno;
        drm_gem_close close{handle, 0};
        (void)ioctl(DRM_IOCTL_GEM_CLOSE, &close);
        return std::error_code(e ? e : EINVAL, std::generic_category());
    }
    bos_[handle] = Bo{static_cast<std::uint64_t>(end), nullptr, 0, dup, 1};
    return ImportedBo{handle, static_cast<std::uint64_t>(end), false};
}

std::error_code KernelBackend::stream_create(drm_vrex_stream_create& args)
{
    return ioctl(DRM_IOCTL_VREX_STREAM_CREATE, &args);
}

void KernelBackend::drop_block(const drm_vrex_released_block& rec, std::uint32_t stream)
{
    auto [first, last] = blocks_.equal_range(rec.block);
    for (auto it = first; it != last; ++it) {
        const Block& b = it->second;
        // A record names its incarnation by generations (uAPI 1.2/1.3): one of another block or
        // BO generation is stale (an earlier block with this id), never this block's. The handle
        // reads 0 once it no longer names the BO, so it only identifies without generations.
        if (b.stream != stream || (rec.bo_gen && b.bo_gen && rec.bo_gen != b.bo_gen))
            continue;
        if (rec.block_gen && b.block_gen ? rec.block_gen != b.block_gen : b.handle != rec.handle)
            continue;
        auto bo = bos_.find(it->second.handle);
        if (bo != bos_.end() && bo->second.live_blocks)
            bo->second.live_blocks--;
        blocks_.erase(it);
        return;
    }
}

std::error_code KernelBackend::stream_destroy(std::uint32_t stream)
{
    drm_vrex_stream_destroy args{stream, 0};
    // Held across the ioctl: the driver may give the id to a stream created right after it, and
    // that stream's blocks (inserted under mu_) must not be taken for this one's below.
    std::lock_guard lock(mu_);
    if (auto ec = ioctl(DRM_IOCTL_VREX_STREAM_DESTROY, &args))
        return ec;
    // The driver released the stream's blocks with it.
    for (auto it = blocks_.begin(); it != blocks_.end();) {
        const auto next = std::next(it);
        if (it->second.stream == stream) {
            auto bo = bos_.find(it->second.handle);
            if (bo != bos_.end() && bo->second.live_blocks)
                bo->second.live_blocks--;
            blocks_.erase(it);
        }
        it = next;
    }
    return {};
}

std::error_code KernelBackend::frame_submit(drm_vrex_frame_submit& args)
{
    return ioctl(DRM_IOCTL_VREX_FRAME_SUBMIT, &args);
}

std::error_code KernelBackend::shie_insert(std::uint32_t stream, std::span<drm_vrex_shie_insert_item> items)
{
    drm_vrex_shie_batch b{stream, static_cast<std::uint32_t>(items.size()), sizeof(drm_vrex_shie_insert_item), 0,
                          user_ptr(items.data())};
    if (items.size() > std::numeric_limits<std::uint32_t>::max())
        return std::make_error_code(std::errc::invalid_argument);
    // Held across the ioctl so a concurrent bo_destroy() cannot close a BO a new block points into.
    std::lock_guard lock(mu_);
    const std::error_code ec = ioctl(DRM_IOCTL_VREX_SHIE_INSERT, &b);
    // A batch stopped by a failed command (ETIMEDOUT, EIO) still reports per item which blocks
    // exist (result 0); the others carry the errno or -ECANCELED. Any other error applied nothing.
    if (ec && ec != std::errc::timed_out && ec != std::errc::io_error)
        return ec;
    for (const drm_vrex_shie_insert_item& it : items) {
        if (it.result || (it.flags & DRM_VREX_INSERT_ALIAS))
            continue;
        blocks_.emplace(it.block, Block{stream, it.handle, it.block_gen, it.bo_gen});
        if (auto bo = bos_.find(it.handle); bo != bos_.end())
            bo->second.live_blocks++;
    }
    return ec;
}

std::error_code KernelBackend::shie_lookup(std::uint32_t stream, std::span<drm_vrex_shie_lookup_item> items)
{
    if (items.size() > std::numeric_limits<std::uint32_t>::max())
        return std::make_error_code(std::errc::invalid_argument);
    drm_vrex_shie_batch b{stream, static_cast<std::uint32_t>(items.size()), sizeof(drm_vrex_shie_lookup_item), 0,
                          user_ptr(items.data())};
    return ioctl(DRM_IOCTL_VREX_SHIE_LOOKUP, &b);
}

std::error_code KernelBackend::shie_retire(std::uint32_t stream, std::span<const std::uint32_t> remove,
                                           std::span<drm_vrex_released_block> released,
                                           std::uint32_t& released_count)
{
    constexpr std::size_t kMax = std::numeric_limits<std::uint32_t>::max();
    drm_vrex_shie_retire r{};
    r.stream = stream;
    r.remove_count = static_cast<std::uint32_t>(std::min(remove.size(), kMax));
    r.released_cap = static_cast<std::uint32_t>(std::min(released.size(), kMax));
    r.elem_size = sizeof(drm_vrex_released_block);
    r.remove = user_ptr(remove.data());
    r.released = user_ptr(released.data());
    if (remove.size() > kMax)
        return std::make_error_code(std::errc::invalid_argument);
    std::lock_guard lock(mu_);
    const std::error_code ec = ioctl(DRM_IOCTL_VREX_SHIE_RETIRE, &r);
    if (ec == std::errc::no_space_on_device)
        released_count = r.released_cap;
    if (ec)
        return ec;
    released_count = r.released_cap;
    for (std::uint32_t i = 0; i < released_count && i < released.size(); i++)
        drop_block(released[i], stream);
    return {};
}

Result<drm_vrex_stats> KernelBackend::stats()
{
    drm_vrex_stats s{};
    drm_vrex_stats_query q{sizeof(s), 0, user_ptr(&s)};
    if (auto ec = ioctl(DRM_IOCTL_VREX_STATS, &q))
        return ec;
    return s;
}

// ---- ReSV: one ioctl each; the driver validates, owns the heads per file and maps errnos. ------

std::error_code KernelBackend::resv_head_create(drm_vrex_resv_head_create& args)
{
    return ioctl(DRM_IOCTL_VREX_RESV_HEAD_CREATE, &args);
}

std::error_code KernelBackend::resv_head_destroy(std::uint32_t head)
{
    drm_vrex_resv_head_destroy args{head, 0};
    return ioctl(DRM_IOCTL_VREX_RESV_HEAD_DESTROY, &args);
}

std::error_code KernelBackend::resv_hash(drm_vrex_resv_hash& args)
{
    return ioctl(DRM_IOCTL_VREX_RESV_HASH, &args);
}

std::error_code KernelBackend::resv_select(std::span<drm_vrex_resv_select_item> items)
{
    if (items.size() > std::numeric_limits<std::uint32_t>::max())
        return std::make_error_code(std::errc::invalid_argument);
    drm_vrex_resv_batch b{static_cast<std::uint32_t>(items.size()), sizeof(drm_vrex_resv_select_item), 0, 0,
                          user_ptr(items.data())};
    return ioctl(DRM_IOCTL_VREX_RESV_SELECT, &b);
}

std::error_code KernelBackend::resv_truncate(std::uint32_t head, std::uint32_t keep)
{
    drm_vrex_resv_truncate args{head, keep};
    return ioctl(DRM_IOCTL_VREX_RESV_TRUNCATE, &args);
}

Result<drm_vrex_resv_stats> KernelBackend::resv_stats()
{
    drm_vrex_resv_stats s{};
    drm_vrex_query q{DRM_VREX_QUERY_RESV_STATS, sizeof(s), user_ptr(&s)};
    if (auto ec = ioctl(DRM_IOCTL_VREX_QUERY, &q))
        return ec;
    return s;
}

// The REG_READ ioctl is retired: registers come from the device's debugfs "window" file (root
// only), in the DRM core's debugfs directory of our node (discovery::debugfs_dir()).
Result<std::uint32_t> KernelBackend::reg_read(std::uint32_t offset)
{
    if ((offset & 3) != 0 || offset >= VREX_REG_WINDOW_BYTES)
        return errno_code(EINVAL);
    struct stat st{};
    if (::fstat(fd_, &st) != 0)
        return errno_code(errno);
    const std::string dir = discovery::debugfs_dir(st.st_rdev);
    if (dir.empty())
        return errno_code(EOPNOTSUPP);
    const int wfd = ::open((dir + "/window").c_str(), O_RDONLY | O_CLOEXEC);
    if (wfd < 0)
        return errno_code(errno);
    std::uint32_t v = 0;
    const ssize_t n = ::pread(wfd, &v, sizeof(v), offset);
    const int e = errno;
    ::close(wfd);
    if (n < 0)
        return errno_code(e);
    if (n != sizeof(v))
        return errno_code(EIO);
    return v;
}

Result<std::size_t> KernelBackend::read_events(std::span<drm_vrex_event_frame> out)
{
    if (lost_)
        return errc::device_lost;
    std::lock_guard lock(mu_);
    std::size_t n = 0;
    // read() returns whole events only; other DRM event types (none today) are skipped by length.
    std::array<std::byte, 16 * sizeof(drm_vrex_event_frame)> buf;
    while (n < out.size()) {
        const std::size_t want = std::min(buf.size(), (out.size() - n) * sizeof(drm_vrex_event_frame));
        const ssize_t got = ::read(fd_, buf.data(), want);
        if (got < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            return lost_or(errno);
        }
        if (got == 0)
            break;
        std::size_t pos = 0;
        while (pos + sizeof(drm_event) <= static_cast<std::size_t>(got)) {
            drm_event head;
            std::memcpy(&head, buf.data() + pos, sizeof(head));
            if (head.length < sizeof(drm_event) || pos + head.length > static_cast<std::size_t>(got))
                return std::make_error_code(std::errc::protocol_error);
            if (head.type == DRM_VREX_EVENT_FRAME_DONE && head.length >= sizeof(drm_vrex_event_frame) && n < out.size())
                std::memcpy(&out[n++], buf.data() + pos, sizeof(drm_vrex_event_frame));
            pos += head.length;
        }
    }
    return n;
}

namespace {

bool kernel_available() { return !discovery::find_vrex_nodes().empty(); }

Result<std::unique_ptr<Backend>> kernel_open(const BackendOptions& options)
{
    auto b = KernelBackend::open(options);
    if (!b)
        return b.error();
    return std::unique_ptr<Backend>(std::move(*b));
}

}  // namespace

const BackendFactory& kernel_backend_factory()
{
    static const BackendFactory factory{"kernel", kernel_available, kernel_open};
    return factory;
}

}  // namespace vrex
