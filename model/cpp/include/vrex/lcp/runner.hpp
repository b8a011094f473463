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

#include <array>
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
    // Also time the FCC's own work on every frame (StepStats::fcc_s): the reference model's
    // fingerprint of the same plane against the same previous frame, run after the step's clock
    // stopped and checked equal to what the device reported. The product figure's breakdown.
    bool profile_fcc = false;
};

// The vrex layer's calls in one step, in order (StepStats::stage_s; their sum is emu_s):
// begin_frame (stage the luma, FRAME: the FCC), lookup (the policy's one retrieve_batch: SHIE
// lookups and matching hits to blocks), decide (the guard), apply (alias, allocate, pin),
// computed (the guard's ledger), end_frame (retire, releases, publish).
inline constexpr std::array<const char*, 6> kStageNames = {"begin_frame", "lookup",   "decide",
                                                           "apply",       "computed", "end_frame"};

struct StepStats {
    double step_s = 0;  // thread CPU time of the whole step (FCC, policy, HAL calls, decoder)
    double emu_s = 0;   // of which inside the vrex layer: begin_frame, choose, apply, computed, end_frame
    std::array<double, kStageNames.size()> stage_s{};  // emu_s per stage (kStageNames), same clock
    double fcc_s = -1;  // RunnerOptions::profile_fcc: the FCC's own work in begin_frame (else < 0)
    std::uint32_t reused = 0;
    std::vector<bool> reused_region;
};

// The allocator options a StreamRunner's allocator should have on a device with banks of
// @bank_bytes: the runner keeps every frame readable (apply_choice() pins each block it allocates),
// so a stream's memory only grows, by up to one block per region and frame. Slabs of 16 frames'
// blocks (as many as fit a bank, at least the HAL's default 16) take one BO per 16 frames where
// the default slab of 16 blocks took one every frame or two: each BO is a device call, a memfd and
// a mapping in the emulation, an ioctl and a GEM object on vrex.ko.
AllocatorOptions runner_allocator_options(const Geometry& geometry, std::uint64_t bank_bytes);

struct FccProbe;  // the reference model's FCC state of RunnerOptions::profile_fcc (runner.cpp)

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
    double time_fcc(const LumaView& luma, const Fingerprint& device_fp);

    ScriptedModel& model_;
    std::shared_ptr<KvAllocator> alloc_;
    std::unique_ptr<Stream> st_;
    std::optional<ReusePolicy> policy_;
    std::unique_ptr<FccProbe> fcc_;
    std::vector<KvBlock> pinned_;
    torch::Tensor k_, v_;  // attention-ready cache [L, KVH, capacity, hd], K rotated (Decoder.step)
    std::uint32_t t_ = 0;
    bool closed_ = false;
};

}  // namespace vrex::lcp
