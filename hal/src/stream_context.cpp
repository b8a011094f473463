// The public Stream calls: each runs its do_* implementation (stream.cpp) and, on failure, puts the
// call and the stream's position in front of the error's context, so a user sees "allocate
// (stream 1, frame 12): block for frame 12, region 3: bank group (banks 4..5) full ...: No space
// left on device" rather than a bare errno message.
#include <string>

#include "stream_impl.hpp"

namespace vrex {
namespace {

// @context is only built on failure: these calls are on the engine's hot path.
template <class T, class F>
Result<T> in_context(Result<T> r, F&& context) {
    if (r) return r;
    return r.error_info().within(context());
}

std::string handle(const KvBlock& b) {
    return "block (id " + std::to_string(b.id) + ", generation " + std::to_string(b.generation) + ")";
}

}  // namespace

std::string Stream::Impl::where(std::string_view what) const {
    std::string s(what);
    s += " (stream " + std::to_string(id_);
    if (in_frame_) s += ", frame " + std::to_string(frame_.frame);
    return s + ")";
}

Result<FrameInfo> Stream::begin_frame(const LumaView& luma) {
    return in_context(impl_->do_begin_frame(luma), [&] { return impl_->where("begin frame"); });
}

Result<std::vector<KvBlock>> Stream::allocate_batch(std::span<const std::uint32_t> regions,
                                                    std::int32_t frame_offset) {
    return in_context(impl_->do_allocate_batch(regions, frame_offset), [&] {
        return impl_->where("allocate batch of " + std::to_string(regions.size()) + " blocks");
    });
}

Result<KvBlock> Stream::allocate(std::uint32_t region, std::int32_t frame_offset) {
    const std::uint32_t r[1] = {region};
    auto v = impl_->do_allocate_batch(r, frame_offset);
    if (!v) return v.error_info().within(impl_->where("allocate"));
    return v->front();
}

Result<void> Stream::reuse(std::uint32_t region, const KvBlock& block, std::int32_t frame_offset) {
    return in_context(impl_->do_reuse(region, block, frame_offset),
                      [&] { return impl_->where("reuse " + handle(block)); });
}

Result<std::vector<Retrieval>> Stream::retrieve_batch(std::span<const Query> queries) {
    return in_context(impl_->do_retrieve_batch(queries), [&] {
        return impl_->where("retrieve batch of " + std::to_string(queries.size()) + " queries");
    });
}

Result<Retrieval> Stream::retrieve_temporal(std::uint32_t region, std::int32_t frame_offset) {
    const Query q[1] = {Query::temporal(region, frame_offset)};
    auto v = impl_->do_retrieve_batch(q);
    if (!v)
        return v.error_info().within(impl_->where("retrieve temporal (region " + std::to_string(region) +
                                                  ", frame offset " + std::to_string(frame_offset) + ")"));
    return v->front();
}

Result<Retrieval> Stream::retrieve_similar(std::uint32_t region, const Fingerprint& fp, std::uint32_t radius,
                                           Scope scope, bool past_only) {
    const Query q[1] = {Query::similar(region, fp, radius, scope, past_only)};
    auto v = impl_->do_retrieve_batch(q);
    if (!v)
        return v.error_info().within(impl_->where("retrieve similar (region " + std::to_string(region) +
                                                  ", radius " + std::to_string(radius) + ")"));
    return v->front();
}

Result<void> Stream::release(const KvBlock& block) {
    return in_context(impl_->do_release(std::span(&block, 1)), [&] { return impl_->where("release"); });
}

Result<void> Stream::release_batch(std::span<const KvBlock> blocks) {
    return in_context(impl_->do_release(blocks), [&] {
        return impl_->where("release batch of " + std::to_string(blocks.size()) + " blocks");
    });
}

Result<void> Stream::publish(const KvBlock& block) {
    return in_context(impl_->do_publish(std::span(&block, 1)), [&] { return impl_->where("publish"); });
}

Result<void> Stream::publish_batch(std::span<const KvBlock> blocks) {
    return in_context(impl_->do_publish(blocks), [&] {
        return impl_->where("publish batch of " + std::to_string(blocks.size()) + " blocks");
    });
}

Result<void> Stream::set_positions(const KvBlock& block, std::uint32_t first_token,
                                   std::uint32_t token_count) {
    return in_context(impl_->do_set_positions(block, first_token, token_count), [&] {
        return impl_->where("set positions of " + handle(block) + " to " + std::to_string(token_count) +
                            " tokens from " + std::to_string(first_token));
    });
}

Result<void> Stream::pin(const KvBlock& block) {
    return in_context(impl_->do_pin(block), [&] { return impl_->where("pin " + handle(block)); });
}

Result<void> Stream::unpin(const KvBlock& block) {
    return in_context(impl_->do_unpin(block), [&] { return impl_->where("unpin " + handle(block)); });
}

Result<KvBlock> Stream::copy_on_write(const KvBlock& block, std::uint32_t region, std::int32_t frame_offset) {
    return in_context(impl_->do_copy_on_write(block, region, frame_offset),
                      [&] { return impl_->where("copy on write of " + handle(block)); });
}

Result<FrameEnd> Stream::end_frame() {
    return in_context(impl_->do_end_frame(), [&] { return impl_->where("end frame"); });
}

Result<int> Stream::export_dmabuf(const KvBlock& block) {
    return in_context(impl_->do_export_dmabuf(block),
                      [&] { return impl_->where("export dma-buf of " + handle(block)); });
}

}  // namespace vrex
