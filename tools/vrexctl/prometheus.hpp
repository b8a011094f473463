// Device counters and bank occupancy in the Prometheus text exposition format (version 0.0.4).
#pragma once

#include <string>

#include "vrex/hal.hpp"

namespace vrexctl {

// Reads stats and bank info from @dev; throws ExitError when the device fails.
std::string prometheus_metrics(vrex::Device& dev);

}  // namespace vrexctl
