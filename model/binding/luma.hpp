// A numpy luma frame (H x W, uint8, C order) as the HAL's LumaView, shared by _vrexhal and _vrexrun.
#pragma once

#include <pybind11/numpy.h>

#include <cstdint>
#include <stdexcept>

#include "vrex/hal.hpp"

namespace vrex::py_binding {

using LumaArray = pybind11::array_t<std::uint8_t, pybind11::array::c_style | pybind11::array::forcecast>;

// The view borrows @luma's memory: keep the array alive while the view is used.
inline LumaView luma_view(const LumaArray& luma) {
    if (luma.ndim() != 2) throw std::invalid_argument("luma must be a 2-D uint8 array (H x W)");
    LumaView v;
    v.data = luma.data();
    v.height = static_cast<std::uint32_t>(luma.shape(0));
    v.width = static_cast<std::uint32_t>(luma.shape(1));
    v.stride = v.width;
    return v;
}

}  // namespace vrex::py_binding
