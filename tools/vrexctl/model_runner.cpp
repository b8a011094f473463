#include "model_runner.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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
        throw ExitError(kExitRuntime,
                        "--model builtin: the vrex Python extension was not built (pybind11-dev, python3-dev, "
                        "python3-torch: scripts/deps.sh) and VREX_MODEL_PYTHONPATH is not set");
    std::vector<std::string> args = {VREX_PYTHON, "-m", "vrex.run", "--json", "--radius", std::to_string(a.radius)};
    if (a.max_frames) {
        args.push_back("--max-frames");
        args.push_back(std::to_string(a.max_frames));
    }
    args.insert(args.end(), a.videos.begin(), a.videos.end());
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);

    int fds[2];
    if (pipe(fds) != 0) throw ExitError(kExitRuntime, fmt::format("--model builtin: pipe: {}", std::strerror(errno)));
    const pid_t pid = fork();
    if (pid < 0) throw ExitError(kExitRuntime, fmt::format("--model builtin: fork: {}", std::strerror(errno)));
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
        throw ExitError(kExitRuntime, fmt::format("--model builtin: runner output is not JSON: {}", e.what()));
    }
}

}  // namespace vrexctl
