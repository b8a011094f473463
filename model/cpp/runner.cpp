#include "vrex/lcp/runner.hpp"

#include <time.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

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

double thread_cpu_s() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <class T>
T take(Result<T> r, const std::string& what) {
    if (!r) throw std::runtime_error("vrex runner: " + what + ": " + r.error_message());
    return std::move(*r);
}

void check(const Result<void>& r, const std::string& what) {
    if (!r) throw std::runtime_error("vrex runner: " + what + ": " + r.error_message());
}

}  // namespace

ModelGeometry Geometry::hal() const {
    ModelGeometry g;
    g.layers = layers;
    g.kv_heads = kv_heads;
    g.head_dim = head_dim;
    g.tokens_per_block = tokens_per_region;
    g.dtype = DType::fp32;
    return g;
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

ScriptedModel::ScriptedModel(const std::string& path) : m_(torch::jit::load(path)) {
    m_.eval();
    const auto g = m_.run_method("geometry").toIntVector();
    if (g.size() != 8)
        throw std::runtime_error("vrex runner: " + path + ": geometry() has " + std::to_string(g.size()) +
                                 " fields, not 8");
    for (const auto v : g)
        if (v <= 0) throw std::runtime_error("vrex runner: " + path + ": a geometry field is not positive");
    auto u = [&](std::size_t i) { return static_cast<std::uint32_t>(g[i]); };
    geo_ = {u(0), u(1), u(2), u(3), u(4), u(5), u(6), u(7)};
    if (geo_.regions * geo_.tokens_per_region != geo_.visual)
        throw std::runtime_error("vrex runner: " + path + ": regions x tokens_per_region != visual tokens");
}

StreamRunner::StreamRunner(ScriptedModel& model, std::shared_ptr<KvAllocator> alloc, const RunnerOptions& o)
    : model_(model), alloc_(std::move(alloc)) {
    const Geometry& g = model_.geometry();
    const std::uint64_t need =
        std::uint64_t{g.layers} * 2 * g.kv_heads * g.tokens_per_region * g.head_dim * 4;
    if (alloc_->block_bytes() != need)
        throw std::runtime_error("vrex runner: the allocator's blocks are " +
                                 std::to_string(alloc_->block_bytes()) + " B, the model needs " +
                                 std::to_string(need));
    st_ = take(alloc_->create_stream(), "create stream");
    if (o.policy == Policy::vrex)
        policy_.emplace(take(ReusePolicy::create(o.reuse, g.regions), "reuse policy"));
    if (o.profile_fcc) fcc_ = std::make_unique<FccProbe>();
}

double StreamRunner::time_fcc(const LumaView& luma, const Fingerprint& device_fp) {
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

StreamRunner::~StreamRunner() {
    // Destruction must not throw; the stream's end frees the blocks anyway.
    if (!closed_ && st_) (void)unpin_all(*st_, pinned_);
}

void StreamRunner::close() {
    if (closed_) return;
    closed_ = true;
    check(unpin_all(*st_, pinned_), "close");
    pinned_.clear();
    k_ = v_ = torch::Tensor();
}

torch::Tensor StreamRunner::view(const KvBlock& b) const {
    const Geometry& g = model_.geometry();
    // A published or shared block is read-only (hal.hpp): Decoder.step only reads reused blocks and
    // writes only the fresh ones this stream just allocated (their @data is set).
    auto* p = b.data.empty() ? const_cast<std::byte*>(b.view.data()) : b.data.data();  // NOLINT
    return torch::from_blob(p, {g.layers, 2, g.kv_heads, g.tokens_per_region, g.head_dim}, torch::kFloat32);
}

void StreamRunner::reserve() {
    const Geometry& g = model_.geometry();
    const std::int64_t n0 = std::int64_t{t_} * g.visual, n1 = n0 + g.visual;
    if (k_.defined() && k_.size(2) >= n1) return;
    const std::int64_t cap = std::max<std::int64_t>(64 * g.visual, 2 * n1);
    auto k = torch::empty({g.layers, g.kv_heads, cap, g.head_dim});
    auto v = torch::empty_like(k);
    if (k_.defined()) {
        k.narrow(2, 0, n0).copy_(k_.narrow(2, 0, n0));
        v.narrow(2, 0, n0).copy_(v_.narrow(2, 0, n0));
    }
    k_ = std::move(k);
    v_ = std::move(v);
}

torch::Tensor StreamRunner::step(const LumaView& luma, const torch::Tensor& tokens,
                                 const torch::Tensor& q_region, const torch::Tensor& q_target,
                                 StepStats& stats) {
    if (closed_) throw std::runtime_error("vrex runner: the stream runner is closed");
    const Geometry& g = model_.geometry();
    if (tokens.dim() != 2 || tokens.size(0) != g.visual || tokens.size(1) != g.feat_dim)
        throw std::invalid_argument("vrex runner: tokens must be [" + std::to_string(g.visual) + ", " +
                                    std::to_string(g.feat_dim) + "]");
    if (q_target.numel() &&
        (q_target.max().item<std::int64_t>() > t_ || q_target.min().item<std::int64_t>() < 0))
        throw std::invalid_argument("vrex runner: question targets must be frames 0.." + std::to_string(t_));
    torch::NoGradGuard no_grad;
    torch::jit::Module& m = model_.module();
    auto& st = stats.stage_s;
    st.fill(0);
    const double t0 = thread_cpu_s();
    const FrameInfo fi = take(st_->begin_frame(luma), "begin_frame");
    double e0 = thread_cpu_s();
    st[0] = e0 - t0;
    torch::Tensor vis;
    std::vector<std::uint32_t> hashes(g.regions, 0);
    if (policy_) {
        auto out = m.run_method("prepare", tokens).toTuple();
        vis = out->elements()[0].toTensor();
        const torch::Tensor h = out->elements()[1].toTensor().contiguous();
        for (std::uint32_t r = 0; r < g.regions; r++)
            hashes[r] = static_cast<std::uint32_t>(h[r].item<std::int64_t>());
    } else {
        vis = m.run_method("embed", tokens).toTensor();
    }
    // choose() in its halves, so the lookup batch is timed apart from the guard.
    e0 = thread_cpu_s();
    FrameChoice choice(g.regions);
    if (policy_) {
        auto got = st_->retrieve_batch(policy_->queries(fi.fp));
        if (!got) throw std::runtime_error("vrex runner: choose: candidates: " + got.error_message());
        const double e1 = thread_cpu_s();
        st[1] = e1 - e0;
        choice = take(policy_->decide(*got, fi.fp, hashes, t_), "choose");
        e0 = thread_cpu_s();
        st[2] = e0 - e1;
    }
    const FrameBlocks fb = take(apply_choice(*st_, choice), "apply");
    double e1 = thread_cpu_s();
    st[3] = e1 - e0;
    pinned_.insert(pinned_.end(), fb.fresh_blocks.begin(), fb.fresh_blocks.end());
    c10::List<torch::Tensor> cur;
    for (const KvBlock& b : fb.blocks) cur.push_back(view(b));
    c10::List<std::int64_t> fresh;
    for (std::uint32_t r : fb.fresh) fresh.push_back(r);
    reserve();
    torch::Tensor logits =
        m.forward({tokens, vis, fresh, cur, k_, v_, static_cast<std::int64_t>(t_), q_region, q_target})
            .toTensor();
    e0 = thread_cpu_s();
    if (policy_) {
        std::vector<std::uint32_t> fh;
        fh.reserve(fb.fresh.size());
        for (std::uint32_t r : fb.fresh) fh.push_back(hashes[r]);
        check(policy_->computed(fb.fresh_blocks, fh, t_), "computed");
    }
    e1 = thread_cpu_s();
    st[4] = e1 - e0;
    (void)take(st_->end_frame(), "end_frame");
    const double t1 = thread_cpu_s();
    st[5] = t1 - e1;
    stats.emu_s = 0;
    for (const double x : st) stats.emu_s += x;
    stats.step_s = t1 - t0;
    stats.fcc_s = fcc_ ? time_fcc(luma, fi.fp) : -1;
    stats.reused_region.assign(g.regions, false);
    stats.reused = 0;
    for (std::uint32_t r = 0; r < g.regions; r++)
        if (choice[r]) {
            stats.reused_region[r] = true;
            stats.reused++;
        }
    t_++;
    return logits;
}

}  // namespace vrex::lcp
