#include "native_load.hpp"

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vrex::lcp {

namespace {

class Params {
  public:
    explicit Params(const torch::jit::Module& m) {
        for (const auto& p : m.named_parameters(true)) t_.emplace(p.name, p.value);
        for (const auto& b : m.named_buffers(true)) t_.emplace(b.name, b.value);
    }

    torch::Tensor get(const std::string& name, std::vector<std::int64_t> shape) const {
        const auto it = t_.find(name);
        if (it == t_.end()) throw std::runtime_error("vrex native decoder: the module has no " + name);
        const torch::Tensor t = it->second.detach().to(torch::kFloat32).contiguous();
        if (t.sizes().vec() != shape)
            throw std::runtime_error("vrex native decoder: " + name + " is " + shape_of(t.sizes().vec()) +
                                     ", the geometry says " + shape_of(shape));
        return t;
    }

    std::int64_t size(const std::string& name, std::int64_t dim) const {
        const auto it = t_.find(name);
        if (it == t_.end() || it->second.dim() <= dim)
            throw std::runtime_error("vrex native decoder: the module has no " + name + " of " +
                                     std::to_string(dim + 1) + " dimensions");
        return it->second.size(dim);
    }

    // As stored (row-major).
    std::vector<float> plain(const std::string& name, std::vector<std::int64_t> shape) const {
        return values(get(name, std::move(shape)));
    }

    // A linear map's weight [out, in] stored [in, out].
    std::vector<float> transposed(const std::string& name, std::int64_t out, std::int64_t in) const {
        return values(get(name, {out, in}).t().contiguous());
    }

  private:
    static std::vector<float> values(const torch::Tensor& t) {
        const float* p = t.data_ptr<float>();
        return {p, p + t.numel()};
    }
    static std::string shape_of(const std::vector<std::int64_t>& s) {
        std::string o = "[";
        for (std::size_t i = 0; i < s.size(); i++) o += (i ? ", " : "") + std::to_string(s[i]);
        return o + "]";
    }
    std::map<std::string, torch::Tensor> t_;
};

std::uint32_t positive(std::int64_t v, const char* what) {
    if (v <= 0)
        throw std::runtime_error(std::string("vrex native decoder: the config's ") + what +
                                 " is not positive");
    return static_cast<std::uint32_t>(v);
}

}  // namespace

NativeWeights native_weights(const torch::jit::Module& step_module) {
    const torch::jit::Module d = step_module.attr("d").toModule();
    const auto cfg = d.attr("c").toObject();
    auto field = [&](const char* name) { return positive(cfg->getAttr(name).toInt(), name); };
    NativeWeights w;
    NativeConfig& c = w.c;
    c.feat_dim = field("feat_dim");
    c.d_model = field("d_model");
    c.layers = field("layers");
    c.heads = field("heads");
    c.kv_heads = field("kv_heads");
    c.head_dim = field("head_dim");
    c.ffn = field("ffn");
    c.regions = field("regions");
    c.tokens_per_region = field("tokens_per_region");
    c.codes = field("codes");
    c.window = field("window");
    c.question_reach = static_cast<std::uint32_t>(cfg->getAttr("question_reach").toInt());
    c.rope_base = cfg->getAttr("rope_base").toDouble();
    c.read_layer = static_cast<std::uint32_t>(d.attr("read_layer").toInt());
    c.norm_eps = static_cast<float>(d.attr("norm").toModule().attr("eps").toDouble());
    const Params p(step_module);
    const std::int64_t fd = c.feat_dim, dm = c.d_model, a = std::int64_t{c.heads} * c.head_dim,
                       kva = std::int64_t{c.kv_heads} * c.head_dim, f = c.ffn, n = c.visual();
    w.rel_buckets = static_cast<std::uint32_t>(p.size("d.blocks.0.attn.rel", 1));
    c.hash_bits = static_cast<std::uint32_t>(p.size("planes", 0));
    w.embed_w = p.transposed("d.embed.weight", dm, fd);
    w.embed_b = p.plain("d.embed.bias", {dm});
    w.slot_embed = p.plain("d.slot_embed", {n, dm});
    w.question_embed = p.plain("d.question_embed", {c.regions, dm});
    for (std::uint32_t l = 0; l < c.layers; l++) {
        const std::string b = "d.blocks." + std::to_string(l) + ".";
        NativeWeights::Layer lw;
        lw.norm1 = p.plain(b + "norm1.weight", {dm});
        lw.norm2 = p.plain(b + "norm2.weight", {dm});
        lw.wq = p.transposed(b + "attn.wq.weight", a, dm);
        lw.wk = p.transposed(b + "attn.wk.weight", kva, dm);
        lw.wv = p.transposed(b + "attn.wv.weight", kva, dm);
        lw.wo = p.transposed(b + "attn.wo.weight", dm, a);
        // w1 and w3 read the same normed states: one product [d_model, 2*ffn], w1's columns first.
        const auto w1 = p.transposed(b + "w1.weight", f, dm), w3 = p.transposed(b + "w3.weight", f, dm);
        lw.w13.resize(static_cast<std::size_t>(dm * 2 * f));
        for (std::int64_t i = 0; i < dm; i++)
            for (std::int64_t j = 0; j < f; j++) {
                lw.w13[static_cast<std::size_t>(i * 2 * f + j)] = w1[static_cast<std::size_t>(i * f + j)];
                lw.w13[static_cast<std::size_t>(i * 2 * f + f + j)] = w3[static_cast<std::size_t>(i * f + j)];
            }
        lw.w2 = p.transposed(b + "w2.weight", dm, f);
        lw.rel = p.plain(b + "attn.rel", {c.heads, w.rel_buckets});
        lw.slot = p.plain(b + "attn.slot", {c.heads, c.regions, n});
        w.layers.push_back(std::move(lw));
    }
    w.norm = p.plain("d.norm.weight", {dm});
    w.head_w = p.transposed("d.head.weight", fd, dm);
    w.head_b = p.plain("d.head.bias", {fd});
    w.logit_scale = p.plain("d.logit_scale", {})[0];
    w.gate = p.plain("d.gate", {})[0];
    w.codebook_t = p.transposed("d.codebook", c.codes, fd);
    w.planes_t = p.transposed("planes", c.hash_bits, kva * c.tokens_per_region);
    return w;
}

}  // namespace vrex::lcp
