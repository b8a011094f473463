// _vrexhal's ReSV part: vrex::ResvHead (the HAL's emulated ReSV unit, i.e. lib/resv.c) for the LCP
// layer's decode-time retrieval (model/vrex/retrieval.py). Keys and queries go in as float32 numpy
// arrays; the HAL quantizes them per vector (resv_quantize) and the device hashes them, so Python
// never re-implements the hash, the clustering or WiCSum.
#include "vrex/resv.hpp"

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

namespace py = pybind11;
using namespace vrex;

namespace {

using F32 = py::array_t<float, py::array::c_style | py::array::forcecast>;

using py_binding::fail;
using py_binding::take;

ResvMode mode_from(const std::string& s) {
    if (s == "mass") return ResvMode::mass;
    if (s == "tokens") return ResvMode::tokens;
    throw std::invalid_argument("ReSV mode must be 'mass' or 'tokens', not '" + s + "'");
}

std::span<const float> rows(const F32& a, std::uint32_t dim, const char* what) {
    if (a.ndim() != 2 || static_cast<std::uint32_t>(a.shape(1)) != dim)
        throw std::invalid_argument(std::string(what) + " must be a 2-D array [n, " + std::to_string(dim) +
                                    "]");
    return {a.data(), static_cast<std::size_t>(a.size())};
}

py::dict stats_dict(const vrex::ResvStats& s) {
    py::dict d;
    d["keys"] = s.keys;
    d["clusters"] = s.clusters;
    d["selects"] = s.selects;
    d["tokens_scanned"] = s.tokens_scanned;
    d["tokens_selected"] = s.tokens_selected;
    d["bytes_selected"] = s.bytes_selected;
    d["ranges"] = s.ranges;
    d["heads"] = s.heads;
    d["heads_in_use"] = s.heads_in_use;
    d["max_tokens"] = s.max_tokens;
    d["max_clusters"] = s.max_clusters;
    return d;
}

}  // namespace

void bind_resv(py::module_& m) {
    py::class_<ResvHead>(m, "ResvHead")
        .def(py::init([](std::shared_ptr<Device> dev, std::uint32_t dim, std::uint32_t th, double ratio,
                         const std::string& mode, std::optional<std::uint64_t> seed,
                         std::optional<std::vector<std::uint16_t>> lut, std::uint32_t tokens_per_block,
                         std::uint32_t bytes_per_token) {
                 ResvParams p;
                 p.dim = dim;
                 p.th = th;
                 p.ratio = ratio;
                 p.mode = mode_from(mode);
                 if (seed) p.seed = *seed;
                 if (lut) p.lut = *lut;
                 p.tokens_per_block = tokens_per_block;
                 p.bytes_per_token = bytes_per_token;
                 return take(ResvHead::create(std::move(dev), p),
                             "create ReSV head (dim " + std::to_string(dim) + ", th " + std::to_string(th) +
                                 ", ratio " + std::to_string(ratio) + ")");
             }),
             py::arg("device"), py::arg("dim"), py::arg("th") = 7, py::arg("ratio") = 0.3,
             py::arg("mode") = "mass", py::arg("seed") = py::none(), py::arg("lut") = py::none(),
             py::arg("tokens_per_block") = 16, py::arg("bytes_per_token") = 0)
        .def_property_readonly("id", &ResvHead::id)
        .def_property_readonly("dim", &ResvHead::dim)
        .def_property_readonly("tokens", &ResvHead::tokens)
        .def(
            "append",
            [](ResvHead& h, const F32& keys) {
                return take(h.append(rows(keys, h.dim(), "keys")), "ReSV append");
            },
            py::arg("keys"), "hashes keys [n, dim] into the head (all or nothing); returns its token count")
        .def(
            "truncate",
            [](ResvHead& h, std::uint32_t keep) {
                auto r = h.truncate(keep);
                if (!r) fail("ReSV truncate to " + std::to_string(keep), r.error_info());
            },
            py::arg("keep"))
        .def(
            "select",
            [](ResvHead& h, const F32& query, bool blocks) {
                if (query.ndim() != 1 || static_cast<std::uint32_t>(query.shape(0)) != h.dim())
                    throw std::invalid_argument("query must be a 1-D array of " + std::to_string(h.dim()));
                const ResvSelection s =
                    take(h.select(std::span<const float>(query.data(), h.dim()), blocks), "ReSV select");
                py::dict d;
                py::list ranges;
                for (const ResvRange& r : s.ranges) ranges.append(py::make_tuple(r.first, r.count));
                d["ranges"] = ranges;
                d["tokens"] = s.tokens;
                d["clusters"] = s.clusters;
                d["head_tokens"] = s.head_tokens;
                d["qhash"] = s.qhash;
                d["cutoff"] = s.cutoff;
                return d;
            },
            py::arg("query"), py::arg("blocks") = false)
        .def(
            "select_mask",
            [](ResvHead& h, const F32& queries) {
                // One WiCSum selection per row; the token ranges expanded to a [n, tokens] mask, plus
                // the per-query summary (selected clusters, cut-off distance).
                const std::span<const float> q = rows(queries, h.dim(), "queries");
                const auto n = static_cast<py::ssize_t>(queries.shape(0));
                const auto t = static_cast<py::ssize_t>(h.tokens());
                py::array_t<bool> mask({n, t});
                py::array_t<std::uint32_t> clusters(n);
                py::array_t<std::uint32_t> cutoff(n);
                bool* mp = mask.mutable_data();
                std::memset(mp, 0, static_cast<std::size_t>(n * t));
                for (py::ssize_t i = 0; i < n; i++) {
                    const ResvSelection s = take(h.select(q.subspan(i * h.dim(), h.dim())), "ReSV select");
                    for (const ResvRange& r : s.ranges) {
                        if (static_cast<py::ssize_t>(r.first) + r.count > t)
                            throw std::runtime_error("ReSV select: range beyond the head's tokens");
                        std::memset(mp + i * t + r.first, 1, r.count);
                    }
                    clusters.mutable_at(i) = s.clusters;
                    cutoff.mutable_at(i) = s.cutoff;
                }
                return py::make_tuple(mask, clusters, cutoff);
            },
            py::arg("queries"));

    m.def(
        "resv_hash",
        [](const F32& keys, std::uint64_t seed) {
            if (keys.ndim() != 2) throw std::invalid_argument("resv_hash takes keys as a 2-D array [n, dim]");
            const auto dim = static_cast<std::uint32_t>(keys.shape(1));
            py::array_t<std::uint32_t> out(keys.shape(0));
            const std::span<std::uint32_t> o(out.mutable_data(), static_cast<std::size_t>(keys.shape(0)));
            auto r = resv_hash(seed, dim, rows(keys, dim, "keys"), o);
            if (!r)
                fail("ReSV hash of " + std::to_string(o.size()) + " keys of dim " + std::to_string(dim),
                     r.error_info());
            return out;
        },
        py::arg("keys"), py::arg("seed") = std::uint64_t{0x5245535631323334ull},
        "the HCU's 32-bit hash of each key (lib/resv.c), hashed once where keys are inserted");
    m.def(
        "resv_select_blocks",
        [](const py::array_t<std::uint32_t, py::array::c_style | py::array::forcecast>& hashes,
           const F32& position, std::uint32_t qhash, const std::vector<std::uint16_t>& lut, double ratio,
           std::uint32_t tokens_per_block) {
            if (hashes.ndim() != 1 || position.ndim() != 1)
                throw std::invalid_argument("resv_select_blocks takes 1-D hashes and position weights");
            const auto blocks = take(
                resv_select_blocks(
                    std::span<const std::uint32_t>(hashes.data(), static_cast<std::size_t>(hashes.size())),
                    std::span<const float>(position.data(), static_cast<std::size_t>(position.size())), qhash,
                    lut, ratio, tokens_per_block),
                "ReSV position-aware selection over " + std::to_string(hashes.size()) + " tokens (" +
                    std::to_string(position.size()) + " position weights, " + std::to_string(lut.size()) +
                    " LUT entries, ratio " + std::to_string(ratio) + ", " + std::to_string(tokens_per_block) +
                    " tokens per block)");
            py::array_t<std::int64_t> out(static_cast<py::ssize_t>(blocks.size()));
            for (std::size_t i = 0; i < blocks.size(); i++)
                out.mutable_at(static_cast<py::ssize_t>(i)) = blocks[i];
            return out;
        },
        py::arg("hashes"), py::arg("position"), py::arg("qhash"), py::arg("lut"), py::arg("ratio"),
        py::arg("tokens_per_block"),
        "position-aware WiCSum over blocks (docs/hw/resv.md §8.2): the selected blocks, heaviest first");
    m.def(
        "resv_mass_lut",
        [](double scale) {
            return take(resv_mass_lut(scale), "ReSV MASS table for scale " + std::to_string(scale));
        },
        py::arg("scale"),
        "the WTU's MASS weight per Hamming distance for a logit scale (docs/hw/resv.md §2.3)");
    m.def(
        "resv_stats", [](Device& d) { return stats_dict(take(resv_stats(d), "ReSV stats")); },
        py::arg("device"));
    m.def(
        "resv_quantize",
        [](const F32& v) {
            if (v.ndim() != 1) throw std::invalid_argument("resv_quantize takes a 1-D array");
            py::array_t<std::int16_t> out(v.shape(0));
            resv_quantize(std::span<const float>(v.data(), static_cast<std::size_t>(v.size())),
                          std::span<std::int16_t>(out.mutable_data(), static_cast<std::size_t>(v.size())));
            return out;
        },
        py::arg("values"), "the int16 fixed point the hash unit reads (per-vector scale)");
}
