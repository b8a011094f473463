// vrexctl: diagnostics for V-Rex devices and the real-video pipeline. Argument parsing and printing
// only; the work happens in libvrex-hal and tools/pipeline. Exit codes: docs/vrexctl.md.
#include <fmt/format.h>

#include <iostream>

#include "common.hpp"
#include "pipeline/error.hpp"

namespace {

int run(int argc, char** argv) {
    using namespace vrexctl;
    CLI::App app{"vrexctl: V-Rex device diagnostics and the real-video KV-reuse pipeline"};
    app.require_subcommand(1);
    // Global options may also follow the subcommand (`vrexctl run --json ...`, as issue 11 writes it).
    app.fallthrough();
    GlobalOptions g;
    app.add_option("--backend", g.backend, "auto | emu | kernel (default auto: kernel device if present)")
        ->capture_default_str();
    app.add_option("--node", g.node, "kernel backend: device node (default: first vrex device)");
    app.add_flag("--json", g.json, "machine-readable JSON on stdout");
    app.add_option("--emu-banks", g.emu_banks, "emulation: number of banks")
        ->check(CLI::Range(1, 64))
        ->capture_default_str();
    app.add_option("--emu-bank-mib", g.emu_bank_mib, "emulation: bank size in MiB")
        ->check(CLI::Range(1, 4096))
        ->capture_default_str();
    app.add_option("--emu-group-banks", g.emu_group_banks, "emulation: banks per group (0 = model default)");
    app.add_option("--emu-zombie-frames", g.emu_zombie_frames,
                   "emulation: zombie threshold Z (0 = default 5)")
        ->check(CLI::Range(0, 255));

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

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? kExitOk : kExitUsage;
    } catch (const ExitError& e) {
        std::cerr << "vrexctl: " << e.what() << std::endl;
        return e.code();
    } catch (const vrex::pipeline::Failure& e) {
        std::cerr << "vrexctl: " << e.what() << std::endl;
        switch (e.kind()) {
            case vrex::pipeline::FailureKind::bad_input:
                return kExitBadInput;
            case vrex::pipeline::FailureKind::no_device:
                return kExitNoDevice;
            case vrex::pipeline::FailureKind::runtime:
                break;
        }
        return kExitRuntime;
    } catch (const std::exception& e) {
        std::cerr << "vrexctl: " << e.what() << std::endl;
        return kExitRuntime;
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
