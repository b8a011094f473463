// _vrexhal's view of the C++ LCP decisions (vrex/lcp/policy.hpp): ReusePolicy, apply_frame and
// unpin_all. One Python call per step of a frame: the lookups, the guard and the block calls of all
// regions happen in C++ (a call per region cost more than the HAL work itself).
#include "vrex/lcp/policy.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "handles.hpp"

namespace py = pybind11;
using namespace vrex;
using py_binding::check;
using py_binding::fp_from;
using py_binding::PyBlock;
using py_binding::PyStream;
using py_binding::take;

namespace {

std::vector<KvBlock> blocks_of(const std::vector<PyBlock>& v) {
    std::vector<KvBlock> out;
    out.reserve(v.size());
    for (const PyBlock& b : v) out.push_back(b.b);
    return out;
}

}  // namespace

void bind_policy(py::module_& m) {
    py::class_<lcp::ReusePolicy>(m, "ReusePolicy")
        .def(py::init([](std::uint32_t regions, bool fcc, std::uint32_t radius, std::uint32_t guard_bits,
                         std::uint32_t max_age, bool similar, bool recall, std::uint32_t recall_radius,
                         std::uint32_t recall_guard_bits, std::optional<std::uint32_t> motion_gate,
                         std::uint32_t recall_candidates, bool tiered) {
                 lcp::ReuseOptions o;
                 o.fcc = fcc;
                 o.radius = radius;
                 o.guard_bits = guard_bits;
                 o.max_age = max_age;
                 o.similar = similar;
                 o.recall = recall;
                 o.recall_radius = recall_radius;
                 o.recall_guard_bits = recall_guard_bits;
                 o.motion_gate = motion_gate;
                 o.recall_candidates = recall_candidates;
                 o.tiered = tiered;
                 return take(lcp::ReusePolicy::create(o, regions), "reuse policy");
             }),
             py::arg("regions"), py::arg("fcc") = true, py::arg("radius") = 20, py::arg("guard_bits") = 1,
             py::arg("max_age") = 2, py::arg("similar") = true, py::arg("recall") = false,
             py::arg("recall_radius") = 8, py::arg("recall_guard_bits") = 0,
             py::arg("motion_gate") = py::none(), py::arg("recall_candidates") = 8, py::arg("tiered") = true)
        .def(
            "choose",
            [](lcp::ReusePolicy& p, const std::shared_ptr<PyStream>& s, const py::tuple& fp,
               const std::vector<std::uint32_t>& hashes, std::uint32_t frame,
               const std::vector<std::uint8_t>& region_motion) {
                const lcp::FrameChoice c =
                    take(p.choose(*s->stream, fp_from(fp), hashes, frame, region_motion), "reuse choice");
                py::dict out;
                for (std::uint32_t r = 0; r < c.size(); r++)
                    if (c[r]) out[py::int_(r)] = PyBlock{*c[r], s};
                return out;
            },
            py::arg("stream"), py::arg("fp"), py::arg("hashes"), py::arg("frame"),
            py::arg("region_motion") = std::vector<std::uint8_t>{},
            "region -> earlier block to alias, for the frame @stream has begun (@region_motion: "
            "begin_frame's, needed with a motion gate)")
        .def(
            "computed",
            [](lcp::ReusePolicy& p, const std::vector<PyBlock>& blocks,
               const std::vector<std::uint32_t>& hashes,
               std::uint32_t frame) { check(p.computed(blocks_of(blocks), hashes, frame), "reuse policy"); },
            py::arg("blocks"), py::arg("hashes"), py::arg("frame"))
        .def(
            "recalled",
            [](const lcp::ReusePolicy& p) {
                py::dict out;  // region -> ((id, generation), frame, hash distance, fp distance)
                const auto& v = p.recalled();
                for (std::uint32_t r = 0; r < v.size(); r++)
                    if (v[r])
                        out[py::int_(r)] =
                            py::make_tuple(py::make_tuple(v[r]->id, v[r]->generation), v[r]->frame,
                                           v[r]->hash_distance, v[r]->fp_distance);
                return out;
            },
            "region -> ((id, generation), frame, hash distance, fingerprint distance) to fetch back, for the "
            "frame choose() decided last")
        .def(
            "installed",
            [](lcp::ReusePolicy& p, const std::vector<PyBlock>& blocks,
               const std::vector<std::pair<std::uint32_t, std::uint32_t>>& sources, std::uint32_t frame) {
                std::vector<std::uint64_t> keys;
                for (const auto& [id, gen] : sources) keys.push_back((std::uint64_t{id} << 32) | gen);
                check(p.installed(blocks_of(blocks), keys, frame), "reuse policy");
            },
            py::arg("blocks"), py::arg("sources"), py::arg("frame"),
            "@blocks were filled from the blocks (id, generation) @sources instead of being computed")
        .def(
            "forget",
            [](lcp::ReusePolicy& p, const std::vector<std::pair<std::uint32_t, std::uint32_t>>& keys) {
                std::vector<std::uint64_t> k;
                for (const auto& [id, gen] : keys) k.push_back((std::uint64_t{id} << 32) | gen);
                p.forget(k);
            },
            py::arg("keys"), "the blocks (id, generation) @keys are gone: never recall them")
        .def(
            "attach_host_tier",
            [](lcp::ReusePolicy& p, const std::shared_ptr<PyStream>& s, std::uint32_t slots) {
                check(p.attach_host_tier(*s->alloc, slots), "reuse policy");
            },
            py::arg("stream"), py::arg("slots"),
            "recall's host tier: @slots blocks of host memory imported by @stream's allocator")
        .def(
            "demote",
            [](lcp::ReusePolicy& p, const std::shared_ptr<PyStream>& s,
               const std::pair<std::uint32_t, std::uint32_t>& source, const py::buffer& bytes) {
                const py::buffer_info info = bytes.request();
                py::ssize_t stride = info.itemsize;
                bool contiguous = true;
                for (py::ssize_t d = info.ndim - 1; d >= 0; d--) {
                    contiguous = contiguous && (info.shape[d] == 1 || info.strides[d] == stride);
                    stride *= info.shape[d];
                }
                if (!contiguous)
                    throw std::invalid_argument("demote: the block's bytes must be C-contiguous");
                const std::span<const std::byte> span(static_cast<const std::byte*>(info.ptr),
                                                      static_cast<std::size_t>(info.size * info.itemsize));
                const std::uint64_t key = (std::uint64_t{source.first} << 32) | source.second;
                return PyBlock{take(p.demote(*s->stream, key, span), "reuse policy"), s};
            },
            py::arg("stream"), py::arg("source"), py::arg("bytes"),
            "block @source (id, generation) was demoted: its @bytes go to the next host-tier slot, "
            "indexed in the SHIE for @stream's open frame -> the host-tier block")
        .def(
            "recallable",
            [](const lcp::ReusePolicy& p, const std::pair<std::uint32_t, std::uint32_t>& source) {
                return p.recallable((std::uint64_t{source.first} << 32) | source.second);
            },
            py::arg("source"), "whether demote() knows block @source (id, generation)")
        .def_property_readonly("host_slots", &lcp::ReusePolicy::host_slots)
        .def_property_readonly("hosted", &lcp::ReusePolicy::hosted)
        .def_property_readonly("index_size", &lcp::ReusePolicy::index_size)
        .def_property_readonly("ledger_size", &lcp::ReusePolicy::ledger_size)
        .def_property_readonly("counters", [](const lcp::ReusePolicy& p) {
            const lcp::ReuseCounters& c = p.counters();
            py::dict d;
            d["candidates"] = c.candidates;
            d["unknown"] = c.unknown;
            d["too_old"] = c.too_old;
            d["hash_far"] = c.hash_far;
            d["gated"] = c.gated;
            d["reused"] = c.reused;
            d["recalled"] = c.recalled;
            d["recalled_past_nearest"] = c.recalled_past_nearest;
            d["installed"] = c.installed;
            d["hw_1_0_frames"] = c.hw_1_0_frames;
            return d;
        });

    m.def(
        "apply_frame",
        [](const std::shared_ptr<PyStream>& s, const std::map<std::uint32_t, PyBlock>& choice,
           std::uint32_t regions) {
            lcp::FrameChoice c(regions);
            for (const auto& [r, b] : choice) {
                if (r >= regions)
                    throw std::invalid_argument("region " + std::to_string(r) + " of a " +
                                                std::to_string(regions) + "-region frame");
                c[r] = b.b;
            }
            const lcp::FrameBlocks f = take(lcp::apply_choice(*s->stream, c), "apply frame");
            std::vector<PyBlock> blocks;
            blocks.reserve(f.blocks.size());
            for (const KvBlock& b : f.blocks) blocks.push_back(PyBlock{b, s});
            return py::make_tuple(std::move(blocks), f.fresh);
        },
        py::arg("stream"), py::arg("choice"), py::arg("regions"),
        "aliases the chosen blocks, allocates and pins the other regions -> (block per region, fresh "
        "regions)");
    m.def(
        "unpin_all",
        [](const std::shared_ptr<PyStream>& s, const std::vector<PyBlock>& blocks) {
            check(lcp::unpin_all(*s->stream, blocks_of(blocks)), "unpin");
        },
        py::arg("stream"), py::arg("blocks"));
}
