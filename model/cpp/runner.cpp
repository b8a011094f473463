#include "vrex/lcp/runner.hpp"

#include <ATen/Parallel.h>
#include <torch/script.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "native_kernels.hpp"
#include "native_load.hpp"
#include "thread_clock.hpp"
#include "vrex/lcp/copy_engine.hpp"
#include "vrex/lcp/geometry.hpp"
#include "vrex/lcp/install.hpp"
#include "vrex/lcp/kv_pages.hpp"
#include "vrex/resv.hpp"

extern "C" {
#include "fcc_fingerprint.h"
}

namespace vrex::lcp {

// The FCC of one stream as the device runs it (lib/fcc_fingerprint.c), with its own previous image.
struct FccProbe {
    struct vrex_fcc_image prev = {};
    struct vrex_fcc_image cur = {};
    struct vrex_fcc_motion mv = {};  // "struct": vrex_fcc_motion is also the function's name
    bool has_prev = false;
};

namespace {

template <class T>
T take(Result<T> r, const std::string& what) {
    if (!r) throw std::runtime_error("vrex runner: " + what + ": " + r.error_message());
    return std::move(*r);
}

void check(const Result<void>& r, const std::string& what) {
    if (!r) throw std::runtime_error("vrex runner: " + what + ": " + r.error_message());
}

// One row of cache tokens per question, padded with -1 to the longest (Decoder.ask's q_read), from
// every question's @rows one after another (@len apart), in @out: the tensor views it, so it is
// valid until the next read is selected.
torch::Tensor padded_rows(std::span<const std::int64_t> rows, std::span<const std::size_t> len,
                          std::vector<std::int64_t>& out) {
    const std::size_t m = len.empty() ? 0 : *std::max_element(len.begin(), len.end());
    out.assign(len.size() * m, -1);
    for (std::size_t i = 0, from = 0; i < len.size(); from += len[i], i++)
        std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>(from), len[i],
                    out.begin() + static_cast<std::ptrdiff_t>(i * m));
    return torch::from_blob(out.data(), {static_cast<std::int64_t>(len.size()), static_cast<std::int64_t>(m)},
                            torch::kInt64);
}

}  // namespace

ModelGeometry Geometry::hal() const {
    return kv_geometry(layers, kv_heads, head_dim, tokens_per_region);
}

AllocatorOptions runner_allocator_options(const Geometry& g, std::uint64_t bank_bytes) {
    constexpr std::uint64_t kFramesPerSlab = 16;
    const std::uint64_t block =
        std::uint64_t{g.layers} * 2 * g.kv_heads * g.tokens_per_region * g.head_dim * 4;
    const std::uint64_t fit = block ? bank_bytes / block : 0;
    AllocatorOptions o;
    // 0 (the HAL's default) when even 16 do not fit: KvAllocator::create() then explains the limit.
    if (fit >= 16) o.blocks_per_slab = static_cast<std::uint32_t>(std::min(fit, kFramesPerSlab * g.regions));
    return o;
}

void set_num_threads(int threads) {
    at::set_num_threads(threads);
}

struct ScriptedModel::Impl {
    torch::jit::Module m;
};

ScriptedModel::ScriptedModel(const std::string& path)
    : impl_(std::make_unique<Impl>(torch::jit::load(path))) {
    impl_->m.eval();
    const auto g = impl_->m.run_method("geometry").toIntVector();
    if (g.size() != 8)
        throw std::runtime_error("vrex runner: " + path + ": geometry() has " + std::to_string(g.size()) +
                                 " fields, not 8");
    for (const auto v : g)
        if (v <= 0) throw std::runtime_error("vrex runner: " + path + ": a geometry field is not positive");
    auto u = [&](std::size_t i) { return static_cast<std::uint32_t>(g[i]); };
    geo_ = {u(0), u(1), u(2), u(3), u(4), u(5), u(6), u(7)};
    if (geo_.regions * geo_.tokens_per_region != geo_.visual)
        throw std::runtime_error("vrex runner: " + path + ": regions x tokens_per_region != visual tokens");
    native_ = std::make_unique<NativeDecoder>(native_weights(impl_->m));
    const NativeConfig& c = native_->config();
    if (c.layers != geo_.layers || c.kv_heads != geo_.kv_heads || c.head_dim != geo_.head_dim ||
        c.tokens_per_region != geo_.tokens_per_region || c.regions != geo_.regions ||
        c.visual() != geo_.visual || c.feat_dim != geo_.feat_dim || c.codes != geo_.codes)
        throw std::runtime_error("vrex runner: " + path +
                                 ": the module's config differs from its geometry()");
}

ScriptedModel::~ScriptedModel() = default;

struct StreamRunner::Impl {
    Impl(ScriptedModel& model, std::shared_ptr<KvAllocator> alloc, const RunnerOptions& o);
    ~Impl();
    static float* block_data(const KvBlock& b);
    torch::Tensor view(const KvBlock& b) const;
    void reserve();
    std::vector<float> step(const LumaView& luma, std::span<const float> tokens_in,
                            std::span<const std::int64_t> q_region_in,
                            std::span<const std::int64_t> q_target_in, StepStats& stats);
    void close();
    torch::IValue select(const torch::Tensor& q_region, const torch::Tensor& q_target, StepStats& stats);
    torch::IValue select_tiered(const torch::Tensor& q_region, const torch::Tensor& q_target,
                                StepStats& stats);
    // One question's ReSV read (the HAL's position-aware WiCSum), its emulated time and its counts.
    std::vector<std::uint32_t> select_blocks(std::span<const std::uint32_t> hashes,
                                             std::span<const float> pos, std::uint32_t query_hash,
                                             StepStats& stats);
    std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> selector(const torch::Tensor& q_region,
                                                                     const torch::Tensor& q_target);
    void hash_frame(StepStats& stats);
    void stage_reads(std::span<const std::int64_t> q_read);
    // The regions this frame fills from another block's bytes instead of computing them.
    struct Install {
        std::uint32_t region = 0;
        std::span<const std::byte> bytes;  // the source's KV (device memory or its host copy)
        std::uint64_t source = 0;          // its block_key
    };
    std::vector<Install> installs(const FrameChoice& choice, StepStats& stats);
    void fill(std::span<const Install> ins, const FrameBlocks& fb, std::span<const float> tokens);
    void end_tiers(std::span<const KvBlock> blocks);
    std::vector<BlockInstall> fills_;  // fill()'s working memory
    CopyEngine dma_;  // the installs' copies (a board's DMA engine, emulated: engine part dma_move)
    // select()'s and select_tiered()'s working memory, kept across frames (no allocation per question): the
    // rows as read, each question's length, and q_read [Q, longest] that the returned tensor views.
    std::vector<std::int64_t> sel_rows_, sel_read_;
    std::vector<std::size_t> sel_len_;
    std::vector<std::uint8_t> sel_allow_;
    std::vector<std::uint64_t> sel_taken_;
    std::vector<float> sel_qrot_;
    std::vector<std::uint32_t> sel_qh_;
    std::vector<KvBlock> repinned_;       // end_tiers(): promoted blocks of the frame
    std::vector<std::uint64_t> demoted_;  // end_tiers(): blocks the frame's aging demoted
    double time_fcc(const LumaView& luma, const Fingerprint& device_fp);

    ScriptedModel& model_;
    ReadOptions read_;
    double qnorm_ = 0;                  // median |query| of the model's region questions (LUT calibration)
    torch::Tensor qnorm_t_;             // the same, as the scripted query_norm() gave it
    std::vector<std::uint16_t> lut_;    // MASS table, calibrated when the first frame is hashed
    std::vector<std::uint32_t> khash_;  // per frame, its tokens' layer-0 key hashes (hashed once)
    std::shared_ptr<KvAllocator> alloc_;
    std::unique_ptr<Stream> st_;
    std::optional<ReusePolicy> policy_;
    std::unique_ptr<FccProbe> fcc_;  // RunnerOptions::profile_fcc
    std::vector<KvBlock> pinned_;
    bool refresh_ = false;
    // Recall's host tier (policy.hpp: the SHIE indexes demoted copies): demoted blocks wait for the
    // next frame's open frame (the HAL indexes within one); the plain runner (no tiers) hands over
    // its computed blocks once they are past the age cap, as lcp.VrexPolicy does.
    bool hosting_ = false;
    std::vector<std::pair<std::uint64_t, std::vector<std::byte>>> to_host_;
    std::vector<std::uint64_t> tiered_to_host_;  // the same with the hierarchy: its host copies, by key
    std::vector<std::vector<std::uint64_t>> by_frame_;
    void host_tier_begin();
    std::optional<KvTiers> tiers_;          // RunnerOptions::tiers
    double host_prep_s_ = 0;                // tiers_' host_prepare_cpu_s() at the previous step
    std::uint32_t window_ = 0, reach_ = 0;  // the decoder's visual window and question reach (frames)
    bool native_ = true;                    // RunnerOptions::kernels
    NativeScratch scratch_;                 // the native kernels' working memory
    std::vector<float> vis_;                // the frame's embeddings (native kernels)
    std::vector<float> k0_;  // the frame's layer-0 keys per region [regions, KVH, T, hd] (refresh)
    // The position-aware read's inputs without libtorch (select_tiered): the region queries [regions,
    // heads*hd] before rotation, the position table (the questions' distance and slot biases averaged
    // over the heads: [buckets], [regions, visual]), RoPE cos/sin per position seen.
    std::vector<float> q0_, rel_mean_, slot_mean_, rope_;
    double rope_base_ = 0;
    double resv_s_ = 0;  // this step's time in the ReSV unit's emulated work (StepStats::engine_s "resv")
    const float* rope_at(std::size_t pos);
    std::vector<float> position_weights(std::int64_t region, std::int64_t target, std::int64_t lo,
                                        std::int64_t hi) const;
    std::vector<float*> blocks_;           // the frame's block memory per region
    std::vector<float> hash_keys_;         // hash_frame(): the frame's layer-0 keys, rotated
    std::vector<std::uint32_t> hash_out_;  // hash_frame(): their hashes
    // Native kernels: where every frame's blocks are read (the paged cache: no attention cache).
    std::optional<KvPageTable> pages_;
    std::vector<float> sel_q_, sel_w_;  // the native selector's outputs (selector())
    std::vector<std::int64_t> sel_fr_;
    // The scripted kernels' attention-ready cache [L, KVH, capacity, hd], K rotated (Decoder.step).
    torch::Tensor k_, v_;
    std::uint32_t t_ = 0;
    bool closed_ = false;
};

StreamRunner::Impl::Impl(ScriptedModel& model, std::shared_ptr<KvAllocator> alloc, const RunnerOptions& o)
    : model_(model), alloc_(std::move(alloc)) {
    const Geometry& g = model_.geometry();
    const std::uint64_t need =
        std::uint64_t{g.layers} * 2 * g.kv_heads * g.tokens_per_region * g.head_dim * 4;
    if (alloc_->block_bytes() != need)
        throw std::runtime_error("vrex runner: the allocator's blocks are " +
                                 std::to_string(alloc_->block_bytes()) + " B, the model needs " +
                                 std::to_string(need));
    st_ = take(alloc_->create_stream(), "create stream");
    native_ = o.kernels == Kernels::native;
    if (native_) pages_.emplace(g.regions);
    if (o.policy == Policy::vrex) {
        policy_.emplace(take(ReusePolicy::create(o.reuse, g.regions), "reuse policy"));
        policy_->fit_device(alloc_->device().info());  // a hardware 1.0 board: untiered, nearest only
        hosting_ = o.reuse.recall && o.reuse.fcc;
        if (hosting_) check(policy_->attach_host_tier(*alloc_, o.host_slots), "recall's host tier");
    }
    read_ = o.read;
    const auto cfg = model_.impl_->m.attr("d").toModule().attr("c").toObject();
    window_ = static_cast<std::uint32_t>(cfg->getAttr("window").toInt());
    reach_ = static_cast<std::uint32_t>(cfg->getAttr("question_reach").toInt());
    if (read_.resv) {
        if (!(read_.ratio > 0.0 && read_.ratio <= 1.0))
            throw std::invalid_argument("vrex runner: the ReSV read's ratio must be in (0, 1]");
        torch::NoGradGuard no_grad;
        qnorm_t_ = model_.impl_->m.run_method("query_norm").toTensor();
        qnorm_ = qnorm_t_.item<double>();
        auto flat = [](const torch::Tensor& x) {
            const torch::Tensor c = x.contiguous();
            return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
        };
        q0_ = flat(model_.impl_->m.run_method("region_queries").toTensor());
        const auto tables = model_.impl_->m.run_method("position_tables").toTuple();
        rel_mean_ = flat(tables->elements()[0].toTensor());
        slot_mean_ = flat(tables->elements()[1].toTensor());
        rope_base_ = cfg->getAttr("rope_base").toDouble();
    }
    refresh_ = o.refresh;
    if ((refresh_ || o.reuse.recall) && o.policy != Policy::vrex)
        throw std::invalid_argument("vrex runner: refresh and recall are V-Rex's (policy vrex)");
    if (o.tiers) {
        if (!read_.resv)
            throw std::invalid_argument(
                "vrex runner: the memory hierarchy's read is ReSV's (demoted blocks are read only when a "
                "question selects them; fetch_blocks 0: never)");
        tiers_.emplace(take(KvTiers::create(*o.tiers, alloc_->block_bytes(), g.regions, window_), "tiers"));
    }
    if (o.profile_fcc) fcc_ = std::make_unique<FccProbe>();
}

double StreamRunner::Impl::time_fcc(const LumaView& luma, const Fingerprint& device_fp) {
    FccProbe& p = *fcc_;
    struct vrex_fp fp {};
    struct vrex_fcc_features feat {};
    const double t0 = thread_cpu_s();
    const int e =
        vrex_fcc_fingerprint(reinterpret_cast<const u8*>(luma.data), luma.width, luma.height, luma.stride,
                             p.has_prev ? &p.prev : nullptr, &p.cur, &p.mv, &fp, &feat);
    const double t = thread_cpu_s() - t0;
    // Same plane, same previous frame: the device's answer, or this was not the device's work.
    if (e || fp.w[0] != device_fp.w[0] || fp.w[1] != device_fp.w[1])
        throw std::runtime_error(
            "vrex runner: the FCC probe's fingerprint differs from the device's (frame " +
            std::to_string(t_) + ")");
    p.prev = p.cur;
    p.has_prev = true;
    return t;
}

StreamRunner::Impl::~Impl() {
    // Destruction must not throw; the stream's end frees the blocks anyway.
    if (!closed_ && st_) (void)unpin_all(*st_, pinned_);
}

void StreamRunner::Impl::close() {
    if (closed_) return;
    closed_ = true;
    check(unpin_all(*st_, pinned_), "close");
    pinned_.clear();
    k_ = v_ = torch::Tensor();
}

float* StreamRunner::Impl::block_data(const KvBlock& b) {
    // A published or shared block is read-only (hal.hpp): Decoder.step only reads reused blocks and
    // writes only the fresh ones this stream just allocated (their @data is set).
    auto* p = b.data.empty() ? const_cast<std::byte*>(b.view.data()) : b.data.data();  // NOLINT
    return reinterpret_cast<float*>(p);  // NOLINT: the block holds fp32 (Geometry::hal())
}

torch::Tensor StreamRunner::Impl::view(const KvBlock& b) const {
    const Geometry& g = model_.geometry();
    return torch::from_blob(block_data(b), {g.layers, 2, g.kv_heads, g.tokens_per_region, g.head_dim},
                            torch::kFloat32);
}

void StreamRunner::Impl::reserve() {
    const Geometry& g = model_.geometry();
    const std::int64_t n0 = std::int64_t{t_} * g.visual, n1 = n0 + g.visual;
    if (k_.defined() && k_.size(2) >= n1) return;
    const std::int64_t cap = std::max<std::int64_t>(64 * g.visual, 2 * n1);
    // Zeroed, so its pages are mapped here, when it grows, not faulted in one frame's rows at a time
    // inside every step (a fixed cost per frame that exact and V-Rex pay alike).
    auto k = torch::zeros({g.layers, g.kv_heads, cap, g.head_dim});
    auto v = torch::zeros_like(k);
    if (k_.defined()) {
        k.narrow(2, 0, n0).copy_(k_.narrow(2, 0, n0));
        v.narrow(2, 0, n0).copy_(v_.narrow(2, 0, n0));
    }
    k_ = std::move(k);
    v_ = std::move(v);
}

// ReSV's inputs from layer 0 (StepModule.selector: query, reach frames, position weights), at frame t_:
// the native kernels write them into buffers the returned tensors view, or the scripted method runs.
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> StreamRunner::Impl::selector(
    const torch::Tensor& q_region, const torch::Tensor& q_target) {
    if (!native_) {
        const auto out =
            model_.impl_->m.run_method("selector", q_region, q_target, static_cast<std::int64_t>(t_));
        const auto& el = out.toTuple()->elements();
        return {el[0].toTensor().contiguous(), el[1].toTensor().contiguous(), el[2].toTensor().contiguous()};
    }
    const NativeConfig& c = model_.native().config();
    const std::int64_t nq = q_region.size(0), a = std::int64_t{c.heads} * c.head_dim,
                       span = 2 * std::int64_t{c.question_reach} + 1;
    sel_q_.resize(static_cast<std::size_t>(nq * a));
    sel_fr_.resize(static_cast<std::size_t>(nq * span));
    sel_w_.resize(static_cast<std::size_t>(nq * span * c.visual()));
    const torch::Tensor qr = q_region.contiguous(), qt = q_target.contiguous();
    model_.native().selector(scratch_, {qr.data_ptr<std::int64_t>(), static_cast<std::size_t>(nq)},
                             {qt.data_ptr<std::int64_t>(), static_cast<std::size_t>(nq)}, t_, sel_q_, sel_fr_,
                             sel_w_);
    return {torch::from_blob(sel_q_.data(), {nq, a}, torch::kFloat32),
            torch::from_blob(sel_fr_.data(), {nq, span}, torch::kInt64),
            torch::from_blob(sel_w_.data(), {nq, span * c.visual()}, torch::kFloat32)};
}

// The tokens each question reads (see ReadOptions), as the decoder's q_read [Q, M] (-1 padding).
torch::IValue StreamRunner::Impl::select(const torch::Tensor& q_region, const torch::Tensor& q_target,
                                         StepStats& stats) {
    const Geometry& g = model_.geometry();
    const auto [q, fr, w] = selector(q_region, q_target);
    const auto nq = static_cast<std::size_t>(q.size(0)), dim = static_cast<std::size_t>(q.size(1));
    const auto span_frames = static_cast<std::size_t>(fr.size(1));
    const auto reach = static_cast<std::int64_t>(span_frames / 2);
    std::vector<std::uint32_t> qh(nq);
    const double h0 = thread_cpu_s();
    check(resv_hash(read_.seed, static_cast<std::uint32_t>(dim), {q.data_ptr<float>(), nq * dim}, qh),
          "hash the questions' queries");
    resv_s_ += thread_cpu_s() - h0;
    stats.hashed += nq;
    sel_rows_.clear();
    sel_len_.assign(nq, 0);
    const std::int64_t* frp = fr.data_ptr<std::int64_t>();
    const float* wp = w.data_ptr<float>();
    const std::int64_t* tg = q_target.data_ptr<std::int64_t>();
    for (std::size_t i = 0; i < nq; i++) {
        const std::size_t row0 = sel_rows_.size();
        // The reach's past frames are consecutive: columns j0 .. j1 of the question's row.
        std::size_t j0 = span_frames, j1 = 0;
        for (std::size_t j = 0; j < span_frames; j++)
            if (frp[i * span_frames + j] >= 0) {
                j0 = std::min(j0, j);
                j1 = j;
            }
        if (j0 < span_frames) {
            const auto f0 = static_cast<std::size_t>(frp[i * span_frames + j0]);
            const std::size_t n = (j1 - j0 + 1) * g.visual;
            const std::span<const std::uint32_t> hashes(khash_.data() + f0 * g.visual, n);
            const std::span<const float> pos(wp + i * span_frames * g.visual + j0 * g.visual, n);
            const auto blocks = select_blocks(hashes, pos, qh[i], stats);
            for (const std::uint32_t b : blocks)
                for (std::uint32_t k = 0; k < g.tokens_per_region; k++)
                    sel_rows_.push_back(
                        static_cast<std::int64_t>(f0 * g.visual + b * g.tokens_per_region + k));
        }
        if (static_cast<std::int64_t>(t_) - tg[i] <= reach)  // the current frame: computed in this step
            for (std::uint32_t k = 0; k < g.visual; k++)
                sel_rows_.push_back(static_cast<std::int64_t>(std::uint64_t{t_} * g.visual + k));
        sel_len_[i] = sel_rows_.size() - row0;
        stats.question_keys += sel_len_[i];
    }
    return padded_rows(sel_rows_, sel_len_, sel_read_);
}

// Frame t's layer-0 keys (rotated to its position, the heads concatenated) hashed once, as inserted:
// the blocks hold them before rotation, so its rows are rotated here, into the hash's input.
void StreamRunner::Impl::hash_frame(StepStats& stats) {
    const Geometry& g = model_.geometry();
    const std::size_t n = g.visual, hd = g.head_dim, half = hd / 2, dim = std::size_t{g.kv_heads} * hd,
                      tpr = g.tokens_per_region;
    const float* rope = rope_at(t_);
    std::vector<float>& k = hash_keys_;  // kept across frames: no allocation a step
    k.resize(n * dim);
    for (std::size_t j = 0; j < n; j++)
        for (std::size_t h = 0; h < g.kv_heads; h++) {
            float* kj = k.data() + j * dim + h * hd;  // block layer 0, K, head h, token j % tpr
            std::memcpy(kj, blocks_[j / tpr] + (h * tpr + j % tpr) * hd, hd * sizeof(float));
            native::rotate(kj, rope, rope + half, half);
        }
    std::vector<std::uint32_t>& h = hash_out_;
    h.resize(n);
    const double h0 = thread_cpu_s();
    check(resv_hash(read_.seed, static_cast<std::uint32_t>(dim), k, h), "hash the frame's keys");
    resv_s_ += thread_cpu_s() - h0;
    khash_.insert(khash_.end(), h.begin(), h.end());
    stats.hashed += n;
    if (lut_.empty()) {  // the logit scale |q| |k| of the stream's first frame (anchors.Managed does the
                         // same)
        const torch::Tensor kt = torch::from_blob(
            k.data(), {static_cast<std::int64_t>(n), static_cast<std::int64_t>(dim)}, torch::kFloat32);
        lut_ = take(resv_mass_lut(static_cast<double>((qnorm_t_ * kt.norm(2, 1).median()).item<float>())),
                    "ReSV MASS table");
    }
}

// The blocks the questions' read @q_read selected off the device are read where the hierarchy
// staged them (their host or disk copy): the pages point there for this step.
void StreamRunner::Impl::stage_reads(std::span<const std::int64_t> q_read) {
    if (!tiers_) return;
    const std::int64_t tpr = model_.geometry().tokens_per_region;
    for (const std::int64_t tok : q_read)
        if (tok >= 0) (void)pages_->stage(static_cast<std::size_t>(tok / tpr), *tiers_);
}

// decoder.rope_tables at @pos: cos then sin [head_dim / 2] each, the angle in double, then fp32.
const float* StreamRunner::Impl::rope_at(std::size_t pos) {
    const std::size_t half = model_.geometry().head_dim / 2;
    const std::size_t have = rope_.size() / (2 * half);
    if (pos >= have) {
        const std::size_t want = std::max(pos + 1, 2 * have);
        rope_.resize(want * 2 * half);
        for (std::size_t p = have; p < want; p++)
            for (std::size_t i = 0; i < half; i++) {
                const double inv =
                    std::pow(rope_base_, -static_cast<double>(i) * 2.0 / static_cast<double>(2 * half));
                const double ang = static_cast<double>(p) * inv;
                rope_[p * 2 * half + i] = static_cast<float>(std::cos(ang));
                rope_[p * 2 * half + half + i] = static_cast<float>(std::sin(ang));
            }
    }
    return rope_.data() + pos * 2 * half;
}

// anchors.Managed's position weights of question (@region, @target) over frames @lo .. @hi: b =
// the distance table at the frame's bucket + the slot table at (region, slot), in fp32; exp(b -
// max b) in double, then fp32 ([frames x visual]).
std::vector<float> StreamRunner::Impl::position_weights(std::int64_t region, std::int64_t target,
                                                        std::int64_t lo, std::int64_t hi) const {
    const std::size_t n = model_.geometry().visual;
    std::vector<float> b(static_cast<std::size_t>(hi - lo + 1) * n);
    const float* slot = slot_mean_.data() + static_cast<std::size_t>(region) * n;
    float top = -std::numeric_limits<float>::infinity();
    for (std::int64_t f = lo; f <= hi; f++) {
        const std::int64_t d =
            f - target;  // decoder.rel_bucket: 0, then log2 buckets 1..8 after, 9..16 before
        const auto mag =
            std::min<std::uint64_t>(std::bit_width(static_cast<std::uint64_t>(d < 0 ? -d : d)), 8);
        const std::size_t bucket = d == 0 ? 0 : d > 0 ? mag : mag + 8;
        for (std::size_t s = 0; s < n; s++) {
            const float v = rel_mean_[bucket] + slot[s];
            b[static_cast<std::size_t>(f - lo) * n + s] = v;
            top = std::max(top, v);
        }
    }
    for (float& v : b) v = static_cast<float>(std::exp(static_cast<double>(v) - static_cast<double>(top)));
    return b;
}

// The regions of this frame filled from bytes instead of computed (lcp.StreamRunner._split and
// anchors.Managed.choose): with refresh every candidate the policy accepted (its own device memory:
// a candidate is at most max_age frames old, never demoted); with recall the policy's recalled()
// entries for the regions it found no candidate for, from whatever tier holds them (the whole
// cache pinned: the pinned block; with the hierarchy: device memory or the host copy).
std::vector<StreamRunner::Impl::Install> StreamRunner::Impl::installs(const FrameChoice& choice,
                                                                      StepStats& stats) {
    std::vector<Install> out;
    if (!policy_) return out;
    const bool recall = policy_->options().recall;
    for (std::uint32_t r = 0; r < choice.size(); r++) {
        if (choice[r]) {
            if (refresh_) out.push_back({r, choice[r]->view, block_key(*choice[r])});
            continue;
        }
        const auto& rec = policy_->recalled()[r];
        if (!recall || !rec) continue;
        const std::uint64_t key = (std::uint64_t{rec->id} << 32) | rec->generation;
        std::span<const std::byte> bytes;
        if (tiers_) {
            bytes = tiers_->fetch_prefill(key);
            tiers_->touch(key, t_);  // a recall is a read (Coldness::use)
        } else {
            const auto it = std::find_if(pinned_.begin(), pinned_.end(),
                                         [&](const KvBlock& b) { return block_key(b) == key; });
            if (it != pinned_.end()) bytes = it->view;
        }
        if (bytes.empty()) continue;  // its bytes are gone: the region is computed
        out.push_back({r, bytes, key});
        stats.recalled++;
    }
    return out;
}

// The frame's installed regions' new blocks from their sources' bytes (install_blocks: the copies in
// one kick of the copy engine; with refresh layer 0 is the frame's own: the guard's keys k0_ and the
// frame's features @tokens).
void StreamRunner::Impl::fill(std::span<const Install> ins, const FrameBlocks& fb,
                              std::span<const float> tokens) {
    const Geometry& g = model_.geometry();
    fills_.clear();
    for (const Install& in : ins) fills_.push_back({in.region, fb.blocks[in.region].data, in.bytes});
    const Layer0 layer0{k0_, tokens};
    install_blocks(dma_, {g.layers, g.kv_heads, g.tokens_per_region, g.head_dim, g.feat_dim}, fills_,
                   refresh_ ? &layer0 : nullptr);
}

// After the frame: it enters the hierarchy (hierarchy.KvTiers.add_frame), its keys are hashed for
// the reads, the step's bytes are recorded (metadata: a 4-byte hash per token, anchors.Managed's
// resv_pos) and cold blocks are demoted (unpinned: no longer the runner's).
void StreamRunner::Impl::end_tiers(std::span<const KvBlock> blocks) {
    KvTiers& tiers = *tiers_;
    const Geometry& g = model_.geometry();
    if (tiers.options().coldness == Coldness::fifo) tiers.stage_window(t_);
    repinned_.clear();
    check(tiers.add_frame(*st_, t_, blocks, repinned_), "tiers: add frame");
    pinned_.insert(pinned_.end(), repinned_.begin(), repinned_.end());
    tiers.account(std::uint64_t{t_ + 1} * g.visual * 4);
    demoted_.clear();
    check(tiers.age(*st_, t_ + 1, demoted_), "tiers: age");
    if (hosting_)  // recall finds them again through the SHIE's host tier (anchors' on_demote)
        for (const std::uint64_t key : demoted_)
            if (policy_->recallable(key) && !tiers.host_copy(key).empty()) tiered_to_host_.push_back(key);
    if (!demoted_.empty())
        std::erase_if(pinned_, [&](const KvBlock& b) {
            return std::find(demoted_.begin(), demoted_.end(), block_key(b)) != demoted_.end();
        });
}

// lcp.VrexPolicy.begin: the plain runner's computed blocks past the age cap (only recall can reach
// them) get their host-tier copy, then every queued copy is indexed for the frame just begun.
void StreamRunner::Impl::host_tier_begin() {
    if (!hosting_) return;
    const std::uint32_t age = policy_->options().max_age;
    if (!tiers_ && age != 0 && t_ >= age + 1 && t_ - age - 1 < by_frame_.size()) {
        for (const std::uint64_t key : by_frame_[t_ - age - 1]) {
            const auto it = std::find_if(pinned_.begin(), pinned_.end(),
                                         [&](const KvBlock& b) { return block_key(b) == key; });
            if (it != pinned_.end() && policy_->recallable(key))
                to_host_.emplace_back(key, std::vector<std::byte>(it->view.begin(), it->view.end()));
        }
        by_frame_[t_ - age - 1].clear();
    }
    for (const auto& [key, bytes] : to_host_)
        (void)take(policy_->demote(*st_, key, bytes), "recall's host tier");
    to_host_.clear();
    // The hierarchy's demoted copies are read where they are (demote() copies them into its pool):
    // nothing promotes or frees them between the end of the frame that demoted them and here.
    for (const std::uint64_t key : tiered_to_host_)
        (void)take(policy_->demote(*st_, key, tiers_->host_copy(key)), "recall's host tier");
    tiered_to_host_.clear();
}

// V-Rex's read of record over the hierarchy (anchors.Managed.question_bias with resv_pos): per
// question, the tokens of its reach whose blocks are on the device, the current frame's, and the
// demoted blocks the position-aware WiCSum ranks first among the reach's blocks, staged back up to
// fetch_blocks. IValue() (the reach, as exact reads it) when no question's reach holds a demoted
// block: then the read is the same.
std::vector<std::uint32_t> StreamRunner::Impl::select_blocks(std::span<const std::uint32_t> hashes,
                                                             std::span<const float> pos,
                                                             std::uint32_t query_hash, StepStats& stats) {
    const double s0 = thread_cpu_s();
    auto blocks = take(
        resv_select_blocks(hashes, pos, query_hash, lut_, read_.ratio, model_.geometry().tokens_per_region),
        "ReSV read");
    resv_s_ += thread_cpu_s() - s0;
    stats.weighed += hashes.size();
    stats.selected_blocks += blocks.size();
    return blocks;
}

torch::IValue StreamRunner::Impl::select_tiered(const torch::Tensor& q_region, const torch::Tensor& q_target,
                                                StepStats& stats) {
    const Geometry& g = model_.geometry();
    const std::int64_t t = t_, reach = reach_, R = g.regions;
    const auto nq = static_cast<std::size_t>(q_target.size(0));
    const std::int64_t* tg = q_target.data_ptr<std::int64_t>();
    const auto codes = tiers_->slot_tiers();
    std::vector<bool> demoted_in_reach(nq, false);
    bool any = false;
    for (std::size_t i = 0; i < nq; i++) {
        const std::int64_t lo = std::max<std::int64_t>(0, tg[i] - reach), hi = std::min(t - 1, tg[i] + reach);
        for (std::int64_t s = lo * R; s < (hi + 1) * R && !demoted_in_reach[i]; s++)
            demoted_in_reach[i] = codes[static_cast<std::size_t>(s)] != Tier::device;
        any = any || demoted_in_reach[i];
    }
    if (!any) {
        for (std::size_t i = 0; i < nq; i++) {
            tiers_->end_read();
            stats.question_keys += static_cast<std::uint64_t>(
                (std::min(t, tg[i] + reach) - std::max<std::int64_t>(0, tg[i] - reach) + 1) * g.visual);
        }
        return {};
    }
    // The questions' layer-0 queries as anchors.Managed.queries() computes them: the region's query
    // rotated to the frame asked about, then scaled, the heads concatenated.
    const std::int64_t* qr = q_region.data_ptr<std::int64_t>();
    const std::size_t dim = q0_.size() / R, hd = g.head_dim, half = hd / 2;
    const auto scale = static_cast<float>(std::pow(static_cast<double>(hd), -0.5));
    sel_qrot_.resize(nq * dim);
    float* q = sel_qrot_.data();
    for (std::size_t i = 0; i < nq; i++) {
        if (!demoted_in_reach[i]) continue;
        const float* rope = rope_at(static_cast<std::size_t>(tg[i]));
        for (std::size_t h = 0; h < dim / hd; h++) {
            const float* x = q0_.data() + static_cast<std::size_t>(qr[i]) * dim + h * hd;
            float* y = q + i * dim + h * hd;
            for (std::size_t j = 0; j < half; j++) {
                const float a = x[j] * rope[j], b = x[half + j] * rope[half + j];
                const float c = x[j] * rope[half + j], d = x[half + j] * rope[j];
                y[j] = (a - b) * scale;
                y[half + j] = (c + d) * scale;
            }
        }
    }
    sel_qh_.assign(nq, 0);
    const double h0 = thread_cpu_s();
    for (std::size_t i = 0; i < nq; i++)
        if (demoted_in_reach[i]) {
            check(
                resv_hash(read_.seed, static_cast<std::uint32_t>(dim), {q + i * dim, dim}, {&sel_qh_[i], 1}),
                "hash the questions' queries");
            stats.hashed++;
        }
    resv_s_ += thread_cpu_s() - h0;
    // Every question's rows one after another (sel_len_ apart), then padded into q_read.
    sel_rows_.clear();
    sel_len_.assign(nq, 0);
    for (std::size_t i = 0; i < nq; i++) {
        const std::size_t row0 = sel_rows_.size();
        const std::int64_t g0 = tg[i], lo = std::max<std::int64_t>(0, g0 - reach),
                           hi = std::min(t - 1, g0 + reach);
        sel_allow_.assign(static_cast<std::size_t>(std::max<std::int64_t>(0, hi - lo + 1) * R), 0);
        for (std::size_t s = 0; s < sel_allow_.size(); s++)
            sel_allow_[s] = codes[static_cast<std::size_t>(lo * R) + s] == Tier::device;
        if (demoted_in_reach[i]) {
            const std::size_t n = sel_allow_.size() / R * g.visual;
            const std::span<const std::uint32_t> hashes(khash_.data() + lo * g.visual, n);
            const std::vector<float> pos = position_weights(qr[i], g0, lo, hi);
            const auto blocks = select_blocks(hashes, pos, sel_qh_[i], stats);
            sel_taken_.clear();
            for (const std::uint32_t b : blocks) {
                const auto slot = static_cast<std::size_t>(lo * R) + b;
                const std::uint64_t key = tiers_->slot_key(slot);
                if (codes[slot] == Tier::device) {  // read anyway; selected: warm (Coldness::use)
                    tiers_->touch(key, t_);
                    continue;
                }
                if (std::find(sel_taken_.begin(), sel_taken_.end(), key) == sel_taken_.end()) {
                    if (sel_taken_.size() >= read_.fetch_blocks) continue;  // capped
                    sel_taken_.push_back(key);
                    (void)take(tiers_->fetch(key), "tiers: stage a selected block");
                }
                sel_allow_[b] = 1;
            }
        }
        tiers_->end_read();
        for (std::size_t s = 0; s < sel_allow_.size(); s++)
            if (sel_allow_[s])
                for (std::uint32_t k = 0; k < g.tokens_per_region; k++)
                    sel_rows_.push_back(lo * g.visual +
                                        static_cast<std::int64_t>(s * g.tokens_per_region + k));
        if (t - g0 <= reach)  // the current frame: computed in this step
            for (std::uint32_t k = 0; k < g.visual; k++) sel_rows_.push_back(t * g.visual + k);
        sel_len_[i] = sel_rows_.size() - row0;
        stats.question_keys += sel_len_[i];
    }
    return padded_rows(sel_rows_, sel_len_, sel_read_);
}

std::vector<float> StreamRunner::Impl::step(const LumaView& luma, std::span<const float> tokens_in,
                                            std::span<const std::int64_t> q_region_in,
                                            std::span<const std::int64_t> q_target_in, StepStats& stats) {
    if (closed_) throw std::runtime_error("vrex runner: the stream runner is closed");
    const Geometry& g = model_.geometry();
    if (tokens_in.size() != std::size_t{g.visual} * g.feat_dim)
        throw std::invalid_argument("vrex runner: tokens must be [" + std::to_string(g.visual) + ", " +
                                    std::to_string(g.feat_dim) + "], not " +
                                    std::to_string(tokens_in.size()) + " values");
    if (q_region_in.size() != q_target_in.size())
        throw std::invalid_argument("vrex runner: " + std::to_string(q_region_in.size()) +
                                    " question regions but " + std::to_string(q_target_in.size()) +
                                    " targets");
    for (std::size_t i = 0; i < q_region_in.size(); i++) {
        if (q_target_in[i] < 0 || q_target_in[i] > t_)
            throw std::invalid_argument("vrex runner: question targets must be frames 0.." +
                                        std::to_string(t_));
        if (q_region_in[i] < 0 || q_region_in[i] >= g.regions)
            throw std::invalid_argument("vrex runner: question regions must be 0.." +
                                        std::to_string(g.regions - 1));
    }
    // The step only reads its inputs: the tensors borrow the caller's memory.
    const auto nq = static_cast<std::int64_t>(q_region_in.size());
    const torch::Tensor tokens = torch::from_blob(const_cast<float*>(tokens_in.data()),  // NOLINT
                                                  {g.visual, g.feat_dim}, torch::kFloat32);
    const torch::Tensor q_region = torch::from_blob(const_cast<std::int64_t*>(q_region_in.data()),  // NOLINT
                                                    {nq}, torch::kInt64);
    const torch::Tensor q_target = torch::from_blob(const_cast<std::int64_t*>(q_target_in.data()),  // NOLINT
                                                    {nq}, torch::kInt64);
    torch::NoGradGuard no_grad;
    torch::jit::Module& m = model_.impl_->m;
    auto& st = stats.stage_s;
    auto& en = stats.engine_s;
    st.fill(0);
    en.fill(0);
    resv_s_ = 0;
    // The copy engines' clocks (read, not started: they run only when copies are queued).
    const double dma0 = dma_.cpu_s(), tdma0 = tiers_ ? tiers_->copy_engine().cpu_s() : 0.0;
    const double t0 = thread_cpu_s();
    const FrameInfo fi = take(st_->begin_frame(luma), "begin_frame");
    double e0 = thread_cpu_s();
    st[0] = e0 - t0;
    torch::Tensor vis;
    std::vector<std::uint32_t> hashes(g.regions, 0);
    if (native_) {  // the same embedding and guard hashes on plain buffers; vis views them
        vis_.resize(std::size_t{g.visual} * model_.native().config().d_model);
        k0_.resize(refresh_ ? std::size_t{g.visual} * g.kv_heads * g.head_dim : 0);
        if (policy_)
            model_.native().prepare(scratch_, tokens_in, vis_, hashes, k0_);
        else
            model_.native().embed(tokens_in, vis_);
        vis = torch::from_blob(vis_.data(),
                               {g.visual, static_cast<std::int64_t>(model_.native().config().d_model)},
                               torch::kFloat32);
    } else if (policy_) {
        auto out = m.run_method("prepare", tokens).toTuple();
        vis = out->elements()[0].toTensor();
        const torch::Tensor h = out->elements()[1].toTensor().contiguous();
        if (refresh_) {  // [KVH, visual, hd] -> per region [KVH, T, hd], a block's layer-0 K layout
            k0_.resize(std::size_t{g.visual} * g.kv_heads * g.head_dim);
            const torch::Tensor k0 = out->elements()[2].toTensor().contiguous();
            const float* kp = k0.data_ptr<float>();
            const std::size_t tpr = g.tokens_per_region, hd = g.head_dim;
            for (std::size_t r = 0; r < g.regions; r++)
                for (std::size_t h = 0; h < g.kv_heads; h++)
                    std::memcpy(k0_.data() + ((r * g.kv_heads + h) * tpr) * hd,
                                kp + (h * g.visual + r * tpr) * hd, tpr * hd * sizeof(float));
        }
        for (std::uint32_t r = 0; r < g.regions; r++)
            hashes[r] = static_cast<std::uint32_t>(h[r].item<std::int64_t>());
    } else {
        vis = m.run_method("embed", tokens).toTensor();
    }
    // choose() in its halves, so the lookup batch is timed apart from the guard.
    double e1 = thread_cpu_s();
    en[0] = e1 - e0;
    e0 = e1;
    FrameChoice choice(g.regions);
    if (policy_) {
        host_tier_begin();
        auto got = st_->retrieve_batch(policy_->queries(fi.fp));
        if (!got) throw std::runtime_error("vrex runner: choose: candidates: " + got.error_message());
        const double e1 = thread_cpu_s();
        st[1] = e1 - e0;
        choice = take(policy_->decide(*got, fi.fp, hashes, t_, fi.region_motion), "choose");
        e0 = thread_cpu_s();
        st[2] = e0 - e1;
    }
    stats.question_keys = stats.weighed = stats.selected_blocks = stats.hashed = 0;
    stats.recalled = 0;
    // Installed regions get blocks of their own: with refresh nothing is aliased.
    const FrameBlocks fb = take(apply_choice(*st_, refresh_ ? FrameChoice(g.regions) : choice), "apply");
    e1 = thread_cpu_s();
    st[3] = e1 - e0;
    const std::vector<Install> ins = installs(choice, stats);
    pinned_.insert(pinned_.end(), fb.fresh_blocks.begin(), fb.fresh_blocks.end());
    std::vector<bool> installed(g.regions, false);
    fill(ins, fb, tokens_in);
    for (const Install& in : ins) installed[in.region] = true;
    std::vector<std::uint32_t> fresh;
    std::vector<KvBlock> computed_blocks;
    std::vector<std::uint32_t> computed_hashes;
    for (std::size_t i = 0; i < fb.fresh.size(); i++) {
        const std::uint32_t r = fb.fresh[i];
        if (installed[r]) continue;
        fresh.push_back(r);
        computed_blocks.push_back(fb.fresh_blocks[i]);
        computed_hashes.push_back(hashes[r]);
    }
    blocks_.clear();
    for (const KvBlock& b : fb.blocks) blocks_.push_back(block_data(b));
    if (native_) {
        pages_->add_frame(blocks_);
        // The window's blocks a fifo hierarchy demoted are read from the copies it staged for it.
        const std::uint32_t w0 = t_ + 1 >= window_ ? t_ + 1 - window_ : 0;
        for (std::size_t s = std::size_t{w0} * g.regions; tiers_ && s < std::size_t{t_} * g.regions; s++)
            (void)pages_->stage(s, *tiers_);
    } else {
        reserve();
    }
    e0 = thread_cpu_s();
    const double dma_install = dma_.cpu_s() - dma0;
    en[1] = e0 - e1 - dma_install;
    // The visual prefill, then the questions (Decoder.prefill / ask: the questions read frame t's K/V
    // of every layer, the visual tokens never read the questions), timed apart.
    if (native_) {
        model_.native().prefill(scratch_, tokens_in, vis_, fresh, blocks_, {pages_->readable()}, t_);
    } else {
        c10::List<torch::Tensor> cur;
        for (const KvBlock& b : fb.blocks) cur.push_back(view(b));
        c10::List<std::int64_t> fresh_list;
        for (std::uint32_t r : fresh) fresh_list.push_back(r);
        m.run_method("prefill", tokens, vis, fresh_list, cur, k_, v_, static_cast<std::int64_t>(t_));
    }
    const double a0 = thread_cpu_s();
    en[2] = a0 - e0;
    torch::IValue q_read;
    if (read_.resv && nq > 0 && !tiers_)
        q_read = select(q_region, q_target, stats);
    else if (read_.resv && nq > 0 && t_ > 0)
        q_read = select_tiered(q_region, q_target, stats);
    else if (read_.resv)  // frame 0: its questions read frame 0, as exact's do
        stats.question_keys = static_cast<std::uint64_t>(nq) * g.visual;
    e1 = thread_cpu_s();
    // The questions' staged copies (KvTiers::fetch, run at end_read) are the copy engine's.
    const double dma_read = tiers_ ? tiers_->copy_engine().cpu_s() - tdma0 : 0.0;
    en[3] = e1 - a0 - resv_s_ - dma_read;  // the ReSV unit's part counts apart (en[6]), the DMA's too
    const double resv_read = resv_s_;
    std::vector<float> out_logits(static_cast<std::size_t>(nq) * g.codes);
    if (native_) {
        QuestionRead qr;
        if (q_read.isTensor()) {
            const torch::Tensor r = q_read.toTensor().contiguous();
            qr = {{r.data_ptr<std::int64_t>(), static_cast<std::size_t>(r.numel())},
                  static_cast<std::size_t>(r.size(1))};
        }
        stage_reads(qr.tokens);
        model_.native().ask(scratch_, {pages_->readable()}, t_, q_region_in, q_target_in,
                            q_read.isTensor() ? &qr : nullptr, out_logits);
    } else {
        const torch::Tensor logits =
            m.run_method("ask", k_, v_, static_cast<std::int64_t>(t_), q_region, q_target, q_read)
                .toTensor()
                .contiguous();
        std::memcpy(out_logits.data(), logits.data_ptr<float>(), sizeof(float) * out_logits.size());
    }
    e0 = thread_cpu_s();
    stats.ask_s = e0 - a0;
    en[4] = e0 - e1;
    if (read_.resv) hash_frame(stats);
    e1 = thread_cpu_s();
    en[5] = e1 - e0;
    e0 = e1;
    if (policy_) {
        check(policy_->computed(computed_blocks, computed_hashes, t_), "computed");
        if (hosting_ && !tiers_) {
            by_frame_.emplace_back();
            for (const KvBlock& b : computed_blocks) by_frame_.back().push_back(block_key(b));
        }
        if (!ins.empty()) {
            std::vector<KvBlock> blocks;
            std::vector<std::uint64_t> sources;
            for (const Install& in : ins) {
                blocks.push_back(fb.blocks[in.region]);
                sources.push_back(in.source);
            }
            check(policy_->installed(blocks, sources, t_), "installed");
        }
    }
    e1 = thread_cpu_s();
    st[4] = e1 - e0;
    (void)take(st_->end_frame(), "end_frame");
    e0 = thread_cpu_s();
    st[5] = e0 - e1;
    // The hierarchy's moves (demotion copies) are part of V-Rex's step time, not of the vrex layer's.
    if (tiers_) end_tiers(fb.blocks);
    if (tiers_ && native_) pages_->sync(*tiers_);  // no page outlives its block's device memory
    const double t1 = thread_cpu_s();
    en[5] += t1 - e0;
    en[5] -= resv_s_ - resv_read;
    en[6] = resv_read;
    en[7] = resv_s_ - resv_read;
    // The hierarchy's demotions (and fifo's window staging) ran on the copy engine in end_tiers().
    const double dma_after = tiers_ ? tiers_->copy_engine().cpu_s() - tdma0 - dma_read : 0.0;
    en[5] -= dma_after;
    en[9] = dma_read;
    en[10] = dma_install + dma_after;
    if (tiers_) {  // another thread's work for this stream: reported beside step_s, not in it
        const double prep = tiers_->host_prepare_cpu_s();
        en[8] = prep - host_prep_s_;
        host_prep_s_ = prep;
    }
    stats.emu_s = 0;
    for (const double x : st) stats.emu_s += x;
    stats.step_s = t1 - t0;
    stats.fcc_s = fcc_ ? time_fcc(luma, fi.fp) : -1;
    stats.reused_region.assign(g.regions, false);
    stats.reused = 0;
    for (std::uint32_t r = 0; r < g.regions; r++)
        if (choice[r] || installed[r]) {
            stats.reused_region[r] = true;
            stats.reused++;
        }
    t_++;
    return out_logits;
}

StreamRunner::StreamRunner(ScriptedModel& model, std::shared_ptr<KvAllocator> alloc,
                           const RunnerOptions& options)
    : impl_(std::make_unique<Impl>(model, std::move(alloc), options)) {}

StreamRunner::~StreamRunner() = default;

std::vector<float> StreamRunner::step(const LumaView& luma, std::span<const float> tokens,
                                      std::span<const std::int64_t> q_region,
                                      std::span<const std::int64_t> q_target, StepStats& stats) {
    return impl_->step(luma, tokens, q_region, q_target, stats);
}

std::size_t StreamRunner::distinct_blocks() const noexcept {
    return impl_->pinned_.size();
}

std::uint64_t StreamRunner::cache_tokens() const noexcept {
    return std::uint64_t{impl_->t_} * impl_->model_.geometry().visual;
}

std::uint32_t StreamRunner::frames() const noexcept {
    return impl_->t_;
}

const ReuseCounters* StreamRunner::counters() const noexcept {
    return impl_->policy_ ? &impl_->policy_->counters() : nullptr;
}

const KvTiers* StreamRunner::tiers() const noexcept {
    return impl_->tiers_ ? &*impl_->tiers_ : nullptr;
}

void StreamRunner::close() {
    impl_->close();
}

}  // namespace vrex::lcp
