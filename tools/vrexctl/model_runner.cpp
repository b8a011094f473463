#include "model_runner.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"

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
    if (a.frames) {
        args.push_back("--frames");
        args.push_back(std::to_string(a.frames));
    }
    if (!a.control) args.push_back("--no-control");
    if (a.anchors) args.push_back("--anchors");
    if (!a.path.empty()) {
        args.push_back("--path");
        args.push_back(a.path);
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
        setenv("OPENBLAS_NUM_THREADS", "1", 0);
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

std::string ci(const nlohmann::json& d) {
    if (d.at("mean").is_null()) return "-";
    return fmt::format("{:.3f} [{:.3f}, {:.3f}]", d.at("mean").get<double>(),
                       d.at("ci95").at(0).get<double>(), d.at("ci95").at(1).get<double>());
}

}  // namespace

void add_model_section(const std::string& page, const nlohmann::json& m) {
    const nlohmann::json& acc = m.at("task").at("accuracy");
    std::string rows;
    auto row = [&](const std::string& name, const nlohmann::json& d) {
        rows += fmt::format("<tr><td>{}</td><td>{}</td></tr>\n", name, ci(d));
    };
    row("exact KV", acc.at("exact"));
    row("vrex", acc.at("vrex"));
    for (const char* b : {"copy", "most_frequent", "input_blind"})
        row(std::string("baseline: ") + b, acc.at("baselines").at(b));
    const nlohmann::json& q = m.at("quality").at("vrex");
    const nlohmann::json& pf = m.at("prefill");
    const nlohmann::json& kv = m.at("kv_bytes");
    const std::string section = fmt::format(
        "<section id=\"model\"><h2>Model: builtin video transformer, exact KV vs vrex</h2>\n"
        "<p>{} questions (\"which code did region r have k frames ago\") over {} edited streams of held-out "
        "clips; exact KV cache up to {} tokens per stream (docs/model.md). 95 % CIs: bootstrap over stream "
        "segments.</p>\n<table><tr><th>task accuracy</th><th>mean [95 % CI]</th></tr>\n{}</table>\n"
        "<table><tr><th>figure</th><th>value</th></tr>\n"
        "<tr><td>{}</td><td>{}</td></tr>\n<tr><td>accuracy change (vrex - exact)</td><td>{}</td></tr>\n"
        "<tr><td>reuse rate</td><td>{:.3f}</td></tr>\n"
        "<tr><td>KV bytes exact / vrex (peak)</td><td>{} / {} ({:.3f}x)</td></tr>\n"
        "<tr><td>prefill time ratio (FLOP ratio, FLOP floor)</td><td>{} ({:.3f}, {:.3f})</td></tr>\n"
        "</table></section>\n",
        m.at("questions").get<std::uint64_t>(), m.at("streams").size(),
        m.at("exact_cache_tokens_peak").get<std::uint64_t>(), rows, q.at("direction").get<std::string>(),
        ci(q.at("mean")), ci(q.at("accuracy_change")), m.at("reuse_rate").get<double>(),
        kv.at("exact_peak").get<std::uint64_t>(), kv.at("vrex_device_peak").get<std::uint64_t>(),
        kv.at("ratio").get<double>(), ci(pf.at("time_ratio")), pf.at("flops_ratio").get<double>(),
        pf.at("flops_floor").get<double>());
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
