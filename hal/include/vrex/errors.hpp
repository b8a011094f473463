// Errors of libvrex-hal. Device and argument errors use the errno values the uAPI documents
// (std::generic_category, e.g. std::errc::invalid_argument for EINVAL) so both backends report the
// same codes. Conditions that are not an errno of one call live in vrex::errc below.
#pragma once

#include <system_error>

#include "vrex/export.h"

namespace vrex {

enum class errc {
    device_lost = 1,   // the device went away (unplug, rmmod, reset); every later call fails with it
    no_device,         // the kernel backend was requested but no vrex device node exists
    unknown_backend,   // a backend name (option or VREX_BACKEND) that is not in the registry
    not_vrex_device,   // a DRM node whose driver is not "vrex"
    bad_geometry,      // ModelGeometry rejected (zero field, unknown dtype, block < 16 KiB, ...)
    not_in_frame,      // an operation that needs begin_frame() was called outside a frame
    stale_handle,      // a block handle (id, generation) whose block was released or recycled
};

VREX_API const std::error_category& hal_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), hal_category()}; }

}  // namespace vrex

template <>
struct std::is_error_code_enum<vrex::errc> : std::true_type {};
