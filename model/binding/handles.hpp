// The Python-side handles of _vrexhal shared by its translation units (vrexhal.cpp, policy.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "vrex/hal.hpp"

namespace vrex::py_binding {

struct PyStream {
    std::shared_ptr<KvAllocator> alloc;
    std::unique_ptr<Stream> stream;
};

// A block as Python sees it: its HAL description plus a strong reference to its stream.
struct PyBlock {
    KvBlock b;
    std::shared_ptr<PyStream> owner;
};

inline pybind11::tuple fp_tuple(const Fingerprint& fp) {
    return pybind11::make_tuple(fp.w[0], fp.w[1]);
}

Fingerprint fp_from(const pybind11::tuple& t);  // vrexhal.cpp

}  // namespace vrex::py_binding
