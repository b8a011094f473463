#include "vrex/lcp/host_pool.hpp"

#include <sys/mman.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>

#include "thread_clock.hpp"

namespace vrex::lcp {

namespace {

constexpr std::size_t kChunk = std::size_t{2} << 20;
constexpr std::size_t kPage = 4096;

// @bytes of anonymous memory, faulted in page by page. Not asked for transparent huge pages: measured
// in the runner (docs/model.md, session 11), MADV_HUGEPAGE made demotions cost 0.12-0.58 ms a frame
// on 64-frame streams and 0.39-0.54 on 192-frame ones (the kernel compacts memory to find 2 MiB
// pages, 2-3 ms stalls) against 0.16-0.33 with 4 KiB pages.
HostBlockPool::Chunk map_chunk(std::size_t bytes) {
    void* raw = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    auto* base = static_cast<std::byte*>(raw);
    for (std::size_t off = 0; off < bytes; off += kPage) base[off] = std::byte{0};
    return HostBlockPool::Chunk(base, HostBlockPool::Unmap{bytes});
}

}  // namespace

// The preparing thread: keeps one chunk mapped and faulted in for the next take() that needs one.
struct HostBlockPool::Ahead {
    std::mutex mu;
    std::condition_variable cv;
    Chunk ready;
    bool want = true;  // a chunk is wanted (the first one at once)
    bool stop = false;
    double cpu_s = 0;
    std::exception_ptr failed;  // map_chunk's exception, rethrown by the next()
    std::thread worker;

    explicit Ahead(std::size_t bytes) : worker([this, bytes] { run(bytes); }) {}
    ~Ahead() {
        {
            const std::lock_guard lock(mu);
            stop = true;
        }
        cv.notify_all();
        worker.join();
    }
    void run(std::size_t bytes) {
        std::unique_lock lock(mu);
        for (;;) {
            cv.wait(lock, [&] { return stop || want; });
            if (stop) return;
            lock.unlock();
            const double t0 = thread_cpu_s();
            Chunk c;
            std::exception_ptr e;
            try {
                c = map_chunk(bytes);
            } catch (...) {
                e = std::current_exception();
            }
            const double t = thread_cpu_s() - t0;
            lock.lock();
            ready = std::move(c);
            failed = e;
            want = false;
            cpu_s += t;
            cv.notify_all();
        }
    }
    Chunk next() {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return static_cast<bool>(ready) || failed; });
        if (failed) {
            std::exception_ptr e = std::exchange(failed, nullptr);
            want = true;  // try again next time
            cv.notify_all();
            std::rethrow_exception(e);
        }
        Chunk c = std::move(ready);
        want = true;
        cv.notify_all();
        return c;
    }
};

void HostBlockPool::Unmap::operator()(std::byte* p) const noexcept {
    ::munmap(p, bytes);
}

HostBlockPool::HostBlockPool(std::size_t block_bytes, bool prepare_ahead, std::size_t reserve_blocks)
    : block_(block_bytes) {
    if (block_bytes == 0) throw std::invalid_argument("vrex host block pool: a block needs bytes");
    chunk_ = (block_bytes + kChunk - 1) / kChunk * kChunk;  // whole 2 MiB, >= one block
    per_chunk_ = chunk_ / block_bytes;
    if (reserve_blocks != 0) {
        const double c0 = thread_cpu_s();
        const auto w0 = std::chrono::steady_clock::now();
        const std::size_t n = (reserve_blocks + per_chunk_ - 1) / per_chunk_;
        chunks_.reserve(n);
        for (std::size_t i = 0; i < n; i++) chunks_.push_back(map_chunk(chunk_));
        reserved_ = n * per_chunk_;
        reserve_cpu_s_ = thread_cpu_s() - c0;
        reserve_wall_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    }
    if (prepare_ahead) ahead_ = std::make_unique<Ahead>(chunk_);
}

HostBlockPool::~HostBlockPool() = default;
HostBlockPool::HostBlockPool(HostBlockPool&&) noexcept = default;
HostBlockPool& HostBlockPool::operator=(HostBlockPool&&) noexcept = default;

double HostBlockPool::prepare_cpu_s() const noexcept {
    if (!ahead_) return 0;
    const std::lock_guard lock(ahead_->mu);
    return ahead_->cpu_s;
}

std::span<std::byte> HostBlockPool::take() {
    if (!free_.empty()) {
        std::byte* p = free_.back();
        free_.pop_back();
        used_++;
        return {p, block_};
    }
    // Reserved chunks first (mapped and faulted in already), then one more chunk whenever the last is
    // carved up.
    const std::size_t chunk = carved_ / per_chunk_;
    if (chunk == chunks_.size()) chunks_.push_back(ahead_ ? ahead_->next() : map_chunk(chunk_));
    std::byte* p = chunks_[chunk].get() + (carved_ % per_chunk_) * block_;
    carved_++;
    used_++;
    return {p, block_};
}

void HostBlockPool::give(std::span<std::byte> block) {
    if (block.empty()) return;
    free_.push_back(block.data());
    used_--;
}

}  // namespace vrex::lcp
