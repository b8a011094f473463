// Shared helpers for the SHIE suites: an owned table (arena + vrex_shie_table) and fingerprint
// builders.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>

extern "C" {
#include "shie_table.h"
}

namespace vrex_test {

class OwnedShie {
public:
    // Allocates the arena and initialises the table; init() reports the result of vrex_shie_init
    // (tables 0) or of vrex_shie_init_geometry with that many MIH tables.
    explicit OwnedShie(uint32_t capacity, std::size_t misalign = 0, uint32_t tables = 0)
        : size_(tables ? vrex_shie_arena_size_geometry(capacity, tables) : vrex_shie_arena_size(capacity)),
          arena_(std::make_unique_for_overwrite<std::byte[]>(size_ + misalign + 1)),
          init_(tables ? vrex_shie_init_geometry(&t_, capacity, tables, arena_.get() + misalign, size_)
                       : vrex_shie_init(&t_, capacity, arena_.get() + misalign, size_))
    {
    }
    int init() const { return init_; }
    vrex_shie_table* operator->() { return &t_; }
    vrex_shie_table* get() { return &t_; }
    const vrex_shie_table* get() const { return &t_; }

private:
    std::size_t size_;
    std::unique_ptr<std::byte[]> arena_;
    vrex_shie_table t_{};
    int init_;
};

inline vrex_fp random_fp(std::mt19937_64& rng) { return vrex_fp{{rng(), rng()}}; }

inline vrex_fp flip_bits(vrex_fp fp, uint32_t flips, std::mt19937_64& rng)
{
    for (uint32_t i = 0; i < flips; i++) {
        uint32_t bit = static_cast<uint32_t>(rng() % VREX_FP_BITS);
        fp.w[bit / 64] ^= 1ull << (bit % 64);
    }
    return fp;
}

// Flips exactly the given bit positions (distinct positions give that exact distance).
inline vrex_fp with_bits(vrex_fp fp, std::initializer_list<uint32_t> bits)
{
    for (uint32_t bit : bits)
        fp.w[bit / 64] ^= 1ull << (bit % 64);
    return fp;
}

inline vrex_shie_query make_query(const vrex_fp& fp, uint16_t stream, uint32_t pool, uint8_t region,
                                  uint32_t radius, uint8_t scope = VREX_SCOPE_STREAM,
                                  uint32_t frame_limit = VREX_NIL)
{
    vrex_shie_query q{};
    q.fp = fp;
    q.pool = pool;
    q.stream = stream;
    q.region = region;
    q.scope = scope;
    q.radius = radius;
    q.frame_limit = frame_limit;
    return q;
}

}  // namespace vrex_test
