// AsyncDevice (uAPI level): frame completions from the backend's event fd, lookups run on the
// io_context. The shared state and its protocol: async_device_impl.hpp.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "async_device_impl.hpp"

namespace vrex {

Result<std::unique_ptr<AsyncDevice>> AsyncDevice::create(std::shared_ptr<Device> device, asio::io_context& io)
{
    // The descriptor gets its own fd: it closes it, while the backend keeps event_fd().
    const int fd = fcntl(backend_of(*device).event_fd(), F_DUPFD_CLOEXEC, 0);
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

void AsyncDevice::Impl::start_frame(drm_vrex_frame_submit args, std::unique_ptr<FrameOp> op)
{
    Impl& im = *this;
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
    const std::error_code ec = backend_of(*im.device).frame_submit(args);

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
    asio::post(im.strand, [self = shared_from_this()] { self->arm(); });
}

void AsyncDevice::Impl::start_retrieve(std::uint32_t stream, std::vector<drm_vrex_shie_lookup_item> items,
                                       std::unique_ptr<LookupOp> op)
{
    asio::post(io, [self = shared_from_this(), stream, items = std::move(items), op = std::move(op)]() mutable {
        bool closed;
        {
            std::lock_guard lock(self->mu);
            closed = self->closed;
        }
        if (closed) {
            op->complete(std::make_error_code(std::errc::operation_canceled), std::move(items));
            return;
        }
        const std::error_code ec = backend_of(*self->device).shie_lookup(stream, items);
        op->complete(ec, std::move(items));
    });
}

}  // namespace vrex
