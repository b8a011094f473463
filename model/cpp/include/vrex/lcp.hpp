// vrex::lcp: the LCP layer for a TorchScript decoder (C++ counterpart of model/vrex/lcp.py).
//
//   auto s = vrex::lcp::Session::enable("decoder.ts", device);   // the model's KV cache = vrex blocks
//   auto r = s->stream();
//   auto out = r->step(luma, tokens);                            // one frame -> [16, codes] logits
//
// The TorchScript module (python3 -m vrex.export) does the math of one frame over the K/V tensors it
// is handed; this layer owns what is vrex-specific: one libvrex-hal KV block per (frame, region),
// viewed as a [layers, 2, kv_heads, tokens, head_dim] fp32 tensor by torch::from_blob over the
// block's memory (no copy), the reuse decision (FCC candidates from the HAL's temporal and
// similarity lookups, the model-side key-hash guard and age cap) and the window ledger that
// releases a block once no frame of the last W references it. Reused regions are not prefilled.
//
// Errors: torch reports through exceptions, so this layer does too: vrex::lcp::Error (a
// std::runtime_error) with the failing call and the HAL's error message. A Stream is used by one
// thread at a time, as libvrex-hal's.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "vrex/hal.hpp"

namespace vrex::lcp {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Options {
    bool reuse = true;
    bool fcc = true;            // a temporal candidate counts only within @radius of the frame's fingerprint
    std::uint32_t radius = 20;  // FCC fingerprint Hamming radius (0..31)
    std::uint32_t guard_bits = 2;  // max Hamming distance of the 32-bit key hashes
    std::uint32_t max_age = 4;     // frames a block may be reused after it was computed (0: no cap)
    bool similar = true;           // also ask the similarity lookup
};

// The module's shape (ScriptStep.geometry()).
struct Geometry {
    std::uint32_t layers = 0, kv_heads = 0, head_dim = 0, tokens_per_region = 0, regions = 0, window = 0,
                  codes = 0, feat_dim = 0;
};

struct StepStats {
    std::uint32_t reused = 0;           // regions whose KV came from an earlier block
    std::uint32_t tokens = 0;           // tokens prefilled: fresh regions' visual tokens + queries
    std::uint32_t stale_fallbacks = 0;  // candidates the HAL refused as stale (recomputed instead)
    std::vector<bool> reused_region;    // per region
    double prefill_s = 0;               // thread CPU time of the model's part of the step
};

struct StepResult {
    torch::Tensor logits;  // [regions, codes]
    StepStats stats;
};

class StreamRunner;

class Session : public std::enable_shared_from_this<Session> {
  public:
    // Loads the TorchScript step module and creates a KV allocator of its geometry on @device.
    static std::shared_ptr<Session> enable(const std::string& module_path, std::shared_ptr<Device> device,
                                           const Options& options = {});
    std::unique_ptr<StreamRunner> stream();

    const Geometry& geometry() const noexcept { return geo_; }
    const Options& options() const noexcept { return opts_; }
    KvAllocator& allocator() noexcept { return *alloc_; }
    torch::jit::Module& module() noexcept { return module_; }
    // The block's memory as a [L, 2, KVH, T, hd] fp32 tensor (aliases the block, no copy). Valid while
    // the calling stream holds a reference to the block (hal.hpp "Memory lifetime").
    torch::Tensor view(const KvBlock& block, bool writable) const;

    struct Key {
      private:
        friend class Session;
        Key() = default;
    };
    Session(Key, torch::jit::Module module, std::shared_ptr<KvAllocator> alloc, const Geometry& geo,
            const Options& options);

  private:
    torch::jit::Module module_;
    std::shared_ptr<KvAllocator> alloc_;
    Geometry geo_;
    Options opts_;
};

class StreamRunner {
  public:
    StreamRunner(std::shared_ptr<Session> session, std::unique_ptr<Stream> stream);
    // Prefills one frame. @tokens [regions * tokens_per_region, feat_dim] fp32 standardised encoder
    // tokens; @luma the frame's luma plane (the HAL fingerprints it).
    StepResult step(const LumaView& luma, const torch::Tensor& tokens);

    std::size_t resident_blocks() const noexcept { return ledger_.size(); }
    // The blocks of the last stepped frame (one per region).
    const std::vector<KvBlock>& last_frame() const;
    // The frame a block was computed in (its key hash's frame), -1 when the ledger does not hold it.
    std::int64_t computed_at(std::uint32_t block_id) const;
    Stream& hal_stream() noexcept { return *st_; }

  private:
    struct Entry {
        KvBlock block;
        std::uint32_t last_ref = 0;  // last frame that referenced the block
        std::uint32_t born = 0;      // frame it was computed in
        std::uint32_t hash = 0;      // key hash when computed (what the block holds)
        bool hashed = false;
    };
    std::vector<KvBlock> candidates(std::uint32_t region, const Fingerprint& fp);
    bool guard(const KvBlock& cand, std::uint32_t hash) const;

    std::shared_ptr<Session> s_;
    std::unique_ptr<Stream> st_;
    std::deque<std::vector<KvBlock>> frames_;  // the window's earlier frames, then the current one
    std::deque<std::vector<torch::Tensor>> views_;
    std::unordered_map<std::uint32_t, Entry> ledger_;  // block id -> entry, every block the window uses
    std::uint32_t t_ = 0;
};

}  // namespace vrex::lcp
