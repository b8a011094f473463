// Device faults at the Backend seam, on every available backend (docs/uapi.md "Device status,
// timeouts and reset", "Quotas"): a command that never completes resets the device, which releases
// every block to its own stream (reason RESET, with its generations) and leaves every ReSV head
// stale (ESTALE until truncated to 0); resets that keep failing wedge the device (EIO); per-user
// quotas have the kernel's non-zero defaults (EDQUOT). The emulation hangs commands through
// EmulatedBackend::simulate_hang(), the kernel backend through vrex_sim's debugfs hang_cmds (QEMU
// guests, root); a wedged kernel device is unbound and bound again afterwards.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "backends.hpp"
#include "emulated_backend.hpp"
#include "kernel_backend.hpp"
#include "test_kernel_guest.hpp"

extern "C" {
#include "vrex_quota.h"
}

namespace vrex {
namespace {

const std::error_code kStale{ESTALE, std::generic_category()};
const std::error_code kIo{EIO, std::generic_category()};
const std::error_code kTimedOut{ETIMEDOUT, std::generic_category()};

class DeviceFaults : public ::testing::TestWithParam<std::string> {
  protected:
    void SetUp() override {
        be_ = test::open_backend(GetParam());
        ASSERT_NE(be_, nullptr);
        if (auto* k = dynamic_cast<KernelBackend*>(be_.get())) {
            if (::geteuid() != 0) GTEST_SKIP() << "the hang_cmds knob needs root";
            node_ = k->node();
            dir_ = test::debugfs_dir_of(node_);
            ASSERT_FALSE(dir_.empty()) << "no debugfs directory for " << node_;
            if (::access((dir_ + "/hang_cmds").c_str(), W_OK) != 0)
                GTEST_SKIP() << "no hang_cmds knob (not vrex_sim, or fault injection off)";
            device_ = test::bound_device_of(node_);
            ASSERT_FALSE(device_.empty()) << node_;
        }
        auto info = be_->device_info();
        ASSERT_TRUE(info);
        info_ = *info;
    }

    void TearDown() override {
        if (!be_) return;
        if (!dir_.empty()) knob("hang_cmds", 0);
        if (!wedged()) return;
        // A wedged device stays so until it is bound again (the emulation: opened again).
        if (auto* emu = dynamic_cast<EmulatedBackend*>(be_.get())) {
            emu->simulate_device_loss();
            return;
        }
        be_.reset();
        const std::string driver = test::unbind(device_);
        ASSERT_FALSE(driver.empty()) << "unbind " << device_;
        ASSERT_TRUE(test::wait_for_path(node_, false, std::chrono::seconds(5)));
        ASSERT_TRUE(test::rebind(driver, device_)) << "bind " << device_;
        ASSERT_TRUE(test::wait_for_path(node_, true, std::chrono::seconds(5)));
    }

    bool knob(const char* name, unsigned n) const {
        std::ofstream f(dir_ + "/" + name);
        f << n;
        f.flush();
        return static_cast<bool>(f);
    }
    // The next @n device commands never complete.
    void hang(unsigned n) {
        if (auto* emu = dynamic_cast<EmulatedBackend*>(be_.get())) {
            emu->simulate_hang(n);
        } else {
            ASSERT_TRUE(knob("hang_cmds", n));
        }
    }
    bool wedged() const {
        if (auto* emu = dynamic_cast<EmulatedBackend*>(be_.get())) return emu->wedged();
        std::ifstream f(device_ + "/vrex/wedged");
        int v = 0;
        return (f >> v) && v == 1;
    }

    std::uint32_t bo(std::uint64_t size, std::uint32_t flags, drm_vrex_bo_create* out = nullptr) {
        drm_vrex_bo_create a{};
        a.size = size;
        a.bank_mask = 1;
        a.flags = flags;
        EXPECT_FALSE(be_->bo_create(a));
        if (out) *out = a;
        return a.handle;
    }
    std::uint32_t stream() {
        drm_vrex_stream_create a{};
        EXPECT_FALSE(be_->stream_create(a));
        return a.stream;
    }
    std::error_code frame(std::uint32_t s, std::uint32_t luma, std::uint32_t t, drm_vrex_frame_submit& f) {
        return test::submit_synthetic_frame(*be_, s, luma, 11, t, f);
    }

    std::unique_ptr<Backend> be_;
    drm_vrex_device_info info_{};
    std::string node_, dir_, device_;
};

drm_vrex_resv_params resv_params() {
    drm_vrex_resv_params p{};
    p.seed = 7;
    p.dim = 8;
    p.th = 4;
    p.ratio = DRM_VREX_RESV_RATIO_ONE / 2;
    p.mode = DRM_VREX_RESV_MODE_TOKENS;
    p.tokens_per_block = 4;
    p.bytes_per_token = 64;
    return p;
}

TEST_P(DeviceFaults, AResetReleasesEveryBlockToItsStreamAndLeavesHeadsStale) {
    const std::uint32_t s = stream();
    const std::uint32_t luma = bo(160 * 120, DRM_VREX_BO_STAGING);
    drm_vrex_bo_create kvc{};
    const std::uint32_t kv = bo(65536, DRM_VREX_BO_KV, &kvc);
    drm_vrex_frame_submit f{};
    ASSERT_FALSE(frame(s, luma, 0, f));
    const std::uint32_t first_frame = f.frame;
    drm_vrex_shie_insert_item items[2]{};
    for (std::uint32_t i = 0; i < 2; i++) {
        items[i].fp[0] = f.fp[0];
        items[i].fp[1] = f.fp[1];
        items[i].handle = kv;
        items[i].offset = 16384 * i;
        items[i].length = 16384;
        items[i].region = i;
    }
    ASSERT_FALSE(be_->shie_insert(s, items));
    ASSERT_EQ(items[0].result, 0);
    ASSERT_EQ(items[1].result, 0);

    const bool resv = info_.caps & DRM_VREX_CAP_RESV;
    drm_vrex_resv_head_create hc{};
    const std::uint32_t keys = bo(4096, DRM_VREX_BO_KV);
    drm_vrex_resv_hash h{};
    if (resv) {
        hc.params = resv_params();
        ASSERT_FALSE(be_->resv_head_create(hc));
        auto map = be_->bo_map(keys);
        ASSERT_TRUE(map);
        for (std::size_t i = 0; i < map->size(); i++) (*map)[i] = std::byte(i * 37);
        h.head = hc.head;
        h.count = 4;
        h.handle = keys;
        ASSERT_FALSE(be_->resv_hash(h));
        EXPECT_EQ(h.tokens, 4u);
    }

    hang(1);
    drm_vrex_frame_submit hung{};
    EXPECT_EQ(frame(s, luma, 1, hung), kTimedOut) << "the command never completes: the device is reset";
    EXPECT_FALSE(wedged()) << "one reset brought it back";

    // Every block went with the reset: reported to its stream, reason RESET, with its generations.
    drm_vrex_released_block rel[4]{};
    std::uint32_t n = 0;
    ASSERT_FALSE(be_->shie_retire(s, {}, rel, n));
    ASSERT_EQ(n, 2u);
    for (std::uint32_t i = 0; i < 2; i++) {
        const drm_vrex_released_block& r = rel[i];
        const drm_vrex_shie_insert_item& it = r.block == items[0].block ? items[0] : items[1];
        EXPECT_EQ(r.block, it.block);
        EXPECT_EQ(r.reason, static_cast<std::uint32_t>(DRM_VREX_RELEASE_RESET));
        EXPECT_EQ(r.handle, kv);
        EXPECT_EQ(r.offset, it.offset);
        EXPECT_EQ(r.length, 16384u);
        EXPECT_EQ(r.bo_gen, kvc.bo_gen);
        EXPECT_EQ(r.block_gen, it.block_gen);
    }
    ASSERT_FALSE(be_->shie_retire(s, {}, rel, n));
    EXPECT_EQ(n, 0u) << "each record once";
    // The stream lives on, empty, with its id; frame numbers restart.
    ASSERT_FALSE(frame(s, luma, 2, f));
    EXPECT_EQ(f.frame, first_frame);
    drm_vrex_shie_lookup_item q{};
    q.kind = DRM_VREX_LOOKUP_TEMPORAL;
    q.region = 0;
    ASSERT_FALSE(be_->shie_lookup(s, std::span(&q, 1)));
    EXPECT_EQ(q.hit_flags, 0u) << "the SHIE was emptied";

    if (resv) {
        // The head's tokens are gone: every command on it says so until the owner acknowledges.
        EXPECT_EQ(be_->resv_hash(h), kStale);
        drm_vrex_resv_select_item sel{};
        sel.head = hc.head;
        sel.query_handle = keys;
        EXPECT_EQ(be_->resv_select(std::span(&sel, 1)), kStale);
        EXPECT_EQ(be_->resv_truncate(hc.head, 1), kStale);
        EXPECT_FALSE(be_->resv_truncate(hc.head, 0)) << "truncating to 0 acknowledges the loss";
        ASSERT_FALSE(be_->resv_hash(h));
        EXPECT_EQ(h.tokens, 4u) << "from empty again";
        EXPECT_FALSE(be_->resv_head_destroy(hc.head));
    }
    EXPECT_FALSE(be_->stream_destroy(s));
    EXPECT_FALSE(be_->bo_destroy(kv));
    EXPECT_FALSE(be_->bo_destroy(keys));
    EXPECT_FALSE(be_->bo_destroy(luma));
}

TEST_P(DeviceFaults, ResetsThatKeepFailingWedgeTheDevice) {
    const std::uint32_t s = stream();
    const std::uint32_t luma = bo(160 * 120, DRM_VREX_BO_STAGING);
    hang(1000);
    drm_vrex_frame_submit f{};
    EXPECT_EQ(frame(s, luma, 0, f), kTimedOut);
    EXPECT_TRUE(wedged()) << "three resets whose commands hang too";
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(frame(s, luma, 1, f), kIo) << "a wedged device fails every command at once";
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(ms, 100) << "without waiting for the device";
    drm_vrex_stream_create c{};
    EXPECT_EQ(be_->stream_create(c), kIo);
    EXPECT_FALSE(be_->stream_destroy(s)) << "tearing down still works";
    EXPECT_FALSE(be_->bo_destroy(luma));
}

// Runs @fn(@backend) in a child process, as uid 65534 when this process is root (quotas bind users
// without CAP_SYS_ADMIN; the kernel node is opened to everybody meanwhile). The child's exit status
// comes back: 0 when every check passed, else a bit per failed check; 255 when it could not drop
// privileges, 254 when it did not exit.
int as_unprivileged(const std::string& backend, const std::string& node, int (*fn)(const std::string&)) {
    struct stat st {};
    const bool chmodded = !node.empty() && ::geteuid() == 0 && ::stat(node.c_str(), &st) == 0 &&
                          ::chmod(node.c_str(), 0666) == 0;
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (::geteuid() == 0 && (::setresgid(65534, 65534, 65534) || ::setresuid(65534, 65534, 65534)))
            ::_exit(255);
        ::_exit(fn(backend) & 0xff);
    }
    int status = 0;
    const bool ok = pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status);
    if (chmodded) ::chmod(node.c_str(), st.st_mode & 07777);
    return ok ? WEXITSTATUS(status) : 254;
}

enum QuotaCheck {
    kOpen = 1 << 0,
    kStreams = 1 << 1,
    kBytes = 1 << 2,
    kHeads = 1 << 3,
    kReleased = 1 << 4,
};

// One unprivileged user's limits with the defaults (lib/vrex_quota.h, docs/uapi.md "Quotas"): half
// the stream slots, half the bank memory, half the ReSV heads; what is released is free again.
int check_default_quotas(const std::string& backend) {
    const BackendFactory* factory = find_backend_factory(backend);
    BackendOptions o;
    o.emu_zombie_frames = 7;  // the emulation: a device of its own (no other user's objects on it)
    if (!factory) return kOpen;
    auto opened = factory->open(o);
    if (!opened || !*opened) return kOpen;
    Backend& be = **opened;
    auto info = be.device_info();
    if (!info) return kOpen;
    const std::error_code quota{EDQUOT, std::generic_category()};
    int failed = 0;
    std::error_code ec;

    std::vector<std::uint32_t> streams;
    for (std::uint32_t i = 0; i <= info->max_streams && !ec; i++) {
        drm_vrex_stream_create c{};
        if (!(ec = be.stream_create(c))) streams.push_back(c.stream);
    }
    if (ec != quota || streams.size() != vrex_quota_limit(info->max_streams, VREX_QUOTA_DEFAULT_PCT))
        failed |= kStreams;
    if (!streams.empty()) {
        drm_vrex_stream_create c{};
        if (be.stream_destroy(streams.back()) || be.stream_create(c)) failed |= kReleased;
    }

    std::vector<std::uint32_t> bos;
    ec = {};
    for (std::uint32_t b = 0; b < info->bank_count && !ec; b++) {
        drm_vrex_bo_create c{};
        c.size = info->bank_size;
        c.bank_mask = std::uint64_t{1} << b;
        c.flags = DRM_VREX_BO_KV;
        if (!(ec = be.bo_create(c))) bos.push_back(c.handle);
    }
    const std::uint64_t bytes =
        vrex_quota_limit(std::uint64_t{info->bank_count} * info->bank_size, VREX_QUOTA_DEFAULT_PCT);
    if (ec != quota || bos.size() != bytes / info->bank_size) failed |= kBytes;

    if (auto rs = be.resv_stats(); rs && rs->heads) {
        std::uint32_t heads = 0;
        ec = {};
        for (std::uint32_t i = 0; i <= rs->heads && !ec; i++) {
            drm_vrex_resv_head_create hc{};
            hc.params = resv_params();
            if (!(ec = be.resv_head_create(hc))) heads++;
        }
        if (ec != quota || heads != vrex_quota_limit(rs->heads, VREX_QUOTA_DEFAULT_PCT)) failed |= kHeads;
    }
    return failed;
}

TEST_P(DeviceFaults, UserQuotasHaveTheKernelsDefaults) {
    const int failed = as_unprivileged(GetParam(), node_, check_default_quotas);
    ASSERT_NE(failed, 255) << "could not drop to uid 65534";
    ASSERT_NE(failed, 254) << "the child did not exit";
    EXPECT_FALSE(failed & kOpen) << "the unprivileged user could not open the device";
    EXPECT_FALSE(failed & kStreams) << "streams: EDQUOT at half the stream slots";
    EXPECT_FALSE(failed & kReleased) << "a destroyed stream's slot is uncharged";
    EXPECT_FALSE(failed & kBytes) << "BOs: EDQUOT at half the bank memory";
    EXPECT_FALSE(failed & kHeads) << "ReSV heads: EDQUOT at half the heads";
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceFaults, ::testing::ValuesIn(test::available_backends()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace vrex
