// SPDX-License-Identifier: (GPL-2.0 OR MIT)
#include "frames.h"

#include <algorithm>

namespace vrex::bench {

GrayClip::GrayClip(const std::string& path, uint32_t width, uint32_t height)
    : in_(path, std::ios::binary), width_(width), height_(height)
{
    if (!in_ || width == 0 || height == 0) return;
    in_.seekg(0, std::ios::end);
    auto bytes = static_cast<size_t>(in_.tellg());
    size_t frame_bytes = size_t{width} * height;
    if (bytes % frame_bytes == 0) frames_ = bytes / frame_bytes;
}

Frame GrayClip::read(size_t index)
{
    Frame f{width_, height_, std::vector<uint8_t>(size_t{width_} * height_)};
    in_.seekg(static_cast<std::streamoff>(index * f.pix.size()));
    in_.read(reinterpret_cast<char*>(f.pix.data()), static_cast<std::streamsize>(f.pix.size()));
    if (!in_) f.pix.clear();
    return f;
}

namespace {

uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

}  // namespace

Frame synthetic_frame(uint32_t width, uint32_t height, uint32_t index, uint32_t scene_len)
{
    Frame f{width, height, std::vector<uint8_t>(size_t{width} * height)};
    uint32_t scene = index / scene_len;
    uint32_t t = index % scene_len;
    // Background: coarse value noise whose seed is the scene, so a cut changes the appearance.
    uint32_t cell = std::max<uint32_t>(8, width / 24);
    for (uint32_t y = 0; y < height; y++) {
        for (uint32_t x = 0; x < width; x++) {
            uint32_t v = hash32(scene * 0x9e3779b9U ^ (x / cell) * 0x85ebca6bU ^ (y / cell) * 0xc2b2ae35U);
            f.pix[size_t{y} * width + x] = static_cast<uint8_t>(64 + (v & 127) + ((x + y) & 7));
        }
    }
    // Moving objects: a few bright squares crossing the frame at scene-dependent speeds.
    uint32_t side = std::max<uint32_t>(4, height / 10);
    for (uint32_t k = 0; k < 3; k++) {
        uint32_t speed = 1 + (hash32(scene * 7 + k) % 4);
        uint32_t x0 = (hash32(scene * 13 + k) % width + t * speed * width / 200) % (width - side);
        uint32_t y0 = (hash32(scene * 17 + k) % (height - side));
        for (uint32_t y = y0; y < y0 + side; y++)
            for (uint32_t x = x0; x < x0 + side; x++) f.pix[size_t{y} * width + x] = 235;
    }
    return f;
}

Frame resize_bilinear(const Frame& src, uint32_t width, uint32_t height)
{
    Frame dst{width, height, std::vector<uint8_t>(size_t{width} * height)};
    for (uint32_t y = 0; y < height; y++) {
        // 16.16 fixed point source coordinates, pixel centres aligned.
        int64_t sy = ((int64_t{2 * y + 1} * src.height << 16) / (2 * height)) - (1 << 15);
        sy = std::clamp<int64_t>(sy, 0, (int64_t{src.height} - 1) << 16);
        uint32_t y0 = static_cast<uint32_t>(sy >> 16);
        uint32_t y1 = std::min(y0 + 1, src.height - 1);
        uint32_t fy = static_cast<uint32_t>(sy & 0xffff);
        for (uint32_t x = 0; x < width; x++) {
            int64_t sx = ((int64_t{2 * x + 1} * src.width << 16) / (2 * width)) - (1 << 15);
            sx = std::clamp<int64_t>(sx, 0, (int64_t{src.width} - 1) << 16);
            uint32_t x0 = static_cast<uint32_t>(sx >> 16);
            uint32_t x1 = std::min(x0 + 1, src.width - 1);
            uint32_t fx = static_cast<uint32_t>(sx & 0xffff);
            auto p = [&](uint32_t xx, uint32_t yy) { return uint64_t{src.pix[size_t{yy} * src.width + xx]}; };
            uint64_t top = p(x0, y0) * (0x10000 - fx) + p(x1, y0) * fx;
            uint64_t bot = p(x0, y1) * (0x10000 - fx) + p(x1, y1) * fx;
            uint64_t v = (top * (0x10000 - fy) + bot * fy + (1ULL << 31)) >> 32;
            dst.pix[size_t{y} * width + x] = static_cast<uint8_t>(v);
        }
    }
    return dst;
}

}  // namespace vrex::bench
