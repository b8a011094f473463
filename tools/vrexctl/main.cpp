// vrexctl: diagnostics for V-Rex devices and the real-video pipeline. Argument parsing and printing
// only; the work happens in libvrex-hal and tools/pipeline. Exit codes: docs/vrexctl.md.
#include <fmt/format.h>

#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "common.hpp"
#include "pipeline/error.hpp"

namespace {

// Reports an error: always "vrexctl: <what>" on stderr; with --json also one object on stdout, so a
// caller parsing stdout never has to fall back to scraping stderr. Returns @code.
int report_error(bool json, int code, const std::string& kind, const std::string& what) {
    std::cerr << "vrexctl: " << what << std::endl;
    if (json) vrexctl::print_json({{"error", {{"kind", kind}, {"message", what}, {"exit_code", code}}}});
    return code;
}

// --json anywhere on the command line (before or after the subcommand): a parse error happens before
// the flag is stored, and must still come out as JSON.
bool json_requested(int argc, char** argv) {
    for (int i = 1; i < argc; i++) {
        if (std::strcmp(argv[i], "--") == 0) break;
        if (std::strcmp(argv[i], "--json") == 0) return true;
    }
    return false;
}

int run(int argc, char** argv) {
    using namespace vrexctl;
    // Global options are accepted after the subcommand too (`vrexctl run --json clip.mp4`).
    CommandLine cl{"vrexctl: V-Rex device diagnostics and the real-video KV-reuse pipeline"};
    Command app = cl.root();
    GlobalOptions g;
    app.option("--backend", g.backend, "auto | emu | kernel (default auto: kernel device if present)")
        .show_default();
    app.option("--node", g.node, "kernel backend: device node (default: first vrex device)");
    app.flag("--json", g.json, "machine-readable JSON on stdout");
    app.option("--emu-banks", g.emu_banks, "emulation: number of banks").range(1, 64).show_default();
    app.option("--emu-bank-mib", g.emu_bank_mib, "emulation: bank size in MiB").range(1, 4096).show_default();
    app.option("--emu-group-banks", g.emu_group_banks, "emulation: banks per group (0 = model default)");
    app.option("--emu-zombie-frames", g.emu_zombie_frames, "emulation: zombie threshold Z (0 = default 5)")
        .range(0, 255);

    add_list(app, g);
    add_info(app, g);
    add_regs(app, g);
    add_banks(app, g);
    add_stats(app, g);
    add_monitor(app, g);
    add_selftest(app, g);
    add_bench(app, g);
    add_run(app, g);
    add_serve(app, g);

    const bool json = json_requested(argc, argv);
    try {
        if (!cl.parse(argc, argv)) {
            if (cl.usage_exit_code() == 0 || !json) return cl.print_usage() == 0 ? kExitOk : kExitUsage;
            return report_error(true, kExitUsage, "usage", cl.usage_message());
        }
    } catch (const ExitError& e) {
        static const char* const kinds[] = {"ok",        "runtime",   "usage",
                                            "no_device", "bad_input", "check_failed"};
        const int c = e.code();
        return report_error(json || g.json, c, c >= 0 && c <= kExitCheckFailed ? kinds[c] : "runtime",
                            e.what());
    } catch (const vrex::pipeline::Failure& e) {
        switch (e.kind()) {
            case vrex::pipeline::FailureKind::bad_input:
                return report_error(json || g.json, kExitBadInput, "bad_input", e.what());
            case vrex::pipeline::FailureKind::no_device:
                return report_error(json || g.json, kExitNoDevice, "no_device", e.what());
            case vrex::pipeline::FailureKind::runtime:
                break;
        }
        return report_error(json || g.json, kExitRuntime, "runtime", e.what());
    } catch (const std::exception& e) {
        return report_error(json || g.json, kExitRuntime, "runtime", e.what());
    }
    return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
    // Building the command line can throw too (allocation, CLI11 construction errors).
    try {
        return run(argc, argv);
    } catch (const std::exception& e) {
        std::cerr << "vrexctl: " << e.what() << std::endl;
        return vrexctl::kExitRuntime;
    }
}
