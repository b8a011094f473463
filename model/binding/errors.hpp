// How _vrexhal turns a HAL failure into a Python exception: RuntimeError with what the binding was
// doing, the HAL's message (which names its own context) and the errno, so Python sees why.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "vrex/result.hpp"

namespace vrex::py_binding {

[[noreturn]] inline void fail(const std::string& what, const Error& e) {
    throw std::runtime_error(what + ": " + e.message() + " (" + e.code().category().name() + " " +
                             std::to_string(e.code().value()) + ")");
}

template <class T>
T take(Result<T> r, const std::string& what) {
    if (!r) fail(what, r.error_info());
    return std::move(*r);
}

inline void check(const Result<void>& r, const std::string& what) {
    if (!r) fail(what, r.error_info());
}

}  // namespace vrex::py_binding
