// HotplugMonitor over libudev's netlink monitor. The udev objects are only touched on the strand
// (and in start() before the first wait is armed).
#include "vrex/hotplug.hpp"

#include <fcntl.h>
#include <libudev.h>
#include <unistd.h>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>
#include <atomic>
#include <cerrno>
#include <mutex>

#include "discovery.hpp"
#include "hotplug_filter.hpp"

namespace vrex {

namespace asio = boost::asio;

namespace {

const char* or_empty(const char* s) { return s ? s : ""; }

HotplugFilter::Record record_of(udev_device* dev)
{
    HotplugFilter::Record r{or_empty(udev_device_get_action(dev)),  or_empty(udev_device_get_subsystem(dev)),
                            or_empty(udev_device_get_sysname(dev)), or_empty(udev_device_get_syspath(dev)),
                            or_empty(udev_device_get_devnode(dev)), ""};
    // The parent belongs to @dev. On removal sysfs is gone and there is no parent.
    if (udev_device* parent = udev_device_get_parent(dev))
        r.driver = or_empty(udev_device_get_driver(parent));
    return r;
}

}  // namespace

HotplugFilter::HotplugFilter(Verifier verify) : verify_(std::move(verify)) {}

void HotplugFilter::seed(const std::string& syspath, const std::string& devnode) { known_[syspath] = devnode; }

std::optional<HotplugEvent> HotplugFilter::classify(const Record& rec)
{
    const discovery::DeviceRecord dr{rec.subsystem, rec.sysname, rec.devnode, rec.driver};
    if (rec.action == "remove") {
        auto it = known_.find(rec.syspath);
        if (it == known_.end())
            return std::nullopt;
        HotplugEvent ev{HotplugEvent::Kind::removed, it->second, rec.syspath};
        known_.erase(it);
        return ev;
    }
    if (rec.action != "add" || !discovery::is_compute_node(dr) || known_.count(rec.syspath))
        return std::nullopt;
    // The drm/accel minor is announced during probe, before the parent's driver link exists.
    const bool vrex = rec.driver.empty() ? verify_ && verify_(rec.devnode) : discovery::is_vrex_driver(rec.driver);
    if (!vrex)
        return std::nullopt;
    known_[rec.syspath] = rec.devnode;
    return HotplugEvent{HotplugEvent::Kind::added, rec.devnode, rec.syspath};
}

struct VREX_LOCAL HotplugMonitor::Impl : std::enable_shared_from_this<Impl> {
    Impl(asio::io_context& io, Callback cb, Options opt)
        : strand(asio::make_strand(io)), sd(strand), callback(std::move(cb)), options(std::move(opt)),
          filter(discovery::node_driver_is_vrex)
    {
    }
    ~Impl() { release(); }

    void release()
    {
        boost::system::error_code ignored;
        sd.close(ignored);
        if (mon)
            udev_monitor_unref(mon);
        if (ctx)
            udev_unref(ctx);
        mon = nullptr;
        ctx = nullptr;
    }

    void seed()
    {
        udev_enumerate* en = udev_enumerate_new(ctx);
        if (!en)
            return;
        udev_enumerate_add_match_subsystem(en, "accel");
        udev_enumerate_add_match_subsystem(en, "drm");
        if (udev_enumerate_scan_devices(en) >= 0) {
            udev_list_entry* entry;
            udev_list_entry_foreach(entry, udev_enumerate_get_list_entry(en))
            {
                udev_device* dev = udev_device_new_from_syspath(ctx, udev_list_entry_get_name(entry));
                if (!dev)
                    continue;
                HotplugFilter::Record r = record_of(dev);
                r.action = "add";
                filter.classify(r);  // present now: known, not reported
                udev_device_unref(dev);
            }
        }
        udev_enumerate_unref(en);
    }

    void arm()
    {
        sd.async_wait(asio::posix::stream_descriptor::wait_read,
                      asio::bind_executor(strand, [self = shared_from_this()](const boost::system::error_code& ec) {
                          self->on_readable(ec);
                      }));
    }

    void on_readable(const boost::system::error_code& ec)
    {
        if (ec || !running)
            return;
        while (udev_device* dev = udev_monitor_receive_device(mon)) {
            const HotplugFilter::Record r = record_of(dev);
            udev_device_unref(dev);
            std::optional<HotplugEvent> ev;
            {
                std::lock_guard lock(mu);
                ev = filter.classify(r);
            }
            if (ev && running)
                callback(*ev);
        }
        if (running)
            arm();
    }

    asio::strand<asio::io_context::executor_type> strand;
    asio::posix::stream_descriptor sd;
    Callback callback;
    Options options;
    udev* ctx = nullptr;
    udev_monitor* mon = nullptr;
    std::atomic<bool> running{false};
    mutable std::mutex mu;  // filter
    HotplugFilter filter;
};

HotplugMonitor::HotplugMonitor(asio::io_context& io, Callback callback, Options options)
    : impl_(std::make_shared<Impl>(io, std::move(callback), std::move(options)))
{
}

HotplugMonitor::HotplugMonitor(asio::io_context& io, Callback callback)
    : HotplugMonitor(io, std::move(callback), Options{})
{
}

HotplugMonitor::~HotplugMonitor() { stop(); }

Result<void> HotplugMonitor::start()
{
    Impl& im = *impl_;
    if (im.running)
        return std::make_error_code(std::errc::device_or_resource_busy);
    if (im.options.source != "udev" && im.options.source != "kernel")
        return std::make_error_code(std::errc::invalid_argument);
    im.release();
    im.ctx = udev_new();
    if (!im.ctx)
        return std::error_code(errno ? errno : ENOMEM, std::generic_category());
    im.mon = udev_monitor_new_from_netlink(im.ctx, im.options.source.c_str());
    if (!im.mon) {
        const int e = errno ? errno : EPROTONOSUPPORT;
        im.release();
        return std::error_code(e, std::generic_category());
    }
    int rc = udev_monitor_filter_add_match_subsystem_devtype(im.mon, "accel", nullptr);
    if (rc >= 0)
        rc = udev_monitor_filter_add_match_subsystem_devtype(im.mon, "drm", nullptr);
    if (rc >= 0)
        rc = udev_monitor_enable_receiving(im.mon);
    const int fd = rc >= 0 ? fcntl(udev_monitor_get_fd(im.mon), F_DUPFD_CLOEXEC, 0) : -1;
    if (fd < 0) {
        const int e = rc < 0 ? -rc : errno;
        im.release();
        return std::error_code(e, std::generic_category());
    }
    boost::system::error_code ec;
    im.sd.assign(fd, ec);
    if (ec) {
        ::close(fd);
        im.release();
        return std::error_code(ec.value(), std::generic_category());
    }
    {
        std::lock_guard lock(im.mu);
        im.filter = HotplugFilter(discovery::node_driver_is_vrex);
        im.seed();
    }
    im.running = true;
    asio::post(im.strand, [self = impl_] {
        if (self->running)
            self->arm();
    });
    return {};
}

void HotplugMonitor::stop()
{
    if (!impl_->running.exchange(false))
        return;
    asio::post(impl_->strand, [self = impl_] {
        boost::system::error_code ignored;
        self->sd.cancel(ignored);
    });
}

bool HotplugMonitor::running() const noexcept { return impl_->running; }

std::vector<HotplugNode> HotplugMonitor::known() const
{
    std::lock_guard lock(impl_->mu);
    std::vector<HotplugNode> out;
    for (const auto& [syspath, node] : impl_->filter.known())  // std::map: sorted by syspath
        out.push_back({syspath, node});
    return out;
}

}  // namespace vrex
