// What the C ABI's files share (c_api.cpp defines these): the device behind a C handle, the status
// mapping of an error code and guarded(), the wrapper every C entry point runs in. Private to the
// library.
#pragma once

#include <exception>
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
