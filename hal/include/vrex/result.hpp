// vrex::Result<T>: a value or a std::error_code. C++20 has no std::expected; the HAL never throws
// across its API, so every fallible call returns one of these.
#pragma once

#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace vrex {

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
    Result(std::error_code ec) : v_(std::in_place_index<1>, ec) {}     // NOLINT(google-explicit-constructor)
    template <class E>
        requires std::is_error_code_enum_v<E> || std::is_error_condition_enum_v<E>
    Result(E e) : v_(std::in_place_index<1>, make_error_code(e)) {}  // NOLINT(google-explicit-constructor)

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    // Precondition: has_value(). Checked with std::get, which aborts the program (no exceptions are
    // caught anywhere in the HAL) rather than returning garbage.
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }

    std::error_code error() const noexcept { return has_value() ? std::error_code{} : std::get<1>(v_); }

private:
    std::variant<T, std::error_code> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(std::error_code ec) : ec_(ec) {}  // NOLINT(google-explicit-constructor)
    template <class E>
        requires std::is_error_code_enum_v<E> || std::is_error_condition_enum_v<E>
    Result(E e) : ec_(make_error_code(e)) {}  // NOLINT(google-explicit-constructor)

    bool has_value() const noexcept { return !ec_; }
    explicit operator bool() const noexcept { return has_value(); }
    std::error_code error() const noexcept { return ec_; }

private:
    std::error_code ec_;
};

}  // namespace vrex
