#include "error.hpp"

#include "vrex/errors.hpp"

namespace vrex::pipeline {

void throw_hal(const std::string& what, std::error_code ec) {
    const bool gone = ec == make_error_code(errc::no_device) || ec == make_error_code(errc::device_lost);
    throw Failure(gone ? FailureKind::no_device : FailureKind::runtime, what + ": " + ec.message());
}

}  // namespace vrex::pipeline
