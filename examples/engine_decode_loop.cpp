// Worked engine example: a minimal decode loop of a video LLM that keeps per-frame KV blocks in
// V-Rex memory. For every frame: begin_frame (FCC fingerprint + bank group), reuse the KV of the
// most similar past frame per region when one is close enough, else "prefill" new K/V into a fresh
// block; then one attention step of a query over the retrieved blocks (plain CPU code), end_frame.
// The text prompt's K/V sits in a prompt segment (prefilled once, attended every frame: segments are
// never aged out with the frames), and every frame "generates" a token whose K/V is appended to a
// generated segment; every 5th frame a speculative token is appended and rejected (truncate).
//
// Usage: vrex_engine_decode_loop [frames] [luma.gray width height]  (synthetic frames by default)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "vrex/hal.hpp"
#include "vrex/segment.hpp"

namespace {

// One layer, one head of fp32 K/V: 64 tokens x 32 dims each -> 2 * 64 * 32 * 4 = 16 KiB per block.
constexpr vrex::ModelGeometry kGeom{1, 1, 32, vrex::DType::fp32, 64};
constexpr std::uint32_t kDims = 32, kTokens = 64, kRegions = 4;
constexpr std::uint32_t kPromptTokens = 90;  // a block and a partial one

// K/V of token slot @t of a block (layout: docs/hal.md "KV memory contract", 1 layer, 1 head).
float* key(std::span<std::byte> block, std::uint32_t t)
{
    return reinterpret_cast<float*>(block.data()) + t * kDims;
}
float* value(std::span<std::byte> block, std::uint32_t t)
{
    return reinterpret_cast<float*>(block.data()) + (kTokens + t) * kDims;
}

// A block of context: its memory and how many of its token slots hold tokens.
struct Context {
    std::span<const std::byte> kv;
    std::uint32_t tokens = kTokens;
};

std::vector<std::uint8_t> frame_pixels(std::uint32_t w, std::uint32_t h, std::uint32_t t, std::FILE* src)
{
    std::vector<std::uint8_t> px(std::size_t{w} * h);
    if (src && std::fread(px.data(), 1, px.size(), src) == px.size())
        return px;
    const std::uint32_t scene = t / 12;  // a scene cut every 12 frames
    for (std::uint32_t y = 0; y < h; y++)
        for (std::uint32_t x = 0; x < w; x++)
            px[std::size_t{y} * w + x] = static_cast<std::uint8_t>(((x / 8 + scene * 7) * (y / 8 + 3) + t) & 0xff);
    return px;
}

// "Prefill": K/V of a region derived from its pixels (a stand-in for the vision encoder + layers).
void prefill(std::span<std::byte> block, const std::vector<std::uint8_t>& px, std::uint32_t region)
{
    auto* kv = reinterpret_cast<float*>(block.data());
    for (std::uint32_t i = 0; i < 2 * kTokens * kDims; i++)
        kv[i] = static_cast<float>(px[(i * 131 + region * 977) % px.size()]) / 255.0f - 0.5f;
}

// Softmax attention of one query over every token of the given blocks: returns the output vector.
std::vector<float> attend(const std::vector<float>& q, const std::vector<Context>& blocks)
{
    std::vector<float> scores;
    for (const Context& b : blocks) {
        const auto* k = reinterpret_cast<const float*>(b.kv.data());
        for (std::uint32_t t = 0; t < b.tokens; t++) {
            float s = 0;
            for (std::uint32_t d = 0; d < kDims; d++)
                s += q[d] * k[t * kDims + d];
            scores.push_back(s / std::sqrt(static_cast<float>(kDims)));
        }
    }
    const float mx = *std::max_element(scores.begin(), scores.end());
    float sum = 0;
    for (float& s : scores)
        sum += (s = std::exp(s - mx));
    std::vector<float> out(kDims, 0.0f);
    std::size_t i = 0;
    for (const Context& b : blocks) {
        const auto* v = reinterpret_cast<const float*>(b.kv.data()) + kTokens * kDims;
        for (std::uint32_t t = 0; t < b.tokens; t++, i++)
            for (std::uint32_t d = 0; d < kDims; d++)
                out[d] += scores[i] / sum * v[t * kDims + d];
    }
    return out;
}

}  // namespace

int run(int argc, char** argv)
{
    const std::uint32_t frames = argc > 1 ? static_cast<std::uint32_t>(std::atoi(argv[1])) : 40;
    std::uint32_t w = 160, h = 120;
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file{nullptr, &std::fclose};
    if (argc > 4) {
        file.reset(std::fopen(argv[2], "rb"));
        w = static_cast<std::uint32_t>(std::atoi(argv[3]));
        h = static_cast<std::uint32_t>(std::atoi(argv[4]));
    }
    auto dev = vrex::Device::open();
    if (!dev) {
        std::fprintf(stderr, "open: %s\n", dev.error().message().c_str());
        return 1;
    }
    auto alloc = vrex::KvAllocator::create(*dev, kGeom);
    if (!alloc) {
        std::fprintf(stderr, "allocator: %s\n", alloc.error().message().c_str());
        return 1;
    }
    auto stream = (*alloc)->create_stream();
    if (!stream) {
        std::fprintf(stderr, "stream: %s\n", stream.error().message().c_str());
        return 1;
    }
    vrex::Stream& s = **stream;
    std::printf("engine: backend %s, block %llu bytes\n", std::string((*dev)->backend_name()).c_str(),
                static_cast<unsigned long long>((*alloc)->block_bytes()));

    // The prompt: prefilled once into a prompt segment.
    auto prompt = s.open_segment(vrex::SegmentKind::prompt, 0);
    if (!prompt) {
        std::fprintf(stderr, "open_segment: %s\n", prompt.error_message().c_str());
        return 1;
    }
    auto pblocks = prompt->append(kPromptTokens);
    if (!pblocks) {
        std::fprintf(stderr, "prompt: %s\n", pblocks.error_message().c_str());
        return 1;
    }
    double prompt_sum = 0;
    for (const vrex::KvBlock& b : *pblocks)
        for (std::uint32_t t = 0; t < b.token_count; t++)
            for (std::uint32_t d = 0; d < kDims; d++) {
                const float x = std::cos(static_cast<float>(b.first_token + t) * 0.1f + static_cast<float>(d));
                key(b.data, t)[d] = x;
                value(b.data, t)[d] = -x;
                prompt_sum += x;
            }
    auto generated = s.open_segment(vrex::SegmentKind::generated, kPromptTokens);
    if (!generated)
        return 1;
    // Appends one generated token's K/V (derived from the attention output) to the generated segment.
    auto generate = [&](const std::vector<float>& out) {
        auto g = generated->append(1);
        if (!g || g->size() != 1)
            return false;
        const vrex::KvBlock& b = g->front();
        for (std::uint32_t d = 0; d < kDims; d++) {
            key(b.data, b.token_count - 1)[d] = out[d];
            value(b.data, b.token_count - 1)[d] = out[(d + 1) % kDims];
        }
        return true;
    };

    std::uint32_t reused = 0, fresh = 0;
    double checksum = 0;
    for (std::uint32_t t = 0; t < frames; t++) {
        auto px = frame_pixels(w, h, t, file.get());
        auto f = s.begin_frame(vrex::LumaView{px.data(), w, h, w});
        if (!f) {
            std::fprintf(stderr, "begin_frame: %s\n", f.error().message().c_str());
            return 1;
        }
        std::vector<Context> context;
        for (const auto* seg : {&*prompt, &*generated}) {
            auto blocks = seg->blocks();
            if (!blocks)
                return 1;
            for (const vrex::KvBlock& b : *blocks)
                context.push_back({b.view, b.token_count});
        }
        for (std::uint32_t r = 0; r < kRegions; r++) {
            auto hit = s.retrieve_similar(r, f->fp, 12, vrex::Scope::stream, false);
            // Retrieved KV is read through view: end_frame() published it, read-only from then on.
            if (hit && hit->hit) {
                if (!s.reuse(r, hit->block))
                    return 1;
                context.push_back({hit->block.view});
                reused++;
                continue;
            }
            auto b = s.allocate(r);
            if (!b) {
                std::fprintf(stderr, "allocate: %s\n", b.error().message().c_str());
                return 1;
            }
            prefill(b->data, px, r);
            context.push_back({b->data});
            fresh++;
        }
        // Temporal context: last frame's blocks too.
        for (std::uint32_t r = 0; r < kRegions; r++) {
            auto prev = s.retrieve_temporal(r, -1);
            if (prev && prev->hit)
                context.push_back({prev->block.view});
        }
        std::vector<float> q(kDims);
        for (std::uint32_t d = 0; d < kDims; d++)
            q[d] = std::sin(static_cast<float>(t + d));
        const auto out = attend(q, context);
        for (float v : out)
            checksum += v;
        if (t % 5 == 4) {  // a speculative token the verifier rejects: appended, then truncated away
            const std::uint32_t keep = generated->end_position();
            if (!generate(out) || !generated->truncate(keep))
                return 1;
        }
        if (!generate(out)) {
            std::fprintf(stderr, "generate: out of memory\n");
            return 1;
        }
        if (!s.end_frame())
            return 1;
    }
    auto st = (*alloc)->stats();
    if (!st)
        return 1;
    // The prompt outlived every frame's aging untouched.
    double prompt_after = 0;
    auto pnow = prompt->blocks();
    if (!pnow)
        return 1;
    for (const vrex::KvBlock& b : *pnow)
        for (std::uint32_t t = 0; t < b.token_count; t++)
            for (std::uint32_t d = 0; d < kDims; d++)
                prompt_after += reinterpret_cast<const float*>(b.view.data())[t * kDims + d];
    std::printf("engine: %u frames, %u regions reused, %u prefilled, %llu resident blocks (%llu KiB; %llu segment "
                "blocks: prompt %u tokens, generated %u), %llu evicted, attention checksum %.4f\n",
                frames, reused, fresh, static_cast<unsigned long long>(st->resident_blocks),
                static_cast<unsigned long long>(st->resident_bytes >> 10),
                static_cast<unsigned long long>(st->segment_blocks), prompt->tokens(), generated->tokens(),
                static_cast<unsigned long long>(st->evictions), checksum);
    const std::uint64_t segment_blocks = (kPromptTokens + kTokens - 1) / kTokens + (frames + kTokens - 1) / kTokens;
    // The example is also a test: a static scene must reuse, memory must stay bounded, the prompt
    // survives, one token a frame was generated (rejected ones left nothing behind).
    return reused > 0 && st->resident_blocks < std::uint64_t{frames} * kRegions + segment_blocks &&
                   std::isfinite(checksum) && prompt_after == prompt_sum && generated->tokens() == frames &&
                   st->segment_blocks == segment_blocks
               ? 0
               : 1;
}

int main(int argc, char** argv)
{
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "engine: %s\n", e.what());
        return 1;
    }
}
