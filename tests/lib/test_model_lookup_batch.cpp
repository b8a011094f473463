// LOOKUP_SIMILAR_BATCH through the register file: every record equals what LOOKUP_SIMILAR leaves
// in RES_* for the same query on an identical device (random clustered tables and queries), the
// counters and block ages move the same way, and a malformed batch fails whole, writing nothing.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "test_model_fixture.h"

using namespace vrex_test;

namespace {

constexpr uint32_t kStreams = 4;
constexpr uint32_t kNoFrameStream = 3;  // open, never framed: PAST_ONLY is refused per query
constexpr uint64_t kTail = 16 * 1024;   // device memory past the banks: the staging area

vrex_model_config batch_config() {
    vrex_model_config cfg = small_config();
    cfg.max_streams = kStreams;
    cfg.shie_capacity = 1024;
    cfg.block_capacity = 1024;
    return cfg;
}

struct Dev {
    Device d{batch_config(), batch_config().nbanks* batch_config().bank_size + kTail};
    uint64_t src() const { return banks(); }
    uint64_t banks() const { return uint64_t{batch_config().nbanks} * batch_config().bank_size; }
    uint64_t dst() const { return banks() + VREX_LOOKUP_BATCH_MAX * sizeof(vrex_lookup_desc); }

    uint32_t r(uint32_t off) { return vrex_model_read(d.get(), off); }
    void w(uint32_t off, uint32_t v) { vrex_model_write(d.get(), off, v); }
    void w64(uint32_t lo, uint32_t hi, uint64_t v) {
        w(lo, static_cast<uint32_t>(v));
        w(hi, static_cast<uint32_t>(v >> 32));
    }
    uint64_t r64(uint32_t lo, uint32_t hi) { return uint64_t{r(hi)} << 32 | r(lo); }
    int cmd(uint32_t op) {
        w(VREX_REG_CMD, op);
        const uint32_t st = r(VREX_REG_STATUS);
        if (st & VREX_STATUS_ERROR)
            return static_cast<int>((st & VREX_STATUS_ERRNO_MASK) >> VREX_STATUS_ERRNO_SHIFT);
        EXPECT_EQ(st, VREX_STATUS_DONE);
        return 0;
    }
    int batch(const std::vector<vrex_lookup_desc>& q, uint64_t src, uint64_t dst, uint32_t count) {
        if (!q.empty() && src <= d.mem().size() &&
            q.size() * sizeof(vrex_lookup_desc) <= d.mem().size() - src)
            std::memcpy(d.mem().data() + src, q.data(), q.size() * sizeof(vrex_lookup_desc));
        w64(VREX_REG_ARG_SRC_LO, VREX_REG_ARG_SRC_HI, src);
        w64(VREX_REG_ARG_DST_LO, VREX_REG_ARG_DST_HI, dst);
        w(VREX_REG_ARG_COUNT, count);
        return cmd(VREX_CMD_LOOKUP_SIMILAR_BATCH);
    }
    vrex_lookup_rec rec(uint64_t dst, uint32_t i) {
        vrex_lookup_rec out;
        std::memcpy(&out, d.mem().data() + dst + i * sizeof(out), sizeof(out));
        return out;
    }
    // LOOKUP_SIMILAR for @q, its outcome as a record built from STATUS and RES_*.
    vrex_lookup_rec single(const vrex_lookup_desc& q) {
        w(VREX_REG_ARG_STREAM, q.stream);
        w(VREX_REG_ARG_REGION, q.region);
        w64(VREX_REG_ARG_FP(0), VREX_REG_ARG_FP(1), q.fp[0]);
        w64(VREX_REG_ARG_FP(2), VREX_REG_ARG_FP(3), q.fp[1]);
        w(VREX_REG_ARG_RADIUS, q.radius);
        w(VREX_REG_ARG_FLAGS, q.flags);
        vrex_lookup_rec out{};
        out.block = VREX_NIL;
        out.status = static_cast<uint32_t>(cmd(VREX_CMD_LOOKUP_SIMILAR));
        if (out.status) return out;
        out.flags = r(VREX_REG_RES_FLAGS);
        out.block = r(VREX_REG_RES_BLOCK);
        if (!(out.flags & VREX_RESF_HIT)) return out;
        out.distance = r(VREX_REG_RES_DISTANCE);
        out.frame = r(VREX_REG_RES_FRAME);
        out.stream = r(VREX_REG_RES_STREAM);
        out.region = static_cast<uint8_t>(r(VREX_REG_RES_REGION));
        out.bank = static_cast<uint8_t>(r(VREX_REG_RES_BANK_FIRST));
        out.last_access = r(VREX_REG_RES_LAST_ACCESS);
        out.fp[0] = r64(VREX_REG_RES_FP(0), VREX_REG_RES_FP(1));
        out.fp[1] = r64(VREX_REG_RES_FP(2), VREX_REG_RES_FP(3));
        out.kv_addr = r64(VREX_REG_RES_KV_ADDR_LO, VREX_REG_RES_KV_ADDR_HI);
        out.kv_tag = r(VREX_REG_RES_KV_TAG);
        out.kv_len = r(VREX_REG_RES_KV_LEN);
        return out;
    }
    std::vector<uint64_t> counters() {
        std::vector<uint64_t> c;
        for (uint32_t i = 0; i < VREX_CNT_NUM; i++) c.push_back(r64(VREX_REG_CNT_LO(i), VREX_REG_CNT_HI(i)));
        return c;
    }
    std::vector<uint32_t> ages() {
        std::vector<uint32_t> a;
        for (uint32_t b = 0; b < d->cfg.block_capacity; b++) a.push_back(d->blocks.b[b].last_access);
        return a;
    }
};

void expect_same(const vrex_lookup_rec& a, const vrex_lookup_rec& b, uint32_t i) {
    EXPECT_EQ(0, std::memcmp(&a, &b, sizeof(a)))
        << "query " << i << ": batch status " << a.status << " flags " << a.flags << " block " << a.block
        << " dist " << a.distance << " / single status " << b.status << " flags " << b.flags << " block "
        << b.block << " dist " << b.distance;
}

// Both devices get the same streams, frames and clustered entries (a few base codes plus flips).
class Scene {
  public:
    explicit Scene(uint32_t seed) : rng_(seed) {
        for (int i = 0; i < 6; i++) bases_.push_back(make_fp(rng_(), rng_()));
    }

    vrex_fp near(uint32_t max_flips) {
        vrex_fp fp = bases_[rng_() % bases_.size()];
        const uint32_t flips = rng_() % (max_flips + 1);
        for (uint32_t f = 0; f < flips; f++) {
            const uint32_t bit = rng_() % 128;
            fp.w[bit / 64] ^= uint64_t{1} << (bit % 64);
        }
        return fp;
    }

    void setup(Dev& a, Dev& b) {
        for (Dev* d : {&a, &b}) {
            ASSERT_EQ(0, vrex_model_stream_open(d->d.get(), 0, 0));
            ASSERT_EQ(0, vrex_model_stream_open(d->d.get(), 1, 0));
            ASSERT_EQ(0, vrex_model_stream_open(d->d.get(), 2, VREX_POOL_PRIVATE + 2));
            ASSERT_EQ(0, vrex_model_stream_open(d->d.get(), kNoFrameStream, 1));
        }
    }

    // One frame on streams 0..2, each with 16 entries of clustered codes.
    void frame(Dev& a, Dev& b, uint32_t scene) {
        for (uint32_t s = 0; s < 3; s++) {
            ASSERT_EQ(0, a.d.frame(s, scene + s));
            ASSERT_EQ(0, b.d.frame(s, scene + s));
            for (uint32_t region = 0; region < VREX_SHIE_REGIONS; region++) {
                const vrex_fp fp = near(12);
                const vrex_kv_ref kv{(rng_() % 4) * batch_config().bank_size + 64 * region, 64,
                                     static_cast<uint32_t>(rng_())};
                uint32_t ba = 0, bb = 0;
                ASSERT_EQ(0, vrex_model_insert(a.d.get(), s, region, 0, &fp, &kv, VREX_NIL, &ba));
                ASSERT_EQ(0, vrex_model_insert(b.d.get(), s, region, 0, &fp, &kv, VREX_NIL, &bb));
                ASSERT_EQ(ba, bb);
            }
        }
    }

    vrex_lookup_desc query() {
        vrex_lookup_desc q{};
        q.stream = rng_() % kStreams;
        q.region = rng_() % VREX_SHIE_REGIONS;
        q.radius = rng_() % (VREX_SHIE_MAX_RADIUS + 1);
        q.flags = rng_() % 4;  // SCOPE_POOL, PAST_ONLY
        const vrex_fp fp = rng_() % 8 ? near(30) : make_fp(rng_(), rng_());
        q.fp[0] = fp.w[0];
        q.fp[1] = fp.w[1];
        return q;
    }

    std::mt19937& rng() { return rng_; }

  private:
    std::mt19937 rng_;
    std::vector<vrex_fp> bases_;
};

TEST(ModelLookupBatch, RecordsCountersAndAgesEqualSingleCommands) {
    for (uint32_t seed = 1; seed <= 6; seed++) {
        Dev a, b;
        Scene sc(seed);
        sc.setup(a, b);
        uint32_t hits = 0, approx = 0, refused = 0, queries = 0;
        for (uint32_t round = 0; round < 8; round++) {
            sc.frame(a, b, round * 7 + seed);
            const uint32_t n = 1 + sc.rng()() % VREX_LOOKUP_BATCH_MAX;
            std::vector<vrex_lookup_desc> q(n);
            for (auto& d : q) d = sc.query();
            ASSERT_EQ(0, a.batch(q, a.src(), a.dst(), n)) << "seed " << seed << " round " << round;
            EXPECT_EQ(n, a.r(VREX_REG_RES_COUNT));
            uint32_t batch_hits = 0;
            for (uint32_t i = 0; i < n; i++) {
                const vrex_lookup_rec want = b.single(q[i]);
                const vrex_lookup_rec got = a.rec(a.dst(), i);
                expect_same(got, want, i);
                batch_hits += (got.flags & VREX_RESF_HIT) != 0;
                approx += (got.flags & VREX_RESF_APPROX) != 0;
                refused += got.status != 0;
            }
            EXPECT_EQ(batch_hits, a.r(VREX_REG_RES_TOKENS));
            hits += batch_hits;
            queries += n;
            EXPECT_EQ(a.counters(), b.counters()) << "seed " << seed << " round " << round;
            EXPECT_EQ(a.ages(), b.ages()) << "seed " << seed << " round " << round;
        }
        // The workload exercised every outcome, else the comparison proves little.
        EXPECT_GT(hits, queries / 8) << "seed " << seed;
        EXPECT_GT(approx, 0u) << "seed " << seed;
        EXPECT_GT(queries - hits - refused, 0u) << "seed " << seed;
        EXPECT_GT(refused, 0u) << "seed " << seed;
    }
}

TEST(ModelLookupBatch, SharedScanAndOverlappingRecordsGiveTheSameAnswers) {
    Dev a, b;
    Scene sc(42);
    sc.setup(a, b);
    for (uint32_t round = 0; round < 4; round++) sc.frame(a, b, round);
    // Every query on crowded codes with a wide radius: the batch shares its fallback scans.
    std::vector<vrex_lookup_desc> q(VREX_LOOKUP_BATCH_MAX);
    for (auto& d : q) {
        d = sc.query();
        d.radius = VREX_SHIE_MAX_RADIUS;
        d.flags &= ~VREX_ARGF_PAST_ONLY;
    }
    // Records written over the descriptors: every descriptor is read first.
    ASSERT_EQ(0, a.batch(q, a.src(), a.src(), VREX_LOOKUP_BATCH_MAX));
    for (uint32_t i = 0; i < VREX_LOOKUP_BATCH_MAX; i++) expect_same(a.rec(a.src(), i), b.single(q[i]), i);
    EXPECT_EQ(a.counters(), b.counters());
}

TEST(ModelLookupBatch, MalformedBatchFailsWholeAndWritesNothing) {
    Dev a, b;
    Scene sc(7);
    sc.setup(a, b);
    sc.frame(a, b, 1);
    std::vector<vrex_lookup_desc> good(5);
    for (auto& d : good) {
        d = sc.query();
        d.stream = 0;
    }
    const uint64_t mem = a.d.mem().size();

    struct Case {
        const char* what;
        int index;       // descriptor to spoil, -1: none
        uint32_t field;  // 0 stream, 1 region, 2 radius, 3 flags
        uint32_t value;
        uint64_t src, dst;
        uint32_t count;
        int err;
    };
    const Case cases[] = {
        {"count 0", -1, 0, 0, a.src(), a.dst(), 0, VREX_EINVAL},
        {"count above the maximum", -1, 0, 0, a.src(), a.dst(), VREX_LOOKUP_BATCH_MAX + 1, VREX_EINVAL},
        {"src misaligned", -1, 0, 0, a.src() + 4, a.dst(), 5, VREX_ERANGE},
        {"dst misaligned", -1, 0, 0, a.src(), a.dst() + 4, 5, VREX_ERANGE},
        {"src past memory", -1, 0, 0, mem - 4 * sizeof(vrex_lookup_desc), a.dst(), 5, VREX_ERANGE},
        {"dst past memory", -1, 0, 0, a.src(), mem - 4 * sizeof(vrex_lookup_rec), 5, VREX_ERANGE},
        {"src wraps", -1, 0, 0, ~uint64_t{0} - 7, a.dst(), 5, VREX_ERANGE},
        {"region 16", 4, 1, VREX_SHIE_REGIONS, a.src(), a.dst(), 5, VREX_ERANGE},
        {"radius 32", 2, 2, VREX_SHIE_MAX_RADIUS + 1, a.src(), a.dst(), 5, VREX_EINVAL},
        {"unknown flag", 0, 3, VREX_ARGF_ALIAS, a.src(), a.dst(), 5, VREX_EINVAL},
        {"stream beyond max_streams", 3, 0, kStreams, a.src(), a.dst(), 5, VREX_EINVAL},
        {"stream never opened", 4, 0, 0xffffu, a.src(), a.dst(), 5, VREX_EINVAL},
    };
    for (const Case& c : cases) {
        std::vector<vrex_lookup_desc> q = good;
        if (c.index >= 0) {
            vrex_le32* f[] = {&q[c.index].stream, &q[c.index].region, &q[c.index].radius, &q[c.index].flags};
            *f[c.field] = c.value;
        }
        // Poison the record area; a failed command must leave it as it was.
        std::memset(a.d.mem().data() + a.dst(), 0xab, VREX_LOOKUP_BATCH_MAX * sizeof(vrex_lookup_rec));
        const std::vector<uint8_t> before(a.d.mem().begin(), a.d.mem().end());
        std::vector<uint64_t> cnt = a.counters();
        const std::vector<uint32_t> ages = a.ages();
        EXPECT_EQ(c.err, a.batch(q, c.src, c.dst, c.count)) << c.what;
        EXPECT_TRUE(a.r(VREX_REG_STATUS) & VREX_STATUS_ERROR) << c.what;
        // Nothing but the staged descriptors differs in device memory.
        std::vector<uint8_t> after(a.d.mem().begin(), a.d.mem().end());
        std::memcpy(after.data() + a.src(), before.data() + a.src(),
                    VREX_LOOKUP_BATCH_MAX * sizeof(vrex_lookup_desc));
        EXPECT_TRUE(before == after) << c.what << ": memory written";
        cnt[VREX_CNT_CMD_ERRORS]++;
        EXPECT_EQ(cnt, a.counters()) << c.what;
        EXPECT_EQ(ages, a.ages()) << c.what;
        EXPECT_EQ(0u, a.r(VREX_REG_RES_COUNT)) << c.what;
    }
    // The device still answers a good batch afterwards.
    ASSERT_EQ(0, a.batch(good, a.src(), a.dst(), 5));
    for (uint32_t i = 0; i < 5; i++) expect_same(a.rec(a.dst(), i), b.single(good[i]), i);
}

TEST(ModelLookupBatch, PastOnlyBeforeTheFirstFrameIsRefusedPerQuery) {
    Dev a, b;
    Scene sc(9);
    sc.setup(a, b);
    sc.frame(a, b, 3);
    std::vector<vrex_lookup_desc> q(3);
    for (auto& d : q) {
        d = sc.query();
        d.stream = 0;
        d.flags = VREX_ARGF_SCOPE_POOL;
        d.radius = VREX_SHIE_MAX_RADIUS;
    }
    q[1].stream = kNoFrameStream;
    q[1].flags = VREX_ARGF_PAST_ONLY;
    const std::vector<uint64_t> cnt = a.counters();
    ASSERT_EQ(0, a.batch(q, a.src(), a.dst(), 3));
    const vrex_lookup_rec r = a.rec(a.dst(), 1);
    EXPECT_EQ(uint32_t{VREX_EINVAL}, r.status);
    EXPECT_EQ(0u, r.flags);
    EXPECT_EQ(VREX_NIL, r.block);
    EXPECT_EQ(cnt[VREX_CNT_CMD_ERRORS] + 1, a.counters()[VREX_CNT_CMD_ERRORS]);
    EXPECT_EQ(cnt[VREX_CNT_LOOKUPS] + 2, a.counters()[VREX_CNT_LOOKUPS]);
    for (uint32_t i = 0; i < 3; i++) expect_same(a.rec(a.dst(), i), b.single(q[i]), i);
}

}  // namespace
