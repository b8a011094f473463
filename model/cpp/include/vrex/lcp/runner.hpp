// vrex::lcp::StreamRunner: the builtin model's stream in C++ -- libtorch runs the TorchScript of
// decoder.py's step (python3 -m vrex.script exports it), vrex::lcp::ReusePolicy decides reuse over
// libvrex-hal. The same loop as model/vrex/lcp.py's StreamRunner, one clock for both (thread CPU
// time of the whole step, HAL calls included).
//
//   vrex::lcp::ScriptedModel model("decoder.pt");
//   vrex::lcp::StreamRunner r(model, allocator, {.policy = vrex::lcp::Policy::vrex});
//   std::vector<float> logits = r.step(luma, tokens, q_region, q_target, stats);   // one frame
//
// Arrays cross as spans of plain values (row-major); libtorch stays behind the implementation, so
// this header needs no torch headers. Errors: torch reports through exceptions, so this layer does
// too: std::runtime_error with the failing call and the HAL's message, std::invalid_argument for a
// bad shape or question.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "vrex/hal.hpp"
#include "vrex/lcp/native_decoder.hpp"
#include "vrex/lcp/policy.hpp"
#include "vrex/lcp/tiers.hpp"

namespace vrex::lcp {

// The module's shape (StepModule.geometry()).
struct Geometry {
    std::uint32_t layers = 0, kv_heads = 0, head_dim = 0, tokens_per_region = 0, regions = 0, visual = 0,
                  feat_dim = 0, codes = 0;
    ModelGeometry hal() const;  // the KV block geometry (lcp::kv_geometry: fp32)
};

// libtorch's intra-op threads for every runner of the process (at::set_num_threads).
void set_num_threads(int threads);

class ScriptedModel {
  public:
    explicit ScriptedModel(const std::string& path);  // torch::jit::load, eval mode
    ~ScriptedModel();
    ScriptedModel(const ScriptedModel&) = delete;
    ScriptedModel& operator=(const ScriptedModel&) = delete;
    const Geometry& geometry() const noexcept { return geo_; }
    // The same decoder on plain buffers (its weights copied from the module when it was loaded).
    const NativeDecoder& native() const noexcept { return *native_; }

  private:
    friend class StreamRunner;
    struct Impl;
    std::unique_ptr<Impl> impl_;
    Geometry geo_;
    std::unique_ptr<NativeDecoder> native_;
};

enum class Policy { exact, vrex };

// V-Rex's read for the questions (docs/hw/resv.md §8.2): every frame's layer-0 keys are hashed once
// when the frame ends (vrex::resv_hash); a question reads the blocks the position-aware WiCSum
// (vrex::resv_select_blocks, MASS table calibrated on the stream's first frame) selects among the
// past frames of its reach, plus the current frame when the reach covers it -- instead of every
// token of the reach. Off: the decoder's reach, as the exact run reads.
//
// With a memory hierarchy (RunnerOptions::tiers) the read is V-Rex's of record (anchors.Managed's
// resv_pos, vrex_hierarchy): a question reads the blocks of its reach that are on the device, the
// current frame, and among the demoted blocks of its reach those the selection ranks first, up to
// fetch_blocks of them, each staged back from host memory (KvTiers::fetch).
struct ReadOptions {
    bool resv = false;
    double ratio = 0.5;              // WiCSum mass ratio
    std::uint64_t seed = 22;         // HCU seed of the key and query hashes
    std::uint32_t fetch_blocks = 4;  // with tiers: demoted blocks a question may stage back
};

// What runs the decoder's per-frame work (embedding, guard hash, prefill, questions): the module's
// scripted methods through libtorch, or NativeDecoder (the same math on plain buffers, no aten
// dispatch: its cost is its arithmetic). ReSV's selector stays scripted either way.
enum class Kernels { scripted, native };

struct RunnerOptions {
    Policy policy = Policy::vrex;
    Kernels kernels = Kernels::native;
    ReuseOptions reuse;
    ReadOptions read;
    // Layer-0 refresh (lcp.Options.refresh): a reused region gets a block of its own holding the
    // candidate's KV with layer 0 written fresh -- the guard's layer-0 keys and the frame's own
    // standardised features as values (Decoder.value0) -- instead of aliasing the candidate. Its
    // prefill is still skipped. A recall (reuse.recall) always installs a block of its own.
    bool refresh = false;
    // The memory hierarchy (tiers.hpp); none: every block stays pinned on the device.
    std::optional<TierOptions> tiers;
    // Recall's host tier (reuse.recall with fcc): blocks of host memory the SHIE indexes demoted copies
    // in (lcp.Options.host_slots).
    std::uint32_t host_slots = 4096;
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

// The engine's parts of a step, outside the vrex layer's calls (StepStats::engine_s; with emu_s they
// add up to step_s): prepare (embedding, the guard's keys and hashes), install (refresh and recall
// fills, the frame's block views), prefill (the visual prefill), select (the questions' read
// selection and its staging), ask (the questions), after (the hierarchy's accounting and
// demotions); and the ReSV unit's emulated work (hardware on a board, like the FCC and the SHIE of
// emu_s): resv_read (hashing the questions' queries, WiCSum: within the questions' half, ask_s) and
// resv_insert (hashing the frame's keys as they are inserted). Not in step_s: host_prep, the CPU
// time the hierarchy's host pool spent on another thread since the previous step, preparing host
// memory for demotions (TierOptions::host_ahead; a DMA pool's driver work): step_s + host_prep is
// the step's whole CPU time. Also emulated hardware, a board's copy engine (lcp::CopyEngine, the
// same copies on the step's thread): dma_read (a question's demoted blocks staged back: within the
// questions' half, ask_s) and dma_move (installs' fills, demotions into the host pool, fifo's
// window staging); the parts above leave them out.
inline constexpr std::array<const char*, 11> kEngineNames = {
    "prepare",   "install",     "prefill",   "select",   "ask",     "after",
    "resv_read", "resv_insert", "host_prep", "dma_read", "dma_move"};

struct StepStats {
    double step_s = 0;  // thread CPU time of the whole step (FCC, policy, HAL calls, selection, decoder)
    double emu_s = 0;   // of which inside the vrex layer: begin_frame, choose, apply, computed, end_frame
    std::array<double, kStageNames.size()> stage_s{};    // emu_s per stage (kStageNames), same clock
    std::array<double, kEngineNames.size()> engine_s{};  // the rest of step_s per part (kEngineNames)
    double fcc_s = -1;           // RunnerOptions::profile_fcc: the FCC's own work in begin_frame (else < 0)
    double ask_s = 0;            // of step_s: the questions' half (ReSV's selection, the scripted ask())
    std::uint32_t reused = 0;    // regions not computed: aliased, refreshed or recalled
    std::uint32_t recalled = 0;  // of them, installed from a recall
    std::vector<bool> reused_region;
    // With ReadOptions::resv: keys the questions read (summed over them), tokens the selection
    // weighed, blocks it selected, keys hashed (the frame's and the questions').
    std::uint64_t question_keys = 0, weighed = 0, selected_blocks = 0, hashed = 0;
};

// The allocator options a StreamRunner's allocator should have on a device with banks of
// @bank_bytes: the runner keeps every frame readable (apply_choice() pins each block it allocates),
// so a stream's memory only grows, by up to one block per region and frame. Slabs of 16 frames'
// blocks (as many as fit a bank, at least the HAL's default 16) take one BO per 16 frames where
// the default slab of 16 blocks took one every frame or two: each BO is a device call, a memfd and
// a mapping in the emulation, an ioctl and a GEM object on vrex.ko.
AllocatorOptions runner_allocator_options(const Geometry& geometry, std::uint64_t bank_bytes);

class StreamRunner {
  public:
    StreamRunner(ScriptedModel& model, std::shared_ptr<KvAllocator> alloc, const RunnerOptions& options);
    ~StreamRunner();
    StreamRunner(const StreamRunner&) = delete;
    StreamRunner& operator=(const StreamRunner&) = delete;

    // Prefills frame t. @tokens [visual x feat_dim] standardised encoder tokens; questions about
    // regions @q_region at frames @q_target (<= t, one per question) -> logits [Q x codes].
    std::vector<float> step(const LumaView& luma, std::span<const float> tokens,
                            std::span<const std::int64_t> q_region, std::span<const std::int64_t> q_target,
                            StepStats& stats);

    std::size_t distinct_blocks() const noexcept;
    std::uint64_t cache_tokens() const noexcept;
    std::uint32_t frames() const noexcept;
    const ReuseCounters* counters() const noexcept;
    const KvTiers* tiers() const noexcept;  // RunnerOptions::tiers, else nullptr
    // Unpins every block (the device frees them); step() fails afterwards.
    void close();

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace vrex::lcp
