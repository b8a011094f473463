// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// One FAISS build behind the FaissBuild interface. Compiled into two loadable modules (bench/CMakeLists.txt):
// vrex_faiss_debian (Debian's libfaiss.a) and vrex_faiss_native (bench/faiss-native.sh's libfaiss.a).
// Only vrex_faiss_build() is exported; FAISS's own symbols stay inside the module.
#include <faiss/IndexBinaryFlat.h>
#include <faiss/IndexBinaryHash.h>
#include <faiss/impl/AuxIndexStructures.h>

#include <algorithm>
#include <stdexcept>

#include "faiss_indexes.h"

namespace vrex::bench {
namespace {

using idx_t = faiss::IndexBinary::idx_t;

const uint8_t* bytes(std::span<const vrex_fp> codes) {
    static_assert(sizeof(vrex_fp) == 16, "a fingerprint is 16 bytes, FAISS's 128-bit code");
    return reinterpret_cast<const uint8_t*>(codes.data());
}

int probe_radius_offset() {
    vrex_fp zero{};
    vrex_fp three{{0x7, 0}};
    faiss::IndexBinaryFlat flat(128);
    flat.add(1, bytes({&zero, 1}));
    faiss::RangeSearchResult res(1);
    flat.range_search(1, bytes({&three, 1}), 3, &res);
    return res.lims[1] == 1 ? 0 : 1;
}

class Index final : public FaissIndexApi {
  public:
    Index(const FaissConfig& cfg, std::span<const vrex_fp> codes, int offset) : offset_(offset) {
        switch (cfg.kind) {
            case FaissKind::flat:
                index_ = std::make_unique<faiss::IndexBinaryFlat>(128);
                break;
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
        index_->add(static_cast<idx_t>(codes.size()), bytes(codes));
    }

    size_t range(std::span<const vrex_fp> queries, uint32_t radius,
                 std::vector<std::vector<uint32_t>>* out) const override {
        faiss::RangeSearchResult res(static_cast<idx_t>(queries.size()));
        index_->range_search(static_cast<idx_t>(queries.size()), bytes(queries),
                             static_cast<int>(radius) + offset_, &res);
        if (out) {
            out->assign(queries.size(), {});
            for (size_t q = 0; q < queries.size(); q++) {
                auto& v = (*out)[q];
                for (size_t j = res.lims[q]; j < res.lims[q + 1]; j++)
                    v.push_back(static_cast<uint32_t>(res.labels[j]));
                std::sort(v.begin(), v.end());
            }
        }
        return res.lims[queries.size()];
    }

    void nearest(std::span<const vrex_fp> queries, std::span<int64_t> ids,
                 std::span<int32_t> dists) const override {
        if (ids.size() < queries.size() || dists.size() < queries.size())
            throw std::invalid_argument("nearest: output spans shorter than the queries");
        index_->search(static_cast<idx_t>(queries.size()), bytes(queries), 1, dists.data(), ids.data());
    }

  private:
    int offset_;
    std::unique_ptr<faiss::IndexBinary> index_;
};

class Build final : public FaissBuild {
  public:
    std::unique_ptr<FaissIndexApi> make(const FaissConfig& cfg,
                                        std::span<const vrex_fp> codes) const override {
        return std::make_unique<Index>(cfg, codes, offset_);
    }
    int radius_offset() const override { return offset_; }

  private:
    int offset_ = probe_radius_offset();
};

}  // namespace
}  // namespace vrex::bench

extern "C" __attribute__((visibility("default"))) vrex::bench::FaissBuild* vrex_faiss_build() {
    return new vrex::bench::Build();
}
