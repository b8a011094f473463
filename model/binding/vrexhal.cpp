// _vrexhal: Python binding of libvrex-hal's engine API (Device, KvAllocator, Stream, KvBlock) for the
// LCP layer (model/vrex). A KvBlock exposes its device memory through the buffer protocol, so
// numpy/torch tensors alias the block without a copy. Lifetimes: a Block keeps its Stream (and so
// the allocator and device) alive; the memory itself is valid while the HAL keeps the block live
// (docs/hal.md: until the end_frame that releases it), which the caller's window ledger guarantees.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "errors.hpp"
#include "handles.hpp"
#include "luma.hpp"
#include "vrex/hal.hpp"
#include "vrex/imported_memory.hpp"
#include "vrex/lcp/geometry.hpp"

extern "C" {
#include "fcc_fingerprint.h"
}

namespace py = pybind11;
using namespace vrex;

void bind_resv(py::module_& m);    // resv.cpp
void bind_policy(py::module_& m);  // policy.cpp
void bind_tiers(py::module_& m);   // tiers.cpp

namespace {

using py_binding::check;
using py_binding::fail;
using py_binding::fp_from;
using py_binding::fp_tuple;
using py_binding::PyBlock;
using py_binding::PyStream;
using py_binding::take;

py::object retrieval(const Retrieval& r, const std::shared_ptr<PyStream>& owner) {
    if (!r.hit) return py::none();
    py::dict d;
    d["approximate"] = r.approximate;
    d["distance"] = r.distance;
    d["frame"] = r.frame;
    d["stream"] = r.stream;
    d["fp"] = fp_tuple(r.fp);
    d["block"] = PyBlock{r.block, owner};
    d["host_tier"] = r.host_tier;
    return d;
}

Tier tier_from(const std::string& s) {
    if (s == "any") return Tier::any;
    if (s == "device") return Tier::device;
    if (s == "host") return Tier::host;
    throw std::invalid_argument("tier must be 'any', 'device' or 'host', not '" + s + "'");
}

Scope scope_from(const std::string& s) {
    if (s == "stream") return Scope::stream;
    if (s == "pool") return Scope::pool;
    throw std::invalid_argument("scope must be 'stream' or 'pool', not '" + s + "'");
}

}  // namespace

namespace vrex::py_binding {

Fingerprint fp_from(const py::tuple& t) {
    if (t.size() != 2) throw std::invalid_argument("fingerprint must be a (w0, w1) tuple");
    Fingerprint fp;
    fp.w[0] = t[0].cast<std::uint64_t>();
    fp.w[1] = t[1].cast<std::uint64_t>();
    return fp;
}

}  // namespace vrex::py_binding

// Host memory the HAL imported (vrex/imported_memory.hpp): the host tier's pool. Its blocks keep the
// import alive by the HAL's own rule; this keeps the allocator.
struct PyImported {
    std::shared_ptr<KvAllocator> alloc;
    std::shared_ptr<ImportedMemory> mem;
};

PYBIND11_MODULE(_vrexhal, m) {
    m.doc() = "libvrex-hal engine API (KV blocks as zero-copy buffers)";

    py::class_<Device, std::shared_ptr<Device>>(m, "Device")
        .def_static(
            "open",
            [](const std::string& backend, std::uint32_t zombie_frames, std::uint32_t banks,
               std::uint32_t bank_mib) {
                DeviceOptions o;
                o.backend = take(parse_backend_choice(backend), "backend '" + backend + "'");
                o.backend_options.emu_zombie_frames = zombie_frames;
                // A long stream's whole KV cache lives on the device: the emulation's default
                // 16 x 4 MiB is too small for it (0 keeps the defaults).
                o.backend_options.emu_banks = banks;
                o.backend_options.emu_bank_size = std::uint64_t{bank_mib} << 20;
                return take(Device::open(o), "open device (" + backend + ")");
            },
            py::arg("backend") = "emulated", py::arg("zombie_frames") = 0, py::arg("banks") = 0,
            py::arg("bank_mib") = 0)
        .def_property_readonly("backend_name", [](const Device& d) { return std::string(d.backend_name()); })
        .def_property_readonly("zombie_frames", [](const Device& d) { return d.info().zombie_frames; })
        .def("description", &Device::description);

    py::class_<KvAllocator, std::shared_ptr<KvAllocator>>(m, "KvAllocator")
        .def(py::init([](std::shared_ptr<Device> dev, std::uint32_t layers, std::uint32_t kv_heads,
                         std::uint32_t head_dim, std::uint32_t tokens_per_block) {
                 return take(KvAllocator::create(std::move(dev), lcp::kv_geometry(layers, kv_heads, head_dim,
                                                                                  tokens_per_block)),
                             "create KV allocator");
             }),
             py::arg("device"), py::arg("layers"), py::arg("kv_heads"), py::arg("head_dim"),
             py::arg("tokens_per_block"))
        .def_property_readonly("block_bytes", &KvAllocator::block_bytes)
        .def("create_stream",
             [](const std::shared_ptr<KvAllocator>& a) {
                 auto s = std::make_shared<PyStream>();
                 s->alloc = a;
                 s->stream = take(a->create_stream(), "create stream");
                 return s;
             })
        .def(
            "import_memory",
            [](const std::shared_ptr<KvAllocator>& a, int fd) {
                return PyImported{a, take(a->import_memory(fd), "import memory")};
            },
            py::arg("fd"), "host memory (a dma-buf; the emulation takes a memfd) for the host tier")
        .def("stats", [](KvAllocator& a) {
            const Stats s = take(a.stats(), "allocator stats");
            py::dict d;
            d["hits"] = s.hits;
            d["approx_hits"] = s.approx_hits;
            d["misses"] = s.misses;
            d["evictions"] = s.evictions;
            d["removed"] = s.removed;
            d["allocations"] = s.allocations;
            d["resident_blocks"] = s.resident_blocks;
            d["resident_bytes"] = s.resident_bytes;
            d["live_blocks"] = s.device.live_blocks;
            return d;
        });

    py::class_<PyStream, std::shared_ptr<PyStream>>(m, "Stream")
        .def_property_readonly("id", [](const PyStream& s) { return s.stream->id(); })
        .def(
            "begin_frame",
            [](PyStream& s, py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> luma) {
                const LumaView v = py_binding::luma_view(luma);
                const FrameInfo fi = take(s.stream->begin_frame(v), "begin_frame");
                py::dict d;
                d["frame"] = fi.frame;
                d["fp"] = fp_tuple(fi.fp);
                d["group"] = fi.group;
                // The FCC's per-region motion (FrameInfo::region_motion, from the device), a list of 16.
                d["region_motion"] = std::vector<int>(fi.region_motion.begin(), fi.region_motion.end());
                return d;
            },
            py::arg("luma"))
        .def(
            "allocate",
            [](const std::shared_ptr<PyStream>& s, std::uint32_t region, std::int32_t offset) {
                return PyBlock{
                    take(s->stream->allocate(region, offset), "allocate region " + std::to_string(region)),
                    s};
            },
            py::arg("region"), py::arg("frame_offset") = 0)
        .def(
            "reuse",
            [](PyStream& s, std::uint32_t region, const PyBlock& b, std::int32_t offset) {
                check(s.stream->reuse(region, b.b, offset),
                      "reuse of block " + std::to_string(b.b.id) + " for region " + std::to_string(region));
            },
            py::arg("region"), py::arg("block"), py::arg("frame_offset") = 0)
        .def(
            "retrieve_temporal",
            [](const std::shared_ptr<PyStream>& s, std::uint32_t region, std::int32_t offset) {
                return retrieval(take(s->stream->retrieve_temporal(region, offset), "retrieve_temporal"), s);
            },
            py::arg("region"), py::arg("frame_offset"))
        .def(
            "retrieve_similar",
            [](const std::shared_ptr<PyStream>& s, std::uint32_t region, const py::tuple& fp,
               std::uint32_t radius, const std::string& scope, bool past_only) {
                return retrieval(take(s->stream->retrieve_similar(region, fp_from(fp), radius,
                                                                  scope_from(scope), past_only),
                                      "retrieve_similar"),
                                 s);
            },
            py::arg("region"), py::arg("fp"), py::arg("radius"), py::arg("scope") = "stream",
            py::arg("past_only") = true)
        // Up to n entries of @tier within the radius, nearest first (a list of retrieve_similar's
        // dicts, each with "host_tier"); HAL Query::candidates.
        .def(
            "retrieve_candidates",
            [](const std::shared_ptr<PyStream>& s, std::uint32_t region, const py::tuple& fp,
               std::uint32_t radius, const std::string& tier, std::uint32_t n, const std::string& scope,
               bool past_only) {
                Query q = Query::similar(region, fp_from(fp), radius, scope_from(scope), past_only);
                q.in_tier(tier_from(tier)).nearest(n);
                auto got = take(s->stream->retrieve_batch(std::span(&q, 1)), "retrieve_candidates");
                py::list out;
                for (const Retrieval& c : got.front().candidates) out.append(retrieval(c, s));
                return out;
            },
            py::arg("region"), py::arg("fp"), py::arg("radius"), py::arg("tier") = "any",
            py::arg("n") = kMaxCandidates, py::arg("scope") = "stream", py::arg("past_only") = true)
        .def(
            "release", [](PyStream& s, const PyBlock& b) { check(s.stream->release(b.b), "release"); },
            py::arg("block"))
        // A long-lived KV cache keeps every block it will read again pinned: the device's zombie rule
        // then drops the block's SHIE entry (no longer a reuse candidate) but not its memory.
        .def(
            "pin", [](PyStream& s, const PyBlock& b) { check(s.stream->pin(b.b), "pin"); }, py::arg("block"))
        .def(
            "unpin", [](PyStream& s, const PyBlock& b) { check(s.stream->unpin(b.b), "unpin"); },
            py::arg("block"))
        .def(
            "index_host_tier",
            [](const std::shared_ptr<PyStream>& s, const PyImported& mem, std::uint64_t offset,
               std::uint32_t region, std::uint32_t frame, const py::tuple& fp) {
                return PyBlock{take(s->stream->index_host_tier(*mem.mem, offset, region, frame, fp_from(fp)),
                                    "index_host_tier"),
                               s};
            },
            py::arg("memory"), py::arg("offset"), py::arg("region"), py::arg("frame"), py::arg("fp"),
            "the block at @offset of @memory (a demoted block's copy) for (@frame, @region) under @fp: "
            "found by similarity lookups, never aged; the slot's previous host-tier block is retired")
        .def("end_frame", [](PyStream& s) { return take(s.stream->end_frame(), "end_frame").count; });

    py::class_<PyImported>(m, "ImportedMemory", py::buffer_protocol())
        .def_property_readonly("handle", [](const PyImported& i) { return i.mem->handle(); })
        .def_property_readonly("size", [](const PyImported& i) { return i.mem->size(); })
        .def_property_readonly("blocks", [](const PyImported& i) { return i.mem->blocks(); })
        .def_buffer([](PyImported& i) {
            const std::span<std::byte> v = i.mem->host_view();
            return py::buffer_info(v.data(), 1, py::format_descriptor<std::uint8_t>::format(), 1,
                                   {static_cast<py::ssize_t>(v.size())}, {1}, false);
        });

    py::class_<PyBlock>(m, "KvBlock", py::buffer_protocol())
        .def_property_readonly("id", [](const PyBlock& b) { return b.b.id; })
        .def_property_readonly("region", [](const PyBlock& b) { return b.b.region; })
        .def_property_readonly("frame", [](const PyBlock& b) { return b.b.frame; })
        .def_property_readonly("bank", [](const PyBlock& b) { return b.b.bank; })
        .def_property_readonly("generation", [](const PyBlock& b) { return b.b.generation; })
        .def_property_readonly("shared", [](const PyBlock& b) { return b.b.shared; })
        .def_property_readonly("nbytes", [](const PyBlock& b) { return b.b.view.size(); })
        .def_property_readonly(
            "address", [](const PyBlock& b) { return reinterpret_cast<std::uintptr_t>(b.b.view.data()); })
        .def_buffer([](PyBlock& b) {
            // A block another stream owns or references is read-only (docs/hal.md "Sharing").
            // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): buffer_info takes void*
            return py::buffer_info(const_cast<std::byte*>(b.b.view.data()), 1,
                                   py::format_descriptor<std::uint8_t>::format(), 1,
                                   {static_cast<py::ssize_t>(b.b.view.size())}, {1}, b.b.shared);
        });

    // The FCC reference model's region motion (lib/fcc_fingerprint.c) of @cur against @prev: what the
    // device's begin_frame reports as region_motion (the tests check the two agree).
    m.def(
        "fcc_region_motion",
        [](py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> cur,
           py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast> prev) {
            const LumaView c = py_binding::luma_view(cur), p = py_binding::luma_view(prev);
            auto grid = std::make_unique<struct vrex_fcc_image[]>(2);
            auto mv = std::make_unique<struct vrex_fcc_motion>();
            if (vrex_fcc_downscale(c.data, c.width, c.height, c.stride, &grid[0]) ||
                vrex_fcc_downscale(p.data, p.width, p.height, p.stride, &grid[1]))
                throw std::invalid_argument("fcc_region_motion: luma must be 64..8192 pixels a side");
            vrex_fcc_motion(&grid[0], &grid[1], mv.get());
            std::array<u8, VREX_FCC_REGIONS> out{};
            vrex_fcc_region_motion(mv.get(), out.data());
            return std::vector<int>(out.begin(), out.end());
        },
        py::arg("cur"), py::arg("prev"));

    m.def("fingerprint_distance",
          [](const py::tuple& a, const py::tuple& b) { return fp_from(a).distance(fp_from(b)); });

    bind_resv(m);
    bind_policy(m);
    bind_tiers(m);
}
