// vrex-lcp-bench GOLDEN_DIR: the C++ LCP layer's prefill cost on a golden directory's real frames
// (python3 -m vrex.export ... --out GOLDEN_DIR --clip CLIP --frames N): an exact-KV runner and a
// reuse runner (default options) in lockstep, alternating which goes first; prints one JSON object
// with the prefill CPU-time ratio, the token ratio, the reuse rate and the max |logit| difference to
// the Python exact reference. A measurement tool (docs/model.md "C++"), not a test.
#include <ATen/Parallel.h>
#include <fmt/core.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "vrex/lcp.hpp"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: vrex-lcp-bench GOLDEN_DIR\n");
        return 2;
    }
    try {
        at::set_num_threads(1);
        // VREX_LCP_JIT_OPT=0: the TorchScript graph executor without its optimisation passes.
        if (const char* e = std::getenv("VREX_LCP_JIT_OPT"); e != nullptr && std::string(e) == "0")
            torch::jit::setGraphExecutorOptimize(false);
        // VREX_LCP_JIT_PROFILING=0: the simple executor instead of the profiling one.
        if (const char* e = std::getenv("VREX_LCP_JIT_PROFILING"); e != nullptr && std::string(e) == "0") {
            torch::jit::getProfilingMode() = false;
            torch::jit::getExecutorMode() = false;
        }
        const std::string dir = argv[1];
        torch::jit::Module g = torch::jit::load(dir + "/golden.pt");
        const torch::Tensor tokens = g.attr("tokens").toTensor();
        const torch::Tensor luma = g.attr("luma").toTensor().contiguous();
        const torch::Tensor exact_ref = g.attr("exact_ref").toTensor();
        vrex::DeviceOptions dopt;
        dopt.backend = vrex::BackendChoice::emulated;
        auto open = [&] {
            auto d = vrex::Device::open(dopt);
            if (!d) throw vrex::lcp::Error("open emulated device: " + d.error().message());
            return *d;
        };
        vrex::lcp::Options exact_o;
        exact_o.reuse = false;
        auto exact = vrex::lcp::Session::enable(dir + "/decoder.ts", open(), exact_o);
        auto reuse = vrex::lcp::Session::enable(dir + "/decoder.ts", open(), {});
        auto re = exact->stream();
        auto rr = reuse->stream();
        double te = 0, tr = 0, maxdiff = 0;
        std::uint64_t tok_e = 0, tok_r = 0, reused = 0, regions = 0;
        for (std::int64_t t = 0; t < tokens.size(0); ++t) {
            vrex::LumaView v;
            v.data = luma[t].data_ptr<std::uint8_t>();
            v.height = static_cast<std::uint32_t>(luma.size(1));
            v.width = static_cast<std::uint32_t>(luma.size(2));
            v.stride = v.width;
            vrex::lcp::StepResult a, b;
            if (t % 2 == 0) {
                a = re->step(v, tokens[t]);
                b = rr->step(v, tokens[t]);
            } else {
                b = rr->step(v, tokens[t]);
                a = re->step(v, tokens[t]);
            }
            te += a.stats.prefill_s;
            tr += b.stats.prefill_s;
            tok_e += a.stats.tokens;
            tok_r += b.stats.tokens;
            reused += b.stats.reused;
            regions += exact->geometry().regions;
            maxdiff = std::max(maxdiff, (a.logits - exact_ref[t]).abs().max().item<double>());
        }
        fmt::print(
            "{{\"frames\": {}, \"exact_prefill_ms_mean\": {:.3f}, \"reuse_prefill_ms_mean\": {:.3f}, "
            "\"prefill_ms_ratio\": {:.4f}, \"prefill_tokens_ratio\": {:.4f}, \"reuse_rate\": {:.4f}, "
            "\"exact_vs_python_max_abs\": {:.3g}}}\n",
            tokens.size(0), te * 1e3 / static_cast<double>(tokens.size(0)),
            tr * 1e3 / static_cast<double>(tokens.size(0)), tr / te,
            static_cast<double>(tok_r) / static_cast<double>(tok_e),
            static_cast<double>(reused) / static_cast<double>(regions), maxdiff);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "vrex-lcp-bench: %s\n", e.what());
        return 1;
    }
    return 0;
}
