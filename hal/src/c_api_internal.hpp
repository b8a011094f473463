// What the C ABI's files share (c_api.cpp defines these): the device behind a C handle and the
// status mapping of an error code. Private to the library.
#pragma once

#include <memory>
#include <string>
#include <system_error>

#include "vrex/hal.hpp"
#include "vrex/vrex_hal.h"

namespace vrex::capi {

// The device a C handle holds; nullptr for a null handle.
std::shared_ptr<Device> device_of(vrex_hal_device* dev);
// The C++ objects behind C handles; nullptr for a null handle.
Stream* stream_of(vrex_hal_stream* s);
std::shared_ptr<KvAllocator> allocator_of(vrex_hal_allocator* a);
// A C block (every byte of *out is written).
void block_to_c(const KvBlock& b, vrex_hal_block* out);
// The C status of @ec (VREX_HAL_OK for none).
vrex_hal_status status_of(std::error_code ec);
// Records "@fn: @message" as the calling thread's vrex_hal_last_error().
void note_error(const char* fn, const std::string& message) noexcept;

}  // namespace vrex::capi
