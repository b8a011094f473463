// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// A Backend decorator that forwards every call and meters device memory: the bytes of the buffer
// objects alive now and at their peak. That is the memory the HAL really holds on the device (KV
// slabs, partly filled ones included, plus staging), the figure comparable to the pool a vLLM-style
// engine reserves.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "backend.hpp"

namespace vrex::bench {

struct MemoryMeter {
    std::mutex mu;
    std::uint64_t live_bytes = 0;
    std::uint64_t peak_bytes = 0;
    std::unordered_map<std::uint32_t, std::uint64_t> bo_bytes;  // by handle
};

class MeteredBackend final : public Backend {
  public:
    MeteredBackend(std::unique_ptr<Backend> inner, std::shared_ptr<MemoryMeter> meter)
        : inner_(std::move(inner)), meter_(std::move(meter)) {}

    std::string_view name() const noexcept override { return inner_->name(); }
    std::string description() const override { return inner_->description(); }
    Result<drm_vrex_device_info> device_info() override { return inner_->device_info(); }
    Result<drm_vrex_bank_info> bank_info() override { return inner_->bank_info(); }
    std::error_code bo_create(drm_vrex_bo_create& args) override;
    std::error_code bo_destroy(std::uint32_t handle) override;
    Result<std::span<std::byte>> bo_map(std::uint32_t handle) override { return inner_->bo_map(handle); }
    Result<int> bo_export_dmabuf(std::uint32_t handle) override { return inner_->bo_export_dmabuf(handle); }
    std::error_code stream_create(drm_vrex_stream_create& args) override {
        return inner_->stream_create(args);
    }
    std::error_code stream_destroy(std::uint32_t stream) override { return inner_->stream_destroy(stream); }
    std::error_code frame_submit(drm_vrex_frame_submit& args) override { return inner_->frame_submit(args); }
    std::error_code shie_insert(std::uint32_t stream, std::span<drm_vrex_shie_insert_item> items) override {
        return inner_->shie_insert(stream, items);
    }
    std::error_code shie_lookup(std::uint32_t stream, std::span<drm_vrex_shie_lookup_item> items) override {
        return inner_->shie_lookup(stream, items);
    }
    std::error_code shie_retire(std::uint32_t stream, std::span<const std::uint32_t> remove,
                                std::span<drm_vrex_released_block> released,
                                std::uint32_t& released_count) override {
        return inner_->shie_retire(stream, remove, released, released_count);
    }
    Result<drm_vrex_stats> stats() override { return inner_->stats(); }
    Result<std::uint32_t> reg_read(std::uint32_t offset) override { return inner_->reg_read(offset); }
    int event_fd() const noexcept override { return inner_->event_fd(); }
    Result<std::size_t> read_events(std::span<drm_vrex_event_frame> out) override {
        return inner_->read_events(out);
    }

  private:
    std::unique_ptr<Backend> inner_;
    std::shared_ptr<MemoryMeter> meter_;
};

}  // namespace vrex::bench
