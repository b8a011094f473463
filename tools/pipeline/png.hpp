// A minimal PNG encoder (8-bit RGB, zlib from the system) for the report's frames.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vrex::pipeline {

// PNG bytes of a width x height RGB image (rgb: 3 bytes per pixel, rows packed).
std::vector<std::uint8_t> encode_png_rgb(std::uint32_t width, std::uint32_t height,
                                         std::span<const std::uint8_t> rgb);

std::string base64(std::span<const std::uint8_t> bytes);

}  // namespace vrex::pipeline
