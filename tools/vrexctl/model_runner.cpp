#include "model_runner.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common.hpp"
#include "pipeline/svg_plot.hpp"

#ifndef VREX_PYTHON
#define VREX_PYTHON "/usr/bin/python3"
#endif
#ifndef VREX_MODEL_PYTHONPATH
#define VREX_MODEL_PYTHONPATH ""
#endif

namespace vrexctl {

nlohmann::json run_builtin_model(const ModelRunArgs& a) {
    // VREX_MODEL_PYTHONPATH in the environment overrides the build tree's (an installed vrexctl).
    const char* env_path = std::getenv("VREX_MODEL_PYTHONPATH");
    const std::string pypath = env_path && *env_path ? env_path : VREX_MODEL_PYTHONPATH;
    if (pypath.empty())
        throw ExitError(
            kExitRuntime,
            "--model builtin: the vrex Python extension was not built (pybind11-dev, python3-dev, "
            "python3-torch: scripts/deps.sh) and VREX_MODEL_PYTHONPATH is not set");
    std::vector<std::string> args = {VREX_PYTHON, "-m",       "vrex.run",
                                     "--json",    "--radius", std::to_string(a.radius)};
    if (a.stream_offset) {
        args.push_back("--stream-offset");
        args.push_back(std::to_string(a.stream_offset));
    }
    if (a.max_frames) {
        args.push_back("--max-frames");
        args.push_back(std::to_string(a.max_frames));
    }
    args.insert(args.end(), a.videos.begin(), a.videos.end());
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    int fds[2];
    if (pipe(fds) != 0)
        throw ExitError(kExitRuntime, fmt::format("--model builtin: pipe: {}", std::strerror(errno)));
    const pid_t pid = fork();
    if (pid < 0)
        throw ExitError(kExitRuntime, fmt::format("--model builtin: fork: {}", std::strerror(errno)));
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        const char* old = std::getenv("PYTHONPATH");
        const std::string full = old && *old ? pypath + ":" + old : pypath;
        setenv("PYTHONPATH", full.c_str(), 1);
        setenv("OPENBLAS_NUM_THREADS", "2", 0);
        execv(argv[0], argv.data());
        fmt::print(stderr, "vrexctl: cannot run {}: {}\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    std::string out;
    char buf[65536];
    for (;;) {
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw ExitError(WIFEXITED(status) && WEXITSTATUS(status) == 2 ? kExitUsage : kExitRuntime,
                        fmt::format("--model builtin: {} -m vrex.run failed (status {})", VREX_PYTHON,
                                    WIFEXITED(status) ? WEXITSTATUS(status) : -1));
    try {
        return nlohmann::json::parse(out);
    } catch (const nlohmann::json::exception& e) {
        throw ExitError(kExitRuntime,
                        fmt::format("--model builtin: runner output is not JSON: {}", e.what()));
    }
}

namespace {

std::vector<double> doubles(const nlohmann::json& a) {
    std::vector<double> v;
    v.reserve(a.size());
    for (const auto& x : a) v.push_back(x.get<double>());
    return v;
}

}  // namespace

void add_model_section(const std::string& page, const nlohmann::json& m) {
    namespace svg = vrex::pipeline::svg;
    const nlohmann::json& pf = m.at("per_frame");
    std::vector<double> x(pf.at("kl_mean").size());
    for (std::size_t i = 0; i < x.size(); i++) x[i] = static_cast<double>(i);
    std::string rows;
    auto row = [&](const char* key, const char* target) {
        rows += fmt::format("<tr><td>{}</td><td>{:.4f}</td><td>{:.4f}</td><td>{:.4f}</td><td>{}</td></tr>\n",
                            key, m.at(key).get<double>(), m.at("control_radius0").at(key).get<double>(),
                            m.at("control_no_fcc").at(key).get<double>(), target);
    };
    row("kl_mean", "&le; 0.05");
    row("kl_p99", "");
    row("top1_agreement", "&ge; 0.95");
    row("attn_rel_err_p50", "");
    row("prefill_ms_ratio", "&le; 0.4");
    row("reuse_rate", "");
    row("resident_bytes_ratio_window", "&le; 0.5");
    svg::LineChart kl{"KL(exact || vrex) per frame",
                      "frame",
                      "nats (mean of 16 regions)",
                      x,
                      {{"vrex", "#c0392b", doubles(pf.at("kl_mean"))}}};
    svg::LineChart top1{"top-1 agreement with exact KV per frame",
                        "frame",
                        "fraction",
                        x,
                        {{"vrex", "#2471a3", doubles(pf.at("top1_agreement"))}}};
    top1.y_max = 1.0;
    svg::LineChart pre{"prefill time per frame",
                       "frame",
                       "ms",
                       x,
                       {{"exact KV", "#7f8c8d", doubles(pf.at("prefill_ms_exact"))},
                        {"vrex", "#27ae60", doubles(pf.at("prefill_ms_vrex"))}}};
    const std::string section = fmt::format(
        "<section id=\"model\"><h2>Model: builtin video transformer vs exact KV</h2>\n"
        "<p>4-layer Llama-style decoder over nsfwjs MobileNetV2 tokens (docs/model.md); the same frames "
        "run with exact KV, with vrex reuse, and with the two controls.</p>\n"
        "<table><tr><th>figure</th><th>vrex</th><th>radius 0</th><th>no FCC</th><th>target</th></tr>\n{}"
        "</table>\n<figure>{}</figure>\n<figure>{}</figure>\n<figure>{}</figure></section>\n",
        rows, svg::line_chart(kl), svg::line_chart(top1), svg::line_chart(pre));
    std::ifstream in(page);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string html = buf.str();
    const std::size_t at = html.find("<footer id=\"credits\">");
    html.insert(at == std::string::npos ? html.size() : at, section);
    std::ofstream out(page, std::ios::trunc);
    out << html;
    if (!out) throw ExitError(kExitRuntime, "cannot write " + page);
}

}  // namespace vrexctl
