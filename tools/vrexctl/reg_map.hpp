// Names and field decoders of the V-Rex registers (lib/vrex_regs.h) for `vrexctl regs`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vrexctl {

struct RegDesc {
    std::uint32_t offset;
    std::string name;
    std::string (*fields)(std::uint32_t value);  // decoded fields, or nullptr
};

// Every readable register of a device with @banks banks and @groups bank groups, in offset order.
std::vector<RegDesc> register_map(std::uint32_t banks, std::uint32_t groups);

}  // namespace vrexctl
