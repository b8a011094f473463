// Failures of the pipeline library, classified so vrexctl can map them to its exit codes
// (docs/vrexctl.md). The HAL itself never throws; the pipeline turns HAL errors into these.
#pragma once

#include <stdexcept>
#include <string>
#include <system_error>

namespace vrex::pipeline {

enum class FailureKind { runtime, no_device, bad_input };

class Failure : public std::runtime_error {
  public:
    Failure(FailureKind kind, const std::string& what) : std::runtime_error(what), kind_(kind) {}
    FailureKind kind() const noexcept { return kind_; }

  private:
    FailureKind kind_;
};

// A HAL error during @what: no_device for errc::no_device / device_lost, runtime otherwise.
[[noreturn]] void throw_hal(const std::string& what, std::error_code ec);

}  // namespace vrex::pipeline
