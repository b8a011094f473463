// ReSV reference model (lib/resv.c) against independent C++ references: the hash against a
// double-precision projection over the same hyperplanes, clustering against a brute-force nearest
// representative search, WiCSum against a full sort of the clusters, and the KVMU ranges against the
// set of tokens of the selected clusters. Many seeds, clustered hashes so that Th matters.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numbers>
#include <random>
#include <set>
#include <vector>

extern "C" {
#include "resv.h"
}

namespace {

class OwnedHead {
  public:
    OwnedHead(uint32_t tokens, uint32_t clusters, std::size_t misalign = 0)
        : size_(vrex_resv_head_arena_size(tokens, clusters)),
          arena_(std::make_unique<std::byte[]>(size_ + misalign + 1)),
          init_(vrex_resv_head_init(&h_, tokens, clusters, arena_.get() + misalign, size_)) {}
    int init() const { return init_; }
    vrex_resv_head* get() { return &h_; }
    vrex_resv_head* operator->() { return &h_; }

  private:
    std::size_t size_;
    std::unique_ptr<std::byte[]> arena_;
    vrex_resv_head h_{};
    int init_;
};

uint32_t hamming(uint32_t a, uint32_t b) {
    return static_cast<uint32_t>(std::popcount(a ^ b));
}

// Per-key scale to the int16 range: the hash is invariant to a positive scale, so only the rounding
// of the quantised key can change a bit.
double quantise(const std::vector<double>& key, std::vector<int16_t>& out) {
    double maxabs = 0;
    for (double v : key) maxabs = std::max(maxabs, std::abs(v));
    double scale = maxabs > 0 ? 32767.0 / maxabs : 1.0;
    out.resize(key.size());
    for (std::size_t i = 0; i < key.size(); i++) out[i] = static_cast<int16_t>(std::lround(key[i] * scale));
    return scale;
}

double project(const vrex_resv_hcu& h, uint32_t r, const std::vector<double>& key) {
    double acc = 0;
    for (uint32_t i = 0; i < h.dim; i++) acc += vrex_resv_hcu_entry(&h, r, i) * key[i];
    return acc;
}

std::vector<double> gaussian(std::mt19937_64& rng, uint32_t dim) {
    std::normal_distribution<double> n(0.0, 1.0);
    std::vector<double> v(dim);
    for (auto& x : v) x = n(rng);
    return v;
}

TEST(ResvHcu, RejectsBadDimensions) {
    vrex_resv_hcu h{};
    EXPECT_EQ(vrex_resv_hcu_init(&h, 1, 0), VREX_EINVAL);
    EXPECT_EQ(vrex_resv_hcu_init(&h, 1, VREX_RESV_MAX_DIM + 1), VREX_EINVAL);
    EXPECT_EQ(vrex_resv_hcu_init(&h, 1, VREX_RESV_MAX_DIM), VREX_OK);
}

TEST(ResvHcu, MatrixIsAFunctionOfTheSeedAndDimensionPrefixStable) {
    vrex_resv_hcu a{}, b{}, c{}, small{};
    ASSERT_EQ(vrex_resv_hcu_init(&a, 42, 128), VREX_OK);
    ASSERT_EQ(vrex_resv_hcu_init(&b, 42, 128), VREX_OK);
    ASSERT_EQ(vrex_resv_hcu_init(&c, 43, 128), VREX_OK);
    ASSERT_EQ(vrex_resv_hcu_init(&small, 42, 64), VREX_OK);
    int differ = 0, negative = 0;
    for (uint32_t r = 0; r < VREX_RESV_BITS; r++)
        for (uint32_t i = 0; i < 128; i++) {
            EXPECT_EQ(vrex_resv_hcu_entry(&a, r, i), vrex_resv_hcu_entry(&b, r, i));
            differ += vrex_resv_hcu_entry(&a, r, i) != vrex_resv_hcu_entry(&c, r, i);
            negative += vrex_resv_hcu_entry(&a, r, i) < 0;
            if (i < 64) {
                EXPECT_EQ(vrex_resv_hcu_entry(&a, r, i), vrex_resv_hcu_entry(&small, r, i));
            }
        }
    // 4096 entries: a fair +-1 stream has sd 32 around 2048.
    EXPECT_NEAR(differ, 2048, 200);
    EXPECT_NEAR(negative, 2048, 200);
}

// Every bit whose exact projection is farther from 0 than the quantisation can move it must equal
// the double-precision reference; nearly all bits must be decidable that way.
TEST(ResvHcu, HashMatchesFloatReference) {
    std::mt19937_64 rng(7);
    uint64_t checked = 0, total = 0;
    for (uint32_t dim : {16u, 64u, 100u, 128u, 256u}) {
        vrex_resv_hcu h{};
        ASSERT_EQ(vrex_resv_hcu_init(&h, rng(), dim), VREX_OK);
        for (int k = 0; k < 300; k++) {
            std::vector<double> key = gaussian(rng, dim);
            std::vector<int16_t> q;
            double scale = quantise(key, q);
            uint32_t hash = vrex_resv_hash(&h, q.data());
            double bound = dim * 0.5 / scale * 1.0001;
            for (uint32_t r = 0; r < VREX_RESV_BITS; r++) {
                double p = project(h, r, key);
                total++;
                if (std::abs(p) <= bound) continue;
                checked++;
                EXPECT_EQ((hash >> r) & 1, p >= 0 ? 1u : 0u) << "dim " << dim << " row " << r;
            }
        }
    }
    EXPECT_GT(checked, total * 95 / 100);
}

TEST(ResvHcu, IntegerHashEqualsExactIntegerProjection) {
    std::mt19937_64 rng(11);
    vrex_resv_hcu h{};
    ASSERT_EQ(vrex_resv_hcu_init(&h, 99, VREX_RESV_MAX_DIM), VREX_OK);
    for (int k = 0; k < 200; k++) {
        std::vector<int16_t> key(VREX_RESV_MAX_DIM);
        for (auto& v : key)  // extremes included: the accumulator must not overflow
            v = k % 3 == 0 ? (rng() % 2 ? INT16_MAX : INT16_MIN)
                           : static_cast<int16_t>(rng() % 65536 - 32768);
        uint32_t want = 0;
        for (uint32_t r = 0; r < VREX_RESV_BITS; r++) {
            int64_t acc = 0;
            for (uint32_t i = 0; i < h.dim; i++) acc += vrex_resv_hcu_entry(&h, r, i) * int64_t{key[i]};
            want |= (acc >= 0 ? 1u : 0u) << r;
        }
        EXPECT_EQ(vrex_resv_hash(&h, key.data()), want);
    }
}

// Sign random projections: P[bit differs] ~ angle / pi. With +-1 entries this holds approximately;
// averaged over many pairs it must be within a few percent.
TEST(ResvHcu, HammingDistanceEstimatesAngle) {
    std::mt19937_64 rng(3);
    const uint32_t dim = 128;
    vrex_resv_hcu h{};
    ASSERT_EQ(vrex_resv_hcu_init(&h, 5, dim), VREX_OK);
    for (double angle : {0.1, 0.5, 1.0, 1.5, 2.5}) {
        double sum = 0;
        const int pairs = 400;
        for (int k = 0; k < pairs; k++) {
            std::vector<double> a = gaussian(rng, dim), u = gaussian(rng, dim);
            double na = 0, dot = 0;
            for (uint32_t i = 0; i < dim; i++) na += a[i] * a[i];
            for (uint32_t i = 0; i < dim; i++) dot += u[i] * a[i] / na;
            double nu = 0;
            for (uint32_t i = 0; i < dim; i++) {
                u[i] -= dot * a[i];  // u orthogonal to a
                nu += u[i] * u[i];
            }
            std::vector<double> b(dim);
            for (uint32_t i = 0; i < dim; i++)
                b[i] = std::cos(angle) * a[i] / std::sqrt(na) + std::sin(angle) * u[i] / std::sqrt(nu);
            std::vector<int16_t> qa, qb;
            quantise(a, qa);
            quantise(b, qb);
            sum += hamming(vrex_resv_hash(&h, qa.data()), vrex_resv_hash(&h, qb.data()));
        }
        EXPECT_NEAR(sum / pairs / VREX_RESV_BITS, angle / std::numbers::pi, 0.03) << angle;
    }
}

TEST(ResvHead, ArenaSizesAndInit) {
    EXPECT_EQ(vrex_resv_head_arena_size(0, 1), 0u);
    EXPECT_EQ(vrex_resv_head_arena_size(4, 0), 0u);
    EXPECT_EQ(vrex_resv_head_arena_size(4, 5), 0u);
    EXPECT_EQ(vrex_resv_head_arena_size(VREX_RESV_MAX_TOKENS + 1, 1), 0u);
    vrex_resv_head h{};
    std::vector<std::byte> small(16);
    EXPECT_EQ(vrex_resv_head_init(&h, 4, 5, small.data(), small.size()), VREX_EINVAL);
    EXPECT_EQ(vrex_resv_head_init(&h, 64, 8, small.data(), small.size()), VREX_ENOMEM);
    for (std::size_t mis = 0; mis < 8; mis++) {
        OwnedHead ok(64, 8, mis);
        EXPECT_EQ(ok.init(), VREX_OK);
    }
}

struct Workload {
    std::vector<uint32_t> centres;
    uint32_t spread;
};

uint32_t draw(std::mt19937_64& rng, const Workload& w) {
    uint32_t h = w.centres[rng() % w.centres.size()];
    uint32_t flips = static_cast<uint32_t>(rng() % (w.spread + 1));
    for (uint32_t i = 0; i < flips; i++) h ^= 1u << (rng() % 32);
    return h;
}

Workload make_workload(std::mt19937_64& rng, uint32_t seed) {
    Workload w;
    for (uint32_t i = 0; i < 1 + seed % 12; i++) w.centres.push_back(static_cast<uint32_t>(rng()));
    w.spread = seed % 3 == 0 ? 32 : 2 + seed % 9;  // uniform hashes on every third seed
    return w;
}

class ResvProperty : public ::testing::TestWithParam<uint32_t> {};

// Every add against a brute force over the representatives: the chosen cluster is the nearest one
// within th (oldest on ties) or a new one exactly when none is within th; afterwards every member of
// every cluster is within th of its representative and the cluster records match the token table.
TEST_P(ResvProperty, ClusteringMatchesBruteForceAndKeepsInvariants) {
    std::mt19937_64 rng(GetParam() * 104729u + 17);
    Workload w = make_workload(rng, GetParam());
    uint32_t th = static_cast<uint32_t>(rng() % 12);
    uint32_t tokens = 50 + static_cast<uint32_t>(rng() % 600);
    OwnedHead head(tokens, tokens);
    ASSERT_EQ(head.init(), VREX_OK);
    std::vector<uint32_t> reps;
    for (uint32_t t = 0; t < tokens; t++) {
        uint32_t hash = draw(rng, w), want = VREX_NIL, best = th + 1;
        for (uint32_t c = 0; c < reps.size(); c++)
            if (hamming(reps[c], hash) < best) {
                best = hamming(reps[c], hash);
                want = c;
            }
        uint32_t got = 0, opened = 0;
        ASSERT_EQ(vrex_resv_add(head.get(), hash, th, &got, &opened), VREX_OK);
        if (want == VREX_NIL) {
            EXPECT_EQ(opened, 1u);
            EXPECT_EQ(got, reps.size());
            reps.push_back(hash);
        } else {
            EXPECT_EQ(opened, 0u);
            EXPECT_EQ(got, want);
        }
    }
    ASSERT_EQ(head->nclusters, reps.size());
    std::vector<uint32_t> count(reps.size()), first(reps.size(), VREX_NIL), last(reps.size());
    for (uint32_t t = 0; t < head->ntokens; t++) {
        uint32_t c = head->cluster[t];
        ASSERT_LT(c, head->nclusters);
        EXPECT_LE(hamming(head->hash[t], head->c[c].rep), th);
        count[c]++;
        if (first[c] == VREX_NIL) first[c] = t;
        last[c] = t;
    }
    for (uint32_t c = 0; c < head->nclusters; c++) {
        EXPECT_EQ(head->c[c].rep, reps[c]);
        EXPECT_EQ(head->c[c].count, count[c]);
        EXPECT_EQ(head->c[c].first, first[c]);
        EXPECT_EQ(head->c[c].last, last[c]);
        EXPECT_EQ(head->hash[first[c]], reps[c]);  // the leader is the first member
    }
}

vrex_resv_params random_params(std::mt19937_64& rng) {
    vrex_resv_params p{};
    vrex_resv_default_params(&p);
    p.th = static_cast<uint32_t>(rng() % 12);
    p.mode = static_cast<uint32_t>(rng() % 2);
    switch (rng() % 4) {
        case 0:
            p.ratio = static_cast<uint32_t>(rng() % (VREX_RESV_RATIO_ONE + 1));
            break;
        case 1:
            p.ratio = rng() % 2 ? 0 : VREX_RESV_RATIO_ONE;
            break;
        default:
            p.ratio = VREX_RESV_DEFAULT_RATIO;
    }
    if (rng() % 3 == 0)  // an arbitrary table, not even monotone, zeros included
        for (auto& v : p.lut) v = rng() % 4 == 0 ? 0 : static_cast<uint16_t>(rng());
    return p;
}

// The brute force: all clusters sorted by (distance, id), the shortest prefix whose weight reaches
// ratio of the total, in exact integer arithmetic.
std::set<uint32_t> brute_select(const vrex_resv_head* h, uint32_t q, const vrex_resv_params& p,
                                uint64_t& total_out, uint64_t& sum_out) {
    std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> v;  // distance, id, weight
    uint64_t total = 0;
    for (uint32_t c = 0; c < h->nclusters; c++) {
        uint32_t d = hamming(h->c[c].rep, q);
        uint64_t wgt = p.mode == VREX_RESV_MODE_TOKENS ? h->c[c].count : uint64_t{h->c[c].count} * p.lut[d];
        v.emplace_back(d, c, wgt);
        total += wgt;
    }
    std::sort(v.begin(), v.end());
    std::set<uint32_t> out;
    unsigned __int128 target = static_cast<unsigned __int128>(total) * p.ratio;
    uint64_t cum = 0;
    for (auto& [d, c, wgt] : v) {
        if (static_cast<unsigned __int128>(cum) * VREX_RESV_RATIO_ONE >= target) break;
        out.insert(c);
        cum += wgt;
    }
    total_out = total;
    sum_out = cum;
    return out;
}

void fill(std::mt19937_64& rng, vrex_resv_head* h, const Workload& w, uint32_t th, uint32_t n) {
    for (uint32_t t = 0; t < n; t++) ASSERT_EQ(vrex_resv_add(h, draw(rng, w), th, nullptr, nullptr), VREX_OK);
}

TEST_P(ResvProperty, WicsumEqualsSortedPrefixAndKvmuCoversExactlyTheSelection) {
    std::mt19937_64 rng(GetParam() * 7919u + 3);
    Workload w = make_workload(rng, GetParam());
    uint32_t tokens = 1 + static_cast<uint32_t>(rng() % 900);
    OwnedHead head(tokens, tokens);
    ASSERT_EQ(head.init(), VREX_OK);
    vrex_resv_params p = random_params(rng);
    fill(rng, head.get(), w, p.th, tokens);

    for (int query = 0; query < 20; query++) {
        p = random_params(rng);
        uint32_t q = rng() % 2 ? draw(rng, w) : static_cast<uint32_t>(rng());
        vrex_resv_selection sel{};
        ASSERT_EQ(vrex_resv_select(head.get(), q, &p, &sel), VREX_OK);
        uint64_t total = 0, sum = 0;
        std::set<uint32_t> want = brute_select(head.get(), q, p, total, sum);
        std::set<uint32_t> got;
        uint32_t sel_tokens = 0;
        for (uint32_t c = 0; c < head->nclusters; c++)
            if (head->c[c].selected) {
                got.insert(c);
                sel_tokens += head->c[c].count;
            }
        ASSERT_EQ(got, want) << "ratio " << p.ratio << " mode " << p.mode;
        EXPECT_EQ(sel.clusters, want.size());
        EXPECT_EQ(sel.tokens, sel_tokens);
        EXPECT_EQ(sel.total, total);
        EXPECT_EQ(sel.sum, sum);
        if (p.ratio == VREX_RESV_RATIO_ONE && p.mode == VREX_RESV_MODE_TOKENS) {
            EXPECT_EQ(sel.tokens, head->ntokens);
        }
        if (p.ratio == 0) {
            EXPECT_EQ(sel.clusters, 0u);
        }

        // KVMU token ranges: ascending, separated (maximal), exactly the selected tokens.
        std::vector<vrex_resv_range> r(head->ntokens + 1);
        uint32_t n = vrex_resv_token_ranges(head.get(), r.data(), static_cast<uint32_t>(r.size()));
        std::vector<bool> covered(head->ntokens, false);
        for (uint32_t i = 0; i < n; i++) {
            ASSERT_GT(r[i].count, 0u);
            if (i) {
                ASSERT_GT(r[i].first, r[i - 1].first + r[i - 1].count);
            }
            for (uint32_t t = r[i].first; t < r[i].first + r[i].count; t++) {
                ASSERT_LT(t, head->ntokens);
                covered[t] = true;
            }
        }
        for (uint32_t t = 0; t < head->ntokens; t++)
            EXPECT_EQ(covered[t], want.count(head->cluster[t]) == 1) << t;

        // A short output buffer: same count, the prefix that fits is identical.
        if (n > 1) {
            std::vector<vrex_resv_range> r2(n / 2);
            ASSERT_EQ(vrex_resv_token_ranges(head.get(), r2.data(), n / 2), n);
            for (uint32_t i = 0; i < n / 2; i++)
                EXPECT_TRUE(r2[i].first == r[i].first && r2[i].count == r[i].count);
        }

        // KVMU block ranges: exactly the blocks holding a selected token, merged.
        uint32_t tpb = 1 + static_cast<uint32_t>(rng() % 40);
        std::set<uint32_t> want_blocks;
        for (uint32_t t = 0; t < head->ntokens; t++)
            if (want.count(head->cluster[t])) want_blocks.insert(t / tpb);
        std::vector<vrex_resv_range> b(head->ntokens + 1);
        uint32_t nb = vrex_resv_block_ranges(head.get(), tpb, b.data(), static_cast<uint32_t>(b.size()));
        std::set<uint32_t> got_blocks;
        for (uint32_t i = 0; i < nb; i++) {
            ASSERT_GT(b[i].count, 0u);
            if (i) {
                ASSERT_GT(b[i].first, b[i - 1].first + b[i - 1].count);
            }
            for (uint32_t k = b[i].first; k < b[i].first + b[i].count; k++) got_blocks.insert(k);
        }
        EXPECT_EQ(got_blocks, want_blocks);
        if (nb > 1) {
            std::vector<vrex_resv_range> b2(1);
            EXPECT_EQ(vrex_resv_block_ranges(head.get(), tpb, b2.data(), 1), nb);
            EXPECT_TRUE(b2[0].first == b[0].first && b2[0].count == b[0].count);
        }
    }
}

// A larger ratio selects a superset (the selection is a prefix of one fixed order).
TEST_P(ResvProperty, SelectionGrowsWithRatio) {
    std::mt19937_64 rng(GetParam() * 31u + 1);
    Workload w = make_workload(rng, GetParam());
    OwnedHead head(400, 400);
    ASSERT_EQ(head.init(), VREX_OK);
    vrex_resv_params p{};
    vrex_resv_default_params(&p);
    p.mode = GetParam() % 2;
    fill(rng, head.get(), w, p.th, 400);
    uint32_t q = draw(rng, w);
    std::vector<uint32_t> prev(head->nclusters, 0);
    uint32_t prev_tokens = 0;
    for (uint32_t ratio = 0; ratio <= VREX_RESV_RATIO_ONE; ratio += 4096) {
        p.ratio = ratio;
        vrex_resv_selection sel{};
        ASSERT_EQ(vrex_resv_select(head.get(), q, &p, &sel), VREX_OK);
        for (uint32_t c = 0; c < head->nclusters; c++) {
            if (prev[c]) {
                EXPECT_TRUE(head->c[c].selected) << "ratio " << ratio << " cluster " << c;
            }
            prev[c] = head->c[c].selected;
        }
        EXPECT_GE(sel.tokens, prev_tokens);
        prev_tokens = sel.tokens;
    }
}

INSTANTIATE_TEST_SUITE_P(Seeds, ResvProperty, ::testing::Range(0u, 40u));

TEST(ResvHead, FullTablesRejectWithoutChange) {
    OwnedHead head(8, 2);
    ASSERT_EQ(head.init(), VREX_OK);
    ASSERT_EQ(vrex_resv_add(head.get(), 0x0, 3, nullptr, nullptr), VREX_OK);
    ASSERT_EQ(vrex_resv_add(head.get(), 0xffffffffu, 3, nullptr, nullptr), VREX_OK);
    EXPECT_EQ(vrex_resv_add(head.get(), 0x0000ffffu, 3, nullptr, nullptr), VREX_ENOSPC);
    EXPECT_EQ(head->ntokens, 2u);
    EXPECT_EQ(head->nclusters, 2u);
    EXPECT_EQ(vrex_resv_add(head.get(), 0x7, 33, nullptr, nullptr), VREX_EINVAL);
    for (int i = 0; i < 6; i++)  // joining needs no cluster slot
        ASSERT_EQ(vrex_resv_add(head.get(), 0x1, 3, nullptr, nullptr), VREX_OK);
    EXPECT_EQ(vrex_resv_add(head.get(), 0x1, 3, nullptr, nullptr), VREX_ENOSPC);
    EXPECT_EQ(head->c[0].count, 7u);
    vrex_resv_head_clear(head.get());
    EXPECT_EQ(head->ntokens, 0u);
    EXPECT_EQ(vrex_resv_add(head.get(), 0x1, 3, nullptr, nullptr), VREX_OK);
}

TEST(ResvSelect, RejectsInvalidParams) {
    OwnedHead head(8, 8);
    ASSERT_EQ(head.init(), VREX_OK);
    vrex_resv_params p{};
    vrex_resv_default_params(&p);
    EXPECT_EQ(p.th, 7u);
    EXPECT_EQ(p.ratio, 19661u);
    vrex_resv_params bad = p;
    bad.ratio = VREX_RESV_RATIO_ONE + 1;
    EXPECT_EQ(vrex_resv_select(head.get(), 0, &bad, nullptr), VREX_EINVAL);
    bad = p;
    bad.mode = 2;
    EXPECT_EQ(vrex_resv_select(head.get(), 0, &bad, nullptr), VREX_EINVAL);
    EXPECT_EQ(vrex_resv_select(head.get(), 0, nullptr, nullptr), VREX_EINVAL);
    EXPECT_EQ(vrex_resv_select(head.get(), 0, &p, nullptr), VREX_OK);  // empty head
    EXPECT_EQ(vrex_resv_block_ranges(head.get(), 0, nullptr, 0), 0u);
}

// A worked example with known numbers: three clusters at distances 0, 1, 32 from the query.
TEST(ResvSelect, WorkedExample) {
    OwnedHead head(16, 16);
    ASSERT_EQ(head.init(), VREX_OK);
    // tokens 0-3 -> cluster 0 (hash 0), 4-5 -> cluster 1 (0xffffffff), 6-9 -> cluster 2 (0x1).
    for (uint32_t h : {0u, 0u, 0u, 0u, 0xffffffffu, 0xffffffffu, 1u, 1u, 1u, 1u})
        ASSERT_EQ(vrex_resv_add(head.get(), h, 0, nullptr, nullptr), VREX_OK);
    ASSERT_EQ(head->nclusters, 3u);
    vrex_resv_params p{};
    vrex_resv_default_params(&p);
    p.mode = VREX_RESV_MODE_TOKENS;
    p.ratio = VREX_RESV_RATIO_ONE / 2;  // 5 of 10 tokens: cluster 0 (4), then cluster 2 (d 1)
    vrex_resv_selection sel{};
    ASSERT_EQ(vrex_resv_select(head.get(), 0, &p, &sel), VREX_OK);
    EXPECT_EQ(sel.tokens, 8u);
    EXPECT_EQ(sel.cutoff, 1u);
    vrex_resv_range r[4];
    ASSERT_EQ(vrex_resv_token_ranges(head.get(), r, 4), 2u);
    EXPECT_EQ(r[0].first, 0u);
    EXPECT_EQ(r[0].count, 4u);
    EXPECT_EQ(r[1].first, 6u);
    EXPECT_EQ(r[1].count, 4u);
    ASSERT_EQ(vrex_resv_block_ranges(head.get(), 4, r, 4), 1u);  // blocks 0, 1, 2
    EXPECT_EQ(r[0].first, 0u);
    EXPECT_EQ(r[0].count, 3u);
    p.mode = VREX_RESV_MODE_MASS;  // 4 * 65535 vs 2 * 0 + 4 * 63669: cluster 0 alone reaches 0.3
    p.ratio = VREX_RESV_DEFAULT_RATIO;
    ASSERT_EQ(vrex_resv_select(head.get(), 0, &p, &sel), VREX_OK);
    EXPECT_EQ(sel.clusters, 1u);
    EXPECT_EQ(sel.tokens, 4u);
    EXPECT_EQ(sel.total, 4u * 65535 + 4u * 63669);
}

}  // namespace

namespace {

// Truncation undoes adds exactly: the head equals one built from the kept prefix alone.
TEST_P(ResvProperty, TruncateEqualsRebuildingThePrefix) {
    std::mt19937_64 rng(GetParam() * 131u + 7);
    Workload w = make_workload(rng, GetParam());
    uint32_t th = static_cast<uint32_t>(rng() % 10), n = 1 + static_cast<uint32_t>(rng() % 500);
    std::vector<uint32_t> hashes(n);
    for (auto& h : hashes) h = draw(rng, w);
    OwnedHead full(n, n);
    ASSERT_EQ(full.init(), VREX_OK);
    for (uint32_t h : hashes) ASSERT_EQ(vrex_resv_add(full.get(), h, th, nullptr, nullptr), VREX_OK);
    EXPECT_EQ(vrex_resv_truncate(full.get(), n + 1), VREX_EINVAL);
    for (int round = 0; round < 4 && full->ntokens; round++) {
        uint32_t keep = static_cast<uint32_t>(rng() % (full->ntokens + 1));
        ASSERT_EQ(vrex_resv_truncate(full.get(), keep), VREX_OK);
        OwnedHead ref(n, n);
        ASSERT_EQ(ref.init(), VREX_OK);
        for (uint32_t t = 0; t < keep; t++)
            ASSERT_EQ(vrex_resv_add(ref.get(), hashes[t], th, nullptr, nullptr), VREX_OK);
        ASSERT_EQ(full->ntokens, keep);
        ASSERT_EQ(full->nclusters, ref->nclusters);
        for (uint32_t c = 0; c < ref->nclusters; c++) {
            EXPECT_EQ(full->c[c].rep, ref->c[c].rep);
            EXPECT_EQ(full->c[c].count, ref->c[c].count);
            EXPECT_EQ(full->c[c].first, ref->c[c].first);
            EXPECT_EQ(full->c[c].last, ref->c[c].last) << "cluster " << c << " keep " << keep;
        }
        for (uint32_t t = 0; t < keep; t++) EXPECT_EQ(full->cluster[t], ref->cluster[t]);
        // Growing again from the truncated state continues like the reference.
        for (uint32_t t = keep; t < std::min(n, keep + 20); t++) {
            uint32_t a = 0, b = 0;
            ASSERT_EQ(vrex_resv_add(full.get(), hashes[t], th, &a, nullptr), VREX_OK);
            ASSERT_EQ(vrex_resv_add(ref.get(), hashes[t], th, &b, nullptr), VREX_OK);
            EXPECT_EQ(a, b);
        }
    }
}

}  // namespace
