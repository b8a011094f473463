#include "vrex/lcp/install.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace vrex::lcp {

void install_blocks(CopyEngine& dma, const InstallShape& shape, std::span<const BlockInstall> ins,
                    const Layer0* layer0) {
    const std::size_t tpr = shape.tokens_per_region, hd = shape.head_dim, kvh = shape.kv_heads;
    const std::size_t layer_bytes = 2 * kvh * tpr * hd * sizeof(float);  // one layer's K and V
    for (const BlockInstall& in : ins) {
        if (in.dst.size() != shape.layers * layer_bytes || in.src.size() != in.dst.size())
            throw std::invalid_argument("vrex install: region " + std::to_string(in.region) + ": a " +
                                        std::to_string(in.dst.size()) + "-byte block from " +
                                        std::to_string(in.src.size()) + " bytes, not " +
                                        std::to_string(shape.layers * layer_bytes));
        if (layer0 != nullptr &&
            (layer0->k0.size() < (in.region + std::size_t{1}) * kvh * tpr * hd ||
             layer0->tokens.size() < (in.region + std::size_t{1}) * tpr * shape.feat_dim))
            throw std::invalid_argument("vrex install: region " + std::to_string(in.region) +
                                        ": layer 0 from " + std::to_string(layer0->k0.size()) + " keys and " +
                                        std::to_string(layer0->tokens.size()) + " features, too few for it");
    }
    // Layer 0 is rewritten below with refresh: only the rest is copied.
    const std::size_t skip = layer0 != nullptr ? layer_bytes : 0;
    for (const BlockInstall& in : ins) dma.queue(in.dst.subspan(skip), in.src.subspan(skip));
    dma.run();
    if (layer0 == nullptr) return;
    for (const BlockInstall& in : ins) {
        auto* out = reinterpret_cast<float*>(in.dst.data());  // NOLINT: the block holds fp32 KV
        const std::size_t first = std::size_t{in.region} * tpr;
        // Layer 0's K is the block's first KVH x T x hd values, k0's per-region layout.
        std::memcpy(out, layer0->k0.data() + in.region * kvh * tpr * hd, kvh * tpr * hd * sizeof(float));
        // Head h's values are features h * hd .. (h + 1) * hd - 1, zeros past feat_dim.
        for (std::size_t h = 0; h < kvh; h++) {
            const std::size_t feat = shape.feat_dim, c0 = std::min(h * hd, feat),
                              have = std::min(hd, feat - c0);
            for (std::size_t i = 0; i < tpr; i++) {
                float* vd = out + ((kvh + h) * tpr + i) * hd;
                std::memcpy(vd, layer0->tokens.data() + (first + i) * shape.feat_dim + c0,
                            have * sizeof(float));
                std::fill(vd + have, vd + hd, 0.0F);
            }
        }
    }
}

}  // namespace vrex::lcp
