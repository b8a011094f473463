// Block lifecycle: the block table on its own (free list, live lists, entry chains, release FIFO)
// and through the model (zombie release, touches, stream close, "a lookup never returns a released
// block").
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "test_model_fixture.h"

using namespace vrex_test;

namespace {

class BlockTable : public ::testing::Test {
  protected:
    static constexpr uint32_t kCap = 8, kEntries = 16, kStreams = 3;
    void SetUp() override {
        arena_.resize(vrex_blocks_arena_size(kCap, kEntries, kStreams));
        ASSERT_EQ(vrex_blocks_init(&bl_, kCap, kEntries, kStreams, arena_.data(), arena_.size()), 0);
    }
    std::vector<uint32_t> live_list(uint32_t stream) const {
        std::vector<uint32_t> ids;
        uint32_t prev = VREX_NIL;
        for (uint32_t id = bl_.stream_head[stream]; id != VREX_NIL; id = bl_.b[id].next) {
            EXPECT_EQ(bl_.b[id].prev, prev) << "back link of block " << id;
            EXPECT_EQ(bl_.b[id].stream, stream);
            prev = id;
            ids.push_back(id);
        }
        return ids;
    }
    uint32_t free_count() const {
        uint32_t n = 0;
        for (uint32_t id = bl_.free_head; id != VREX_NIL; id = bl_.b[id].next) n++;
        return n;
    }
    std::vector<uint8_t> arena_;
    vrex_blocks bl_{};
    vrex_kv_ref kv_{4096, 100, 7};
};

TEST(BlockArena, SizeIsZeroForZeroDimensions) {
    EXPECT_EQ(vrex_blocks_arena_size(0, 16, 1), 0u);
    EXPECT_EQ(vrex_blocks_arena_size(16, 0, 1), 0u);
    EXPECT_EQ(vrex_blocks_arena_size(16, 16, 0), 0u);
    EXPECT_GE(vrex_blocks_arena_size(16, 16, 1), 16 * sizeof(vrex_block) + 16 * sizeof(vrex_released));
}

TEST(BlockArena, InitRejectsShortArenaAndZeroCapacity) {
    vrex_blocks bl{};
    size_t need = vrex_blocks_arena_size(4, 4, 2);
    std::vector<uint8_t> arena(need);
    EXPECT_EQ(vrex_blocks_init(&bl, 4, 4, 2, arena.data(), need - 1), VREX_ENOMEM);
    EXPECT_EQ(vrex_blocks_init(&bl, 4, 4, 2, nullptr, need), VREX_ENOMEM);
    EXPECT_EQ(vrex_blocks_init(&bl, 0, 4, 2, arena.data(), need), VREX_EINVAL);
    // Any alignment of the arena works: the size includes the slack.
    std::vector<uint8_t> big(need + 1);
    EXPECT_EQ(vrex_blocks_init(&bl, 4, 4, 2, big.data() + 1, need), 0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(bl.b) % 8, 0u);
}

TEST_F(BlockTable, AllocatesEveryFreeSlotOnceThenReportsFull) {
    std::set<uint32_t> ids;
    for (uint32_t i = 0; i < kCap; i++) {
        uint32_t id = vrex_blocks_alloc(&bl_, static_cast<uint16_t>(i % kStreams), 1, &kv_, 3);
        ASSERT_NE(id, VREX_NIL);
        EXPECT_TRUE(vrex_blocks_is_live(&bl_, id));
        EXPECT_EQ(bl_.b[id].last_access, 3u);
        EXPECT_EQ(bl_.b[id].first_entry, VREX_NIL);
        ids.insert(id);
    }
    EXPECT_EQ(ids.size(), kCap);
    EXPECT_EQ(bl_.live, kCap);
    EXPECT_EQ(vrex_blocks_alloc(&bl_, 0, 0, &kv_, 0), VREX_NIL);
    EXPECT_EQ(live_list(0).size() + live_list(1).size() + live_list(2).size(), kCap);
    EXPECT_FALSE(vrex_blocks_is_live(&bl_, kCap));
    EXPECT_FALSE(vrex_blocks_is_live(&bl_, VREX_NIL));
}

TEST_F(BlockTable, UndoAllocRestoresTheExactTable) {
    uint32_t a = vrex_blocks_alloc(&bl_, 1, 0, &kv_, 0);
    uint32_t b = vrex_blocks_alloc(&bl_, 1, 0, &kv_, 0);
    ASSERT_NE(b, VREX_NIL);
    std::vector<vrex_block> before(bl_.b, bl_.b + kCap);
    uint32_t free_head = bl_.free_head, head1 = bl_.stream_head[1];

    uint32_t c = vrex_blocks_alloc(&bl_, 1, 2, &kv_, 9);
    vrex_blocks_undo_alloc(&bl_, c);

    EXPECT_EQ(bl_.free_head, free_head);
    EXPECT_EQ(bl_.stream_head[1], head1);
    EXPECT_EQ(bl_.live, 2u);
    EXPECT_EQ(std::memcmp(before.data(), bl_.b, kCap * sizeof(vrex_block)), 0);
    EXPECT_EQ(live_list(1), (std::vector<uint32_t>{b, a}));
}

TEST_F(BlockTable, EntryChainHoldsEveryLinkedEntry) {
    uint32_t id = vrex_blocks_alloc(&bl_, 0, 0, &kv_, 0);
    vrex_blocks_link_entry(&bl_, id, 5);
    vrex_blocks_link_entry(&bl_, id, 11);
    vrex_blocks_link_entry(&bl_, id, 2);
    std::set<uint32_t> chain;
    for (uint32_t e = bl_.b[id].first_entry; e != VREX_NIL; e = bl_.entry_next[e]) chain.insert(e);
    EXPECT_EQ(chain, (std::set<uint32_t>{2, 5, 11}));
    EXPECT_EQ(bl_.b[id].nentries, 3u);
}

TEST_F(BlockTable, PopOnEmptyFifoReturnsZeroAndClearResetsEverything) {
    vrex_released rec{};
    EXPECT_EQ(vrex_blocks_pop_released(&bl_, &rec), 0);
    EXPECT_EQ(vrex_blocks_queued(&bl_), 0u);
    for (uint32_t i = 0; i < kCap; i++) vrex_blocks_alloc(&bl_, 2, 0, &kv_, 0);
    vrex_blocks_clear(&bl_, kStreams);
    EXPECT_EQ(bl_.live, 0u);
    EXPECT_EQ(free_count(), kCap);
    EXPECT_TRUE(live_list(2).empty());
}

// ---- through the model ------------------------------------------------------------------------

class Lifecycle : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_EQ(dev_.init_rc(), 0);
        ASSERT_EQ(vrex_model_stream_open(dev_.get(), 0, 0), 0);
        ASSERT_EQ(dev_.frame(0), 0);
    }
    uint32_t insert(uint32_t stream, uint32_t region, int32_t offset = 0, uint32_t tag = 1) {
        vrex_fp fp = make_fp(region * 0x1111ull + tag, tag);
        vrex_kv_ref kv = kv_at(dev_->cfg, region % 4, region * 1024, 1000, tag);
        uint32_t block = VREX_NIL;
        EXPECT_EQ(vrex_model_insert(dev_.get(), stream, region, offset, &fp, &kv, VREX_NIL, &block), 0);
        return block;
    }
    uint32_t retire(uint32_t stream) {
        uint32_t n = VREX_NIL;
        EXPECT_EQ(vrex_model_retire(dev_.get(), stream, &n), 0);
        return n;
    }
    bool live(uint32_t block) {
        vrex_block b;
        return vrex_model_block_info(dev_.get(), block, &b) == 0;
    }
    Device dev_;
};

TEST_F(Lifecycle, ZombieReleasedAfterExactlyZPlusOneColdFramesNeverEarlier) {
    for (uint32_t z : {1u, 2u, 5u, 9u}) {
        SCOPED_TRACE(z);
        vrex_model_write(dev_.get(), VREX_REG_ZOMBIE_FRAMES, z);
        uint32_t block = insert(0, 3, 0, z);
        for (uint32_t cold = 1; cold <= z; cold++) {
            ASSERT_EQ(dev_.frame(0), 0);
            EXPECT_EQ(retire(0), 0u) << "released after only " << cold << " cold frames";
            EXPECT_TRUE(live(block));
        }
        ASSERT_EQ(dev_.frame(0), 0);
        EXPECT_EQ(retire(0), 1u);
        EXPECT_FALSE(live(block));
        vrex_released rec{};
        ASSERT_EQ(vrex_model_pop_released(dev_.get(), &rec), 1);
        EXPECT_EQ(rec.block, block);
        EXPECT_EQ(rec.reason, VREX_RELEASE_ZOMBIE);
        EXPECT_EQ(rec.kv.tag, z);
    }
    EXPECT_EQ(dev_->cnt[VREX_CNT_EVICTIONS], 4u);
}

TEST_F(Lifecycle, TouchedBlocksSurviveColdOnesDoNot) {
    uint32_t hot = insert(0, 1, 0, 10);
    uint32_t cold = insert(0, 2, 0, 11);
    vrex_fp hot_fp = make_fp(1 * 0x1111ull + 10, 10);
    for (int f = 0; f < 12; f++) {
        ASSERT_EQ(dev_.frame(0), 0);
        vrex_lookup_result r{};
        ASSERT_EQ(vrex_model_lookup_similar(dev_.get(), 0, 1, &hot_fp, 0, 0, &r), 0);
        ASSERT_EQ(r.block, hot);
        vrex_block b{};
        ASSERT_EQ(vrex_model_block_info(dev_.get(), hot, &b), 0);
        EXPECT_EQ(b.last_access, dev_->streams[0].frame);
        retire(0);
    }
    EXPECT_TRUE(live(hot));
    EXPECT_FALSE(live(cold));
}

TEST_F(Lifecycle, TemporalHitTouchesTheBlock) {
    // Inserted at frame 0 into the predicted slot of frame 2: last access 0.
    uint32_t block = insert(0, 4, 2, 3);
    ASSERT_EQ(dev_.frame(0), 0);
    ASSERT_EQ(dev_.frame(0), 0);
    vrex_lookup_result r{};
    ASSERT_EQ(vrex_model_lookup_temporal(dev_.get(), 0, 4, 0, &r), 0);
    ASSERT_TRUE(r.hit);
    EXPECT_EQ(r.block, block);
    EXPECT_EQ(r.frame, 2u);
    vrex_block b{};
    ASSERT_EQ(vrex_model_block_info(dev_.get(), block, &b), 0);
    EXPECT_EQ(b.last_access, 2u);
    // Cold from frame 2 on: survives frame 2 + Z, released at frame 2 + Z + 1.
    for (uint32_t f = 3; f <= 2 + dev_->cfg.zombie_frames; f++) {
        ASSERT_EQ(dev_.frame(0), 0);
        EXPECT_EQ(retire(0), 0u) << "frame " << f;
    }
    ASSERT_EQ(dev_.frame(0), 0);
    EXPECT_EQ(retire(0), 1u);
}

TEST_F(Lifecycle, ReleasedBlockEntriesLeaveTemporalAndSimilarityIndexes) {
    uint32_t block = insert(0, 6, 0, 42);
    vrex_fp fp = make_fp(6 * 0x1111ull + 42, 42);
    uint32_t alias_out = VREX_NIL;
    vrex_fp fp2 = make_fp(~0ull, 0);
    ASSERT_EQ(vrex_model_insert(dev_.get(), 0, 7, 0, &fp2, nullptr, block, &alias_out), 0);
    EXPECT_EQ(dev_->shie.live, 2u);
    for (int f = 0; f < 5; f++) {
        ASSERT_EQ(dev_.frame(0), 0);
        EXPECT_EQ(retire(0), 0u);
    }
    ASSERT_EQ(dev_.frame(0), 0);
    ASSERT_EQ(retire(0), 1u);
    EXPECT_EQ(dev_->shie.live, 0u);
    EXPECT_EQ(dev_->cnt[VREX_CNT_LIVE_ENTRIES], 0u);
    EXPECT_EQ(dev_->cnt[VREX_CNT_LIVE_BLOCKS], 0u);

    vrex_shie_query q{};
    q.fp = fp;
    q.pool = 0;
    q.stream = 0;
    q.region = 6;
    q.scope = VREX_SCOPE_POOL;
    q.radius = VREX_SHIE_MAX_RADIUS;
    q.frame_limit = VREX_NIL;
    uint32_t d = 0;
    EXPECT_EQ(vrex_shie_find_similar(&dev_->shie, &q, &d), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_similar_bruteforce(&dev_->shie, &q, &d), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_temporal(&dev_->shie, 0, 6, 0), VREX_NIL);
    EXPECT_EQ(vrex_shie_find_temporal(&dev_->shie, 0, 7, 0), VREX_NIL);
    vrex_lookup_result r{};
    ASSERT_EQ(
        vrex_model_lookup_similar(dev_.get(), 0, 6, &fp, VREX_SHIE_MAX_RADIUS, VREX_ARGF_SCOPE_POOL, &r), 0);
    EXPECT_FALSE(r.hit);
    EXPECT_EQ(r.block, VREX_NIL);
}

TEST_F(Lifecycle, ReleaseFifoKeepsOrderAndHoldsSlotsUntilPopped) {
    // Fill the table over several frames, let everything go cold, then retire.
    std::vector<uint32_t> blocks;
    for (uint32_t i = 0; i < dev_->cfg.block_capacity; i++) {
        if (i && i % 16 == 0) {
            ASSERT_EQ(dev_.frame(0), 0);
        }
        blocks.push_back(insert(0, i % 16, 0, 100 + i));
    }
    vrex_fp fp = make_fp(1, 2);
    vrex_kv_ref kv = kv_at(dev_->cfg, 0, 0, 64, 1);
    uint32_t out;
    ASSERT_EQ(dev_.frame(0), 0);
    EXPECT_EQ(vrex_model_insert(dev_.get(), 0, 0, 0, &fp, &kv, VREX_NIL, &out), VREX_ENOSPC);
    for (int f = 0; f < 6; f++) ASSERT_EQ(dev_.frame(0), 0);
    ASSERT_EQ(retire(0), dev_->cfg.block_capacity);
    EXPECT_EQ(dev_->blocks.live, 0u);
    // Released but not yet popped: the ids are still reserved.
    EXPECT_EQ(vrex_model_insert(dev_.get(), 0, 0, 0, &fp, &kv, VREX_NIL, &out), VREX_ENOSPC);

    std::set<uint32_t> popped;
    std::vector<uint32_t> tags;
    vrex_released rec{};
    while (vrex_model_pop_released(dev_.get(), &rec)) {
        EXPECT_EQ(rec.reason, VREX_RELEASE_ZOMBIE);
        EXPECT_EQ(rec.stream, 0u);
        popped.insert(rec.block);
        tags.push_back(rec.kv.tag);
    }
    EXPECT_EQ(popped, std::set<uint32_t>(blocks.begin(), blocks.end()));
    // Retirement walks the live list (newest first) and queues in that order.
    for (size_t i = 1; i < tags.size(); i++) EXPECT_EQ(tags[i - 1], tags[i] + 1);
    EXPECT_EQ(vrex_model_insert(dev_.get(), 0, 0, 0, &fp, &kv, VREX_NIL, &out), 0);
}

TEST_F(Lifecycle, RemoveReturnsRecordWithoutQueueingAndFreesAtOnce) {
    uint32_t block = insert(0, 9, 0, 77);
    vrex_released rec{};
    ASSERT_EQ(vrex_model_remove(dev_.get(), block, &rec), 0);
    EXPECT_EQ(rec.block, block);
    EXPECT_EQ(rec.reason, VREX_RELEASE_REMOVED);
    EXPECT_EQ(rec.kv.tag, 77u);
    EXPECT_EQ(rec.bank, 1u);
    EXPECT_EQ(vrex_blocks_queued(&dev_->blocks), 0u);
    EXPECT_EQ(vrex_model_remove(dev_.get(), block, &rec), VREX_ENOENT);
    EXPECT_EQ(dev_->cnt[VREX_CNT_REMOVES], 1u);
    EXPECT_EQ(insert(0, 9, 0, 78), block) << "a removed slot is free immediately";
}

TEST_F(Lifecycle, StreamCloseReleasesBlocksAndDropsAliasEntries) {
    ASSERT_EQ(vrex_model_stream_open(dev_.get(), 1, 0), 0);
    ASSERT_EQ(dev_.frame(1, 1), 0);
    uint32_t own0 = insert(0, 1, 0, 1);
    uint32_t own1 = insert(1, 2, 0, 2);
    vrex_fp fp = make_fp(5, 5);
    uint32_t out;
    // Stream 1 aliases stream 0's block, stream 0 aliases stream 1's.
    ASSERT_EQ(vrex_model_insert(dev_.get(), 1, 3, 0, &fp, nullptr, own0, &out), 0);
    ASSERT_EQ(vrex_model_insert(dev_.get(), 0, 4, 0, &fp, nullptr, own1, &out), 0);
    EXPECT_EQ(dev_->shie.live, 4u);

    uint32_t n = 0;
    ASSERT_EQ(vrex_model_stream_close(dev_.get(), 1, &n), 0);
    EXPECT_EQ(n, 1u);
    EXPECT_FALSE(live(own1));
    EXPECT_TRUE(live(own0));
    // Left: stream 0's own entry on own0. Its alias on own1 went with own1, stream 1's alias on own0
    // went with stream 1.
    EXPECT_EQ(dev_->shie.live, 1u);
    vrex_block b{};
    ASSERT_EQ(vrex_model_block_info(dev_.get(), own0, &b), 0);
    EXPECT_EQ(b.nentries, 1u);
    EXPECT_EQ(vrex_shie_find_temporal(&dev_->shie, 1, 3, 0), VREX_NIL);

    vrex_released rec{};
    ASSERT_EQ(vrex_model_pop_released(dev_.get(), &rec), 1);
    EXPECT_EQ(rec.block, own1);
    EXPECT_EQ(rec.reason, VREX_RELEASE_STREAM_CLOSED);
    EXPECT_EQ(rec.stream, 1u);
    EXPECT_EQ(vrex_model_pop_released(dev_.get(), &rec), 0);

    EXPECT_EQ(vrex_model_stream_close(dev_.get(), 1, &n), VREX_EINVAL);
    // Reopened, stream 1 starts over at frame 0 with no stale entries.
    ASSERT_EQ(vrex_model_stream_open(dev_.get(), 1, 0), 0);
    vrex_frame_result fr{};
    ASSERT_EQ(dev_.frame(1, 1, &fr), 0);
    EXPECT_EQ(fr.frame, 0u);
    EXPECT_NE(insert(1, 3, 0, 9), VREX_NIL);
}

TEST_F(Lifecycle, ClosingTheLastStreamOfAPoolFreesItsBankGroups) {
    ASSERT_EQ(vrex_model_stream_open(dev_.get(), 1, 7), 0);
    ASSERT_EQ(vrex_model_stream_open(dev_.get(), 2, 7), 0);
    vrex_frame_result fr{};
    ASSERT_EQ(dev_.frame(1, 3, &fr), 0);
    uint32_t g = fr.bank.group;
    EXPECT_EQ(vrex_model_read(dev_.get(), VREX_REG_GROUP_POOL(g)), 7u);
    ASSERT_EQ(vrex_model_stream_close(dev_.get(), 1, nullptr), 0);
    EXPECT_EQ(vrex_model_read(dev_.get(), VREX_REG_GROUP_POOL(g)), 7u) << "stream 2 still uses pool 7";
    ASSERT_EQ(vrex_model_stream_close(dev_.get(), 2, nullptr), 0);
    EXPECT_EQ(vrex_model_read(dev_.get(), VREX_REG_GROUP_POOL(g)), VREX_NIL);
}

// Property: whatever the interleaving, a lookup only ever returns a live block that was inserted
// and not released, with the KV reference it was inserted with; released blocks leave no entry.
TEST(LifecycleProperty, LookupNeverReturnsAReleasedBlock) {
    vrex_model_config cfg = small_config();
    cfg.zombie_frames = 2;
    Device dev(cfg);
    ASSERT_EQ(dev.init_rc(), 0);
    vrex_model* m = dev.get();
    std::mt19937 rng(20261129);
    std::map<uint32_t, uint32_t> live_tag;  // block -> tag it was inserted with
    std::set<uint32_t> released_tags;
    std::vector<vrex_fp> fps;
    uint32_t next_tag = 1;
    bool open[3] = {false, false, false};

    auto check_hit = [&](const vrex_lookup_result& r) {
        if (!r.hit) return;
        ASSERT_TRUE(live_tag.count(r.block)) << "lookup returned released block " << r.block;
        EXPECT_EQ(live_tag[r.block], r.kv.tag);
        EXPECT_FALSE(released_tags.count(r.kv.tag));
    };
    auto drain = [&] {
        vrex_released rec{};
        while (vrex_model_pop_released(m, &rec)) {
            ASSERT_TRUE(live_tag.count(rec.block));
            EXPECT_EQ(live_tag[rec.block], rec.kv.tag);
            released_tags.insert(rec.kv.tag);
            live_tag.erase(rec.block);
        }
    };

    for (int step = 0; step < 1500; step++) {
        uint32_t s = rng() % 3;
        uint32_t op = rng() % 100;
        if (!open[s]) {
            ASSERT_EQ(vrex_model_stream_open(m, s, s == 2 ? VREX_POOL_PRIVATE + 2 : 0), 0);
            open[s] = true;
            continue;
        }
        if (op < 12) {
            ASSERT_EQ(dev.frame(s, rng() % 4), 0);
        } else if (op < 45) {
            vrex_fp fp = fps.empty() || rng() % 2 ? make_fp((uint64_t)rng() << 32 | rng(), rng())
                                                  : fps[rng() % fps.size()];
            fp.w[0] ^= 1ull << (rng() % 64);
            uint32_t tag = next_tag++;
            vrex_kv_ref kv = kv_at(cfg, rng() % 7, (rng() % 60) * 1024, 1 + rng() % 4096, tag);
            uint32_t block = VREX_NIL;
            bool alias = !live_tag.empty() && rng() % 4 == 0;
            uint32_t target = alias ? std::next(live_tag.begin(), rng() % live_tag.size())->first : VREX_NIL;
            int rc = vrex_model_insert(m, s, rng() % 16, static_cast<int32_t>(rng() % 6) - 3, &fp, &kv,
                                       target, &block);
            if (rc == 0) {
                fps.push_back(fp);
                if (!alias)
                    live_tag[block] = tag;
                else
                    EXPECT_EQ(block, target);
            } else {
                EXPECT_TRUE(rc == VREX_EEXIST || rc == VREX_ENOSPC || rc == VREX_ERANGE || rc == VREX_EINVAL)
                    << rc;
            }
        } else if (op < 65) {
            vrex_lookup_result r{};
            int rc = vrex_model_lookup_temporal(m, s, rng() % 16, static_cast<int32_t>(rng() % 6) - 3, &r);
            if (rc == 0) check_hit(r);
        } else if (op < 85) {
            vrex_lookup_result r{};
            vrex_fp q = fps.empty() ? make_fp(rng(), rng()) : fps[rng() % fps.size()];
            q.w[1] ^= 1ull << (rng() % 64);
            ASSERT_EQ(vrex_model_lookup_similar(m, s, rng() % 16, &q, rng() % 32, rng() % 2, &r), 0);
            check_hit(r);
        } else if (op < 93) {
            ASSERT_EQ(vrex_model_retire(m, s, nullptr), 0);
            drain();
        } else if (op < 97 && !live_tag.empty()) {
            uint32_t block = std::next(live_tag.begin(), rng() % live_tag.size())->first;
            vrex_released rec{};
            ASSERT_EQ(vrex_model_remove(m, block, &rec), 0);
            released_tags.insert(rec.kv.tag);
            live_tag.erase(block);
        } else if (op >= 99) {
            ASSERT_EQ(vrex_model_stream_close(m, s, nullptr), 0);
            open[s] = false;
            drain();
        }
        ASSERT_EQ(m->blocks.live, live_tag.size());
        ASSERT_EQ(m->cnt[VREX_CNT_LIVE_BLOCKS], live_tag.size());
        ASSERT_EQ(m->cnt[VREX_CNT_LIVE_ENTRIES], m->shie.live);
    }
    // No valid entry anywhere in the table points at a block that is not live.
    uint32_t valid = 0;
    for (uint32_t e = 0; e < m->shie.capacity; e++) {
        if (!m->shie.e[e].valid) continue;
        valid++;
        EXPECT_TRUE(live_tag.count(m->shie.e[e].block)) << "entry " << e;
    }
    EXPECT_EQ(valid, m->shie.live);
    EXPECT_GT(m->cnt[VREX_CNT_EVICTIONS], 0u);
    EXPECT_GT(m->cnt[VREX_CNT_EXACT_HITS] + m->cnt[VREX_CNT_APPROX_HITS], 0u);
}

}  // namespace
