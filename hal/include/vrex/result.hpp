// vrex::Result<T>: a value or a vrex::Error (a std::error_code plus the context the failure happened
// in). C++20 has no std::expected; the HAL never throws across its API, so every fallible call
// returns one of these. error() stays the bare code (compare it with std::errc / vrex::errc);
// error_message() is what to show a user, e.g. "allocate block (stream 1, frame 12, region 3):
// bank group 2 (banks 4..5) full: No space left on device". value_or_throw() is the throwing
// helper for callers that prefer exceptions (std::system_error carrying the same message).
#pragma once

#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace vrex {

class Error {
  public:
    Error() = default;
    Error(std::error_code code, std::string context = {})
        : code_(code), context_(std::move(context)) {}  // NOLINT(google-explicit-constructor)
    template <class E>
    requires std::is_error_code_enum_v<E> || std::is_error_condition_enum_v<E> Error(E e,
                                                                                     std::string context = {})
        : code_(make_error_code(e)), context_(std::move(context)) {}  // NOLINT(google-explicit-constructor)

    std::error_code code() const noexcept { return code_; }
    // Where it failed ("allocate block (stream 1, frame 12, region 3): bank group 2 full"); empty
    // when the failure carries no more than its code.
    const std::string& context() const noexcept { return context_; }
    // "<context>: <code's message>", or the code's message alone.
    std::string message() const {
        return context_.empty() ? code_.message() : context_ + ": " + code_.message();
    }
    // The same error one level up: "@outer: <context>".
    Error within(std::string_view outer) const {
        return {code_, context_.empty() ? std::string(outer) : std::string(outer) + ": " + context_};
    }
    [[noreturn]] void raise() const { throw std::system_error(code_, context_); }

    explicit operator bool() const noexcept { return static_cast<bool>(code_); }

  private:
    std::error_code code_;
    std::string context_;
};

template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
    Result(std::error_code ec) : v_(std::in_place_index<1>, ec) {}     // NOLINT(google-explicit-constructor)
    Result(Error e) : v_(std::in_place_index<1>, std::move(e)) {}      // NOLINT(google-explicit-constructor)
    template <class E>
    requires std::is_error_code_enum_v<E> || std::is_error_condition_enum_v<E> Result(E e)
        : v_(std::in_place_index<1>, make_error_code(e)) {}  // NOLINT(google-explicit-constructor)

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

    std::error_code error() const noexcept {
        return has_value() ? std::error_code{} : std::get<1>(v_).code();
    }
    // The error with its context (an empty Error when has_value()).
    Error error_info() const { return has_value() ? Error{} : std::get<1>(v_); }
    std::string error_message() const { return has_value() ? std::string{} : std::get<1>(v_).message(); }
    // The value, or throws std::system_error with error_message() as what().
    T value_or_throw() && {
        if (!has_value()) std::get<1>(v_).raise();
        return std::get<0>(std::move(v_));
    }

  private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(std::error_code ec) : err_(ec) {}  // NOLINT(google-explicit-constructor)
    Result(Error e) : err_(std::move(e)) {}   // NOLINT(google-explicit-constructor)
    template <class E>
    requires std::is_error_code_enum_v<E> || std::is_error_condition_enum_v<E> Result(E e)
        : err_(make_error_code(e)) {}  // NOLINT(google-explicit-constructor)

    bool has_value() const noexcept { return !err_.code(); }
    explicit operator bool() const noexcept { return has_value(); }
    std::error_code error() const noexcept { return err_.code(); }
    Error error_info() const { return err_; }
    std::string error_message() const { return has_value() ? std::string{} : err_.message(); }
    void value_or_throw() const {
        if (!has_value()) err_.raise();
    }

  private:
    Error err_;
};

}  // namespace vrex
