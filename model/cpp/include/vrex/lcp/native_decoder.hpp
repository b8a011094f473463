// vrex::lcp::NativeDecoder: the builtin decoder's per-frame work (model/vrex/decoder.py) on plain
// float buffers, for the C++ runner. The model is tiny (d_model 64, 4 layers): run through libtorch,
// a step is a few hundred aten ops whose dispatch costs more than their arithmetic, so the step's
// time follows its op count, not its FLOPs (docs/model.md "Session 9: where the step time goes").
// Here a step is loops over contiguous buffers and nothing else: its cost is its arithmetic.
//
// The semantics are decoder.py's, method for method (pytest holds them equal, model/tests/
// test_native.py):
//   embed()   = Decoder.embed_frame
//   prepare() = embed_frame + the guard's hash of layer0_keys (script.key_hashes, lcp.hash_planes)
//   prefill() = Decoder.prefill: fresh regions computed, reused ones read from their blocks
//   ask()     = Decoder.ask without `keep` (the C++ runner never passes one)
//   selector() = script.StepModule.selector (ReSV's query, reach frames and position weights)
//
// Layouts (row-major fp32, what the runner and the HAL hold): tokens [visual, feat_dim]; embeddings
// [visual, d_model]; a block [layers, 2 (K, V), kv_heads, tokens_per_region, head_dim], K before
// rotation. There is no attention cache: every read goes to the blocks where they are (KvPages), a
// query rotated to its distance to each key's frame (RoPE is relative) so that no key is rotated
// or copied. The weights are copied once, when the decoder is built (native_load), into
// layouts of their own; a NativeDecoder is immutable and may serve several streams, each with its
// own NativeScratch (one thread at a time per scratch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace vrex::lcp {

struct NativeConfig {
    std::uint32_t feat_dim = 0, d_model = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0,
                  regions = 0, tokens_per_region = 0, codes = 0, window = 0, question_reach = 0;
    double rope_base = 0;
    std::uint32_t read_layer = 0;  // Decoder.read_layer, already reduced to 0 .. layers - 1
    float norm_eps = 1e-5F;        // RMSNorm's eps (every norm of the model has the same)
    std::uint32_t hash_bits = 0;   // the guard's hash (script.HASH_BITS)
    std::uint32_t visual() const noexcept { return regions * tokens_per_region; }
};

// The model's parameters in the kernels' layouts: every linear map is stored [in, out] (torch keeps
// [out, in]) so that its product runs over contiguous output columns.
struct NativeWeights {
    struct Layer {
        std::vector<float> norm1, norm2;  // [d_model]
        std::vector<float> wq, wk, wv;    // [d_model, heads*head_dim] / [d_model, kv_heads*head_dim]
        std::vector<float> wo;            // [heads*head_dim, d_model]
        std::vector<float> w13;           // [d_model, 2*ffn]: w1's columns, then w3's
        std::vector<float> w2;            // [ffn, d_model]
        std::vector<float> rel;           // [heads, rel_buckets] the questions' distance bias
        std::vector<float> slot;          // [heads, regions, visual] the questions' slot bias
    };
    NativeConfig c;
    std::uint32_t rel_buckets = 0;
    std::vector<float> embed_w, embed_b;  // [feat_dim, d_model], [d_model]
    std::vector<float> slot_embed;        // [visual, d_model]
    std::vector<float> question_embed;    // [regions, d_model]
    std::vector<Layer> layers;
    std::vector<float> norm;            // [d_model] the final norm
    std::vector<float> head_w, head_b;  // [d_model, feat_dim], [feat_dim]
    float logit_scale = 0, gate = 0;    // as stored (the answer scales by exp(logit_scale))
    std::vector<float> codebook_t;      // [feat_dim, codes] the codebook, transposed
    std::vector<float> planes_t;        // [kv_heads*tokens_per_region*head_dim, hash_bits], transposed
};

// The KV a step reads, in place (a paged cache): per (frame, region), frame-major, the block that
// holds it -- device memory, or a demoted block's host copy the hierarchy staged for this step --
// in the block layout (K before rotation). A reused region is one more pointer to its source's
// block. nullptr: not readable now (its device memory was given back and no copy is staged);
// reading such a slot is refused, never done through a stale pointer.
struct KvPages {
    std::span<const float* const> blocks;
};

// The tokens each question reads instead of its reach (Decoder.ask's q_read): [questions, cols],
// frame * visual + slot, -1 padding. A question with no token is blind: its logits are 0.
struct QuestionRead {
    std::span<const std::int64_t> tokens;
    std::size_t cols = 0;
};

// Per-stream working memory: activations, the RoPE tables of the distances seen (computed once each,
// in double as decoder.rope_tables does), the reads' key runs. Nothing in it outlives a call's
// meaning: any pages may be passed to any call.
class NativeScratch {
  public:
    NativeScratch();
    ~NativeScratch();
    NativeScratch(NativeScratch&&) noexcept;
    NativeScratch& operator=(NativeScratch&&) noexcept;

  private:
    friend class NativeDecoder;
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

class NativeDecoder {
  public:
    // std::invalid_argument when the weights' sizes do not match their config.
    explicit NativeDecoder(NativeWeights weights);

    const NativeConfig& config() const noexcept { return w_.c; }
    const NativeWeights& weights() const noexcept { return w_; }

    // @tokens [visual, feat_dim] -> @vis [visual, d_model].
    void embed(std::span<const float> tokens, std::span<float> vis) const;
    // embed(), then per region the guard's hash of the layer-0 pre-rotation keys -> @hashes [regions];
    // unless empty, @k0 [regions, kv_heads, tokens_per_region, head_dim] gets those keys (a block's
    // layer-0 K layout: the layer-0 refresh of a reused region writes them).
    void prepare(NativeScratch& s, std::span<const float> tokens, std::span<float> vis,
                 std::span<std::uint32_t> hashes, std::span<float> k0 = {}) const;
    // Frame @t's K/V of every layer into the blocks of the @fresh regions (ascending), written once;
    // @blocks [regions] the frame's blocks in region order (the reused ones are only read), the same
    // pointers as @pages' frame t. The window's attention reads frames t - window + 1 .. t of @pages
    // (at least t + 1 frames). @z [visual, feat_dim] the frame's tokens, @vis its embedding.
    void prefill(NativeScratch& s, std::span<const float> z, std::span<const float> vis,
                 std::span<const std::uint32_t> fresh, std::span<float* const> blocks, const KvPages& pages,
                 std::uint32_t t) const;
    // The questions (regions @q_region about frames @q_target <= t) over @pages holding frames
    // 0 .. t, each over its reach or, given @read, over its tokens -> @logits [questions, codes].
    void ask(NativeScratch& s, const KvPages& pages, std::uint32_t t, std::span<const std::int64_t> q_region,
             std::span<const std::int64_t> q_target, const QuestionRead* read, std::span<float> logits) const;

    // script.StepModule.selector (ReSV's inputs from layer 0): per question its query @query [Q,
    // heads*head_dim] (scaled, rotated to its target), the frames of its reach @frames [Q, 2*reach+1]
    // (-1 outside 0 .. t-1) and the position weights @weights [Q, (2*reach+1)*visual] (0 outside).
    void selector(NativeScratch& s, std::span<const std::int64_t> q_region,
                  std::span<const std::int64_t> q_target, std::uint32_t t, std::span<float> query,
                  std::span<std::int64_t> frames, std::span<float> weights) const;

  private:
    NativeWeights w_;
};

}  // namespace vrex::lcp
