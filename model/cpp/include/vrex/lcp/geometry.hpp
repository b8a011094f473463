// The KV block geometry of the LCP layer's models, once: blocks hold fp32 K and V for every layer
// (model/vrex/lcp.py views them as torch tensors). Used by the C++ runner (Geometry::hal()) and the
// _vrexhal binding's KvAllocator, so the two paths allocate the same blocks.
#pragma once

#include <cstdint>

#include "vrex/hal.hpp"

namespace vrex::lcp {

inline ModelGeometry kv_geometry(std::uint32_t layers, std::uint32_t kv_heads, std::uint32_t head_dim,
                                 std::uint32_t tokens_per_block) {
    ModelGeometry g;
    g.layers = layers;
    g.kv_heads = kv_heads;
    g.head_dim = head_dim;
    g.tokens_per_block = tokens_per_block;
    g.dtype = DType::fp32;
    return g;
}

}  // namespace vrex::lcp
