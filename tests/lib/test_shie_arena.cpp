// SHIE arena size: the per-entry link record is sized to the table's number of MIH tables m
// (t_next, t_prev and one bucket slot per table: 8 + 4m bytes), not to VREX_MIH_MAX_TABLES.
// The expected sizes come from an independent model of the layout in docs/hw/shie.md, so
// widening the link record again (or any other change of the layout) fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "test_shie_fixture.h"

namespace {

uint64_t align64(uint64_t v) {
    return (v + 63) & ~uint64_t{63};
}

// docs/hw/shie.md, "Storage": entries (32 B), dense fingerprints (16 B), links (@link_bytes),
// temporal heads (u32, power of two >= capacity), bucket counts (u32 per first chunk), chunks
// (first chunks + m pools of ceil(capacity / K)), each array 64-byte aligned, plus 63 bytes of
// slack for aligning the caller's pointer.
uint64_t model_arena(uint64_t cap, uint32_t m, uint64_t link_bytes) {
    uint64_t heads = 0;
    uint32_t min_bits = 64;
    for (uint32_t p : {(m + 1) / 2, m / 2}) {
        for (uint32_t i = 0; i < p; i++) {
            uint32_t bits = 64 / p + (i < 64 % p ? 1 : 0);
            heads += uint64_t{1} << bits;
            min_bits = std::min(min_bits, bits);
        }
    }
    uint64_t avg = (cap + (uint64_t{1} << min_bits) - 1) >> min_bits;
    uint64_t slots = avg <= 1 ? 1 : avg <= 2 ? 2 : avg <= 4 ? 4 : avg <= 10 ? 10 : 20;
    uint64_t chunk = slots == 1 ? 16 : slots == 2 ? 32 : slots == 4 ? 64 : slots == 10 ? 128 : 256;
    uint64_t nchunks = heads + m * ((cap + slots - 1) / slots);
    uint64_t thash = 1;
    while (thash < cap) thash <<= 1;

    uint64_t off = align64(cap * 32);
    off = align64(off + cap * 16);
    off = align64(off + cap * link_bytes);
    off = align64(off + thash * 4);
    off = align64(off + heads * 4);
    off += nchunks * chunk;
    return off + 63;
}

const uint32_t kCapacities[] = {1u,     64u,     1000u,   4096u,    16384u,
                                65536u, 100000u, 262144u, 1000000u, VREX_SHIE_MAX_CAPACITY};

}  // namespace

TEST(ShieLinkArena, LinkRecordIsSizedToTheTablesGeometry) {
    for (uint32_t cap : kCapacities) {
        for (uint32_t m = VREX_MIH_MIN_TABLES; m <= VREX_MIH_MAX_TABLES; m++) {
            SCOPED_TRACE("capacity " + std::to_string(cap) + " tables " + std::to_string(m));
            EXPECT_EQ(vrex_shie_arena_size_geometry(cap, m), model_arena(cap, m, 8 + 4 * m));
        }
    }
}

// The fixed 8 x 16 geometry (every capacity above 128k) is back to the arena it had before the
// geometry was sized to the capacity (40-byte links), not the one with 16 bucket slots per entry.
TEST(ShieLinkArena, EightTablesCostTheFormerArena) {
    for (uint32_t cap : {262144u, 1000000u, static_cast<uint32_t>(VREX_SHIE_MAX_CAPACITY)}) {
        SCOPED_TRACE("capacity " + std::to_string(cap));
        ASSERT_EQ(vrex_shie_mih_tables(cap), static_cast<uint32_t>(VREX_MIH_FIXED_TABLES));
        EXPECT_EQ(vrex_shie_arena_size(cap), model_arena(cap, VREX_MIH_FIXED_TABLES, 40));
        EXPECT_LE(vrex_shie_arena_size(cap) + uint64_t{32} * cap,
                  model_arena(cap, VREX_MIH_FIXED_TABLES, 8 + 4 * VREX_MIH_MAX_TABLES));
    }
    // 1M entries: 315.6 MiB as before the sized geometry, not 346.1 MiB (docs/hw/shie.md,
    // "Capacities and memory").
    EXPECT_EQ(vrex_shie_arena_size(1000000), 330909247u);
    EXPECT_LT(vrex_shie_arena_size(1000000), 316u * 1024 * 1024);
}

// Every geometry runs in an arena of exactly its size: fill the table, empty it in a scrambled
// order and fill it again, with a guard zone right behind the arena that must stay untouched and
// each link read back through the temporal chains and the buckets.
TEST(ShieLinkArena, FullTableStaysInsideTheExactArena) {
    constexpr uint32_t kCap = 3000;
    constexpr size_t kGuard = 256;
    for (uint32_t m = VREX_MIH_MIN_TABLES; m <= VREX_MIH_MAX_TABLES; m++) {
        SCOPED_TRACE("tables " + std::to_string(m));
        size_t size = vrex_shie_arena_size_geometry(kCap, m);
        ASSERT_GT(size, 0u);
        std::vector<std::byte> arena(size + kGuard + 128, std::byte{0xa5});
        vrex_shie_table t{};
        // Worst case for the slack: a pointer one byte past a 64-byte boundary.
        size_t shift = 0;
        while ((reinterpret_cast<uintptr_t>(arena.data() + shift) & 63) != 1) shift++;
        std::byte* base = arena.data() + shift;
        ASSERT_EQ(vrex_shie_init_geometry(&t, kCap, m, base, size), VREX_OK);

        std::mt19937_64 rng(m);
        std::vector<vrex_fp> fps(kCap);
        for (int round = 0; round < 2; round++) {
            for (uint32_t i = 0; i < kCap; i++) {
                fps[i] = vrex_test::random_fp(rng);
                uint32_t id = VREX_NIL;
                ASSERT_EQ(vrex_shie_insert(&t, &fps[i], 0, static_cast<uint16_t>(i % 7),
                                           static_cast<uint8_t>(i % 16), i, i, &id),
                          VREX_OK);
            }
            vrex_fp extra = vrex_test::random_fp(rng);
            EXPECT_EQ(vrex_shie_insert(&t, &extra, 0, 99, 0, 0, 0, nullptr), VREX_ENOSPC);
            for (uint32_t i = 0; i < kCap; i += 97) {
                uint32_t id = vrex_shie_find_temporal(&t, static_cast<uint16_t>(i % 7),
                                                      static_cast<uint8_t>(i % 16), i);
                ASSERT_NE(id, VREX_NIL);
                vrex_shie_query q = vrex_test::make_query(fps[i], static_cast<uint16_t>(i % 7), 0,
                                                          static_cast<uint8_t>(i % 16), 0);
                uint32_t d = 99;
                EXPECT_EQ(vrex_shie_find_similar(&t, &q, &d), id);
                EXPECT_EQ(d, 0u);
            }
            // Remove in a scrambled order: every removal moves another entry's bucket slot.
            std::vector<uint32_t> order(kCap);
            for (uint32_t i = 0; i < kCap; i++) order[i] = i;
            std::shuffle(order.begin(), order.end(), rng);
            for (uint32_t i : order) {
                uint32_t id = vrex_shie_find_temporal(&t, static_cast<uint16_t>(i % 7),
                                                      static_cast<uint8_t>(i % 16), i);
                ASSERT_NE(id, VREX_NIL);
                ASSERT_EQ(vrex_shie_remove(&t, id), VREX_OK);
            }
            EXPECT_EQ(t.live, 0u);
        }
        for (size_t i = shift + size; i < arena.size(); i++)
            ASSERT_EQ(arena[i], std::byte{0xa5}) << "byte " << i - shift - size << " behind the arena";
    }
}
