// vrex::lcp::NativeDecoder (see its header): decoder.py's embed_frame, layer0_keys + key hash,
// prefill and ask as loops over the kernels of native_kernels.hpp.
#include "vrex/lcp/native_decoder.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "native_kernels.hpp"

namespace vrex::lcp {

namespace nk = native;

struct NativeScratch::Impl {
    // RoPE tables of distances 0 .. rope_pos - 1: cos then sin, head_dim / 2 each, per distance; and
    // the same for the negative distances (a question's reach has frames after its target).
    std::vector<float> rope, rope_neg;
    std::size_t rope_pos = 0, rope_neg_pos = 0;
    std::vector<float> x, h, q, k, v, o, g, gg, zf, scores, read0, qrot, kt, vt;
    std::vector<nk::KeyRun> runs;          // the reads' runs of key rows: per question, or the window's
    std::vector<std::size_t> run_start;    // per question, its first run (and one past the last)
    std::vector<std::int64_t> key_frames;  // per question, the frames it reads (its rotated queries)
    std::vector<std::size_t> frame_start;  // per question, its first frame (and one past the last)
    std::vector<std::uint32_t> key_bias;   // per key: bucket | slot << 8
    std::vector<std::size_t> key_count;
    std::vector<char> fresh;

    const float* rope_at(const NativeConfig& c, std::size_t pos) {
        const std::size_t half = c.head_dim / 2;
        if (pos >= rope_pos) {
            const std::size_t want = std::max(pos + 1, 2 * rope_pos);
            rope.resize(want * 2 * half);
            for (std::size_t p = rope_pos; p < want; p++)
                for (std::size_t i = 0; i < half; i++) {
                    // decoder.rope_tables: base ** (-(2i) / d), angle in double, then fp32.
                    const double inv = std::pow(c.rope_base, -static_cast<double>(i) * 2.0 / c.head_dim);
                    const double ang = static_cast<double>(p) * inv;
                    rope[p * 2 * half + i] = static_cast<float>(std::cos(ang));
                    rope[p * 2 * half + half + i] = static_cast<float>(std::sin(ang));
                }
            rope_pos = want;
        }
        return rope.data() + pos * 2 * half;
    }

    // The rotation by distance @d (R(-d): the same cosines, the sines negated, exactly). A pointer
    // stays valid until a larger distance is asked for: callers ask for their largest first.
    const float* rope_rel(const NativeConfig& c, std::int64_t d) {
        if (d >= 0) return rope_at(c, static_cast<std::size_t>(d));
        const std::size_t half = c.head_dim / 2, m = static_cast<std::size_t>(-d);
        if (m >= rope_neg_pos) {
            rope_at(c, m);
            rope_neg.resize(rope_pos * 2 * half);
            for (std::size_t p = rope_neg_pos; p < rope_pos; p++)
                for (std::size_t i = 0; i < half; i++) {
                    rope_neg[p * 2 * half + i] = rope[p * 2 * half + i];
                    rope_neg[p * 2 * half + half + i] = -rope[p * 2 * half + half + i];
                }
            rope_neg_pos = rope_pos;
        }
        return rope_neg.data() + m * 2 * half;
    }
};

NativeScratch::NativeScratch() : impl_(std::make_unique<Impl>()) {}
NativeScratch::~NativeScratch() = default;
NativeScratch::NativeScratch(NativeScratch&&) noexcept = default;
NativeScratch& NativeScratch::operator=(NativeScratch&&) noexcept = default;

namespace {

// Fresh tokens below which a prefill's attention reads the window's blocks in place (attend_runs)
// instead of gathering the window frames' keys and values into tiles for the matmul kernel.
constexpr std::size_t kFewRows = 16;

// Literal messages: the checks run per key, so nothing is built unless one fails.
void need(bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("vrex native decoder: ") + what);
}

void need(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("vrex native decoder: " + what);
}

[[noreturn]] void unreadable(const char* reader, std::size_t frame, std::size_t region) {
    throw std::invalid_argument(std::string("vrex native decoder: ") + reader + ": frame " +
                                std::to_string(frame) + " region " + std::to_string(region) +
                                " is not readable (its block left the device, no copy staged)");
}

void sized(const std::vector<float>& v, std::size_t n, const char* what) {
    need(v.size() == n,
         std::string(what) + " has " + std::to_string(v.size()) + " values, not " + std::to_string(n));
}

}  // namespace

NativeDecoder::NativeDecoder(NativeWeights weights) : w_(std::move(weights)) {
    const NativeConfig& c = w_.c;
    need(c.feat_dim && c.d_model && c.layers && c.heads && c.kv_heads && c.head_dim && c.ffn && c.regions &&
             c.tokens_per_region && c.codes && c.window && c.hash_bits && c.hash_bits <= 32,
         "a geometry field is 0 (or the hash is wider than 32 bits)");
    need(c.heads % c.kv_heads == 0 && c.head_dim % 2 == 0,
         "heads must group over kv_heads, head_dim be even");
    need(c.read_layer < c.layers, "read_layer past the last layer");
    need(c.kv_heads * c.head_dim >= c.feat_dim,
         "layer-0 values hold the features: kv_heads x head_dim >= feat_dim");
    need(w_.rel_buckets == 17, "the distance bias has 17 buckets (decoder.REL_BUCKETS)");
    const std::size_t d = c.d_model, a = std::size_t{c.heads} * c.head_dim,
                      kva = std::size_t{c.kv_heads} * c.head_dim;
    sized(w_.embed_w, std::size_t{c.feat_dim} * d, "embed.weight");
    sized(w_.embed_b, d, "embed.bias");
    sized(w_.slot_embed, std::size_t{c.visual()} * d, "slot_embed");
    sized(w_.question_embed, std::size_t{c.regions} * d, "question_embed");
    need(w_.layers.size() == c.layers, "one weight set per layer");
    for (const auto& l : w_.layers) {
        sized(l.norm1, d, "norm1");
        sized(l.norm2, d, "norm2");
        sized(l.wq, d * a, "wq");
        sized(l.wk, d * kva, "wk");
        sized(l.wv, d * kva, "wv");
        sized(l.wo, a * d, "wo");
        sized(l.w13, d * 2 * c.ffn, "w1|w3");
        sized(l.w2, std::size_t{c.ffn} * d, "w2");
        sized(l.rel, std::size_t{c.heads} * w_.rel_buckets, "rel");
        sized(l.slot, std::size_t{c.heads} * c.regions * c.visual(), "slot");
    }
    sized(w_.norm, d, "norm");
    sized(w_.head_w, d * c.feat_dim, "head.weight");
    sized(w_.head_b, c.feat_dim, "head.bias");
    sized(w_.codebook_t, std::size_t{c.feat_dim} * c.codes, "codebook");
    sized(w_.planes_t, kva * c.tokens_per_region * c.hash_bits, "planes");
}

void NativeDecoder::embed(std::span<const float> tokens, std::span<float> vis) const {
    const NativeConfig& c = w_.c;
    const std::size_t n = c.visual(), d = c.d_model;
    need(tokens.size() == n * c.feat_dim && vis.size() == n * d,
         "embed: tokens [visual, feat_dim] -> [visual, d_model]");
    nk::matmul(tokens.data(), c.feat_dim, n, w_.embed_w.data(), c.feat_dim, d, vis.data(), d, false);
    for (std::size_t r = 0; r < n; r++) {
        float* y = vis.data() + r * d;
        const float* se = w_.slot_embed.data() + r * d;
        for (std::size_t i = 0; i < d; i++) y[i] = y[i] + w_.embed_b[i] + se[i];
    }
}

void NativeDecoder::prepare(NativeScratch& ss, std::span<const float> tokens, std::span<float> vis,
                            std::span<std::uint32_t> hashes, std::span<float> k0) const {
    const NativeConfig& c = w_.c;
    auto& s = *ss.impl_;
    need(hashes.size() == c.regions, "prepare: one hash per region");
    embed(tokens, vis);
    const std::size_t n = c.visual(), d = c.d_model, hd = c.head_dim, kva = std::size_t{c.kv_heads} * hd,
                      tpr = c.tokens_per_region, per = kva * tpr;
    s.h.resize(n * d);
    s.k.resize(n * kva);
    s.q.resize(c.regions * per);
    s.o.resize(c.regions * c.hash_bits);
    nk::rms_norm(vis.data(), d, n, w_.layers[0].norm1.data(), d, c.norm_eps, s.h.data(), d);
    nk::matmul(s.h.data(), d, n, w_.layers[0].wk.data(), d, kva, s.k.data(), kva, false);
    // script.key_hashes: a region's keys as [kv_heads, tokens, head_dim], flattened.
    for (std::size_t r = 0; r < c.regions; r++)
        for (std::size_t kv = 0; kv < c.kv_heads; kv++)
            for (std::size_t i = 0; i < tpr; i++)
                std::memcpy(s.q.data() + r * per + (kv * tpr + i) * hd,
                            s.k.data() + (r * tpr + i) * kva + kv * hd, hd * sizeof(float));
    if (!k0.empty()) {
        need(k0.size() == s.q.size(), "prepare: k0 [regions, kv_heads, tokens_per_region, head_dim]");
        std::memcpy(k0.data(), s.q.data(), s.q.size() * sizeof(float));
    }
    nk::matmul(s.q.data(), per, c.regions, w_.planes_t.data(), per, c.hash_bits, s.o.data(), c.hash_bits,
               false);
    for (std::size_t r = 0; r < c.regions; r++) {
        std::uint32_t hv = 0;
        for (std::size_t b = 0; b < c.hash_bits; b++)
            if (s.o[r * c.hash_bits + b] > 0) hv |= std::uint32_t{1} << b;
        hashes[r] = hv;
    }
}

void NativeDecoder::prefill(NativeScratch& ss, std::span<const float> z, std::span<const float> vis,
                            std::span<const std::uint32_t> fresh, std::span<float* const> blocks,
                            const KvPages& pages, std::uint32_t t) const {
    const NativeConfig& c = w_.c;
    auto& s = *ss.impl_;
    const std::size_t n = c.visual(), d = c.d_model, hd = c.head_dim, half = hd / 2, kvh = c.kv_heads,
                      kva = kvh * hd, a = std::size_t{c.heads} * hd, tpr = c.tokens_per_region,
                      rep = c.heads / c.kv_heads, f = c.ffn, R = c.regions;
    need(z.size() == n * c.feat_dim && vis.size() == n * d,
         "prefill: z [visual, feat_dim], vis [visual, d_model]");
    need(blocks.size() == R, "prefill: one block per region");
    need(pages.blocks.size() >= (std::size_t{t} + 1) * R, "prefill: the pages hold fewer than t + 1 frames");
    for (std::size_t r = 0; r < R; r++)
        need(blocks[r] && pages.blocks[std::size_t{t} * R + r] == blocks[r],
             "prefill: frame t's pages are its blocks");
    s.fresh.assign(R, 0);
    for (std::size_t i = 0; i < fresh.size(); i++) {
        need(fresh[i] < R && (i == 0 || fresh[i] > fresh[i - 1]),
             "prefill: fresh regions ascending, < regions");
        s.fresh[fresh[i]] = 1;
    }
    // The reused regions are their blocks already: nothing to do for them.
    const std::size_t nf = fresh.size() * tpr;
    if (nf == 0) return;
    const std::size_t w0 = t + 1 >= c.window ? t + 1 - c.window : 0;  // first frame of the visual window
    const std::size_t nwin = std::size_t{t} + 1 - w0, nkeys = nwin * n;
    for (std::size_t fr = w0; fr <= t; fr++)
        for (std::size_t r = 0; r < R; r++)
            if (!pages.blocks[fr * R + r]) unreadable("prefill's window", fr, r);
    // The largest distances first (both signs): the tables' pointers stay valid below.
    s.rope_rel(c, -static_cast<std::int64_t>(t - w0));
    s.x.resize(nf * d);
    s.h.resize(nf * d);
    s.q.resize(nf * a);
    s.k.resize(nf * kva);
    s.v.resize(nf * kva);
    s.o.resize(nf * a);
    s.g.resize(nf * 2 * f);
    s.gg.resize(nf * f);
    s.zf.assign(nf * kva, 0.0F);
    for (std::size_t j = 0; j < nf; j++) {
        const std::size_t tok = fresh[j / tpr] * tpr + j % tpr;
        std::memcpy(s.x.data() + j * d, vis.data() + tok * d, d * sizeof(float));
        std::memcpy(s.zf.data() + j * kva, z.data() + tok * c.feat_dim,
                    c.feat_dim * sizeof(float));  // value0
    }
    s.scores.resize(std::max(s.scores.size(), nf * nkeys));
    const bool few = nf < kFewRows;
    if (few) {  // the window's runs: every region's block of every window frame, whole
        s.runs.clear();
        for (std::size_t fr = w0; fr <= t; fr++)
            for (std::size_t r = 0; r < R; r++)
                s.runs.push_back({pages.blocks[fr * R + r], 0, static_cast<std::uint32_t>(tpr),
                                  static_cast<std::uint32_t>(fr - w0)});
        s.qrot.resize(nwin * nf * hd);
    } else {
        s.kt.resize(nwin * hd * n);
        s.vt.resize(nwin * n * hd);
    }
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    for (std::size_t l = 0; l < c.layers; l++) {
        const NativeWeights::Layer& lw = w_.layers[l];
        nk::rms_norm(s.x.data(), d, nf, lw.norm1.data(), d, c.norm_eps, s.h.data(), d);
        nk::matmul(s.h.data(), d, nf, lw.wk.data(), d, kva, s.k.data(), kva, false);
        const bool value0 = l == 0 || l == c.read_layer;
        if (!value0) nk::matmul(s.h.data(), d, nf, lw.wv.data(), d, kva, s.v.data(), kva, false);
        const float* vsrc = value0 ? s.zf.data() : s.v.data();
        // The fresh rows, once, into their blocks (pre-rotation: what every reader expects).
        for (std::size_t j = 0; j < nf; j++) {
            const std::size_t r = fresh[j / tpr], i = j % tpr;
            for (std::size_t kv = 0; kv < kvh; kv++) {
                std::memcpy(blocks[r] + (((l * 2) * kvh + kv) * tpr + i) * hd, s.k.data() + j * kva + kv * hd,
                            hd * sizeof(float));
                std::memcpy(blocks[r] + (((l * 2 + 1) * kvh + kv) * tpr + i) * hd, vsrc + j * kva + kv * hd,
                            hd * sizeof(float));
            }
        }
        if (l + 1 == c.layers) break;  // the last layer's visual outputs feed nothing
        // Windowed attention over frames w0 .. t (every key visible), grouped-query. The queries are
        // scaled here; below, each pair of query and window frame is rotated by its distance (t -
        // frame): the query's copy per frame (few rows) or the frame's key tile (the tiled path).
        nk::matmul(s.h.data(), d, nf, lw.wq.data(), d, a, s.q.data(), a, false);
        for (float& x : s.q) x *= scale;
        for (std::size_t kv = 0; kv < kvh; kv++) {
            const std::size_t koff = ((l * 2) * kvh + kv) * tpr * hd,
                              voff = ((l * 2 + 1) * kvh + kv) * tpr * hd;
            // A few fresh tokens (a V-Rex frame computes ~1 region): a head's tokens read the window's
            // blocks in place together (one attend_runs call, each key loaded once for all of them),
            // as a question does alone.
            for (std::size_t hh = kv * rep; few && hh < (kv + 1) * rep; hh++) {
                for (std::size_t fr = w0; fr <= t; fr++) {  // [frame][token]: the runs' query groups
                    const float* rope = s.rope_at(c, t - fr);
                    for (std::size_t j = 0; j < nf; j++) {
                        float* qr = s.qrot.data() + ((fr - w0) * nf + j) * hd;
                        std::memcpy(qr, s.q.data() + j * a + hh * hd, hd * sizeof(float));
                        nk::rotate(qr, rope, rope + half, half);
                    }
                }
                std::fill_n(s.scores.data(), nf * nkeys, 0.0F);
                nk::attend_runs(s.qrot.data(), nf, koff, voff, hd, s.runs.data(), s.runs.size(), nkeys,
                                s.scores.data(), s.o.data() + hh * hd, a);
            }
            if (few) continue;
            // More: the scores against each window frame's keys and the weighted sum over its values
            // are products of the matmul kernel, a multiply-add costing the same wherever it is. Its
            // operands are tiles, made per step (hd x visual values each, 1 / fresh rows of the
            // products that read them): the frame's values gathered, its keys transposed and rotated
            // on the way by R(frame - t) -- <R(t - f) q, k> = <q, R(f - t) k>, the identity the
            // few-rows path uses from the query's side -- so that no query is copied and rotated per
            // frame (a rotation per query and frame where the tile's rotation comes with its copy).
            for (std::size_t fr = w0; fr <= t; fr++) {
                float* kt = s.kt.data() + (fr - w0) * hd * n;
                float* vt = s.vt.data() + (fr - w0) * n * hd;
                const float* rope =
                    s.rope_rel(c, static_cast<std::int64_t>(fr) - static_cast<std::int64_t>(t));
                const float *cs = rope, *sn = rope + half;
                for (std::size_t r = 0; r < R; r++) {
                    const float* blk = pages.blocks[fr * R + r];
                    for (std::size_t i = 0; i < tpr; i++) {
                        const std::size_t m = r * tpr + i;
                        const float* kr = blk + koff + i * hd;
                        for (std::size_t e = 0; e < half; e++) {  // rotate()'s arithmetic
                            const float x1 = kr[e], x2 = kr[half + e];
                            kt[e * n + m] = x1 * cs[e] - x2 * sn[e];
                            kt[(half + e) * n + m] = x1 * sn[e] + x2 * cs[e];
                        }
                        std::memcpy(vt + m * hd, blk + voff + i * hd, hd * sizeof(float));
                    }
                }
            }
            for (std::size_t hh = kv * rep; hh < (kv + 1) * rep; hh++) {
                for (std::size_t fr = w0; fr <= t; fr++)
                    nk::matmul(s.q.data() + hh * hd, a, nf, s.kt.data() + (fr - w0) * hd * n, hd, n,
                               s.scores.data() + (fr - w0) * n, nkeys, false);
                for (std::size_t j = 0; j < nf; j++) nk::softmax(s.scores.data() + j * nkeys, nkeys);
                for (std::size_t fr = w0; fr <= t; fr++)
                    nk::matmul(s.scores.data() + (fr - w0) * n, nkeys, nf, s.vt.data() + (fr - w0) * n * hd,
                               n, hd, s.o.data() + hh * hd, a, fr > w0);
            }
        }
        nk::matmul(s.o.data(), a, nf, lw.wo.data(), a, d, s.x.data(), d, true);
        // SwiGLU MLP, residual.
        nk::rms_norm(s.x.data(), d, nf, lw.norm2.data(), d, c.norm_eps, s.h.data(), d);
        nk::matmul(s.h.data(), d, nf, lw.w13.data(), d, 2 * f, s.g.data(), 2 * f, false);
        nk::swiglu(s.g.data(), nf, f, s.gg.data());
        nk::matmul(s.gg.data(), f, nf, lw.w2.data(), f, d, s.x.data(), d, true);
    }
}

void NativeDecoder::ask(NativeScratch& ss, const KvPages& pages, std::uint32_t t,
                        std::span<const std::int64_t> q_region, std::span<const std::int64_t> q_target,
                        const QuestionRead* read, std::span<float> logits) const {
    const NativeConfig& c = w_.c;
    auto& s = *ss.impl_;
    const std::size_t nq = q_region.size(), n = c.visual(), d = c.d_model, hd = c.head_dim, half = hd / 2,
                      kvh = c.kv_heads, a = std::size_t{c.heads} * hd, rep = c.heads / c.kv_heads, f = c.ffn,
                      fd = c.feat_dim, tpr = c.tokens_per_region, R = c.regions;
    need(q_target.size() == nq && logits.size() == nq * c.codes,
         "ask: one target per question, [Q, codes] logits");
    need(pages.blocks.size() >= (std::size_t{t} + 1) * R, "ask: the pages hold fewer than t + 1 frames");
    for (std::size_t i = 0; i < nq; i++)
        need(q_region[i] >= 0 && q_region[i] < c.regions && q_target[i] >= 0 && q_target[i] <= t,
             "ask: question regions 0 .. regions - 1 about frames 0 .. t");
    // The keys each question reads, as runs of rows of their blocks (one per region of a frame read
    // whole; consecutive tokens of one block and frame merged), with their bias indices (bucket of
    // the frame distance, slot) and the frames they are in (one rotated query each).
    const std::size_t span = 2 * std::size_t{c.question_reach} + 1;
    const std::size_t cols = read ? read->cols : span * n;
    if (read)
        need(read->tokens.size() == nq * read->cols,
             "ask: q_read: one row per question, tokens of frames 0 .. t");
    s.key_bias.resize(nq * cols);
    s.key_count.assign(nq, 0);
    s.runs.clear();
    s.run_start.assign(1, 0);
    s.key_frames.clear();
    s.frame_start.assign(1, 0);
    // One key: token @sl of frame @fr, its query the question's frame @qi.
    auto add_key = [&](std::size_t i, std::int64_t fr, std::size_t sl, std::uint32_t qi, std::size_t& m) {
        const float* blk = pages.blocks[static_cast<std::size_t>(fr) * R + sl / tpr];
        if (!blk) unreadable("ask", static_cast<std::size_t>(fr), sl / tpr);
        const auto row = static_cast<std::uint32_t>(sl % tpr);
        nk::KeyRun* last = s.runs.size() > s.run_start.back() ? &s.runs.back() : nullptr;
        if (last && last->block == blk && last->query == qi && last->row + last->rows == row)
            last->rows++;
        else
            s.runs.push_back({blk, row, 1, qi});
        s.key_bias[i * cols + m++] = nk::rel_bucket(fr - q_target[i]) | static_cast<std::uint32_t>(sl) << 8;
    };
    for (std::size_t i = 0; i < nq; i++) {
        std::size_t m = 0;
        const std::size_t f0 = s.key_frames.size();
        auto frame_query = [&](std::int64_t fr) {
            // The question's frames are few (its reach, or q_read's): a look back finds them.
            for (std::size_t k = s.key_frames.size(); k-- > f0;)
                if (s.key_frames[k] == fr) return static_cast<std::uint32_t>(k - f0);
            s.key_frames.push_back(fr);
            return static_cast<std::uint32_t>(s.key_frames.size() - 1 - f0);
        };
        if (read) {
            for (std::size_t j = 0; j < cols; j++) {
                const std::int64_t tok = read->tokens[i * cols + j];
                need(tok < static_cast<std::int64_t>((std::size_t{t} + 1) * n),
                     "ask: q_read: one row per question, tokens of frames 0 .. t");
                if (tok < 0) continue;
                const std::int64_t fr = tok / static_cast<std::int64_t>(n);
                add_key(i, fr, static_cast<std::size_t>(tok % static_cast<std::int64_t>(n)), frame_query(fr),
                        m);
            }
        } else {
            const std::int64_t reach = c.question_reach;
            for (std::int64_t fr = q_target[i] - reach; fr <= q_target[i] + reach; fr++) {
                if (fr < 0 || fr > t) continue;
                // A frame read whole: one run per region.
                const std::uint32_t qi = frame_query(fr), b = nk::rel_bucket(fr - q_target[i]);
                for (std::size_t r = 0; r < R; r++) {
                    const float* blk = pages.blocks[static_cast<std::size_t>(fr) * R + r];
                    if (!blk) unreadable("ask", static_cast<std::size_t>(fr), r);
                    s.runs.push_back({blk, 0, static_cast<std::uint32_t>(tpr), qi});
                }
                for (std::size_t sl = 0; sl < n; sl++)
                    s.key_bias[i * cols + m++] = b | static_cast<std::uint32_t>(sl) << 8;
            }
        }
        s.key_count[i] = m;
        s.run_start.push_back(s.runs.size());
        s.frame_start.push_back(s.key_frames.size());
    }
    s.x.resize(nq * d);
    s.h.resize(nq * d);
    s.q.resize(nq * a);
    s.o.resize(nq * a);
    s.read0.resize(nq * a);
    s.g.resize(nq * 2 * f);
    s.gg.resize(nq * f);
    s.scores.resize(std::max(s.scores.size(), cols));
    std::size_t most_frames = 0;
    for (std::size_t i = 0; i < nq; i++)
        most_frames = std::max(most_frames, s.frame_start[i + 1] - s.frame_start[i]);
    s.qrot.resize(std::max(s.qrot.size(), most_frames * hd));
    // The largest distances first (both signs): the tables' pointers stay valid below.
    s.rope_rel(c, -static_cast<std::int64_t>(t));
    for (std::size_t i = 0; i < nq; i++)
        std::memcpy(s.x.data() + i * d, w_.question_embed.data() + static_cast<std::size_t>(q_region[i]) * d,
                    d * sizeof(float));
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    const std::size_t nb = w_.rel_buckets;
    for (std::size_t l = 0; l < c.layers; l++) {
        const NativeWeights::Layer& lw = w_.layers[l];
        nk::rms_norm(s.x.data(), d, nq, lw.norm1.data(), d, c.norm_eps, s.h.data(), d);
        nk::matmul(s.h.data(), d, nq, lw.wq.data(), d, a, s.q.data(), a, false);
        std::fill(s.o.begin(), s.o.end(), 0.0F);
        for (std::size_t i = 0; i < nq; i++) {
            const std::size_t m = s.key_count[i];
            if (m == 0) continue;  // blind: nothing to read (its logits are set to 0 below)
            const std::uint32_t* kb = s.key_bias.data() + i * cols;
            const auto region = static_cast<std::size_t>(q_region[i]);
            const std::size_t r0 = s.run_start[i], nr = s.run_start[i + 1] - r0, fq0 = s.frame_start[i],
                              nfq = s.frame_start[i + 1] - fq0;
            for (std::size_t hh = 0; hh < c.heads; hh++) {
                float* qi = s.q.data() + i * a + hh * hd;
                for (std::size_t e = 0; e < hd; e++) qi[e] *= scale;
                // The query rotated to its distance to each frame it reads (R(target - frame)).
                for (std::size_t k = 0; k < nfq; k++) {
                    float* qr = s.qrot.data() + k * hd;
                    std::memcpy(qr, qi, hd * sizeof(float));
                    const float* rope = s.rope_rel(c, q_target[i] - s.key_frames[fq0 + k]);
                    nk::rotate(qr, rope, rope + half, half);
                }
                const std::size_t kv = hh / rep;
                const float* rel = lw.rel.data() + hh * nb;
                const float* slot = lw.slot.data() + (hh * c.regions + region) * n;
                float* sc = s.scores.data();
                for (std::size_t j = 0; j < m; j++) sc[j] = rel[kb[j] & 0xff] + slot[kb[j] >> 8];
                nk::attend_runs(s.qrot.data(), 1, ((l * 2) * kvh + kv) * tpr * hd,
                                ((l * 2 + 1) * kvh + kv) * tpr * hd, hd, s.runs.data() + r0, nr, m, sc,
                                s.o.data() + i * a + hh * hd, hd);
            }
        }
        if (l == c.read_layer) std::copy(s.o.begin(), s.o.end(), s.read0.begin());
        nk::matmul(s.o.data(), a, nq, lw.wo.data(), a, d, s.x.data(), d, true);
        nk::rms_norm(s.x.data(), d, nq, lw.norm2.data(), d, c.norm_eps, s.h.data(), d);
        nk::matmul(s.h.data(), d, nq, lw.w13.data(), d, 2 * f, s.g.data(), 2 * f, false);
        nk::swiglu(s.g.data(), nq, f, s.gg.data());
        nk::matmul(s.gg.data(), f, nq, lw.w2.data(), f, d, s.x.data(), d, true);
    }
    // Decoder.answer: the cosine of (what read_layer read + gate x head(norm(x))) with the codebook.
    s.zf.resize(nq * fd);
    nk::rms_norm(s.x.data(), d, nq, w_.norm.data(), d, c.norm_eps, s.h.data(), d);
    nk::matmul(s.h.data(), d, nq, w_.head_w.data(), d, fd, s.zf.data(), fd, false);
    for (std::size_t i = 0; i < nq; i++) {
        float* vi = s.zf.data() + i * fd;
        const float* ri = s.read0.data() + i * a;
        for (std::size_t e = 0; e < fd; e++) vi[e] = ri[e] + w_.gate * (vi[e] + w_.head_b[e]);
        const float norm = std::sqrt(nk::dot(vi, vi, fd));
        const float inv = std::exp(w_.logit_scale) / std::max(norm, 1e-12F);
        for (std::size_t e = 0; e < fd; e++) vi[e] *= inv;
    }
    nk::matmul(s.zf.data(), fd, nq, w_.codebook_t.data(), fd, c.codes, logits.data(), c.codes, false);
    for (std::size_t i = 0; i < nq; i++)
        if (s.key_count[i] == 0) std::fill_n(logits.data() + i * c.codes, c.codes, 0.0F);
}

void NativeDecoder::selector(NativeScratch& ss, std::span<const std::int64_t> q_region,
                             std::span<const std::int64_t> q_target, std::uint32_t t, std::span<float> query,
                             std::span<std::int64_t> frames, std::span<float> weights) const {
    const NativeConfig& c = w_.c;
    auto& s = *ss.impl_;
    const std::size_t nq = q_region.size(), n = c.visual(), d = c.d_model, hd = c.head_dim, half = hd / 2,
                      a = std::size_t{c.heads} * hd, span = 2 * std::size_t{c.question_reach} + 1,
                      nb = w_.rel_buckets;
    need(q_target.size() == nq && query.size() == nq * a && frames.size() == nq * span &&
             weights.size() == nq * span * n,
         "selector: query [Q, heads*head_dim], frames [Q, 2*reach+1], weights [Q, (2*reach+1)*visual]");
    for (std::size_t i = 0; i < nq; i++)
        need(q_region[i] >= 0 && q_region[i] < c.regions && q_target[i] >= 0,
             "selector: question regions 0 .. regions - 1 about frames >= 0");
    const NativeWeights::Layer& l0 = w_.layers[0];
    s.x.resize(nq * d);
    s.h.resize(nq * d);
    for (std::size_t i = 0; i < nq; i++)
        std::memcpy(s.x.data() + i * d, w_.question_embed.data() + static_cast<std::size_t>(q_region[i]) * d,
                    d * sizeof(float));
    nk::rms_norm(s.x.data(), d, nq, l0.norm1.data(), d, c.norm_eps, s.h.data(), d);
    nk::matmul(s.h.data(), d, nq, l0.wq.data(), d, a, query.data(), a, false);
    const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
    const float inv_heads = 1.0F / static_cast<float>(c.heads);
    for (std::size_t i = 0; i < nq; i++) {
        const float* rope = s.rope_at(c, static_cast<std::size_t>(q_target[i]));
        for (std::size_t hh = 0; hh < c.heads; hh++) {
            float* qi = query.data() + i * a + hh * hd;
            for (std::size_t e = 0; e < hd; e++) qi[e] *= scale;
            nk::rotate(qi, rope, rope + half, half);
        }
        // The learned bias averaged over the heads, past frames of the reach only, exp(b - max b).
        const auto region = static_cast<std::size_t>(q_region[i]);
        float* wi = weights.data() + i * span * n;
        float best = -INFINITY;
        for (std::size_t j = 0; j < span; j++) {
            const std::int64_t fr =
                q_target[i] - static_cast<std::int64_t>(c.question_reach) + static_cast<std::int64_t>(j);
            const bool past = fr >= 0 && fr < static_cast<std::int64_t>(t);
            frames[i * span + j] = past ? fr : -1;
            const std::uint32_t bucket = nk::rel_bucket(fr - q_target[i]);
            for (std::size_t sl = 0; sl < n; sl++) {
                float b = -INFINITY;
                if (past) {
                    b = 0;
                    for (std::size_t hh = 0; hh < c.heads; hh++)
                        b += l0.rel[hh * nb + bucket] + l0.slot[(hh * c.regions + region) * n + sl];
                    b *= inv_heads;
                    best = std::max(best, b);
                }
                wi[j * n + sl] = b;
            }
        }
        for (std::size_t m = 0; m < span * n; m++) wi[m] = std::isinf(wi[m]) ? 0.0F : std::exp(wi[m] - best);
    }
}

}  // namespace vrex::lcp
