// Shared helpers for the device-model suites: an owned model instance (arena + device memory),
// luma pattern writers, and a full-state snapshot used to prove "on error, nothing changes".
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

extern "C" {
#include "lifecycle_ops.h"
#include "vrex_model.h"
}

namespace vrex_test {

inline vrex_model_config small_config() {
    vrex_model_config cfg{};
    cfg.nbanks = 8;
    cfg.group_banks = 2;
    cfg.bank_size = 64 * 1024;
    cfg.max_streams = 4;
    cfg.shie_capacity = 64;
    cfg.block_capacity = 32;
    cfg.zombie_frames = 5;
    return cfg;
}

constexpr uint32_t kW = 64;
constexpr uint32_t kH = 64;
// Luma planes live in the last bank; KV ranges used by the tests sit in the lower banks.
inline uint64_t luma_addr(const vrex_model_config& cfg, uint32_t slot = 0) {
    return (cfg.nbanks - 1) * cfg.bank_size + slot * kW * kH;
}

// An initialised device that owns its arena and its bank memory.
class Device {
  public:
    explicit Device(const vrex_model_config& cfg = small_config())
        : Device(cfg, cfg.nbanks * cfg.bank_size) {}
    Device(const vrex_model_config& cfg, uint64_t mem_size)
        : arena_(vrex_model_arena_size(&cfg)), mem_(mem_size), m_(std::make_unique<vrex_model>()) {
        rc_ = vrex_model_init(m_.get(), &cfg, arena_.data(), arena_.size(), mem_size ? mem_.data() : nullptr,
                              mem_size);
    }
    int init_rc() const { return rc_; }
    vrex_model* operator->() { return m_.get(); }
    vrex_model* get() { return m_.get(); }
    std::vector<uint8_t>& mem() { return mem_; }

    // A deterministic scene: a smooth pattern whose look depends on @scene, shifted by @shift px.
    void put_luma(uint64_t addr, uint32_t scene, uint32_t shift = 0) {
        uint32_t s = scene * 2654435761u + 12345u;
        for (uint32_t y = 0; y < kH; y++) {
            for (uint32_t x = 0; x < kW; x++) {
                uint32_t xs = x + shift;
                uint32_t v = ((xs * ((s >> 3) % 7 + 1)) ^ (y * ((s >> 7) % 5 + 1))) + (s >> 11);
                if (((xs / 8) + (y / 8) + (s >> 17)) % (2 + (s >> 21) % 3) == 0) v += 97;
                mem_[addr + y * kW + x] = static_cast<uint8_t>(v);
            }
        }
    }

    // Submits scene @scene on @stream; returns the model's result code.
    int frame(uint32_t stream, uint32_t scene = 0, vrex_frame_result* res = nullptr) {
        const vrex_model_config& cfg = m_->cfg;
        put_luma(luma_addr(cfg), scene);
        vrex_frame_result r{};
        int rc = vrex_model_frame(m_.get(), stream, luma_addr(cfg), kW, kH, kW, &r);
        if (res) *res = r;
        return rc;
    }

  private:
    std::vector<uint8_t> arena_;
    std::vector<uint8_t> mem_;
    std::unique_ptr<vrex_model> m_;
    int rc_;
};

inline vrex_fp make_fp(uint64_t a, uint64_t b) {
    return vrex_fp{{a, b}};
}

inline vrex_kv_ref kv_at(const vrex_model_config& cfg, uint32_t bank, uint32_t off, uint32_t len,
                         uint32_t tag) {
    return vrex_kv_ref{bank * cfg.bank_size + off, len, tag};
}

// Everything observable about a device: the whole register window (reads have no side effects)
// plus the block table, the entry array and the streams.
struct Snapshot {
    std::vector<uint32_t> regs;
    std::vector<uint8_t> blocks;
    std::vector<uint8_t> fifo;
    std::vector<uint8_t> entries;
    std::vector<uint8_t> streams;
    uint32_t free_head = 0, live = 0, fifo_head = 0, fifo_count = 0, shie_live = 0;
    bool operator==(const Snapshot&) const = default;
};

inline Snapshot snapshot(vrex_model* m) {
    Snapshot s;
    for (uint32_t off = 0; off < VREX_REG_WINDOW; off += 4) s.regs.push_back(vrex_model_read(m, off));
    auto bytes = [](const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        return std::vector<uint8_t>(b, b + n);
    };
    s.blocks = bytes(m->blocks.b, m->blocks.capacity * sizeof(vrex_block));
    s.fifo = bytes(m->blocks.fifo, m->blocks.capacity * sizeof(vrex_released));
    s.entries = bytes(m->shie.e, m->shie.capacity * sizeof(vrex_shie_entry));
    s.streams = bytes(m->streams, m->cfg.max_streams * sizeof(vrex_stream));
    s.free_head = m->blocks.free_head;
    s.live = m->blocks.live;
    s.fifo_head = m->blocks.fifo_head;
    s.fifo_count = m->blocks.fifo_count;
    s.shie_live = m->shie.live;
    return s;
}

}  // namespace vrex_test
