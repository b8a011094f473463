// vrex::lcp::StreamRunner: the builtin model's stream in C++ -- libtorch runs the TorchScript of
// decoder.py's step (python3 -m vrex.script exports it), vrex::lcp::ReusePolicy decides reuse over
// libvrex-hal. The same loop as model/vrex/lcp.py's StreamRunner, one clock for both (thread CPU
// time of the whole step, HAL calls included).
//
//   vrex::lcp::ScriptedModel model("decoder.pt");
//   vrex::lcp::StreamRunner r(model, allocator, {.policy = vrex::lcp::Policy::vrex});
//   auto logits = r.step(luma, tokens, q_region, q_target, stats);   // one frame
//
// Errors: torch reports through exceptions, so this layer does too: std::runtime_error with the
// failing call and the HAL's message.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vrex/hal.hpp"
#include "vrex/lcp/policy.hpp"

namespace vrex::lcp {

// The module's shape (StepModule.geometry()).
struct Geometry {
    std::uint32_t layers = 0, kv_heads = 0, head_dim = 0, tokens_per_region = 0, regions = 0, visual = 0,
                  feat_dim = 0, codes = 0;
    ModelGeometry hal() const;  // the KV block geometry (fp32)
};

class ScriptedModel {
  public:
    explicit ScriptedModel(const std::string& path);  // torch::jit::load, eval mode
    const Geometry& geometry() const noexcept { return geo_; }
    torch::jit::Module& module() noexcept { return m_; }

  private:
    torch::jit::Module m_;
    Geometry geo_;
};

enum class Policy { exact, vrex };

struct RunnerOptions {
    Policy policy = Policy::vrex;
    ReuseOptions reuse;
};

struct StepStats {
    double step_s = 0;  // thread CPU time of the whole step (FCC, policy, HAL calls, decoder)
    double emu_s = 0;   // of which inside the vrex layer: begin_frame, choose, apply, computed, end_frame
    std::uint32_t reused = 0;
    std::vector<bool> reused_region;
};

class StreamRunner {
  public:
    StreamRunner(ScriptedModel& model, std::shared_ptr<KvAllocator> alloc, const RunnerOptions& options);
    ~StreamRunner();
    StreamRunner(const StreamRunner&) = delete;
    StreamRunner& operator=(const StreamRunner&) = delete;

    // Prefills frame t. @tokens [visual, feat_dim] fp32 standardised encoder tokens; questions about
    // regions @q_region (int64 [Q]) at frames @q_target (<= t) -> logits [Q, codes].
    torch::Tensor step(const LumaView& luma, const torch::Tensor& tokens, const torch::Tensor& q_region,
                       const torch::Tensor& q_target, StepStats& stats);

    std::size_t distinct_blocks() const noexcept { return pinned_.size(); }
    std::uint64_t cache_tokens() const noexcept { return std::uint64_t{t_} * model_.geometry().visual; }
    std::uint32_t frames() const noexcept { return t_; }
    const ReuseCounters* counters() const noexcept { return policy_ ? &policy_->counters() : nullptr; }
    // Unpins every block (the device frees them); step() fails afterwards.
    void close();

  private:
    torch::Tensor view(const KvBlock& b) const;
    void reserve();

    ScriptedModel& model_;
    std::shared_ptr<KvAllocator> alloc_;
    std::unique_ptr<Stream> st_;
    std::optional<ReusePolicy> policy_;
    std::vector<KvBlock> pinned_;
    torch::Tensor k_, v_;  // attention-ready cache [L, KVH, capacity, hd], K rotated (Decoder.step)
    std::uint32_t t_ = 0;
    bool closed_ = false;
};

}  // namespace vrex::lcp
