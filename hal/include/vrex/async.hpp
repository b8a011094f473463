// Boost.Asio front end of a Device: frame submission and batched retrieval on a Stream that complete
// on an io_context instead of blocking the caller's thread.
//
//     async_begin_frame(stream, luma, token)     void(std::error_code, vrex::FrameInfo)
//     async_retrieve(stream, queries, token)     void(std::error_code, std::vector<vrex::Retrieval>)
//
// async_begin_frame() stages the plane into the stream's staging buffer before it returns (with a
// deferred token: when the operation is initiated; the plane must be valid until then), submits it
// to the device and completes when the device's completion event for it arrives (the device's
// event fd, watched by a posix::stream_descriptor); the stream is inside the frame when the handler
// runs, exactly as after Stream::begin_frame() (EBUSY if it already was). async_retrieve() runs
// Stream::retrieve_batch() on the io_context. The stream belongs to the operation from its start
// until its handler runs: keep it alive and do not use it from any thread meanwhile (the
// one-thread-at-a-time rule of hal.hpp); the handler may use it. A stream of another Device gets
// EINVAL. An operation cancelled by destroying the AsyncDevice leaves the stream outside a frame
// (the device may have counted the frame).
//
// Any Asio completion token works (a callback, boost::asio::use_future, deferred, ...). Handlers run
// through their associated executor (default: the io_context).
//
// Thread safety: operations may be started from any thread and the io_context may be run by several
// threads. AsyncDevice owns the device's completion events: one AsyncDevice per Device. Destroying
// the AsyncDevice completes every operation still pending with std::errc::operation_canceled; the
// Device stays alive until the last operation has completed.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstddef>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "vrex/export.h"
#include "vrex/hal.hpp"

namespace vrex {

namespace detail {

// A type-erased completion; complete() posts the handler to its executor.
template <class Result>
class AsyncOp {
public:
    virtual ~AsyncOp() = default;
    virtual void complete(std::error_code ec, Result result) = 0;
};

template <class Result, class Handler>
class AsyncOpFor final : public AsyncOp<Result> {
public:
    AsyncOpFor(Handler handler, boost::asio::io_context::executor_type fallback)
        : handler_(std::move(handler)), fallback_(std::move(fallback))
    {
    }
    void complete(std::error_code ec, Result result) override
    {
        auto ex = boost::asio::get_associated_executor(handler_, fallback_);
        boost::asio::post(ex, [h = std::move(handler_), ec, r = std::move(result)]() mutable { h(ec, std::move(r)); });
    }

private:
    Handler handler_;
    boost::asio::io_context::executor_type fallback_;
};

struct AsyncAccess;  // hal/src/async_device_impl.hpp

}  // namespace detail

class VREX_API AsyncDevice {
public:
    using StreamFrameOp = detail::AsyncOp<FrameInfo>;
    using RetrievalOp = detail::AsyncOp<std::vector<Retrieval>>;

    // errno-style failures of the setup (dup of the event fd) are reported by create().
    static Result<std::unique_ptr<AsyncDevice>> create(std::shared_ptr<Device> device, boost::asio::io_context& io);
    ~AsyncDevice();
    AsyncDevice(const AsyncDevice&) = delete;
    AsyncDevice& operator=(const AsyncDevice&) = delete;

    // A frame of @stream from a host luma plane (see the top of this file).
    template <class CompletionToken>
    auto async_begin_frame(Stream& stream, const LumaView& luma, CompletionToken&& token)
    {
        return boost::asio::async_initiate<CompletionToken, void(std::error_code, FrameInfo)>(
            [this](auto handler, Stream* s, LumaView l) {
                using H = std::decay_t<decltype(handler)>;
                start_stream_frame(*s, l, std::make_unique<detail::AsyncOpFor<FrameInfo, H>>(std::move(handler), executor()));
            },
            token, &stream, luma);
    }

    // Stream::retrieve_batch(@queries) on the io_context.
    template <class CompletionToken>
    auto async_retrieve(Stream& stream, std::vector<Query> queries, CompletionToken&& token)
    {
        using Retrievals = std::vector<Retrieval>;
        return boost::asio::async_initiate<CompletionToken, void(std::error_code, Retrievals)>(
            [this](auto handler, Stream* s, std::vector<Query> q) {  // NOLINT(performance-unnecessary-value-param)
                using H = std::decay_t<decltype(handler)>;
                start_stream_retrieve(*s, std::move(q),
                                      std::make_unique<detail::AsyncOpFor<Retrievals, H>>(std::move(handler), executor()));
            },
            token, &stream, std::move(queries));
    }

    // Frame submissions whose completion has not been delivered yet.
    std::size_t pending_frames() const;
    Device& device() noexcept;

    struct Impl;
    explicit AsyncDevice(std::shared_ptr<Impl> impl);

private:
    friend struct detail::AsyncAccess;
    boost::asio::io_context::executor_type executor() const noexcept;
    void start_stream_frame(Stream& stream, const LumaView& luma, std::unique_ptr<StreamFrameOp> op);
    void start_stream_retrieve(Stream& stream, std::vector<Query> queries, std::unique_ptr<RetrievalOp> op);

    std::shared_ptr<Impl> impl_;
};

}  // namespace vrex
