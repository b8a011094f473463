#include "png.hpp"

#include <zlib.h>

#include <stdexcept>

namespace vrex::pipeline {
namespace {

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(v >> s));
}

void chunk(std::vector<std::uint8_t>& out, const char type[4], std::span<const std::uint8_t> data) {
    put32(out, static_cast<std::uint32_t>(data.size()));
    const std::size_t start = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    const auto crc = crc32(0, out.data() + start, static_cast<uInt>(out.size() - start));
    put32(out, static_cast<std::uint32_t>(crc));
}

}  // namespace

std::vector<std::uint8_t> encode_png_rgb(std::uint32_t width, std::uint32_t height,
                                         std::span<const std::uint8_t> rgb) {
    if (rgb.size() != std::size_t{width} * height * 3)
        throw std::invalid_argument("png: pixel buffer size does not match the image");
    // Filter type 0 (None) before every row.
    std::vector<std::uint8_t> raw;
    raw.reserve((std::size_t{width} * 3 + 1) * height);
    for (std::uint32_t y = 0; y < height; y++) {
        raw.push_back(0);
        const auto* row = rgb.data() + std::size_t{y} * width * 3;
        raw.insert(raw.end(), row, row + std::size_t{width} * 3);
    }
    uLongf zlen = compressBound(static_cast<uLong>(raw.size()));
    std::vector<std::uint8_t> z(zlen);
    if (compress2(z.data(), &zlen, raw.data(), static_cast<uLong>(raw.size()), 6) != Z_OK)
        throw std::runtime_error("png: zlib compression failed");
    z.resize(zlen);

    std::vector<std::uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    std::vector<std::uint8_t> ihdr;
    put32(ihdr, width);
    put32(ihdr, height);
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8 bits, RGB, deflate, filter 0, no interlace
    chunk(out, "IHDR", ihdr);
    chunk(out, "IDAT", z);
    chunk(out, "IEND", {});
    return out;
}

std::string base64(std::span<const std::uint8_t> in) {
    static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < in.size(); i += 3) {
        const std::uint32_t n = (std::uint32_t{in[i]} << 16) |
                                (i + 1 < in.size() ? std::uint32_t{in[i + 1]} << 8 : 0) |
                                (i + 2 < in.size() ? in[i + 2] : 0u);
        out += t[(n >> 18) & 63];
        out += t[(n >> 12) & 63];
        out += i + 1 < in.size() ? t[(n >> 6) & 63] : '=';
        out += i + 2 < in.size() ? t[n & 63] : '=';
    }
    return out;
}

}  // namespace vrex::pipeline
