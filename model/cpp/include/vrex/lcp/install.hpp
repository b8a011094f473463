// vrex::lcp::install_blocks: a frame's regions filled from other blocks' bytes instead of computed
// (the C++ runner's refresh and recall installs), torch-free so every build tests it. The copies
// are the copy engine's, in one kick (CopyEngine: a board's DMA, its time emulated hardware); with
// refresh a block's layer 0 is then written from the frame's own data: K = the guard's layer-0 keys,
// V = the frame's standardised features zero-padded to KVH x hd (Decoder.value0). Block layout
// [L][K, V][KVH][T][hd] fp32 (Geometry::hal()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "vrex/lcp/copy_engine.hpp"

namespace vrex::lcp {

struct InstallShape {
    std::uint32_t layers = 0, kv_heads = 0, tokens_per_region = 0, head_dim = 0, feat_dim = 0;
};

// One installed region: its new block (writable, the block's bytes) and its source's bytes.
struct BlockInstall {
    std::uint32_t region = 0;
    std::span<std::byte> dst;
    std::span<const std::byte> src;
};

// The frame's layer 0 for refresh: @k0 the guard's layer-0 keys per region [regions, KVH, T, hd],
// @tokens the frame's features [regions * T, feat_dim].
struct Layer0 {
    std::span<const float> k0;
    std::span<const float> tokens;
};

// Fills every @ins block: all of its source (@layer0 null), or layers 1.. from the source and layer
// 0 from @layer0. std::invalid_argument, before anything is copied, for a block whose size is not
// the shape's, a source that differs in size from its block, or a @layer0 too short for a region.
void install_blocks(CopyEngine& dma, const InstallShape& shape, std::span<const BlockInstall> ins,
                    const Layer0* layer0);

}  // namespace vrex::lcp
