// Concurrent engines on one allocator (issue 24): several threads, each with its own pooled stream,
// sharing blocks through pool lookups while memory runs out and streams come and go. Every block the
// test allocates carries a header and a trailer naming it (id, generation, stream, stream life,
// frame, region, fingerprint); every reader checks them against what the HAL says it got, and every
// owner re-checks its live blocks each frame, so a block handed out under the wrong identity, a slot
// given to two live blocks, a block read before its KV was written or an owner's live block released
// by another stream's destruction is reported (never only a crash or a TSan report).
//
// Exercised per frame: pool-scoped similarity and temporal lookups (batches), pins held across
// frames, copy-on-write of other streams' blocks, early release (own and foreign), batch allocation
// under pressure eviction, publication, and every few frames the stream's destruction and
// re-creation (its id is recycled by the device).
//
// Bounded: VREX_HAL_STRESS_FRAMES (or --frames=N) frames per thread (default 300), VREX_HAL_STRESS_THREADS
// threads (default 3), a stream re-created every VREX_HAL_STRESS_RECREATE frames (default 20, 0 never);
// scripts/sanitize.sh runs a longer one under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "device_test.hpp"
#include "frames.hpp"
#include "vrex/hal.hpp"

namespace vrex {
namespace {

using test::synthetic_frame;
using test::view_of;

constexpr std::uint64_t kMagic = 0x5652455853545253ull;  // "VREXSTRS"
constexpr std::uint32_t kRegions = 4;
constexpr std::uint32_t kScenes = 5;

// What a block holds at its start and, copied, at its end.
struct Header {
    std::uint64_t magic = 0;
    std::uint32_t id = 0;
    std::uint32_t generation = 0;
    std::uint32_t stream = 0;  // device stream id of the owner
    std::uint32_t life = 0;    // the owner thread's stream incarnation (ids are recycled)
    std::uint32_t thread = 0;
    std::uint32_t frame = 0;
    std::uint32_t region = 0;
    std::uint32_t pad = 0;
    std::uint64_t fp[2] = {0, 0};
    bool operator==(const Header&) const = default;
};

std::uint32_t env_or(const char* name, std::uint32_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10)) : fallback;
}

// --frames=N on the command line (QEMU guest programs take no environment), else the environment.
std::uint32_t frames_option() {
    for (const std::string& a : ::testing::internal::GetArgvs())
        if (a.rfind("--frames=", 0) == 0) return static_cast<std::uint32_t>(std::stoul(a.substr(9)));
    return env_or("VREX_HAL_STRESS_FRAMES", 300);
}

std::string describe(const Header& h) {
    return "{magic " + std::to_string(h.magic == kMagic) + ", id " + std::to_string(h.id) + ", gen " +
           std::to_string(h.generation) + ", stream " + std::to_string(h.stream) + ", life " +
           std::to_string(h.life) + ", thread " + std::to_string(h.thread) + ", frame " +
           std::to_string(h.frame) + ", region " + std::to_string(h.region) + "}";
}

Header read_header(std::span<const std::byte> mem, bool trailer) {
    Header h;
    std::memcpy(&h, mem.data() + (trailer ? mem.size() - sizeof(Header) : 0), sizeof h);
    return h;
}

void write_header(std::span<std::byte> mem, const Header& h) {
    std::memcpy(mem.data(), &h, sizeof h);
    std::memcpy(mem.data() + mem.size() - sizeof h, &h, sizeof h);
}

struct Counters {
    std::atomic<std::uint64_t> frames{0}, allocated{0}, pool_hits{0}, foreign_hits{0}, temporal_hits{0},
        pins{0}, copies{0}, early_releases{0}, released{0}, pressure{0}, enospc{0}, recreations{0},
        verified{0};
};

class Stress : public test::DeviceTest {
  protected:
    void record(const std::string& what) {
        std::lock_guard lock(mu_);
        if (failures_.size() < 40) failures_.push_back(what);
        failure_count_++;
    }

    // The header a retrieval must find: the block the HAL returned, the entry the device found.
    void verify_hit(const Retrieval& r, std::uint32_t region, const char* kind, std::uint32_t thread) {
        const Header want_ids{kMagic, r.block.id, r.block.generation,    r.stream, 0, 0, r.frame,
                              region, 0,          {r.fp.w[0], r.fp.w[1]}};
        for (bool trailer : {false, true}) {
            const Header h = read_header(r.block.view, trailer);
            if (h.magic != kMagic || h.id != want_ids.id || h.generation != want_ids.generation ||
                h.stream != want_ids.stream || h.frame != want_ids.frame || h.region != want_ids.region ||
                h.fp[0] != want_ids.fp[0] || h.fp[1] != want_ids.fp[1]) {
                record(std::string("thread ") + std::to_string(thread) + ": " + kind +
                       " hit returned block (id " + std::to_string(r.block.id) + ", gen " +
                       std::to_string(r.block.generation) + ") for the entry (stream " +
                       std::to_string(r.stream) + ", frame " + std::to_string(r.frame) + ", region " +
                       std::to_string(region) + ") but its " + (trailer ? "trailer" : "header") + " is " +
                       describe(h));
                return;
            }
        }
        counters_.verified++;
    }

    void worker(KvAllocator& a, std::uint32_t thread, std::uint32_t frames) {
        std::mt19937 rng(1234 + thread);
        auto chance = [&](std::uint32_t percent) { return rng() % 100 < percent; };
        std::unique_ptr<Stream> s;
        std::uint32_t life = 0;
        std::map<std::uint64_t, std::pair<KvBlock, Header>> own;  // live blocks this stream owns
        struct Pin {
            KvBlock block;
            Header header;
            std::uint32_t until;
        };
        std::vector<Pin> pins;
        auto key = [](std::uint32_t id, std::uint32_t gen) { return (std::uint64_t{gen} << 32) | id; };
        const std::uint32_t recreate_every = recreate_every_ ? recreate_every_ + thread * 3 : frames + 1;

        for (std::uint32_t f = 0; f < frames; f++) {
            if (!s || f % recreate_every == recreate_every - 1) {
                // Pins die with the stream that took them: forget their views first.
                pins.clear();
                own.clear();
                s.reset();
                // Explicit publishing only: a block is visible once its header is written.
                auto ns = a.create_stream({true, 1, false});
                if (!ns) {
                    record("thread " + std::to_string(thread) + ": create stream: " + ns.error_message());
                    return;
                }
                s = std::move(*ns);
                // Releases arrive during allocations (pressure) and at end_frame(): the block is no
                // longer this stream's (its memory may be gone) from then on.
                s->on_release([&, thread](std::span<const ReleasedBlock> rel) {
                    for (const ReleasedBlock& r : rel) {
                        counters_.released++;
                        counters_.pressure += r.reason == ReleaseReason::pressure;
                        if (!own.erase(key(r.id, r.generation)))
                            record("thread " + std::to_string(thread) + ": released block (id " +
                                   std::to_string(r.id) + ", gen " + std::to_string(r.generation) +
                                   ") that this stream does not own");
                    }
                });
                life++;
                counters_.recreations++;
            }
            const std::string where = "thread " + std::to_string(thread) + " (stream " +
                                      std::to_string(s->id()) + ", life " + std::to_string(life) +
                                      ", frame " + std::to_string(f) + "): ";
            const auto px = synthetic_frame(128, 96, (f / 3 + thread) % kScenes, 0);
            auto fi = s->begin_frame(view_of(px));
            if (!fi) {
                record(where + fi.error_message());
                return;
            }

            // Lookups: every region in the pool (others' blocks of the same scene) and the previous
            // frame of this stream.
            std::vector<Query> qs;
            for (std::uint32_t r = 0; r < kRegions; r++) {
                qs.push_back(Query::similar(r, fi->fp, 4, Scope::pool, true));
                qs.push_back(Query::temporal(r, -1));
            }
            auto hits = s->retrieve_batch(qs);
            if (!hits) {
                record(where + "retrieve batch: " + hits.error_message());
                return;
            }
            std::vector<KvBlock> early;
            std::vector<bool> region_taken(kRegions, false);  // (frame, region) has its block (a copy)
            for (std::size_t i = 0; i < qs.size(); i++) {
                const Retrieval& r = (*hits)[i];
                if (!r.hit) continue;
                const bool similar = qs[i].kind == Query::Kind::similar;
                verify_hit(r, qs[i].region, similar ? "pool" : "temporal", thread);
                (similar ? counters_.pool_hits : counters_.temporal_hits)++;
                if (r.stream == s->id() && own.contains(key(r.block.id, r.block.generation))) continue;
                counters_.foreign_hits++;
                if (chance(20)) {
                    if (auto p = s->pin(r.block); !p)
                        record(where + "pin of a block just retrieved: " + p.error_message());
                    else {
                        pins.push_back({r.block, read_header(r.block.view, false), f + 2});
                        counters_.pins++;
                    }
                } else if (!region_taken[qs[i].region] && chance(15)) {
                    region_taken[qs[i].region] = true;
                    auto c = s->copy_on_write(r.block, qs[i].region);
                    if (!c) {
                        if (c.error() != std::errc::no_space_on_device)
                            record(where + "copy on write: " + c.error_message());
                        else
                            counters_.enospc++;
                    } else if (c->data.empty()) {
                        record(where + "copy on write gave no writable view");
                    } else if (read_header(c->view, false) != read_header(r.block.view, false)) {
                        record(where +
                               "copy on write did not copy: " + describe(read_header(c->view, false)));
                    } else {
                        const Header h{kMagic, c->id,    c->generation, s->id(), life,
                                       thread, c->frame, c->region,     0,       {fi->fp.w[0], fi->fp.w[1]}};
                        write_header(c->data, h);
                        (void)s->publish(*c);
                        own[key(c->id, c->generation)] = {*c, h};
                        counters_.copies++;
                    }
                } else if (chance(10)) {
                    early.push_back(r.block);
                }
            }
            for (const KvBlock& b : early) {
                if (auto e = s->release(b); !e && e.error() != std::errc::no_such_file_or_directory)
                    record(where + "early release of a referenced block: " + e.error_message());
                else
                    counters_.early_releases++;
            }

            // New blocks: a batch (or one), written, then published.
            std::vector<std::uint32_t> regions;
            for (std::uint32_t r = 0; r < kRegions; r++)
                if (!region_taken[r] && (r == 0 || chance(60))) regions.push_back(r);
            auto blocks = s->allocate_batch(regions);
            if (regions.empty()) {
            } else if (!blocks) {
                if (blocks.error() != std::errc::no_space_on_device)
                    record(where + "allocate batch: " + blocks.error_message());
                else
                    counters_.enospc++;
            } else {
                for (const KvBlock& b : *blocks) {
                    if (b.data.empty()) {
                        record(where + "a fresh block has no writable view");
                        continue;
                    }
                    const Header h{kMagic, b.id,    b.generation, s->id(), life,
                                   thread, b.frame, b.region,     0,       {fi->fp.w[0], fi->fp.w[1]}};
                    write_header(b.data, h);
                    own[key(b.id, b.generation)] = {b, h};
                    counters_.allocated++;
                }
                if (auto p = s->publish_batch(*blocks); !p) record(where + "publish: " + p.error_message());
            }

            // Blocks this stream owns and the device still holds keep their bytes.
            for (const auto& [k, bh] : own) {
                for (bool trailer : {false, true})
                    if (read_header(bh.first.view, trailer) != bh.second) {
                        record(where + "own live block (id " + std::to_string(bh.first.id) + ", gen " +
                               std::to_string(bh.first.generation) +
                               ") overwritten: " + describe(read_header(bh.first.view, trailer)) +
                               " instead of " + describe(bh.second));
                        break;
                    }
            }
            // Pinned blocks keep their bytes whatever their owner did.
            for (auto it = pins.begin(); it != pins.end();) {
                if (read_header(it->block.view, false) != it->header)
                    record(where + "pinned block (id " + std::to_string(it->block.id) +
                           ") changed: " + describe(read_header(it->block.view, false)));
                if (it->until <= f) {
                    if (auto u = s->unpin(it->block); !u) record(where + "unpin: " + u.error_message());
                    it = pins.erase(it);
                } else {
                    ++it;
                }
            }
            // Early release of an own block: it must still be live.
            if (!own.empty() && chance(30)) {
                auto victim = own.begin();
                std::advance(victim, rng() % own.size());
                const KvBlock b = victim->second.first;
                if (auto e = s->release(b); !e)
                    record(where + "release of an own live block (id " + std::to_string(b.id) + ", gen " +
                           std::to_string(b.generation) + "): " + e.error_message());
                else
                    counters_.early_releases++;
            }
            auto fe = s->end_frame();
            if (!fe) {
                record(where + "end frame: " + fe.error_message());
                return;
            }
            counters_.frames++;
        }
        pins.clear();
    }

    std::uint32_t recreate_every_ = env_or("VREX_HAL_STRESS_RECREATE", 20);  // 0: never
    std::mutex mu_;
    std::vector<std::string> failures_;
    std::uint64_t failure_count_ = 0;
    Counters counters_;
};

TEST_P(Stress, ConcurrentPooledStreamsNeverSeeTheWrongKv) {
    if (!dev_->info().caps.pooled) GTEST_SKIP() << "no pooled streams on this device";
    AllocatorOptions o;
    o.blocks_per_slab = 1;
    o.spare_slabs = 0;
    o.evict_under_pressure = true;
    // Half-bank blocks: device memory holds about 2 blocks a bank, so the threads run out of memory
    // within a few frames and evict.
    const ModelGeometry g = half_bank_geometry();
    auto a = allocator(g, o);
    ASSERT_TRUE(a);
    const std::uint32_t threads = env_or("VREX_HAL_STRESS_THREADS", 3);
    const std::uint32_t frames = frames_option();
    std::vector<std::thread> ts;
    for (std::uint32_t t = 0; t < threads; t++) ts.emplace_back([&, t] { worker(*a, t, frames); });
    for (auto& t : ts) t.join();

    const Counters& c = counters_;
    std::printf(
        "stress (%s, %u threads x %u frames): %llu frames, %llu allocated, %llu pool hits, %llu temporal "
        "hits, "
        "%llu foreign, %llu verified, %llu pins, %llu copies, %llu early releases, %llu released (%llu "
        "pressure), %llu ENOSPC, %llu streams, %llu failures\n",
        GetParam().c_str(), threads, frames, (unsigned long long)c.frames, (unsigned long long)c.allocated,
        (unsigned long long)c.pool_hits, (unsigned long long)c.temporal_hits,
        (unsigned long long)c.foreign_hits, (unsigned long long)c.verified, (unsigned long long)c.pins,
        (unsigned long long)c.copies, (unsigned long long)c.early_releases, (unsigned long long)c.released,
        (unsigned long long)c.pressure, (unsigned long long)c.enospc, (unsigned long long)c.recreations,
        (unsigned long long)failure_count_);
    for (const std::string& f : failures_) ADD_FAILURE() << f;
    EXPECT_EQ(failure_count_, 0u);
    // The workload did what it claims: cross-stream hits, pins, copies and pressure evictions.
    EXPECT_GT(c.foreign_hits.load(), 0u);
    EXPECT_GT(c.pressure.load(), 0u);
    EXPECT_GT(c.copies.load(), 0u);
    EXPECT_GT(c.pins.load(), 0u);
    EXPECT_EQ(c.frames.load(), std::uint64_t{threads} * frames);
}

INSTANTIATE_TEST_SUITE_P(Backends, Stress, ::testing::ValuesIn(test::available_backends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace vrex
