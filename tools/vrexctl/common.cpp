#include "common.hpp"

#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

namespace vrexctl {

void fail(const std::string& what, std::error_code ec) {
    using vrex::errc;
    if (ec == make_error_code(errc::no_device) || ec == make_error_code(errc::device_lost) ||
        ec == make_error_code(errc::not_vrex_device) || ec == std::errc::no_such_device)
        throw ExitError(kExitNoDevice, fmt::format("{}: {}", what, ec.message()));
    if (ec == make_error_code(errc::unknown_backend))
        throw ExitError(kExitUsage, fmt::format("{}: {}", what, ec.message()));
    throw ExitError(kExitRuntime, fmt::format("{}: {}", what, ec.message()));
}

std::shared_ptr<vrex::Device> open_device(const GlobalOptions& g) {
    auto choice = vrex::parse_backend_choice(g.backend);
    if (!choice)
        throw ExitError(kExitUsage, fmt::format("unknown backend '{}' (auto, emu, kernel)", g.backend));
    vrex::DeviceOptions o;
    o.backend = *choice;
    o.backend_options.node = g.node;
    o.backend_options.emu_banks = g.emu_banks;
    o.backend_options.emu_bank_size = std::uint64_t{g.emu_bank_mib} << 20;
    o.backend_options.emu_group_banks = g.emu_group_banks;
    o.backend_options.emu_zombie_frames = g.emu_zombie_frames;
    auto dev = vrex::Device::open(o);
    if (!dev) {
        if (dev.error() == make_error_code(vrex::errc::no_device))
            throw ExitError(kExitNoDevice, g.backend == "kernel"
                                               ? "no vrex device found (is vrex.ko loaded? try --backend emu)"
                                               : "no vrex device found");
        fail(fmt::format("opening the {} backend", g.backend), dev.error());
    }
    return *dev;
}

std::string human_bytes(std::uint64_t b) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) return fmt::format("{} B", b);
    return v == static_cast<double>(static_cast<std::uint64_t>(v))
               ? fmt::format("{} {}", static_cast<std::uint64_t>(v), units[u])
               : fmt::format("{:.1f} {}", v, units[u]);
}

void print_json(const nlohmann::json& j) {
    std::cout << j.dump(2) << std::endl;
}

}  // namespace vrexctl
