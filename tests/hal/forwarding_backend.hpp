#pragma once

// A test's stand-in device: a Backend that forwards every required call to the one it wraps, so a
// test decorator overrides only the calls it changes (a device of an older uAPI, a recorder). The
// optional calls (ReSV, dma-buf import) keep Backend's "unsupported" unless a decorator forwards them.

#include <memory>
#include <utility>

#include "backend.hpp"

namespace vrex::test {

class ForwardingBackend : public Backend {
  public:
    explicit ForwardingBackend(std::unique_ptr<Backend> inner) : in_(std::move(inner)) {}
    std::string_view name() const noexcept override { return in_->name(); }
    std::string description() const override { return in_->description(); }
    Result<drm_vrex_device_info> device_info() override { return in_->device_info(); }
    Result<drm_vrex_bank_info> bank_info() override { return in_->bank_info(); }
    std::error_code bo_create(drm_vrex_bo_create& a) override { return in_->bo_create(a); }
    std::error_code bo_destroy(std::uint32_t h) override { return in_->bo_destroy(h); }
    Result<std::span<std::byte>> bo_map(std::uint32_t h) override { return in_->bo_map(h); }
    Result<int> bo_export_dmabuf(std::uint32_t h) override { return in_->bo_export_dmabuf(h); }
    std::error_code stream_create(drm_vrex_stream_create& a) override { return in_->stream_create(a); }
    std::error_code stream_destroy(std::uint32_t s) override { return in_->stream_destroy(s); }
    std::error_code frame_submit(drm_vrex_frame_submit& a) override { return in_->frame_submit(a); }
    std::error_code shie_insert(std::uint32_t s, std::span<drm_vrex_shie_insert_item> it) override {
        return in_->shie_insert(s, it);
    }
    std::error_code shie_lookup(std::uint32_t s, std::span<drm_vrex_shie_lookup_item> it) override {
        return in_->shie_lookup(s, it);
    }
    std::error_code shie_retire(std::uint32_t s, std::span<const std::uint32_t> remove,
                                std::span<drm_vrex_released_block> released, std::uint32_t& count) override {
        return in_->shie_retire(s, remove, released, count);
    }
    Result<drm_vrex_stats> stats() override { return in_->stats(); }
    Result<std::uint32_t> reg_read(std::uint32_t off) override { return in_->reg_read(off); }
    int event_fd() const noexcept override { return in_->event_fd(); }
    Result<std::size_t> read_events(std::span<drm_vrex_event_frame> out) override {
        return in_->read_events(out);
    }

  protected:
    std::unique_ptr<Backend> in_;
};

}  // namespace vrex::test
