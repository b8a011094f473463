// AsyncDevice, engine level: Stream frames through the same event-fd completion path as the uAPI
// level (start_frame()), Stream retrievals on the io_context. The Stream's state changes only in
// the completion, before its handler is posted, so the handler (and whoever it hands the stream to)
// sees the stream inside its frame.
#include "async_device_impl.hpp"
#include "stream_impl.hpp"

namespace vrex {

void AsyncDevice::start_stream_frame(Stream& stream, const LumaView& luma, std::unique_ptr<StreamFrameOp> op)
{
    // A local class has the member function's access to Stream (a friend of AsyncDevice).
    class EnterFrame final : public FrameOp {
    public:
        EnterFrame(Stream& s, std::unique_ptr<StreamFrameOp> op) : stream_(s), op_(std::move(op)) {}
        void complete(std::error_code ec, FrameCompletion c) override
        {
            if (ec) {
                op_->complete(ec, {});
                return;
            }
            op_->complete({}, stream_.impl_->enter_frame(c.submit));
        }

    private:
        Stream& stream_;
        std::unique_ptr<StreamFrameOp> op_;
    };

    if (&stream.impl_->alloc_->device() != impl_->device.get()) {
        op->complete(std::make_error_code(std::errc::invalid_argument), {});
        return;
    }
    {
        std::lock_guard lock(impl_->mu);
        if (impl_->closed) {
            op->complete(std::make_error_code(std::errc::operation_canceled), {});
            return;
        }
    }
    auto staged = stream.impl_->stage_frame(luma);
    if (!staged) {
        op->complete(staged.error(), {});
        return;
    }
    impl_->start_frame(*staged, std::make_unique<EnterFrame>(stream, std::move(op)));
}

void AsyncDevice::start_stream_retrieve(Stream& stream, std::vector<Query> queries, std::unique_ptr<RetrievalOp> op)
{
    if (&stream.impl_->alloc_->device() != impl_->device.get()) {
        op->complete(std::make_error_code(std::errc::invalid_argument), {});
        return;
    }
    asio::post(impl_->io, [self = impl_, s = &stream, q = std::move(queries), op = std::move(op)]() mutable {
        bool closed;
        {
            std::lock_guard lock(self->mu);
            closed = self->closed;
        }
        if (closed) {
            op->complete(std::make_error_code(std::errc::operation_canceled), {});
            return;
        }
        auto r = s->retrieve_batch(q);
        if (!r) {
            op->complete(r.error(), {});
            return;
        }
        op->complete({}, std::move(*r));
    });
}

}  // namespace vrex
