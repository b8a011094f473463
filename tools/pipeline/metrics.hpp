// What one pipeline run measures, and its JSON form (the keys are documented in docs/pipeline.md).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "luma.hpp"

namespace vrex::pipeline {

// Value at quantile @q (0..1) of @v, linear interpolation; 0 for an empty vector.
double percentile(std::vector<double> v, double q);

// Device and baseline state after one step (one frame of every active stream).
struct StepSample {
    std::uint32_t step = 0;
    std::uint64_t frames = 0;          // frames processed so far, all streams
    std::uint64_t resident_bytes = 0;  // V-Rex: live KV blocks x block bytes (allocator stats)
    std::uint64_t live_blocks = 0;     // V-Rex: live blocks (device counter)
    std::uint64_t baseline_bytes = 0;  // append-only paged baseline
    std::uint64_t baseline_blocks = 0;
    std::uint64_t window_bytes = 0;  // paged baseline with a sliding window of the same context
    std::uint64_t window_blocks = 0;
    // Device memory the allocator holds: its slabs, free slots included (sum of BankStats::slab_bytes).
    std::uint64_t held_bytes = 0;
    std::uint32_t active_streams = 0;          // streams that processed a frame in this step
    std::uint32_t regions = 0;                 // regions processed in this step
    std::uint32_t reused = 0;                  // of which reused
    std::vector<std::uint64_t> bank_kv_bytes;  // per bank
};

struct RegionMark {
    bool reused = false;
    bool approximate = false;
    bool from_similar = false;
    double psnr = 0.0;  // reused: PSNR to the reused region
    std::uint32_t distance = 0;
    std::uint32_t src_stream = 0;
    std::uint32_t src_frame = 0;
};

struct AnnotatedFrame {
    std::uint32_t stream = 0;
    std::uint32_t frame = 0;
    std::uint32_t step = 0;
    LumaFrame luma;
    std::array<RegionMark, kRegions> regions{};
};

struct StreamInfo {
    std::string path;
    std::string codec;
    std::uint32_t width = 0, height = 0;
    double fps = 0.0;
    std::uint32_t start_frame = 0;
    std::uint64_t frames = 0;
    std::string cut_path;  // spliced-in clip (StreamSource::cut_path), empty if none
    std::uint32_t cut_at = 0;
    std::uint64_t regions = 0;  // this stream's regions, and of them reused
    std::uint64_t reused = 0;
    std::uint64_t reused_cross_stream = 0;
    double reuse_rate() const {
        return regions ? static_cast<double>(reused) / static_cast<double>(regions) : 0.0;
    }
};

struct RunResult {
    std::string backend;
    std::string device;
    std::string model;
    std::uint64_t block_bytes = 0;
    std::uint32_t tokens_per_region = 0;
    std::uint64_t bytes_per_token = 0;
    std::uint64_t frame_kv_bytes = 0;  // one frame's KV without reuse (16 regions)
    std::uint32_t bank_count = 0;
    std::uint64_t bank_size = 0;
    std::uint32_t zombie_frames = 0;
    double psnr_guard_db = 0.0;
    std::uint32_t radius = 0;
    bool similarity = true;  // the pass ran similarity lookups (PipelineOptions::similarity)
    bool pooled = false;
    std::uint32_t max_reuse_age = 0;
    bool prefer_chain = false;
    bool window_release = false;

    std::vector<StreamInfo> streams;
    std::uint64_t frames = 0;
    std::uint64_t regions = 0;
    std::uint64_t reused = 0;
    std::uint64_t reused_similar = 0;  // reused a block only the similarity lookup offered
    std::uint64_t reused_cross_stream = 0;
    std::uint64_t guard_rejected = 0;
    std::uint64_t too_old = 0;
    std::uint64_t similar_lookups = 0;
    std::uint64_t similar_hits = 0;
    std::uint64_t approx_hits = 0;
    std::uint64_t similar_hits_temporal_block = 0;  // similarity hits on the temporal lookup's block
    std::uint64_t temporal_hits = 0;                // one temporal lookup per region
    std::uint64_t allocations = 0;
    std::uint64_t released = 0;
    std::uint64_t window_released = 0;  // of which asked for by the window ledger
    std::uint64_t fallback_allocations = 0;
    // Device memory the same-window paged baseline reserved: its pool's high-water mark of physical
    // blocks x block bytes (what an engine would have to provision to run these frames).
    std::uint64_t window_pool_bytes = 0;
    std::uint64_t accounting_mismatches = 0;  // steps where device, allocator and pipeline disagreed
    std::string first_mismatch;

    std::vector<double> hal_us;        // per frame: every HAL call of the frame
    std::vector<double> fcc_us;        // per frame: begin_frame (staging + FCC)
    std::vector<double> fcc_1080p_us;  // fcc_us scaled to 1920x1080 by pixel count
    std::vector<double> reused_psnr;
    std::vector<StepSample> samples;
    std::vector<AnnotatedFrame> annotated;
    double wall_seconds = 0.0;

    std::uint64_t resident_bytes_peak() const;
    std::uint64_t baseline_bytes_peak() const;
    std::uint64_t window_bytes_peak() const;
    std::uint64_t live_blocks_peak() const;
    std::uint64_t baseline_blocks_peak() const;
    std::uint64_t window_blocks_peak() const;
    std::uint64_t held_bytes_peak() const;
    // Steps in which every stream of the run processed a frame.
    std::uint64_t all_active_steps() const;
    // Allocations placed outside the frame's bank group / allocations.
    double out_of_group_rate() const;

    // The --json object: the headline keys at the top level, details below.
    nlohmann::json to_json() const;
};

}  // namespace vrex::pipeline
