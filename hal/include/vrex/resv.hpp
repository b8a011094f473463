// ReSV at the engine level (docs/hw/resv.md): a ResvHead is one (layer, attention head) of one
// sequence on the device. append() hashes keys into it (the HCU clusters them), select() asks the
// WiCSum unit which tokens a query should attend to and returns them as merged ranges.
//
// Threading: a ResvHead is used by one thread at a time (like a Stream). Nothing throws.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "vrex/export.h"
#include "vrex/hal.hpp"

namespace vrex {

enum class ResvMode : std::uint32_t { mass = 0, tokens = 1 };  // the device's mode values (resv.cpp checks)

struct ResvParams {
    std::uint64_t seed = 0x5245535631323334ull;  // the device's default
    std::uint32_t dim = 128;                     // values per key, 1..256
    std::uint32_t th = 7;                        // clustering radius (Hamming)
    double ratio = 0.3;                          // WiCSum ratio, 0..1 (Q16 on the device)
    ResvMode mode = ResvMode::mass;
    std::uint32_t tokens_per_block = 16;
    std::uint32_t bytes_per_token = 0;  // 0: fp16 K and V, 4 * dim
    // MASS weight per Hamming distance; empty = the device default (docs/hw/resv.md §2.3).
    std::vector<std::uint16_t> lut;
};

struct ResvRange {
    std::uint32_t first = 0;
    std::uint32_t count = 0;
};

struct ResvSelection {
    std::vector<ResvRange> ranges;  // ascending, merged: tokens, or blocks with blocks = true
    std::uint32_t tokens = 0;       // tokens selected
    std::uint32_t clusters = 0;     // clusters selected
    std::uint32_t head_tokens = 0;  // tokens the head holds
    std::uint32_t qhash = 0;
    std::uint32_t cutoff = 0;  // Hamming distance of the last selected cluster
};

// float -> the int16 fixed point the hash unit reads, scaled per vector to the full int16 range
// (the sign-projection hash does not depend on a positive scale). @out.size() == @in.size().
VREX_API void resv_quantize(std::span<const float> in, std::span<std::int16_t> out);

class VREX_API ResvHead {
  public:
    // EOPNOTSUPP when the device has no ReSV unit; EINVAL for bad params; EBUSY when every hardware
    // head is in use. @max_batch: keys staged per device command (larger appends are split).
    static Result<std::unique_ptr<ResvHead>> create(std::shared_ptr<Device> device, const ResvParams& params,
                                                    std::uint32_t max_batch = 1024);
    ~ResvHead();
    ResvHead(const ResvHead&) = delete;
    ResvHead& operator=(const ResvHead&) = delete;

    std::uint32_t id() const noexcept { return head_; }
    std::uint32_t dim() const noexcept { return dim_; }
    std::uint32_t tokens() const noexcept { return tokens_; }

    // Appends keys.size() / dim() keys (a multiple of dim()); all or nothing (ENOSPC: head full).
    // Returns the tokens the head holds afterwards.
    Result<std::uint32_t> append(std::span<const std::int16_t> keys);
    Result<std::uint32_t> append(std::span<const float> keys);
    // The WiCSum selection for one query of dim() values.
    Result<ResvSelection> select(std::span<const std::int16_t> query, bool blocks = false);
    Result<ResvSelection> select(std::span<const float> query, bool blocks = false);
    // Keeps the first @keep tokens (EINVAL beyond tokens()).
    Result<void> truncate(std::uint32_t keep);

    class Key {
        friend class ResvHead;
        Key() = default;
    };
    ResvHead(Key, std::shared_ptr<Device> device, std::uint32_t head, std::uint32_t dim, std::uint32_t bo,
             std::span<std::byte> map, std::uint32_t max_batch, std::uint32_t max_ranges);

  private:
    VREX_LOCAL std::error_code fail(std::error_code ec);  // private: not exported

    std::shared_ptr<Device> device_;
    std::uint32_t head_;
    std::uint32_t dim_;
    std::uint32_t bo_;  // staging: keys, then the query, then the ranges
    std::span<std::byte> map_;
    std::uint32_t max_batch_;
    std::uint32_t max_ranges_;
    std::uint32_t tokens_ = 0;
};

// Keys hashed where they are inserted, without a device head: the HCU's hash (lib/resv.c) of each
// key, quantised as append() does, over the +-1 planes @seed expands to. @keys holds out.size() keys
// of @dim values. EINVAL for dim 0 or above 256, or sizes that do not match.
VREX_API Result<void> resv_hash(std::uint64_t seed, std::uint32_t dim, std::span<const float> keys,
                                std::span<std::uint32_t> out);

// Position-aware WiCSum over blocks (docs/hw/resv.md §8.2; lib/resv.c vrex_resv_select_blocks):
// token i weighs lut[Hamming(hashes[i], qhash)] x position[i] (the position table's exp(bias) of
// the token, 0..1, Q16 on the device), a block of @tokens_per_block tokens the sum of its tokens;
// the heaviest blocks (ties: the lower) until their sum reaches @ratio of the total, in that order,
// as indices of blocks in @hashes. EINVAL for spans of different lengths, no tokens, more than
// 32768, not whole blocks, a lut not of 33 entries, a position weight or @ratio outside 0..1.
VREX_API Result<std::vector<std::uint32_t>> resv_select_blocks(std::span<const std::uint32_t> hashes,
                                                               std::span<const float> position,
                                                               std::uint32_t qhash,
                                                               std::span<const std::uint16_t> lut,
                                                               double ratio, std::uint32_t tokens_per_block);

// The WTU's MASS table for a logit scale |q| |k| / sqrt(dim) of @scale (docs/hw/resv.md §2.3): per
// Hamming distance d, round(65535 exp(scale (cos(pi d / 32) - 1))), at least 1 so that every key
// keeps a weight. EINVAL for a negative or non-finite scale.
VREX_API Result<std::vector<std::uint16_t>> resv_mass_lut(double scale);

// Device-wide ReSV counters (docs/hw/resv.md), all users of the device.
struct ResvStats {
    std::uint64_t keys = 0;
    std::uint64_t clusters = 0;
    std::uint64_t selects = 0;
    std::uint64_t tokens_scanned = 0;
    std::uint64_t tokens_selected = 0;
    std::uint64_t bytes_selected = 0;
    std::uint64_t ranges = 0;
    std::uint32_t heads = 0;  // hardware heads, and how many are in use
    std::uint32_t heads_in_use = 0;
    std::uint32_t max_tokens = 0;  // per head
    std::uint32_t max_clusters = 0;
};

// Device-wide ReSV counters (EOPNOTSUPP without the unit).
VREX_API Result<ResvStats> resv_stats(Device& device);

}  // namespace vrex
