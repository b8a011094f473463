// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "faiss_indexes.h"

#include <faiss/IndexBinaryFlat.h>
#include <faiss/IndexBinaryHash.h>
#include <faiss/impl/AuxIndexStructures.h>

#include <algorithm>
#include <stdexcept>

namespace vrex::bench {

namespace {

const uint8_t* bytes(std::span<const vrex_fp> codes)
{
    static_assert(sizeof(vrex_fp) == 16, "a fingerprint is 16 bytes, FAISS's 128-bit code");
    return reinterpret_cast<const uint8_t*>(codes.data());
}

int probe_radius_offset()
{
    vrex_fp zero{};
    vrex_fp three{{0x7, 0}};
    faiss::IndexBinaryFlat flat(128);
    flat.add(1, bytes({&zero, 1}));
    faiss::RangeSearchResult res(1);
    flat.range_search(1, bytes({&three, 1}), 3, &res);
    return res.lims[1] == 1 ? 0 : 1;
}

}  // namespace

int faiss_radius_offset()
{
    static const int offset = probe_radius_offset();
    return offset;
}

std::string FaissConfig::describe() const
{
    switch (kind) {
    case FaissKind::flat: return "FAISS IndexBinaryFlat";
    case FaissKind::hash:
        return "FAISS IndexBinaryHash(b=" + std::to_string(b) + ", nflip=" + std::to_string(nflip) + ")";
    case FaissKind::multihash:
        return "FAISS IndexBinaryMultiHash(nhash=" + std::to_string(nhash) + ", b=" + std::to_string(b) +
               ", nflip=" + std::to_string(nflip) + ")";
    }
    return "?";
}

FaissIndex::FaissIndex(const FaissConfig& cfg, std::span<const vrex_fp> codes) : cfg_(cfg)
{
    switch (cfg.kind) {
    case FaissKind::flat: index_ = std::make_unique<faiss::IndexBinaryFlat>(128); break;
    case FaissKind::hash: {
        auto h = std::make_unique<faiss::IndexBinaryHash>(128, cfg.b);
        h->nflip = cfg.nflip;
        index_ = std::move(h);
        break;
    }
    case FaissKind::multihash: {
        auto h = std::make_unique<faiss::IndexBinaryMultiHash>(128, cfg.nhash, cfg.b);
        h->nflip = cfg.nflip;
        index_ = std::move(h);
        break;
    }
    }
    index_->add(static_cast<faiss::IndexBinary::idx_t>(codes.size()), bytes(codes));
}

FaissIndex::~FaissIndex() = default;

size_t FaissIndex::range(std::span<const vrex_fp> queries, uint32_t radius,
                         std::vector<std::vector<uint32_t>>* out) const
{
    faiss::RangeSearchResult res(static_cast<faiss::IndexBinary::idx_t>(queries.size()));
    index_->range_search(static_cast<faiss::IndexBinary::idx_t>(queries.size()), bytes(queries),
                         static_cast<int>(radius) + faiss_radius_offset(), &res);
    if (out) {
        out->assign(queries.size(), {});
        for (size_t q = 0; q < queries.size(); q++) {
            auto& v = (*out)[q];
            for (size_t j = res.lims[q]; j < res.lims[q + 1]; j++) v.push_back(static_cast<uint32_t>(res.labels[j]));
            std::sort(v.begin(), v.end());
        }
    }
    return res.lims[queries.size()];
}

}  // namespace vrex::bench
