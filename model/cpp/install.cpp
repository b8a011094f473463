#include "vrex/lcp/install.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace vrex::lcp {

namespace {

// What a board's copy engine fills zeros from (a zero page): V's padding past the features.
constexpr std::size_t kZeroBytes = 4096;
alignas(64) constexpr std::array<std::byte, kZeroBytes> kZeros{};

void queue_zeros(CopyEngine& dma, std::span<std::byte> dst) {
    for (std::size_t off = 0; off < dst.size(); off += kZeroBytes) {
        const std::size_t n = std::min(kZeroBytes, dst.size() - off);
        dma.queue(dst.subspan(off, n), std::span<const std::byte>(kZeros).first(n));
    }
}

// Block @in's layer 0 from the frame: K the guard's keys of its region (k0's layout is the block's),
// V each token's features head by head, zeros past feat_dim.
void queue_layer0(CopyEngine& dma, const InstallShape& shape, const BlockInstall& in, const Layer0& layer0) {
    const std::size_t tpr = shape.tokens_per_region, hd = shape.head_dim, kvh = shape.kv_heads,
                      feat = shape.feat_dim, k_floats = kvh * tpr * hd;
    dma.queue(in.dst.first(k_floats * sizeof(float)),
              std::as_bytes(layer0.k0.subspan(std::size_t{in.region} * k_floats, k_floats)));
    const std::span<std::byte> v = in.dst.subspan(k_floats * sizeof(float), k_floats * sizeof(float));
    const std::size_t first = std::size_t{in.region} * tpr;
    for (std::size_t h = 0; h < kvh; h++) {
        const std::size_t c0 = std::min(h * hd, feat), have = std::min(hd, feat - c0);
        const std::span<std::byte> head = v.subspan(h * tpr * hd * sizeof(float), tpr * hd * sizeof(float));
        if (have == 0) {  // a head past the features: its tokens' rows are one run of zeros
            queue_zeros(dma, head);
            continue;
        }
        for (std::size_t i = 0; i < tpr; i++) {
            const std::span<std::byte> row = head.subspan(i * hd * sizeof(float), hd * sizeof(float));
            dma.queue(row.first(have * sizeof(float)),
                      std::as_bytes(layer0.tokens.subspan((first + i) * feat + c0, have)));
            if (have < hd) queue_zeros(dma, row.subspan(have * sizeof(float)));
        }
    }
}

}  // namespace

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
        if (layer0 != nullptr && (layer0->k0.size() < (in.region + std::size_t{1}) * kvh * tpr * hd ||
                                  layer0->tokens.size() < (in.region + std::size_t{1}) * tpr * shape.feat_dim))
            throw std::invalid_argument("vrex install: region " + std::to_string(in.region) + ": layer 0 from " +
                                        std::to_string(layer0->k0.size()) + " keys and " +
                                        std::to_string(layer0->tokens.size()) + " features, too few for it");
    }
    // With refresh the block is its source's layers 1.. and the frame's layer 0, one descriptor list
    // and one kick: a board's copy engine reads the guard's keys and the features where they are.
    const std::size_t skip = layer0 != nullptr ? layer_bytes : 0;
    for (const BlockInstall& in : ins) {
        dma.queue(in.dst.subspan(skip), in.src.subspan(skip));
        if (layer0 != nullptr) queue_layer0(dma, shape, in, *layer0);
    }
    dma.run();
}

}  // namespace vrex::lcp
