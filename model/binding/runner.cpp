// _vrexrun: the C++ path of the builtin model (vrex::lcp::StreamRunner: libtorch runs the scripted
// decoder.py step, vrex::lcp::ReusePolicy decides reuse over libvrex-hal) for vrex/run.py. Arrays
// cross as numpy (read in place by the step, logits copied out); no torch type crosses here.
#include "vrex/lcp/runner.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "errors.hpp"
#include "luma.hpp"

namespace py = pybind11;
using namespace vrex;
using py_binding::take;

namespace {

struct Session {
    std::shared_ptr<lcp::ScriptedModel> model;
    std::shared_ptr<Device> device;
    std::shared_ptr<KvAllocator> alloc;
    lcp::RunnerOptions opts;
};

// The native decoder of a scripted module, alone (model/tests/test_native.py holds it equal to
// decoder.py): arrays in, arrays out, the caller's cache and blocks written in place.
struct Native {
    std::shared_ptr<lcp::ScriptedModel> model;
    lcp::NativeScratch scratch;
};

template <class T>
std::span<T> writable(py::array_t<T, py::array::c_style>& a, std::size_t n, const char* what) {
    if (!a.writeable() || static_cast<std::size_t>(a.size()) != n)
        throw std::invalid_argument(std::string(what) + " must be a writable C-contiguous array of " +
                                    std::to_string(n) + " values");
    return {a.mutable_data(), n};
}

// Every frame's blocks of @pages [frames, regions, layers, 2, kv_heads, tokens_per_region, head_dim]
// (a Python test's paged cache): one pointer per (frame, region), as lcp::KvPages reads them.
std::vector<float*> page_pointers(const lcp::NativeConfig& c, py::array_t<float, py::array::c_style>& pages) {
    const std::size_t block = std::size_t{c.layers} * 2 * c.kv_heads * c.tokens_per_region * c.head_dim;
    if (pages.ndim() != 7 || static_cast<std::size_t>(pages.shape(1)) != c.regions)
        throw std::invalid_argument("pages must be [frames, regions, layers, 2, kv_heads, tokens, head_dim]");
    const auto all = writable(pages, static_cast<std::size_t>(pages.shape(0)) * c.regions * block, "pages");
    std::vector<float*> per(all.size() / block);
    for (std::size_t i = 0; i < per.size(); i++) per[i] = all.data() + i * block;
    return per;
}

struct Runner {
    std::shared_ptr<Session> s;
    std::unique_ptr<lcp::StreamRunner> r;
};

template <class T>
std::span<const T> values(const py::array_t<T, py::array::c_style | py::array::forcecast>& a, int ndim,
                          const char* what) {
    if (a.ndim() != ndim)
        throw std::invalid_argument(std::string(what) + " must be a " + std::to_string(ndim) + "-D array");
    return {a.data(), static_cast<std::size_t>(a.size())};
}

// hierarchy.py's COLDNESS names.
lcp::Coldness coldness_of(const std::string& name) {
    if (name == "zombie") return lcp::Coldness::zombie;
    if (name == "fifo") return lcp::Coldness::fifo;
    if (name == "use") return lcp::Coldness::use;
    throw std::invalid_argument("coldness is 'zombie', 'fifo' or 'use', not '" + name + "'");
}

}  // namespace

PYBIND11_MODULE(_vrexrun, m) {
    m.doc() = "the builtin model's C++ path: scripted decoder (libtorch) + vrex::lcp policy over libvrex-hal";
    m.def("set_num_threads", [](int n) { lcp::set_num_threads(n); });

    py::class_<Session, std::shared_ptr<Session>>(m, "Session")
        .def(py::init([](const std::string& module, const std::string& policy, bool fcc, std::uint32_t radius,
                         std::uint32_t guard_bits, std::uint32_t max_age, bool similar, std::uint32_t banks,
                         std::uint32_t bank_mib, const std::string& read, double read_ratio, bool profile_fcc,
                         bool refresh, bool recall, std::uint32_t recall_radius,
                         std::uint32_t recall_guard_bits, std::uint32_t resident, const std::string& coldness,
                         std::uint32_t fetch, const std::string& kernels,
                         std::optional<std::uint32_t> motion_gate, std::uint32_t host_blocks,
                         const std::string& disk_dir, std::uint32_t host_reserve, std::uint32_t host_slots,
                         std::uint32_t recall_candidates, bool tiered) {
                 auto s = std::make_shared<Session>();
                 if (kernels == "scripted")
                     s->opts.kernels = lcp::Kernels::scripted;
                 else if (kernels != "native")
                     throw std::invalid_argument("the C++ path's kernels are 'native' or 'scripted', not '" +
                                                 kernels + "'");
                 if (policy == "exact")
                     s->opts.policy = lcp::Policy::exact;
                 else if (policy != "vrex")
                     throw std::invalid_argument("the C++ path runs policy 'exact' or 'vrex', not '" +
                                                 policy + "'");
                 s->opts.reuse = {fcc,    radius,        guard_bits,        max_age,    similar,
                                  recall, recall_radius, recall_guard_bits, motion_gate};
                 s->opts.reuse.recall_candidates = recall_candidates;
                 s->opts.reuse.tiered = tiered;
                 s->opts.host_slots = host_slots;
                 s->opts.refresh = refresh;
                 if (read == "resv")
                     s->opts.read = {.resv = true, .ratio = read_ratio, .fetch_blocks = fetch};
                 else if (read != "reach")
                     throw std::invalid_argument("the C++ path's question read is 'reach' or 'resv', not '" +
                                                 read + "'");
                 if (resident > 0)
                     s->opts.tiers = lcp::TierOptions{.resident_frames = resident,
                                                      .coldness = coldness_of(coldness),
                                                      .host_blocks = host_blocks,
                                                      .disk_dir = disk_dir,
                                                      .host_reserve_blocks = host_reserve};
                 s->opts.profile_fcc = profile_fcc;
                 s->model = std::make_shared<lcp::ScriptedModel>(module);
                 DeviceOptions o;
                 o.backend = BackendChoice::emulated;
                 o.backend_options.emu_banks = banks;
                 o.backend_options.emu_bank_size = std::uint64_t{bank_mib} << 20;
                 s->device = take(Device::open(o), "open emulated device");
                 if (max_age > s->device->info().zombie_frames)
                     throw std::invalid_argument("max_age exceeds the device's zombie threshold");
                 s->alloc = take(KvAllocator::create(s->device, s->model->geometry().hal(),
                                                     lcp::runner_allocator_options(
                                                         s->model->geometry(), s->device->info().bank_size)),
                                 "create KV allocator");
                 return s;
             }),
             py::arg("module"), py::arg("policy"), py::arg("fcc"), py::arg("radius"), py::arg("guard_bits"),
             py::arg("max_age"), py::arg("similar"), py::arg("banks"), py::arg("bank_mib"),
             py::arg("read") = "reach", py::arg("read_ratio") = 0.5, py::arg("profile_fcc") = false,
             py::arg("refresh") = false, py::arg("recall") = false, py::arg("recall_radius") = 8,
             py::arg("recall_guard_bits") = 0, py::arg("resident") = 0, py::arg("coldness") = "zombie",
             py::arg("fetch") = 4, py::arg("kernels") = "native", py::arg("motion_gate") = py::none(),
             py::arg("host_blocks") = 0, py::arg("disk_dir") = "", py::arg("host_reserve") = 0,
             py::arg("host_slots") = 4096, py::arg("recall_candidates") = 8, py::arg("tiered") = true)
        .def_property_readonly("block_bytes", [](const Session& s) { return s.alloc->block_bytes(); })
        .def("stream", [](const std::shared_ptr<Session>& s) {
            return Runner{s, std::make_unique<lcp::StreamRunner>(*s->model, s->alloc, s->opts)};
        });

    using F32 = py::array_t<float, py::array::c_style>;
    using CF32 = py::array_t<float, py::array::c_style | py::array::forcecast>;
    using CI64 = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
    py::class_<Native>(m, "NativeDecoder")
        .def(py::init([](const std::string& module) {
                 return Native{std::make_shared<lcp::ScriptedModel>(module), {}};
             }),
             py::arg("module"))
        .def("embed",
             [](const Native& n, const CF32& tokens) {
                 const auto& c = n.model->native().config();
                 F32 vis({static_cast<py::ssize_t>(c.visual()), static_cast<py::ssize_t>(c.d_model)});
                 n.model->native().embed(values(tokens, 2, "tokens"),
                                         {vis.mutable_data(), std::size_t(vis.size())});
                 return vis;
             })
        .def("prepare",
             [](Native& n, const CF32& tokens) {
                 const auto& c = n.model->native().config();
                 F32 vis({static_cast<py::ssize_t>(c.visual()), static_cast<py::ssize_t>(c.d_model)});
                 std::vector<std::uint32_t> h(c.regions);
                 n.model->native().prepare(n.scratch, values(tokens, 2, "tokens"),
                                           {vis.mutable_data(), std::size_t(vis.size())}, h);
                 return py::make_tuple(
                     vis, py::array_t<std::uint32_t>(static_cast<py::ssize_t>(h.size()), h.data()));
             })
        .def(
            "prefill",
            [](Native& n, const CF32& z, const CF32& vis, const std::vector<std::uint32_t>& fresh, F32& pages,
               std::uint32_t t) {
                const auto& c = n.model->native().config();
                const auto per = page_pointers(c, pages);
                if (per.size() < (std::size_t{t} + 1) * c.regions)
                    throw std::invalid_argument("pages must hold frames 0 .. t");
                const std::span<float* const> blocks(per.data() + std::size_t{t} * c.regions, c.regions);
                const std::vector<const float*> read(per.begin(), per.end());
                n.model->native().prefill(n.scratch, values(z, 2, "z"), values(vis, 2, "vis"), fresh, blocks,
                                          {read}, t);
            },
            py::arg("z"), py::arg("vis"), py::arg("fresh"), py::arg("pages").noconvert(), py::arg("t"))
        .def(
            "ask",
            [](Native& n, F32& pages, std::uint32_t t, const CI64& q_region, const CI64& q_target,
               std::optional<CI64> q_read) {
                const auto& c = n.model->native().config();
                const auto per = page_pointers(c, pages);
                const std::vector<const float*> blocks(per.begin(), per.end());
                const auto qr = values(q_region, 1, "q_region");
                lcp::QuestionRead read;
                if (q_read) read = {values(*q_read, 2, "q_read"), static_cast<std::size_t>(q_read->shape(1))};
                F32 out({static_cast<py::ssize_t>(qr.size()), static_cast<py::ssize_t>(c.codes)});
                n.model->native().ask(n.scratch, {blocks}, t, qr, values(q_target, 1, "q_target"),
                                      q_read ? &read : nullptr,
                                      {out.mutable_data(), std::size_t(out.size())});
                return out;
            },
            py::arg("pages").noconvert(), py::arg("t"), py::arg("q_region"), py::arg("q_target"),
            py::arg("q_read") = py::none())
        .def("selector", [](Native& n, const CI64& q_region, const CI64& q_target, std::uint32_t t) {
            const auto& c = n.model->native().config();
            const auto qr = values(q_region, 1, "q_region");
            const auto nq = static_cast<py::ssize_t>(qr.size()), span = 2 * py::ssize_t{c.question_reach} + 1;
            F32 q({nq, static_cast<py::ssize_t>(c.heads * c.head_dim)});
            py::array_t<std::int64_t> fr({nq, span});
            F32 w({nq, span * static_cast<py::ssize_t>(c.visual())});
            n.model->native().selector(
                n.scratch, qr, values(q_target, 1, "q_target"), t, {q.mutable_data(), std::size_t(q.size())},
                {fr.mutable_data(), std::size_t(fr.size())}, {w.mutable_data(), std::size_t(w.size())});
            return py::make_tuple(q, fr, w);
        });

    py::class_<Runner>(m, "StreamRunner")
        .def(
            "step",
            [](Runner& r, py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> luma,
               py::array_t<float, py::array::c_style | py::array::forcecast> tokens,
               py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> q_region,
               py::array_t<std::int64_t, py::array::c_style | py::array::forcecast> q_target) {
                const LumaView v = py_binding::luma_view(luma);
                lcp::StepStats st;
                const auto q = values(q_region, 1, "q_region");
                const std::vector<float> logits =
                    r.r->step(v, values(tokens, 2, "tokens"), q, values(q_target, 1, "q_target"), st);
                const auto codes = static_cast<py::ssize_t>(r.s->model->geometry().codes);
                py::array_t<float> out({static_cast<py::ssize_t>(q.size()), codes});
                std::memcpy(out.mutable_data(), logits.data(), sizeof(float) * logits.size());
                py::dict d;
                d["step_s"] = st.step_s;
                d["ask_s"] = st.ask_s;
                d["emu_s"] = st.emu_s;
                py::dict stages;
                for (std::size_t i = 0; i < lcp::kStageNames.size(); i++)
                    stages[lcp::kStageNames[i]] = st.stage_s[i];
                d["stages"] = stages;
                py::dict engine;
                for (std::size_t i = 0; i < lcp::kEngineNames.size(); i++)
                    engine[lcp::kEngineNames[i]] = st.engine_s[i];
                d["engine"] = engine;
                if (st.fcc_s >= 0) d["fcc_s"] = st.fcc_s;
                d["reused"] = st.reused;
                d["recalled"] = st.recalled;
                d["reused_region"] = st.reused_region;
                d["question_keys"] = st.question_keys;
                d["weighed"] = st.weighed;
                d["selected_blocks"] = st.selected_blocks;
                d["hashed"] = st.hashed;
                return py::make_tuple(out, d);
            },
            py::arg("luma"), py::arg("tokens"), py::arg("q_region"), py::arg("q_target"))
        .def("distinct_blocks", [](const Runner& r) { return r.r->distinct_blocks(); })
        .def("cache_tokens", [](const Runner& r) { return r.r->cache_tokens(); })
        // The memory hierarchy's bytes and moves (anchors.Managed.stats' keys), and the policy's
        // counters; empty without a hierarchy.
        .def("hierarchy_stats",
             [](const Runner& r) {
                 py::dict d;
                 const lcp::KvTiers* t = r.r->tiers();
                 if (t == nullptr) return d;
                 const lcp::TierBytes& b = t->bytes();
                 d["device_bytes_peak"] = b.device_peak;
                 d["host_bytes_peak"] = b.host_peak;
                 d["total_bytes_peak"] = b.total_peak;
                 d["disk_bytes_peak"] = b.disk_peak;
                 d["demoted"] = b.demoted;
                 d["dropped"] = b.dropped;
                 d["spilled"] = b.spilled;
                 d["fetched"] = b.fetched;
                 d["promoted"] = b.promoted;
                 d["recalled"] = b.recalled;
                 d["device_series"] = b.device_series;
                 d["fetched_series"] = b.fetched_series;
                 d["device_blocks"] = t->device_blocks();
                 d["host_blocks"] = t->host_blocks();
                 // The host pool's reservation (TierOptions::host_reserve_blocks): slots set up when the
                 // stream's tiers were created (outside every step), its setup cost, and the slots the
                 // pool grew for past it (every first use of a slot without a reservation).
                 const lcp::HostBlockPool& pool = t->host_pool();
                 d["host_reserved"] = pool.reserved();
                 d["host_grown"] = pool.grown();
                 d["host_reserve_cpu_s"] = pool.reserve_cpu_s();
                 d["host_reserve_wall_s"] = pool.reserve_wall_s();
                 if (const lcp::ReuseCounters* c = r.r->counters()) {
                     py::dict pc;
                     pc["candidates"] = c->candidates;
                     pc["unknown"] = c->unknown;
                     pc["too_old"] = c->too_old;
                     pc["hash_far"] = c->hash_far;
                     pc["gated"] = c->gated;
                     pc["reused"] = c->reused;
                     pc["recalled"] = c->recalled;
                     pc["recalled_past_nearest"] = c->recalled_past_nearest;
                     pc["installed"] = c->installed;
                     pc["hw_1_0_frames"] = c->hw_1_0_frames;
                     d["policy_counters"] = pc;
                 }
                 return d;
             })
        .def("close", [](Runner& r) { r.r->close(); });
}
