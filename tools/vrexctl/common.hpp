// Shared plumbing of vrexctl's subcommands: global options, device opening, exit codes, output.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <system_error>

#include "cli.hpp"
#include "vrex/hal.hpp"

namespace vrexctl {

// Exit codes (docs/vrexctl.md).
enum ExitCode : int {
    kExitOk = 0,
    kExitRuntime = 1,      // a device or runtime error
    kExitUsage = 2,        // bad arguments
    kExitNoDevice = 3,     // no such backend / device, or it went away
    kExitBadInput = 4,     // a video file that cannot be opened or decoded
    kExitCheckFailed = 5,  // selftest found a failing check
};

class ExitError : public std::runtime_error {
  public:
    ExitError(int code, const std::string& what) : std::runtime_error(what), code_(code) {}
    int code() const noexcept { return code_; }

  private:
    int code_;
};

struct GlobalOptions {
    std::string backend = "auto";
    std::string node;  // kernel: a specific /dev node
    bool json = false;
    std::uint32_t emu_banks = 16;
    std::uint32_t emu_bank_mib = 64;
    std::uint32_t emu_group_banks = 0;
    std::uint32_t emu_zombie_frames = 0;
};

// Opens the device the global options select. ExitError(kExitNoDevice) when there is none,
// kExitUsage for an unknown backend name, kExitRuntime otherwise.
std::shared_ptr<vrex::Device> open_device(const GlobalOptions& g);

// Throws ExitError with the code that fits @ec (device lost / no device -> kExitNoDevice).
[[noreturn]] void fail(const std::string& what, std::error_code ec);

// "896 KiB", "1.5 GiB".
std::string human_bytes(std::uint64_t bytes);

void print_json(const nlohmann::json& j);

// Device-wide counters (Device::stats()) as JSON.
nlohmann::json device_stats_json(vrex::Device& dev);

// Subcommands: each adds itself to @app and runs from its callback.
void add_list(Command app, GlobalOptions& g);
void add_info(Command app, GlobalOptions& g);
void add_regs(Command app, GlobalOptions& g);
void add_banks(Command app, GlobalOptions& g);
void add_stats(Command app, GlobalOptions& g);
void add_monitor(Command app, GlobalOptions& g);
void add_selftest(Command app, GlobalOptions& g);
void add_bench(Command app, GlobalOptions& g);
void add_run(Command app, GlobalOptions& g);
void add_serve(Command app, GlobalOptions& g);

}  // namespace vrexctl
