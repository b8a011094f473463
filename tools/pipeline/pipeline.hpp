// The real-video pipeline: decoded luma -> FCC through the HAL -> per-region KV blocks with reuse,
// against an append-only paged baseline fed the same frames. docs/pipeline.md explains the policy
// and every figure it reports.
//
// How KV reuse saves memory: a reused region's KV is not allocated again; the new frame's SHIE entry
// aliases the older block (Stream::reuse, an ALIAS insert), so resident bytes grow only with the
// regions that could not be reused, and blocks nobody touched for Z frames are released as zombies
// at end_frame. The baseline appends every region of every frame.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "metrics.hpp"
#include "reuse_policy.hpp"
#include "vrex/hal.hpp"

namespace vrex::pipeline {

// KV geometry of the served model. Defaults: a 7B-class video LLM (Qwen2-VL-7B's language model:
// 28 layers, 4 KV heads (GQA), head dim 128, fp16) with 16 visual tokens per region, i.e. 256
// tokens per frame on the 4x4 grid: 56 KiB of K+V per token, 896 KiB per region block.
struct ModelConfig {
    std::string name = "7B-class video LLM (28 layers, 4 KV heads, head dim 128, fp16)";
    std::uint32_t layers = 28;
    std::uint32_t kv_heads = 4;
    std::uint32_t head_dim = 128;
    DType dtype = DType::fp16;
    std::uint32_t tokens_per_region = 16;

    ModelGeometry geometry() const { return {layers, kv_heads, head_dim, dtype, tokens_per_region}; }
    std::uint64_t bytes_per_token() const { return 2ull * layers * kv_heads * head_dim * dtype_size(dtype); }
};

struct StreamSource {
    std::string path;
    std::uint32_t start_frame = 0;  // frames skipped before the stream starts
    bool wrap = false;              // at end of file restart from frame 0 until max_frames
};

// A scene cut spliced into one stream: after @at frames of stream @stream, the rest of it comes from
// @path (from its first frame). The scene-cut isolation test splices one into a pooled stream.
struct SceneCut {
    std::uint32_t stream = 0;
    std::uint32_t at = 0;
    std::string path;
};

struct PipelineOptions {
    ModelConfig model;
    ReusePolicy policy;
    // The similarity lookup (nearest fingerprint within @radius, Hamming) beside the temporal one;
    // off, a region can only reuse the block the same region of the previous frame uses.
    bool similarity = true;
    std::uint32_t radius = 20;
    bool pooled = true;  // streams share one pool: cross-stream similarity reuse
    // Release a block as soon as no frame of the window (Z + 1 frames) references it, instead of
    // waiting for the device's zombie rule, which also counts lookups as uses (window_ledger.hpp).
    bool window_release = true;
    std::uint32_t max_frames = 0;  // per stream; 0 = until the file ends
    std::uint32_t baseline_tokens_per_block = 16;
    std::uint32_t blocks_per_slab = 16;
    std::uint32_t annotate = 4;  // frames of stream 0 kept for the report
    std::vector<SceneCut> cuts;  // at most one per stream
    // Called after every step with (frames done, frames expected; 0 if unknown).
    std::function<void(std::uint64_t, std::uint64_t)> progress;
};

// Runs every source as one stream on @device, round-robin one frame per stream per step, until all
// are done. Throws Failure (bad_input for unreadable videos, no_device / runtime for HAL errors).
RunResult run_pipeline(const std::shared_ptr<Device>& device, std::span<const StreamSource> sources,
                       const PipelineOptions& options);

}  // namespace vrex::pipeline
