// SPDX-License-Identifier: (GPL-2.0 OR MIT)
// The FAISS binary indexes we compare against, behind one small interface, so that two FAISS builds can
// be measured in one process: Debian's libfaiss (generic x86-64) and the same 1.7.3 source compiled with
// -march=native (bench/faiss-native.sh). Each build is linked statically into its own loadable module
// (faiss_shim.cpp, FAISS's symbols hidden) and opened with dlopen; this header is all the two share.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vrex_model_cxx.h"

namespace vrex::bench {

enum class FaissKind { flat, hash, multihash };

struct FaissConfig {
    FaissKind kind;
    int b = 0;      // hash: bits hashed; multihash: bits per table
    int nhash = 0;  // multihash: number of tables
    int nflip = 0;  // hash / multihash: bit flips probed per table (FAISS's default is 0)

    // Exact at @radius: every code within the radius is in a probed bucket. MultiHash covers nhash * b
    // bits; a code within r differs in <= r of them, so by pigeonhole some table's substring is within
    // nflip when nhash * (nflip + 1) > r. Hash(b, nflip) is exact when nflip >= b (every bucket).
    bool exact_at(uint32_t radius) const;
    std::string describe() const;
};

class FaissIndexApi {
  public:
    virtual ~FaissIndexApi() = default;
    // Ids within Hamming distance <= @radius (inclusive) of each query. With @out == nullptr only the
    // total number of results is returned (timed passes); otherwise out[i] holds query i's ids, sorted.
    virtual size_t range(std::span<const vrex_fp> queries, uint32_t radius,
                         std::vector<std::vector<uint32_t>>* out) const = 0;
    // k = 1 `search`: the nearest code of each query (ids[i], dists[i]); FAISS returns it whatever its
    // distance (hash indexes: among probed buckets only), the caller applies the radius.
    virtual void nearest(std::span<const vrex_fp> queries, std::span<int64_t> ids,
                         std::span<int32_t> dists) const = 0;
};

class FaissBuild {
  public:
    virtual ~FaissBuild() = default;
    virtual std::unique_ptr<FaissIndexApi> make(const FaissConfig& cfg,
                                                std::span<const vrex_fp> codes) const = 0;
    // FAISS's binary range_search keeps distances strictly below its radius argument (probed at load time
    // on a tiny index rather than assumed); make()'s range() already compensates.
    virtual int radius_offset() const = 0;
};

// The entry point each module exports (extern "C", the only visible symbol).
using FaissBuildFactory = FaissBuild* (*)();
#define VREX_FAISS_FACTORY "vrex_faiss_build"

// A loaded module. name: "debian" / "native"; ok() false (with why()) when the module is missing or
// does not load, e.g. native FAISS not built yet.
class FaissModule {
  public:
    FaissModule(std::string name, const std::string& path);
    ~FaissModule();
    FaissModule(const FaissModule&) = delete;
    FaissModule& operator=(const FaissModule&) = delete;

    bool ok() const { return build_ != nullptr; }
    const std::string& name() const { return name_; }
    const std::string& why() const { return why_; }
    const FaissBuild& build() const { return *build_; }

  private:
    std::string name_;
    std::string why_;
    void* handle_ = nullptr;
    std::unique_ptr<FaissBuild> build_;
};

}  // namespace vrex::bench
