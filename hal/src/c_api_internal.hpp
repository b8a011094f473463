// What the C ABI's files share (c_api.cpp defines these): the device behind a C handle, the status
// mapping of an error code and guarded(), the wrapper every C entry point runs in. Private to the
// library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <system_error>
#include <utility>

#include "vrex/hal.hpp"
#include "vrex/vrex_hal.h"

namespace vrex::capi {

// The device a C handle holds; nullptr for a null handle.
std::shared_ptr<Device> device_of(vrex_hal_device* dev);
// The C++ objects behind C handles; nullptr for a null handle.
Stream* stream_of(vrex_hal_stream* s);
std::shared_ptr<KvAllocator> allocator_of(vrex_hal_allocator* a);
// New C handles owning @a / @s (c_api_pool.cpp makes allocators and streams too).
vrex_hal_allocator* adopt_allocator(std::shared_ptr<KvAllocator> a);
vrex_hal_stream* adopt_stream(std::unique_ptr<Stream> s);
// A C block (every byte of *out is written).
void block_to_c(const KvBlock& b, vrex_hal_block* out);
// The C status of @ec (VREX_HAL_OK for none).
vrex_hal_status status_of(std::error_code ec);
// Records "@fn: @message" as the calling thread's vrex_hal_last_error().
void note_error(const char* fn, const std::string& message) noexcept;

// EINVAL with @what as its context: a C argument the entry point refuses.
inline Error invalid(std::string what) {
    return {std::make_error_code(std::errc::invalid_argument), std::move(what)};
}

// EINVAL naming the first of @args (name, pointer) that is NULL; no error when none is.
inline Error non_null(std::initializer_list<std::pair<const char*, const void*>> args) {
    for (const auto& [name, p] : args)
        if (!p) return invalid(std::string(name) + " is NULL");
    return {};
}

inline std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

// EINVAL for bits of @flags outside @known, naming @what and the valid bits (@names).
inline Error known_flags(const char* what, std::uint64_t flags, std::uint64_t known, const char* names) {
    if (!(flags & ~known)) return {};
    return invalid(std::string(what) + " " + hex(flags) + " has unknown bits " + hex(flags & ~known) +
                   " (valid: " + names + ")");
}

// A size-prefixed input struct (struct_size first) as this library knows it: fields past the
// caller's struct_size keep their zero defaults; bytes past ours must be zero (a newer caller asking
// for something this library cannot do). @min: the smallest struct_size accepted.
template <class T>
Result<T> sized_in(const T* in, const char* what, std::size_t min) {
    const std::size_t size = in->struct_size;
    if (size < min)
        return invalid(std::string(what) + ": struct_size " + std::to_string(size) + " is below " +
                       std::to_string(min) + " (valid: " + std::to_string(min) + ".." +
                       std::to_string(sizeof(T)) + ", or larger with the bytes past " +
                       std::to_string(sizeof(T)) + " zero)");
    T known{};
    std::memcpy(&known, in, std::min(size, sizeof(T)));
    const auto* bytes = reinterpret_cast<const unsigned char*>(in);
    for (std::size_t i = sizeof(T); i < size; i++)
        if (bytes[i])
            return invalid(std::string(what) + ": byte " + std::to_string(i) + " past the " +
                           std::to_string(sizeof(T)) + " this library knows is not zero (valid: zero)");
    known.struct_size = static_cast<std::uint32_t>(std::min(size, sizeof(T)));
    return known;
}

// A size-prefixed output struct: copies min(@out->struct_size, sizeof(T)) bytes of @ours, zeroes
// the rest of a larger caller struct and sets struct_size to the bytes written. @min as sized_in.
template <class T>
Error sized_out(const T& ours, T* out, const char* what, std::size_t min) {
    const std::size_t size = out->struct_size;
    if (size < min)
        return invalid(std::string(what) + ": struct_size " + std::to_string(size) + " is below " +
                       std::to_string(min) + " (valid: " + std::to_string(min) + " and up; sizeof is " +
                       std::to_string(sizeof(T)) + ")");
    const std::size_t n = std::min(size, sizeof(T));
    auto* bytes = reinterpret_cast<unsigned char*>(out);
    std::memcpy(bytes, &ours, n);
    std::memset(bytes + n, 0, size - n);
    out->struct_size = static_cast<std::uint32_t>(n);
    return {};
}

// How an entry point turns an error code into its C status.
using StatusMapper = vrex_hal_status (*)(std::error_code);

// Records "@fn: <message>" of @e as the thread's (and @s's, when not null) last error and maps the
// code to a status with @map; VREX_HAL_OK for no error.
vrex_hal_status record(const char* fn, const vrex_hal_stream* s, const Error& e, StatusMapper map) noexcept;

// Runs @f (returning a vrex::Error, empty on success) for the C entry point @fn; nothing escapes to
// the C caller: host memory exhaustion is VREX_HAL_ERR_NOMEM, any other exception an I/O error.
template <class F>
vrex_hal_status guarded(const char* fn, const vrex_hal_stream* s, F&& f,
                        StatusMapper map = status_of) noexcept {
    try {
        return record(fn, s, f(), map);
    } catch (const std::bad_alloc&) {
        return record(fn, s, Error{std::errc::not_enough_memory, "out of host memory"}, map);
    } catch (const std::exception& e) {
        return record(fn, s, Error{std::errc::io_error, e.what()}, map);
    } catch (...) {
        return record(fn, s, Error{std::errc::io_error, "unknown exception"}, map);
    }
}

}  // namespace vrex::capi
