// AsyncDevice: frame completions from the backend's event fd, lookups run on the io_context.
//
// A frame op lives in pending_ from before its ioctl until both halves are in: the ioctl's out
// fields (the submitting thread) and the completion event (the io_context). The event can be read
// before the ioctl has returned to its caller, so whichever half arrives second completes the op.
// The descriptor is only touched on the strand.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>
#include <cerrno>
#include <map>
#include <mutex>

#include "vrex/async.hpp"

namespace vrex {

namespace asio = boost::asio;

struct AsyncDevice::Impl : std::enable_shared_from_this<Impl> {
    struct Pending {
        std::unique_ptr<FrameOp> op;
        std::uint64_t caller_user_data = 0;
        bool submitted = false;
        bool have_event = false;
        FrameCompletion result;
    };

    Impl(std::shared_ptr<Device> d, asio::io_context& io, int fd)
        : device(std::move(d)), io(io), strand(asio::make_strand(io)), events(strand, fd)
    {
    }

    // Takes the op out of pending_ when both halves are in (call with mu held).
    std::unique_ptr<FrameOp> take_if_complete(std::map<std::uint64_t, Pending>::iterator it, FrameCompletion& out)
    {
        if (!it->second.submitted || !it->second.have_event)
            return nullptr;
        out = it->second.result;
        out.submit.user_data = it->second.caller_user_data;
        out.event.user_data = it->second.caller_user_data;
        auto op = std::move(it->second.op);
        pending.erase(it);
        return op;
    }

    bool awaiting_events() const
    {
        for (const auto& [token, p] : pending)
            if (!p.have_event)
                return true;
        return false;
    }

    // On the strand.
    void arm()
    {
        {
            std::lock_guard lock(mu);
            if (closed || waiting || !awaiting_events())
                return;
            waiting = true;
        }
        events.async_wait(asio::posix::stream_descriptor::wait_read,
                          asio::bind_executor(strand, [self = shared_from_this()](const boost::system::error_code& ec) {
                              self->on_readable(ec);
                          }));
    }

    // On the strand.
    void on_readable(const boost::system::error_code& ec)
    {
        {
            std::lock_guard lock(mu);
            waiting = false;
            if (closed || ec == asio::error::operation_aborted)
                return;
        }
        std::array<drm_vrex_event_frame, 32> buf;
        for (;;) {
            auto n = device->backend().read_events(buf);
            if (!n) {
                fail_all(n.error());
                return;
            }
            for (std::size_t i = 0; i < *n; i++) {
                std::unique_ptr<FrameOp> op;
                FrameCompletion done;
                {
                    std::lock_guard lock(mu);
                    auto it = pending.find(buf[i].user_data);
                    if (it == pending.end())
                        continue;  // not ours (documented: AsyncDevice owns the event queue)
                    it->second.result.event = buf[i];
                    it->second.have_event = true;
                    op = take_if_complete(it, done);
                }
                if (op)
                    op->complete({}, done);
            }
            if (*n < buf.size())
                break;
        }
        arm();
    }

    void fail_all(std::error_code ec)
    {
        std::map<std::uint64_t, Pending> failed;
        {
            std::lock_guard lock(mu);
            failed.swap(pending);
        }
        for (auto& [token, p] : failed)
            if (p.op)
                p.op->complete(ec, {});
    }

    std::shared_ptr<Device> device;
    asio::io_context& io;
    asio::strand<asio::io_context::executor_type> strand;
    asio::posix::stream_descriptor events;
    mutable std::mutex mu;  // everything below
    std::map<std::uint64_t, Pending> pending;
    std::uint64_t next_token = 1;
    bool waiting = false;
    bool closed = false;
};

Result<std::unique_ptr<AsyncDevice>> AsyncDevice::create(std::shared_ptr<Device> device, asio::io_context& io)
{
    // The descriptor gets its own fd: it closes it, while the backend keeps event_fd().
    const int fd = fcntl(device->backend().event_fd(), F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return std::error_code(errno, std::generic_category());
    return std::make_unique<AsyncDevice>(std::make_shared<Impl>(std::move(device), io, fd));
}

AsyncDevice::AsyncDevice(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

AsyncDevice::~AsyncDevice()
{
    {
        std::lock_guard lock(impl_->mu);
        impl_->closed = true;
    }
    asio::post(impl_->strand, [self = impl_] {
        boost::system::error_code ignored;
        self->events.cancel(ignored);
    });
    impl_->fail_all(std::make_error_code(std::errc::operation_canceled));
}

Device& AsyncDevice::device() noexcept { return *impl_->device; }

asio::io_context::executor_type AsyncDevice::executor() const noexcept { return impl_->io.get_executor(); }

std::size_t AsyncDevice::pending_frames() const
{
    std::lock_guard lock(impl_->mu);
    return impl_->pending.size();
}

void AsyncDevice::start_frame(drm_vrex_frame_submit args, std::unique_ptr<FrameOp> op)
{
    Impl& im = *impl_;
    std::uint64_t token;
    {
        std::lock_guard lock(im.mu);
        if (im.closed) {
            op->complete(std::make_error_code(std::errc::operation_canceled), {});
            return;
        }
        token = im.next_token++;
        Impl::Pending p;
        p.op = std::move(op);
        p.caller_user_data = args.user_data;
        im.pending.emplace(token, std::move(p));
    }
    args.flags |= DRM_VREX_FRAME_EVENT;
    args.user_data = token;
    const std::error_code ec = im.device->backend().frame_submit(args);

    std::unique_ptr<FrameOp> done_op;
    FrameCompletion done;
    {
        std::lock_guard lock(im.mu);
        auto it = im.pending.find(token);
        if (it == im.pending.end())
            return;  // failed by fail_all() (device lost or shutdown) meanwhile
        if (ec) {
            done_op = std::move(it->second.op);
            im.pending.erase(it);
        } else {
            it->second.result.submit = args;
            it->second.submitted = true;
            done_op = im.take_if_complete(it, done);
        }
    }
    if (done_op) {
        done_op->complete(ec, done);
        return;
    }
    asio::post(im.strand, [self = impl_] { self->arm(); });
}

void AsyncDevice::start_retrieve(std::uint32_t stream, std::vector<drm_vrex_shie_lookup_item> items,
                                 std::unique_ptr<LookupOp> op)
{
    asio::post(impl_->io, [self = impl_, stream, items = std::move(items), op = std::move(op)]() mutable {
        bool closed;
        {
            std::lock_guard lock(self->mu);
            closed = self->closed;
        }
        if (closed) {
            op->complete(std::make_error_code(std::errc::operation_canceled), std::move(items));
            return;
        }
        const std::error_code ec = self->device->backend().shie_lookup(stream, items);
        op->complete(ec, std::move(items));
    });
}

}  // namespace vrex
