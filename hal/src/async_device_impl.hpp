// AsyncDevice::Impl, shared by the uAPI-level (async_device.cpp) and the engine-level
// (async_stream.cpp) operations, and the uAPI-level operations themselves (vrex::raw), which are
// internal: tests and the engine level drive the device's frame events through them.
//
// A frame op lives in pending from before its ioctl until both halves are in: the ioctl's out
// fields (the submitting thread) and the completion event (the io_context). The event can be read
// before the ioctl has returned to its caller, so whichever half arrives second completes the op.
// The descriptor is only touched on the strand.
#pragma once

#include <array>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>
#include <map>
#include <mutex>

#include <drm/vrex_accel.h>

#include "device_impl.hpp"
#include "vrex/async.hpp"

namespace vrex {

namespace asio = boost::asio;

// A frame submitted with DRM_VREX_FRAME_EVENT, completed.
struct FrameCompletion {
    drm_vrex_frame_submit submit{};  // the request with the ioctl's out fields (caller's user_data)
    drm_vrex_event_frame event{};    // the device's completion event (caller's user_data)
};

using FrameOp = detail::AsyncOp<FrameCompletion>;
using LookupOp = detail::AsyncOp<std::vector<drm_vrex_shie_lookup_item>>;

struct VREX_LOCAL AsyncDevice::Impl : std::enable_shared_from_this<Impl> {
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
            auto n = backend_of(*device).read_events(buf);
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

    // @args as for Backend::frame_submit(); DRM_VREX_FRAME_EVENT is added, user_data handed back.
    void start_frame(drm_vrex_frame_submit args, std::unique_ptr<FrameOp> op);
    // One lookup batch of @stream on the io_context.
    void start_retrieve(std::uint32_t stream, std::vector<drm_vrex_shie_lookup_item> items,
                        std::unique_ptr<LookupOp> op);

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

namespace detail {

struct AsyncAccess {
    static AsyncDevice::Impl& impl(AsyncDevice& a) noexcept { return *a.impl_; }
    static asio::io_context::executor_type executor(const AsyncDevice& a) noexcept { return a.executor(); }
};

}  // namespace detail

// The uAPI level, for tests: completion signatures
//     void(std::error_code, vrex::FrameCompletion)
//     void(std::error_code, std::vector<drm_vrex_shie_lookup_item>)
namespace raw {

template <class CompletionToken>
auto async_begin_frame(AsyncDevice& ad, const drm_vrex_frame_submit& args, CompletionToken&& token)
{
    return asio::async_initiate<CompletionToken, void(std::error_code, FrameCompletion)>(
        [&ad](auto handler, const drm_vrex_frame_submit& a) {
            using H = std::decay_t<decltype(handler)>;
            detail::AsyncAccess::impl(ad).start_frame(a, std::make_unique<detail::AsyncOpFor<FrameCompletion, H>>(
                                                                 std::move(handler), detail::AsyncAccess::executor(ad)));
        },
        token, args);
}

// One lookup batch of @stream (1..max_batch items, validated like Backend::shie_lookup()).
template <class CompletionToken>
auto async_retrieve(AsyncDevice& ad, std::uint32_t stream, std::vector<drm_vrex_shie_lookup_item> items,
                    CompletionToken&& token)
{
    using Items = std::vector<drm_vrex_shie_lookup_item>;
    return asio::async_initiate<CompletionToken, void(std::error_code, Items)>(
        [&ad](auto handler, std::uint32_t s, Items it) {  // NOLINT(performance-unnecessary-value-param)
            using H = std::decay_t<decltype(handler)>;
            detail::AsyncAccess::impl(ad).start_retrieve(
                s, std::move(it),
                std::make_unique<detail::AsyncOpFor<Items, H>>(std::move(handler), detail::AsyncAccess::executor(ad)));
        },
        token, stream, std::move(items));
}

}  // namespace raw

}  // namespace vrex
