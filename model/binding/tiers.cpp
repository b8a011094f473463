// _vrexhal's view of the KV memory hierarchy (vrex/lcp/tiers.hpp): the one copy of its rules, which
// vrex/hierarchy.py drives for the Python path. Keys are Python's (id, generation) tuples. The host
// and disk copies come back as zero-copy uint8 arrays whose base is the KvTiers object (it outlives
// every view); such a view is valid until its block moves again (the moves each call reports).
#include "vrex/lcp/tiers.hpp"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "errors.hpp"
#include "handles.hpp"
#include "vrex/lcp/policy.hpp"

namespace py = pybind11;
using namespace vrex;
using py_binding::check;
using py_binding::PyBlock;
using py_binding::PyStream;
using py_binding::take;

namespace {

using Key = std::tuple<std::uint32_t, std::uint32_t>;  // (id, generation)

std::uint64_t key_of(const Key& k) {
    return (std::uint64_t{std::get<0>(k)} << 32) | std::get<1>(k);
}

Key key_tuple(std::uint64_t k) {
    return {static_cast<std::uint32_t>(k >> 32), static_cast<std::uint32_t>(k & 0xFFFFFFFFU)};
}

std::vector<Key> keys(const std::vector<std::uint64_t>& v) {
    std::vector<Key> out;
    out.reserve(v.size());
    for (const std::uint64_t k : v) out.push_back(key_tuple(k));
    return out;
}

lcp::Coldness coldness_of(const std::string& s) {
    if (s == "zombie") return lcp::Coldness::zombie;
    if (s == "fifo") return lcp::Coldness::fifo;
    if (s == "use") return lcp::Coldness::use;
    throw py::value_error("coldness must be one of zombie, fifo, use, not '" + s + "'");
}

lcp::Tier tier_of(int code) {
    if (code < 0 || code > 3) throw py::value_error("tier code must be 0..3 (device, host, disk, dropped)");
    return static_cast<lcp::Tier>(code);
}

// @bytes (memory @owner keeps alive) as a uint8 array whose base is @owner.
py::array view_of(std::span<const std::byte> bytes, const py::object& owner) {
    return py::array(py::dtype::of<std::uint8_t>(), {static_cast<py::ssize_t>(bytes.size())}, {1},
                     bytes.data(), owner);
}

lcp::KvTiers& self(const py::object& o) {
    return o.cast<lcp::KvTiers&>();
}

}  // namespace

void bind_tiers(py::module_& m) {
    py::class_<lcp::KvTiers>(m, "KvTiers")
        .def(py::init([](std::uint64_t block_bytes, std::uint32_t regions, std::uint32_t window,
                         std::uint32_t resident_frames, const std::string& coldness, bool drop,
                         std::uint32_t host_blocks, const std::string& disk_dir) {
                 lcp::TierOptions o;
                 o.resident_frames = resident_frames;
                 o.coldness = coldness_of(coldness);
                 o.drop = drop;
                 o.host_blocks = host_blocks;
                 o.disk_dir = disk_dir;
                 auto t = lcp::KvTiers::create(o, block_bytes, regions, window);
                 // A bad configuration is the caller's error (ValueError); the disk's are the system's.
                 if (!t && t.error() == std::errc::invalid_argument) throw py::value_error(t.error_message());
                 return take(std::move(t), "KvTiers");
             }),
             py::arg("block_bytes"), py::arg("regions"), py::arg("window"), py::arg("resident_frames"),
             py::arg("coldness") = "zombie", py::arg("drop") = false, py::arg("host_blocks") = 0,
             py::arg("disk_dir") = "")
        // The frame's blocks in region order; returns the keys promoted (pinned again on @stream).
        .def(
            "add_frame",
            [](lcp::KvTiers& t, PyStream& s, std::uint32_t frame, const std::vector<PyBlock>& blocks) {
                std::vector<KvBlock> b;
                b.reserve(blocks.size());
                for (const PyBlock& x : blocks) b.push_back(x.b);
                std::vector<KvBlock> repinned;
                check(t.add_frame(*s.stream, frame, b, repinned), "KvTiers.add_frame");
                std::vector<Key> out;
                for (const KvBlock& x : repinned) out.push_back(key_tuple(lcp::block_key(x)));
                return out;
            },
            py::arg("stream"), py::arg("frame"), py::arg("blocks"))
        // Returns (keys that left the device, keys whose host copy went to disk meanwhile).
        .def(
            "age",
            [](lcp::KvTiers& t, PyStream& s, std::uint32_t next) {
                std::vector<std::uint64_t> left, spilled;
                check(t.age(*s.stream, next, left, &spilled), "KvTiers.age");
                return std::make_pair(keys(left), keys(spilled));
            },
            py::arg("stream"), py::arg("next"))
        // Returns the keys whose host copy went to disk meanwhile.
        .def(
            "demote",
            [](lcp::KvTiers& t, PyStream& s, const Key& key) {
                std::vector<std::uint64_t> spilled;
                check(t.demote(*s.stream, key_of(key), &spilled), "KvTiers.demote");
                return keys(spilled);
            },
            py::arg("stream"), py::arg("key"))
        .def("stage_window", &lcp::KvTiers::stage_window, py::arg("next"))
        // (tier code, created, last_ref, last_read), None for an unknown key.
        .def(
            "entry",
            [](const lcp::KvTiers& t,
               const Key& key) -> std::optional<std::tuple<int, std::uint32_t, std::uint32_t, std::int64_t>> {
                const auto e = t.entry(key_of(key));
                if (!e) return std::nullopt;
                return std::make_tuple(static_cast<int>(e->tier), e->created, e->last_ref, e->last_read);
            },
            py::arg("key"))
        .def(
            "cold",
            [](const lcp::KvTiers& t, const Key& key, std::uint32_t next) {
                return t.cold(key_of(key), next);
            },
            py::arg("key"), py::arg("next"))
        .def(
            "slots",
            [](const lcp::KvTiers& t, const Key& key) {
                const auto s = t.slots(key_of(key));
                return std::vector<std::uint32_t>(s.begin(), s.end());
            },
            py::arg("key"))
        .def(
            "keys_on", [](const lcp::KvTiers& t, int tier) { return keys(t.keys_on(tier_of(tier))); },
            py::arg("tier"))
        // The host or disk copy of block @key (zero-copy), None when it has none.
        .def(
            "copy",
            [](const py::object& o, const Key& key) -> py::object {
                const auto c = self(o).host_copy(key_of(key));
                return c.empty() ? py::object(py::none()) : py::object(view_of(c, o));
            },
            py::arg("key"))
        // A question's read stages block @key: its copy (zero-copy), None on the device. KeyError
        // for an unknown or dropped block (nothing to fetch).
        .def(
            "fetch",
            [](const py::object& o, const Key& key) -> py::object {
                lcp::KvTiers& t = self(o);
                auto r = t.fetch(key_of(key));
                if (!r) throw py::key_error(r.error_message());
                if (t.entry(key_of(key))->tier == lcp::Tier::device) return py::none();
                return view_of(*r, o);
            },
            py::arg("key"))
        // A recall's bytes of block @key (counts recalled): its copy (zero-copy, staged), None on the
        // device. KeyError for an unknown or dropped block.
        .def(
            "fetch_prefill",
            [](const py::object& o, const Key& key) -> py::object {
                lcp::KvTiers& t = self(o);
                const auto e = t.entry(key_of(key));
                if (!e || e->tier == lcp::Tier::dropped)
                    throw py::key_error("KvTiers.fetch_prefill: block (" + std::to_string(std::get<0>(key)) +
                                        ", " + std::to_string(std::get<1>(key)) + ") " +
                                        (e ? "was dropped" : "is unknown"));
                const auto bytes = t.fetch_prefill(key_of(key));
                if (e->tier == lcp::Tier::device) return py::none();
                return view_of(bytes, o);
            },
            py::arg("key"))
        .def(
            "touch",
            [](lcp::KvTiers& t, const Key& key, std::uint32_t frame) { t.touch(key_of(key), frame); },
            py::arg("key"), py::arg("frame"))
        .def("end_read", &lcp::KvTiers::end_read)
        .def("account", &lcp::KvTiers::account, py::arg("meta_bytes"))
        .def("slot_tiers",
             [](const lcp::KvTiers& t) {
                 const auto c = t.slot_tiers();
                 py::array_t<std::int8_t> out(static_cast<py::ssize_t>(c.size()));
                 auto* p = out.mutable_data();
                 for (std::size_t i = 0; i < c.size(); i++) p[i] = static_cast<std::int8_t>(c[i]);
                 return out;
             })
        .def(
            "count", [](const lcp::KvTiers& t, int tier) { return t.count(tier_of(tier)); }, py::arg("tier"))
        .def_property_readonly("block_bytes", &lcp::KvTiers::block_bytes)
        // Peaks and counters (hierarchy.Bytes' fields).
        .def_property_readonly("bytes", [](const lcp::KvTiers& t) {
            const lcp::TierBytes& b = t.bytes();
            py::dict d;
            d["device_peak"] = b.device_peak;
            d["total_peak"] = b.total_peak;
            d["host_peak"] = b.host_peak;
            d["disk_peak"] = b.disk_peak;
            d["demoted"] = b.demoted;
            d["spilled"] = b.spilled;
            d["dropped"] = b.dropped;
            d["fetched"] = b.fetched;
            d["promoted"] = b.promoted;
            d["recalled"] = b.recalled;
            d["device_series"] = b.device_series;
            d["fetched_series"] = b.fetched_series;
            return d;
        });
}
