// Device's private state (pimpl) and the internal access to it: the Backend seam stays out of the
// public headers (tests/hal/public_headers.sh), HAL code and internal tests reach it through here.
#pragma once

#include <drm/vrex_accel.h>

#include <memory>
#include <system_error>

#include "backend.hpp"
#include "vrex/hal.hpp"

namespace vrex {

struct VREX_LOCAL Device::Impl {
    std::unique_ptr<Backend> backend;
    DeviceInfo info;
};

// The uAPI device info in HAL terms (the backends speak uAPI, users see DeviceInfo).
DeviceInfo to_device_info(const drm_vrex_device_info& i) noexcept;
DeviceStats to_device_stats(const drm_vrex_stats& s) noexcept;

namespace detail {

struct DeviceAccess {
    static Device::Impl& impl(Device& d) noexcept { return *d.impl_; }
    static const Device::Impl& impl(const Device& d) noexcept { return *d.impl_; }
    static Device::Key key() noexcept { return {}; }
};

}  // namespace detail

inline Backend& backend_of(Device& d) noexcept {
    return *detail::DeviceAccess::impl(d).backend;
}

// Wraps an already opened backend (tests, benchmarks, tools that decorate a backend).
Result<std::shared_ptr<Device>> adopt_backend(std::unique_ptr<Backend> backend);

// errc::device_lost when the device is gone, else @local. Asks the device (one query ioctl on the
// kernel backend): a call that fails on local state alone (EBUSY, not_in_frame, ...) must still
// report the loss, and the kernel only learns about an unbind from an ioctl.
std::error_code lost_or(Device& d, std::error_code local);

}  // namespace vrex
