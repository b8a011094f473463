// Worked engine example: a minimal decode loop of a video LLM that keeps per-frame KV blocks in
// V-Rex memory. For every frame: begin_frame (FCC fingerprint + bank group), reuse the KV of the
// most similar past frame per region when one is close enough, else "prefill" new K/V into a fresh
// block; then one attention step of a query over the retrieved blocks (plain CPU code), end_frame.
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

namespace {

// One layer, one head of fp32 K/V: 64 tokens x 32 dims each -> 2 * 64 * 32 * 4 = 16 KiB per block.
constexpr vrex::ModelGeometry kGeom{1, 1, 32, vrex::DType::fp32, 64};
constexpr std::uint32_t kDims = 32, kTokens = 64, kRegions = 4;

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
std::vector<float> attend(const std::vector<float>& q, const std::vector<std::span<std::byte>>& blocks)
{
    std::vector<float> scores;
    for (auto b : blocks) {
        const auto* k = reinterpret_cast<const float*>(b.data());
        for (std::uint32_t t = 0; t < kTokens; t++) {
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
    for (auto b : blocks) {
        const auto* v = reinterpret_cast<const float*>(b.data()) + kTokens * kDims;
        for (std::uint32_t t = 0; t < kTokens; t++, i++)
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

    std::uint32_t reused = 0, fresh = 0;
    double checksum = 0;
    for (std::uint32_t t = 0; t < frames; t++) {
        auto px = frame_pixels(w, h, t, file.get());
        auto f = s.begin_frame(vrex::LumaView{px.data(), w, h, w});
        if (!f) {
            std::fprintf(stderr, "begin_frame: %s\n", f.error().message().c_str());
            return 1;
        }
        std::vector<std::span<std::byte>> context;
        for (std::uint32_t r = 0; r < kRegions; r++) {
            auto hit = s.retrieve_similar(r, f->fp, 12, vrex::Scope::stream, false);
            if (hit && hit->hit && !hit->block.data.empty()) {
                if (!s.reuse(r, hit->block))
                    return 1;
                context.push_back(hit->block.data);
                reused++;
                continue;
            }
            auto b = s.allocate(r);
            if (!b) {
                std::fprintf(stderr, "allocate: %s\n", b.error().message().c_str());
                return 1;
            }
            prefill(b->data, px, r);
            context.push_back(b->data);
            fresh++;
        }
        // Temporal context: last frame's blocks too.
        for (std::uint32_t r = 0; r < kRegions; r++) {
            auto prev = s.retrieve_temporal(r, -1);
            if (prev && prev->hit && !prev->block.data.empty())
                context.push_back(prev->block.data);
        }
        std::vector<float> q(kDims);
        for (std::uint32_t d = 0; d < kDims; d++)
            q[d] = std::sin(static_cast<float>(t + d));
        for (float v : attend(q, context))
            checksum += v;
        if (!s.end_frame())
            return 1;
    }
    auto st = (*alloc)->stats();
    if (!st)
        return 1;
    std::printf("engine: %u frames, %u regions reused, %u prefilled, %llu resident blocks (%llu KiB), "
                "%llu evicted, attention checksum %.4f\n",
                frames, reused, fresh, static_cast<unsigned long long>(st->resident_blocks),
                static_cast<unsigned long long>(st->resident_bytes >> 10),
                static_cast<unsigned long long>(st->evictions), checksum);
    // The example is also a test: a static scene must reuse, and memory must stay bounded.
    return reused > 0 && st->resident_blocks < std::uint64_t{frames} * kRegions && std::isfinite(checksum) ? 0 : 1;
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
