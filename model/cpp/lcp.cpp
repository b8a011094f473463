// vrex::lcp (lcp.hpp): the reuse decision and the KV ledger in C++, the math in TorchScript.
// Mirrors model/vrex/lcp.py step for step; GoogleTest (model/cpp/tests) holds the two equal.
#include "vrex/lcp.hpp"

#include <time.h>

#include <algorithm>
#include <bit>
#include <utility>

namespace vrex::lcp {

namespace {

[[noreturn]] void fail(const std::string& what, std::error_code ec) {
    throw Error(what + ": " + ec.message() + " (" + ec.category().name() + " " + std::to_string(ec.value()) +
                ")");
}

template <class T>
T take(Result<T> r, const std::string& what) {
    if (!r) fail(what, r.error());
    return std::move(*r);
}

double thread_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Geometry read_geometry(torch::jit::Module& m, const std::string& path) {
    const auto g = m.get_method("geometry")({}).toIntVector();
    if (g.size() != 8 ||
        std::any_of(g.begin(), g.end(), [](std::int64_t v) { return v <= 0 || v > 1 << 20; }))
        throw Error(path + ": geometry() is not 8 positive sizes (not a vrex.export module?)");
    Geometry geo;
    geo.layers = static_cast<std::uint32_t>(g[0]);
    geo.kv_heads = static_cast<std::uint32_t>(g[1]);
    geo.head_dim = static_cast<std::uint32_t>(g[2]);
    geo.tokens_per_region = static_cast<std::uint32_t>(g[3]);
    geo.regions = static_cast<std::uint32_t>(g[4]);
    geo.window = static_cast<std::uint32_t>(g[5]);
    geo.codes = static_cast<std::uint32_t>(g[6]);
    geo.feat_dim = static_cast<std::uint32_t>(g[7]);
    return geo;
}

}  // namespace

Session::Session(Key, torch::jit::Module module, std::shared_ptr<KvAllocator> alloc, const Geometry& geo,
                 const Options& options)
    : module_(std::move(module)), alloc_(std::move(alloc)), geo_(geo), opts_(options) {}

std::shared_ptr<Session> Session::enable(const std::string& module_path, std::shared_ptr<Device> device,
                                         const Options& options) {
    if (!device) throw Error("vrex::lcp::Session::enable: no device");
    if (options.radius > 31 || options.guard_bits > 32)
        throw Error("vrex::lcp: radius must be 0..31 and guard_bits 0..32");
    torch::jit::Module m;
    try {
        m = torch::jit::load(module_path);
    } catch (const c10::Error& e) {
        throw Error("vrex::lcp: cannot load TorchScript module " + module_path + ": " +
                    e.what_without_backtrace());
    }
    m.eval();
    const Geometry geo = read_geometry(m, module_path);
    // The window ledger keeps a block for W frames after its last use; a device that ages blocks out
    // sooner would free memory the model still reads.
    const std::uint32_t zombie = device->info().zombie_frames;
    if (geo.window > zombie)
        throw Error("vrex::lcp: window " + std::to_string(geo.window) +
                    " frames exceeds the device's zombie threshold " + std::to_string(zombie) +
                    ": blocks would be evicted under the window");
    ModelGeometry g;
    g.layers = geo.layers;
    g.kv_heads = geo.kv_heads;
    g.head_dim = geo.head_dim;
    g.tokens_per_block = geo.tokens_per_region;
    g.dtype = DType::fp32;
    auto alloc = take(KvAllocator::create(std::move(device), g), "vrex::lcp: create KV allocator");
    return std::make_shared<Session>(Key{}, std::move(m), std::move(alloc), geo, options);
}

std::unique_ptr<StreamRunner> Session::stream() {
    return std::make_unique<StreamRunner>(shared_from_this(),
                                          take(alloc_->create_stream(), "vrex::lcp: create stream"));
}

torch::Tensor Session::view(const KvBlock& block, bool writable) const {
    const std::int64_t want = std::int64_t{geo_.layers} * 2 * geo_.kv_heads * geo_.tokens_per_region *
                              geo_.head_dim * static_cast<std::int64_t>(sizeof(float));
    if (static_cast<std::int64_t>(block.view.size()) != want)
        throw Error("vrex::lcp: block " + std::to_string(block.id) + " is " +
                    std::to_string(block.view.size()) + " B, the model needs " + std::to_string(want));
    if (writable && block.data.empty())
        throw Error("vrex::lcp: block " + std::to_string(block.id) +
                    " is shared (read-only); cannot prefill into it");
    // from_blob takes void*; a read-only block is only ever read (the module writes fresh blocks).
    // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast)
    void* p = writable ? static_cast<void*>(block.data.data()) : const_cast<std::byte*>(block.view.data());
    return torch::from_blob(p, {geo_.layers, 2, geo_.kv_heads, geo_.tokens_per_region, geo_.head_dim},
                            torch::TensorOptions().dtype(torch::kFloat32));
}

StreamRunner::StreamRunner(std::shared_ptr<Session> session, std::unique_ptr<Stream> stream)
    : s_(std::move(session)), st_(std::move(stream)) {}

const std::vector<KvBlock>& StreamRunner::last_frame() const {
    if (frames_.empty()) throw Error("vrex::lcp: no frame stepped yet");
    return frames_.back();
}

std::int64_t StreamRunner::computed_at(std::uint32_t block_id) const {
    const auto it = ledger_.find(block_id);
    return it == ledger_.end() ? -1 : std::int64_t{it->second.born};
}

std::vector<KvBlock> StreamRunner::candidates(std::uint32_t region, const Fingerprint& fp) {
    const Options& o = s_->options();
    std::vector<KvBlock> out;
    const Retrieval tmp = take(st_->retrieve_temporal(region, -1), "vrex::lcp: retrieve_temporal");
    if (tmp.hit && (!o.fcc || fp.distance(tmp.fp) <= o.radius)) out.push_back(tmp.block);
    if (o.similar && o.fcc) {
        const Retrieval sim = take(st_->retrieve_similar(region, fp, o.radius, Scope::stream, true),
                                   "vrex::lcp: retrieve_similar");
        if (sim.hit && (out.empty() || sim.block.id != out[0].id)) out.push_back(sim.block);
    }
    return out;
}

bool StreamRunner::guard(const KvBlock& cand, std::uint32_t hash) const {
    const Options& o = s_->options();
    const auto it = ledger_.find(cand.id);
    // A block this runner did not compute, or an id the device recycled since: never trusted.
    if (it == ledger_.end() || !it->second.hashed || it->second.block.generation != cand.generation)
        return false;
    if (o.max_age != 0 && t_ - it->second.born > o.max_age) return false;
    return static_cast<std::uint32_t>(std::popcount(it->second.hash ^ hash)) <= o.guard_bits;
}

StepResult StreamRunner::step(const LumaView& luma, const torch::Tensor& tokens) {
    const Geometry& g = s_->geometry();
    const Options& o = s_->options();
    const std::int64_t visual = std::int64_t{g.regions} * g.tokens_per_region;
    if (tokens.dim() != 2 || tokens.size(0) != visual || tokens.size(1) != g.feat_dim ||
        tokens.scalar_type() != torch::kFloat32)
        throw Error("vrex::lcp: tokens must be a [" + std::to_string(visual) + ", " +
                    std::to_string(g.feat_dim) + "] float32 tensor");
    torch::NoGradGuard no_grad;
    torch::jit::Module& m = s_->module();
    const FrameInfo info = take(st_->begin_frame(luma), "vrex::lcp: begin_frame");

    StepResult res;
    StepStats& fs = res.stats;
    fs.reused_region.assign(g.regions, false);
    const double t0 = thread_seconds();
    const torch::Tensor vis = m.get_method("embed_frame")({tokens}).toTensor();
    std::vector<std::uint32_t> hashes(g.regions, 0);
    std::vector<KvBlock> blocks(g.regions);
    if (o.reuse) {
        const torch::Tensor h = m.get_method("key_hash")({vis}).toTensor();
        for (std::uint32_t r = 0; r < g.regions; ++r)
            hashes[r] = static_cast<std::uint32_t>(h[r].item<std::int64_t>());
    }
    double hal_s = 0;  // HAL calls are not the model's prefill: taken out of prefill_s
    const double h0 = thread_seconds();
    std::vector<std::int64_t> fresh;
    for (std::uint32_t r = 0; r < g.regions; ++r) {
        bool reused = false;
        if (o.reuse) {
            for (const KvBlock& cand : candidates(r, info.fp)) {
                if (!guard(cand, hashes[r])) continue;
                const Result<void> rr = st_->reuse(r, cand);
                if (!rr && rr.error() == make_error_code(errc::stale_handle)) {
                    ++fs.stale_fallbacks;  // released under us: recompute the region
                    continue;
                }
                if (!rr) fail("vrex::lcp: reuse of block " + std::to_string(cand.id), rr.error());
                blocks[r] = ledger_.at(cand.id).block;
                reused = true;
                break;
            }
        }
        if (!reused) {
            blocks[r] = take(st_->allocate(r), "vrex::lcp: allocate region " + std::to_string(r));
            fresh.push_back(r);
            Entry e;
            e.block = blocks[r];
            e.born = t_;
            e.hash = hashes[r];
            e.hashed = o.reuse;
            ledger_[blocks[r].id] = e;
        }
        ledger_.at(blocks[r].id).last_ref = t_;
        fs.reused_region[r] = reused;
    }
    hal_s += thread_seconds() - h0;
    fs.reused = g.regions - static_cast<std::uint32_t>(fresh.size());

    std::vector<torch::Tensor> cur(g.regions);
    for (std::uint32_t r = 0; r < g.regions; ++r) cur[r] = s_->view(blocks[r], !fs.reused_region[r]);
    c10::List<torch::Tensor> kv;
    for (const auto& fr : views_)
        for (const auto& v : fr) kv.push_back(v);
    for (const auto& v : cur) kv.push_back(v);
    c10::List<std::int64_t> fresh_list(fresh);
    res.logits = m.forward({vis, fresh_list, kv, static_cast<std::int64_t>(views_.size())}).toTensor();
    fs.prefill_s = thread_seconds() - t0 - hal_s;
    fs.tokens = static_cast<std::uint32_t>(fresh.size() * g.tokens_per_region + g.regions);

    frames_.push_back(std::move(blocks));
    views_.push_back(std::move(cur));
    if (frames_.size() == g.window) {  // the oldest frame leaves the window after this step
        frames_.pop_front();
        views_.pop_front();
        const std::int64_t leaving = std::int64_t{t_} - g.window + 1;
        for (auto it = ledger_.begin(); it != ledger_.end();) {
            if (std::int64_t{it->second.last_ref} <= leaving) {
                const Result<void> rel = st_->release(it->second.block);
                if (!rel) fail("vrex::lcp: release of block " + std::to_string(it->first), rel.error());
                it = ledger_.erase(it);
            } else {
                ++it;
            }
        }
    }
    take(st_->end_frame(), "vrex::lcp: end_frame");
    ++t_;
    return res;
}

}  // namespace vrex::lcp
