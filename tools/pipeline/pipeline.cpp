#include "pipeline.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <optional>

#include "decoder.hpp"
#include "error.hpp"
#include "kv_payload.hpp"
#include "paged_baseline.hpp"
#include "window_ledger.hpp"

namespace vrex::pipeline {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

struct StreamState {
    StreamSource src;
    std::unique_ptr<VideoDecoder> decoder;
    std::unique_ptr<Stream> stream;
    std::uint64_t limit = 0;  // frames to process; 0 = until end of file
    std::uint64_t done = 0;
    bool finished = false;
    std::uint32_t seq_append = 0;
    std::uint32_t seq_window = 0;
    std::vector<std::uint64_t> annotate_at;  // stream frame numbers to keep (stream 0)
    std::optional<SceneCut> cut;
    bool cut_done = false;
    LumaFrame luma;
};

// The next frame of @s into s.luma, honouring limit and wrap; false when the stream is done.
bool next_frame(StreamState& s) {
    if (s.limit && s.done >= s.limit) return false;
    if (s.cut && !s.cut_done && s.done == s.cut->at) {
        s.decoder = std::make_unique<VideoDecoder>(s.cut->path);
        s.src.path = s.cut->path;  // a wrap now restarts the spliced-in clip
        s.cut_done = true;
    }
    if (s.decoder->next(s.luma)) return true;
    if (!s.src.wrap || !s.limit) return false;
    s.decoder = std::make_unique<VideoDecoder>(s.src.path);
    return s.decoder->next(s.luma);
}

class Runner {
  public:
    Runner(const std::shared_ptr<Device>& device, std::span<const StreamSource> sources,
           const PipelineOptions& opt)
        : device_(device),
          opt_(opt),
          baseline_(baseline_config(opt, 0)),
          window_(
              baseline_config(opt, (std::uint64_t{device->info().zombie_frames} + 1) * frame_tokens(opt))),
          ledger_(device->info().zombie_frames + 1) {
        auto alloc = KvAllocator::create(device, opt.model.geometry(), AllocatorOptions{opt.blocks_per_slab});
        if (!alloc) throw_hal("KV allocator for the model geometry", alloc.error());
        alloc_ = *alloc;
        opt_.policy.max_reuse_age =
            std::min(opt_.policy.max_reuse_age, shie_age_bound(device->info(), sources.size()));
        open_streams(sources);
        fill_header();
    }

    RunResult run() {
        const auto t0 = Clock::now();
        std::uint64_t expected = 0;
        for (const StreamState& s : streams_)
            expected = s.limit && expected != UINT64_MAX ? expected + s.limit : UINT64_MAX;
        if (expected == UINT64_MAX) expected = 0;
        for (std::uint32_t step = 0;; step++) {
            StepSample sample;
            sample.step = step;
            bool any = false;
            for (std::uint32_t i = 0; i < streams_.size(); i++) {
                StreamState& s = streams_[i];
                if (s.finished) continue;
                if (!next_frame(s)) {
                    s.finished = true;
                    continue;
                }
                any = true;
                process_frame(i, s, step, sample);
            }
            if (!any) break;
            take_sample(sample);
            if (opt_.progress) opt_.progress(res_.frames, expected);
        }
        for (std::size_t i = 0; i < streams_.size(); i++) res_.streams[i].frames = streams_[i].done;
        res_.wall_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        return std::move(res_);
    }

  private:
    static std::uint64_t frame_tokens(const PipelineOptions& o) {
        return std::uint64_t{kRegions} * o.model.tokens_per_region;
    }

    // Every frame inserts one SHIE entry per region, and an entry lives as long as its block. With
    // the window ledger a block lives at most max_reuse_age + Z + 1 steps after its KV was computed
    // (reused up to that age, then referenced by the window Z + 1 more frames), so entries of frames
    // older than max_reuse_age + Z + 2 steps are gone: streams x 16 x (age + Z + 2) <= capacity
    // keeps the SHIE from filling up (ENOSPC) however static the footage.
    static std::uint32_t shie_age_bound(const vrex::DeviceInfo& di, std::size_t streams) {
        const std::uint64_t frames =
            di.shie_capacity / (std::uint64_t{kRegions} * std::max<std::size_t>(streams, 1));
        const std::uint64_t overhead = std::uint64_t{di.zombie_frames} + 2;
        return frames > overhead + 1
                   ? static_cast<std::uint32_t>(std::min<std::uint64_t>(frames - overhead, UINT32_MAX))
                   : 1;
    }

    static PagedBaselineConfig baseline_config(const PipelineOptions& o, std::uint64_t window) {
        PagedBaselineConfig c;
        c.tokens_per_block = o.baseline_tokens_per_block;
        c.bytes_per_token = o.model.bytes_per_token();
        c.window_tokens = window;
        return c;
    }

    void open_streams(std::span<const StreamSource> sources) {
        for (std::size_t i = 0; i < sources.size(); i++) {
            StreamState s;
            s.src = sources[i];
            s.decoder = std::make_unique<VideoDecoder>(s.src.path);
            const std::uint64_t hint = s.decoder->frame_count_hint();
            s.limit = opt_.max_frames;
            if (s.src.wrap && !s.limit) s.limit = hint;
            for (std::uint32_t k = 0; k < s.src.start_frame; k++) {
                if (!s.decoder->next(s.luma)) {
                    if (!s.src.wrap || k == 0)
                        throw Failure(FailureKind::bad_input,
                                      fmt::format("{}: shorter than the start offset {}", s.src.path,
                                                  s.src.start_frame));
                    s.decoder = std::make_unique<VideoDecoder>(s.src.path);
                }
            }
            check_frame_size(s.src.path, *s.decoder);
            for (const SceneCut& c : opt_.cuts)
                if (c.stream == i) s.cut = c;
            if (s.cut) check_frame_size(s.cut->path, VideoDecoder(s.cut->path));
            StreamOptions so;
            so.pooled = opt_.pooled;
            auto st = alloc_->create_stream(so);
            if (!st) throw_hal(fmt::format("stream {}", i), st.error());
            s.stream = std::move(*st);
            s.seq_append = baseline_.add_sequence();
            s.seq_window = window_.add_sequence();
            if (i == 0 && opt_.annotate) {
                std::uint64_t e =
                    s.limit ? s.limit : (hint > s.src.start_frame ? hint - s.src.start_frame : 0);
                for (std::uint32_t k = 0; k < opt_.annotate; k++)
                    s.annotate_at.push_back(e ? e * (2 * k + 1) / (2 * opt_.annotate) : (10ull << (2 * k)));
            }
            StreamInfo info;
            info.path = s.src.path;
            info.codec = s.decoder->codec_name();
            info.width = s.decoder->width();
            info.height = s.decoder->height();
            info.fps = s.decoder->fps();
            info.start_frame = s.src.start_frame;
            info.cut_path = s.cut ? s.cut->path : "";
            info.cut_at = s.cut ? s.cut->at : 0;
            res_.streams.push_back(info);
            streams_.push_back(std::move(s));
        }
    }

    // The FCC fingerprints frames of [fcc_min_dim, fcc_max_dim] pixels a side; anything else would
    // fail at the first begin_frame with a bare EINVAL, so it is refused up front, naming the limits.
    void check_frame_size(const std::string& path, const VideoDecoder& d) const {
        const vrex::DeviceInfo& di = device_->info();
        if (d.width() < di.fcc_min_dim || d.height() < di.fcc_min_dim)
            throw Failure(FailureKind::bad_input,
                          fmt::format("{}: frames are {}x{}, below the FCC minimum of {}x{} pixels", path,
                                      d.width(), d.height(), di.fcc_min_dim, di.fcc_min_dim));
        if (d.width() > di.fcc_max_dim || d.height() > di.fcc_max_dim)
            throw Failure(FailureKind::bad_input,
                          fmt::format("{}: frames are {}x{}, above the FCC maximum of {}x{} pixels", path,
                                      d.width(), d.height(), di.fcc_max_dim, di.fcc_max_dim));
    }

    void fill_header() {
        const vrex::DeviceInfo& di = device_->info();
        res_.backend = std::string(device_->backend_name());
        res_.device = device_->description();
        res_.model = opt_.model.name;
        res_.block_bytes = alloc_->block_bytes();
        res_.tokens_per_region = opt_.model.tokens_per_region;
        res_.bytes_per_token = opt_.model.bytes_per_token();
        res_.frame_kv_bytes = std::uint64_t{kRegions} * alloc_->block_bytes();
        res_.bank_count = di.bank_count;
        res_.bank_size = di.bank_size;
        res_.zombie_frames = di.zombie_frames;
        res_.psnr_guard_db = opt_.policy.psnr_guard_db;
        res_.radius = opt_.radius;
        res_.similarity = opt_.similarity;
        res_.pooled = opt_.pooled;
        res_.max_reuse_age = opt_.policy.max_reuse_age;
        res_.prefer_chain = opt_.policy.prefer_chain;
        res_.window_release = opt_.window_release;
    }

    void process_frame(std::uint32_t idx, StreamState& s, std::uint32_t step, StepSample& sample) {
        Stream& st = *s.stream;
        double hal = 0.0;
        auto t = Clock::now();
        auto fi = st.begin_frame(s.luma.view());
        const double fcc = us_since(t);
        hal += fcc;
        if (!fi) throw_hal(fmt::format("stream {} frame {}: begin_frame", idx, s.done), fi.error());

        // Per region the temporal lookup, and the similarity lookup unless the pass switches it off
        // (the control: what the temporal chain alone reuses).
        const std::uint32_t per_region = opt_.similarity ? 2 : 1;
        std::vector<Query> queries;
        queries.reserve(per_region * kRegions);
        const Scope scope = opt_.pooled ? Scope::pool : Scope::stream;
        for (std::uint32_t r = 0; r < kRegions; r++) {
            queries.push_back(Query::temporal(r, -1));
            if (opt_.similarity) queries.push_back(Query::similar(r, fi->fp, opt_.radius, scope, true));
        }
        t = Clock::now();
        auto rets = st.retrieve_batch(queries);
        hal += us_since(t);
        if (!rets) throw_hal(fmt::format("stream {} frame {}: retrieve", idx, s.done), rets.error());

        const bool keep =
            std::find(s.annotate_at.begin(), s.annotate_at.end(), s.done) != s.annotate_at.end();
        AnnotatedFrame ann;
        std::vector<std::uint32_t> fresh;
        const Retrieval off;  // the similarity lookup of a pass without it: a miss
        for (std::uint32_t r = 0; r < kRegions; r++) {
            const Retrieval& tmp = (*rets)[per_region * r];
            const Retrieval& sim = opt_.similarity ? (*rets)[per_region * r + 1] : off;
            res_.temporal_hits += tmp.hit;
            if (opt_.similarity) {
                res_.similar_lookups++;
                res_.similar_hits += sim.hit;
                res_.approx_hits += sim.hit && sim.approximate;
                res_.similar_hits_temporal_block += sim.hit && tmp.hit && sim.block.id == tmp.block.id;
            }
            const ReuseDecision d = decide_reuse(opt_.policy, s.luma, r, step, sim, tmp);
            if (d.outcome != ReuseDecision::Outcome::reuse) {
                res_.guard_rejected += d.outcome == ReuseDecision::Outcome::guard_rejected;
                res_.too_old += d.outcome == ReuseDecision::Outcome::too_old;
                fresh.push_back(r);
                continue;
            }
            t = Clock::now();
            auto ok = st.reuse(r, d.block);
            hal += us_since(t);
            if (!ok)
                throw_hal(fmt::format("stream {} frame {}: reuse of block {}", idx, s.done, d.block.id),
                          ok.error());
            if (opt_.window_release) ledger_.referenced(d.block.id, step);
            res_.reused++;
            res_.streams[idx].reused++;
            res_.streams[idx].reused_cross_stream += d.origin.stream != idx;
            res_.reused_similar += d.from_similar;
            res_.reused_cross_stream += d.origin.stream != idx;
            res_.reused_psnr.push_back(d.psnr);
            sample.reused++;
            ann.regions[r] = RegionMark{true,       d.approximate,   d.from_similar, d.psnr,
                                        d.distance, d.origin.stream, d.origin.frame};
        }

        t = Clock::now();
        auto blocks = st.allocate_batch(fresh);
        hal += us_since(t);
        if (!blocks)
            throw_hal(fmt::format("stream {} frame {}: allocate {} blocks", idx, s.done, fresh.size()),
                      blocks.error());
        for (const KvBlock& b : *blocks) {
            PayloadHeader h;
            h.stream = idx;
            h.frame = fi->frame;
            h.step = step;
            h.serial = ++serial_;
            if (!write_payload(b.data, s.luma, b.region, h))
                throw Failure(FailureKind::bad_input, fmt::format("{}: frame too large for a {} B KV block",
                                                                  s.src.path, b.data.size()));
        }
        res_.allocations += blocks->size();
        if (opt_.window_release)
            for (const KvBlock& b : *blocks) ledger_.allocated(b, idx, step);

        std::uint32_t requested = 0;
        if (opt_.window_release) {
            for (const KvBlock& b : ledger_.take_due(idx, step)) {
                auto ok = st.release(b);
                if (!ok)
                    throw_hal(fmt::format("stream {} frame {}: release of block {}", idx, s.done, b.id),
                              ok.error());
                requested++;
            }
            res_.window_released += requested;
        }

        t = Clock::now();
        auto released = st.end_frame();
        hal += us_since(t);
        if (!released) throw_hal(fmt::format("stream {} frame {}: end_frame", idx, s.done), released.error());
        res_.released += released->count;
        // The device's zombie rule can only fire later than the ledger's (a lookup is a use for the
        // device, not for the window): a block the ledger still tracks must not have gone.
        if (opt_.window_release && released->count != requested)
            throw Failure(FailureKind::runtime,
                          fmt::format("stream {} frame {}: end_frame released {} blocks, the window ledger "
                                      "asked for {}",
                                      idx, s.done, released->count, requested));

        baseline_.append(s.seq_append, frame_tokens(opt_));
        window_.append(s.seq_window, frame_tokens(opt_));

        res_.hal_us.push_back(hal);
        res_.fcc_us.push_back(fcc);
        const double px = static_cast<double>(s.luma.width) * s.luma.height;
        res_.fcc_1080p_us.push_back(fcc * (1920.0 * 1080.0) / px);
        res_.frames++;
        res_.regions += kRegions;
        res_.streams[idx].regions += kRegions;
        sample.regions += kRegions;
        sample.active_streams++;
        if (keep) {
            ann.stream = idx;
            ann.frame = fi->frame;
            ann.step = step;
            ann.luma = s.luma;
            res_.annotated.push_back(std::move(ann));
        }
        s.done++;
    }

    // Device, allocator and pipeline must agree on the live KV: the pipeline's allocations minus
    // the releases end_frame reported, the allocator's resident blocks and bytes, the device's live
    // block counter and the per-bank block registers.
    void take_sample(StepSample& sample) {
        auto st = alloc_->stats();
        if (!st) throw_hal("stats", st.error());
        auto banks = device_->banks();
        if (!banks) throw_hal("bank info", banks.error());
        sample.frames = res_.frames;
        sample.resident_bytes = st->resident_bytes;
        sample.live_blocks = st->device.live_blocks;
        sample.baseline_bytes = baseline_.resident_bytes();
        sample.baseline_blocks = baseline_.allocated_blocks();
        sample.window_bytes = window_.resident_bytes();
        sample.window_blocks = window_.allocated_blocks();
        std::uint64_t bank_blocks = 0;
        for (const vrex::BankUsage& u : banks->banks) {
            sample.bank_kv_bytes.push_back(u.kv_bytes);
            bank_blocks += u.kv_blocks;
        }
        for (const BankStats& b : st->banks) sample.held_bytes += b.slab_bytes;
        res_.fallback_allocations = st->fallback_allocations;
        res_.window_pool_bytes = window_.pool_blocks() * window_.block_bytes();
        const std::uint64_t tracked = res_.allocations - res_.released;
        if (st->resident_blocks != tracked || st->device.live_blocks != tracked || bank_blocks != tracked ||
            st->resident_bytes != tracked * alloc_->block_bytes()) {
            if (!res_.accounting_mismatches++)
                res_.first_mismatch = fmt::format(
                    "step {}: pipeline {} live blocks, allocator {} ({} B), device {}, banks {}", sample.step,
                    tracked, st->resident_blocks, st->resident_bytes, st->device.live_blocks, bank_blocks);
        }
        res_.samples.push_back(std::move(sample));
    }

    std::shared_ptr<Device> device_;
    PipelineOptions opt_;
    std::shared_ptr<KvAllocator> alloc_;
    PagedKvBaseline baseline_;
    PagedKvBaseline window_;
    WindowLedger ledger_;
    std::vector<StreamState> streams_;
    RunResult res_;
    std::uint64_t serial_ = 0;
};

}  // namespace

RunResult run_pipeline(const std::shared_ptr<Device>& device, std::span<const StreamSource> sources,
                       const PipelineOptions& options) {
    if (sources.empty()) throw Failure(FailureKind::bad_input, "no video given");
    return Runner(device, sources, options).run();
}

}  // namespace vrex::pipeline
